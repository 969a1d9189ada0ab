"""Level replay around the PPO update: a `ReplayTrainer` carries a curriculum's state on the device beside the
agent's, draws each episode's row from its distribution and gives the update a per-row gradient mask as data.

    trainer = make_trainer(env, cfg, level_sampler=LevelSampler(...))   # a ReplayTrainer (trainer.factory)
    state = trainer.init(bank, REPLAY)                 # ReplayState(agent=TrainState, sampler=SamplerState)
    state, metrics = trainer.train_chunk(state, bank, REPLAY, num_updates=8)

Per update: the rows of new episodes are drawn from `row_distribution(sampler)` (a `RowSampler` layout), the PPO
update takes gradients only from steps in `gradient_rows(sampler)` (robust PLR: rows already scored), and
`after_update` scores the rows the rollout ran. Given rows (a fixed layout or a RowSampler) instead of `REPLAY`, the
trainer runs them as any trainer does and leaves the sampler's state as it is. A run's phases outside the curriculum
(a final phase in the original game) instead give `Replay.held(probs)`, and its curriculum phases
`Replay.running(num_rows)`: the same types, so both run one compiled chunk; held, episodes draw their rows from
`probs`, every step gives gradients and the sampler's state is left as it is. The PPO update (`trainer.ppo`) knows
nothing of this. `Replay` and `REPLAY` are layouts (`trainer.layouts`, where every form of `rows` is told apart).
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp
from flax import struct

from envgen_jax.envs.vector import RowSampler
from envgen_jax.trainer.layouts import is_replay
from envgen_jax.trainer.ppo import TrainState
from envgen_jax.trainer.train import Trainer


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
        """What the VecEnv runs: rows drawn from the sampler's distribution for a Replay (or from its `held_probs`
        while held), else `rows`."""
        if not is_replay(rows):
            return rows
        probs = self.level_sampler.row_distribution(sampler)
        return RowSampler(probs if rows.hold is None else jnp.where(rows.hold, rows.held_probs, probs))

    def _init_one(self, key, params, hparams, bank, rows, episodes: bool = True):
        sampler = self.level_sampler.init_state(bank.num_rows)
        agent = super()._init_one(key, params, hparams, bank, self._layout(rows, sampler), episodes)
        return ReplayState(agent=agent, sampler=sampler)

    def _reset_one(self, state: ReplayState, bank, rows) -> ReplayState:
        return state.replace(agent=super()._reset_one(state.agent, bank, self._layout(rows, state.sampler)))

    def _update(self, state: ReplayState, bank, rows):
        if not is_replay(rows):
            agent, out = self.ppo.update(state.agent, bank, rows)
            return state.replace(agent=agent), out
        hooks, sampler = self.level_sampler, state.sampler
        grad_rows = hooks.gradient_rows(sampler)
        if rows.hold is not None and grad_rows is not None:
            grad_rows = grad_rows | rows.hold  # held: gradients from every step
        agent, out = self.ppo.update(state.agent, bank, self._layout(rows, sampler), grad_rows=grad_rows)
        scored = hooks.after_update(sampler, out.infos, out.advantages, out.values)
        if rows.hold is not None:  # held: the sampler's state as it was
            scored = jax.tree.map(lambda old, new: jnp.where(rows.hold, old, new), sampler, scored)
        return ReplayState(agent=agent, sampler=scored), out
