"""The EnvGen loop end to end on CPU: outputs, baselines, the LLM step in the loop, kill -9 and resume."""

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from envgen_jax.envs.crafter import CrafterConfig
from envgen_jax.llm.testing import FakeOpenAIServer, ScriptedClient, auto_reply, completion_body
from envgen_jax.methods import get as get_method
from envgen_jax.methods.random import random_config
from envgen_jax.run.loop import EnvGenRun
from envgen_jax.run.plan import build_plan
from envgen_jax.run_config import METHODS, load_run_config
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.metrics import crafter_score
from tests import golden
from tests.trainer_configs import tiny_run

ROOT = Path(__file__).resolve().parent.parent
NO_DESIGN = ("ppo", "plr", "sfl")  # methods without a design step
# The golden runs' tiny shapes (tests/golden.py), with the pictures and TensorBoard files these tests look at.
TINY = tiny_run(quiet=["output.progress=false"])


@pytest.fixture(scope="module")
def envgen_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("envgen_run")
    # llm.history "summary": the feedback shows what the agent unlocked inside each earlier environment (checked below)
    cfg = load_run_config(ROOT / "configs" / "smoke.yaml", TINY + ["llm.backend=openai", "llm.model=fake",
                                                                   "llm.history=summary"])
    client = ScriptedClient(default=auto_reply(CrafterConfig))
    report = EnvGenRun(cfg, out, llm_client=client).run()
    return out, report, client


def test_run_directory_has_every_output(envgen_run):
    out, report, client = envgen_run
    for name in ["config.yaml", "llm_transcript.jsonl", "environments/cycle_1.json", "environments/cycle_1.png",
                 "environments/cycle_2.json", "metrics.jsonl", "learning_curve.png", "success_by_cycle.png",
                 "report.md", "report.json"]:
        assert (out / name).is_file(), name
    assert any((out / "tb").iterdir())
    for key in ["crafter_score", "reward", "achievements", "seeds", "llm_calls", "env_steps", "wall_seconds"]:
        assert key in report
    assert report["llm_calls"] == 2 == len(client.calls)
    assert report["seeds"] == 2 and len(report["episodes_per_seed"]) == 2
    # 2 cycles x (256 + 256) + 512 steps, each phase rounded up to whole 128-step updates.
    assert report["env_steps"] == 2 * (256 + 256) + 512
    assert "| this run: envgen | 2 |" in (out / "report.md").read_text()
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == report["env_steps"] // 128
    for record in map(json.loads, lines):
        stale, episodes = record["stale_resets_per_seed"], record["episodes_per_seed"]
        assert len(stale) == 2 and all(0 <= a <= b for a, b in zip(stale, episodes))
    designs = json.loads((out / "environments" / "cycle_2.json").read_text())["environments"]
    assert len(designs) == 2 and all(CrafterConfig.from_dict(d["config"]) for d in designs)


def test_feedback_reaches_the_llm(envgen_run):
    out, report, client = envgen_run
    second = client.calls[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]  # the same conversation continues
    feedback = second[-1]["content"]
    first_eval = report["cycle_evaluations"][0]
    from envgen_jax.llm.prompts import _pct
    for name in ("collect_wood", "place_table", "collect_diamond"):
        mean, std = (100 * (first_eval[k][name] or 0.0) for k in ("success_mean", "success_std"))
        assert f"{name}: {_pct(mean)}% +/- {_pct(std)}%" in feedback  # the numbers the evaluation measured
    # The earlier environments in words, each with what the agent unlocked inside it in cycle 1 (the run's own
    # per-environment measurement, report.json "environment_learning").
    inside = report["environment_learning"][0]["environments"]
    for i, env in enumerate(inside):
        line = feedback.split(f"Environment {i + 1} (tried):")[1].split("\n")[0]
        rates = [(v, k) for k, v in env["success"].items() if v is not None]
        if not rates:
            assert "No episode finished in it" in line
        elif max(rates)[0] >= 1:
            assert f"{max(rates)[1]} {_pct(max(rates)[0])}%" in line
    # How the design of cycle 2 answered that feedback: the weakest quarter, and what the new design serves.
    (adapt,) = report["adaptation"]
    assert adapt["cycle"] == 1 and len(adapt["designers"][0]["weakest"]) == 6  # 22 achievements / 4, rounded up
    assert "## How each design answered its feedback" in (out / "report.md").read_text()


