"""The parent that watches each process of a multi-process run (`run.supervise`), without JAX: a child that writes
what JAX's runtime writes when it ends a process (its log lines, captured from jax 0.10.2 with process 0 killed, and
with process 1 killed), then aborts as it does; a child that says why it ends; one killed; one whose parent is killed.
Each case is a Python process of its own (the parent forks), a fraction of a second each."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envgen_jax.run.supervise import DEFAULT_NOTE, lost_line

ROOT = Path(__file__).resolve().parent.parent

# What JAX's runtime writes on process 1 when process 0 (its coordination service) is gone ...
COORDINATOR_GONE = (
    "E1129 01:06:43.130528   25154 coordination_service_agent.cc:289] Polled an error from coordination service "
    "(this can be an error from this or another task).\n"
    "F1129 01:06:43.130565   25154 client.h:80] Terminating process because the JAX distributed service detected "
    "fatal errors. This most likely indicates that another task died; see the other task logs for more details. "
    "absl::Status: UNAVAILABLE: Failed to send RPC to coordination service. Either the leader task was "
    "preempted/died/restarted unexpectedly or this task is experiencing network issues.\n"
    "Additional GRPC error information from remote target coordination_service while calling "
    "/xla.coordination.CoordinationService/PollForError:\n"
    ':UNKNOWN:Error received from peer  {grpc_status:14, grpc_message:"Socket closed"}\n'
    "*** Check failure stack trace: ***\n"
    "    @     0x7f7267a40634  absl::lts_20260107::log_internal::LogMessage::SendToLog()\n")
# ... and on process 0 when process 1 stopped sending heartbeats
HEARTBEATS = (
    "E1129 01:06:55.350646   25212 coordination_service.cc:1549] [391240860423489957] Use error polling to "
    "propagate the following error to all tasks: UNAVAILABLE: The following tasks are unhealthy (stopped sending "
    "heartbeats):\n1\nThe tasks have crashed. Check the task logs for an earlier error.\n"
    "F1129 01:06:55.351248   25223 client.h:80] Terminating process because the JAX distributed service detected "
    "fatal errors. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):\n1\n"
    "The tasks have crashed. Check the task logs for an earlier error.\n\n"
    "RPC: /xla.coordination.CoordinationService/PollForError\n"
    "*** Check failure stack trace: ***\n"
    "    @     0x7fb882040634  absl::lts_20260107::log_internal::LogMessage::SendToLog()\n")
WARNING = "W1129 01:06:40.000001   25154 gloo.cc:12] a warning of the runtime's, passed on\n"


def _supervised(body: str, who: str = "1 of 2", timeout: float = 60, wait: bool = True, hold_s: float = 5.0):
    """`body` in the child of `supervise.supervise(who)`, in a Python process of its own; the parent holds the
    runtime's lines `hold_s` seconds."""
    code = (f"import os, signal, sys, time\nfrom envgen_jax.run import supervise\nsupervise._HOLD_S = {hold_s}\n"
            f"supervise.supervise({who!r})\n{body}")
    args = dict(cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
    if not wait:
        return subprocess.Popen([sys.executable, "-c", code], **args)
    done = subprocess.run([sys.executable, "-c", code], timeout=timeout, **args)
    done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()  # a progress bar's "\r" kept
    return done


def _dies_as_jax_does(log: str, joined: str = "[1, 2]") -> str:
    return (f"supervise.tell(joined={joined})\nsys.stderr.write('\\r 40%|####  |')\nsys.stderr.flush()\n"
            f"os.write(2, {WARNING.encode()!r})\ntime.sleep(0.2)\nos.write(2, {log.encode()!r})\nos.abort()\n")


def test_a_lost_process_0_ends_the_process_with_one_line_and_the_note():
    done = _supervised(_dies_as_jax_does(COORDINATOR_GONE))
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("\r 40%|####  |\nerror: process 1 of 2: process 0 of the run (the coordinator) "
                           f"stopped or cannot be reached\n{DEFAULT_NOTE}\n")  # the runtime's warning dropped too


def test_missing_heartbeats_name_the_lost_process_and_the_command_s_note():
    body = "supervise.tell(note='resume: envgen-jax train --resume runs/x')\n" + _dies_as_jax_does(HEARTBEATS, "[0, 2]")
    done = _supervised(body, who="0 of 2")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-2:] == [
        "error: process 0 of 2: another process of the run stopped or cannot be reached (process 1: no heartbeats)",
        "resume: envgen-jax train --resume runs/x"]
    assert "Terminating" not in done.stderr and "absl" not in done.stderr


