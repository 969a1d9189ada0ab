"""Scripted: a control with no LLM. From the same feedback the LLM gets, it writes `schedule.envs_per_call`
configurations for the weakest achievements the agent has not mastered, each pulling exactly the levers that
the game's targeting map (`llm/targeting.py`) gives that achievement and its direct prerequisites. It is what
perfect feedback-following by our own map would do; the study compares it with `envgen` to separate "does following
the feedback help this agent?" from "does the small LLM follow it?".

The rules (deterministic: no random number is drawn, so the same feedback always gives the same design):

1. Tech-tree order. An achievement's depth is the length of its longest chain of direct prerequisites in
   the map's `prerequisites` (0 for none); the tech-tree order sorts by depth, earliest first, ties in the lever
   table's order (the map's `own_levers`). Crafter: collect_drink, collect_sapling, collect_wood, defeat_skeleton,
   defeat_zombie, eat_cow, wake_up, place_plant, place_table, eat_plant, make_wood_pickaxe, ...,
   collect_diamond. Heist: collect_key_blue, collect_gem (the table gives the gem no prerequisite: its levers are
   shortcuts), open_lock_blue, collect_key_green, open_lock_green, collect_key_red, open_lock_red.
2. Cycle 1 (no feedback): the weakest skills are unknown, so every achievement counts as equally weak and the
   targets are taken in the tech-tree order, earliest first.
3. Later cycles: achievements are ranked by mean success in the previous evaluation, lowest first, ties in the
   tech-tree order (a NaN mean counts as 0 %; achievements missing from the feedback or from the lever table are not
   ranked). Mastered ones are dropped: mean >= 100 * `mastered_at` % (its option, `method_options.scripted`; 90 % by
   default, the threshold the learnability methods use). If every achievement is mastered, all of them are ranked
   (the weakest still first).
4. One environment per target, weakest first, up to `n`; with fewer targets than `n` the list is cycled through
   again from the weakest, so the weakest get a second (identical) environment first (a larger share of the LLM
   phase's slots) -- no other variant is invented.
5. Each environment starts from `config_cls.original()` and pulls the map's `levers(target)`: the target's own
   levers in table order, then its direct prerequisites' (duplicates once). A lever sets its setting to:
   `more` -> the most helpful value: the last word of an ordered word setting ("very common"), a switch on, an
   integer at its largest allowed value (the largest `suggested` value where the schema has them, else `maximum`:
   9 of a material, 1 of a tool); `less` -> the least (the first word, "none"; switch off; the smallest value);
   `among` -> the first listed value, which the table lists most useful first (Heist: a 7x7 maze, not 5x5: a 5x5
   maze has few forks, hence few doors: asked for 3, about 6 % of 5x5 levels get a red door, 77 % of 7x7 ones;
   the smallest door count listed; "near").
   A setting already set by an earlier lever keeps that value, so on a conflict the target's own lever wins over a
   prerequisite's. A lever whose value would make the configuration invalid (the config class's own checks, run
   through `from_dict`) is left out: only Heist's collect_gem, whose own levers "no doors" (num_keys 0) and "start
   with the blue/green/red key" exclude each other, loses its three start-with-key levers.
6. Purpose: "trains <target> (weak: <mean>%): <the settings pulled>" ("cycle 1, no feedback yet" in cycle 1), e.g.
   "trains collect_iron (weak: 3%): iron very common, 1 stone pickaxe in inventory, mountain biome, ..."
   ("mastered: <mean>%" when every achievement is mastered).
7. `schedule.feedback: per_seed`: each designer ranks its own seed's feedback (its own targets); pooled: the one
   designer ranks the mean over seeds. In cycle 1 every designer writes the same design.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import ClassVar

from envgen_jax import games
from envgen_jax.llm import targeting
from envgen_jax.methods.base import PAPER_LOOP, Method
from envgen_jax.schema import ConfigError, Declared, bounded

MASTERED_AT = 0.9  # the default of `method_options.scripted.mastered_at`


@dataclasses.dataclass(frozen=True)
class ScriptedOptions(Declared):
    mastered_at: float = bounded(MASTERED_AT, above=0, maximum=1)
    """an achievement whose mean success in the last evaluation is at least this rate is mastered, and targeted
    only once every achievement is"""

    PATH, WHAT = "method_options.scripted.", "scripted options"
    LEGACY: ClassVar[dict[str, str]] = {"mastered_at": "mastered_at"}  # `ued.mastered_at` in older configurations


# ----------------------------------------------------------------------------------------------- which targets
@functools.lru_cache(maxsize=None)
def tech_tree_order(env: str) -> tuple[str, ...]:
    """The game's achievements by prerequisite depth, earliest first, ties in the lever table's order (rule 1)."""
    target_map = games.get(env).targeting
    own, prerequisites = target_map.own_levers, target_map.prerequisites

    @functools.lru_cache(maxsize=None)
    def depth(achievement: str) -> int:
        return max((1 + depth(p) for p in prerequisites.get(achievement, ())), default=0)

    table = list(own)
    return tuple(sorted(table, key=lambda a: (depth(a), table.index(a))))


def ranked(env: str, feedback: dict | None, mastered_at: float = MASTERED_AT) -> list[tuple[str, float | None]]:
    """(achievement, mean %) to target, weakest first (rules 2 and 3); mean None in cycle 1."""
    order = tech_tree_order(env)
    if feedback is None:
        return [(a, None) for a in order]
    means = {}
    for a in order:
        if a in feedback:
            mean = float(feedback[a][0])
            means[a] = 0.0 if math.isnan(mean) else mean
    if not means:  # nothing measured that the table knows: as in cycle 1
        return [(a, None) for a in order]
    weakest = sorted(means, key=lambda a: (means[a], order.index(a)))
    todo = [a for a in weakest if means[a] < 100.0 * mastered_at] or weakest
    return [(a, means[a]) for a in todo]


def targets(env: str, feedback: dict | None, n: int,
            mastered_at: float = MASTERED_AT) -> list[tuple[str, float | None]]:
    """The `n` targets, one environment each, cycling through the ranking when it is shorter (rule 4)."""
    ranking = ranked(env, feedback, mastered_at)
    return [ranking[i % len(ranking)] for i in range(n)]


# ----------------------------------------------------------------------------------------------- one config
def lever_value(lever: targeting.Lever, setting):
    """The value a lever sets (rule 5)."""
    if lever.toward == targeting.AMONG:
        return lever.values[0]
    most = lever.toward == targeting.MORE
    if setting.kind is bool:
        return most
    if setting.kind is str:
        return setting.choices[-1] if most else setting.choices[0]
    options = setting.suggested or (setting.minimum, setting.maximum)
    return max(options) if most else min(options)


def _valid(config_cls, values: dict):
    """The config with these settings changed, through the config class's own checks; None if invalid."""
    try:
        return config_cls.from_dict(config_cls(**values).to_dict())
    except ConfigError:
        return None


