"""One run over two processes, as over two hosts: JAX's multi-process runtime on this CPU (`jax.distributed` with a
port from the OS, one CPU device per process, gloo collectives), through `envgen-jax study` and `train` with
`--coordinator ...`.

The runs are the golden runs' tiny shape (tests/golden.py), one cycle, on the toy game of tests/toy.py (a
corridor of 8 cells, whose programs compile in seconds). The study over two processes has random and ppo fused
(methods x seeds = 4 agents on one axis, 2 per process; random's design step runs on process 0 and reaches the
other) and sfl (a group of its own: its rows are drawn on the device and its selections read the sharded TrainState).
It is killed twice in its fused group, process 1 and then process 0 (the coordinator), resumed each time, and ends as
the same study in one process with two devices, bit for bit; its random member as the plain run on one device, to
float rounding. The plain run with every agent's envs split over the two processes (`execution.shard=envs`) equals
it over two devices of one process. A process that cannot reach the coordinator, or outlives process 0 under a
launcher, says so in one line. Every child process has a time limit, so the tests end by themselves."""

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
from tests.toy import CHILD, write_toy_package

ROOT = Path(__file__).resolve().parent.parent
# 2 agents (seeds), one per device; one cycle (design, 2 + 2 chunks, evaluation), then 2 chunks and the final one
RUN = golden.TINY + ["env=toy", "method=random", "schedule.cycles=1", "schedule.final_steps=256"]
LIMIT_S = 600  # each child process, at most
# sfl at its smallest: 4 random configurations measured (one episode each) at each selection, 2 kept, every 2 updates
SFL = ["method_options.sfl.pool=4", "method_options.sfl.keep=2", "method_options.sfl.refresh_updates=2",
       "method_options.sfl.rollouts_per_level=1", "method_options.sfl.rollout_steps=64"]
