"""How well an LLM designs environments: does it target the skills the agent is weak at, without copying?

    python benchmarks/designer_quality.py --models qwen2.5-coder-1.5b --variants v2,v1          # new vs old
    python benchmarks/designer_quality.py --base-url http://localhost:8000/v1 --model Qwen2.5-7B-Instruct
    python benchmarks/designer_quality.py --models smollm2-135m --tiny                  # a smoke run
    python benchmarks/designer_quality.py --models qwen2.5-coder-1.5b --variants v2_no_targets --resume
    python benchmarks/designer_quality.py --report             # the tables again from the stored calls, no model

Each designer answers a fixed set of feedback profiles (PROFILES), each asked --repeats times with sampling seeds
0..K-1. Every request gets a fresh Designer. The first cycle calls `generate`. A feedback profile continues a
conversation that already holds the generation prompt and one earlier reply, the design in PREVIOUS (EnvGen's
first-cycle kind: basic crafting, mining, survival, plants; for Heist mazes of several sizes, the gem near, the full
key chain), and calls `feedback(success, n)`: the turn a run sends in its second cycle. The earlier design targets
each profile's weak skills with a quarter to half of its environments, so a designer has room to do better.

Profiles (PROFILES): the first cycle, then each group of related skills weak in turn (Crafter: plants, wood tools,
stone tools, the iron chain, combat, survival; Heist: keys, locks, gem).

Per call: valid on the first try, repairs, failure, latency, prompt/completion tokens, and for each configuration:
- targeting: it changes a setting that helps one of the profile's weak skills (the game's TargetMap.helps,
  llm/targeting.py: the skill's own levers and those of its direct prerequisites); not scored for the first cycle,
  which has no weak skill;
  the table also shows what the earlier design itself scores, i.e. what sending it back unchanged would get;
- lift: targeting minus that score of the earlier design on the same profile (so changing everything at once does
  not count as targeting), and specificity: the share of the settings it changes that serve a weak skill;
- copying: it equals the example configuration that the prompt used to show (EXAMPLES), whether or not the variant
  shows it; and (feedback profiles) it repeats a configuration of the earlier design, which the feedback turn shows;
- diversity: distinct configurations per call (2 identical out of 4 is 3/4), and duplicates per call (copies of
  another configuration of the same call), repeats per call (of the earlier design) and the re-asks the designer
  made for them (llm.distinct);
- the lowest targeting over the feedback profiles beside the average (issue 45: a weak skill never served);
- consistency: its purpose matches what it changes (TargetMap.purpose_consistency; purposes naming nothing checkable
  are left out).
Designer variants (--variants, see VARIANTS): `v2` (the second study's designer: each environment names its targets
first, the achievements are listed with what each needs, the earlier environments are described in words, without
the agent's success inside each, which only a run measures, a repeat of any earlier design and targets the settings
do not serve go back for up to two repair turns), `v3` (the designer left by the verdicts, as the bundled configs
run it, measured before llm.distinct and pinned without it), `v3_distinct` (v3 with the guard: a repeated
environment asked again, the designer as it runs now) and issue 45's ideas on top of it, each one setting:
`v3_weak_needs` (what the weakest quarter's achievements need), `v3_weak_levers` (with the settings that make each
easier, e.g. Heist's keys), `v3_targets_where_missing` (one environment asked again, targets first, where no
environment serves a weak skill), decided against v3_distinct (IDEAS_45), then `v3_focus_weakest` (v3_weak_needs,
adopted, with each environment asked for one weak skill in turn), decided against v3_weak_needs, and
`v3_focus_lagging` and `v3_focus_levers` (llm.weak_levers on top), decided against v3_focus_weakest; `v2_greedy` (at
temperature 0), the ablations `v2_no_targets`, `v2_no_needs`, `v2_json_history` and `v2_with_defaults`, `v2_analysis_once` (the later replies of a design read the first one's analysis instead of
writing their own: fewer tokens a call), `v2_no_advice` (no repair turn for a valid but wasteful environment: fewer
replies a call), and `v1` (the designer of the first study). The
first round's variants, all with v1's prompts: `sampled_repairs` (= v1), `current` (the same with
repairs at the request's temperature, as before llm.repair_temperature), `basic_advice` (only repeated or
unchanged environments sent back for repair), `no_advice` (every valid design accepted), and `with_example` (the old
example environment after the output format, basic advice), so that one change can be measured at a time. Note that
`current` and `sampled_repairs` send back environments whose purpose the consistency heuristic finds unkept, so their
consistency figures are not independent of the designer.

Results: benchmarks/results/designer_quality.{json,md,png} (--out). The JSON holds the environment (git commit,
versions, CPU), the settings, the profiles, the prompts sent, every call's raw record (replies, configurations,
purposes, analysis, usage), the aggregates per model x variant x env x profile, per env and overall, each variant
paired with v2 request by request (`paired`), and each of v2's ideas decided by the rule set before the second
requests (`decisions`, IDEAS). The JSON is rewritten after every call; --resume keeps the calls already in --out
(same settings) and makes only the missing ones, also to add a model to an earlier file. The offline models run
through llama.cpp's server (one per model, with its prompt cache, as in a run: repeats of a prompt then cost only the
reply).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envgen_jax import games  # noqa: E402
from envgen_jax.llm.designer import Designer  # noqa: E402
from envgen_jax.llm.errors import DesignError, LLMError  # noqa: E402
from envgen_jax.llm.prompts import (analysis_prompt, feedback_prompt, generation_prompt,  # noqa: E402
                                    normalise_success, render, weakest_quarter, written_prompt)
from envgen_jax.llm.settings import LLMSettings  # noqa: E402
from envgen_jax.llm.spec import EnvSpec  # noqa: E402
from envgen_jax.llm.transcript import read_transcript  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_OUT = RESULTS / "designer_quality_v2.json"  # designer_quality.json: the first round's (old profiles)
HEIST_WORLD_DIM = 13  # Procgen's hard mode, the default HeistEnv: configs whose maze does not fit go back for repair
AIM = {"model": "qwen2.5-coder-1.5b", "targeting_at_least": 0.70, "copies_at_most": 0, "lift_at_least": 0.25,
       "per_env_targeting_at_least": 0.50, "repeats_at_most": 0.10,
       "per_profile_targeting_at_least": 0.50, "duplicates_at_most": 0}  # the last two: issue 45's
METRICS = {"targeting": "targets weak skills", "copying": "copies the example",
           "repeats_previous": "repeats the earlier design", "diversity": "distinct per call",
           "consistency": "purpose matches", "first_try_valid": "valid on the first try"}  # the plot's bars


# ----------------------------------------------------------------------------------------------- profiles
@dataclasses.dataclass(frozen=True)
class Profile:
    """A feedback situation: the weak skills (near 0%) of an agent good at the rest (40-90%); none: the first
    cycle, which has no feedback. Synthetic on purpose: each isolates one family of skills, so a design can be
    scored against it (a real agent's rates would also drag down what follows a weak skill)."""

    weak: tuple[str, ...] = ()

    @property
    def first_cycle(self) -> bool:
        return not self.weak


# A plausible trained agent (40-90%), strongest at the start of the tech tree.
BASE_RATES = {
    "crafter": {"collect_coal": 70, "collect_diamond": 40, "collect_drink": 75, "collect_iron": 55,
                "collect_sapling": 85, "collect_stone": 80, "collect_wood": 90, "defeat_skeleton": 45,
                "defeat_zombie": 70, "eat_cow": 75, "eat_plant": 40, "make_iron_pickaxe": 42, "make_iron_sword": 41,
                "make_stone_pickaxe": 65, "make_stone_sword": 60, "make_wood_pickaxe": 88, "make_wood_sword": 85,
                "place_furnace": 60, "place_plant": 85, "place_stone": 75, "place_table": 90, "wake_up": 55},
    "heist": {"collect_key_blue": 85, "collect_key_green": 75, "collect_key_red": 65, "open_lock_blue": 80,
              "open_lock_green": 70, "open_lock_red": 60, "collect_gem": 50},
    # Full Craftax: a plausible agent near the end of a 1M-step run, the overworld's skills learned, the floors below
    # rarely reached (the profiles' weak skills are set near 0, below all of these).
    "craftax": {**{a: 30 for a in ("cast_fireball", "cast_iceball", "collect_ruby", "collect_sapphire",
                                   "damage_necromancer", "defeat_archer", "defeat_deep_thing", "defeat_fire_elemental",
                                   "defeat_frost_troll", "defeat_gnome_archer", "defeat_gnome_warrior",
                                   "defeat_ice_elemental", "defeat_knight", "defeat_kobold", "defeat_lizard",
                                   "defeat_necromancer", "defeat_orc_mage", "defeat_orc_solider", "defeat_pigman",
                                   "defeat_troll", "drink_potion", "eat_bat", "eat_snail", "enchant_armour",
                                   "enchant_sword", "enter_fire_realm", "enter_gnomish_mines", "enter_graveyard",
                                   "enter_ice_realm", "enter_sewers", "enter_troll_mines", "enter_vault", "find_bow",
                                   "fire_bow", "learn_fireball", "learn_iceball", "make_diamond_armour",
                                   "make_diamond_pickaxe", "make_diamond_sword", "open_chest")},
                **{"collect_coal": 60, "collect_diamond": 35, "collect_drink": 80, "collect_iron": 50,
                   "collect_sapling": 85, "collect_stone": 75, "collect_wood": 90, "defeat_skeleton": 40,
                   "defeat_zombie": 65, "eat_cow": 75, "eat_plant": 40, "enter_dungeon": 45, "make_arrow": 45,
                   "make_iron_armour": 35, "make_iron_pickaxe": 40, "make_iron_sword": 40, "make_stone_pickaxe": 65,
                   "make_stone_sword": 60, "make_torch": 50, "make_wood_pickaxe": 85, "make_wood_sword": 80,
                   "place_furnace": 55, "place_plant": 80, "place_stone": 70, "place_table": 90, "place_torch": 45,
                   "wake_up": 55}},
}
WEAK_RATES = (0.0, 1.0, 0.5, 2.0)  # the weak skills' rates in turn: near 0%, not all equal
PROFILES = {  # each group of related skills weak in turn
    "crafter": {
        "first_cycle": Profile(),
        "weak_plants": Profile(("collect_sapling", "place_plant", "eat_plant")),
        "weak_wood_tools": Profile(("place_table", "make_wood_pickaxe", "make_wood_sword")),
        "weak_stone_tools": Profile(("collect_stone", "place_stone", "make_stone_pickaxe", "make_stone_sword",
                                     "place_furnace")),
        "weak_iron_diamond": Profile(("collect_iron", "make_iron_pickaxe", "make_iron_sword", "collect_diamond")),
        "weak_combat": Profile(("defeat_zombie", "defeat_skeleton")),
        "weak_survival": Profile(("collect_drink", "eat_cow", "wake_up")),
    },
    "heist": {
        "first_cycle": Profile(),
        "weak_keys": Profile(("collect_key_blue", "collect_key_green", "collect_key_red")),
        "weak_locks": Profile(("open_lock_blue", "open_lock_green", "open_lock_red")),
        "weak_gem": Profile(("collect_gem",)),
    },
    "craftax": {
        "first_cycle": Profile(),
        "weak_tools": Profile(("place_table", "make_wood_pickaxe", "make_stone_pickaxe", "make_stone_sword")),
        "weak_iron": Profile(("collect_iron", "place_furnace", "make_iron_pickaxe", "make_iron_sword")),
        "weak_descent": Profile(("enter_dungeon", "enter_gnomish_mines", "enter_sewers")),
        "weak_dungeon": Profile(("defeat_orc_solider", "defeat_orc_mage", "open_chest", "find_bow")),
        "weak_survival": Profile(("collect_drink", "eat_cow", "wake_up")),
    },
}


def success_rates(env: str, profile: Profile) -> dict[str, list[float]]:
    """achievement -> [mean %, std %]: weak skills near 0, the rest at BASE_RATES."""
    rates = {name: [float(rate), 5.0] for name, rate in BASE_RATES[env].items()}
    for i, name in enumerate(profile.weak):
        rates[name] = [WEAK_RATES[i % len(WEAK_RATES)], 0.5]
    return rates


# The earlier design a feedback profile answers (its purposes and analysis are the earlier reply's).
PREVIOUS = {
    "crafter": [
        ("Collect wood and place a table: many trees and some wood at the start.",
         {"environment_settings": {"tree_rarity": "very common"}, "inventory_settings": {"wood": 2}}),
        ("Mine stone and coal: a mountain rich in coal and a wood pickaxe to start with.",
         {"environment_settings": {"target_biome": "mountain", "coal_rarity": "very common"},
          "inventory_settings": {"wood_pickaxe": 1}}),
        ("Drink and eat: beaches with water everywhere, many cows and few zombies.",
         {"environment_settings": {"target_biome": "beaches"},
          "creature_settings": {"cows": "very common", "zombies": "rare"}}),
        ("Grow food: two saplings to plant and later eat.", {"inventory_settings": {"sapling": 2}}),
    ],
    "heist": [
        ("Explore a medium maze.", {"maze_settings": {"maze_dim": 9}}),
        ("A larger maze with less time, to move with purpose.",
         {"maze_settings": {"maze_dim": 11}, "episode_settings": {"max_episode_steps": 500}}),
        ("The gem close by, to learn that touching it ends the level.",
         {"placement_settings": {"gem_distance": "near"}}),
        ("The full chain of three doors, with the keys far away.",
         {"maze_settings": {"num_keys": 3}, "placement_settings": {"key_distance": "far"}}),
    ],
    "craftax": [
        ("Collect wood and make tools: many trees and some wood at the start.",
         {"world_settings": {"trees": "very common"}, "inventory_settings": {"wood": 2}}),
        ("Mine stone and coal: more mountains rich in coal and a wood pickaxe to start with.",
         {"world_settings": {"mountains": "more", "coal_rarity": "very common"},
          "inventory_settings": {"pickaxe": "wood"}}),
        ("Drink and eat: many lakes and many cows.",
         {"world_settings": {"water": "very common"}, "creature_settings": {"passive_creatures": "very common"}}),
        ("Explore the dungeon: start there with a stone sword.",
         {"start_settings": {"start_floor": "dungeon"}, "inventory_settings": {"sword": "stone"}}),
    ],
}
PREVIOUS_ANALYSIS = "No feedback yet: start with the basic skills, each environment aimed at one group of them."

# The example environment the output format showed until it was removed (small models copied it).
EXAMPLES = {
    "crafter": {"purpose": "Basic resource collection and crafting: many trees and a wood pickaxe at the start let "
                           "the agent practise collecting wood and stone and making stone tools at a table.",
                "config": {"environment_settings": {"target_biome": "grassland", "tree_rarity": "very common"},
                           "inventory_settings": {"wood": 3, "wood_pickaxe": 1}}},
    "craftax": {"purpose": "Basic resource collection and crafting: many trees and a wood pickaxe at the start let "
                           "the agent practise collecting wood and stone and making stone tools at a table.",
                "config": {"world_settings": {"trees": "very common"},
                           "inventory_settings": {"wood": 3, "pickaxe": "wood"}}},
    "heist": {"purpose": "A short chain in a small maze: with one key placed near the start, the agent can learn to "
                         "pick up a key and open its door before searching for the gem.",
              "config": {"maze_settings": {"maze_dim": 7, "num_keys": 1},
                         "placement_settings": {"key_distance": "near"}}},
}


# ----------------------------------------------------------------------------------------------- variants
def current(spec: EnvSpec, folder: Path) -> EnvSpec:
    """The prompts as the designer sends them."""
    return spec


def with_example(spec: EnvSpec, folder: Path) -> EnvSpec:
    """The old output format: the example environment right after it, in the generation and feedback prompts."""
    folder = folder / spec.name  # each game's templates in a folder of their own, as in its package
    folder.mkdir(parents=True, exist_ok=True)
    shown = "\nFor example, one environment could be:\n" + json.dumps(EXAMPLES[spec.name])
    changed = dataclasses.replace(spec, prompts_dir=folder)
    for kind in ("generate", "feedback", "rules", "needs"):
        text = spec.read_template(kind)
        if kind in ("generate", "feedback"):
            text = text.replace("${output_format}", "${output_format}" + shown)
        changed.template_path(kind).write_text(text, encoding="utf-8")
    return changed


@dataclasses.dataclass(frozen=True)
class Variant:
    """A designer to measure: its prompts and which wasteful designs it sends back for repair (LLMSettings.advice)."""

    prompts: Callable[[EnvSpec, Path], EnvSpec]
    advice: str
    about: str
    repair_temperature: float | None = None  # LLMSettings.repair_temperature (None: the run's temperature)
    llm: tuple = ()                          # further LLMSettings fields, as (name, value) pairs
    temperature: float | None = None         # the request's temperature (None: --temperature)

    def settings(self, base: LLMSettings) -> "Trial":
        # Every variant but issue 45's was measured before llm.distinct: without it unless `llm` sets it; and from
        # the strategy's defaults of then (MEASURED_FROM), so that the adopted defaults cannot move a variant.
        extra = MEASURED_FROM | {"distinct": False} | dict(self.llm) | ({} if self.temperature is None else
                                                                         {"temperature": self.temperature})
        trial = {key: extra.pop(key) for key in ("unserved",) if key in extra}
        if extra.get("focus") == "lagging":  # the weakest quarter's lagging skills only (TrialDesigner)
            extra["focus"], trial["lagging"] = "weakest", True
        settings = base.replace(advice=self.advice, repair_temperature=self.repair_temperature, **extra)
        return Trial(settings.transport, settings.strategy, **trial)


# The strategy's defaults while the variants below were measured (the paper's way): each variant starts from them.
MEASURED_FROM = {"conversation": "continued", "envs_per_reply": None, "weak_needs": False, "weak_levers": False,
                 "focus": "none"}


@dataclasses.dataclass(frozen=True)
class Trial(LLMSettings):
    """LLM settings plus the ideas measured here and not adopted (docs/designer.md), which are no settings of the
    designer: TrialDesigner asks them."""

    # "targets_first": when a feedback design leaves a skill of the weakest quarter with no environment whose
    # settings help it, one environment (one whose weak skills another also serves) is asked again, naming its
    # targets first, from those skills (v3_targets_where_missing).
    unserved: str = "accept"
    # focus "lagging": llm.focus "weakest" round only the weakest quarter's skills that lag far behind the rest
    # (success at most half the median achievement's; the weakest always) (v3_focus_lagging).
    lagging: bool = False


def lagging_skills(spec: EnvSpec, success: dict) -> list[str]:
    """The weakest quarter's achievements that lag far behind the rest (focus "lagging"): success at most half
    the median achievement's, weakest first; the weakest one always."""
    rates = normalise_success(spec, success)
    quarter = weakest_quarter(spec, success)
    cut = statistics.median(m for m, _ in rates.values()) / 2
    return [quarter[0], *(name for name in quarter[1:] if rates[name][0] <= cut)]


class TrialDesigner(Designer):
    """The designer with a Trial's ideas (plain LLMSettings: the designer as it is)."""

    def focus_skills(self, success):
        if getattr(self.settings, "lagging", False) and self.strategy.focus == "weakest":
            return lagging_skills(self.spec, success)
        return super().focus_skills(success)

    def revise(self, draft):
        """unserved "targets_first": when a feedback design leaves a skill of the weakest quarter unserved, one
        environment (`unserved_slot`) is asked again, naming its targets first, from those skills."""
        if getattr(self.settings, "unserved", "") != "targets_first" or draft.success is None:
            return draft
        slot, missing = unserved_slot(draft.configs, weakest_quarter(self.spec, draft.success), self.spec.targeting)
        if slot is None:
            return draft
        keep = [i for i in range(draft.n) if i != slot]
        configs, purposes, targets = ([xs[i] for i in keep] for xs in (draft.configs, draft.purposes, draft.targets))
        text = "\n\n".join([draft.prompt, written_prompt(configs, targets),
                             *([analysis_prompt(draft.analysis)] if draft.analysis else []),
                             unserved_prompt(missing, draft.n, draft.n, self.spec.skills)])
        parsed, _ = self.turn.answer(draft.base, text, 1, draft.kind, self.requests + draft.replies, self.history,
                                     configs, with_analysis=False, earlier=draft.earlier, names=tuple(missing))
        return dataclasses.replace(draft, configs=[*configs, *parsed.configs], purposes=[*purposes, *parsed.purposes],
                                   targets=[*targets, *map(list, parsed.targets)], replies=draft.replies + 1)


UNSERVED_PROMPT = Path(__file__).resolve().parent / "designer_prompts" / "unserved.txt"


def unserved_prompt(missing, which: int, total: int, skills: str = "achievements") -> str:
    """The turn that asks a design's environment again for the weak skills none of its environments serves."""
    return render(UNSERVED_PROMPT.read_text(encoding="utf-8"), "unserved.txt", ("missing", "which"),
                  missing=", ".join(missing), which=which, total=total, skills=skills).strip()


def unserved_slot(configs, weak, target_map) -> tuple[int | None, list[str]]:
    """(the environment to ask again, the weak skills no environment helps), or (None, ...) when every weak skill
    is served or every environment is the only one serving one of them. The one asked again is the last whose
    weak skills another environment also serves (first those serving none)."""
    if not weak or target_map is None:
        return None, []
    served = [{w for w in weak if target_map.helps(c, [w])} for c in configs]
    missing = [w for w in weak if not any(w in s for s in served)]
    if not missing:
        return None, []
    spare = [i for i, s in enumerate(served) if s <= set().union(*(served[:i] + served[i + 1:]))]
    if not spare:
        return None, missing
    empty = [i for i in spare if not served[i]]
    return (empty or spare)[-1], missing


# How the designer was asked before this round: achievements by name only, no targets, earlier designs as JSON.
V1 = (("targets", False), ("needs", False), ("history", "json"), ("only_changes", False), ("envs_per_reply", None))
# v2: targets, needs, summaries, only changes and an analysis in every reply (LLMSettings' defaults when it was
# measured, pinned so that a later default cannot change what the name means), one environment per reply as the
# bundled run configs ask.
V2 = (("envs_per_reply", 1), ("targets", True), ("needs", True), ("history", "summary"), ("only_changes", True),
      ("analysis", "each_reply"))
# v3: v2 with each idea set by the rule's verdict (docs/designer.md), pinned the same way; as the bundled run
# configs ask (a test holds it to configs/crafter_envgen.yaml and heist_envgen.yaml), each feedback call in a fresh
# conversation.
V3 = (("envs_per_reply", 1), ("targets", False), ("needs", False), ("history", "json"), ("only_changes", False),
      ("analysis", "first_reply"), ("conversation", "fresh"))
# v3 as measured above was asked before llm.distinct: pinned off. v3_distinct is v3 with the guard (issue 45: a
# repeat of the design's or an earlier cycle's environment asked again), the designer as it runs now, and the
# reference of issue 45's ideas, each v3_distinct plus one setting.
V3_MEASURED = V3 + (("distinct", False),)  # (Variant.settings' default too; said here as v3 is compared to it)
# Issue 45's ideas pinned off in the reference, so that a default they become cannot move it.
V3_DISTINCT = V3 + (("distinct", True), ("weak_needs", False), ("weak_levers", False), ("unserved", "accept"),
                    ("focus", "none"))
VARIANTS: dict[str, Variant] = {
    "v2": Variant(current, "all", "the second study's designer: targets first, achievements with their needs, earlier "
                                  "environments in words (no agent here, so without what it unlocked inside "
                                  "each, which a run adds), only values that change "
                                  "a setting, one environment per reply, any earlier design's repeat and unserved "
                                  "targets sent back for up to two repair turns; repairs sampled at 0.7", 0.7, V2),
    "v2_greedy": Variant(current, "all", "v2 at temperature 0 (as configs/study_cpu.yaml asks)", 0.7, V2, 0.0),
    "v2_no_targets": Variant(current, "all", "v2 without the targets field", 0.7, V2 + (("targets", False),)),
    "v2_no_needs": Variant(current, "all", "v2 with the achievements by name only", 0.7, V2 + (("needs", False),)),
    "v2_json_history": Variant(current, "all", "v2 with the earlier environments as JSON", 0.7,
                               V2 + (("history", "json"),)),
    "v2_with_defaults": Variant(current, "all", "v2 with the schema offering default values too", 0.7,
                                V2 + (("only_changes", False),)),
    "v2_analysis_once": Variant(current, "all", "v2 with the later replies of a design reading the first one's "
                                "analysis instead of writing one", 0.7, V2 + (("analysis", "first_reply"),)),
    "v2_no_advice": Variant(current, "none", "v2 with every valid environment accepted as it is: no repair turn "
                            "for advice (repeats, unserved targets)", 0.7, V2),
    "v3": Variant(current, "none", "the designer left by the rule's verdicts, as the bundled configs run it: no "
                                   "targets, achievements by name, earlier environments as JSON in a fresh "
                                   "conversation, default values offered, one environment per reply with the "
                                   "first reply's analysis, every valid environment accepted", 0.7, V3_MEASURED),
    "v3_distinct": Variant(current, "none", "v3 with llm.distinct: a reply that repeats an environment of its design "
                                            "or of the earlier design is asked again (fresh seed, the repeat named), "
                                            "within the repair budget", 0.7, V3_DISTINCT),
    "v3_weak_needs": Variant(current, "none", "v3_distinct with what the weakest quarter's achievements need and the "
                                              "achievements just before each (llm.weak_needs)", 0.7,
                             V3_DISTINCT + (("weak_needs", True),)),
    "v3_weak_levers": Variant(current, "none", "v3_weak_needs with the settings that make each weak achievement "
                                               "easier (llm.weak_levers; Heist's keys: key_distance, maze size, "
                                               "num_keys)", 0.7, V3_DISTINCT + (("weak_needs", True),
                                                                                 ("weak_levers", True))),
    "v3_targets_where_missing": Variant(current, "none", "v3_distinct asking one environment again, targets first, "
                                                         "when no environment serves a skill of the weakest quarter "
                                                         "(llm.unserved: targets_first)", 0.7,
                                        V3_DISTINCT + (("unserved", "targets_first"),)),
    "v3_focus_weakest": Variant(current, "none", "v3_weak_needs (the default it became) asking each environment of a "
                                                 "feedback design for one skill of the weakest quarter in turn, "
                                                 "weakest first (llm.focus: weakest)", 0.7,
                                V3_DISTINCT + (("weak_needs", True), ("focus", "weakest"))),
    "v3_focus_lagging": Variant(current, "none", "v3_focus_weakest (the default it became) asking the environments "
                                                 "round only the weakest quarter's skills that lag far behind the "
                                                 "rest: success at most half the median's (llm.focus: lagging)", 0.7,
                                V3_DISTINCT + (("weak_needs", True), ("focus", "lagging"))),
    "v3_focus_levers": Variant(current, "none", "v3_focus_weakest (the default) with the settings that make each "
                                                "weak achievement easier (llm.weak_levers), the lever v3_weak_levers "
                                                "added to v3_weak_needs", 0.7,
                               V3_DISTINCT + (("weak_needs", True), ("focus", "weakest"), ("weak_levers", True))),
    "v2_all_at_once": Variant(current, "all", "v2 asking for all environments in one reply", 0.7,
                              (("envs_per_reply", None),)),
    "v2_one_per_reply": Variant(current, "all", "v2 with one environment per reply (the default since it was "
                                "measured in the probes)", 0.7, (("envs_per_reply", 1),)),
    "v1": Variant(current, "all", "the designer of the first study (= sampled_repairs): no targets, achievements by "
                                  "name, earlier environments as JSON", 0.7, V1),
    # The first round's variants, all with the v1 prompts:
    "current": Variant(current, "all", "no example shown; repeated, unchanged, already-trained and "
                                       "purpose-mismatched environments sent back once; repairs at the request's "
                                       "temperature (the designer before llm.repair_temperature)", llm=V1),
    "basic_advice": Variant(current, "duplicates", "no example shown; only repeated or unchanged environments "
                                                   "sent back", llm=V1),
    "with_example": Variant(with_example, "duplicates", "the old prompt, one example environment shown; only "
                                                        "repeated or unchanged environments sent back", llm=V1),
    "no_advice": Variant(current, "none", "no example shown; every valid design accepted as it is", llm=V1),
    "sampled_repairs": Variant(current, "all", "the designer as it runs (llm.repair_temperature 0.7): `current` with "
                                               "repair turns sampled at 0.7, since a greedy small model answers a "
                                               "repair turn with its previous reply", 0.7, V1),
}


@functools.lru_cache(maxsize=None)
def base_spec(env: str) -> EnvSpec:
    """The game's designer spec for its default environment (Heist: hard mode, a HEIST_WORLD_DIM world)."""
    game = games.get(env)
    return game.designer_spec(game.make_env())


# ----------------------------------------------------------------------------------------------- one call
@dataclasses.dataclass(frozen=True)
class Call:
    model: str
    variant: str
    env: str
    profile: str
    repeat: int

    @property
    def key(self) -> tuple:
        return dataclasses.astuple(self)


def earlier_state(spec: EnvSpec, n: int, settings: LLMSettings | None = None) -> dict:
    """A designer state after one cycle: the generation prompt answered with the PREVIOUS design."""
    previous = PREVIOUS[spec.name][:n]
    reply = {"analysis": PREVIOUS_ANALYSIS, "environments": [{"purpose": p, "config": c} for p, c in previous]}
    return {"version": 1, "env": spec.name, "requests": 1, "mode": None, "calls": 0,
            "messages": [{"role": "user", "content": generation_prompt(spec, n, settings and settings.strategy)},
                         {"role": "assistant", "content": json.dumps(reply)}],
            "configs": [c for _, c in previous], "purposes": [p for p, _ in previous]}


def ask(call: Call, spec: EnvSpec, settings: LLMSettings, n: int, transcript: Path, client: Any = None) -> str | None:
    """Make one request with a fresh designer; the transcript records it. Returns the error, if the call failed."""
    profile = PROFILES[call.env][call.profile]
    if profile.first_cycle:
        designer = TrialDesigner(spec, settings, transcript, client=client)
    else:
        designer = TrialDesigner.from_state(earlier_state(spec, n, settings), settings, transcript, env=spec,
                                       client=client)
    try:
        if profile.first_cycle:
            designer.generate(n)
        else:
            designer.feedback(success_rates(call.env, profile), n)
    except (DesignError, LLMError) as e:
        return f"{type(e).__name__}: {e}"[:2000]
    finally:
        designer.close()
    return None


def measure(call: Call, spec: EnvSpec, settings: LLMSettings, n: int, workdir: Path, client: Any = None) -> dict:
    """One call's raw record, read back from its transcript."""
    transcript = workdir / f"{'-'.join(map(str, call.key))}.jsonl".replace("/", "_")
    transcript.unlink(missing_ok=True)
    start = time.monotonic()
    error = ask(call, spec, settings.replace(seed=call.repeat), n, transcript, client)
    wall = time.monotonic() - start
    records = read_transcript(transcript) if transcript.exists() else []
    tries = [r for r in records if r["event"] == "exchange"]
    # A design written a few environments per reply (llm.envs_per_reply) has one accepted reply per request.
    accepted = [r for r in tries if r["accepted"]] if error is None else []
    requests = sorted({r["request"] for r in tries})
    usage = [r.get("usage") or {} for r in tries]
    cls = spec.config_cls
    joined = lambda key: [x for r in accepted for x in (r.get(key) or [])] if accepted else None  # noqa: E731
    return {
        **dataclasses.asdict(call), "seed": call.repeat, "ok": error is None, "error": error,
        "first_try_valid": bool(tries) and all(r["configs"] is not None for r in tries if r["try"] == 0),
        "replies": len(tries), "requests": len(requests),
        "repairs": max(len(tries) - len(requests), 0), "llm_errors": sum(r["event"] == "error" for r in records),
        "latency_s": round(sum(r["latency_s"] for r in tries), 3), "wall_s": round(wall, 3),
        "prompt_tokens": _total(u.get("prompt_tokens") for u in usage),
        "completion_tokens": _total(u.get("completion_tokens") for u in usage), "usage": usage,
        "analysis": accepted[0].get("analysis") if accepted else None,
        "purposes": joined("purposes"), "targets": joined("targets"),
        "configs": [cls.from_dict(c).to_dict(only_changed=True) for c in joined("configs")] if accepted else None,
        "advice": joined("advice"),
        # llm.distinct: replies asked again for a repeat, and the repeats the accepted design still holds
        "reasks": sum(r.get("reasks", 0) for r in records if r["event"] == "design"),
        "repeats_left": [x for r in records if r["event"] == "design" for x in r.get("repeats_left", [])],
        "replies_text": [r["reply"] for r in tries],
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _total(values: Iterable) -> int | None:
    values = list(values)
    return None if not values or any(v is None for v in values) else sum(values)


# ----------------------------------------------------------------------------------------------- scoring
SCORES = ("targeting", "helped_settings", "changed_settings", "baseline", "copies", "repeats_previous", "distinct",
          "duplicates", "consistent")


def score(record: dict, config_cls: type) -> dict:
    """The per-configuration verdicts of one call (recomputed whenever results are written)."""
    if not record["ok"]:
        return dict.fromkeys(SCORES)
    configs = [config_cls.from_dict(c) for c in record["configs"]]
    weak = PROFILES[record["env"]][record["profile"]].weak
    example = config_cls.from_dict(EXAMPLES[record["env"]]["config"])
    previous = [config_cls.from_dict(c) for _, c in PREVIOUS[record["env"]]]
    target_map = games.get(record["env"]).targeting
    helped = [target_map.helps(c, weak) for c in configs] if weak else None
    original = config_cls.original()
    changed = [[st.path for st in config_cls.schema() if getattr(c, st.name) != getattr(original, st.name)]
               for c in configs]
    return {"targeting": [bool(h) for h in helped] if weak else None, "helped_settings": helped,
            "changed_settings": changed,
            "baseline": baseline_targeting(record["env"], PROFILES[record["env"]][record["profile"]]) if weak else None,
            "copies": [c == example for c in configs],
            "repeats_previous": [c in previous for c in configs] if weak else None,
            "distinct": len(set(configs)) / len(configs),
            "duplicates": [c in configs[:i] for i, c in enumerate(configs)],  # a copy of one before it in the call
            "consistent": [target_map.purpose_consistency(p, c) for p, c in zip(record["purposes"], configs)]}


def baseline_targeting(env: str, profile: Profile) -> float:
    """The targeting share a designer gets by sending the earlier design back unchanged."""
    cls = base_spec(env).config_cls
    target_map = games.get(env).targeting
    return statistics.fmean(bool(target_map.helps(cls.from_dict(c), profile.weak)) for _, c in PREVIOUS[env])


def _share(flags: list) -> dict:
    """{"share", "hits", "of"} over the flags that are not None; share None when there are none."""
    known = [f for f in flags if f is not None]
    return {"share": sum(known) / len(known) if known else None, "hits": sum(known), "of": len(known)}


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def _median(values: list) -> float | None:
    return statistics.median(values) if values else None


def summarise(records: list[dict]) -> dict:
    """The aggregate of a group of scored calls."""
    ok = [r for r in records if r["ok"]]
    flat = lambda key: [f for r in ok for f in (r[key] or [])]  # noqa: E731
    return {
        "calls": len(records), "failures": len(records) - len(ok),
        "first_try_valid": _share([r["first_try_valid"] for r in records]),
        "repairs_per_call": _mean([r["repairs"] for r in records]),
        "configs": sum(len(r["configs"]) for r in ok),
        "targeting": _share(flat("targeting")), "copying": _share(flat("copies")),
        # lift: targeting minus what sending the earlier design back would score on the same profiles (weighted by
        # configurations); specificity: the share of changed settings that serve a weak skill.
        "lift": _lift(ok),
        "specificity": _share([path in helped for r in ok if r["helped_settings"] is not None
                               for changed, helped in zip(r["changed_settings"], r["helped_settings"])
                               for path in changed]),
        "repeats_previous": _share(flat("repeats_previous")),
        "diversity": _mean([r["distinct"] for r in ok]), "consistency": _share(flat("consistent")),
        # per call: environments that copy another of the same call, and (feedback calls) that repeat the earlier
        # design; re-asks for them (llm.distinct; None for calls measured before it was recorded)
        "duplicates_per_call": _mean([sum(r["duplicates"]) for r in ok if r.get("duplicates") is not None]),
        "repeats_per_call": _mean([sum(r["repeats_previous"]) for r in ok if r["repeats_previous"] is not None]),
        "reasks_per_call": _mean([r.get("reasks") for r in records]),
        "latency_s": _mean([r["latency_s"] for r in records if r["replies"]]),
        "latency_s_median": _median([r["latency_s"] for r in records if r["replies"]]),
        "prompt_tokens": _mean([r["prompt_tokens"] for r in records]),
        "completion_tokens": _mean([r["completion_tokens"] for r in records]),
    }


def _lift(ok: list[dict]) -> float | None:
    scored = [(t, r["baseline"]) for r in ok if r["targeting"] is not None for t in r["targeting"]]
    return statistics.fmean(t - b for t, b in scored) if scored else None


def aggregate(records: list[dict]) -> dict:
    """Summaries per model x variant x env x profile, per model x variant x env, and per model x variant."""
    out = {}
    for level, fields in (("by_profile", ("model", "variant", "env", "profile")),
                          ("by_env", ("model", "variant", "env")), ("overall", ("model", "variant"))):
        groups = defaultdict(list)
        for r in records:
            groups[tuple(r[f] for f in fields)].append(r)
        out[level] = [{**dict(zip(fields, key)), **summarise(group)} for key, group in groups.items()]
    for level in ("by_env", "overall"):
        for row in out[level]:
            row["targeting_min"] = profile_minimum(out["by_profile"], row)
    return out


def profile_minimum(by_profile: list[dict], row: dict) -> dict | None:
    """The lowest targeting over the feedback profiles of `row`'s model, variant (and env, if it has one), with the
    profile it is on (the first in PROFILES' order on a tie): a weak skill never served shows here, where the
    average hides it (issue 45). None when no profile was scored."""
    keys = [k for k in ("model", "variant", "env") if k in row]
    order = {(e, p): i for i, (e, p) in enumerate((e, p) for e in PROFILES for p in PROFILES[e])}
    scored = sorted((r for r in by_profile if all(r[k] == row[k] for k in keys)
                     and r["targeting"]["share"] is not None), key=lambda r: order.get((r["env"], r["profile"]), 0))
    if not scored:
        return None
    low = min(scored, key=lambda r: r["targeting"]["share"])
    return {**low["targeting"], "env": low["env"], "profile": low["profile"]}


REFERENCE = "v2"  # the variant every other is paired with, request by request


def paired(records: list[dict], reference: str = REFERENCE, variants: Iterable[str] | None = None) -> list[dict]:
    """Each variant against `reference` on the requests both answered (same model, game, feedback profile and seed):
    per request, the share of its configurations that target a weak skill and that repeat the earlier design, and
    the tokens it wrote; the mean difference (variant minus reference) with a two-sided paired sign-flip
    permutation test (exact up to 2^16 sign patterns; scipy.stats.permutation_test), so that a difference the
    requests' own spread explains is not read as an effect. Calls that failed are left out of both sides.
    `variants`: only these (default every other measured)."""
    import numpy as np
    from scipy.stats import permutation_test

    def cell(r: dict) -> tuple:
        return r["model"], r["env"], r["profile"], r["repeat"]

    ref = {cell(r): r for r in records if r["variant"] == reference and r["ok"]}
    out = []
    wanted = None if variants is None else set(variants)
    for model, variant in sorted({(r["model"], r["variant"]) for r in records if r["variant"] != reference
                                  and (wanted is None or r["variant"] in wanted)}):
        pairs = [(r, ref[cell(r)]) for r in records
                 if (r["model"], r["variant"]) == (model, variant) and r["ok"] and cell(r) in ref]
        row = {"model": model, "variant": variant, "reference": reference, "requests": len(pairs)}
        for key in ("targeting", "repeats_previous", "completion_tokens"):
            both = [(_cell_value(a, key), _cell_value(b, key)) for a, b in pairs]
            both = [(a, b) for a, b in both if a is not None and b is not None]
            x, y = np.array([a for a, _ in both], float), np.array([b for _, b in both], float)
            entry = {"requests": len(both), "variant": float(x.mean()) if both else None,
                     "reference": float(y.mean()) if both else None,
                     "difference": float((x - y).mean()) if both else None, "p": None}
            if len(both) >= 2 and np.any(x != y):
                entry["p"] = float(permutation_test((x, y), lambda a, b: np.mean(a - b), permutation_type="samples",
                                                    n_resamples=2 ** 16, random_state=0).pvalue)
            row[key] = entry
        out.append(row)
    return out


# The rule that decides each idea of v2 (docs/designer.md; set on 2026-11-25 at 19:20 UTC before any second
# request, tokens added at 20:10, advice repairs at 22:10 before any of their requests): an idea stays if its
# ablation (v2 without it) lowers targeting, or raises repeats of the earlier design or the tokens written, with
# p < ALPHA, paired with v2 over two requests per profile; otherwise it goes. A new idea is adopted if its variant
# writes fewer tokens with p < ALPHA and does not lower targeting with p < ALPHA.
ALPHA = 0.05
IDEAS = (  # (idea, the variant that tests it, "ablation" | "adoption")
    ("targets", "v2_no_targets", "ablation"),
    ("needs", "v2_no_needs", "ablation"),
    ("history: summary", "v2_json_history", "ablation"),
    ("only_changes", "v2_with_defaults", "ablation"),
    ("advice repair turns", "v2_no_advice", "ablation"),
    ("analysis: first_reply", "v2_analysis_once", "adoption"),
)


# Issue 45's ideas for the skills the designer never serves, each v3_distinct plus one setting, decided by the issue's
# rule: keep only what helps the minimum without lowering the average, i.e. adopted when its lowest targeting over
# the feedback profiles is higher than v3_distinct's and its targeting, paired with v3_distinct request by request,
# is not lower with p < ALPHA; at least two requests per profile, fewer: provisional.
# An idea measured after an earlier one was adopted builds on it, and is decided against it (IDEA_REFERENCE).
REFERENCE_45 = "v3_distinct"
IDEAS_45 = (("weak_needs", "v3_weak_needs"), ("weak_needs + weak_levers", "v3_weak_levers"),
            ("unserved: targets_first", "v3_targets_where_missing"), ("weak_needs + focus: weakest", "v3_focus_weakest"),
            ("weak_needs + focus: lagging", "v3_focus_lagging"),
            ("weak_needs + focus: weakest + weak_levers", "v3_focus_levers"))
IDEA_REFERENCE = {"v3_focus_weakest": "v3_weak_needs", "v3_focus_lagging": "v3_focus_weakest",
                  "v3_focus_levers": "v3_focus_weakest"}


def idea_pairs(scored: list[dict]) -> list[dict]:
    """Each of IDEAS_45's variants paired with its reference (REFERENCE_45, or IDEA_REFERENCE's)."""
    references = {v: IDEA_REFERENCE.get(v, REFERENCE_45) for _, v in IDEAS_45}
    return [row for ref in dict.fromkeys(references.values())
            for row in paired(scored, ref, [v for v, r in references.items() if r == ref])]


def decisions_45(paired_rows: list[dict], overall: list[dict], repeats_needed: int = 2) -> list[dict]:
    """Each of IDEAS_45's verdict by the rule above (AIM's model's rows; an idea not measured is left out)."""
    requests_needed = repeats_needed * sum(len(ps) for ps in PROFILES.values())
    rows = {(p["variant"], p["reference"]): p for p in paired_rows if p["model"] == AIM["model"]}
    low = {r["variant"]: (r.get("targeting_min") or {}).get("share") for r in overall if r["model"] == AIM["model"]}
    out = []
    for idea, variant in IDEAS_45:
        reference = IDEA_REFERENCE.get(variant, REFERENCE_45)
        if (variant, reference) not in rows or low.get(variant) is None or low.get(reference) is None:
            continue
        row = rows[variant, reference]
        higher = low[variant] > low[reference]
        lowered = _significant(row["targeting"], -1)
        reasons = [f"minimum over profiles {100 * low[reference]:.0f}% -> {100 * low[variant]:.0f}%"
                   + ("" if higher else ": not higher"),
                   "it lowers the average" if lowered else f"the average not lower with p < {ALPHA}"]
        out.append({"idea": idea, "variant": variant, "kind": "minimum", "reference": reference,
                    "requests": row["requests"], "provisional": row["requests"] < requests_needed,
                    "verdict": "adopted" if higher and not lowered else "not adopted", "reasons": reasons})
    return out


def _significant(entry: dict, sign: int) -> bool:
    """A paired difference in the direction of `sign` (+1: the variant more than v2, -1: less) with p < ALPHA."""
    return entry["difference"] is not None and entry["p"] is not None and entry["p"] < ALPHA \
        and entry["difference"] * sign > 0


def decisions(paired_rows: list[dict], repeats_needed: int = 2) -> list[dict]:
    """Each idea's verdict by the rule above, from `paired`'s rows (AIM's model's; an idea whose variant is not
    measured is left out). 'provisional' while its requests are fewer than `repeats_needed` per profile."""
    requests_needed = repeats_needed * sum(len(ps) for ps in PROFILES.values())
    rows = {p["variant"]: p for p in paired_rows if p["model"] == AIM["model"] and p["reference"] == REFERENCE}
    out = []
    for idea, variant, kind in IDEAS:
        if variant not in rows:
            continue
        row = rows[variant]
        # worse than v2 with p < ALPHA: less targeting, more repeats or tokens
        moved = {key: _significant(row[key], -1 if key == "targeting" else 1)
                 for key in ("targeting", "repeats_previous", "completion_tokens")}
        if kind == "ablation":
            reasons = [what for key, what in (("targeting", "removing it lowers targeting"),
                                              ("repeats_previous", "removing it raises repeats"),
                                              ("completion_tokens", "removing it raises the tokens written"))
                       if moved[key]]
            verdict = "stays" if reasons else "goes"
        else:
            fewer = _significant(row["completion_tokens"], -1)
            reasons = (["fewer tokens written"] if fewer else ["the tokens written do not fall"]) + (
                ["but it lowers targeting"] if moved["targeting"] else [])
            verdict = "adopted" if fewer and not moved["targeting"] else "not adopted"
        out.append({"idea": idea, "variant": variant, "kind": kind, "requests": row["requests"],
                    "provisional": row["requests"] < requests_needed, "verdict": verdict,
                    "reasons": reasons or [f"removing it harms nothing with p < {ALPHA}"]})
    return out


def _cell_value(record: dict, key: str) -> float | None:
    value = record.get(key)
    if isinstance(value, list):
        return sum(value) / len(value) if value else None
    return value


def aims(overall: list[dict], by_env: list[dict] = (), by_profile: list[dict] = ()) -> list[dict]:
    """The issue's aims for the 1.5B model, met or not, for every prompt variant measured: targeting, lift over
    sending the earlier design back, targeting per game, repeats of the earlier design, no copies of the old
    example, and every first-cycle design valid after repairs."""
    out = []
    for row in overall:
        if row["model"] != AIM["model"]:
            continue
        key = (row["model"], row["variant"])
        targeting, copies, lift = row["targeting"]["share"], row["copying"]["hits"], row.get("lift")
        repeats = (row.get("repeats_previous") or {}).get("share")
        per_env = {r["env"]: r["targeting"]["share"] for r in by_env if (r["model"], r["variant"]) == key}
        first = [r for r in by_profile if (r["model"], r["variant"]) == key and r["profile"] == "first_cycle"]
        low = row.get("targeting_min") or {}
        duplicates = row.get("duplicates_per_call")
        out.append({"model": row["model"], "variant": row["variant"], "targeting": targeting, "copies": copies,
                    "lift": lift, "repeats": repeats, "targeting_per_env": per_env,
                    "first_cycle_failures": sum(r["failures"] for r in first),
                    "targeting_met": targeting is not None and targeting >= AIM["targeting_at_least"],
                    "copies_met": copies <= AIM["copies_at_most"],
                    "lift_met": lift is not None and lift >= AIM["lift_at_least"],
                    "per_env_met": bool(per_env) and all(v is not None and v >= AIM["per_env_targeting_at_least"]
                                                         for v in per_env.values()),
                    "repeats_met": repeats is not None and repeats <= AIM["repeats_at_most"],
                    "first_cycle_met": sum(r["failures"] for r in first) == 0 if first else None,
                    "profile_minimum": low.get("share"), "profile_minimum_at": (
                        f"{low['env']} {low['profile']}" if low else None),
                    "profile_minimum_met": low.get("share") is not None
                    and low["share"] >= AIM["per_profile_targeting_at_least"],
                    "duplicates_per_call": duplicates,
                    "duplicates_met": duplicates is not None and duplicates <= AIM["duplicates_at_most"]})
    return out


# ----------------------------------------------------------------------------------------------- outputs
def _pct(share: dict | None) -> str:
    if not share or share["share"] is None:
        return "n/a"
    return f"{100 * share['share']:.0f}% ({share['hits']}/{share['of']})"


def _lowest(low: dict | None, with_env: bool = False) -> str:
    """The lowest profile's targeting and its name ("0% (0/8) weak_plants")."""
    if not low:
        return "n/a"
    return f"{_pct(low)} {low['env'] + ' ' if with_env else ''}{low['profile']}"


def _points(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.0f}"


def _num(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _arrow(entry: dict, fmt: Callable[[float], str]) -> str:
    """"reference -> variant" of a paired comparison's means."""
    return "n/a" if entry["variant"] is None else f"{fmt(entry['reference'])} -> {fmt(entry['variant'])}"


def _difference(entry: dict, scale: float) -> str:
    if entry["difference"] is None:
        return "n/a"
    return f"{scale * entry['difference']:+.0f} (p {'n/a' if entry['p'] is None else format(entry['p'], '.2f')})"


def markdown(result: dict) -> str:
    """The tables of docs/designer.md: per model x prompt x env and both envs; targeting per profile; the aim."""
    agg = result["aggregates"]
    head = ("| model | prompt | env | calls | valid 1st try | repairs/call | failed | targets weak skills | "
            "lowest profile | lift | specificity | copies example | repeats earlier design | distinct/call | "
            "duplicates/call | repeats/call | re-asks/call | purpose matches | latency s/call | tokens in / out |\n"
            + "|---" * 20 + "|")
    envs = defaultdict(int)
    for r in agg["by_env"]:
        envs[r["model"], r["variant"]] += 1
    rows = agg["by_env"] + [{**r, "env": "both"} for r in agg["overall"] if envs[r["model"], r["variant"]] > 1]
    rows.sort(key=lambda r: (r["model"], r["variant"], r["env"] == "both", r["env"]))
    lines = [head] + [
        f"| {r['model']} | {r['variant']} | {r['env']} | {r['calls']} | {_pct(r['first_try_valid'])} | "
        f"{_num(r['repairs_per_call'], 2)} | {r['failures']} | {_pct(r['targeting'])} | "
        f"{_lowest(r.get('targeting_min'), r['env'] == 'both')} | {_points(r.get('lift'))} | "
        f"{_pct(r.get('specificity'))} | {_pct(r['copying'])} | "
        f"{_pct(r['repeats_previous'])} | {_num(r['diversity'], 2)} | {_num(r.get('duplicates_per_call'), 2)} | "
        f"{_num(r.get('repeats_per_call'), 2)} | {_num(r.get('reasks_per_call'), 2)} | {_pct(r['consistency'])} | "
        f"{_num(r['latency_s'])} | {_num(r['prompt_tokens'], 0)} / {_num(r['completion_tokens'], 0)} |" for r in rows]
    measured = {(r["env"], r["profile"]) for r in agg["by_profile"]}
    profiles = [(e, p) for e in PROFILES for p, prof in PROFILES[e].items()
                if not prof.first_cycle and (e, p) in measured]
    by_profile = {(r["model"], r["variant"], r["env"], r["profile"]): r for r in agg["by_profile"]}
    models = sorted({(r["model"], r["variant"]) for r in agg["overall"]})
    overall = {(r["model"], r["variant"]): r for r in agg["overall"]}
    lines += ["", "Targeting per feedback profile (configurations that change a setting helping a weak skill), with "
                  "the average over them and the lowest (a weak skill never served shows there, not in the average):",
              "", "| model | prompt | " + " | ".join(f"{e} {p}" for e, p in profiles) + " | average | lowest |",
              "|---|---|" + "---|" * (len(profiles) + 2)]
    lines += [f"| {m} | {v} | " + " | ".join(_pct(by_profile.get((m, v, e, p), {}).get("targeting"))
                                             for e, p in profiles)
              + f" | {_pct(overall[m, v]['targeting'])} | {_lowest(overall[m, v].get('targeting_min'), True)} |"
              for m, v in models]
    baselines = [baseline_targeting(e, PROFILES[e][p]) for e, p in profiles]
    lines.append("| (the earlier design sent back) | | " + " | ".join(f"{100 * b:.0f}%" for b in baselines) + " | "
                 + (f"{100 * statistics.fmean(baselines):.0f}% | {100 * min(baselines):.0f}% |" if baselines
                    else "n/a | n/a |"))
    pairs = [p for p in result.get("paired", []) if p["requests"]]
    if pairs:
        pct, count = (lambda x: f"{100 * x:.0f}%"), (lambda x: f"{x:.0f}")  # noqa: E731
        lines += ["", f"Each variant against {REFERENCE} on the same requests (issue 45's ideas also against "
                      f"{REFERENCE_45} or the idea they build on; model, game, profile, seed; targeting "
                      f"and repeats over the feedback profiles' requests; mean per request, the difference's "
                      f"two-sided paired sign-flip permutation test):", "",
                  "| model | prompt | against | requests | targets weak skills, reference -> it | difference, "
                  "points (p) | repeats earlier design | difference (p) | tokens out/call | difference (p) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {p['model']} | {p['variant']} | {p['reference']} | {p['requests']} | "
                  f"{_arrow(p['targeting'], pct)} | "
                  f"{_difference(p['targeting'], 100)} | {_arrow(p['repeats_previous'], pct)} | "
                  f"{_difference(p['repeats_previous'], 100)} | {_arrow(p['completion_tokens'], count)} | "
                  f"{_difference(p['completion_tokens'], 1)} |" for p in pairs]
    if result.get("decisions"):
        lines += ["", f"The rule (docs/designer.md; set before the second requests): an idea stays if v2 "
                      f"without it lowers targeting, or raises repeats or tokens written, with p < {ALPHA}; a new "
                      f"idea is adopted if it writes fewer tokens with p < {ALPHA} and does not lower targeting "
                      f"with p < {ALPHA}. Issue 45's ideas (against {REFERENCE_45}, or the idea "
                      f"adopted they build on): adopted if the lowest "
                      f"targeting over the profiles rises and the average is not lower with p < {ALPHA}. Decided on "
                      f"two requests per profile; fewer: provisional.", "",
                  "| idea | variant | requests | verdict | why |", "|---|---|---|---|---|"]
        lines += [f"| {d['idea']} | {d['variant']} | {d['requests']} | {d['verdict']}"
                  f"{' (provisional)' if d['provisional'] else ''} | {'; '.join(d['reasons'])} |"
                  for d in result["decisions"]]
    s = result["settings"]
    lines += ["", f"{s['repeats']} repeat(s) per profile at temperature {s['temperature']} (seeds 0.."
                  f"{s['repeats'] - 1}), {s['num_envs']} environments per call, up to {s['max_repairs']} repairs; "
                  f"latency (the LLM's time) and tokens per call, repairs included; repairs also answer the "
                  f"designer's advice on repeated or unchanged environments."]
    lines.append("Lift: targeting minus what sending the earlier design back scores on the same profiles, in "
                 "points; specificity: the share of changed settings that serve a weak skill.")
    for a in result["aims"]:
        met = lambda ok: "met" if ok else "NOT met"  # noqa: E731
        pct = lambda x: "n/a" if x is None else f"{100 * x:.0f}%"  # noqa: E731
        line = (f"Aim for {a['model']} ({a['variant']}): targeting >= {AIM['targeting_at_least']:.0%}: "
                f"{met(a['targeting_met'])} ({pct(a['targeting'])}); no copies of the example: "
                f"{met(a['copies_met'])} ({a['copies']} copies)")
        if "lift" in a:
            line += (f"; lift >= +{100 * AIM['lift_at_least']:.0f}: {met(a['lift_met'])} "
                     f"({_points(a['lift'])}); each game >= "
                     f"{AIM['per_env_targeting_at_least']:.0%}: {met(a['per_env_met'])} ("
                     + ", ".join(f"{e} {pct(v)}" for e, v in a["targeting_per_env"].items())
                     + f"); repeats <= {AIM['repeats_at_most']:.0%}: {met(a['repeats_met'])} ({pct(a['repeats'])}); "
                     f"first cycle valid: "
                     + ("not measured" if a["first_cycle_met"] is None
                        else f"{met(a['first_cycle_met'])} ({a['first_cycle_failures']} failed)"))
        if a.get("profile_minimum") is not None:
            line += (f"; every profile >= {AIM['per_profile_targeting_at_least']:.0%}: "
                     f"{met(a['profile_minimum_met'])} (lowest {pct(a['profile_minimum'])}, "
                     f"{a['profile_minimum_at']}); no duplicates inside a call: {met(a['duplicates_met'])} "
                     f"({_num(a['duplicates_per_call'], 2)} a call)")
        lines.append(line + ".")
    if s.get("tiny"):
        lines.append("TINY RUN (--tiny): a smoke test of the machinery, not results.")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(result["aggregates"]["overall"], key=lambda r: (r["model"], r["variant"]))
    value = lambda r, m: (r[m] if m == "diversity" else r[m]["share"]) or 0.0  # noqa: E731
    fig, ax = plt.subplots(figsize=(max(7, 2.2 * len(rows) + 3), 4.5))
    width = 0.8 / len(METRICS)
    for j, metric in enumerate(METRICS):
        xs = [i + (j - (len(METRICS) - 1) / 2) * width for i in range(len(rows))]
        bars = ax.bar(xs, [value(r, metric) for r in rows], width, label=METRICS[metric])
        ax.bar_label(bars, fmt="%.2f", fontsize=6)
    ax.set_xticks(range(len(rows)), [f"{r['model']}\n({r['variant']})" for r in rows], fontsize=8)
    ax.set(ylim=(0, 1.1), ylabel="share of configurations (diversity: distinct per call)")
    ax.axhline(AIM["targeting_at_least"], color="grey", lw=0.8, ls="--", label="aim: targeting 70%")
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    env, games = result["environment"], sorted({r["env"] for r in result["aggregates"]["by_env"]})
    title = (f"Designer quality ({', '.join(games)}), {result['settings']['repeats']} repeat(s) at temperature "
             f"{result['settings']['temperature']}; {env.get('cpu', '?')}, {str(env.get('commit', ''))[:8]}"
             f"{'+dirty' if env.get('dirty') else ''}")
    if result["settings"].get("tiny"):
        title += "\nTINY RUN: not results"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def profile_info(env: str, profile: Profile) -> dict:
    if profile.first_cycle:
        return {"weak": [], "success": None, "baseline_targeting": None}
    return {"weak": list(profile.weak), "success": success_rates(env, profile),
            "baseline_targeting": baseline_targeting(env, profile)}


def build_result(records: list[dict], settings: dict, environment: dict, models: dict, prompts: dict) -> dict:
    scored = [{**r, **score(r, base_spec(r["env"]).config_cls)} for r in records]
    aggregates = aggregate(scored)
    return {"benchmark": "designer_quality", "environment": environment, "settings": settings, "models": models,
            "profiles": {e: {p: profile_info(e, prof) for p, prof in ps.items()} for e, ps in PROFILES.items()},
            "previous_design": {e: [{"purpose": p, "config": c} for p, c in d] for e, d in PREVIOUS.items()},
            "examples": EXAMPLES, "aim": AIM, "aggregates": aggregates,
            "aims": aims(aggregates["overall"], aggregates["by_env"], aggregates["by_profile"]),
            "paired": (pairs := paired(scored) + idea_pairs(scored)),
            "decisions": decisions(pairs) + decisions_45(pairs, aggregates["overall"]),
            "prompts": prompts, "calls": scored}


def write(result: dict, out: Path, with_plot: bool = False) -> dict:
    from benchmarks.common import write_text_atomic

    out.parent.mkdir(parents=True, exist_ok=True)
    paths = {"json": out, "md": out.with_suffix(".md")}
    write_text_atomic(out, json.dumps(result, indent=1, ensure_ascii=False))
    write_text_atomic(paths["md"], markdown(result))
    if with_plot and result["calls"]:
        paths["png"] = plot(result, out.with_suffix(".png"))
    return {k: str(v) for k, v in paths.items()}


# ----------------------------------------------------------------------------------------------- running
def prompt_text(spec: EnvSpec, env: str, profile: str, n: int, settings: LLMSettings | None = None) -> str:
    """The user turn a call sends (a feedback call sends it after the earlier turn of `earlier_state`)."""
    prof = PROFILES[env][profile]
    strategy = settings and settings.strategy
    if prof.first_cycle:
        return generation_prompt(spec, n, strategy)
    previous = [spec.config_cls.from_dict(c) for _, c in PREVIOUS[env][:n]]
    return feedback_prompt(spec, success_rates(env, prof), previous, n, settings=strategy)


def repeats_of(variant_settings: LLMSettings, plan: dict) -> int:
    """Requests per profile: a greedy variant answers every seed alike, so one says all."""
    return 1 if variant_settings.transport.temperature == 0 else plan["repeats"]


def calls_left(model: str, settings: LLMSettings, plan: dict, done: set) -> int:
    """How many of the plan's calls for `model` are not in `done` (none: no server needs to start)."""
    return sum(Call(model, variant, env, profile, repeat).key not in done
               for variant in plan["variants"] for env in plan["envs"] for profile in plan["profiles"][env]
               for repeat in range(repeats_of(VARIANTS[variant].settings(settings), plan)))


def run_model(model: str, settings: LLMSettings, plan: dict, done: set, workdir: Path,
              on_record: Callable[[dict], None], prompts: dict, client: Any = None) -> None:
    """Every call of the plan for one model (those in `done` are skipped), repeats of one prompt back to back."""
    for variant in plan["variants"]:
        for env in plan["envs"]:
            spec = VARIANTS[variant].prompts(base_spec(env), workdir / "prompts" / variant)
            variant_settings = VARIANTS[variant].settings(settings)
            repeats = repeats_of(variant_settings, plan)
            for profile in plan["profiles"][env]:
                prompts[f"{env}/{profile}/{variant}"] = prompt_text(spec, env, profile, plan["num_envs"],
                                                                    variant_settings)
                for repeat in range(repeats):
                    call = Call(model, variant, env, profile, repeat)
                    if call.key in done:
                        continue
                    record = measure(call, spec, variant_settings, plan["num_envs"], workdir, client)
                    print(f"{model} {variant} {env} {profile} #{repeat}: "
                          f"{'ok' if record['ok'] else 'FAILED'} in {record['wall_s']:.1f} s, "
                          f"{record['replies']} repl{'y' if record['replies'] == 1 else 'ies'}", flush=True)
                    on_record(record)


def llm_settings(args, **where) -> LLMSettings:
    return LLMSettings.of(backend="openai", temperature=args.temperature, max_tokens=args.max_tokens,
                          timeout_s=args.timeout, max_retries=args.max_retries, max_repairs=args.max_repairs, **where)


def run_offline(model: str, args, plan, done, workdir, on_record, prompts, models: dict) -> None:
    """One offline model behind its own llama.cpp server, reached like any endpoint."""
    from envgen_jax.llm.local_server import LocalServer
    from envgen_jax.llm.models import get_model

    m = get_model(model)
    if not calls_left(model, llm_settings(args, model=model), plan, done):
        print(f"{model}: every planned call is already in --out", flush=True)
        return
    with LocalServer(model=model, n_threads=args.threads, startup_timeout_s=args.startup_timeout,
                     alias=model) as server:
        models[model] = {"served_by": "llama.cpp server (xllamacpp) on this machine's CPU", "title": m.title,
                         "sha256": m.sha256, "licence": m.licence, "server_startup_s": server.startup_s,
                         "n_threads": server.n_threads, "n_ctx": server.n_ctx}
        settings = llm_settings(args, model=model, base_url=server.base_url, api_key="local")
        run_model(model, settings, plan, done, workdir, on_record, prompts)


def settings_of(args, plan: dict) -> dict:
    """What makes calls comparable (checked by --resume), plus the selection made now."""
    return {"temperature": args.temperature, "num_envs": plan["num_envs"], "max_repairs": args.max_repairs,
            "max_tokens": args.max_tokens, "timeout_s": args.timeout, "max_retries": args.max_retries,
            "threads": args.threads, "heist_world_dim": HEIST_WORLD_DIM, "repeats": plan["repeats"],
            "tiny": args.tiny, "base_url": args.base_url}


COMPARABLE = ("temperature", "num_envs", "max_repairs", "max_tokens", "heist_world_dim", "tiny")


def resumed(out: Path, settings: dict) -> tuple[list[dict], dict, dict, dict]:
    """(calls, models, prompts, environment) kept from an earlier --out made with the same settings. Calls that
    failed on the endpoint (LLMError: server down, time-out) are dropped, to be made again; the model's own failures
    stay."""
    if not out.exists():
        return [], {}, {}, {}
    old = json.loads(out.read_text())
    differ = [k for k in COMPARABLE if old.get("settings", {}).get(k) != settings[k]]
    if differ:
        raise SystemExit(f"--resume: {out} was made with other settings ({', '.join(differ)}); use another --out "
                         f"or leave out --resume")
    calls = [{k: v for k, v in c.items() if k not in SCORES} for c in old.get("calls", [])
             if not (c.get("error") or "").startswith("LLMError")]
    return calls, old.get("models", {}), old.get("prompts", {}), old.get("environment", {})


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="offline models, comma list (smollm2-135m, qwen2.5-coder-1.5b)")
    ap.add_argument("--base-url", help="an OpenAI-compatible endpoint instead (the key from OPENAI_API_KEY)")
    ap.add_argument("--model", help="the endpoint's model name (with --base-url)")
    ap.add_argument("--env", default="crafter,heist", help="comma list (default crafter,heist)")
    ap.add_argument("--profiles", help="comma list of profile names (default: all of each env's; see PROFILES)")
    ap.add_argument("--variants", "--variant", default="v3", help=f"prompt variants, comma list: "
                    f"{', '.join(VARIANTS)} (default v3: the designer as a run asks it)")
    ap.add_argument("--repeats", type=int, default=3, help="requests per profile, seeds 0..K-1 (default 3)")
    ap.add_argument("--temperature", type=float, default=0.7,
                    help="sampling temperature (default 0.7, so that repeats differ; runs use 0)")
    ap.add_argument("--num-envs", type=int, default=4, help="environments per request (default 4)")
    ap.add_argument("--max-repairs", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per request (default 600: the 1.5B model "
                    "takes 80-120 s on 2 loaded cores)")
    ap.add_argument("--max-retries", type=int, default=1, help="retries after a time-out or 5xx (default 1)")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads of the offline server (default 2)")
    ap.add_argument("--startup-timeout", type=float, default=300.0, help="seconds to load an offline model")
    ap.add_argument("--out", type=Path, help=f"results JSON (default {DEFAULT_OUT.relative_to(RESULTS.parent.parent)}; "
                    "designer_quality_tiny.json with --tiny); .md and .png beside it")
    ap.add_argument("--resume", action="store_true", help="keep the calls already in --out (same settings; not those "
                    "the endpoint failed), make the missing ones")
    ap.add_argument("--tiny", action="store_true", help="smoke test: first cycle and one feedback profile per env, "
                                                        "1 repeat")
    ap.add_argument("--report", action="store_true", help="only rebuild --out's aggregates, tables (.md) and plot "
                    "from the calls it holds, scored by today's code; no model is asked")
    args = ap.parse_args(argv)
    if args.report:
        args.out = args.out or DEFAULT_OUT
        return args
    if bool(args.models) == bool(args.base_url):
        ap.error("give either --models (offline) or --base-url with --model (an endpoint)")
    if args.base_url and not args.model:
        ap.error("--base-url needs --model")
    args.out = args.out or (DEFAULT_OUT.with_name("designer_quality_tiny.json") if args.tiny else DEFAULT_OUT)
    return args


def make_plan(args) -> dict:
    envs = [e for e in args.env.split(",") if e]
    unknown = [e for e in envs if e not in PROFILES]
    if unknown:
        raise SystemExit(f"--env: unknown {', '.join(unknown)}; choose from {', '.join(PROFILES)}")
    bad = [v for v in args.variants.split(",") if v not in VARIANTS]
    if bad:
        raise SystemExit(f"--variants: unknown {', '.join(bad)}; choose from {', '.join(VARIANTS)}")
    wanted = args.profiles.split(",") if args.profiles else None
    profiles = {e: [p for p in PROFILES[e] if wanted is None or p in wanted] for e in envs}
    if wanted:
        missing = set(wanted) - {p for e in envs for p in PROFILES[e]}
        if missing:
            raise SystemExit(f"--profiles: unknown {', '.join(sorted(missing))}; known: "
                             f"{'; '.join(f'{e}: ' + ', '.join(PROFILES[e]) for e in envs)}")
    if args.tiny:
        profiles = {e: [p for p in ps if PROFILES[e][p].first_cycle][:1]
                    + [p for p in ps if not PROFILES[e][p].first_cycle][:1] for e, ps in profiles.items()}
    return {"envs": envs, "profiles": profiles, "variants": args.variants.split(","),
            "repeats": 1 if args.tiny else args.repeats, "num_envs": args.num_envs}


def report(out: Path) -> dict:
    """--report: the result rebuilt from the calls stored in `out` (their settings, environment, models and prompts
    kept), rescored and written again with its tables and plot; no call is made."""
    if not out.exists():
        raise SystemExit(f"--report: {out} does not exist")
    old = json.loads(out.read_text())
    calls = [{k: v for k, v in c.items() if k not in SCORES} for c in old.get("calls", [])]
    result = build_result(calls, old["settings"], old.get("environment", {}), old.get("models", {}),
                          old.get("prompts", {}))
    paths = write(result, out, with_plot=bool(calls))
    print(markdown(result))
    print(f"wrote {', '.join(paths.values())}")
    return {"result": result, "paths": paths}


def main(argv=None, client: Any = None) -> dict:
    """Run the benchmark; `client` (tests): an injected chat client used for --base-url's model."""
    args = parse_args(argv)
    if args.report:
        return report(args.out)
    plan = make_plan(args)
    settings = settings_of(args, plan)
    records, models, prompts, kept_env = resumed(args.out, settings) if args.resume else ([], {}, {}, {})
    done = {tuple(r[f.name] for f in dataclasses.fields(Call)) for r in records}
    from benchmarks.common import code_version, environment

    env_info = {**environment(), "llm_runs_on": args.base_url or "this machine's CPU (llama.cpp)"}
    # Each call's own code: a resumed file's `environment` is its last process's (calls made before 2026-11-25's
    # evening carry only measured_at). A resume that makes no call keeps the file's, so that its date and commit
    # still say when and with what the last measurement was made.
    code = code_version()
    kept = len(records)

    def on_record(record: dict) -> None:
        record["code"] = code
        records.append(record)
        write(build_result(records, settings, env_info, models, prompts), args.out)

    with tempfile.TemporaryDirectory(prefix="designer-quality-") as tmp:
        if args.base_url:
            models[args.model] = {"served_by": args.base_url}
            run_model(args.model, llm_settings(args, model=args.model, base_url=args.base_url), plan, done,
                      Path(tmp), on_record, prompts, client)
        else:
            for model in args.models.split(","):
                run_offline(model, args, plan, done, Path(tmp), on_record, prompts, models)
    measured_now = len(records) > kept or not kept_env
    result = build_result(records, settings, env_info if measured_now else kept_env, models, prompts)
    paths = write(result, args.out, with_plot=True)
    print(markdown(result))
    print(f"wrote {', '.join(paths.values())}")
    return {"result": result, "paths": paths}


if __name__ == "__main__":
    main()
