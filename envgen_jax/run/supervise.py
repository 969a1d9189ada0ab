"""A process of a multi-process run watched by a parent of its own (`run.distributed.initialize` calls `supervise`).

JAX's runtime ends a process whose coordination service is gone (process 0 died) or reports another process dead
with a fatal C++ error that no Python code sees: `Terminating process because the JAX distributed service detected
fatal errors ...`, a page of stack, SIGABRT (jax 0.10.2). So the process forks before it joins the run: the child
joins and runs the command; the parent only watches it, and ends as it ends:

  * the child's standard error passes through the parent, which holds the runtime's log lines (absl's
    `W.... file.cc:N] ...`, `E....`, `F....`: what a lost process brings) for a few seconds, and from a fatal one on
    everything; stdout is the child's own;
  * a fatal error of JAX's distributed runtime: the parent prints one line naming what happened (`process 0 of the
    run (the coordinator) stopped ...`, `another process of the run stopped ...`) and the resume note, drops the
    held lines and exits with status 2;
  * the child's own last words (`tell(end=...)`: the command's error line when a collective broke, say) are printed
    by the parent, alone, whatever the runtime does in the meantime, and the parent exits with their status;
  * otherwise the parent releases what it held and exits as the child did: its exit status, or the same signal.

The parent ignores Ctrl-C (the child, in the same process group, gets it and stops as a command does) and passes
SIGTERM on; when the parent dies (`kill -9`), the child kills itself at once (a thread waits on a pipe from the
parent), so that killing the process one started kills the run's process.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import sys
import threading
import time

# One line of the C++ runtime's log (absl): level, month and day, time, thread, file:line]
_RECORD = re.compile(rb"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\s\]]+:\d+\] ")
_HOLD_S = 5.0  # seconds the runtime's log lines wait for a fatal error that may follow them
DEFAULT_NOTE = "Nothing checkpointed was lost: the same command, on every process, resumes the run."

_to_parent: int | None = None  # in the child: the pipe to the parent (JSON lines)


def supervise(who: str | None) -> None:
    """Fork. Returns in the child, which goes on to join the run; the parent watches it and exits as it ends (never
    returns). `who`: this process as its flags name it ("1 of 2"), None under a launcher (the child says, once
    joined). Where there is no fork (Windows), nothing: JAX's runtime ends the process with its own message."""
    if not hasattr(os, "fork"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    words_r, words_w = os.pipe()
    err_r, err_w = os.pipe()
    alive_r, alive_w = os.pipe()  # the parent holds its write end as long as it lives
    pid = os.fork()
    if pid == 0:
        global _to_parent
        for fd in (words_r, err_r, alive_w):
            os.close(fd)
        os.dup2(err_w, 2)
        os.close(err_w)
        _to_parent = words_w
        threading.Thread(target=_die_with_parent, args=(alive_r,), daemon=True, name="parent-watch").start()
        return
    for fd in (words_w, err_w, alive_r):
        os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: _pass_on(pid, signal.SIGTERM))
    Parent(pid, who).watch(err_r, words_r)


def supervised() -> bool:
    """Whether this process is a watched child (`supervise`)."""
    return _to_parent is not None


def tell(**words) -> None:
    """Tell the parent (a watched child only): joined=[index, count], note=resume note, end={text, status, lost}."""
    if _to_parent is not None:
        os.write(_to_parent, (json.dumps(words) + "\n").encode())


