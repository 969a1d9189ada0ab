"""Where a run's time goes: every program XLA compiles (or loads from the persistent cache), and the seconds per
phase (compile, training, evaluation, LLM, checkpoint, other), written to the run directory as each phase ends so
that a killed run still shows what it did.

    record = CompileRecord()          # jax.monitoring listeners: name, seconds, cache hit; our call sites' input shapes
    with record: ...                  # record.summary() -> {"programs": [...], "seconds": ..., "cache_hits": ...}

    timing = RunTiming(out_dir, callbacks)     # the loop's Callbacks, with the timer and the record around them
    timing.start(resumed=False); with timing.section("train"): ...; timing.stop()
    timing.report_fields()            # {"compile": ..., "phases": ...} for report.json

Files: `<run>/compile.json` (the record, every session of the run) and `<run>/phases.json` (seconds per phase, the
phase running now, sessions), each replaced atomically.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import jax

from envgen_jax.run.log import write_text_atomic
from envgen_jax.trainer.ahead import announced_inputs

PHASES = ("compile", "training", "evaluation", "llm", "checkpoint", "other")
# The loop's sections (`envgen_jax.run.loop.Callbacks.section`) -> phases; "init" and anything unnamed is "other".
SECTION_PHASE = {"train": "training", "evaluate": "evaluation", "llm": "llm", "checkpoint": "checkpoint"}

_TRACE = "/jax/core/compile/jaxpr_trace_duration"
_LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
_BACKEND = "/jax/core/compile/backend_compile_duration"  # an XLA compile, or a load from the persistent cache
_CACHE_HIT = "/jax/compilation_cache/cache_hits"
_MAX_SHAPES = 8


def _shape_summary(avals: list) -> dict:
    """{"inputs": count, "largest": the few largest distinct input types, e.g. "float32[16,8,64]"}."""
    sized = sorted({(int(getattr(a, "size", 0) or 0), str(a)) for a in avals}, reverse=True)
    return {"inputs": len(avals), "largest": [s for _, s in sized[:_MAX_SHAPES]]}


_lock = threading.Lock()


class CompileRecord:
    """Every program compiled while listening: name, input shapes (those our call sites note: `trainer.ahead.Program`;
    none for another program), seconds (trace + lowering + XLA compile or cache load), whether the persistent cache
    served it. Thread-safe (programs compiled ahead in threads are recorded)."""

    def __init__(self, earlier: list[dict] | None = None, session: int = 1):
        self.programs: list[dict] = list(earlier or [])
        self.session = session
        self.trace_seconds = 0.0  # tracing is per Python function, not per program: kept as one sum
        self._local = threading.local()
        self._listening = False

    # jax.monitoring callbacks
    def _on_duration(self, event: str, duration: float, **kwargs) -> None:
        if not self._listening:
            return
        if event == _TRACE:
            with _lock:
                self.trace_seconds += duration
        elif event == _LOWER:
            self._local.lower = (kwargs.get("fun_name"), duration)
        elif event == _BACKEND:
            name = str(kwargs.get("fun_name", "?"))
            lower = getattr(self._local, "lower", None)
            lower_s = lower[1] if lower and lower[0] == name else 0.0
            hit = getattr(self._local, "hit", False)
            self._local.lower, self._local.hit = None, False
            inputs = announced_inputs(name)  # our call site's (trainer.ahead.Program); None for another program
            shapes = _shape_summary(inputs) if inputs is not None else {"inputs": None, "largest": []}
            with _lock:
                self.programs.append({"name": name, **shapes, "seconds": round(duration + lower_s, 4),
                                      "compile_seconds": round(duration, 4), "cache_hit": hit,
                                      "session": self.session})

    def _on_event(self, event: str, **kwargs) -> None:
        if self._listening and event == _CACHE_HIT:
            self._local.hit = True

    def start(self) -> "CompileRecord":
        if not self._listening:
            jax.monitoring.register_event_duration_secs_listener(self._on_duration)
            jax.monitoring.register_event_listener(self._on_event)
            self._listening = True
        return self

    def stop(self) -> None:
        if self._listening:
            self._listening = False  # the listeners stay inert if this jax cannot remove them
            _unregister(self._on_duration, self._on_event)

    __enter__ = start

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def seconds(self) -> float:
        """Compile work so far, this process's tracing included."""
        with _lock:
            return sum(p["seconds"] for p in self.programs) + self.trace_seconds

    def summary(self) -> dict:
        with _lock:
            programs = list(self.programs)
            trace = self.trace_seconds
        hits = sum(p["cache_hit"] for p in programs)
        return {"programs": programs, "seconds": round(sum(p["seconds"] for p in programs) + trace, 3),
                "cache_hits": hits, "compiled": len(programs) - hits, "trace_seconds": round(trace, 3),
                "cache_dir": jax.config.jax_compilation_cache_dir if jax.config.jax_enable_compilation_cache
                else None}


