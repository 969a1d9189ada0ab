"""A fused study (issue 61): methods x seeds on one agent axis, one compiled chunk. Agent (method m, seed s) of a
fused run equals the run of m alone with seed s: the same metrics, evaluations, designs and final parameters, bit
for bit on CPU; a kill and the same command again gives the uninterrupted result; a method that fails loses no other
method's results. On the toy game (tests/toy.py): the fused machinery is the game's business nowhere, and the toy's
programs compile in seconds where Crafter's fused chunk and evaluation took over a minute."""

import functools
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from envgen_jax.llm.testing import ScriptedClient
from envgen_jax.run.loop import EnvGenRun
from envgen_jax.study import resolve
from envgen_jax.study.groups import PAPER_LOOP, groups, program_of
from envgen_jax.trainer.checkpoint import newest_checkpoint
from tests import golden

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("ppo", "envgen", "random", "scripted")
# The golden runs' tiny shapes (2 seeds, 2 cycles).
SETTINGS = golden.TINY + golden.LLM
TIMES = ("seconds", "steps_per_second", "wall_seconds", "compile", "phases", "llm_seconds", "sessions")


def _settings():
    return resolve(ROOT / "configs" / "smoke.yaml", METHODS, overrides=[*SETTINGS, "env=toy"])


def _respond(game):
    """An LLM whose designs (of `game`) depend only on the conversation (golden.responder), so that a study killed
    and resumed through the CLI (the stand-in server answers alike) can be compared with the fused run made here."""
    return functools.partial(golden.responder, config_cls=game.config_cls)


def _without_times(x):
    return golden.without_keys(x, TIMES)


def _outputs(run_dir: Path) -> dict:
    """What a run wrote that must not depend on how it was scheduled (times left out)."""
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    designs = sorted((run_dir / "environments").glob("*.json")) if (run_dir / "environments").exists() else []
    return {"metrics": _without_times(lines), "report": _without_times(json.loads((run_dir / "report.json").read_text())),
            "designs": {p.name: p.read_text() for p in designs}}


def _final_params(run: EnvGenRun, run_dir: Path):
    member = run.members[0]
    bank, rows = member.method.bank_and_rows("final")
    ts = run.trainer.restore(newest_checkpoint(run_dir / "checkpoints"), bank, rows, seeds=member.cfg.agent_seeds)
    return jax.device_get(run.trainer.agent_state(ts).params)


@pytest.fixture(scope="module")
def fused_and_alone(toy_module, tmp_path_factory):
    root = tmp_path_factory.mktemp("fused")
    settings = _settings()
    client = lambda: ScriptedClient(default=_respond(toy_module))  # noqa: E731
    fused = EnvGenRun.group([(settings.run_config(m), root / "fused" / m) for m in METHODS], llm_client=client())
    reports = fused.run()
    alone = {}
    for m in METHODS:
        run = EnvGenRun(settings.run_config(m), root / "alone" / m, llm_client=client())
        run.run()
        alone[m] = run
    return root, settings, fused, reports, alone


def test_the_paper_loop_is_one_program_and_level_replay_its_own():
    settings = resolve(ROOT / "configs" / "smoke.yaml", ["ppo", "envgen", "plr", "random", "sfl", "envgen_sfl"],
                       overrides=SETTINGS)
    assert program_of("ppo", settings.run_config("ppo"))[0] == PAPER_LOOP
    assert groups(settings, "fused") == [["ppo", "envgen", "random"], ["plr"], ["sfl"], ["envgen_sfl"]]
    assert groups(settings, "sequential") == [[m] for m in settings.methods]


# What the driver does around a chunk of one program: a method of the paper loop's family leaves all of it to the base
# class, so that its runs differ from the family's others in data only.
_PROGRAM_HOOKS = ("bank_and_rows", "before_phase", "before_chunk", "chunk_record", "after_chunk", "after_phase")


def test_the_methods_of_the_paper_loop_keep_to_its_program():
    """Groups follow from what each method declares (`Method.PROGRAM`); a method that declares the paper loop
    overrides none of the hooks around its chunks, has no level sampler and draws no rows on the device."""
    from envgen_jax import methods
    from envgen_jax.methods.base import Method

    settings = resolve(ROOT / "configs" / "smoke.yaml", list(methods.METHODS), overrides=SETTINGS)
    family = [name for name, cls in methods.REGISTRY.items() if cls.PROGRAM == PAPER_LOOP]
    assert set(family) == {"envgen", "ppo", "fixed", "easy_to_hard", "adversarial", "random", "scripted"}
    for name in family:
        cls, cfg = methods.get(name), settings.run_config(name)
        assert [h for h in _PROGRAM_HOOKS if getattr(cls, h) is not getattr(Method, h)] == [], name
        assert cls.level_sampler(cfg) is None, name
        assert all(cls.sampled_rows(cfg, where) is None for where in ("llm", "original", "mixed", "final")), name


