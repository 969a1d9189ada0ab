"""Which settings help which achievement, read from the games' rules: the yardstick for "does a design target the
skills the agent is weak at" and "does a purpose match its settings" (benchmarks/designer_quality.py).

One table per game maps each achievement (Heist: each subtask) to its levers: the settings that make it easier to
learn, each with the direction that helps, relative to the original game:

    more(path)              an ordered setting raised: a rarity or frequency word toward "very common", a count
                            going up, a switch turned on
    less(path)              the same setting lowered
    among(path, *values)    set to one of these values (a biome; Heist's maze size and key count, whose default -1
                            means "drawn as in Procgen" and so is neither small nor large)

Prerequisites, one level. A changed setting helps achievement X when it pulls a lever of X itself or of one of X's
direct prerequisites: the achievements just before X in the tech tree (PREREQUISITES), those X needs that no other
prerequisite of X already needs (make_wood_pickaxe follows place_table, which follows collect_wood). So collect_iron
is helped by more iron, a mountain, a stone pickaxe in hand (its own levers) and by wood, stone or a table nearby
(what making the stone pickaxe needs), not by a furnace (nothing before collect_iron needs one) nor by more trees
(two steps back). Not the full chain: every crafting skill's chain ends at trees and grass, so with it a grassland
would "target" iron, whose stone it lacks. Heist's collect_gem lists its shortcuts (keys in hand, fewer doors) as
its own levers and has no prerequisite, because which door stands before the gem depends on the number of keys.

Data only: no config class is imported (that would pull in JAX); values are ranked through the config's
own schema when a config is checked, and tests check every path and value against the schemas.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable

MORE, LESS, AMONG = "more", "less", "among"


@dataclasses.dataclass(frozen=True)
class Lever:
    path: str                # "section.setting"
    toward: str              # MORE, LESS or AMONG
    values: tuple = ()       # AMONG: the values that help

    @property
    def name(self) -> str:
        return self.path.split(".", 1)[1]

    def pulled(self, config: Any, original: Any) -> bool:
        """True when `config` moves this setting away from `original` in the helpful direction."""
        new, old = getattr(config, self.name), getattr(original, self.name)
        if new == old:
            return False
        if self.toward == AMONG:
            return new in self.values
        setting = next(s for s in type(config).schema() if s.path == self.path)
        rank = (lambda v: setting.choices.index(v)) if setting.choices else int
        return (rank(new) > rank(old)) == (self.toward == MORE)


def more(path: str) -> Lever:
    return Lever(path, MORE)


def less(path: str) -> Lever:
    return Lever(path, LESS)


def among(path: str, *values) -> Lever:
    return Lever(path, AMONG, tuple(values))


# ------------------------------------------------------------------------------------------------------- Crafter
_E, _I, _C = "environment_settings", "inventory_settings", "creature_settings"
_BIOME = f"{_E}.target_biome"
GRASSLAND, MOUNTAIN, BEACHES = among(_BIOME, "grassland"), among(_BIOME, "mountain"), among(_BIOME, "beaches")
_SWORDS = (more(f"{_I}.wood_sword"), more(f"{_I}.stone_sword"), more(f"{_I}.iron_sword"))
_TABLE, _FURNACE = more(f"{_E}.table_nearby"), more(f"{_E}.furnace_nearby")
_WOOD, _STONE, _COAL, _IRON = (more(f"{_I}.{item}") for item in ("wood", "stone", "coal", "iron"))

# Craftax-Classic's rules (game_logic.py): a table costs wood; wood tools need wood at a table, stone tools wood and
# stone at a table, iron tools wood, stone, coal and iron at a table and a furnace; a furnace costs stone; stone and
# coal need a wood pickaxe, iron a stone pickaxe, diamond an iron pickaxe; ores lie in mountains, trees, cows and
# zombies on grass, skeletons in mountain tunnels; the attack damage (cows, zombies, skeletons alike) is the best
# sword's; a sleeper wakes up (wake_up) once rested unless attacked first, so fewer zombies and stone to wall
# oneself in help; saplings are found in grass and planted there.
CRAFTER_LEVERS: dict[str, tuple[Lever, ...]] = {
    "collect_coal": (more(f"{_E}.coal_rarity"), more(f"{_I}.wood_pickaxe"), MOUNTAIN),
    "collect_diamond": (more(f"{_E}.diamond_rarity"), more(f"{_I}.iron_pickaxe"), MOUNTAIN),
    "collect_drink": (BEACHES,),
    "collect_iron": (more(f"{_E}.iron_rarity"), more(f"{_I}.stone_pickaxe"), MOUNTAIN),
    "collect_sapling": (GRASSLAND,),
    "collect_stone": (more(f"{_I}.wood_pickaxe"), MOUNTAIN),
    "collect_wood": (more(f"{_E}.tree_rarity"), GRASSLAND),
    "defeat_skeleton": (more(f"{_C}.skeletons"), MOUNTAIN, *_SWORDS),
    "defeat_zombie": (more(f"{_C}.zombies"), GRASSLAND, *_SWORDS),
    "eat_cow": (more(f"{_C}.cows"), GRASSLAND, *_SWORDS),
    "eat_plant": (more(f"{_I}.sapling"), GRASSLAND),
    "make_iron_pickaxe": (_WOOD, _STONE, _COAL, _IRON, _TABLE, _FURNACE),
    "make_iron_sword": (_WOOD, _STONE, _COAL, _IRON, _TABLE, _FURNACE),
    "make_stone_pickaxe": (_WOOD, _STONE, _TABLE),
    "make_stone_sword": (_WOOD, _STONE, _TABLE),
    "make_wood_pickaxe": (_WOOD, _TABLE),
    "make_wood_sword": (_WOOD, _TABLE),
    "place_furnace": (_STONE,),
    "place_plant": (more(f"{_I}.sapling"), GRASSLAND),
    "place_stone": (_STONE,),
    "place_table": (_WOOD,),
    "wake_up": (less(f"{_C}.zombies"), more(f"{_C}.peaceful"), _STONE),
}

_IRON_TOOL_NEEDS = ("collect_iron", "collect_coal", "place_furnace")  # wood, stone and a table come before iron
CRAFTER_PREREQUISITES: dict[str, tuple[str, ...]] = {
    "collect_coal": ("make_wood_pickaxe",),
    "collect_diamond": ("make_iron_pickaxe",),
    "collect_iron": ("make_stone_pickaxe",),
    "collect_stone": ("make_wood_pickaxe",),
    "eat_plant": ("place_plant",),
    "make_iron_pickaxe": _IRON_TOOL_NEEDS,
    "make_iron_sword": _IRON_TOOL_NEEDS,
    "make_stone_pickaxe": ("collect_stone",),
    "make_stone_sword": ("collect_stone",),
    "make_wood_pickaxe": ("place_table",),
    "make_wood_sword": ("place_table",),
    "place_furnace": ("collect_stone",),
    "place_plant": ("collect_sapling",),
    "place_stone": ("collect_stone",),
    "place_table": ("collect_wood",),
}

# --------------------------------------------------------------------------------------------------------- Heist
_M, _P, _S = "maze_settings", "placement_settings", "start_settings"
SMALL_MAZE = among(f"{_M}.maze_dim", 7, 5)  # Procgen's hard draw averages 9; 7 first: room for 3 doors (scripted)
_KEYS_NEAR = among(f"{_P}.key_distance", "near")


def _keys(*counts: int) -> Lever:
    """A level that surely has these doors: Procgen's draw gives no door in 10% of hard levels, fewer than three
    in half of them."""
    return among(f"{_M}.num_keys", *counts)


def _start_with(colour: str) -> Lever:
    return more(f"{_S}.start_with_{colour}_key")


# heist-rules.md: the chain key blue -> door blue -> key green -> door green -> key red -> door red -> gem; a key
# lies before its door; a key in hand opens its door on touch (and is not placed, so it never helps its own
# collect_key); smaller mazes have shorter paths.
HEIST_LEVERS: dict[str, tuple[Lever, ...]] = {
    "collect_key_blue": (_KEYS_NEAR, SMALL_MAZE, _keys(1, 2, 3)),
    "collect_key_green": (_KEYS_NEAR, SMALL_MAZE, _keys(2, 3)),
    "collect_key_red": (_KEYS_NEAR, SMALL_MAZE, _keys(3)),
    "open_lock_blue": (_start_with("blue"), SMALL_MAZE),
    "open_lock_green": (_start_with("green"), SMALL_MAZE),
    "open_lock_red": (_start_with("red"), SMALL_MAZE),
    "collect_gem": (among(f"{_P}.gem_distance", "near"), SMALL_MAZE, _keys(0, 1),
                    _start_with("blue"), _start_with("green"), _start_with("red")),
}
HEIST_PREREQUISITES: dict[str, tuple[str, ...]] = {
    "open_lock_blue": ("collect_key_blue",), "collect_key_green": ("open_lock_blue",),
    "open_lock_green": ("collect_key_green",), "collect_key_red": ("open_lock_green",),
    "open_lock_red": ("collect_key_red",),
}

TABLES = {"crafter": (CRAFTER_LEVERS, CRAFTER_PREREQUISITES), "heist": (HEIST_LEVERS, HEIST_PREREQUISITES)}


def _tables(env: str) -> tuple[dict, dict]:
    if env not in TABLES:
        raise KeyError(f"no lever table for environment {env!r}; known: {', '.join(TABLES)}")
    return TABLES[env]


def levers(env: str, achievement: str) -> tuple[Lever, ...]:
    """The levers that help `achievement`: its own, then its direct prerequisites' (see the module docstring)."""
    own, prerequisites = _tables(env)
    if achievement not in own:
        raise KeyError(f"{achievement!r} is not a {env} achievement; known: {', '.join(own)}")
    found = [*own[achievement], *(lever for p in prerequisites.get(achievement, ()) for lever in own[p])]
    return tuple(dict.fromkeys(found))


