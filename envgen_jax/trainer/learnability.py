"""Sampling For Learnability (Rutherford et al. 2024, "No Regrets"): which configurations to train on.

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

from envgen_jax.trainer.metrics import to_host


def todo_success(stats, mastered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p f64[S, K], measured bool[S, K]): per seed and row, the mean success rate over the achievements not yet
    mastered that the row's finished episodes offered. stats: host RowStats [S, K] ([S, K, A] counts); mastered:
    bool[S, A] or [A] (all mastered: every achievement counts). measured is False for a row without a finished
    episode (its p is 0)."""
    counts = np.asarray(stats.achievement_counts, np.float64)
    if stats.available_counts is None:  # every episode offers every achievement
        offered = np.broadcast_to(np.asarray(stats.episodes, np.float64)[..., None], counts.shape)
    else:
        offered = np.asarray(stats.available_counts, np.float64)
    rate = np.where(offered > 0, counts / np.maximum(offered, 1), np.nan)  # [S, K, A]
    todo = ~np.broadcast_to(np.asarray(mastered, bool), rate.shape[:1] + rate.shape[2:])  # [S, A]
    todo = np.where(todo.any(-1, keepdims=True), todo, True)[:, None, :]
    counted = todo & ~np.isnan(rate)
    p = np.where(counted, np.nan_to_num(rate), 0).sum(-1) / np.maximum(counted.sum(-1), 1)
    return p, counted.any(-1)


def learnability(stats, mastered: np.ndarray) -> np.ndarray:
    """f64[S, K]: p (1 - p) per seed and row (`todo_success`); a row without a finished episode scores 0."""
    p, measured = todo_success(stats, mastered)
    return np.where(measured, p * (1 - p), 0.0)


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


def weights_by_learnability(learn: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """f32[S, K]: envgen_sfl's choice among `rows` (the LLM's environments: i32[P] for every seed, or [S, P] per
    seed): each seed's top-k of them by learnability, weighted in proportion to it (evenly if all k score 0); every
    other row 0."""
    learn = np.asarray(learn, np.float64)
    rows = np.broadcast_to(np.asarray(rows), (learn.shape[0], np.shape(rows)[-1]))
    w = np.zeros(learn.shape, np.float64)
    for s in range(learn.shape[0]):
        chosen = rows[s][np.argsort(-learn[s, rows[s]], kind="stable")[:k]]  # ties: the LLM's order
        score = learn[s, chosen]
        w[s, chosen] = score / score.sum() if score.sum() > 0 else 1.0 / len(chosen)
    return w.astype(np.float32)


def verdict(p: float, measured: bool, easy_at: float = 0.9, hard_at: float = 0.05) -> str:
    """The word the LLM's feedback uses for an environment whose success rate on the skills still to learn is p."""
    if not measured:
        return "not measured (no episode finished within the rollout)"
    if p >= easy_at:
        return "too easy"
    if p <= hard_at:
        return "too hard"
    return "learnable"


def measure(evaluator, params, bank, candidates, rollouts_per_level: int, key, mastered: np.ndarray,
            fold_in: int = -1) -> dict:
    """Play `rollouts_per_level` episodes of each seed's current policy in each candidate row of `bank` (one jitted
    evaluation: the evaluator's num_envs must be len(candidates) * rollouts_per_level) and return host arrays
    [S, K]: p and measured (`todo_success`), learnability, and the episodes counted per row. `key` and `fold_in`:
    as `Evaluator.run`."""
    rows = np.repeat(np.asarray(candidates, np.int32), rollouts_per_level)
    stats, _ = evaluator.run(params, bank, rows, key, fold_in=fold_in)
    stats = to_host(stats)  # gathered from every process (a collective), where the agents span several
    p, measured = todo_success(stats, mastered)
    return {"p": p, "measured": measured, "learnability": np.where(measured, p * (1 - p), 0.0),
            "episodes": np.asarray(stats.episodes)}
