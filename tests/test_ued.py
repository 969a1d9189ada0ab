"""Level replay and learnability: the sampler against numpy, per-row scores and the replay mask in the PPO update."""

import dataclasses

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.trainer import level_sampler as ls


def _numpy_replay(score, last_run, seen, time, beta, rho):
    """Robust PLR's replay distribution written out plainly (rank 1 = best; ties: lower row first)."""
    k = len(score)
    p_rank, p_stale = np.zeros(k), np.zeros(k)
    idx = [i for i in range(k) if seen[i]]
    if not idx:
        return np.zeros(k)
    ordered = sorted(idx, key=lambda i: (-score[i], i))
    for rank, i in enumerate(ordered, start=1):
        p_rank[i] = (1.0 / rank) ** (1.0 / beta)
    p_rank /= p_rank.sum()
    for i in idx:
        p_stale[i] = time - last_run[i]
    if p_stale.sum() == 0:
        p_stale[idx] = 1.0
    p_stale /= p_stale.sum()
    return (1 - rho) * p_rank + rho * p_stale


def _numpy_level(score, last_run, seen, time, hp):
    unseen = ~np.asarray(seen)
    p_new = unseen / max(unseen.sum(), 1)
    if unseen.sum() == 0:
        replay = 1.0
    else:
        replay = hp.replay_prob if np.mean(seen) >= hp.min_fill else 0.0
    return replay * _numpy_replay(score, last_run, seen, time, hp.temperature, hp.staleness_coef) + (1 - replay) * p_new