def test_score_is_the_crafter_score_of_pooled_rates(envgen_run):
    out, report, _ = envgen_run
    from envgen_jax.run.loop import latest_checkpoint
    from envgen_jax.trainer.checkpoint import load_metadata
    scored = load_metadata(latest_checkpoint(out))["loop"]["scored"]  # summed counts of the final phase, per seed
    counts, offered = np.asarray(scored["achievement_counts"]), np.asarray(scored["available_counts"])
    per_seed = [crafter_score(counts[s] / offered[s]) for s in range(2)]
    assert report["score_per_seed"] == pytest.approx(per_seed)
    assert report["crafter_score"] == pytest.approx(np.mean(per_seed))
    assert report["crafter_score_std"] == pytest.approx(np.std(per_seed))
    assert report["episodes_per_seed"] == np.asarray(scored["episodes"]).tolist()
    returns = np.asarray(scored["return_sum"]) / np.asarray(scored["episodes"])
    assert report["reward"] == pytest.approx(returns.mean())


def test_report_shows_learning_inside_each_llm_environment(envgen_run):
    out, report, _ = envgen_run
    learning = report["environment_learning"]
    assert [e["cycle"] for e in learning] == [0, 1] and report["llm_seconds"] > 0
    chunks = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    for entry, design in zip(learning, report["environments"]):
        envs = entry["environments"]
        assert [e["purpose"] for e in envs] == design["designers"][0]["purposes"] and entry["phase"] == "llm"
        assert all(set(e["success"]) == set(report["achievements"]) for e in envs)
        # Every episode that ended in the cycle's LLM phase is counted in exactly one LLM environment.
        in_phase = np.sum([c["episodes_per_seed"] for c in chunks if c["cycle"] == entry["cycle"]
                           and c["phase"] == "llm"], axis=0)
        assert np.sum([e["episodes_per_seed"] for e in envs], axis=0).tolist() == in_phase.tolist()
    assert "## Learning inside each LLM environment" in (out / "report.md").read_text()
    # Unlock times: an achievement some scored episode of seed s unlocked was first unlocked by then (at a chunk's
    # end), and the step is one at which a chunk ended.
    from envgen_jax.run.loop import latest_checkpoint
    from envgen_jax.trainer.checkpoint import load_metadata
    scored = np.asarray(load_metadata(latest_checkpoint(out))["loop"]["scored"]["achievement_counts"])
    chunk_ends = {c["env_steps"] for c in chunks}
    for a, name in enumerate(report["achievements"]):
        for s, step in enumerate(report["first_unlock_steps"][name]):
            assert step is None or step in chunk_ends
            if scored[s, a] > 0:
                assert step is not None and step <= report["env_steps"]


def test_a_checkpoint_from_before_the_new_loop_fields_still_resumes(envgen_run, tmp_path):
    from envgen_jax.run.loop import latest_checkpoint
    out, report, _ = envgen_run
    shutil.copytree(out, tmp_path / "run")
    meta_path = latest_checkpoint(tmp_path / "run") / "metadata" / "metadata"  # orbax JsonSave's file
    meta = json.loads(meta_path.read_text())
    for field in ("env_learning", "llm_seconds"):
        del meta["loop"][field]
    meta_path.write_text(json.dumps(meta))
    (tmp_path / "run" / "report.json").unlink()
    resumed = EnvGenRun.resume(tmp_path / "run").run()  # the plan is done: only the report
    assert resumed["score_per_seed"] == report["score_per_seed"]
    assert resumed["environment_learning"] == [] and resumed["llm_seconds"] == 0.0


def test_scripted_runs_through_the_loop_on_its_own_feedback(tmp_path):
    """method: scripted (no LLM): cycle 2 targets the weakest achievements of cycle 1's evaluation, one environment
    each, and environments/cycle_2.json says which."""
    from envgen_jax.methods import scripted
    cfg = load_run_config(ROOT / "configs" / "smoke.yaml", TINY + ["method=scripted"])
    report = EnvGenRun(cfg, tmp_path).run()
    assert report["llm_calls"] == 0 and not (tmp_path / "llm_transcript.jsonl").exists()
    first_eval = report["cycle_evaluations"][0]
    feedback = {name: (100 * (first_eval["success_mean"][name] or 0.0), 100 * (first_eval["success_std"][name] or 0.0))
                for name in first_eval["success_mean"]}
    second = json.loads((tmp_path / "environments" / "cycle_2.json").read_text())["environments"]
    expected = scripted.targets("crafter", feedback, len(second), cfg.method_options.scripted.mastered_at)
    assert [e["targets"] for e in second] == [[target] for target, _ in expected]
    first = json.loads((tmp_path / "environments" / "cycle_1.json").read_text())["environments"]
    assert [e["targets"] for e in first] == [[t] for t in scripted.tech_tree_order("crafter")[:len(first)]]


