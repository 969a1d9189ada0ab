"""Craftax's return measures (% of the most an episode can earn) in report.json and study.json/study.md: the scored
phase's episodes, those near the end of training (how Craftax's table scores a run), held-out worlds; from
synthetic run records, so no program is compiled."""

import types

import numpy as np
import pytest

from envgen_jax import games
from envgen_jax.report import END_UPDATES, end_of_training_returns, table_measures
from envgen_jax.run.loop_state import Evaluation
from envgen_jax.study.compare import measures_of
from envgen_jax.study.markdown import _long_chain, _return_parts, _returns
from envgen_jax.study.stats import difference, mean_ci


def _chunk(steps, episodes, returns):
    return {"env_steps": steps, "cycle": 0, "phase": "final", "episodes_per_seed": episodes,
            "return_per_seed": returns}


def test_the_end_of_training_mean_weights_each_chunks_episodes_and_leaves_out_older_chunks():
    per_update = 1000  # 4 updates per chunk: the window of 12 updates is the last 3 chunks
    curve = [_chunk(4000 * (i + 1), [5, 0], [100.0, None]) for i in range(5)]  # old chunks: must not count
    curve += [_chunk(24000, [1, 2], [2.0, 4.0]), _chunk(28000, [3, 0], [6.0, None]), _chunk(32000, [0, 2], [None, 8.0])]
    means, span = end_of_training_returns(curve, per_update)
    assert END_UPDATES * per_update == 12000 and span == 12000
    assert means == pytest.approx([(1 * 2 + 3 * 6) / 4, (2 * 4 + 2 * 8) / 4])
    curve[-1]["episodes_per_seed"] = [0, 0]
    curve[-2]["episodes_per_seed"] = [0, 0]
    curve[-3]["episodes_per_seed"] = [0, 0]
    assert end_of_training_returns(curve, per_update)[0] == [None, None]  # no episode ended: no value, not 0
    assert end_of_training_returns([], per_update) == ([], 0)


def test_report_gives_the_tables_measure_and_the_held_out_one_as_percent_of_the_maximum():
    craftax = games.get("craftax")
    final = Evaluation.from_dict({"cycle": 3, "final": True, "env_steps": 10, "episodes_per_seed": [4, 4],
                                  "success_mean": {}, "success_std": {}, "mean_return_per_seed": [4.52, 9.04]})
    state = types.SimpleNamespace(curve=[_chunk(4096 * 4, [2, 1], [2.26, 11.3])], evals=[final])
    cfg = types.SimpleNamespace(steps_per_update=4096)
    out = table_measures(state, cfg, craftax.max_return, final)
    assert out["return_pct_end_per_seed"] == pytest.approx([1.0, 5.0])
    assert out["return_pct_end"] == pytest.approx(3.0) and out["return_pct_end_std"] == pytest.approx(2.0)
    assert out["eval_return_pct_per_seed"] == pytest.approx([2.0, 4.0])
    old = Evaluation.from_dict({**final.to_dict(), "mean_return_per_seed": None})  # a run from before it was kept
    assert "eval_return_pct" not in table_measures(state, cfg, 226, old)
    assert "eval_return_pct" not in table_measures(state, cfg, 226, None)  # no final evaluation (yet)
    assert table_measures(state, cfg, games.get("crafter").max_return, final) == {}  # Crafter: no maximum, no measure


def test_a_study_compares_the_return_measures_only_where_every_report_has_them():
    a = {"score_per_seed": [1, 2], "reward_per_seed": [1, 2], "return_pct_per_seed": [2.0, 3.0],
         "return_pct_end_per_seed": [2.5, 3.5]}
    b = {**a, "return_pct_end_per_seed": None}
    assert measures_of(a) == ("score", "reward", "return_pct", "return_pct_end")
    assert measures_of(a, b) == ("score", "reward", "return_pct")
    assert measures_of() == ("score", "reward")


