"""benchmarks/gpu_session.sh: every stage's smallest form (`--check`: each command as far as its first large
program, benchmarks/stage_check.py) runs here, so a lease is not the first place a stage meets its arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _stages_tsv(path: Path) -> dict[str, str]:
    rows = [line.split("\t") for line in path.read_text().splitlines() if line.strip()]
    return {row[0]: row[3] for row in rows}


def test_every_stage_of_the_gpu_session_reaches_its_work(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "JAX_PLATFORMS": "cpu", "RESULTS": str(tmp_path / "results"),
           "OUT": str(tmp_path / "out"), "BENCH_COMMIT": "test", "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.run(["bash", "benchmarks/gpu_session.sh", "--check", "--stages", "all"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    log = (tmp_path / "out" / "session.log").read_text()
    assert proc.returncode == 0, proc.stderr[-3000:] + log[-3000:]
    status = _stages_tsv(tmp_path / "results" / "stages.tsv")
    all_stages = ("check e2e_cold e2e_warm training step_loops step_loops_cmdbuf step_loops_unroll wide_speed "
                  "wide_bf16 wide_f32 pixel_seeds pixel_speed1 pixel_speed4 pixel_speed16 pixel_xla pixel_study "
                  "study_fused pixel").split()
    assert set(status) == set(all_stages), status
    assert all(what == "ok (--check)" for what in status.values()), {k: v for k, v in status.items() if "ok" not in v}
    # every stage but `check` got as far as compiling its own program (not an early exit or an error)
    reached = log.count("stage_check: reached ")
    assert reached >= len(all_stages) - 1, log[-3000:]
    # a wrong stage name is refused before anything runs
    bad = subprocess.run(["bash", "benchmarks/gpu_session.sh", "--check", "--stages", "check,pixle"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown stage 'pixle'" in bad.stderr
