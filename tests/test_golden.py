"""The same seed gives the same report.json and metrics.jsonl as the code before the reshaping (tests/golden.py), and
a run directory that code left behind mid-run resumes to the same report."""

import json
import shutil

import pytest

from tests import golden


def _run(name, out):
    from envgen_jax.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config
    cfg = load_run_config(golden.ROOT / "configs" / "smoke.yaml", golden.CASES[name])
    EnvGenRun(cfg, out, llm_client=golden.client()).run()
    return golden.read_outputs(out)


# The PPO losses are float32 sums over minibatches, whose rounding depends on the CPU's vector width (the goldens
# were written on one x86-64 CPU; an AVX-512 one differs in the last bits of a loss); what the agent does and
# achieves (returns, episodes, success, scores) must match exactly.
EXACT, FLOAT32_SUMS = dict(rel=1e-9, abs=1e-12), dict(rel=1e-4, abs=1e-6)


def _approx_equal(a, b, tol=EXACT):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            _approx_equal(a[k], b[k], FLOAT32_SUMS if k == "losses" else tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_approx_equal(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, **tol)
    return a == b


# Report sections added after the goldens were recorded (nothing the run does changes with them): left out.
ADDED_REPORT_KEYS = ("adaptation", "first_unlock_steps")


def _check(got, want):
    report, metrics = got
    want_report, want_metrics = want
    report = {k: v for k, v in json.loads(json.dumps(report)).items() if k not in ADDED_REPORT_KEYS}
    diff = sorted(k for k in set(report) | set(want_report) if not _approx_equal(report.get(k), want_report.get(k)))
    assert not diff, f"report.json differs in {diff}"
    assert _approx_equal(metrics, want_metrics), "metrics.jsonl differs"


@pytest.mark.parametrize("name", sorted(golden.CASES))
def test_same_seed_same_outputs_as_before(name, tmp_path):
    _check(_run(name, tmp_path / name), golden.expected(name))


def test_a_run_directory_from_the_old_code_resumes_to_the_same_report(tmp_path):
    from envgen_jax.loop import EnvGenRun
    run = tmp_path / "old_run"
    shutil.copytree(golden.OLD_RUN, run)
    EnvGenRun.resume(run, llm_client=golden.client()).run()
    _check(golden.read_outputs(run), golden.expected("envgen"))
    assert (run / "checkpoints" / "latest").read_text().strip() in {p.name for p in (run / "checkpoints").iterdir()}
