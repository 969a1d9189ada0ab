"""One place per game: everything the run, the designer, the report and the command line need to know about a game.

    game = games.get("heist")
    env = game.make_env(observation="symbolic", heist_mode="easy")
    game.config_cls, game.designer_spec(env), game.score(rates), game.render(configs, path, seed, mode)

A game is one entry of `GAMES` (a `Game`), built from its package under `envgen_jax/envs/`; adding a third game is one
package plus one entry here. Nothing outside this module branches on a game's name.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import numpy as np

from envgen_jax.schema import ConfigError

if TYPE_CHECKING:  # jax stays out of import time
    from envgen_jax.envs.bank import Bank


class ConfigurableEnv(Protocol):
    """A single environment whose per-env parameters come from a bank of configurations (vmapped by VecEnv)."""

    achievement_names: Sequence[str]

    def make_params(self, configs: Sequence[Any], capacity: int | None = None) -> Bank: ...
    def reset(self, key, params): ...
    def step(self, key, state, action, params): ...


@dataclasses.dataclass(frozen=True)
class Game:
    name: str
    package: str                                  # the env package under envgen_jax/envs
    config_class_name: str
    make_env: Callable[..., ConfigurableEnv]      # (observation, heist_mode) -> env
    score_name: str                               # "Crafter score" or "score"
    score_definition: str
    score_is_crafter: bool                        # the paper's Crafter score (report's crafter_score, Table 1)
    _score: Callable[[np.ndarray], np.ndarray]    # success rates [S, A] -> score [S]
    _designer_spec: Callable[[Any], Any]          # env -> llm EnvSpec
    _render: Callable[[Sequence[Any], Path, int, str], Path]
    _mode_problems: Callable[[Sequence[Any], str], list[str]] = lambda configs, mode: []

    @property
    def config_cls(self) -> type:
        return getattr(importlib.import_module(self.package), self.config_class_name)

    def score(self, rates) -> np.ndarray:
        return self._score(rates)

    def designer_spec(self, env) -> Any:
        """The designer's view of this game, for `env` (e.g. Heist's maze must fit the mode's world)."""
        return self._designer_spec(env)

    def render(self, configs: Sequence[Any], path, seed: int = 0, mode: str = "hard") -> Path:
        return self._render(configs, Path(path), seed, mode)

    def mode_problems(self, configs: Sequence[Any], mode: str) -> list[str]:
        """Problems with running `configs` in the given mode (CLI extras such as Heist's --heist-mode)."""
        return self._mode_problems(configs, mode)


# ------------------------------------------------------------------------------------------------------ crafter
def _crafter_env(observation: str = "symbolic", heist_mode: str = "hard"):
    from envgen_jax.envs.crafter import CrafterEnv
    return CrafterEnv(observation=observation)


def _crafter_render(configs, path, seed, mode):
    from envgen_jax.envs.crafter.render import save_world_pictures
    return save_world_pictures(configs, path, seed=seed)


def _crafter_score(rates):
    from envgen_jax.trainer.metrics import crafter_score
    return crafter_score(rates)


def _crafter_spec(env):
    from envgen_jax.llm.spec import get_env_spec
    return get_env_spec("crafter")


# ------------------------------------------------------------------------------------------------------- heist
def _heist_env(observation: str = "symbolic", heist_mode: str = "hard"):
    from envgen_jax.envs.heist import HeistEnv
    return HeistEnv(mode=heist_mode, obs="pixels" if observation == "pixels" else "symbolic")


def _heist_render(configs, path, seed, mode):
    from envgen_jax.envs.heist import render_levels
    return render_levels(configs, path, seed=seed, mode=mode)


def _heist_score(rates):
    from envgen_jax.trainer.metrics import subtask_score
    return subtask_score(rates)


def _heist_spec(env):  # mazes that do not fit this world size go back to the LLM for repair
    from envgen_jax.llm.spec import heist_spec
    return heist_spec(env.world_dim)


def _heist_mode_problems(configs, mode):
    from envgen_jax.envs.heist.config import WORLD_DIMS
    return [p for i, c in enumerate(configs) for p in c.fit_problems(WORLD_DIMS[mode], f"[{i}]")]


GAMES: dict[str, Game] = {
    "crafter": Game(
        name="crafter", package="envgen_jax.envs.crafter", config_class_name="CrafterConfig", make_env=_crafter_env,
        score_name="Crafter score", score_is_crafter=True,
        score_definition="Crafter score: per seed, success rates pooled over every episode that finished in the "
                         "scored (final) phase, S = exp(mean_i ln(1 + s_i)) - 1 over the 22 achievements; then mean "
                         "+/- population std over seeds",
        _score=_crafter_score, _designer_spec=_crafter_spec, _render=_crafter_render),
    "heist": Game(
        name="heist", package="envgen_jax.envs.heist", config_class_name="HeistConfig", make_env=_heist_env,
        score_name="score", score_is_crafter=False,
        score_definition="Heist score (ours; the paper's definition is unpublished): the Crafter formula over "
                         "Heist's subtasks (collect each key, open each lock, collect the gem), each rate over the "
                         "scored-phase episodes whose level offered that subtask, subtasks never offered left out; "
                         "then mean +/- population std over seeds",
        _score=_heist_score, _designer_spec=_heist_spec, _render=_heist_render,
        _mode_problems=_heist_mode_problems),
}
NAMES: tuple[str, ...] = tuple(GAMES)


def get(name: str) -> Game:
    if name not in GAMES:
        raise ConfigError([f"env: {name!r} is not known; expected one of {', '.join(GAMES)}"])
    return GAMES[name]
