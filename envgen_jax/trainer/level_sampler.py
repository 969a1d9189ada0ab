"""Prioritized level replay over the configuration bank, as pure functions of a pytree (robust PLR).

It lives in `trainer/` because it runs inside the compiled chunk (`trainer.replay.ReplayTrainer`): after each PPO
update the rows its rollout ran are scored and the next rollout draws its rows from the new distribution, with no
host round trip. Methods (host side) only set the hyperparameters and refill the buffer between chunks.

As in jaxued's `LevelSampler`/`Sampler` split, `LevelSampler` holds the hyperparameters (a frozen dataclass:
static, closed over) and `SamplerState` the buffer's statistics (a flax struct: traced, passed in and returned,
checkpointed beside the TrainState in a `replay.ReplayState`). A "level" is a bank row: a configuration, from which
each reset draws a fresh world (in jaxued a level is one EnvState, the world itself).

    P_replay = (1 - rho) * P_rank + rho * P_stale                                  (Jiang et al. 2021)
    P_rank  ~ (1 / rank(score))^(1 / beta)  over seen rows (rank 1 = highest; ties broken by row index)
    P_stale ~ updates since the row last ran, over seen rows (uniform when all are 0)

The temperature beta is applied as a power and every normaliser is guarded, the two bugs minimax fixed in its PR #9.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
from flax import struct

from envgen_jax.config_io import bounded


@dataclasses.dataclass(frozen=True)
class LevelSampler:
    """Robust PLR hyperparameters (static). Defaults: jaxued's examples (`examples/craftax/craftax_plr.py`:
    replay_prob 0.8; temperature 0.3, staleness 0.3, rank prioritisation, minimum fill 0.5 in all its examples),
    which match minimax's PLR defaults."""

    capacity: int = bounded(256, minimum=2)
    """rows in the buffer (the bank's K when the whole bank is the buffer)"""
    replay_prob: float = bounded(0.8, minimum=0, maximum=1)
    """chance that an episode replays a seen row rather than trying an unseen one (jaxued craftax 0.8)"""
    temperature: float = bounded(0.3, above=0)
    """beta: rank weights are (1/rank)^(1/beta) (jaxued, minimax 0.3)"""
    staleness_coef: float = bounded(0.3, minimum=0, maximum=1)
    """rho: share of the replay distribution given by staleness (jaxued, minimax 0.3)"""
    min_fill: float = bounded(0.5, minimum=0, maximum=1)
    """replay starts once this share of the buffer has been seen (jaxued minimum_fill_ratio 0.5)"""
    score: Literal["pvl", "maxmc"] = "pvl"
    """positive value loss (mean of max(GAE advantage, 0)) or MaxMC (mean of max return seen - V)"""
    robust: bool = True
    """robust PLR: gradients only from steps on replayed (seen) rows"""

    # -- the hooks a ReplayTrainer calls (trainer/replay.py, `make_trainer(level_sampler=)`) ------------------
    def init_state(self, num_rows: int) -> "SamplerState":
        """The state carried beside the agent's (`ReplayState.sampler`) for a bank of `num_rows` rows."""
        return SamplerState.empty(num_rows)

    def row_distribution(self, state: "SamplerState") -> jax.Array:
        """f32[K]: the distribution the next episodes' rows are drawn from."""
        return level_probs(self, state)

    def gradient_rows(self, state: "SamplerState") -> jax.Array | None:
        """bool[K]: the rows whose steps give gradients in the next update (robust PLR: rows already scored when
        the update begins), or None for all."""
        return state.seen if self.robust else None

    def after_update(self, state: "SamplerState", infos, advantages, values) -> "SamplerState":
        """The state after an update: the rows the rollout ran are scored (advantages, de-normalised values)."""
        return update(self, state, *row_scores(self, state, infos.row, advantages, values, infos))


@struct.dataclass
class SamplerState:
    """The buffer's statistics per row. Leaves [K] (and [S, K] inside a seed-vmapped TrainState)."""

    score: jax.Array  # f32[K]: the latest score of the row
    last_run: jax.Array  # i32[K]: the update at which the row last ran
    seen: jax.Array  # bool[K]: the row has been run and scored
    max_return: jax.Array  # f32[K]: the highest finished-episode return in the row (MaxMC)
    time: jax.Array  # i32: updates so far

    @classmethod
    def empty(cls, capacity: int) -> "SamplerState":
        return cls(score=jnp.zeros(capacity, jnp.float32), last_run=jnp.zeros(capacity, jnp.int32),
                   seen=jnp.zeros(capacity, bool), max_return=jnp.full(capacity, -jnp.inf, jnp.float32),
                   time=jnp.zeros((), jnp.int32))


