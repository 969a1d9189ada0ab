"""Golden runs: tiny CPU runs whose report.json and metrics.jsonl (timing fields left out) were recorded with the code
before the reshaping (commit f3eee0f), and a run directory that code left behind mid-run.

    PYTHONPATH=. JAX_PLATFORMS=cpu python -m tests.golden write     # re-record, at commit f3eee0f only: it is the reference

The recorded files live in tests/data/golden/. `tests/test_golden.py` re-runs each case with today's code and
compares, and resumes the old run directory (`old_run/`, made by the old code, killed in cycle 2's LLM phase) to the
same report as the uninterrupted envgen case.

The level-replay and learnability methods (plr, sfl, envgen_sfl) have their own goldens, recorded at commit 24acad2,
before their procedures moved out of the loop into their methods: the runs tests/test_ued.py makes (UED_CASES), and
`old_sfl_run/`, that sfl run cut back to its third checkpoint (mid-phase, after its second selection), which must
resume to the same outputs.

    PYTHONPATH=. JAX_PLATFORMS=cpu python -m tests.golden write-ued     # at commit 24acad2 only
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.trainer_configs import tiny_run

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
OLD_RUN = GOLDEN / "old_run"
OLD_SFL_RUN = GOLDEN / "old_sfl_run"
OLD_SFL_CHECKPOINTS = 3

TINY = tiny_run()  # the recording's settings, in today's keys
LLM = ["llm.backend=openai", "llm.model=fake", "llm.max_retries=0"]
CASES = {  # name -> overrides of configs/smoke.yaml
    "random": TINY + ["method=random"],
    "ppo": TINY + ["method=ppo"],
    "envgen": TINY + LLM,
}
TIMING_REPORT = ("wall_seconds", "llm_seconds", "compile", "phases")  # where the time went differs
TIMING_METRICS = ("steps_per_second", "seconds")
KILL_AT_CHUNK = 6  # cycle 1: 2 + 2 chunks; cycle 2: LLM step, then chunk 5 of the LLM phase is the last checkpointed


def responder(request: dict, config_cls=None) -> str:
    """An LLM whose answer depends only on the conversation, so a resumed run asks and hears the same (designs of
    Crafter, or of the game whose configuration class is `config_cls`)."""
    from envgen_jax.envs.crafter import CrafterConfig
    from envgen_jax.llm.testing import asked_count, design_json, varied_configs
    turns = sum(m["role"] == "user" for m in request["messages"])
    return design_json(varied_configs(config_cls or CrafterConfig, asked_count(request, 2), offset=turns))


def client():
    from envgen_jax.llm.testing import ScriptedClient
    return ScriptedClient(default=responder)


def strip_metrics(text: str) -> list[dict]:
    lines = [{k: v for k, v in json.loads(line).items() if k not in TIMING_METRICS} for line in text.splitlines()]
    for line in lines:
        if "selection" in line:  # a learnability selection's own timing
            line["selection"] = {k: v for k, v in line["selection"].items() if k != "seconds"}
    return lines


def strip_report(report: dict) -> dict:
    out = {k: v for k, v in report.items() if k not in TIMING_REPORT}
    if "learnability_selections" in out:
        out["learnability_selections"] = [{k: v for k, v in sel.items() if k != "seconds"}
                                          for sel in out["learnability_selections"]]
    return out


def read_outputs(out: Path) -> tuple[dict, list[dict]]:
    return (strip_report(json.loads((out / "report.json").read_text())),
            strip_metrics((out / "metrics.jsonl").read_text()))


def expected(name: str) -> tuple[dict, list[dict]]:
    return (json.loads((GOLDEN / f"{name}.report.json").read_text()),
            json.loads((GOLDEN / f"{name}.metrics.json").read_text()))


def _write(out_root: Path) -> None:
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, overrides in CASES.items():
        out = out_root / name
        cfg = load_run_config(ROOT / "configs" / "smoke.yaml", overrides)
        EnvGenRun(cfg, out, llm_client=client()).run()
        report, metrics = read_outputs(out)
        (GOLDEN / f"{name}.report.json").write_text(json.dumps(report, indent=1, sort_keys=True))
        (GOLDEN / f"{name}.metrics.json").write_text(json.dumps(metrics, indent=1))
        print(name, "recorded", file=sys.stderr)

    class Killed(BaseException):
        pass

    class KilledRun(EnvGenRun):  # the old code, stopped as a kill would stop it (no clean-up, no report)
        chunks = 0

        def _record_chunk(self, *a, **k):
            KilledRun.chunks += 1
            if KilledRun.chunks == KILL_AT_CHUNK:
                raise Killed()
            return super()._record_chunk(*a, **k)

    cfg = load_run_config(ROOT / "configs" / "smoke.yaml", CASES["envgen"] + ["output.checkpoint_minutes=0"])
    shutil.rmtree(OLD_RUN, ignore_errors=True)
    try:
        KilledRun(cfg, OLD_RUN, llm_client=client()).run()
    except Killed:
        pass
    print("old run directory recorded:", sorted(p.name for p in (OLD_RUN / "checkpoints").iterdir()), file=sys.stderr)


# The PPO losses and the level buffer's statistics (PLR scores are mean value errors, replay shares sums of
# probabilities) are float32 sums, whose rounding depends on the CPU's vector width: CI's machines vary, and the plr
# golden's run with XLA held to AVX2 (XLA_FLAGS=--xla_cpu_max_isa=AVX2) differs from its AVX-512 recording in their
# last bits and nowhere else. A float32 mean of n terms moves by at most about n x 1.2e-7 of its terms' size when its
# order changes (1.5e-5 for these runs' 128-step batches): 1e-4 relative, 1e-6 absolute near zero. What the agent does
# and achieves (returns, episodes, success, scores, levels seen) must match exactly; every golden (test_golden.py,
# test_ued.py) passed so with XLA held to AVX2 on an AVX-512 CPU (2026-11-28). Why each recorded comparison of the
# suite holds on any CPU: docs/testing.md.
EXACT, FLOAT32_SUMS = dict(rel=1e-9, abs=1e-12), dict(rel=1e-4, abs=1e-6)
FLOAT32_SECTIONS = ("losses", "buffer")
# Report sections added after the first goldens were recorded (nothing the run does changes with them): left out.
ADDED_REPORT_KEYS = ("adaptation", "first_unlock_steps")
# Entries added inside a section after its recording (issue 45: duplicates within a design, in `adaptation`; issue
# 42: the KL limit's share of skipped minibatch steps, in every metrics line's `losses`; issue 73: each seed's mean
# return, in every evaluation).
ADDED_ENTRIES = ("duplicate_environments", "kl_stopped", "mean_return_per_seed")


def without_keys(value, keys):
    """`value` (JSON) with every dict entry named in `keys` left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without_keys(v, keys) for v in value]
    return value