def test_the_child_s_own_last_words_are_the_only_ones():
    """The command explained the end itself (a broken collective): its line alone, whatever JAX's runtime does after."""
    body = ("supervise.tell(joined=[0, 2])\n"
            "supervise.tell(end={'text': 'error: a collective broke\\nhow to resume', 'status': 2, 'lost': True})\n"
            f"os.write(2, {HEARTBEATS.encode()!r})\nos.abort()\n")
    done = _supervised(body, who="0 of 2")
    assert (done.returncode, done.stderr) == (2, "error: a collective broke\nhow to resume\n")


def test_otherwise_the_parent_ends_as_the_child_did_and_lets_its_lines_through():
    done = _supervised("print('out', flush=True)\nsys.stderr.write('err\\n')\nsys.exit(3)")
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    killed = _supervised("os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.returncode == -signal.SIGKILL and killed.stderr == ""
    # a fatal error of something else than the distributed runtime keeps its own lines
    check = "F1129 01:06:55.351248   25223 some_pass.cc:80] Check failed: x == y\n*** Check failure stack trace: ***\n"
    crashed = _supervised(f"os.write(2, {check.encode()!r})\nos.abort()")
    assert crashed.returncode == -signal.SIGABRT and crashed.stderr == check
    # the runtime's lines that no fatal error follows are held a moment, then shown
    error = "E1129 01:06:55.351248   25223 slow_operation_alarm.cc:80] Constant folding is slow\n"
    slow = _supervised(f"os.write(2, {error.encode()!r})\nsys.stderr.write('after\\n')\nsys.exit(0)")
    assert (slow.returncode, slow.stderr) == (0, error + "after\n")
    # ... while the child runs: a fatal error later does not take them back
    later = _supervised(f"os.write(2, {WARNING.encode()!r})\ntime.sleep(1)\n" + _dies_as_jax_does(COORDINATOR_GONE),
                        hold_s=0.5)
    assert later.returncode == 2 and later.stderr.startswith(WARNING + "\r 40%|####  |\nerror: process 1 of 2: ")


def test_the_child_dies_with_its_parent():
    """`kill -9` of the process one started ends the run's process (the child) too."""
    proc = _supervised("print(os.getpid(), flush=True)\ntime.sleep(120)", wait=False)
    child = int(proc.stdout.readline())
    proc.kill()
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.05)
    if _running(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail("the child outlived its parent")
    proc.stdout.close()
    proc.stderr.close()


def _running(pid: int) -> bool:
    """Whether `pid` runs: neither gone nor a zombie (which a container's first process may never reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("log, joined, line", [
    (COORDINATOR_GONE, [3, 4], "error: process 3 of 4: process 0 of the run (the coordinator) stopped or cannot be "
                               "reached"),
    (HEARTBEATS, [2, 4], "error: process 2 of 4: another process of the run stopped or cannot be reached (process 1: "
                         "no heartbeats)"),
    (COORDINATOR_GONE, None, "error: process 1 of 2: could not join the run (JAX's runtime: UNAVAILABLE: Failed to "
                             "send RPC to coordination service. Either the leader task was preempted/died/restarted "
                             "unexpectedly or this task is experiencing network issues.)"),
    ("F1129 01:06:55.351248   25223 some_pass.cc:80] Check failed: x == y\n", [1, 2], None),
])
def test_the_line_for_each_fatal_error(log, joined, line):
    assert lost_line(log, joined, "1 of 2") == line
