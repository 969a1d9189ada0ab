"""Which rows each env slot trains in: the layouts a trainer takes as `rows`, and the one place that tells them apart.

    i32[N]               fixed rows, shared by every seed: slot i always runs bank row rows[i]
    i32[S, N]            fixed rows per seed (one designer per seed, each seed on its own block of the bank)
    RowSampler(probs)    every episode's row drawn from probs, f32[K] (all seeds) or f32[S, K] (per seed)
    Replay               the level sampler's own draw (a `replay.ReplayTrainer` only): `REPLAY`, or
                         `Replay.running(K)` / `Replay.held(probs)` for runs whose phases share one program

Why a union and not one type: the forms differ in what the compiled program is, not only in values. Fixed rows
and drawn rows give the env state different types (`VecState` / `SampledVecState`, so old checkpoints keep theirs);
the rank of fixed rows or probs says whether the layout maps over seeds; a Replay carries no rows at all, its
distribution lives in the sampler's state on the device. One class with optional fields would still branch on
which fields it holds, at trace time, in the same places, and would change the pytree every compiled chunk and
checkpoint was made with. So the union stays, and its dispatch is here: the trainer, the evaluator, replay and the
checkpoint migrations ask these functions (the VecEnv, below the trainer, knows only its own two: fixed and drawn).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envgen_jax.envs.vector import RowSampler


@struct.dataclass
class Replay:
    """The layout of a phase whose episodes draw their rows from the level sampler. `REPLAY` holds no arrays; a run
    whose phases must share one program gives `running(K)` and `held(probs)`, whose traced `hold` flag says whether
    the curriculum is held (episodes draw from `held_probs` instead, f32[K]; every step gives gradients; the
    sampler's state is kept)."""

    hold: jax.Array | None = None        # bool[]
    held_probs: jax.Array | None = None  # f32[K]

    @classmethod
    def running(cls, num_rows: int) -> "Replay":
        return cls(hold=np.bool_(False), held_probs=np.zeros(num_rows, np.float32))

    @classmethod
    def held(cls, probs) -> "Replay":
        return cls(hold=np.bool_(True), held_probs=np.asarray(probs, np.float32))


REPLAY = Replay()


def layout(rows):
    """The layout as the compiled programs take it: fixed rows (array-like) as i32 on the device; a RowSampler or a
    Replay as given."""
    if rows is None:
        raise TypeError("rows: give each env slot's bank row (i32[N] or [S, N]), a RowSampler, or for a trainer "
                        "with a level sampler replay.REPLAY (rows None no longer means 'the sampler picks')")
    if isinstance(rows, jax.Array):
        return rows if rows.dtype == jnp.int32 else rows.astype(jnp.int32)
    if isinstance(rows, (np.ndarray, list, tuple)):
        return jax.device_put(np.asarray(rows, np.int32))  # not jnp.asarray: that compiles a program per shape
    return rows


def rows_axis(rows) -> int | None:
    """vmap axis of the layout: per-seed rows [S, N] (or per-seed probs [S, K]) map over seeds; a Replay is one for
    every seed."""
    if is_replay(rows):
        return None
    probs = rows.probs if isinstance(rows, RowSampler) else rows
    return 0 if jnp.ndim(probs) == 2 else None


def is_replay(rows) -> bool:
    """Whether the level sampler draws the rows (only a ReplayTrainer takes such a layout)."""
    return isinstance(rows, Replay)


def draws_rows(rows) -> bool:
    """Whether each episode's row is drawn (a RowSampler or a Replay), which gives the env state its sampled type."""
    return isinstance(rows, (RowSampler, Replay))


def drawn_probs(rows) -> np.ndarray | None:
    """The host probabilities a layout draws from where it says them (a RowSampler's, a held Replay's), else None."""
    probs = rows.probs if isinstance(rows, RowSampler) else getattr(rows, "held_probs", None)
    return None if probs is None else np.asarray(probs)