def _losses(metrics: list[dict]) -> np.ndarray:
    return np.array([[line["losses"][k] for k in sorted(line["losses"])] for line in metrics], np.float64)


# With the seeds vmapped (execution.seed_axis: vmap, the default), XLA's CPU kernels for the batched matrix products
# and reductions of the PPO update group their float32 sums differently at 8 agents than at 2, so the parameters and
# losses differ in the last bits: measured after the golden shapes' 12 updates, at most 6e-8 in a parameter and in a
# loss on the toy game (on Crafter, where this test ran before: 3.7e-7 and 1.2e-6). Everything the agents did
# (episodes, returns, unlocks, every evaluation, the score, the designs) is identical, since no sampled action flipped.
# Bounds with room: a real difference (another key, another row) changes these by orders of magnitude more, and the
# discrete outputs with them.
PARAMETER_BOUND, LOSS_BOUND = 1e-5, 1e-4


def test_fused_agents_equal_the_runs_alone(fused_and_alone):
    root, settings, fused, reports, alone = fused_and_alone
    assert len(reports) == len(METHODS) and fused.failures.errors == {}
    assert fused.trainer is alone["ppo"].trainer  # one trainer; the fused chunk is its program at 8 agents
    largest = {}
    for m in METHODS:
        a, b = _outputs(root / "fused" / m), _outputs(root / "alone" / m)
        assert a["report"] == b["report"], m  # every evaluation, the scored phase, the score: bit for bit
        assert a["designs"] == b["designs"], m
        no_losses = lambda lines: [{k: v for k, v in line.items() if k != "losses"} for line in lines]  # noqa: E731
        assert no_losses(a["metrics"]) == no_losses(b["metrics"]), m  # episodes, returns, unlocks per chunk
        assert len(a["report"]["cycle_evaluations"]) == settings.run_config(m).schedule.cycles
        losses = float(np.max(np.abs(_losses(a["metrics"]) - _losses(b["metrics"]))))
        params = max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
                     for x, y in zip(jax.tree.leaves(_final_params(fused, root / "fused" / m)),
                                     jax.tree.leaves(_final_params(alone[m], root / "alone" / m))))
        largest[m] = (params, losses)
        assert params <= PARAMETER_BOUND and losses <= LOSS_BOUND, f"{m}: parameters {params}, losses {losses}"
    print(f"largest differences, fused vs alone (parameter, loss): {largest}")
    # The methods did differ (else equal outputs would prove little): random's designs are not envgen's.
    assert _outputs(root / "fused" / "random")["designs"] != _outputs(root / "fused" / "envgen")["designs"]
    assert _outputs(root / "fused" / "ppo")["metrics"] != _outputs(root / "fused" / "random")["metrics"]


def test_a_failed_method_loses_no_other_and_is_named(fused_and_alone, toy_module, tmp_path, capsys):
    """envgen's second design step raises: the other methods finish exactly as in the fused run without the failure,
    the study names envgen, and the same command then retries envgen alone from its checkpoint."""
    from envgen_jax.study import run_study

    root, settings, *_ = fused_and_alone
    out = tmp_path / "study"
    failing = ScriptedClient([_respond(toy_module), RuntimeError("the LLM server is down")])
    assert run_study(settings, out, llm_client=failing, grouping="fused") == 2
    err = capsys.readouterr().err
    assert "error: envgen failed" in err, err
    study = json.loads((out / "study.json").read_text())
    assert {m: r["status"] for m, r in study["methods"].items()} == {
        "ppo": "finished", "envgen": "failed", "random": "finished", "scripted": "finished"}
    for m in ("ppo", "random", "scripted"):
        assert _outputs(out / m) == _outputs(root / "fused" / m), m
    # The same command again: envgen alone, resumed from its last checkpoint, ends as in the fused run (its losses
    # as test_fused_agents_equal_the_runs_alone bounds them: envgen now trains at 2 agents, not 8).
    assert run_study(settings, out, llm_client=ScriptedClient(default=_respond(toy_module)), grouping="fused") == 0
    a, b = _outputs(out / "envgen"), _outputs(root / "fused" / "envgen")
    assert a["report"] == b["report"] and a["designs"] == b["designs"]
    assert np.max(np.abs(_losses(a["metrics"]) - _losses(b["metrics"]))) <= LOSS_BOUND
    # study.md says how the runs were laid out (each run's sessions.jsonl records its fused group)
    assert ("seeds 0 to 1: ppo, envgen, random and scripted trained fused (methods x seeds as the agents of one "
            "compiled program); envgen finished in a run of its own;") in (out / "study.md").read_text()


