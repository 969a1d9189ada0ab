"""Programs compiled ahead of their first call, in a background thread.

A run's programs (the training chunk, the evaluation) do not depend on each other, and the first of them is needed
only after the first design step (an LLM call). Compiling them in threads while that happens, rather than one at a
time between phases, takes their compile time off the run's critical path:

    ahead = AheadOfTime()
    ahead.submit(jitted, args, static)          # lower + compile in a thread, keyed by the arguments' types
    compiled = ahead.get(args, static)          # the executable (waits for it), or None: call the jitted function

A call whose arguments have other types (another layout, another bank size) finds nothing and compiles as usual.

The trainer's programs are `Program`s: jitted functions that note, in the calling thread, the types of the inputs
of each call, lowering or trace, so that a run's compile record (`run/compile_record.py`, listening to JAX's public
`jax.monitoring` events, which name a program but not its inputs) can say what each compiled program took.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Callable

import jax

_CALLS = threading.local()  # .last: (program name, input types) of this thread's latest Program call


class Program:
    """`jax.jit(fn, **options)` that notes its inputs' types before each call, `lower` and `trace`
    (`announced_inputs`)."""

    def __init__(self, fn: Callable, **options):
        self.name = fn.__name__
        self.jitted = jax.jit(fn, **options)

    def _note(self, args) -> None:
        _CALLS.last = (self.name, [jax.typeof(x) for x in jax.tree.leaves(args)])

    def __call__(self, *args, **kwargs):
        self._note(args)
        return self.jitted(*args, **kwargs)

    def lower(self, *args, **kwargs):
        self._note(args)
        return self.jitted.lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        self._note(args)
        return self.jitted.trace(*args, **kwargs)


def announced_inputs(program: str) -> list | None:
    """The input types this thread's latest `Program` call noted, if it was the program JAX names `program`
    ("jit(_train_chunk)" or "_train_chunk"); taken once."""
    last = getattr(_CALLS, "last", None)
    if last is None or program not in (last[0], f"jit({last[0]})"):
        return None
    _CALLS.last = None
    return last[1]


def signature(args: tuple, static: dict) -> tuple:
    """What a compiled program depends on: the static arguments, the tree structure and every leaf's type (shape,
    dtype, weak type)."""
    leaves, tree = jax.tree.flatten(args)
    return tuple(sorted(static.items())), tree, tuple(jax.typeof(x) for x in leaves)


class AheadOfTime:
    """Executables compiled in background threads, keyed by `signature`."""

    def __init__(self, workers: int = 2):
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._workers = workers
        self._programs: dict[tuple, concurrent.futures.Future] = {}

    def submit(self, jitted: Callable, args: tuple, static: dict | None = None) -> None:
        """Start compiling `jitted(*args, **static)` (nothing runs; arrays in `args` are only read for their types)."""
        static = dict(static or {})
        key = signature(args, static)
        if key in self._programs:
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self._workers, thread_name_prefix="envgen-compile")
        self._programs[key] = self._pool.submit(lambda: jitted.lower(*args, **static).compile())

    def get(self, args: tuple, static: dict | None = None) -> Any:
        """The executable for these arguments (waiting for its compile to finish), or None if none was submitted."""
        if not self._programs:
            return None
        future = self._programs.get(signature(args, dict(static or {})))
        return None if future is None else future.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