def test_plans_of_every_method():
    for method in METHODS:
        cfg = load_run_config(None, TINY + [f"method={method}"])
        plan = build_plan(cfg, get_method(method))
        train_steps = sum(p.updates for p in plan if p.kind == "train") * cfg.steps_per_update
        assert train_steps == 2 * (256 + 256) + 512, method  # every baseline: the same steps
        designs = [p for p in plan if p.kind == "design"]
        assert len(designs) == (0 if method in NO_DESIGN else 2), method
        assert plan[-2].where == "final" and plan[-1].kind == "evaluate"
    cfg = load_run_config(None, TINY + ["schedule.mixing=mixed"])
    mixed = build_plan(cfg, get_method(cfg.method))
    assert [p.where for p in mixed if p.kind == "train"] == ["mixed", "mixed", "final"]


def test_random_configs_are_valid_and_varied():
    rng = np.random.default_rng(0)
    configs = [random_config(CrafterConfig, rng) for _ in range(20)]
    assert all(CrafterConfig.from_dict(c.to_dict()) == c for c in configs)
    assert len({c.target_biome for c in configs}) > 1 and len({c.wood for c in configs}) > 1


def test_bad_run_config_and_overrides_are_clear():
    with pytest.raises(ConfigError) as err:
        load_run_config(ROOT / "configs" / "smoke.yaml",
                        ["ppo.num_env=3", "schedule.mixing=both", "seeds=two", "method=magic", "ppo.gamma=high"])
    text = str(err.value)
    assert "ppo.num_env: unknown setting" in text
    assert "schedule.mixing: 'both' is not one of 'sequential', 'mixed'" in text
    assert "seeds: expected an integer, got 'two'" in text
    assert "ppo.gamma: expected a number, got 'high'" in text
    assert "method: 'magic' is not one of" in text  # the top level's own checks run although sections failed
    with pytest.raises(ConfigError, match="expected KEY.PATH=VALUE"):
        load_run_config(None, ["seeds"])