def helps(config: Any, achievements: Iterable[str]) -> list[str]:
    """The setting paths `config` changes, relative to the original game, in a direction that helps at least one of
    `achievements` (empty: it targets none of them)."""
    env, original = type(config).ENV_NAME, type(config).original()
    pulled = {lever.path for a in achievements for lever in levers(env, a) if lever.pulled(config, original)}
    return [s.path for s in type(config).schema() if s.path in pulled]


# ----------------------------------------------------------------------------------------- purpose consistency
@dataclasses.dataclass(frozen=True)
class Concept:
    """Something a purpose can name. `gives`: settings that provide more of it (a promise of it is kept by pulling
    one); `removes`: settings that provide less of it ("no zombies"); `skills`: the achievements it names after a
    skill verb ("mine iron" is collect_iron)."""

    words: tuple[str, ...]
    gives: tuple[Lever, ...] = ()
    removes: tuple[Lever, ...] = ()
    skills: tuple[str, ...] = ()


def _inventory(item: str) -> Lever:
    return more(f"{_I}.{item}")


def _tool(material: str, kind: str) -> Concept:
    words = (f"{material} {kind}", f"wooden {kind}") if material == "wood" else (f"{material} {kind}",)
    return Concept(words, (_inventory(f"{material}_{kind}"),), skills=(f"make_{material}_{kind}",))