CASES = {
    "distinct": ([0.5, 0.1, 0.9, 0.3, 0.0, 0.2], [1, 2, 3, 4, 5, 6], [1, 1, 1, 1, 1, 0], 10),
    "ties": ([0.2, 0.2, 0.2, 0.7, 0.2, 0.1], [3, 3, 1, 1, 9, 9], [1, 1, 1, 1, 0, 1], 9),
    "all_zero": ([0.0] * 6, [4] * 6, [1] * 6, 4),  # every score 0 and every staleness 0
    "half_seen": ([0.3, 0.0, 0.0, 0.6, 0.0, 0.0], [2, 0, 0, 1, 0, 0], [1, 0, 0, 1, 0, 1], 3),
    "under_fill": ([0.3, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], 2),
    "none_seen": ([0.0] * 6, [0] * 6, [0] * 6, 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("hp", [ls.LevelSampler(capacity=6), ls.LevelSampler(capacity=6, temperature=1.0,
                                                                             staleness_coef=0.0, replay_prob=0.5)])
def test_probabilities_match_numpy(case, hp):
    score, last_run, seen, time = CASES[case]
    state = ls.SamplerState(score=jnp.asarray(score, jnp.float32), last_run=jnp.asarray(last_run, jnp.int32),
                            seen=jnp.asarray(seen, bool), max_return=jnp.zeros(6), time=jnp.int32(time))
    seen = np.asarray(seen, bool)
    got_replay = np.asarray(ls.replay_probs(hp, state))
    got = np.asarray(ls.level_probs(hp, state))
    np.testing.assert_allclose(got_replay, _numpy_replay(score, last_run, seen, time, hp.temperature,
                                                         hp.staleness_coef), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got, _numpy_level(score, last_run, seen, time, hp), rtol=1e-5, atol=1e-7)
    assert np.isfinite(got).all() and got.sum() == pytest.approx(1.0, abs=1e-6)


def test_temperature_is_a_power():
    state = ls.SamplerState.empty(3).replace(score=jnp.asarray([3.0, 2.0, 1.0]), seen=jnp.ones(3, bool))
    p = np.asarray(ls.replay_probs(ls.LevelSampler(capacity=3, temperature=0.5, staleness_coef=0.0), state))
    np.testing.assert_allclose(p, np.array([1, 1 / 4, 1 / 9]) / (1 + 1 / 4 + 1 / 9), rtol=1e-6)


def test_update_and_replace_rows():
    hp = ls.LevelSampler(capacity=4)
    state = ls.SamplerState.empty(4)
    state = ls.update(hp, state, jnp.asarray([2.0, 0.0, 3.0, 0.0]), jnp.asarray([4.0, 0.0, 3.0, 0.0]),
                      jnp.asarray([1.0, -jnp.inf, 2.0, -jnp.inf]))
    np.testing.assert_allclose(state.score, [0.5, 0.0, 1.0, 0.0])
    assert state.seen.tolist() == [True, False, True, False] and state.last_run.tolist() == [1, 0, 1, 0]
    state = ls.replace_rows(state, jnp.asarray([2]))
    assert state.seen.tolist() == [True, False, False, False] and float(state.score[2]) == 0.0
    assert int(state.time) == 1


# -- the PPO update: replay mask, per-row scores, sampled rows and PLR inside the compiled chunk --------------------

from envgen_jax.envs.vector import RowSampler  # noqa: E402
from envgen_jax.trainer import probes  # noqa: E402
from envgen_jax.trainer.metrics import to_host  # noqa: E402
from envgen_jax.trainer.config import ExecutionConfig, PPOAlgorithm, TrainerConfig  # noqa: E402
from envgen_jax.trainer.ppo import compute_gae  # noqa: E402
from tests.trainer_configs import mlp, tiny_run  # noqa: E402
from envgen_jax.trainer.layouts import REPLAY, Replay  # noqa: E402
from tests.trees import assert_trees_equal  # noqa: E402
from envgen_jax.trainer.factory import make_trainer  # noqa: E402

N = 16
TINY = TrainerConfig(PPOAlgorithm(num_envs=N, num_steps=8, update_epochs=2, num_minibatches=2, lr=3e-3), mlp(32, 1),
                     ExecutionConfig(resets_per_step=N))
# One learnable row, then trivial and impossible ones (SkillEnv; distinct shifts: the agent tells rows apart).
SKILL_BANK = probes.make_bank([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]], shifts=[1, 2, 3, 0])


def test_all_ones_mask_is_bit_identical_to_the_unmasked_update():
    trainer = make_trainer(probes.SkillEnv(), TINY)
    ts = jax.tree.map(lambda x: x[0], trainer.init(SKILL_BANK, jnp.arange(N) % 4))
    obs, _, _, traj, infos = trainer.ppo.rollout(ts.params, ts.obs, ts.env_state, None, jax.random.PRNGKey(1),
                                                 SKILL_BANK, jnp.arange(N) % 4)
    _, last_value = trainer.apply(ts.params, obs)
    adv, targets = compute_gae(traj.reward, traj.value, traj.done, traj.truncated, last_value, 0.99, 0.8)
    learn = jax.jit(functools.partial(trainer.ppo.learn, memory=None))
    key = jax.random.PRNGKey(2)
    hp = ts.hparams
    plain = learn(ts.params, ts.opt_state, hp, traj, adv, targets, key=key)
    ones = learn(ts.params, ts.opt_state, hp, traj, adv, targets, key=key, mask=jnp.ones(adv.shape, bool))
    # The update (parameters and Adam state) is bit-identical; the logged loss means may differ in the last ulp
    # (XLA fuses the forward-only reductions differently).
    for a, b in zip(jax.tree.leaves(plain[:2]), jax.tree.leaves(ones[:2])):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    for a, b in zip(jax.tree.leaves(plain[2]), jax.tree.leaves(ones[2])):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # No step selected: the parameters do not move on the first Adam step (zero gradients).
    params, _, _ = learn(ts.params, ts.opt_state, hp, traj, adv, targets, key=key, mask=jnp.zeros(adv.shape, bool))
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(ts.params)):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_row_scores_are_per_row_means():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 3, (5, 4))
    adv, values, ret = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    done = rng.random((5, 4)) < 0.4

    class Info:
        episode_return = jnp.asarray(ret, jnp.float32)

    Info.done = jnp.asarray(done)
    state = ls.SamplerState.empty(4)
    for score in ("pvl", "maxmc"):
        total, count, best = ls.row_scores(ls.LevelSampler(capacity=4, score=score), state, jnp.asarray(rows),
                                           jnp.asarray(adv, jnp.float32), jnp.asarray(values, jnp.float32), Info)
        for r in range(4):
            sel = rows == r
            assert count[r] == sel.sum()
            want_best = ret[sel & done].max() if (sel & done).any() else -np.inf
            assert best[r] == pytest.approx(want_best, rel=1e-5)
            per_step = np.maximum(adv, 0) if score == "pvl" else (want_best - values if np.isfinite(want_best)
                                                                   else 0 * values)
            assert total[r] == pytest.approx(per_step[sel].sum(), rel=1e-5, abs=1e-6)