def _cli(args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "envgen_jax.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kw)


def test_train_cli_rejects_bad_input(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: envgen\nschedule:\n  cycles: -1\n  colour: red\n")
    result = _cli(["train", "--config", str(bad), "--out", str(tmp_path / "run")])
    assert result.returncode == 1
    assert "schedule.colour: unknown setting" in result.stderr and "Traceback" not in result.stderr
    result = _cli(["train", "--config", str(ROOT / "configs" / "smoke.yaml"), "--set", "seeds=2", "method=magic"])
    assert result.returncode == 1 and "method: 'magic' is not one of" in result.stderr
    result = _cli(["train", "--resume", str(tmp_path / "nothing")])
    assert result.returncode == 1 and "holds no run" in result.stderr


class LLMStandIn:
    """An OpenAI-compatible server whose answer depends only on the conversation (golden.responder's designs of the
    game whose configuration class is `config_cls`, so runs can be compared), and that can hang on the feedback
    request, so a test can kill the trainer in the middle of its LLM step."""

    def __init__(self, config_cls):
        self.config_cls = config_cls
        self.hang_on_feedback = False
        self.hanging = threading.Event()

    def respond(self, request):
        turns = sum(m["role"] == "user" for m in request["messages"])
        if turns > 1 and self.hang_on_feedback:
            self.hanging.set()
            time.sleep(60)
        return 200, completion_body(golden.responder(request, self.config_cls)), {}


def _wait_for(predicate, timeout, proc):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before the kill point: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the kill point")


@pytest.mark.slow
def test_kill_9_anywhere_then_resume_gives_the_same_report(toy, tmp_path):
    """`envgen-jax train` killed with SIGKILL mid-training, then (resumed) again mid-LLM-request, then resumed: the
    report and metrics of the uninterrupted run. On the toy game (its package given to the CLI's process, as
    tests/test_multiprocess.py does): a kill and a resume are the loop's business, not the game's (Crafter's runs
    resume in test_golden.py and test_ued.py); a checkpoint after every chunk keeps chunks long enough to kill."""
    from tests.toy import CHILD
    stand_in = LLMStandIn(toy.config_cls)
    settings = TINY + golden.LLM + ["env=toy", "output.checkpoint_minutes=0"]
    # The uninterrupted run, made in this process with an LLM that answers as the stand-in does.
    whole = load_run_config(ROOT / "configs" / "smoke.yaml", settings)
    respond = functools.partial(golden.responder, config_cls=toy.config_cls)
    EnvGenRun(whole, tmp_path / "whole", llm_client=ScriptedClient(default=respond)).run()
    with FakeOpenAIServer(stand_in.respond) as server:
        args = ["--config", str(ROOT / "configs" / "smoke.yaml"),
                *sum([["--set", s] for s in [*settings, f"llm.base_url={server.base_url}"]], [])]
        train = [sys.executable, "-c", CHILD, str(tmp_path / "packages"), "train"]
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        run = tmp_path / "killed"
        # Kill 1: in the middle of training (some chunks after the first checkpoint).
        proc = subprocess.Popen([*train, *args, "--out", str(run)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        metrics = run / "metrics.jsonl"
        _wait_for(lambda: metrics.exists() and len(metrics.read_text().splitlines()) >= 3, 600, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not (run / "report.json").exists()

        # Kill 2: during the LLM step of cycle 2 (the request is in flight).
        stand_in.hang_on_feedback = True
        proc = subprocess.Popen([*train, "--resume", str(run)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        _wait_for(stand_in.hanging.is_set, 600, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stand_in.hang_on_feedback = False

        resumed = subprocess.run([*train, "--resume", str(run)], cwd=ROOT, env=env, capture_output=True, text=True,
                                 timeout=900)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "resuming" in resumed.stdout

    a = json.loads((tmp_path / "whole" / "report.json").read_text())
    b = json.loads((run / "report.json").read_text())
    for report in (a, b):  # time taken differs
        report.pop("wall_seconds")
        report.pop("llm_seconds")
        report.pop("compile")
        report.pop("phases")
    assert a == b and a["llm_calls"] == 2
    lines_a = (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()
    lines_b = (run / "metrics.jsonl").read_text().splitlines()
    strip = lambda line: {k: v for k, v in json.loads(line).items() if k not in ("steps_per_second", "seconds")}  # noqa: E731
    assert [strip(x) for x in lines_a] == [strip(x) for x in lines_b]


def test_heist_runs_through_the_same_loop(tmp_path):
    from envgen_jax.envs.heist import HeistConfig
    cfg = load_run_config(ROOT / "configs" / "heist_envgen.yaml",
                          TINY + ["game_options.mode=easy", "observation=symbolic", "ppo.network=mlp", "llm.backend=openai",
                                  "llm.model=fake", "schedule.original_env_steps=0"])
    client = ScriptedClient(default=auto_reply(HeistConfig))
    run = EnvGenRun(cfg, tmp_path, llm_client=client)
    report = run.run()
    assert report["env"] == "heist" and report["llm_calls"] == 2 and report["crafter_score"] is None
    assert set(report["achievements"]) == {"collect_key_blue", "collect_key_green", "collect_key_red",
                                           "open_lock_blue", "open_lock_green", "open_lock_red", "collect_gem"}
    for name in ["environments/cycle_1.png", "report.md", "success_by_cycle.png", "learning_curve.png"]:
        assert (tmp_path / name).is_file(), name
    assert "Heist score (ours" in report["score_definition"]
    assert run.env.world_dim == 9  # the game's option: easy mode
    assert load_run_config(tmp_path / "config.yaml") == cfg  # written as game_options: {mode: easy}, read back


def test_per_seed_designers_and_mixed_slots(toy, tmp_path):
    cfg = load_run_config(ROOT / "configs" / "smoke.yaml",
                          TINY + ["env=toy", "schedule.feedback=per_seed", "schedule.mixing=mixed",
                                  "schedule.original_share=0.5", "llm.backend=openai", "llm.model=fake",
                                  "output.pictures=false", "output.tensorboard=false"])
    client = ScriptedClient(default=auto_reply(toy.config_cls))
    run = EnvGenRun(cfg, tmp_path / "run", llm_client=client)
    report = run.run()
    assert report["llm_calls"] == 4 == len(client.calls)  # 2 designers x 2 cycles
    assert all(len(d["designers"]) == 2 for d in report["environments"])
    bank, rows = run.method.bank_and_rows("mixed")
    # Seed s runs its own designer's rows 1 + 2s and 2 + 2s on the half of its slots that are not the original game.
    assert rows.shape == (2, 8) and (rows[:, :4] == 0).all() and set(rows[0, 4:]) == {1, 2} and set(rows[1, 4:]) == {3, 4}


@pytest.mark.llm
def test_smoke_config_with_the_offline_llm(tmp_path):
    """configs/smoke.yaml as a user runs it: the small offline model through llama.cpp's server, on CPU."""
    from envgen_jax.llm.local_server import find_gguf, runtime_missing
    if runtime_missing():
        pytest.skip("xllamacpp is not installed (make install)")
    try:
        find_gguf(model="smollm2-135m")
    except Exception as e:  # noqa: BLE001 -- the model package is an install step of its own
        pytest.skip(f"offline model not installed: {e}")
    result = _cli(["train", "--config", str(ROOT / "configs" / "smoke.yaml"), "--out", str(tmp_path / "smoke"),
                   "--set", "output.progress=false"], env={"OMP_WAIT_POLICY": "PASSIVE"}, timeout=1500)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "smoke" / "report.json").read_text())
    assert report["llm_calls"] == 2 and report["score"] is not None
    transcript = [json.loads(line) for line in (tmp_path / "smoke" / "llm_transcript.jsonl").read_text().splitlines()]
    assert sum(1 for e in transcript if e.get("event") == "design" and e.get("ok")) == 2


RUN_CONFIGS = sorted(p.name for p in (ROOT / "configs").glob("*.yaml"))


@pytest.mark.parametrize("name", RUN_CONFIGS)
def test_every_bundled_run_config_loads_and_plans(name):
    cfg = load_run_config(ROOT / "configs" / name, [])
    plan = build_plan(cfg, get_method(cfg.method))
    assert plan[-1].kind == "evaluate" and any(p.where == "final" for p in plan)
    designs = sum(p.kind == "design" for p in plan)
    assert designs == (0 if cfg.method in NO_DESIGN else cfg.schedule.cycles)  # random: designs without an LLM


def test_crafter_methods_compare_at_equal_steps():
    """The paper comparisons (configs/crafter_<method>.yaml): same env steps, seeds and agent, one setting apart."""
    steps = {}
    for name in RUN_CONFIGS:
        if name.startswith("crafter_") and "paper_agent" not in name:
            cfg = load_run_config(ROOT / "configs" / name, [])
            plan = build_plan(cfg, get_method(cfg.method))
            steps[name] = (sum(p.updates for p in plan if p.kind == "train") * cfg.steps_per_update, cfg.seeds,
                           cfg.ppo)
    assert len(steps) == 10 and len(set(steps.values())) == 1, steps  # with plr, sfl, envgen_sfl and scripted


def test_a_sweep_section_trains_every_combination_in_one_run(toy, tmp_path):
    """`sweep: {lr: [...]}` x seeds: one vmapped run whose agents carry their own traced learning rate, reported
    per combination; bad sweep values are named by their path, and a study refuses a sweep."""
    from envgen_jax.study import resolve
    from envgen_jax.trainer.checkpoint import newest_checkpoint
    cfg = load_run_config(ROOT / "configs" / "smoke.yaml",
                          TINY + ["env=toy", "method=ppo", "sweep.lr=[0.001, 0.003]", "sweep.ent_coef=[0.0, 0.01]",
                                  "output.pictures=false", "output.tensorboard=false"])
    assert cfg.num_agents == 8 and cfg.agent_seeds == [0, 1] * 4
    assert cfg.agent_hparams == {"lr": [0.001] * 4 + [0.003] * 4, "ent_coef": [0.0, 0.0, 0.01, 0.01] * 2}
    run = EnvGenRun(cfg, tmp_path / "run")
    report = run.run()
    assert [p["settings"] for p in report["sweep"]] == [{"lr": 0.001, "ent_coef": 0.0}, {"lr": 0.001, "ent_coef": 0.01},
                                                        {"lr": 0.003, "ent_coef": 0.0}, {"lr": 0.003, "ent_coef": 0.01}]
    assert report["sweep"][3]["agents"] == ["lr 0.003, ent_coef 0.01, seed 0", "lr 0.003, ent_coef 0.01, seed 1"]
    assert len(report["episodes_per_seed"]) == 8 and "sweep combinations" in (tmp_path / "run" / "report.md").read_text()
    bank, rows = run.method.bank_and_rows("final")
    ts = run.trainer.restore(newest_checkpoint(tmp_path / "run" / "checkpoints"), bank, rows, seeds=cfg.agent_seeds)
    np.testing.assert_allclose(ts.hparams.lr, cfg.agent_hparams["lr"], rtol=1e-6)
    np.testing.assert_allclose(ts.hparams.ent_coef, cfg.agent_hparams["ent_coef"])
    with pytest.raises(ConfigError, match=r"sweep.gamma: 1.5 is not in \[0, 1\]"):
        load_run_config(None, ["sweep.gamma=[0.9, 1.5]"])
    with pytest.raises(ConfigError) as e:
        load_run_config(None, ["sweep.lr=[x]", "sweep.momentum=[1]"])
    text = str(e.value)
    assert "sweep.lr[0]: expected a number" in text and "sweep.momentum: unknown setting; allowed: lr, gamma, gae_lambda, clip_eps, ent_coef, vf_coef" in text
    with pytest.raises(ConfigError, match="a study compares methods at one PPO setting"):
        resolve(ROOT / "configs" / "smoke.yaml", ["ppo"], overrides=["sweep.lr=[0.001, 0.002]"])


def test_an_older_name_still_reads_into_todays(tmp_path):
    """`eval.num_envs` (a name `ppo.num_envs` also had) is `eval.envs_per_agent` today: a file written with it reads,
    a problem is named by the key written, a --set of today's key wins, and one file giving both must agree."""
    # (as every old key, it is moved after `extends:` is resolved: over a base that gives the new key, it conflicts)
    (tmp_path / "old.yaml").write_text("eval: {num_envs: 6}\n")
    assert load_run_config(tmp_path / "old.yaml").eval.envs_per_agent == 6
    assert load_run_config(tmp_path / "old.yaml", ["eval.num_envs=3"]).eval.envs_per_agent == 3
    with pytest.raises(ConfigError) as e:
        load_run_config(None, ["eval.num_envs=0"])
    assert e.value.problems == ["eval.num_envs: 0 is below the minimum 1"]
    assert load_run_config(tmp_path / "old.yaml", ["eval.envs_per_agent=5"]).eval.envs_per_agent == 5  # --set wins
    (tmp_path / "both.yaml").write_text("eval: {num_envs: 6, envs_per_agent: 5}\n")
    with pytest.raises(ConfigError, match="eval.num_envs: 6 differs from eval.envs_per_agent = 5"):
        load_run_config(tmp_path / "both.yaml")


def test_configs_extend_a_base_section_by_section(tmp_path):
    """`extends:` reads the base first and lays the file over it key by key; bad chains are named."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "agent.yaml").write_text("seeds: 3\nppo: {lr: 0.001, width: 32, map_channels: [8, 8]}\n")
    (tmp_path / "mid.yaml").write_text("extends: base/agent.yaml\nmethod: ppo\nppo: {width: 16}\n")
    (tmp_path / "run.yaml").write_text("extends: mid.yaml\nppo: {map_channels: [4]}\n")
    cfg = load_run_config(tmp_path / "run.yaml", ["ppo.depth=1"])
    mlp = cfg.network.mlp  # the older flat keys (ppo.width, ...) read into their sections
    assert (cfg.seeds, cfg.method, cfg.ppo.lr, mlp.width, mlp.depth) == (3, "ppo", 0.001, 16, 1)
    assert cfg.network.map.channels == (4,)  # a list replaces, it does not merge
    (tmp_path / "loop_a.yaml").write_text("extends: loop_b.yaml\n")
    (tmp_path / "loop_b.yaml").write_text("extends: loop_a.yaml\n")
    (tmp_path / "missing.yaml").write_text("extends: base/nothing.yaml\n")
    (tmp_path / "bad.yaml").write_text("extends: [a.yaml]\n")
    for name, message in [("loop_a.yaml", "extends: 'loop_a.yaml' makes a loop"),
                          ("missing.yaml", "extends: 'base/nothing.yaml': no such file"),
                          ("bad.yaml", "extends: expected the path of a run configuration file, got ['a.yaml']")]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_run_config(tmp_path / name)
    # Every bundled Crafter method config is the base plus its method's own settings.
    base = load_run_config(ROOT / "configs" / "base" / "crafter.yaml")
    for name in RUN_CONFIGS:
        if name.startswith("crafter_") and "paper_agent" not in name:
            assert load_run_config(ROOT / "configs" / name).trainer_ppo == base.trainer_ppo, name
