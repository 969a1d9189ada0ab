"""Level replay around the PPO update: a `ReplayTrainer` carries a curriculum's state on the device beside the
agent's, draws each episode's row from its distribution and gives the update a per-row gradient mask as data.

    trainer = make_trainer(env, cfg, level_sampler=LevelSampler(...))   # a ReplayTrainer
    state = trainer.init(bank, REPLAY)                 # ReplayState(agent=TrainState, sampler=SamplerState)
    state, metrics = trainer.train_chunk(state, bank, REPLAY, num_updates=8)

Per update: the rows of new episodes are drawn from `row_distribution(sampler)` (a `RowSampler` layout), the PPO
update takes gradients only from steps in `gradient_rows(sampler)` (robust PLR: rows already scored), and
`after_update` scores the rows the rollout ran. Given rows (a fixed layout or a RowSampler) instead of `REPLAY`, the
trainer runs them as any trainer does and leaves the sampler's state as it is (e.g. a final phase in the original
game). The PPO update (`trainer.ppo`) knows nothing of this.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
from flax import struct

from envgen_jax.envs.vector import RowSampler
from envgen_jax.trainer.ppo import TrainState
from envgen_jax.trainer.train import Trainer


@struct.dataclass
class Replay:
    """The layout of a phase whose episodes draw their rows from the level sampler (it holds no arrays)."""


REPLAY = Replay()


@struct.dataclass
class ReplayState:
    """A ReplayTrainer's state: the agent's TrainState and the curriculum's (both with the leading seed axis)."""

    agent: TrainState
    sampler: Any  # level_sampler.SamplerState


class UpdateHooks(Protocol):
    """What a curriculum on the device gives a ReplayTrainer (robust PLR's `LevelSampler` implements it)."""

    def init_state(self, num_rows: int) -> Any: ...
    def row_distribution(self, state) -> jax.Array: ...
    def gradient_rows(self, state) -> jax.Array | None: ...
    def after_update(self, state, infos, advantages, values) -> Any: ...


class ReplayTrainer(Trainer):
    """A Trainer whose state also carries the level sampler's (`ReplayState`); see the module docstring."""

    def __init__(self, env, cfg, venv, level_sampler: UpdateHooks):
        super().__init__(env, cfg, venv)
        self.level_sampler = level_sampler

    def agent_state(self, state: ReplayState) -> TrainState:
        return state.agent

    def _layout(self, rows, sampler):
        """What the VecEnv runs: rows drawn from the sampler's distribution for REPLAY, else `rows`."""
        return RowSampler(self.level_sampler.row_distribution(sampler)) if isinstance(rows, Replay) else rows

    def _samples_rows(self, rows) -> bool:
        return isinstance(rows, Replay) or super()._samples_rows(rows)

    def _init_one(self, key, params, hparams, bank, rows, episodes: bool = True):
        sampler = self.level_sampler.init_state(bank.num_rows)
        agent = super()._init_one(key, params, hparams, bank, self._layout(rows, sampler), episodes)
        return ReplayState(agent=agent, sampler=sampler)

    def _reset_one(self, state: ReplayState, bank, rows) -> ReplayState:
        return state.replace(agent=super()._reset_one(state.agent, bank, self._layout(rows, state.sampler)))

    def _update(self, state: ReplayState, bank, rows):
        if not isinstance(rows, Replay):
            agent, out = self.ppo.update(state.agent, bank, rows)
            return state.replace(agent=agent), out
        hooks, sampler = self.level_sampler, state.sampler
        agent, out = self.ppo.update(state.agent, bank, self._layout(rows, sampler),
                                     grad_rows=hooks.gradient_rows(sampler))
        sampler = hooks.after_update(sampler, out.infos, out.advantages, out.values)
        return ReplayState(agent=agent, sampler=sampler), out
