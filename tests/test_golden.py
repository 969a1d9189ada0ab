"""The same seed gives the same report.json and metrics.jsonl as the code before the reshaping (tests/golden.py), and
a run directory that code left behind mid-run resumes to the same report."""

import os
import shutil
import subprocess
import sys

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


# The envgen case in a fresh process with XLA's default flags (the suite compiles at -O0, conftest.py), as users run:
# returns and rewards too must equal the recording exactly.
DEFAULT_FLAGS_RUN = """
import sys
from pathlib import Path
from tests import golden, test_golden
golden.check(test_golden._run("envgen", Path(sys.argv[1])), golden.expected("envgen"), exact=True)
print("exact")
"""


def test_the_envgen_golden_exactly_with_xla_default_flags(tmp_path):
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "xla_backend_optimization_level" not in f)
    proc = subprocess.run([sys.executable, "-c", DEFAULT_FLAGS_RUN, str(tmp_path / "envgen")], cwd=golden.ROOT,
                          env={**os.environ, "XLA_FLAGS": flags}, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("exact"), proc.stderr[-3000:]