def _die_with_parent(alive: int) -> None:
    while os.read(alive, 1):
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def _pass_on(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:  # it has ended already
        pass


class Parent:
    """The watching parent: passes the child's stderr on (holding the runtime's log lines a moment), collects what the
    child tells it, and ends as the child ended."""

    def __init__(self, pid: int, who: str | None):
        self.pid, self.who = pid, who
        self.held: list[bytes] = []  # the runtime's log lines, and everything after them
        self.held_since, self.fatal, self.partial = 0.0, False, b""
        self.joined: list[int] | None = None
        self.note, self.end = DEFAULT_NOTE, None
        self.line_open = False  # the last bytes written end inside a line (a progress bar's)

    def watch(self, err: int, words: int) -> None:
        status, open_fds, pending, deadline = None, {err, words}, b"", float("inf")
        while open_fds and time.monotonic() < deadline:
            for fd in select.select(list(open_fds), [], [], 0.2)[0]:
                data = os.read(fd, 1 << 16)
                if not data:
                    open_fds.discard(fd)
                elif fd == err:
                    self.output(data)
                else:
                    *lines, pending = (pending + data).split(b"\n")
                    for line in lines:
                        self.heard(json.loads(line))
            if self.held and not self.fatal and time.monotonic() - self.held_since > _HOLD_S:
                self.release()
            if status is None:
                done, wait_status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    status, deadline = wait_status, time.monotonic() + 1  # its children may keep stderr open
        self.finish(status if status is not None else os.waitpid(self.pid, 0)[1])

    def heard(self, words: dict) -> None:
        self.joined = words.get("joined", self.joined)
        self.note = words.get("note", self.note)
        self.end = words.get("end", self.end)

    def output(self, data: bytes) -> None:
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            self.line(line + b"\n")
        if self.partial and not self.held and not _RECORD.search(self.partial):  # a progress bar's "\r..."
            self.write(self.partial)
            self.partial = b""

    def line(self, line: bytes) -> None:
        record = _RECORD.search(line)
        if record:
            self.fatal |= line[record.start():record.start() + 1] == b"F"
            if not self.held:
                self.write(line[:record.start()])  # the start of a line written in parts (a progress bar's)
                line, self.held_since = line[record.start():], time.monotonic()
        if self.held or record:
            self.held.append(line)
        else:
            self.write(line)

    def release(self) -> None:
        self.write(b"".join(self.held) + self.partial)
        self.held, self.partial = [], b""

    def finish(self, status: int) -> None:
        if self.end is not None:  # the child said why it ended
            if not self.end["lost"]:
                self.release()
            self._leave(self.end["text"], self.end["status"])
        said = self.fatal and lost_line(b"".join(self.held).decode("utf-8", "replace"), self.joined, self.who)
        if said:
            self._leave(f"{said}\n{self.note}", 2)
        self.release()
        sys.stdout.flush()
        if os.WIFSIGNALED(status):  # ends as the child did: a launcher sees the same
            signum = os.WTERMSIG(status)
            if signum not in (signal.SIGKILL, signal.SIGSTOP):  # those two keep their action, the default
                signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            os._exit(128 + signum)  # a signal whose default is to go on
        os._exit(os.waitstatus_to_exitcode(status))

    def _leave(self, text: str, status: int) -> None:
        sys.stdout.flush()
        self.write(f"{chr(10) if self.line_open else ''}{text}\n".encode())
        os._exit(status)

    def write(self, data: bytes) -> None:
        if data:
            self.line_open = not data.endswith(b"\n")
        while data:
            data = data[os.write(2, data):]


def lost_line(log: str, joined: list[int] | None, who: str | None) -> str | None:
    """The one line for a fatal error of JAX's distributed runtime (its log from the first held error line on), or
    None for another fatal error (its own lines then stand)."""
    if "distributed service" not in log and "coordination service" not in log:
        return None
    status = log.partition("absl::Status: ")[2] or log
    first = next((line.strip() for line in status.splitlines() if line.strip()), "")[:300]
    if joined is None:
        return f"error: process {who or '(under a launcher)'}: could not join the run (JAX's runtime: {first})"
    index, count = joined
    me = f"error: process {index} of {count}"
    heartbeats = re.search(r"stopped sending heartbeats\):\s*\n((?:[\d, ]+\n)+)", status)
    if heartbeats:
        gone = ", ".join(re.findall(r"\d+", heartbeats.group(1)))
        return f"{me}: another process of the run stopped or cannot be reached (process {gone}: no heartbeats)"
    if index != 0:
        return f"{me}: process 0 of the run (the coordinator) stopped or cannot be reached"
    return f"{me}: another process of the run stopped or cannot be reached (JAX's runtime: {first})"
