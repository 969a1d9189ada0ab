"""What a run of a configuration is made of, each looked up or built once and handed on: the game and its env, the
method's class (`methods.get(cfg.method)`: the run's only lookup of it; the plan, the trainer and the method's
instance all take it from here), and the PPO trainer that method trains with. Also the size of the state a run
checkpoints, which the dry run prints beside the plan."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from envgen_jax import games, methods
from envgen_jax.methods.base import Method
from envgen_jax.trainer.factory import make_trainer
from envgen_jax.trainer.networks import Agent, count_params
from envgen_jax.trainer.train import Trainer, make_network


@dataclasses.dataclass(frozen=True)
class RunParts:
    cfg: Any  # the RunConfig
    game: Any  # games.get(cfg.env)
    env: Any  # the game's environment with the run's observation and game options
    method: type[Method]  # methods.get(cfg.method)

    @classmethod
    def of(cls, cfg) -> "RunParts":
        game = games.get(cfg.env)
        return cls(cfg=cfg, game=game, env=game.make_env(cfg.observation, cfg.game_options),
                   method=methods.get(cfg.method))

    def make_trainer(self) -> Trainer:
        """The PPO trainer of the run (with the method's level sampler, if it has one)."""
        env, cfg, level_sampler = self.trainer_key()
        return make_trainer(env, cfg, level_sampler=level_sampler)

    def trainer_key(self) -> tuple:
        """What makes the run's trainer (env, TrainerConfig, level sampler): runs with equal keys can share one."""
        return self.env, self.cfg.trainer_ppo, self.method.level_sampler(self.cfg)

    def abstract_train_state(self):
        """The state a run checkpoints, as shapes and dtypes only (jax.eval_shape: nothing is computed)."""
        bank = self.env.make_params([self.game.config_cls.original()] * self.cfg.bank_rows)
        rows = np.zeros(self.cfg.ppo.num_envs, np.int32)  # which rows the slots run changes no shape
        return self.make_trainer().abstract_state(bank, rows)


def checkpoint_bytes(parts: RunParts) -> int:
    """Bytes of the arrays in one checkpoint of the run (orbax adds a little metadata)."""
    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(parts.abstract_train_state()))


def parameter_count(parts: RunParts) -> int:
    """Parameters of one agent's network: its init, as shapes only (no env reset traced, nothing computed)."""
    key = jax.ShapeDtypeStruct((2,), np.uint32)
    return count_params(jax.eval_shape(Agent(make_network(parts.env, parts.cfg.trainer_ppo)).init, key))
