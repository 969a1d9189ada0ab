"""Which settings help which achievement: the yardstick for "does a design target the skills the agent is weak at"
and "does a purpose match its settings" (benchmarks/designer_quality.py). The logic is generic; each game declares
its own `TargetMap` (its package's targeting.py, read from the game's rules: envs/crafter/targeting.py,
envs/heist/targeting.py), and it reaches here through the game's `EnvSpec.targeting` or `Game.targeting`.

A map gives each achievement (Heist: each subtask) its levers: the settings that make it easier to learn, each with
the direction that helps, relative to the original game:

    more(path)              an ordered setting raised: a rarity or frequency word toward "very common", a count
                            going up, a switch turned on
    less(path)              the same setting lowered
    among(path, *values)    set to one of these values (a biome; Heist's maze size and key count, whose default -1
                            means "drawn as in Procgen" and so is neither small nor large)

Prerequisites, one level. A changed setting helps achievement X when it pulls a lever of X itself or of one of X's
direct prerequisites: the achievements just before X in the tech tree (the map's `prerequisites`), those X needs
that no other prerequisite of X already needs (make_wood_pickaxe follows place_table, which follows collect_wood).
So collect_iron is helped by more iron, a mountain, a stone pickaxe in hand (its own levers) and by wood, stone or a
table nearby (what making the stone pickaxe needs), not by a furnace (nothing before collect_iron needs one) nor by
more trees (two steps back). Not the full chain: every crafting skill's chain ends at trees and grass, so with it a
grassland would "target" iron, whose stone it lacks. Heist's collect_gem lists its shortcuts (keys in hand, fewer
doors) as its own levers and has no prerequisite, because which door stands before the gem depends on the number of
keys.

Data only: no config class is imported (that would pull in JAX); values are ranked through the config's own schema
when a config is checked, and tests check every path and value against the schemas.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Mapping

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


# Words that decide how a named concept is read. After a skill verb it names a skill ("mine iron"), after a promise
# marker or at the start of a clause a thing the environment provides ("with a stone pickaxe"). Next to "%" or
# "success" it cites the feedback ("collect_iron: 0%") and promises nothing.
SKILL_VERBS = frozenset(
    "collect collecting collects mine mining mines gather gathering find finding get getting obtain obtaining make "
    "making makes craft crafting crafts build building place placing places defeat defeating fight fighting kill "
    "killing hunt hunting eat eating drink drinking open opening unlock unlocking reach reaching enter entering "
    "descend descending pick picking chop "
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


def _gives(concept: Concept, config: Any, original: Any) -> bool:
    return any(lever.pulled(config, original) for lever in concept.gives)


# ---------------------------------------------------------------------------------------------- one game's map
@dataclasses.dataclass(frozen=True, eq=False)
class TargetMap:
    """One game's map (declared in its package): each achievement's own levers, in the game's order; its direct
    prerequisites (achievements without any are left out); and the concepts its purposes may name."""

    game: str                                       # the game's name, for messages
    own_levers: Mapping[str, tuple[Lever, ...]]     # achievement -> the levers that help it directly
    prerequisites: Mapping[str, tuple[str, ...]]    # achievement -> the achievements just before it
    concepts: tuple[Concept, ...] = ()

    def levers(self, achievement: str) -> tuple[Lever, ...]:
        """The levers that help `achievement`: its own, then its direct prerequisites' (see the module docstring)."""
        own = self.own_levers
        if achievement not in own:
            raise KeyError(f"{achievement!r} is not a {self.game} achievement; known: {', '.join(own)}")
        found = [*own[achievement], *(lever for p in self.prerequisites.get(achievement, ()) for lever in own[p])]
        return tuple(dict.fromkeys(found))

    def helps(self, config: Any, achievements: Iterable[str]) -> list[str]:
        """The setting paths `config` changes, relative to the original game, in a direction that helps at least one
        of `achievements` (empty: it targets none of them)."""
        original = type(config).original()
        pulled = {lever.path for a in achievements for lever in self.levers(a) if lever.pulled(config, original)}
        return [s.path for s in type(config).schema() if s.path in pulled]

    def purpose_problems(self, purpose: str, config: Any) -> list[str] | None:
        """What a purpose says that its config does not do, as short sentences: every promised thing must be given
        ("a wood pickaxe" -> wood_pickaxe raised), every promised absence made ("no zombies" -> fewer zombies or
        peaceful), and when skills are named ("mine iron"), the config must help at least one of them (one named
        skill may be context). None when the purpose names nothing this vocabulary can check. A heuristic over
        words, meant for counting in a benchmark and for hints to the designer, never for rejecting a design on its
        own."""
        original = type(config).original()
        problems, skills, skill_ok, checked = [], [], False, False
        for concept, how in _mentions(purpose or "", self.concepts):
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
                skill_ok = skill_ok or bool(self.helps(config, concept.skills)) or _gives(concept, config, original)
            elif how == "more":
                checked = True
                if not _gives(concept, config, original):
                    problems.append(f"it promises {concept.words[0]} but changes no setting that gives it "
                                    f"({', '.join(dict.fromkeys(lever.name for lever in concept.gives))})")
        if skills and not skill_ok:
            problems.append(f"it names the skills {', '.join(dict.fromkeys(skills))} but changes no setting that "
                            f"helps them")
        return problems if checked else None

    def purpose_consistency(self, purpose: str, config: Any) -> bool | None:
        """True when the config does what its purpose says (see purpose_problems), None when nothing is checkable."""
        problems = self.purpose_problems(purpose, config)
        return None if problems is None else not problems
