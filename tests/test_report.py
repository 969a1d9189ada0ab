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


def test_adaptation_names_the_weakest_skills_each_design_serves_and_its_repeats():
    from types import SimpleNamespace

    from envgen_jax.envs.crafter.config import CrafterConfig
    from envgen_jax.envs.crafter.game import CRAFTER_ACHIEVEMENTS as names
    from envgen_jax.report import adaptation
    from envgen_jax.run.loop_state import Evaluation

    wood = {"environment_settings": {"tree_rarity": "very common"}}
    iron = {"environment_settings": {"iron_rarity": "very common"}, "inventory_settings": {"stone_pickaxe": 1}}
    cows = {"creature_settings": {"cows": "very common"}}
    full = lambda c: CrafterConfig.from_dict(c).to_dict()  # noqa: E731 -- designs are recorded in full
    # The feedback after cycle 1: every achievement at 50% but the iron chain and drinking (0-3%).
    rates = {n: 0.5 for n in names} | {"collect_iron": 0.0, "make_iron_pickaxe": 0.01, "make_iron_sword": 0.02,
                                       "collect_diamond": 0.0, "collect_drink": 0.03, "eat_plant": 0.04}
    state = SimpleNamespace(
        designs=[{"cycle": 0, "designers": [{"configs": [full(wood), full(cows)]}]},
                 {"cycle": 1, "designers": [{"configs": [full(iron), full(wood)]}]}],
        evals=[Evaluation.from_dict({"cycle": 0, "final": False, "success_mean": rates})])
    (entry,) = adaptation(state, list(names), CrafterConfig)
    row = entry["designers"][0]
    # 22 achievements: the bottom 6 (ties in the listed order).
    assert row["weakest"] == ["collect_diamond", "collect_iron", "make_iron_pickaxe", "make_iron_sword",
                              "collect_drink", "eat_plant"]
    # More iron and a stone pickaxe serve collect_iron and, as its prerequisite, the iron tools; nothing gives
    # water or saplings, and nothing an iron pickaxe or more diamonds for collect_diamond.
    assert row["targeted_weakest"] == ["collect_iron", "make_iron_pickaxe", "make_iron_sword"]
    assert entry["targeted_share"] == 0.5 and row["repeated_environments"] == 1 and entry["repeated_share"] == 0.5
    assert (row["new_settings"], row["dropped_settings"], row["same_design"]) == (2, 1, False)
    assert row["duplicate_environments"] == 0 and entry["duplicate_environments"] == 0
    # What the designer's re-asks (llm.distinct) left: a design holding the same environment twice counts it once.
    twice = SimpleNamespace(designs=[state.designs[0], {"cycle": 1, "designers": [{"configs": [full(iron)] * 2}]}],
                            evals=state.evals)
    (doubled,) = adaptation(twice, list(names), CrafterConfig)
    assert doubled["designers"][0]["duplicate_environments"] == 1 and doubled["duplicate_environments"] == 1
    # The study's brief of it (study.md's "How each method's designs answered the feedback") keeps what changed.
    from envgen_jax.study import adaptation_summary
    (brief,) = adaptation_summary([entry])["per_cycle"]
    assert brief == {"cycle": 1, "targeted_share": 0.5, "repeated_share": 0.5, "new_settings": 2,
                     "dropped_settings": 1, "same_design": False}


def test_an_evaluation_is_scored_by_its_game_also_from_an_older_run():
    from envgen_jax import games
    from envgen_jax.report import evaluation_score
    crafter, heist = games.get("crafter"), games.get("heist")
    # Crafter keeps the paper's key names; another game's evaluation has its own score under plain names.
    assert evaluation_score({"crafter_score_mean": 3.0, "crafter_score_std": 1.0, "crafter_score_per_seed": [2.0, 4.0]},
                            crafter) == {"mean": 3.0, "std": 1.0, "per_seed": [2.0, 4.0]}
    assert evaluation_score({"score_mean": 5.0, "score_std": 0.0, "score_per_seed": [5.0]}, heist)["mean"] == 5.0
    # An older run scored Heist's evaluations with the Crafter formula: its score is computed again, per seed,
    # from the success rates (a subtask no level offered, None, left out rather than making the score undefined).
    old = {"crafter_score_mean": None, "crafter_score_std": None, "crafter_score_per_seed": [None, None],
           "success_per_seed": [[0.5, None, 0.25], [1.0, 0.0, None]]}
    got = evaluation_score(old, heist)
    expected = [subtask_score(np.array([0.5, np.nan, 0.25])), subtask_score(np.array([1.0, 0.0, np.nan]))]
    assert got["per_seed"] == pytest.approx(expected)
    assert (got["mean"], got["std"]) == pytest.approx((np.mean(expected), np.std(expected)))
