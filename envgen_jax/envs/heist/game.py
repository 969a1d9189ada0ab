"""Procgen Heist as a game of the registry (`envgen_jax.games`): everything the run, the designer, the report and
the command line know about it, and its one option, the distribution mode (`game_options: {mode: easy}`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from envgen_jax.envs.heist.config import WORLD_DIMS, HeistConfig
from envgen_jax.envs.heist.env import ACHIEVEMENTS
from envgen_jax.envs.heist.targeting import TARGETING
from envgen_jax.envs.game import Game, GameOptions
from envgen_jax.envs.scores import subtask_score


@dataclasses.dataclass(frozen=True)
class HeistOptions(GameOptions):
    mode: Literal["easy", "hard"] = "hard"
    """Procgen's distribution mode, which fixes the world size: easy (9x9) or hard (13x13, Procgen's default)"""

    WHAT = "heist options"


class Heist(Game):
    name = "heist"
    title = "Heist"
    config_cls = HeistConfig
    achievements = tuple(ACHIEVEMENTS)  # subtasks (keys, locks, gem) play the part of Crafter's achievements
    skills = "subtasks"
    prompts_dir = Path(__file__).parent / "prompts"
    targeting = TARGETING
    options_cls = HeistOptions
    score_name = "score"
    score_is_crafter = False
    score_definition = ("Heist score (ours; the paper's definition is unpublished): the Crafter formula over "
                        "Heist's subtasks (collect each key, open each lock, collect the gem), each rate over the "
                        "scored-phase episodes whose level offered that subtask, subtasks never offered left out; "
                        "then mean +/- population std over seeds")

    def make_env(self, observation="symbolic", options=None):
        from envgen_jax.envs.heist import HeistEnv
        mode = self.read_options(options).mode
        return HeistEnv(mode=mode, obs="pixels" if observation == "pixels" else "symbolic")

    def score(self, rates):
        return subtask_score(rates)

    def render(self, configs, path, seed=0, options=None):
        from envgen_jax.envs.heist import render_levels
        return render_levels(configs, Path(path), seed=seed, mode=self.read_options(options).mode)

    def option_problems(self, configs, options=None):
        world_dim = WORLD_DIMS[self.read_options(options).mode]
        return [p for i, c in enumerate(configs) for p in c.fit_problems(world_dim, f"[{i}]")]

    def designer_check(self, env):
        """Mazes that do not fit this environment's world go back to the LLM for repair."""
        world_dim = env.world_dim
        return lambda config, where: config.fit_problems(world_dim, where)


GAME = Heist()
