"""Episode metrics: accumulated on device per config row, summarised on the host.

Device side (inside the jitted chunk, no callbacks):
  `RowStats` holds sums over *finished* episodes, broken out by config row (leading axis K = bank rows):
  episodes, return_sum, return_sq_sum, length_sum, achievement_counts[K, A], env steps, available_counts and
  stale_resets per row.
  `row_stats_from_steps(info, num_rows)` builds one from stacked `StepInfo` ([T, N] leaves); RowStats add with `+`.
  `LossStats` holds per-update PPO diagnostics. `ChunkMetrics` is what `train_chunk` returns: one RowStats summed
  over the chunk and LossStats stacked [num_updates], with a leading seed axis [S] on every leaf.

Host side (numpy, after `to_host`):
  `mean_or_nan`, `summarize_rows`, `success_rates`, `crafter_score` and `pool_rows`. Means are over finished episodes
  only: with 0 episodes they are NaN (and the count says 0), never a made-up 0.

The games' scores (`crafter_score`, `subtask_score`) live in `envgen_jax.envs.scores` (numpy only, so a game's
declaration needs no trainer); they are imported here for the summaries and for older imports.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envgen_jax.envs.scores import crafter_score, quiet_nan, subtask_score  # noqa: F401 -- re-exported



def nan_to_none(x):
    """A number (a float or None) or an array (a nested list), NaN as None: JSON has no NaN, and a mean over no
    episode is missing, not 0."""
    a = np.asarray(np.nan if x is None else x, np.float64)
    return np.where(np.isnan(a), None, a).tolist() if a.size else []


def nan_to_zero(x) -> float:
    """A rate that was never measured (None or NaN) read as 0, for ranking and prompts."""
    return 0.0 if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


@struct.dataclass
class RowStats:
    """Sums over finished episodes, per config row. Leaves: [..., K] or [..., K, A]."""

    episodes: jax.Array  # i32[K]
    return_sum: jax.Array  # f32[K]
    return_sq_sum: jax.Array  # f32[K]
    length_sum: jax.Array  # i32[K]
    achievement_counts: jax.Array  # i32[K, A]: episodes (of those finished) that unlocked achievement a
    env_steps: jax.Array  # i32[K]: env steps taken in this row (finished episode or not)
    # i32[K, A]: finished episodes that offered achievement a (Heist: its key or lock existed). Success rates divide
    # by it; None means every episode offers every achievement (Crafter), i.e. the episode count.
    available_counts: jax.Array | None = None
    # i32[K]: finished episodes whose restart reused the slot's previous starting world (no fresh spare was ready;
    # see envs/vector.py). A high share means the world-refresh rate is too low for the episode lengths.
    stale_resets: jax.Array | None = None

    def __add__(self, other: "RowStats") -> "RowStats":
        return jax.tree.map(lambda a, b: a + b, self, other)

    @classmethod
    def zeros(cls, num_rows: int, num_achievements: int) -> "RowStats":
        z = jnp.zeros((num_rows,), jnp.int32)
        return cls(episodes=z, return_sum=z.astype(jnp.float32), return_sq_sum=z.astype(jnp.float32), length_sum=z,
                   achievement_counts=jnp.zeros((num_rows, num_achievements), jnp.int32), env_steps=z,
                   available_counts=jnp.zeros((num_rows, num_achievements), jnp.int32), stale_resets=z)


def row_stats_from_steps(info: Any, num_rows: int, count_mask: jax.Array | None = None) -> RowStats:
    """RowStats from `StepInfo` leaves of any leading shape ([T, N] for a rollout).

    `count_mask` (same shape as info.done) restricts which finished episodes are counted (the evaluator uses it
    to stop counting after N episodes per env)."""
    done = info.done.reshape(-1)
    if count_mask is not None:
        done = done & count_mask.reshape(-1)
    rows = info.row.reshape(-1)
    d_i = done.astype(jnp.int32)
    d_f = done.astype(jnp.float32)

    def seg(x):
        return jax.ops.segment_sum(x, rows, num_segments=num_rows)

    ret = jnp.where(done, info.episode_return.reshape(-1), 0.0)
    ach = info.achievements.reshape(done.shape[0], -1).astype(jnp.int32) * d_i[:, None]
    available = getattr(info, "available", None)  # absent: every episode offers every achievement
    available = jnp.ones_like(ach) if available is None else available
    stale = getattr(info, "stale_reset", None)  # absent (a bare env): every restart is fresh
    stale = jnp.zeros_like(done) if stale is None else stale.reshape(-1) & done
    return RowStats(
        episodes=seg(d_i),
        return_sum=seg(ret * d_f),
        return_sq_sum=seg(ret * ret * d_f),
        length_sum=seg(jnp.where(done, info.episode_length.reshape(-1), 0).astype(jnp.int32)),
        achievement_counts=seg(ach),
        env_steps=seg(jnp.ones_like(d_i)),
        available_counts=seg(available.reshape(done.shape[0], -1).astype(jnp.int32) * d_i[:, None]),
        stale_resets=seg(stale.astype(jnp.int32)),
    )


@struct.dataclass
class LossStats:
    """PPO diagnostics, means over the epochs and minibatches of one update."""

    total_loss: jax.Array
    value_loss: jax.Array
    policy_loss: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array
    clip_frac: jax.Array
    grad_norm: jax.Array
    learning_rate: jax.Array
    kl_stopped: jax.Array  # share of minibatch steps skipped by the KL limit (ppo.target_kl; 0 without)


@struct.dataclass
class ChunkMetrics:
    """What one `train_chunk` returns; every leaf has a leading seed axis [S].

    rows:      RowStats summed over the chunk ([S, K], [S, K, A])
    losses:    LossStats stacked per update ([S, U])
    env_steps: i32[S] env steps per seed since init (after the chunk)
    update_step: i32[S] PPO updates since init (after the chunk)
    """

    rows: RowStats
    losses: LossStats
    env_steps: jax.Array
    update_step: jax.Array


# ----------------------------------------------------------------------------------------------------------------
# host side


def to_host(tree):
    """numpy copies of a pytree of device arrays. Arrays spread over several processes (`trainer.sharding`) are
    gathered from all of them first: a collective, so every process calls it at the same point."""
    if jax.process_count() > 1:
        tree = _gathered(tree)
    return jax.tree.map(np.asarray, jax.device_get(tree))


def _gathered(tree):
    """`tree` with its arrays that span several processes made whole on every process, in one program."""
    leaves, structure = jax.tree.flatten(tree)
    spread = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array) and not x.is_fully_addressable]
    if spread:
        mesh = leaves[spread[0]].sharding.mesh  # the run's mesh (trainer.sharding)
        whole = _replicate(jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()))
        for i, x in zip(spread, whole(tuple(leaves[i] for i in spread))):
            leaves[i] = x
    return jax.tree.unflatten(structure, leaves)


@functools.lru_cache(maxsize=4)
def _replicate(sharding):
    return jax.jit(lambda xs: xs, out_shardings=sharding)


def mean_or_nan(total, count):
    """total / count elementwise, NaN where count == 0 (never a made-up 0)."""
    total = np.asarray(total, np.float64)
    count = np.asarray(count, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = total / count
    return np.where(count > 0, out, np.nan)


def success_rates(stats: RowStats) -> np.ndarray:
    """Per-achievement success rate in [0, 1] over finished episodes: [..., K, A]; NaN where no episode finished."""
    if stats.available_counts is None:
        return mean_or_nan(stats.achievement_counts, np.asarray(stats.episodes)[..., None])
    return mean_or_nan(stats.achievement_counts, stats.available_counts)


def pool_rows(stats: RowStats, rows: Sequence[int] | np.ndarray | None = None, axis: int = -1) -> RowStats:
    """Sum a host RowStats over config rows (all rows by default); the row axis is `axis` for 1-d leaves and
    the one before the achievements for `achievement_counts`. Pooling sums counts, so means stay honest."""

    def pool(x, is_ach):
        x = np.asarray(x)
        ax = (x.ndim - 2) if is_ach else (x.ndim - 1 if axis == -1 else axis)
        if rows is not None:
            x = np.take(x, np.asarray(rows), axis=ax)
        return x.sum(axis=ax)

    return RowStats(
        episodes=pool(stats.episodes, False), return_sum=pool(stats.return_sum, False),
        return_sq_sum=pool(stats.return_sq_sum, False), length_sum=pool(stats.length_sum, False),
        achievement_counts=pool(stats.achievement_counts, True), env_steps=pool(stats.env_steps, False),
        available_counts=None if stats.available_counts is None else pool(stats.available_counts, True),
        stale_resets=None if stats.stale_resets is None else pool(stats.stale_resets, False))


def pool_seeds(stats: RowStats) -> RowStats:
    """Sum a host RowStats over its leading seed axis."""
    return jax.tree.map(lambda x: np.asarray(x).sum(axis=0), stats)


def summarize(stats: RowStats, achievement_names: Sequence[str]) -> dict:
    """JSON-friendly summary of one RowStats with leaf shapes [] / [A] (already pooled or indexed).

    episodes, env_steps, mean_return, std_return, mean_length (None when no episode finished), success (dict
    name -> rate in [0, 1] or None) and crafter_score (percent, None when no episode finished)."""
    n = int(stats.episodes)
    mean_r = float(mean_or_nan(stats.return_sum, n))
    var = float(mean_or_nan(stats.return_sq_sum, n)) - mean_r ** 2
    rates = success_rates(stats)

    f = nan_to_none
    return {
        "episodes": n,
        "env_steps": int(stats.env_steps),
        "stale_resets": None if stats.stale_resets is None else int(stats.stale_resets),
        "mean_return": f(mean_r),
        "std_return": f(np.sqrt(max(var, 0.0)) if n > 0 else np.nan),
        "mean_length": f(mean_or_nan(stats.length_sum, n)),
        "success": {name: f(r) for name, r in zip(achievement_names, rates)},
        "crafter_score": f(crafter_score(rates)),
    }


def summarize_rows(stats: RowStats, achievement_names: Sequence[str]) -> list[dict]:
    """Per-row summaries of a host RowStats with leaves [K] / [K, A] (index the seed first)."""
    k = np.asarray(stats.episodes).shape[0]
    return [summarize(jax.tree.map(lambda x: np.asarray(x)[i], stats), achievement_names) for i in range(k)]


def across_seeds(per_seed_values: np.ndarray, ddof: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, std, n) over the leading seed axis, ignoring seeds where the value is NaN (no finished episode)."""
    x = np.asarray(per_seed_values, np.float64)
    n = np.sum(~np.isnan(x), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), quiet_nan():
        mean = np.nanmean(x, axis=0)
        std = np.nanstd(x, axis=0, ddof=ddof) if x.shape[0] > ddof else np.full_like(mean, np.nan)
    return mean, std, n


def timed(fn: Callable, *args, **kwargs) -> tuple[Any, float]:
    """(fn(*args, **kwargs), wall seconds), waiting for the device with block_until_ready."""
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(*args, **kwargs))
    return out, time.perf_counter() - t0


def steps_per_second(env_steps: int, seconds: float) -> float:
    return float(env_steps) / max(seconds, 1e-12)


def loss_summary(losses: LossStats) -> Mapping[str, float]:
    """Means over seeds and updates of host LossStats."""
    return {f.name: float(np.mean(np.asarray(getattr(losses, f.name)))) for f in dataclasses.fields(losses)}