def test_trainer_with_sampled_rows_follows_probs_without_retrace():
    trainer = make_trainer(probes.SkillEnv(), dataclasses.replace(TINY, num_agents=2))
    probs = jnp.asarray([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.25, 0.75]])  # per seed
    ts = trainer.init(SKILL_BANK, RowSampler(probs))
    ts, m = trainer.train_chunk(ts, SKILL_BANK, RowSampler(probs), num_updates=6)
    episodes = to_host(m).rows.episodes
    np.testing.assert_allclose(episodes / episodes.sum(1, keepdims=True), probs, atol=0.08)
    ts, _ = trainer.train_chunk(ts, SKILL_BANK, RowSampler(probs[::-1]), num_updates=6)
    assert trainer.trace_counts["train_chunk"] == 1


def test_drawing_one_row_trains_exactly_as_fixed_rows_on_it(tmp_path):
    """The original-game phases of plr, sfl and envgen_sfl draw their one row (`RowSampler.one_row`; plr's sampler
    held, `Replay.held`), to share the chunk of their sampled phases: the same episodes, updates and statistics as
    fixed rows on that row. (In an env whose worlds do not depend on the key: the sampled layout splits the spare
    refresh's key once more to draw rows, so Crafter's refreshed worlds differ.) Held, the sampler's state is
    left as it is. A checkpoint written on fixed rows (by the code before) restores into the drawn layout, each slot
    on that row, and trains on."""
    from envgen_jax.envs.vector import SampledVecState
    from envgen_jax.schema import ConfigError
    from envgen_jax.trainer.checkpoint import save_checkpoint
    env, cfg = probes.DiscountEnv(), dataclasses.replace(TINY, num_agents=2)  # 2-step episodes: many refreshes
    bank = probes.make_bank([[1.0, 0.0], [0.5, 0.0]], shifts=[0, 0])
    fixed = np.zeros(cfg.ppo.num_envs, np.int32)
    for level_sampler, drawn in ((None, RowSampler.one_row(fixed, 2, cfg.num_agents)),
                                 (ls.LevelSampler(capacity=2), Replay.held([1.0, 0.0]))):
        trainer = make_trainer(env, cfg, level_sampler=level_sampler)
        a, ma = trainer.train_chunk(trainer.init(bank, fixed), bank, fixed, num_updates=4)
        start = trainer.init(bank, drawn)
        sampler = jax.device_get(getattr(start, "sampler", None))
        b, mb = trainer.train_chunk(start, bank, drawn, num_updates=4)
        ma, mb = to_host(ma), to_host(mb)
        assert ma.rows.episodes[:, 0].sum() > 2 * cfg.ppo.num_envs and (mb.rows.episodes[:, 1] == 0).all()
        assert_trees_equal(ma.rows, mb.rows)  # the same episodes, returns, lengths, achievements
        # the same updates, to float32 rounding (the two programs fuse their sums differently)
        for x, y in zip(jax.tree.leaves((ma.losses, trainer.agent_state(a).params)),
                        jax.tree.leaves((mb.losses, trainer.agent_state(b).params))):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)
        if level_sampler is not None:
            assert_trees_equal(b.sampler, sampler)

        # trainer/migrations.py, 3: the fixed-row state `a`, saved, restores into the drawn layout
        path = save_checkpoint(tmp_path / f"fixed_{level_sampler is not None}", a)
        restored = trainer.restore(path, bank, drawn)
        env_state, saved = trainer.agent_state(restored).env_state, trainer.agent_state(a).env_state
        assert isinstance(env_state, SampledVecState) and (np.asarray(env_state.row) == 0).all()
        assert env_state.row.shape == env_state.spare_row.shape == (cfg.num_agents, cfg.ppo.num_envs)
        assert_trees_equal([getattr(env_state, f.name) for f in dataclasses.fields(saved)],
                           [getattr(saved, f.name) for f in dataclasses.fields(saved)])
        assert_trees_equal(jax.device_get(trainer.agent_state(restored).replace(env_state=None)),
                           jax.device_get(trainer.agent_state(a).replace(env_state=None)))
        if level_sampler is not None:
            assert_trees_equal(restored.sampler, a.sampler)
        traces = trainer.trace_counts["train_chunk"]
        trainer.train_chunk(restored, bank, drawn, num_updates=4)  # and trains on, in the drawn layout's program
        assert trainer.trace_counts["train_chunk"] == traces
        with pytest.raises(ConfigError, match="ran fixed rows, and this phase draws its rows from several"):
            trainer.restore(path, bank, RowSampler(jnp.full((cfg.num_agents, 2), 0.5)) if level_sampler is None
                            else Replay.held([0.5, 0.5]))


