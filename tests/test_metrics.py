"""Metrics maths: the Crafter score, means over finished episodes only, per-row sums, evaluation counting."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from envgen_jax import games
from envgen_jax.trainer import probes
from envgen_jax.trainer.evaluate import make_evaluator, report_from_stats
from envgen_jax.trainer.metrics import (RowStats, crafter_score, mean_or_nan, pool_rows, pool_seeds,
                                        row_stats_from_steps, success_rates, summarize, summarize_rows, to_host)
from envgen_jax.trainer.config import PPOAlgorithm, TrainerConfig
from envgen_jax.trainer.factory import make_trainer
from tests.trainer_configs import mlp


def test_crafter_score_known_values():
    assert crafter_score(np.zeros(22)) == pytest.approx(0.0)
    assert crafter_score(np.ones(22)) == pytest.approx(100.0)
    # two achievements at 100% and 0%: exp((ln 101 + ln 1) / 2) - 1 = sqrt(101) - 1
    assert crafter_score([1.0, 0.0]) == pytest.approx(math.sqrt(101) - 1)
    # rates in percent 10, 20, 30 -> geometric mean of 11, 21, 31 minus 1
    assert crafter_score([0.1, 0.2, 0.3]) == pytest.approx((11 * 21 * 31) ** (1 / 3) - 1)
    # batched over leading axes, NaN propagates
    out = crafter_score(np.array([[1.0, 0.0], [np.nan, 0.5]]))
    assert out[0] == pytest.approx(math.sqrt(101) - 1) and np.isnan(out[1])


def test_crafter_score_pools_before_the_geometric_mean():
    # two episodes: one unlocked only achievement 0, the other only achievement 1
    stats = RowStats(episodes=np.array(2), return_sum=np.array(2.0), return_sq_sum=np.array(2.0),
                     length_sum=np.array(20), achievement_counts=np.array([1, 1]), env_steps=np.array(20))
    pooled = crafter_score(success_rates(stats))  # rates 50%, 50% -> 50
    assert pooled == pytest.approx(50.0)
    per_episode_mean = np.mean([crafter_score([1.0, 0.0]), crafter_score([0.0, 1.0])])  # craftax-style: ~9.05
    assert per_episode_mean != pytest.approx(pooled)


def test_means_are_nan_without_finished_episodes():
    assert np.isnan(mean_or_nan(3.0, 0))
    np.testing.assert_allclose(mean_or_nan([4.0, 0.0], [2, 0]), [2.0, np.nan])
    empty = RowStats(episodes=np.array(0), return_sum=np.array(0.0), return_sq_sum=np.array(0.0),
                     length_sum=np.array(0), achievement_counts=np.zeros(3, np.int32), env_steps=np.array(50))
    s = summarize(empty, ("a", "b", "c"))
    assert s["episodes"] == 0 and s["env_steps"] == 50
    assert s["mean_return"] is None and s["mean_length"] is None and s["std_return"] is None
    assert s["success"] == {"a": None, "b": None, "c": None} and s["crafter_score"] is None


@struct.dataclass
class _Info:  # the StepInfo fields metrics read
    done: jax.Array
    row: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array
    achievements: jax.Array


def test_row_stats_from_steps_by_row():
    # T=2 steps x N=3 envs, K=3 rows, A=2 achievements
    info = _Info(done=jnp.array([[True, False, True], [False, True, True]]),
                 row=jnp.array([[0, 1, 1], [0, 1, 1]]),
                 episode_return=jnp.array([[1.0, 9.0, 2.0], [9.0, 3.0, 5.0]]),
                 episode_length=jnp.array([[10, 99, 20], [99, 30, 40]]),
                 achievements=jnp.array([[[1, 0], [1, 1], [0, 1]], [[1, 1], [1, 0], [1, 1]]], bool))
    s = to_host(jax.jit(row_stats_from_steps, static_argnums=1)(info, 3))
    np.testing.assert_array_equal(s.episodes, [1, 3, 0])
    np.testing.assert_allclose(s.return_sum, [1.0, 10.0, 0.0])
    np.testing.assert_allclose(s.return_sq_sum, [1.0, 4 + 9 + 25, 0.0])
    np.testing.assert_array_equal(s.length_sum, [10, 90, 0])
    np.testing.assert_array_equal(s.achievement_counts, [[1, 0], [2, 2], [0, 0]])
    np.testing.assert_array_equal(s.env_steps, [2, 4, 0])
    rows = summarize_rows(s, ("x", "y"))
    assert rows[1]["mean_return"] == pytest.approx(10 / 3) and rows[1]["success"]["x"] == pytest.approx(2 / 3)
    assert rows[2]["episodes"] == 0 and rows[2]["mean_return"] is None
    pooled = pool_rows(s, [0, 1])
    assert int(pooled.episodes) == 4 and pooled.achievement_counts.tolist() == [3, 2]
    masked = to_host(row_stats_from_steps(info, 3, count_mask=jnp.array([[True, True, False], [True, True, True]])))
    np.testing.assert_array_equal(masked.episodes, [1, 2, 0])
    # seed axis pooling
    two = jax.tree.map(lambda x: np.stack([x, x]), s)
    assert int(pool_seeds(two).episodes.sum()) == 8


# ------------------------------------------------------------------------------------------------------------------
# evaluator counting on probes


@pytest.fixture(scope="module")
def bandit_eval():
    env = probes.BanditEnv()
    trainer = make_trainer(env, TrainerConfig(PPOAlgorithm(num_envs=8, num_steps=4, num_minibatches=2), mlp(8, 1),
                                              num_agents=2))
    bank = probes.make_bank([1.0, 1.0], shifts=[0, 1])
    rows = jnp.zeros(8, jnp.int32)
    ts = trainer.init(bank, rows)
    ev = make_evaluator(trainer, num_envs=16, episodes_per_env=5, max_steps=40, game=games.get("crafter"))
    return trainer, ts, bank, ev


def test_evaluator_counts_n_episodes_per_env(bandit_eval):
    trainer, ts, bank, ev = bandit_eval
    rows = jnp.asarray([0] * 10 + [1] * 6, jnp.int32)
    stats, steps = ev.run(ts.params, bank, rows, key=0, mode="random")
    stats = to_host(stats)
    np.testing.assert_array_equal(stats.episodes, [[50, 30], [50, 30]])  # exactly 5 per env, split by row
    np.testing.assert_array_equal(np.asarray(steps), [5, 5])  # one-step episodes: stops early, after 5 steps
    rep = report_from_stats(stats, trainer.achievement_names, game=games.get("crafter"))
    assert rep.episodes.tolist() == [80, 80]
    # uniform over 4 actions: "correct" about 25%, across seeds
    assert 0.1 < rep.success_mean["correct"] < 0.45
    assert rep.success_std["correct"] >= 0
    assert ev.trace_count == 1
    ev.run(ts.params, bank, rows, key=1, mode="greedy")
    ev.run(ts.params, probes.make_bank([2.0, 0.0], shifts=[3, 3]), rows, key=2, mode="sample")
    assert ev.trace_count == 1  # mode, bank and keys are traced
    # per-seed rows [S, N]: seed 1 runs only row 1
    per_seed = jnp.stack([rows, jnp.ones_like(rows)])
    stats, _ = ev.run(ts.params, bank, per_seed, key=0, mode="random")
    np.testing.assert_array_equal(to_host(stats).episodes, [[50, 30], [0, 80]])


def test_evaluator_reports_none_when_no_episode_finished():
    env = probes.TimeLimitEnv(limit=50)
    trainer = make_trainer(env, TrainerConfig(PPOAlgorithm(num_envs=4, num_steps=2, num_minibatches=2), mlp(8, 1)))
    bank = probes.make_bank([1.0])
    rows = jnp.zeros(4, jnp.int32)
    ts = trainer.init(bank, rows)
    with pytest.raises(ValueError, match="made without its game"):  # no game, no score: never Crafter's by default
        make_evaluator(trainer, num_envs=4, episodes_per_env=1, max_steps=10).evaluate(ts.params, bank, rows)
    rep = make_evaluator(trainer, num_envs=4, episodes_per_env=1, max_steps=10,
                         game=games.get("crafter")).evaluate(ts.params, bank, rows)
    d = rep.to_dict()
    assert d["episodes_per_seed"] == [0]
    assert d["return_mean"] is None and d["crafter_score_mean"] is None
    assert all(v is None for v in d["success_mean"].values())