_MOB_REMOVED = {m: (less(f"{_C}.{m}s"), more(f"{_C}.peaceful")) for m in ("zombie", "skeleton")}
CRAFTER_CONCEPTS = (
    *(_tool(m, k) for m in ("wood", "stone", "iron") for k in ("pickaxe", "sword")),
    *(Concept((f"{m} tool",) + (("wooden tool",) if m == "wood" else ()),
              (_inventory(f"{m}_pickaxe"), _inventory(f"{m}_sword")),
              skills=(f"make_{m}_pickaxe", f"make_{m}_sword")) for m in ("wood", "stone", "iron")),
    Concept(("pickaxe",), tuple(_inventory(f"{m}_pickaxe") for m in ("wood", "stone", "iron")),
            skills=tuple(f"make_{m}_pickaxe" for m in ("wood", "stone", "iron"))),
    Concept(("sword", "weapon"), _SWORDS, skills=tuple(f"make_{m}_sword" for m in ("wood", "stone", "iron"))),
    Concept(("wood", "tree", "log"), (_WOOD, more(f"{_E}.tree_rarity"), GRASSLAND), (less(f"{_E}.tree_rarity"),),
            ("collect_wood",)),
    Concept(("stone",), (_STONE, MOUNTAIN), skills=("collect_stone", "place_stone")),
    *(Concept((ore,), (_inventory(ore), more(f"{_E}.{ore}_rarity"), MOUNTAIN), (less(f"{_E}.{ore}_rarity"),),
              (f"collect_{ore}",)) for ore in ("coal", "iron")),
    Concept(("diamond",), (_inventory("diamond"), more(f"{_E}.diamond_rarity"), MOUNTAIN),
            skills=("collect_diamond",)),  # already as rare as it gets
    Concept(("sapling", "plant", "seed"), (_inventory("sapling"), GRASSLAND),
            skills=("collect_sapling", "place_plant", "eat_plant")),
    Concept(("water", "drink", "pond", "lake"), (BEACHES,), skills=("collect_drink",)),
    Concept(("cow",), (more(f"{_C}.cows"), GRASSLAND), (less(f"{_C}.cows"),), ("eat_cow",)),
    Concept(("zombie",), (more(f"{_C}.zombies"),), _MOB_REMOVED["zombie"], ("defeat_zombie",)),
    Concept(("skeleton",), (more(f"{_C}.skeletons"),), _MOB_REMOVED["skeleton"], ("defeat_skeleton",)),
    Concept(("enemy", "monster", "mob"), (more(f"{_C}.zombies"), more(f"{_C}.skeletons")),
            _MOB_REMOVED["zombie"] + _MOB_REMOVED["skeleton"], ("defeat_zombie", "defeat_skeleton")),
    Concept(("peaceful",), (more(f"{_C}.peaceful"), less(f"{_C}.zombies"))),
    Concept(("crafting table", "table", "workbench"), (_TABLE,), skills=("place_table",)),
    Concept(("furnace",), (_FURNACE,), skills=("place_furnace",)),
    Concept(("mountain", "cave"), (MOUNTAIN,)),
    Concept(("grassland", "grass", "meadow"), (GRASSLAND,)),
    Concept(("beach", "sand"), (BEACHES,)),
    Concept(("sleep", "sleeping", "wake"), skills=("wake_up",)),
    Concept(("combat",), skills=("defeat_zombie", "defeat_skeleton")),
)


