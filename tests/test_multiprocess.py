"""One run over two processes, as over two hosts: JAX's multi-process runtime on this CPU (`jax.distributed` with a
port from the OS, one CPU device per process, gloo collectives), through `envgen-jax train --coordinator ...`.

The run is the golden runs' tiny shape (tests/golden.py), one cycle, on the toy game of tests/test_games.py (a
corridor of 8 cells, whose programs compile in seconds) with method=random, whose design step runs on process 0 and
reaches the other process. Over two processes it runs as a fused study of random and ppo (methods x seeds = 4
agents on one axis, 2 per process), so that the study runner and the fused driver are covered too; the same study in
one process with two devices is its reference, bit for bit, and the plain run on one device that of its random
member, to float rounding. A killed process and an unreachable coordinator follow, with the plain run over two
processes against one process with two devices. Every child process has a time limit, so the tests end by
themselves."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests import golden
from tests.fast_compile import xla_flags
from tests.test_games import write_toy_package

ROOT = Path(__file__).resolve().parent.parent
# 2 agents (seeds), one per device; one cycle (design, 2 + 2 chunks, evaluation), then 2 chunks and the final one
RUN = golden.TINY + ["env=toy", "method=random", "schedule.cycles=1", "schedule.final_steps=256"]
LIMIT_S = 600  # each child process, at most
TIMING_REPORT = golden.TIMING_REPORT
TIMING_METRICS = golden.TIMING_METRICS

# The CLI in a child process, with the toy game registered (its package is written to the folder in argv[1]).
CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from envgen_jax import games
games.GAMES["toy"] = "toy_game.game"
from envgen_jax.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _start(packages: Path, args: list[str], processes: int = 1, devices: int = 1) -> list[subprocess.Popen]:
    """`envgen-jax ARGS` in `processes` processes of one run (one device each), or in one with `devices`."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TMPDIR": str(packages),  # a killed process's scratch stays there
           "XLA_FLAGS": xla_flags(f"--xla_force_host_platform_device_count={devices}")}
    several = []
    if processes > 1:
        port = _free_port()
        several = [["--coordinator", f"localhost:{port}", "--num-processes", str(processes), "--process-id", str(i)]
                   for i in range(processes)]
    return [subprocess.Popen([sys.executable, "-c", CHILD, str(packages), *args, *flags], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for flags in (several or [[]])]


def _finish(procs: list[subprocess.Popen], timeout: float = LIMIT_S) -> list[tuple[int, str, str]]:
    """Wait for every process (killing any still running at the time limit): (exit status, stdout, stderr) each."""
    deadline = time.monotonic() + timeout
    out = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        out.append((proc.returncode, stdout, stderr))
    return out


def _train(packages: Path, out: Path, processes: int = 1, devices: int = 1, command: tuple = ("train",)) -> None:
    args = [*command, "--config", str(ROOT / "configs" / "smoke.yaml"), "--set", *RUN, "--out", str(out)]
    for status, _, stderr in _finish(_start(packages, args, processes, devices)):
        assert status == 0, stderr[-3000:]


@pytest.fixture(scope="module")
def toy_packages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("packages")
    write_toy_package(folder)
    return folder


@pytest.fixture(scope="module")
def runs(toy_packages, tmp_path_factory):
    """The fused study of random and ppo over two processes of one device each and in one process with two devices;
    the plain random run in one process with two devices and on one device."""
    base = tmp_path_factory.mktemp("runs")
    study = ("study", "--methods", "random,ppo", "--schedule", "fused")
    _train(toy_packages, base / "study", processes=2, command=study)
    _train(toy_packages, base / "study_two_devices", devices=2, command=study)
    _train(toy_packages, base / "two_devices", devices=2)
    _train(toy_packages, base / "one_device")
    return {"study": base / "study", "study_two_devices": base / "study_two_devices",
            "two_devices": base / "two_devices", "one_device": base / "one_device"}


def _metrics(run: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING_METRICS}
            for line in (run / "metrics.jsonl").read_text().splitlines()]


def _report(run: Path) -> dict:
    return {k: v for k, v in json.loads((run / "report.json").read_text()).items() if k not in TIMING_REPORT}


def _final_state(run: Path) -> dict:
    """The newest checkpoint's TrainState, as numpy arrays by field path (read on this process's one device)."""
    import jax
    import orbax.checkpoint as ocp

    from envgen_jax.trainer.checkpoint import newest_checkpoint, saved_tree
    path = newest_checkpoint(run / "checkpoints")
    here = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    like = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=here), saved_tree(path))
    with ocp.StandardCheckpointer() as checkpointer:
        state = checkpointer.restore(path / "state", like)
    return {jax.tree_util.keystr(p): np.asarray(x) for p, x in jax.tree_util.tree_leaves_with_path(state)}