def build(config_cls, target: str) -> tuple[object, list[targeting.Lever], list[targeting.Lever]]:
    """(config, levers pulled, levers left out because they would make it invalid) for one target (rule 5)."""
    env = config_cls.ENV_NAME
    by_path = {s.path: s for s in config_cls.schema()}
    values, pulled, dropped = {}, [], []
    for lever in games.get(env).targeting.levers(target):
        if lever.name in values:  # an earlier lever (the target's own first) already set this setting
            continue
        trial = dict(values, **{lever.name: lever_value(lever, by_path[lever.path])})
        if _valid(config_cls, trial) is None:
            dropped.append(lever)
            continue
        values = trial
        pulled.append(lever)
    config = _valid(config_cls, values)
    if config is None:  # cannot happen: every step above was valid
        raise ConfigError([f"scripted: no valid configuration for {target}"], what=f"{env} configuration")
    return config, pulled, dropped


def describe(lever: targeting.Lever, setting, value) -> str:
    """A short phrase for a pulled lever, e.g. "iron very common", "mountain biome", "1 stone pickaxe in inventory"."""
    words = setting.name.replace("_", " ")
    if setting.kind is bool:
        return words if value else f"no {words}"
    if setting.kind is str:
        if setting.name == "target_biome":
            return f"{value} biome"
        stem = setting.name.removesuffix("_rarity").removesuffix("_distance").replace("_", " ")
        if lever.toward == targeting.LESS:
            return f"fewer {stem} ({value})"
        return f"{stem} {value}"
    if "inventory" in setting.section:
        return f"{value} {words} in inventory"
    if setting.name == "num_keys":
        return "no doors" if value == 0 else f"{value} door{'s' * (value != 1)}"
    if setting.name == "maze_dim":
        return f"{value}x{value} maze"
    return f"{words} {value}"


def purpose(config, target: str, mean: float | None, pulled: list[targeting.Lever],
            mastered_at: float = MASTERED_AT) -> str:
    by_path = {s.path: s for s in type(config).schema()}
    why = ("cycle 1, no feedback yet" if mean is None
           else f"{'mastered' if mean >= 100.0 * mastered_at else 'weak'}: {mean:.0f}%")
    phrases = [describe(lever, by_path[lever.path], getattr(config, lever.name)) for lever in pulled]
    return f"trains {target} ({why}): {', '.join(phrases)}"


# ----------------------------------------------------------------------------------------------- the method
def design_one(config_cls, feedback: dict | None, n: int, mastered_at: float = MASTERED_AT) -> dict:
    """One designer's {"configs", "purposes", "targets"} from its feedback (None in cycle 1); each environment's
    targets are its one target, as an LLM designer's are written to environments/cycle_<c>.json."""
    configs, purposes, aims = [], [], []
    for target, mean in targets(config_cls.ENV_NAME, feedback, n, mastered_at):
        config, pulled, _ = build(config_cls, target)
        configs.append(config.to_dict())
        purposes.append(purpose(config, target, mean, pulled, mastered_at))
        aims.append([target])
    return {"configs": configs, "purposes": purposes, "targets": aims}


class Scripted(Method):
    NAME = "scripted"
    PROGRAM = PAPER_LOOP
    USES_LLM = False
    OPTIONS = ScriptedOptions

    @staticmethod
    def design(ctx):
        mastered_at = Scripted.options(ctx.cfg).mastered_at
        feedback = ctx.feedback or [None] * ctx.num_designers
        out = []
        for i in range(ctx.num_designers):
            ctx.status(f"scripted design: {ctx.n} environments (cycle {ctx.cycle + 1})")
            out.append(design_one(ctx.config_cls, feedback[i], ctx.n, mastered_at))
        return out