@pytest.fixture(scope="module")
def plr_run():
    hp = ls.LevelSampler(capacity=4, min_fill=0.5)
    trainer = make_trainer(probes.SkillEnv(), TINY, level_sampler=hp)
    ts = trainer.init(SKILL_BANK, REPLAY)
    ts, m = trainer.train_chunk(ts, SKILL_BANK, REPLAY, num_updates=40)
    return hp, trainer, ts, to_host(m)


def test_plr_concentrates_on_the_learnable_row(plr_run):
    hp, trainer, ts, m = plr_run
    state = jax.tree.map(lambda x: x[0], ts.sampler)
    assert bool(state.seen.all()) and int(state.time) == 40
    p = np.asarray(ls.level_probs(hp, state))
    assert p.argmax() == 0 and p[0] > 0.5, (p, state.score)


def test_plr_state_changes_never_recompile(plr_run):
    hp, trainer, ts, _ = plr_run
    ts = ts.replace(sampler=ls.replace_rows(ts.sampler, jnp.asarray([1, 2])))
    ts, _ = trainer.train_chunk(ts, SKILL_BANK, REPLAY, num_updates=40)
    assert trainer.trace_counts["train_chunk"] == 1


# -- plr through the loop: outputs, buffer metrics, pictures, resume ------------------------------------------------

import json  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PLR_TINY = [
    "method=plr", *tiny_run(cycles=1, final_steps=256, envs_per_call=None, llm_episode_length=None,
                            quiet=["output.progress=false"]),
    "method_options.plr.capacity=4", "output.checkpoint_minutes=0",
    "output.keep_checkpoints=100",
]


def run_plr(out):
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config
    run = EnvGenRun(load_run_config(ROOT / "configs" / "smoke.yaml", PLR_TINY), out)
    return run.run(), run


@pytest.fixture(scope="module")
def plr_loop(tmp_path_factory):
    out = tmp_path_factory.mktemp("plr") / "whole"
    report, run = run_plr(out)
    return out, report, dict(run.trainer.trace_counts)


def _metrics(out):
    """metrics.jsonl without its timings (a learnability selection's own included)."""
    skip = ("steps_per_second", "seconds")
    lines = [{k: v for k, v in json.loads(line).items() if k not in skip}
             for line in (out / "metrics.jsonl").read_text().splitlines()]
    for line in lines:
        if "selection" in line:
            line["selection"] = {k: v for k, v in line["selection"].items() if k != "seconds"}
    return lines


def test_plr_run_records_its_buffer(plr_loop):
    out, report, traces = plr_loop
    assert "score" in report  # a tiny final phase may finish no original-game episode (score None)
    # the final phase holds the curriculum on the original game's row (layouts.Replay.held): the plr phase's program
    assert traces["train_chunk"] == 1
    lines = _metrics(out)
    buffers = [line["buffer"] for line in lines if line["phase"] == "plr"]
    assert len(buffers) == 4 and all(len(b["seen_per_seed"]) == 2 for b in buffers)
    assert all(1 <= n <= 4 for b in buffers for n in b["seen_per_seed"])
    assert all(0 <= share <= 1 for b in buffers for share in b["replay_share_per_seed"])
    assert all("buffer" not in line for line in lines if line["phase"] != "plr")
    assert (out / "environments" / "cycle_1_top_levels.png").exists()
    top = json.loads((out / "environments" / "cycle_1_top_levels.json").read_text())
    assert len(top["rows"]) == 4