def test_a_fused_study_over_two_processes_trains_exactly_as_one_process_with_two_devices(runs):
    study, reference = runs["study"], runs["study_two_devices"]
    # process 0 wrote the study's and every run's files, once (the other wrote its own to a scratch folder)
    assert sorted(p.name for p in study.iterdir()) == sorted(p.name for p in reference.iterdir())
    for method in ("random", "ppo"):
        run = study / method
        assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in (reference / method).iterdir())
        assert len((run / "sessions.jsonl").read_text().splitlines()) == 1
        assert len((run / "metrics.jsonl").read_text().splitlines()) == 6  # 6 chunks
    summary = json.loads((study / "study.json").read_text())["methods"]
    assert sorted(summary) == ["ppo", "random"] and all(m["status"] == "finished" for m in summary.values())
    # random's design step ran on process 0 and reached the other
    assert json.loads((study / "random" / "environments" / "cycle_1.json").read_text())["environments"]
    # 2 processes x 1 device = 1 process x 2 devices, bit for bit, every member: the same program on the same pieces
    for method in ("random", "ppo"):
        a, b = study / method, reference / method
        assert _report(a) == _report(b) and _metrics(a) == _metrics(b), method
        x, y = _final_state(a), _final_state(b)
        assert x.keys() == y.keys() and any("params" in k for k in x)
        for k in x:
            np.testing.assert_array_equal(x[k], y[k], err_msg=f"{method} {k}")
    # the fused random member = the random run alone on one device: the same episodes, evaluations and scores;
    # losses and parameters to float32 rounding (the devices batch the agents' matrix products differently)
    two_processes, one_device = study / "random", runs["one_device"]
    assert _report(two_processes) == _report(one_device)
    a, c = _final_state(two_processes), _final_state(one_device)
    for k in a:
        np.testing.assert_allclose(a[k], c[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for x, y in zip(_metrics(two_processes), _metrics(one_device), strict=True):
        assert {k: v for k, v in x.items() if k != "losses"} == {k: v for k, v in y.items() if k != "losses"}
        np.testing.assert_allclose(list(x["losses"].values()), list(y["losses"].values()), rtol=1e-5, atol=1e-7)


def test_a_killed_process_stops_the_run_with_one_line_and_the_resumed_run_finishes_identical(runs, toy_packages,
                                                                                            tmp_path):
    out = tmp_path / "killed"
    args = ["train", "--config", str(ROOT / "configs" / "smoke.yaml"), "--set", *RUN, "--out", str(out)]
    procs = _start(toy_packages, args, processes=2)
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + LIMIT_S
    # 3 of the 6 chunks are recorded: the design step's checkpoint is written, the cycle's is still to come
    while not (metrics.exists() and len(metrics.read_text().splitlines()) >= 3):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), _finish(procs, 1)
        time.sleep(0.1)
    procs[1].send_signal(signal.SIGKILL)
    (status, _, stderr), _ = _finish(procs, timeout=120)  # the survivor stops by itself, well within the limit
    assert status == 2, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "another process of the run stopped or cannot be reached" in errors[0], stderr
    assert "Traceback" not in stderr and "--resume" in stderr

    for status, _, stderr in _finish(_start(toy_packages, ["train", "--resume", str(out)], processes=2)):
        assert status == 0, stderr[-3000:]
    # = the uninterrupted run in one process with two devices, bit for bit
    assert _report(out) == _report(runs["two_devices"])
    assert _metrics(out) == _metrics(runs["two_devices"])
    a, b = _final_state(out), _final_state(runs["two_devices"])
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_a_process_that_cannot_reach_the_coordinator_says_so_in_one_line(toy_packages, tmp_path):
    args = ["--config", str(ROOT / "configs" / "smoke.yaml"), "--set", *RUN, "--out", str(tmp_path / "alone")]
    port = _free_port()  # nobody listens there
    proc = subprocess.run([sys.executable, "-c", CHILD, str(toy_packages), "train", *args, "--coordinator",
                           f"localhost:{port}", "--num-processes", "2", "--process-id", "1", "--join-timeout", "3"],
                          cwd=ROOT, env={**os.environ, "JAX_PLATFORMS": "cpu"}, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"error: process 1 of 2: could not join the run at localhost:{port} within 3s (")
    assert not (tmp_path / "alone").exists()