def test_a_fused_study_gives_the_same_results_without_program_reuse(fused_and_alone, toy_module, tmp_path,
                                                                    monkeypatch):
    """ENVGEN_JAX_REUSE_PROGRAMS=0 (no trainer kept for the next run, `trainer.reuse`): the group's trainer is still
    made once and handed to every member (it was looked up in that cache, and every method failed with "fused runs
    must share one trainer"), and the study's runs are those of the fused run made with reuse on."""
    from envgen_jax.study import run_study

    root, settings, fused, *_ = fused_and_alone
    monkeypatch.setenv("ENVGEN_JAX_REUSE_PROGRAMS", "0")
    out = tmp_path / "study"
    assert run_study(settings, out, llm_client=ScriptedClient(default=_respond(toy_module)), grouping="fused") == 0
    for m in METHODS:
        assert _outputs(out / m) == _outputs(root / "fused" / m), m
    sessions = [json.loads(line) for line in (out / "ppo" / "sessions.jsonl").read_text().splitlines()]
    assert sessions[-1]["fused_with"] == list(METHODS)


@pytest.mark.slow
def test_kill_9_in_a_fused_study_then_the_same_command_gives_the_same_results(toy, tmp_path):
    """`envgen-jax study --grouping fused` killed mid-run, then the same command: every method's outputs are those of
    the uninterrupted fused run (made here with the same settings and designs). On the toy game (its package given
    to the CLI's process as tests/test_multiprocess.py does), whose programs compile in seconds; a checkpoint after
    every chunk keeps each chunk long enough to be killed in the middle of the run."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from envgen_jax.llm.testing import FakeOpenAIServer, completion_body
    from tests.toy import CHILD

    respond = _respond(toy)  # the stand-in server's designs
    sets = [*SETTINGS, "env=toy", "output.checkpoint_minutes=0"]
    settings = resolve(ROOT / "configs" / "smoke.yaml", METHODS, overrides=sets)
    whole = tmp_path / "whole"
    EnvGenRun.group([(settings.run_config(m), whole / m) for m in METHODS],
                    llm_client=ScriptedClient(default=respond)).run()
    with FakeOpenAIServer(lambda request: (200, completion_body(respond(request)), {})) as server:
        args = ["study", "--config", str(ROOT / "configs" / "smoke.yaml"), "--methods", ",".join(METHODS),
                "--grouping", "fused", *sum([["--set", s] for s in [*sets, f"llm.base_url={server.base_url}"]], [])]
        cmd = [sys.executable, "-c", CHILD, str(tmp_path / "packages"), *args]
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        killed = tmp_path / "killed"
        proc = subprocess.Popen([*cmd, "--out", str(killed)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        metrics = killed / METHODS[-1] / "metrics.jsonl"  # the last member: every member has trained that far
        deadline = time.monotonic() + 900
        while not (metrics.exists() and len(metrics.read_text().splitlines()) >= 5):
            assert proc.poll() is None and time.monotonic() < deadline, "the study ended before the kill point"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not (killed / "study.json").exists()
        again = subprocess.run([*cmd, "--out", str(killed)], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=1200)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "resuming" in again.stdout
    for m in METHODS:
        assert _outputs(killed / m) == _outputs(whole / m), m
    assert _outputs(whole / "random")["designs"] != _outputs(whole / "envgen")["designs"]  # the methods differ


@pytest.mark.slow
def test_with_the_seeds_mapped_fused_equals_alone_bit_for_bit(toy, tmp_path):
    """execution.seed_axis: map runs each agent's update on its own (lax.map), the same program body at any agent
    count: there the fused agents equal the runs alone exactly, parameters and losses included. Its four programs
    (fused and alone, chunk and evaluation) compile in seconds on the toy game."""
    from envgen_jax.llm.testing import auto_reply
    settings = resolve(ROOT / "configs" / "smoke.yaml", METHODS,
                       overrides=[*SETTINGS, "env=toy", "execution.seed_axis=map"])
    client = lambda: ScriptedClient(default=auto_reply(toy.config_cls))  # noqa: E731
    fused = EnvGenRun.group([(settings.run_config(m), tmp_path / "fused" / m) for m in METHODS], llm_client=client())
    fused.run()
    for m in METHODS:
        alone = EnvGenRun(settings.run_config(m), tmp_path / "alone" / m, llm_client=client())
        alone.run()
        assert _outputs(tmp_path / "fused" / m) == _outputs(tmp_path / "alone" / m), m
        for x, y in zip(jax.tree.leaves(_final_params(fused, tmp_path / "fused" / m)),
                        jax.tree.leaves(_final_params(alone, tmp_path / "alone" / m))):
            np.testing.assert_array_equal(x, y)
    # the methods did differ on the toy game too (else equal outputs would prove little)
    assert _outputs(tmp_path / "fused" / "random")["designs"] != _outputs(tmp_path / "fused" / "envgen")["designs"]
    assert _outputs(tmp_path / "fused" / "ppo")["metrics"] != _outputs(tmp_path / "fused" / "random")["metrics"]