def cut_back(run: Path, checkpoints: int) -> None:
    """Leave the run directory `run` as if killed after its first `checkpoints` checkpoints (no report yet)."""
    steps = sorted((p for p in (run / "checkpoints").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    for p in steps[checkpoints:]:
        shutil.rmtree(p)
    (run / "report.json").unlink()


def _assert_resume_after(out, tmp_path, checkpoints: int):
    """A copy of the run directory `out` cut back to its first `checkpoints` checkpoints (as if killed there)
    resumes to the same report.json and metrics.jsonl (timings aside)."""
    from envgen_jax.run.loop import EnvGenRun
    run = tmp_path / "resumed"
    shutil.copytree(out, run)
    cut_back(run, checkpoints)
    EnvGenRun.resume(run).run()
    from tests.golden import TIMING_REPORT
    strip = lambda r: {k: v for k, v in r.items() if k not in TIMING_REPORT}  # noqa: E731
    assert strip(json.loads((run / "report.json").read_text())) == strip(json.loads((out / "report.json").read_text()))
    assert _metrics(run) == _metrics(out)


def test_plr_resumes_to_the_same_report(plr_loop, tmp_path):
    # killed in the middle of cycle 1's level-replay phase, after a buffer refresh
    _assert_resume_after(plr_loop[0], tmp_path, checkpoints=3)


def test_ued_settings_parse_and_the_study_accepts_plr():
    from envgen_jax import study
    from envgen_jax.run_config import load_run_config
    from envgen_jax.schema import ConfigError
    cfg = load_run_config(ROOT / "configs" / "crafter_plr.yaml", ["method_options.plr.replay_prob=0.5"])
    options = cfg.method_options.plr
    assert options.replay_prob == 0.5 and cfg.bank_rows == options.capacity == 256
    with pytest.raises(ConfigError, match=r"method_options.plr.replay_prob: 1.5 is not in \[0, 1\]"):
        load_run_config(ROOT / "configs" / "crafter_plr.yaml", ["method_options.plr.replay_prob=1.5"])
    settings = study.resolve(ROOT / "configs" / "crafter_envgen.yaml", ["ppo", "plr"])
    assert settings.run_config("plr").method == "plr"


# -- learnability: SFL's selection, and the sfl and envgen_sfl methods through the loop ----------------------------

def test_learnability_picks_the_learnable_row():
    from envgen_jax.trainer import learnability as sfl
    from envgen_jax.trainer.evaluate import make_evaluator
    trainer = make_trainer(probes.SkillEnv(), TINY)
    ts = trainer.init(SKILL_BANK, jnp.arange(N) % 4)
    evaluator = make_evaluator(trainer, num_envs=64, episodes_per_env=2, max_steps=4)
    stats, _ = evaluator.run(ts.params, SKILL_BANK, jnp.arange(64) % 4, key=3)  # counts only: no game, no score
    learn = sfl.learnability(to_host(stats), mastered=np.zeros((1, 1), bool))
    # Row 0 succeeds about 1/4 of the time (an untrained policy), row 1 and 3 always, row 2 never.
    assert learn[0, 0] > 0.1 and learn[0, 1] == learn[0, 2] == learn[0, 3] == 0.0
    w = sfl.training_weights(np.array([[0.0, 0.2, 0.1, 0.25]]), k=2, original_share=0.5)
    np.testing.assert_allclose(w, [[0.5, 0.25, 0.0, 0.25]])
    assert sfl.mastered_from(np.array([[0.95, np.nan, 0.5]])).tolist() == [[True, False, False]]


def test_sfl_selection_concentrates_on_the_learnable_row():
    """A probe bank whose row 0 plays the original game (trivial), then trivial, learnable and impossible rows: the
    loop's measurement and sfl's weights put every non-original episode on the learnable row, and training follows."""
    from envgen_jax.trainer import learnability as sfl
    from envgen_jax.trainer.evaluate import make_evaluator
    bank = probes.make_bank([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]], shifts=[0, 2, 1, 3])
    trainer = make_trainer(probes.SkillEnv(), dataclasses.replace(TINY, num_agents=2))
    ts = trainer.init(bank, jnp.zeros(N, jnp.int32))
    evaluator = make_evaluator(trainer, num_envs=3 * 16, episodes_per_env=1, max_steps=4)
    m = sfl.measure(evaluator, ts.params, bank, [1, 2, 3], 16, jax.random.PRNGKey(0), np.zeros((2, 1), bool))
    assert m["measured"][:, 1:].all() and (m["episodes"][:, 1:] == 16).all() and (m["episodes"][:, 0] == 0).all()
    assert (m["p"][:, 1] == 1).all() and (m["p"][:, 3] == 0).all() and (0 < m["p"][:, 2]).all()
    assert (m["learnability"][:, 2] > 0.05).all() and (m["learnability"][:, [0, 1, 3]] == 0).all()
    w = sfl.training_weights(m["learnability"], k=1, original_share=0.5)
    np.testing.assert_allclose(w, [[0.5, 0, 0.5, 0]] * 2)
    ts = trainer.reset_envs(ts, bank, RowSampler(jnp.asarray(w)))
    ts, metrics = trainer.train_chunk(ts, bank, RowSampler(jnp.asarray(w)), num_updates=3)
    episodes = to_host(metrics).rows.episodes  # [S, K]
    assert (episodes[:, [1, 3]] == 0).all()
    np.testing.assert_allclose(episodes[:, 2] / episodes.sum(1), 0.5, atol=0.1)
    # envgen_sfl's weights: the top-k of the LLM's rows in proportion to learnability (evenly when all score 0)
    np.testing.assert_allclose(sfl.weights_by_learnability(np.array([[0, .1, .2, .3, 0]]), np.arange(1, 5), 2),
                               [[0, 0, 0.4, 0.6, 0]])
    np.testing.assert_allclose(sfl.weights_by_learnability(np.zeros((1, 4)), np.arange(1, 4), 2), [[0, .5, .5, 0]])
    assert [sfl.verdict(p, True) for p in (0.0, 0.3, 0.95)] == ["too hard", "learnable", "too easy"]


SFL_TINY = [
    "method=sfl", *tiny_run(cycles=1, final_steps=256, envs_per_call=None, quiet=["output.progress=false"]),
    "output.checkpoint_minutes=0",
    "output.keep_checkpoints=100", "method_options.sfl.pool=4", "method_options.sfl.keep=2",
    "method_options.sfl.refresh_updates=2", "method_options.sfl.rollouts_per_level=1",
    "method_options.sfl.rollout_steps=64",
]


def run_sfl(out):
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config
    run = EnvGenRun(load_run_config(ROOT / "configs" / "smoke.yaml", SFL_TINY), out)
    return run.run(), run


@pytest.fixture(scope="module")
def sfl_loop(tmp_path_factory):
    out = tmp_path_factory.mktemp("sfl") / "whole"
    report, run = run_sfl(out)
    return out, report, run


def test_sfl_run_selects_and_records(sfl_loop):
    from envgen_jax.run.loop import latest_checkpoint, load_loop_state
    out, report, run = sfl_loop
    # new pools and weights are traced values, and the final phase draws the original game's row from a one-hot
    # sampler: one compile of the chunk for every phase, one of the reset (a new pool inside the phase), one of the
    # learnability evaluation
    assert run.trainer.trace_counts["train_chunk"] == 1 and run.trainer.trace_counts["reset_envs"] == 1
    assert run.method.learn_evaluator.trace_count == 1
    lines = _metrics(out)
    phases = [line["phase"] for line in lines]
    assert phases == ["sfl"] * 4 + ["final"] * 2  # 512 steps of 128 per update, then the final 256
    # a selection at the phase's start and after 2 updates (method_options.sfl.refresh_updates), recorded with the next chunk
    selections = [line.get("selection") for line in lines]
    assert [s is not None for s in selections] == [True, False, True, False, False, False]
    for sel in filter(None, selections):
        assert len(sel["trained_rows_per_seed"]) == 2
        for rows, weights in zip(sel["trained_rows_per_seed"], sel["trained_weights_per_seed"]):
            assert len(rows) == 2 and all(1 <= r <= 4 for r in rows)
            assert weights == pytest.approx([0.25, 0.25])  # (1 - original_share 0.5) / sfl_keep 2
        assert sel["original_weight_per_seed"] == pytest.approx([0.5, 0.5])
    state = load_loop_state(latest_checkpoint(out))
    selections = state.method["selections"]
    assert len(selections) == 2 and state.method["buffer_draws"] == 2 and len(state.method["buffer"]) == 4
    first = selections[0]
    w = np.asarray(first["weights"])
    assert w.shape == (2, 5) and np.allclose(w.sum(1), 1)
    # the kept rows are each seed's most learnable candidates
    learn = np.asarray(first["learnability"])
    for s in range(2):
        kept = set(np.flatnonzero(w[s, 1:]) + 1)
        assert min(learn[s, r] for r in kept) >= max([learn[s, r] for r in range(1, 5) if r not in kept] + [0])
    top = json.loads((out / "environments" / "cycle_1_top_levels.json").read_text())
    assert len(top["rows"]) == 4 and len(top["learnability"]) == 4
    assert (out / "environments" / "cycle_1_top_levels.png").exists()
    assert report["llm_calls"] == 0


def test_sfl_resumes_to_the_same_report(sfl_loop, tmp_path):
    # killed after the third chunk: after the second selection, mid-phase
    _assert_resume_after(sfl_loop[0], tmp_path, checkpoints=3)


SFL_ONLY = ("method=", "method_options.sfl.pool", "method_options.sfl.keep", "method_options.sfl.refresh",
            "schedule.cycles")
ENVGEN_SFL_TINY = [x.replace(".sfl.", ".envgen_sfl.") for x in SFL_TINY if not x.startswith(SFL_ONLY)] + [
    "method=envgen_sfl", "schedule.cycles=2", "schedule.llm_env_steps=1024",  # 128 per slot, 64-step episodes
    "schedule.envs_per_call=2", "method_options.envgen_sfl.pool=4", "llm.backend=openai", "llm.model=fake"]


def run_envgen_sfl(out):
    from envgen_jax.envs.crafter import CrafterConfig
    from envgen_jax.llm.testing import ScriptedClient, auto_reply
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config
    client = ScriptedClient(default=auto_reply(CrafterConfig))
    run = EnvGenRun(load_run_config(ROOT / "configs" / "smoke.yaml", ENVGEN_SFL_TINY), out, llm_client=client)
    return run.run(), client


# The runs whose outputs tests/golden.py recorded before the methods' procedures left the loop (commit 24acad2).
UED_RUNS = {"plr": run_plr, "sfl": run_sfl, "envgen_sfl": run_envgen_sfl}


def test_plr_and_sfl_runs_match_their_goldens(plr_loop, sfl_loop):
    from tests import golden
    golden.check(golden.read_outputs(plr_loop[0]), golden.expected("plr"), ignore=())
    golden.check(golden.read_outputs(sfl_loop[0]), golden.expected("sfl"), ignore=())


def test_an_sfl_run_directory_from_the_old_code_resumes_to_the_same_outputs(tmp_path):
    # written by the loop that kept sfl's pool and selections in LoopState's own fields
    from envgen_jax.run.loop import EnvGenRun
    from tests import golden
    run = tmp_path / "old_sfl_run"
    shutil.copytree(golden.OLD_SFL_RUN, run)
    EnvGenRun.resume(run).run()
    golden.check(golden.read_outputs(run), golden.expected("sfl"), ignore=())


def test_envgen_sfl_picks_from_the_pool_and_tells_the_llm(tmp_path):
    from envgen_jax.run.loop import latest_checkpoint, load_loop_state
    from tests import golden
    report, client = run_envgen_sfl(tmp_path)
    golden.check(golden.read_outputs(tmp_path), golden.expected("envgen_sfl"), ignore=())
    assert report["llm_calls"] == 2 and len(client.calls) == 2
    state = load_loop_state(latest_checkpoint(tmp_path))
    assert [len(d["designers"][0]["configs"]) for d in state.designs] == [4, 4]
    selections = state.method["selections"]
    assert len(selections) == 2  # one at the start of each cycle's LLM-environment phase
    for sel in selections:
        w = np.asarray(sel["weights"])  # [S, 1 + 4]
        assert w.shape == (2, 5) and (w[:, 0] == 0).all() and np.allclose(w.sum(1), 1)
        assert ((w[:, 1:] > 0).sum(1) <= 2).all()  # envs_per_call of the pool's 4
    # training episodes ran only in the chosen rows
    first = np.asarray(state.env_learning[0]["stats"]["episodes"])  # [S, K]
    w0 = np.asarray(selections[0]["weights"])
    assert (first[w0 == 0] == 0).all() and first.sum() > 0
    # the second call's feedback lists the 4 previous environments, each with its measured learnability
    prompt = client.calls[1]["messages"][-1]["content"]
    assert "success rate p on the achievements it has not mastered" in prompt
    notes = [line for line in prompt.splitlines() if line.strip().startswith("-> p = ")]
    assert len(notes) == 4
    assert sum("the agent trained in it" in n for n in notes) == int((w0[:, 1:] > 0).any(0).sum())  # any seed
    assert all(any(v in n for v in ("learnable", "too easy", "too hard", "not measured")) for n in notes)


def test_sfl_settings_are_checked():
    from envgen_jax import study
    from envgen_jax.run_config import load_run_config
    from envgen_jax.schema import ConfigError
    cfg = load_run_config(ROOT / "configs" / "crafter_sfl.yaml")
    assert cfg.method == "sfl" and cfg.bank_rows == 65
    assert load_run_config(ROOT / "configs" / "crafter_envgen_sfl.yaml").bank_rows == 17
    with pytest.raises(ConfigError, match=r"sfl.keep: 70 is more than method_options.sfl.pool \(64\)"):
        load_run_config(ROOT / "configs" / "crafter_sfl.yaml", ["method_options.sfl.keep=70"])
    with pytest.raises(ConfigError, match="schedule.envs_per_call: envgen_sfl trains in 8 of the LLM's "
                                          "method_options.envgen_sfl.pool = 4 environments"):
        load_run_config(ROOT / "configs" / "crafter_envgen_sfl.yaml",
                        ["schedule.envs_per_call=8", "method_options.envgen_sfl.pool=4"])
    settings = study.resolve(ROOT / "configs" / "study_cpu.yaml", ["ppo", "sfl", "envgen_sfl"])
    assert settings.run_config("envgen_sfl").method == "envgen_sfl"


def test_method_settings_written_under_ued_still_load_into_the_methods_options(tmp_path):
    # Before methods declared their own settings they were `ued:` keys: an old file, an old --set and an old run's
    # config.yaml still load, each value moved to every method that declares it, problems named by the key written.
    from envgen_jax.config_io import dump_yaml
    from envgen_jax.run_config import load_run_config
    from envgen_jax.schema import ConfigError
    old = tmp_path / "old.yaml"
    old.write_text("method: sfl\nued:\n  sfl_pool: 8\n  sfl_keep: 4\n  llm_pool: 6\n  mastered_at: 0.8\n"
                   "  capacity: 32\n")
    cfg = load_run_config(old)
    o = cfg.method_options
    assert (o.sfl.pool, o.sfl.keep, o.envgen_sfl.pool, o.plr.capacity) == (8, 4, 6, 32)
    assert o.sfl.mastered_at == o.envgen_sfl.mastered_at == o.scripted.mastered_at == 0.8
    assert cfg.bank_rows == 9
    new = tmp_path / "new.yaml"
    new.write_text(dump_yaml(cfg.to_dict()))
    assert "ued" not in cfg.to_dict() and load_run_config(new) == cfg
    # A --set of an old key goes over the file's new one, as any --set goes over the file.
    assert load_run_config(ROOT / "configs" / "crafter_sfl.yaml", ["ued.sfl_pool=32"]).method_options.sfl.pool == 32
    with pytest.raises(ConfigError) as err:
        load_run_config(old, ["ued.sfl_keep=70", "ued.refresh=1"])
    assert "ued.sfl_keep: 70 is more than ued.sfl_pool (8)" in err.value.problems
    assert any(p.startswith("ued.refresh: unknown setting; allowed: capacity,") for p in err.value.problems)
    both = tmp_path / "both.yaml"  # one setting given both ways in one place: which one is meant is unclear
    both.write_text("ued: {sfl_pool: 8}\nmethod_options: {sfl: {pool: 9}}\n")
    with pytest.raises(ConfigError, match="ued.sfl_pool: 8 differs from method_options.sfl.pool = 9; ued.sfl_pool "
                                          "is the old name of method_options.sfl.pool, give only one"):
        load_run_config(both)
    golden = load_run_config(ROOT / "tests" / "data" / "golden" / "old_sfl_run" / "config.yaml")
    assert (golden.method_options.sfl.pool, golden.method_options.sfl.keep, golden.method_options.sfl.rollout_steps) \
        == (4, 2, 64)
