"""The games' scores, from success rates (numpy only: a game's `score` and the trainer's metrics both use them).

The Crafter score (Hafner 2021; EnvGen reference section 8) is
    S = exp(mean_i ln(1 + s_i)) - 1,   s_i = 100 x (share of episodes that unlocked achievement i)
with the success rates pooled over all episodes first. It is *not* the mean of craftax's per-episode info["score"].
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np


@contextlib.contextmanager
def quiet_nan():
    """No RuntimeWarning inside (numpy's 'mean of empty slice' where every value is NaN: the NaN is the answer)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def crafter_score(success_rate) -> np.ndarray:
    """Crafter score in percent, S = exp(mean_i ln(1 + 100 s_i)) - 1, from pooled success rates s_i in [0, 1].

    Reduces over the last axis (the achievements); NaN if any rate is NaN (no finished episode)."""
    s = 100.0 * np.asarray(success_rate, np.float64)
    return np.exp(np.mean(np.log1p(s), axis=-1)) - 1.0


def subtask_score(success_rate) -> np.ndarray:
    """The Crafter formula over the subtasks that were offered at all (Heist): NaN rates (never available) are left
    out instead of making the whole score NaN. Equal to `crafter_score` when every rate is defined."""
    s = 100.0 * np.asarray(success_rate, np.float64)
    with np.errstate(invalid="ignore"), quiet_nan():
        return np.exp(np.nanmean(np.log1p(s), axis=-1)) - 1.0
