"""The same seed gives the same report.json and metrics.jsonl as the code before the reshaping (tests/golden.py), and
a run directory that code left behind mid-run resumes to the same report."""

import shutil

import pytest

from tests import golden


def _run(name, out):
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config
    cfg = load_run_config(golden.ROOT / "configs" / "smoke.yaml", golden.CASES[name])
    EnvGenRun(cfg, out, llm_client=golden.client()).run()
    return golden.read_outputs(out)


@pytest.mark.parametrize("name", sorted(golden.CASES))
def test_same_seed_same_outputs_as_before(name, tmp_path):
    golden.check(_run(name, tmp_path / name), golden.expected(name))


def test_a_run_directory_from_the_old_code_resumes_to_the_same_report(tmp_path):
    from envgen_jax.run.loop import EnvGenRun
    run = tmp_path / "old_run"
    shutil.copytree(golden.OLD_RUN, run)
    EnvGenRun.resume(run, llm_client=golden.client()).run()
    golden.check(golden.read_outputs(run), golden.expected("envgen"))
    assert (run / "checkpoints" / "latest").read_text().strip() in {p.name for p in (run / "checkpoints").iterdir()}