def _colour_key(colour: str, index: int) -> tuple[Concept, Concept]:
    doors = _keys(*range(index + 1, 4))
    return (Concept((f"{colour} key",), (_start_with(colour), _KEYS_NEAR, doors), skills=(f"collect_key_{colour}",)),
            Concept((f"{colour} door", f"{colour} lock"), (doors,), skills=(f"open_lock_{colour}",)))


HEIST_CONCEPTS = (
    *(c for i, colour in enumerate(("blue", "green", "red")) for c in _colour_key(colour, i)),
    Concept(("key",), (_KEYS_NEAR, _start_with("blue"), _start_with("green"), _start_with("red")),
            (_keys(0),), tuple(f"collect_key_{c}" for c in ("blue", "green", "red"))),
    Concept(("door", "lock"), (_keys(1, 2, 3),), (_keys(0, 1),),
            tuple(f"open_lock_{c}" for c in ("blue", "green", "red"))),
    Concept(("gem",), (among(f"{_P}.gem_distance", "near"),), skills=("collect_gem",)),
    Concept(("small maze", "smaller maze", "tiny maze", "short maze"), (SMALL_MAZE,)),
    Concept(("large maze", "larger maze", "big maze", "bigger maze"), (among(f"{_M}.maze_dim", 11, 13),)),
)
CONCEPTS = {"crafter": CRAFTER_CONCEPTS, "heist": HEIST_CONCEPTS}

# Words that decide how a named concept is read. After a skill verb it names a skill ("mine iron"), after a promise
# marker or at the start of a clause a thing the environment provides ("with a stone pickaxe"). Next to "%" or
# "success" it cites the feedback ("collect_iron: 0%") and promises nothing.
SKILL_VERBS = frozenset(
    "collect collecting collects mine mining mines gather gathering find finding get getting obtain obtaining make "
    "making makes craft crafting crafts build building place placing places defeat defeating fight fighting kill "
    "killing hunt hunting eat eating drink drinking open opening unlock unlocking reach reaching pick picking chop "
    "chopping harvest harvesting search searching grab grabbing learn learning practise practising practice "
    "practicing".split())
SKILL_NOUNS = frozenset("collection mining crafting gathering hunting placement harvesting combat".split())
PROMISE_MARKERS = frozenset(
    "with without using uses use given gives give giving start starts starting provide provides provided providing "
    "has have having holding nearby near includes including plus placed spawn spawns".split())