def _unregister(duration_listener, event_listener) -> None:
    """Remove the listeners through jax.monitoring's public functions (jax 0.10 and 0.11 have them); a jax without
    them keeps them registered, and a stopped record ignores what they hear."""
    for unregister, listener in (("unregister_event_duration_listener", duration_listener),
                                 ("unregister_event_listener", event_listener)):
        with contextlib.suppress(AttributeError, ValueError, AssertionError):
            getattr(jax.monitoring, unregister)(listener)


class PhaseTimer:
    """Wall seconds per phase, compile work taken out of the phase it happened in (the "compile" phase). Sections
    nest (a checkpoint inside training pauses training); time outside every section is "other". The phases always
    sum to the wall time measured. `write` replaces `path` atomically; it is called at each section's start and end."""

    def __init__(self, path: Path | None = None, compile_seconds=lambda: 0.0, earlier: dict | None = None,
                 sessions: int = 1):
        self.path = path
        self._compile = compile_seconds
        self.seconds = {p: float((earlier or {}).get(p, 0.0)) for p in PHASES}
        self.sessions = sessions
        now = time.monotonic()
        self._stack = [["other", now, self._compile()]]  # [phase, since, compile seconds at since]

    def _book_top(self) -> None:
        now, compiled = time.monotonic(), self._compile()
        top = self._stack[-1]
        wall, compile_s = now - top[1], max(0.0, compiled - top[2])
        compile_s = min(compile_s, wall)  # compiles in other threads cannot make a phase negative
        self.seconds["compile"] += compile_s
        self.seconds[top[0]] += wall - compile_s
        top[1], top[2] = now, compiled

    @contextlib.contextmanager
    def section(self, name: str):
        self._book_top()
        self._stack.append([SECTION_PHASE.get(name, "other"), time.monotonic(), self._compile()])
        self.write()
        try:
            yield
        finally:
            self._book_top()
            self._stack.pop()
            self._stack[-1][1], self._stack[-1][2] = time.monotonic(), self._compile()
            self.write()

    def totals(self) -> dict:
        self._book_top()
        return {p: round(s, 3) for p, s in self.seconds.items()}

    def write(self) -> None:
        if self.path is None:
            return
        totals = self.totals()
        running = self._stack[-1][0] if len(self._stack) > 1 else None
        with contextlib.suppress(OSError):  # a full disk must not stop training
            write_text_atomic(self.path, json.dumps({
                "seconds": totals, "wall_seconds": round(sum(totals.values()), 3), "running": running,
                "sessions": self.sessions, "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                indent=1))


class RunTiming:
    """The loop's callbacks, wrapped: each section is timed (phases.json) and the compile record (compile.json) is
    saved as it ends; then the wrapped callbacks' own section runs inside. A resumed run adds to the earlier
    sessions' files."""

    def __init__(self, out: str | Path, inner: Any = None):
        self.out, self.inner = Path(out), inner
        self.record: CompileRecord | None = None
        self.timer: PhaseTimer | None = None

    def start(self, resumed: bool = False) -> None:
        earlier_phases, earlier_programs, sessions = {}, [], 1
        if resumed:
            phases, record = _read(self.out / "phases.json"), _read(self.out / "compile.json")
            earlier_phases, sessions = phases.get("seconds", {}), int(phases.get("sessions", 0)) + 1
            earlier_programs = record.get("programs", [])
        self.record = CompileRecord(earlier_programs, session=sessions).start()
        self.timer = PhaseTimer(self.out / "phases.json", lambda: self.record.seconds, earlier_phases, sessions)

    @contextlib.contextmanager
    def section(self, name: str):
        if self.timer is None:  # not started: time nothing, still run the wrapped section
            with self._inner(name):
                yield
            return
        with self.timer.section(name), self._inner(name):
            yield
        self._save_record()

    def _inner(self, name: str):
        return self.inner.section(name) if self.inner is not None else contextlib.nullcontext()

    def _save_record(self) -> None:
        with contextlib.suppress(OSError):
            write_text_atomic(self.out / "compile.json", json.dumps(self.record.summary(), indent=1))

    def stop(self) -> None:
        if self.record is None:
            return
        self.timer.write()
        self._save_record()
        self.record.stop()

    def report_fields(self) -> dict:
        """{"compile": the record's summary, "phases": seconds per phase} for report.json (empty if not started)."""
        if self.record is None:
            return {}
        return {"compile": self.record.summary(), "phases": self.timer.totals()}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
