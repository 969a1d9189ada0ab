"""One run over several processes (several hosts), through JAX's own multi-process runtime (`jax.distributed`).

    envgen-jax train --config C --coordinator host0:8476 --num-processes 2 --process-id 0    # on host 0
    envgen-jax train --config C --coordinator host0:8476 --num-processes 2 --process-id 1    # on host 1
    srun envgen-jax train --config C        # no flags: SLURM, Open MPI or a Cloud TPU pod, detected by JAX

Every process runs the same loop on the same data. The TrainState is one set of global arrays over every process's
devices (`trainer.sharding`: whole agents per device when they divide evenly); the host reads a chunk's metrics and
an evaluation's results gathered from every process (`trainer.metrics.to_host`, a collective).

  * Process 0 alone calls the LLM and writes the run's files and logs. The others write theirs (the same files) to
    a scratch folder of their own (`files_dir`), deleted when they exit, and print errors and warnings only.
  * A design step runs on process 0; the host state it leaves (the loop's and the method's, as a checkpoint holds
    them) goes to the others as JSON (`SharedDesignStep`), which take it as a resumed run takes a checkpoint's.
  * Checkpoints are orbax's multi-process ones, in the run directory's `checkpoints/`: every process writes its own
    shards there (a filesystem every host sees), process 0 the rest; a restore reads them back on every process.
  * A process that dies or cannot reach the coordinator ends the others' run with one line (exit status 2) and how
    to resume: the same command (`train`: with `--resume OUT`), on every process, continues from the last
    checkpoint. Where JAX's runtime itself ends a process with a fatal error (process 0, which hosts its
    coordination service, died; a process stopped sending heartbeats), a parent process that watches it says so
    (`run.supervise`: every process of a multi-process run forks before it joins, the child runs the command); where
    a collective breaks first, the command's own error handling does (`explain_failure`).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

from envgen_jax.run import supervise
from envgen_jax.schema import ConfigError

# Seconds: how long a process waits for the others to join (launchers start hosts a little apart), and after how
# long without a heartbeat a process counts as dead (JAX's defaults: 300 and 100).
JOIN_TIMEOUT_S, HEARTBEAT_TIMEOUT_S = 120, 30
_joined = False  # this process has joined a multi-process run (`initialize`)


def launched_by_cluster() -> bool:
    """Whether a launcher started several processes of this command in a way JAX's cluster detection reads: SLURM's
    srun, Open MPI's mpirun, a Cloud TPU pod's hosts, or JAX's own JAX_COORDINATOR_ADDRESS."""
    env = os.environ
    return bool(
        (int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_STEP_NODELIST" in env)
        or (int(env.get("OMPI_COMM_WORLD_SIZE", "1")) > 1 and "OMPI_MCA_orte_hnp_uri" in env)
        or len([h for h in env.get("TPU_WORKER_HOSTNAMES", "").split(",") if h]) > 1
        or env.get("JAX_COORDINATOR_ADDRESS"))


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
               timeout_s: int = JOIN_TIMEOUT_S) -> bool:
    """Join the multi-process run the flags (or the cluster launcher) describe; False when this is a one-process run.
    Call before anything touches a JAX device."""
    given = {"--coordinator": coordinator, "--num-processes": num_processes, "--process-id": process_id}
    if any(v is not None for v in given.values()):
        missing = [k for k, v in given.items() if v is None]
        if missing:
            raise ConfigError([f"{', '.join(missing)}: needed with {', '.join(k for k in given if k not in missing)}"
                               " (a multi-process run takes all three, or none under SLURM / Open MPI)"],
                              what="arguments")
        check_launch_arguments(coordinator, num_processes, process_id)
    elif not launched_by_cluster():
        return False
    if coordinator is not None and process_id != 0:
        _wait_for_coordinator(coordinator, timeout_s, f"process {process_id} of {num_processes}")
    supervise.supervise(None if process_id is None else f"{process_id} of {num_processes}")  # here: the child
    try:  # under a launcher (no flags), JAX reads the launcher's variables itself
        jax.distributed.initialize(coordinator, num_processes, process_id, initialization_timeout=timeout_s,
                                   heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT_S,
                                   shutdown_timeout_seconds=HEARTBEAT_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 -- JAX raises several types here; one line says what happened
        who = "" if process_id is None else f"process {process_id} of {num_processes}: "
        where = coordinator or "the coordinator the launcher named"
        raise ProcessLost(f"{who}could not join the run at {where} within {timeout_s}s "
                          f"({_first_line(e)})") from None
    global _joined
    _joined = True
    supervise.tell(joined=[jax.process_index(), jax.process_count()])
    if jax.process_index() > 0:  # process 0 alone logs: the others keep stderr, for errors and warnings
        sys.stdout = open(os.devnull, "w")
        os.environ["TQDM_DISABLE"] = "1"
    return True


def check_launch_arguments(coordinator: str, num_processes: int, process_id: int) -> None:
    """The flags of a multi-process run, checked before JAX's runtime sees them (it crashes on an address it cannot
    parse and waits forever on a port that cannot exist): ConfigError, one line per problem."""
    problems = []
    host, sep, port = coordinator.rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or not 1 <= int(port) <= 65535:
        problems.append(f"--coordinator: {coordinator!r} is not HOST:PORT with a port in 1..65535 "
                        "(e.g. host0:8476, the address of process 0)")
    if num_processes < 1:
        problems.append(f"--num-processes: {num_processes} is not a process count (1 or more)")
    elif not 0 <= process_id < num_processes:
        problems.append(f"--process-id: {process_id} is not in 0..{num_processes - 1}")
    if problems:
        raise ConfigError(problems, what="arguments")


def _host_port(address: str) -> tuple[str, int]:
    """("host", port) of "host:port" (or "[v6 address]:port"); ValueError when the port is not a number."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _wait_for_coordinator(address: str, timeout_s: float, who: str) -> None:
    """Wait until process 0's coordinator accepts connections. JAX's own wait ends a process that cannot connect
    with a fatal error (a page of C++ stack, no exception); this ends it with one line."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection(_host_port(address), timeout=2):
                return
        except (OSError, ValueError) as e:
            if time.monotonic() > deadline:
                raise ProcessLost(f"{who}: could not join the run at {address} within {timeout_s:g}s "
                                  f"(nothing accepts connections there: {e})") from None
            time.sleep(0.5)


def set_resume_note(note: str) -> None:
    """How to resume the run (the command's words), printed under the line of a process that JAX's runtime ended."""
    supervise.tell(note=note)


def end_run(text: str, status: int, error: BaseException) -> None:
    """End this process of a multi-process run at once with `text` (its error line and notes) and `status`: printed
    by the watching parent (`run.supervise`), which then drops JAX's own lines when `error` means a lost process.
    JAX's exit handler would wait for the other processes at a shutdown barrier, then abort with a page of C++
    stack."""
    sys.stdout.flush()
    if supervise.supervised():
        supervise.tell(end={"text": text, "status": status, "lost": explain_failure(error) is not None})
    else:
        print(text, file=sys.stderr, flush=True)
    os._exit(status)


class ProcessLost(RuntimeError):
    """The multi-process runtime failed: this process cannot reach the others, or another one stopped."""


def joined() -> bool:
    """Whether this process joined a multi-process run."""
    return _joined


def is_lead() -> bool:
    """Process 0 (every process of a one-process run): the one that calls the LLM and writes the run's files."""
    return jax.process_index() == 0


def files_dir(out: str | os.PathLike) -> Path:
    """Where this process writes a run's files: `out` on process 0, else a scratch folder of its own."""
    if is_lead():
        return Path(out)
    scratch = Path(tempfile.mkdtemp(prefix=f"envgen_jax_process{jax.process_index()}_"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    return scratch / Path(out).name


def broadcast_json(value, source: bool):
    """`value` (JSON) of the process where `source` is True, on every process; a collective."""
    from jax.experimental.multihost_utils import broadcast_one_to_all
    data = json.dumps(value).encode() if source else b""
    size = int(broadcast_one_to_all(np.int32(len(data)), is_source=source))
    padded = np.zeros(1 << max(12, (size - 1).bit_length()), np.uint8)  # a few sizes: a few tiny programs
    padded[:len(data)] = np.frombuffer(data, np.uint8)
    return json.loads(np.asarray(broadcast_one_to_all(padded, is_source=source))[:size].tobytes())


def from_lead(fn, *args):
    """`fn(*args)` run on process 0 (a one-process run: here), its value (JSON) on every process; its error raised
    on every process (the others raise ConfigError with process 0's message), so that a bad argument stops the
    whole run at once. A collective where there are several processes."""
    if jax.process_count() == 1:
        return fn(*args)
    value = error = None
    if is_lead():
        try:
            value = fn(*args)
        except Exception as e:  # noqa: BLE001 -- sent on, then raised
            error = e
    sent = broadcast_json({"value": value} if error is None else {"error": str(error)}, source=is_lead())
    if error is not None:
        raise error
    if "error" in sent:
        raise ConfigError([sent["error"]], what="process 0")
    return sent["value"]


def lead_decides(fn, *args) -> None:
    """Run the check `fn(*args)` on process 0 alone and raise its error on every process (`from_lead`)."""
    from_lead(fn, *args)


def spread(ts, cfg, agents: int, log):
    """A run's TrainState (its `agents` agents: a fused study's methods x seeds) over every device of the run, in
    the layout of `cfg.execution.shard` (logged)."""
    from envgen_jax.trainer.sharding import describe, shard_train_state
    shard = cfg.execution.shard
    log.info(describe(agents, cfg.ppo.num_envs, jax.device_count(), shard))
    return shard_train_state(ts, cfg.ppo.num_envs, shard=shard)


def shared(step, state, method):
    """A run's design step: `step` itself in a one-process run, else a `SharedDesignStep`."""
    return SharedDesignStep(step, state, method) if jax.process_count() > 1 else step


class SharedDesignStep:
    """A run's design step on several processes: process 0 runs `step` (the LLM calls, environments/), then sends
    the host state it leaves, the loop's and the method's, to the others, which take it as a resume does."""

    def __init__(self, step, state, method):
        self.step, self.state, self.method = step, state, method

    def __call__(self, cycle: int) -> None:
        outcome = None
        if is_lead():
            try:
                self.step(cycle)
                outcome = {"loop": self.state.to_dict(), "method": self.method.state_dict()}
            except Exception as e:
                broadcast_json({"error": f"{type(e).__name__}: {e}"}, source=True)
                raise
        outcome = broadcast_json(outcome, source=is_lead())
        if "error" in outcome:
            raise RuntimeError(f"process 0's design step failed: {outcome['error']}")
        if not is_lead():
            vars(self.state).update(vars(type(self.state).from_dict(outcome["loop"])))
            self.method.load_state(outcome["method"])

    def close(self) -> None:
        self.step.close()


# What JAX's runtime says when a peer is gone: gloo's collectives, the coordination service, its heartbeats.
_LOST_PEER = ("gloo", "connection closed by peer", "coordination service", "heartbeat", "unavailable:",
              "deadline_exceeded", "barrier")


def explain_failure(error: BaseException) -> str | None:
    """One line for an error that means the multi-process run broke (a process died, the coordinator is gone),
    else None (the usual messages apply)."""
    if isinstance(error, ProcessLost):
        return f"error: {error}"
    if not _joined or not any(word in str(error).lower() for word in _LOST_PEER):
        return None
    return (f"error: process {_who()}: another process of the run stopped or cannot be reached "
            f"({type(error).__name__}: {_first_line(error)})")


def _who() -> str:
    return f"{jax.process_index()} of {jax.process_count()}"


def _first_line(error: BaseException) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(error).__name__