def _normalise(w, fallback):
    """w / sum(w), or fallback / sum(fallback) where w sums to 0 (no division by zero)."""
    total = w.sum()
    w = jnp.where(total > 0, w, fallback)
    return w / jnp.maximum(w.sum(), 1e-30)


def replay_probs(hp: LevelSampler, state: SamplerState) -> jax.Array:
    """f32[K]: the replay distribution over seen rows (all zeros when none is seen)."""
    seen = state.seen.astype(jnp.float32)
    order = jnp.argsort(jnp.where(state.seen, -state.score, jnp.inf), stable=True)  # best first, unseen last
    rank = jnp.empty_like(order).at[order].set(jnp.arange(1, order.size + 1))
    p_rank = _normalise(seen * (1.0 / rank) ** (1.0 / hp.temperature), seen)
    staleness = seen * (state.time - state.last_run).astype(jnp.float32)
    p_stale = _normalise(staleness, seen)
    return (1.0 - hp.staleness_coef) * p_rank + hp.staleness_coef * p_stale


def level_probs(hp: LevelSampler, state: SamplerState) -> jax.Array:
    """f32[K]: the distribution every new episode's row is drawn from. Unseen rows (new levels) uniformly with
    1 - replay_prob, seen rows from `replay_probs` with replay_prob; only new levels until `min_fill` of the buffer
    is seen, only replay once no row is unseen."""
    unseen = (~state.seen).astype(jnp.float32)
    p_new = unseen / jnp.maximum(unseen.sum(), 1.0)
    filled = state.seen.mean() >= hp.min_fill
    replay = jnp.where(unseen.sum() == 0, 1.0, jnp.where(filled, hp.replay_prob, 0.0))
    return replay * replay_probs(hp, state) + (1.0 - replay) * p_new


def row_scores(hp: LevelSampler, state: SamplerState, rows, advantages, values, info):
    """Per-row (score sum, step count, max finished return) of one rollout; all leading-shape [T, N] inputs.

    A row's score is the mean over the rollout's steps in that row (positive value loss: max(A, 0); MaxMC:
    max return seen in the row - V(s)), so episodes count by their length (PLR averages per episode first)."""
    num_rows = state.score.shape[0]
    rows = rows.reshape(-1)
    seg = lambda x, op=jax.ops.segment_sum: op(x.reshape(-1), rows, num_segments=num_rows)  # noqa: E731
    finished = jnp.where(info.done, info.episode_return, -jnp.inf)
    max_return = jnp.maximum(state.max_return, seg(finished, jax.ops.segment_max))
    if hp.score == "pvl":
        per_step = jnp.maximum(advantages, 0.0)
    else:  # a row with no finished episode yet scores 0 (no return to compare with)
        best = max_return[rows.reshape(values.shape)]
        per_step = jnp.where(jnp.isfinite(best), best - values, 0.0)
    return seg(per_step), seg(jnp.ones_like(values)), max_return


def update(hp: LevelSampler, state: SamplerState, score_sum, step_count, max_return) -> SamplerState:
    """Rows that ran in this update take their new score, become seen and fresh; the clock advances."""
    ran = step_count > 0
    return state.replace(score=jnp.where(ran, score_sum / jnp.maximum(step_count, 1.0), state.score),
                         last_run=jnp.where(ran, state.time + 1, state.last_run), seen=state.seen | ran,
                         max_return=max_return, time=state.time + 1)


def replace_rows(state: SamplerState, rows) -> SamplerState:
    """Forget the statistics of `rows` (their bank rows now hold new configurations: unseen levels)."""
    fresh = SamplerState.empty(state.score.shape[-1])
    return state.replace(score=state.score.at[..., rows].set(0.0), last_run=state.last_run.at[..., rows].set(0),
                         seen=state.seen.at[..., rows].set(False),
                         max_return=state.max_return.at[..., rows].set(fresh.max_return[0]))
