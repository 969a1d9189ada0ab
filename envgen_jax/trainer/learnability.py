"""Sampling For Learnability (Rutherford et al. 2024, "No Regrets"): which configurations to train on, from an evaluation.

SFL rolls the current policy on many random levels, estimates each level's success rate p and keeps the top k by
learnability p (1 - p). Crafter has 22 achievements, not one success flag, so here p is a configuration's mean success
rate over the achievements the agent has not mastered in the original game (mastered: success >= `mastered_at`, 0.9,
at the last evaluation): a configuration is learnable when the skills still to learn succeed sometimes, not always
and not never. Host-side numpy on the evaluator's RowStats ([S, K], one evaluation of every bank row at once).

Kinetix's `configs/ued/sfl.yaml`: sample 4096 levels, keep 1024, refresh every 128 updates, half of the envs on the
sampled levels (the `original_share` below plays the other half's part: the original game).
"""

from __future__ import annotations

import numpy as np


def learnability(stats, mastered: np.ndarray) -> np.ndarray:
    """f64[S, K]: p (1 - p) per seed and row. stats: host RowStats [S, K] ([S, K, A] counts); mastered: bool[S, A]
    or [A] (all mastered: every achievement counts). A row without a finished episode scores 0."""
    counts = np.asarray(stats.achievement_counts, np.float64)
    if stats.available_counts is None:  # every episode offers every achievement
        offered = np.broadcast_to(np.asarray(stats.episodes, np.float64)[..., None], counts.shape)
    else:
        offered = np.asarray(stats.available_counts, np.float64)
    rate = np.where(offered > 0, counts / np.maximum(offered, 1), np.nan)  # [S, K, A]
    todo = ~np.broadcast_to(np.asarray(mastered, bool), rate.shape[:1] + rate.shape[2:])  # [S, A]
    todo = np.where(todo.any(-1, keepdims=True), todo, True)[:, None, :]
    with np.errstate(invalid="ignore"):
        p = np.nansum(np.where(todo, rate, 0), -1) / np.maximum((todo & ~np.isnan(rate)).sum(-1), 1)
    seen = (todo & ~np.isnan(rate)).any(-1)
    return np.where(seen, p * (1 - p), 0.0)


def mastered_from(success: np.ndarray, mastered_at: float = 0.9) -> np.ndarray:
    """bool[S, A]: achievements whose success rate in the original game reached `mastered_at` (NaN: not mastered)."""
    return np.nan_to_num(np.asarray(success, np.float64), nan=0.0) >= mastered_at


def training_weights(learn: np.ndarray, k: int, original_share: float, original_row: int = 0) -> np.ndarray:
    """f32[S, K]: the distribution to train on (a `RowSampler`'s probs): `original_share` on the original game's
    row, the rest spread evenly over each seed's top-k rows by learnability (ties: lower row first; the original
    row is never among them)."""
    learn = np.asarray(learn, np.float64).copy()
    learn[:, original_row] = -np.inf
    top = np.argsort(-learn, axis=1, kind="stable")[:, :k]
    w = np.zeros(learn.shape, np.float32)
    np.put_along_axis(w, top, (1.0 - original_share) / k, axis=1)
    w[:, original_row] += original_share
    return w
