"""Crafter (Craftax-Classic) as a game of the registry (`envgen_jax.games`): everything the run, the designer, the
report and the command line know about it, and its one option, kept so that older run configurations load."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.envs.crafter.targeting import TARGETING
from envgen_jax.envs.game import Game, GameOptions
from envgen_jax.envs.scores import crafter_score
from envgen_jax.schema import ConfigError

# The 22 Crafter achievements, alphabetical as EnvGen's prompt lists them.
CRAFTER_ACHIEVEMENTS = (
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling", "collect_stone",
    "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow", "eat_plant", "make_iron_pickaxe",
    "make_iron_sword", "make_stone_pickaxe", "make_stone_sword", "make_wood_pickaxe", "make_wood_sword",
    "place_furnace", "place_plant", "place_stone", "place_table", "wake_up",
)


@dataclasses.dataclass(frozen=True)
class CrafterOptions(GameOptions):
    step_loops: Literal["scan"] = "scan"
    """how Craftax's short per-step loops are traced: scan, as craftax writes them (older run configurations name
    it). Unrolling them is an experiment outside the package until a GPU measures it faster:
    `python benchmarks/unrolled_loops.py train ...` (docs/devices.md)"""

    WHAT = "crafter options"


# What a configuration that still asks for the unrolled loops is told (one line, instead of "not one of 'scan'").
UNROLLED_MOVED = ("{where}.step_loops: 'unrolled' moved out of the package to benchmarks/unrolled_loops.py: run the "
                  "command as `python benchmarks/unrolled_loops.py <command> ...` (it reads this), or set step_loops: "
                  "scan (the same results; docs/devices.md)")


class Crafter(Game):
    name = "crafter"
    title = "Crafter"
    config_cls = CrafterConfig
    achievements = CRAFTER_ACHIEVEMENTS
    prompts_dir = Path(__file__).parent / "prompts"
    targeting = TARGETING
    options_cls = CrafterOptions
    score_name = "Crafter score"
    score_is_crafter = True
    chain = ("collect_stone", "make_stone_pickaxe", "place_furnace", "collect_iron", "make_iron_pickaxe",
             "make_iron_sword")  # the paper's figure of unlock times
    score_definition = ("Crafter score: per seed, success rates pooled over every episode that finished in the "
                        "scored (final) phase, S = exp(mean_i ln(1 + s_i)) - 1 over the 22 achievements; then mean "
                        "+/- population std over seeds")

    def read_options(self, data=None, where="game_options", problems=None):
        """As every game reads its options; a configuration that still asks for the unrolled loops is told where
        they went (with any other problem of its options)."""
        if not (isinstance(data, Mapping) and data.get("step_loops") == "unrolled"):
            return super().read_options(data, where, problems)
        found = [UNROLLED_MOVED.format(where=where)]
        super().read_options({**data, "step_loops": "scan"}, where, found)  # its other keys, still checked
        if problems is None:
            raise ConfigError(found, what="crafter options")
        problems += found
        return None

    def make_env(self, observation="symbolic", options=None):
        from envgen_jax.envs.crafter import CrafterEnv
        self.read_options(options)
        return CrafterEnv(observation=observation)

    def achievement_rewards(self):
        return dict.fromkeys(self.achievements, 1.0)  # Craftax-Classic: +1 per achievement, plus the health term

    def score(self, rates):
        return crafter_score(rates)

    def render(self, configs, path, seed=0, options=None):
        from envgen_jax.envs.crafter.render import save_world_pictures
        return save_world_pictures(configs, Path(path), seed=seed)


GAME = Crafter()