def _without_added(value):
    return without_keys(value, ADDED_ENTRIES)


def approx_equal(a, b, tol=EXACT) -> bool:
    import pytest
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            approx_equal(a[k], b[k], FLOAT32_SUMS if k in FLOAT32_SECTIONS else tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(approx_equal(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, **tol)
    return a == b


def check(got: tuple[dict, list[dict]], want: tuple[dict, list[dict]], ignore=ADDED_REPORT_KEYS) -> None:
    """Assert that a run's (report, metrics) equal the recorded ones (losses to float32 rounding); `ignore`: report
    keys the recording predates."""
    report, metrics = got
    want_report, want_metrics = want
    report = {k: _without_added(v) for k, v in json.loads(json.dumps(report)).items() if k not in ignore}
    want_report = {k: v for k, v in want_report.items() if k not in ignore}
    diff = sorted(k for k in set(report) | set(want_report) if not approx_equal(report.get(k), want_report.get(k)))
    assert not diff, f"report.json differs in {diff}"
    assert approx_equal(_without_added(metrics), want_metrics), "metrics.jsonl differs"


def _write_ued(out_root: Path) -> None:
    from tests import test_ued
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, run in test_ued.UED_RUNS.items():
        out = out_root / name
        run(out)
        report, metrics = read_outputs(out)
        (GOLDEN / f"{name}.report.json").write_text(json.dumps(report, indent=1, sort_keys=True))
        (GOLDEN / f"{name}.metrics.json").write_text(json.dumps(metrics, indent=1))
        print(name, "recorded", file=sys.stderr)
        if name == "sfl":
            shutil.rmtree(OLD_SFL_RUN, ignore_errors=True)
            shutil.copytree(out, OLD_SFL_RUN)
            test_ued.cut_back(OLD_SFL_RUN, OLD_SFL_CHECKPOINTS)
            for name in ("report.md", "learning_curve.png", "success_by_cycle.png"):  # written at the end only
                (OLD_SFL_RUN / name).unlink()
            for step in range(1, OLD_SFL_CHECKPOINTS):  # resuming reads the newest only: keep the repository small
                shutil.rmtree(OLD_SFL_RUN / "checkpoints" / str(step))
            print("old sfl run directory recorded:", sorted(p.name for p in (OLD_SFL_RUN / "checkpoints").iterdir()),
                  file=sys.stderr)


if __name__ == "__main__":
    commands = {"write": _write, "write-ued": _write_ued}
    if sys.argv[1:] not in ([c] for c in commands):
        sys.exit("usage: python -m tests.golden write | write-ued")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        commands[sys.argv[1]](Path(tmp))