def test_study_md_shows_the_returns_beside_the_published_table_and_the_deep_skills():
    craftax = games.get("craftax")
    ppo, envgen = [1.0, 2.0, 3.0, 2.0], [3.0, 4.0, 5.0, 4.0]
    done = {m: {"return_pct": mean_ci(v), "return_pct_end": mean_ci([x + 1 for x in v]),
                "vs_ppo": None if m == "ppo" else {"return_pct": difference(v, ppo)},
                "achievements": {"enter_dungeon": 10.0 * i}, "first_unlock_steps":
                    {a: [None] * 4 if a != "enter_dungeon" else [200_000, None, 400_000, None] for a in craftax.chain}}
            for i, (m, v) in enumerate({"ppo": ppo, "envgen": envgen}.items())}
    study = {"reference": "ppo", "pairwise": {}}
    md = "\n".join(_returns(study, done, craftax))
    assert "## Mean episode return, % of 226" in md
    assert "| envgen | 4.00 +/- 0.71 | 3.00, 4.00, 5.00, 4.00 |" in md and "+2.00" in md  # two decimals: near 2%
    assert "Every pair" not in md  # no pairs in study.json: no table of them
    # With pairs: each return table adds the Holm-adjusted p against ppo, and every pair is tabled per measure with
    # one orientation (A - B), whichever way study.json holds the pair.
    flipped = {**difference(ppo, envgen), "a": "ppo", "b": "envgen", "p_holm": 0.04}
    study["pairwise"] = {"return_pct": [{**difference(envgen, ppo), "a": "envgen", "b": "ppo", "p_holm": 0.03}],
                         "return_pct_end": [flipped]}
    md = "\n".join(_returns(study, done, craftax))
    assert "| envgen | 4.00 +/- 0.71 | 3.00, 4.00, 5.00, 4.00 | [" in md and "| 0.030 |" in md
    assert "| envgen | ppo | +2.00 | 0.030 | +2.00 | 0.040 |" in md and "over the 1 pairs" in md
    assert "end of training (the table's measure)" in md and "held-out worlds |" not in md  # no such values
    assert "PPO 2.2" in md and "Simulus 6.6" in md
    chain = "\n".join(_long_chain(done, craftax))
    assert "## The deep skills" in chain and "| enter_dungeon | 0.00%, 0.30M (2/4) | 10.00%, 0.30M (2/4) |" in chain
    assert len([line for line in chain.splitlines() if line.startswith("| ")]) == 1 + len(craftax.chain)
    assert _returns(study, done, games.get("crafter")) == []  # a game without a maximum return
    assert np.isclose(mean_ci(envgen)["mean"], 4.0)


def test_study_md_splits_a_return_difference_by_achievement():
    """A Craftax return is its achievements' rewards plus a health term, so study.md splits a method's difference
    in mean return from ppo into (success - ppo's) x reward per achievement and the health term's difference."""
    craftax = games.get("craftax")
    rewards = craftax.achievement_rewards()
    assert len(rewards) == 67 and sum(rewards.values()) == craftax.max_return == 226
    assert rewards["wake_up"] == 1 and set(rewards.values()) == {1, 3, 5, 8}
    base = dict.fromkeys(rewards, 0.0) | {"wake_up": 90.0, "make_wood_sword": 30.0}
    # plr: wake_up 90 -> 10 (-0.8), a sword 30 -> 20 (-0.1), an iron pickaxe (reward 1) and the fire realm
    # (reward 8) once in 100 episodes each (+0.01, +0.08); its mean return 1 lower: the health term -0.19
    plr = base | {"wake_up": 10.0, "make_wood_sword": 20.0, "make_iron_pickaxe": 1.0, "enter_fire_realm": 1.0}
    done = {"ppo": {"achievements": base, "reward": {"mean": 5.0}},
            "plr": {"achievements": plr, "reward": {"mean": 4.0}}}
    md = "\n".join(_return_parts({"reference": "ppo"}, done, craftax))
    assert "| plr | -1.00 | -0.81 | wake_up (10.0, 90.0; 1) -0.80; make_wood_sword (20.0, 30.0; 1) -0.10; " \
           "enter_fire_realm (1.0, 0.0; 8) +0.08; make_iron_pickaxe (1.0, 0.0; 1) +0.01 | -0.19 |" in md
    assert _return_parts({"reference": "ppo"}, {"ppo": done["ppo"]}, craftax) == []  # nothing to compare
    assert _return_parts({"reference": "ppo"}, done, games.get("heist")) == []  # its return is not a sum of them
    assert games.get("crafter").achievement_rewards() == dict.fromkeys(games.get("crafter").achievements, 1.0)
