"""Scores from pooled counts: the Crafter score, Heist's availability-aware subtask rates, honest empties."""

import numpy as np
import pytest

from envgen_jax.report import scored_summary
from envgen_jax.trainer.metrics import RowStats, crafter_score, subtask_score, success_rates


def _stats(episodes, counts, available=None):
    episodes = np.asarray(episodes)
    counts = np.asarray(counts)
    return RowStats(episodes=episodes, return_sum=episodes * 2.0, return_sq_sum=episodes * 4.0,
                    length_sum=episodes * 10, achievement_counts=counts, env_steps=episodes * 10,
                    available_counts=None if available is None else np.asarray(available))


def test_crafter_score_pools_before_the_geometric_mean():
    # Two seeds x 3 achievements: rates pooled per seed, then the formula, then mean/std over seeds.
    scored = {k: np.asarray(v).tolist() for k, v in vars(_stats([10, 20], [[10, 5, 0], [20, 20, 2]])).items()}
    out = scored_summary(scored, ["a", "b", "c"], "crafter")
    expected = [crafter_score(np.array([1.0, 0.5, 0.0])), crafter_score(np.array([1.0, 1.0, 0.1]))]
    assert out["score_per_seed"] == pytest.approx(expected)
    assert out["score"] == pytest.approx(np.mean(expected)) and out["score_std"] == pytest.approx(np.std(expected))
    assert out["achievements"]["b"] == pytest.approx(75.0) and out["reward"] == pytest.approx(2.0)
    # Not the mean of per-episode scores: one episode unlocking everything and one unlocking nothing give 0 per
    # episode averaged (50 * ...), whereas pooled rates of 50 % give exp(ln 51) - 1 = 50.
    assert crafter_score(np.array([0.5, 0.5, 0.5])) == pytest.approx(50.0)


def test_subtask_rates_count_only_episodes_that_offered_them():
    stats = _stats([10], [[4, 1, 0]], available=[[10, 2, 0]])
    rates = success_rates(stats)
    assert rates[0, 0] == pytest.approx(0.4) and rates[0, 1] == pytest.approx(0.5) and np.isnan(rates[0, 2])
    assert subtask_score(rates)[0] == pytest.approx(crafter_score(np.array([0.4, 0.5])))
    scored = {k: np.asarray(v).tolist() for k, v in vars(stats).items()}
    out = scored_summary(scored, ["key", "lock", "gem"], "heist")
    assert out["achievements"]["gem"] is None  # never offered: unknown, not 0


def test_no_finished_episode_reports_none_not_zero():
    stats = _stats([0, 0], [[0, 0], [0, 0]])
    out = scored_summary({k: np.asarray(v).tolist() for k, v in vars(stats).items()}, ["a", "b"], "crafter")
    assert out["score"] is None and out["reward"] is None and out["achievements"] == {"a": None, "b": None}
    assert out["episodes_per_seed"] == [0, 0]