STUDY = ("study", "--methods", "random,ppo,sfl", "--grouping", "fused")  # groups: random and ppo fused; sfl
ENVS = ["execution.shard=envs"]  # each agent's envs over the devices
# Before the CLI: every process of a run writes the programs it compiled to the run's cache (JAX writes process 0's
# alone), so that a resumed run's process 1 loads them instead of compiling them again while process 0 waits
COMPILE_ONCE = "from tests.fast_compile import compile_once_across_processes; compile_once_across_processes()"



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
    return [subprocess.Popen([sys.executable, "-c", COMPILE_ONCE + CHILD, str(packages), *args, *flags], cwd=ROOT,
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


def _args(out: Path, command: tuple = ("train",), more: tuple = ()) -> list[str]:
    return [*command, "--config", str(ROOT / "configs" / "smoke.yaml"), "--set", *RUN, *more, "--out", str(out)]


def _train(packages: Path, out: Path, processes: int = 1, devices: int = 1, command: tuple = ("train",),
           more: tuple = ()) -> str:
    """The run's stdout (process 0's)."""
    results = _finish(_start(packages, _args(out, command, more), processes, devices))
    for status, _, stderr in results:
        assert status == 0, stderr[-3000:]
    return results[0][1]


@pytest.fixture(scope="module")
def toy_packages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("packages")
    write_toy_package(folder)
    return folder


@pytest.fixture(scope="module")
def references(toy_packages, tmp_path_factory) -> Path:
    """In one process with two devices: the study, and the plain random run with the envs layout; the plain random
    run on one device."""
    base = tmp_path_factory.mktemp("references")
    _train(toy_packages, base / "study", devices=2, command=STUDY, more=SFL)
    _train(toy_packages, base / "envs", devices=2, more=ENVS)
    _train(toy_packages, base / "one_device")
    return base


def _metrics(run: Path) -> list[dict]:
    return golden.strip_metrics((run / "metrics.jsonl").read_text())


def _report(run: Path) -> dict:
    return golden.strip_report(json.loads((run / "report.json").read_text()))


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


def _assert_same_state(a: Path, b: Path, what: str) -> None:
    x, y = _final_state(a), _final_state(b)
    assert x.keys() == y.keys() and any("params" in k for k in x)
    for k in x:
        np.testing.assert_array_equal(x[k], y[k], err_msg=f"{what} {k}")


def _assert_as_one_device(run: Path, one_device: Path) -> None:
    """The same episodes, evaluations and scores; losses and parameters to float32 rounding (the devices batch the
    agents' matrix products, or sum the minibatches' gradients, in another order)."""
    assert _report(run) == _report(one_device)
    a, c = _final_state(run), _final_state(one_device)
    for k in a:
        np.testing.assert_allclose(a[k], c[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for x, y in zip(_metrics(run), _metrics(one_device), strict=True):
        assert {k: v for k, v in x.items() if k != "losses"} == {k: v for k, v in y.items() if k != "losses"}
        np.testing.assert_allclose(list(x["losses"].values()), list(y["losses"].values()), rtol=1e-5, atol=1e-7)


def _kill_when_three_chunks_recorded(procs: list[subprocess.Popen], metrics: Path, victim: int) -> str:
    """Kill process `victim` once `metrics` has 3 chunks written by this run (a resumed run first cuts it back to its
    checkpoint's); the survivor's one error line, once it stopped by itself with exit status 2."""
    since, deadline = time.time_ns(), time.monotonic() + LIMIT_S
    # 3 of the 6 chunks: the design step's checkpoint is written, the cycle's is still to come
    while not (metrics.exists() and metrics.stat().st_mtime_ns > since
               and len(metrics.read_text().splitlines()) >= 3):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), _finish(procs, 1)
        time.sleep(0.1)
    procs[victim].send_signal(signal.SIGKILL)
    # the survivor's detection is bounded by wall clock (a 30 s heartbeat, then a 30 s shutdown), not by the CPU;
    # 300 s holds on a machine three times slower than CI's
    (status, _, stderr), = _finish([procs[1 - victim]], timeout=300)
    procs[victim].communicate()
    assert status == 2, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "stopped or cannot be reached" in errors[0], stderr
    assert "Traceback" not in stderr and "Terminating process" not in stderr, stderr  # JAX's own fatal error
    assert "the same command, on every process, resumes" in stderr
    return errors[0]


def test_a_study_over_two_processes_killed_twice_resumes_to_exactly_what_one_process_with_two_devices_trains(
        references, toy_packages, tmp_path):
    """The study over two processes is killed in its fused group twice, process 1 and then, in the resumed run,
    process 0, which hosts JAX's coordination service (the other then ends with our line, not JAX's fatal error);
    the same command resumes it each time, and it ends as the study in one process with two devices, bit for bit."""
    study, reference = tmp_path / "study", references / "study"
    args = _args(study, STUDY, SFL)
    metrics = study / "random" / "metrics.jsonl"
    first = _kill_when_three_chunks_recorded(_start(toy_packages, args, processes=2), metrics, victim=1)
    assert first.startswith("error: process 0 of 2: another process of the run stopped"), first
    second = _kill_when_three_chunks_recorded(_start(toy_packages, args, processes=2), metrics, victim=0)
    assert second.startswith("error: process 1 of 2: "), second
    for status, _, stderr in _finish(_start(toy_packages, args, processes=2)):
        assert status == 0, stderr[-3000:]

    # process 0 wrote the study's and every run's files, once (the other wrote its own to a scratch folder)
    assert sorted(p.name for p in study.iterdir()) == sorted(p.name for p in reference.iterdir())
    for method, sessions in (("random", 3), ("ppo", 3), ("sfl", 1)):
        run = study / method
        assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in (reference / method).iterdir())
        assert len((run / "sessions.jsonl").read_text().splitlines()) == sessions
        assert len((run / "metrics.jsonl").read_text().splitlines()) == 6  # 6 chunks
    summary = json.loads((study / "study.json").read_text())["methods"]
    assert sorted(summary) == ["ppo", "random", "sfl"] and all(m["status"] == "finished" for m in summary.values())
    # random's design step ran on process 0 and reached the other
    assert json.loads((study / "random" / "environments" / "cycle_1.json").read_text())["environments"]
    # sfl selected its rows from measurements gathered from both processes, twice (at the phase's start, then after
    # 2 updates: a reset of the envs, whose state comes back in the chunk's layout, so the chunk compiles once)
    assert len([line for line in _metrics(study / "sfl") if "selection" in line]) == 2
    for run in (study / "sfl", reference / "sfl"):
        programs = json.loads((run / "compile.json").read_text())["programs"]
        assert [p["name"] for p in programs].count("jit(_train_chunk)") == 1, run
    # 2 processes x 1 device = 1 process x 2 devices, bit for bit, every member: the same program on the same pieces
    for method in ("random", "ppo", "sfl"):
        a, b = study / method, reference / method
        assert _report(a) == _report(b) and _metrics(a) == _metrics(b), method
        _assert_same_state(a, b, method)
    # the fused random member = the random run alone on one device
    _assert_as_one_device(study / "random", references / "one_device")


def test_the_envs_layout_over_two_processes_trains_exactly_as_over_two_devices(references, toy_packages, tmp_path):
    """Every agent's env slots split over the two processes: the minibatches' gradients are summed across them."""
    log = _train(toy_packages, tmp_path / "envs", processes=2, more=ENVS)
    assert "devices: envs over 2 devices: 4 of each agent's 8 env slots per device" in log
    a, b = tmp_path / "envs", references / "envs"
    assert _report(a) == _report(b) and _metrics(a) == _metrics(b)
    _assert_same_state(a, b, "envs")


def test_a_process_that_cannot_reach_the_coordinator_says_so_in_one_line(toy_packages, tmp_path):
    args = ["--config", str(ROOT / "configs" / "smoke.yaml"), "--set", *RUN, "--out", str(tmp_path / "alone")]
    port = _free_port()  # nobody listens there
    proc = subprocess.run([sys.executable, "-c", CHILD, str(toy_packages), "train", *args, "--coordinator",
                           f"localhost:{port}", "--num-processes", "2", "--process-id", "1", "--join-timeout", "1"],
                          cwd=ROOT, env={**os.environ, "JAX_PLATFORMS": "cpu"}, capture_output=True, text=True,
                          timeout=300)  # an import of JAX and a 1 s join: seconds, 300 on a machine 3x slower
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"error: process 1 of 2: could not join the run at localhost:{port} within 1s (")
    assert not (tmp_path / "alone").exists()


# Two processes joined the way a launcher starts them (SLURM's variables, no flags); process 0 then dies.
LAUNCHED = """
import os, time
from jax.experimental.multihost_utils import sync_global_devices
from envgen_jax.run import distributed
assert distributed.initialize()
sync_global_devices("joined")
if distributed.is_lead():
    os.kill(os.getpid(), 9)
time.sleep(240)  # the worst detection (30 s heartbeat, 30 s shutdown) three times over: process 1 ends first
"""


def test_under_a_launcher_a_lost_process_0_ends_the_other_with_one_line():
    """Process 0 hosts JAX's coordination service: the moment the service's connection drops, JAX's runtime ends the
    other process with its own fatal error, which the parent watching that process turns into one line
    (`run.supervise`). Process 0's parent ends as its child did, killed."""
    slurm = {"SLURM_JOB_ID": "1", "SLURM_STEP_NODELIST": "localhost", "SLURM_NTASKS": "2",
             "JAX_COORDINATOR_PORT": str(_free_port())}
    procs = [subprocess.Popen([sys.executable, "-c", LAUNCHED], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**os.environ, **slurm, "JAX_PLATFORMS": "cpu",
                                                           "SLURM_PROCID": str(i), "SLURM_LOCALID": str(i)})
             for i in range(2)]
    # JAX's import and join, then the detection: well under a minute here, 300 s holds three times slower
    (killed, _, _), (status, _, stderr) = _finish(procs, timeout=300)
    assert killed == -signal.SIGKILL and status == 2, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: process 1 of 2: process 0 of the run (the coordinator) stopped or cannot be reached"]
    assert "Terminating process" not in stderr and "resumes the run" in stderr