CLAUSE_BREAKS = frozenset(". ; : ! ? ( ) where while so because since which".split())
LESS_WORDS = frozenset("no fewer less without rare rarer scarce reduced few zero removed remove".split())
CITATION_WORDS = frozenset("success rate rates score scores percent %".split())
_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?|[.;:!?()%]")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("_", " ").replace("-", " "))


def _mentions(purpose: str, concepts: tuple[Concept, ...]) -> list[tuple[Concept, str]]:
    """(concept, how) for each concept the purpose names: how is "skill", "more" or "less"; citations are skipped."""
    phrases = sorted(((tuple(w.split()), c) for c in concepts for w in c.words), key=lambda p: -len(p[0]))
    tokens, found, mode, i = _tokens(purpose), [], "promise", 0
    while i < len(tokens):
        token = tokens[i]
        match = next(((p, c) for p, c in phrases if _matches(tokens, i, p)), None)
        if match is None:
            mode = ("skill" if token in SKILL_VERBS else "promise" if token in PROMISE_MARKERS | CLAUSE_BREAKS
                    else mode)
            i += 1
            continue
        phrase, concept = match
        end = i + len(phrase)
        around = tokens[max(0, i - 3):i] + tokens[end:end + 3]  # "collect_iron: 0%", "low success at mining iron"
        if not CITATION_WORDS & set(around):
            skill = mode == "skill" or (end < len(tokens) and tokens[end] in SKILL_NOUNS)
            how = "less" if LESS_WORDS & set(tokens[max(0, i - 2):i]) else "skill" if skill else "more"
            found.append((concept, how))
        i = end
    return found


def _matches(tokens: list[str], i: int, phrase: tuple[str, ...]) -> bool:
    """The phrase at position i, its last word also in the plural ("pickaxes", "beaches")."""
    words = tokens[i:i + len(phrase)]
    if len(words) < len(phrase) or words[:-1] != list(phrase[:-1]):
        return False
    last, want = words[-1], phrase[-1]
    return last in (want, want + "s", want + "es") or (want.endswith("y") and last == want[:-1] + "ies")


def purpose_problems(purpose: str, config: Any) -> list[str] | None:
    """What a purpose says that its config does not do, as short sentences: every promised thing must be given
    ("a wood pickaxe" -> wood_pickaxe raised), every promised absence made ("no zombies" -> fewer zombies or
    peaceful), and when skills are named ("mine iron"), the config must help at least one of them (one named skill
    may be context). None when the purpose names nothing this vocabulary can check. A heuristic over words, meant
    for counting in a benchmark and for hints to the designer, never for rejecting a design on its own."""
    original = type(config).original()
    problems, skills, skill_ok, checked = [], [], False, False
    for concept, how in _mentions(purpose or "", CONCEPTS.get(type(config).ENV_NAME, ())):
        if how == "skill" and not concept.skills:
            how = "more"  # "mine in a mountain": a place, not a skill
        if how == "more" and not concept.gives:
            how = "skill"  # "a safe place to sleep": nothing to give, only a skill
        if how == "less" and concept.removes:
            checked = True
            if not any(lever.pulled(config, original) for lever in concept.removes):
                problems.append(f"it promises less {concept.words[0]} but changes no setting that gives less")
        elif how == "skill":
            checked = True
            skills.append(concept.words[0])
            skill_ok = skill_ok or bool(helps(config, concept.skills)) or _gives(concept, config, original)
        elif how == "more":
            checked = True
            if not _gives(concept, config, original):
                problems.append(f"it promises {concept.words[0]} but changes no setting that gives it "
                                f"({', '.join(dict.fromkeys(lever.name for lever in concept.gives))})")
    if skills and not skill_ok:
        problems.append(f"it names the skills {', '.join(dict.fromkeys(skills))} but changes no setting that "
                        f"helps them")
    return problems if checked else None


def _gives(concept: Concept, config: Any, original: Any) -> bool:
    return any(lever.pulled(config, original) for lever in concept.gives)


def purpose_consistency(purpose: str, config: Any) -> bool | None:
    """True when the config does what its purpose says (see purpose_problems), None when nothing is checkable."""
    problems = purpose_problems(purpose, config)
    return None if problems is None else not problems
