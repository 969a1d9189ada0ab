"""An experiment, outside the package until a GPU measures it faster: Craftax-Classic's short per-step loops unrolled
while our env traces. It replaces `jax.lax.scan` and `jax.random.choice` while a context is open, which the package
never does to JAX; the benchmarks that measure it (step_loops.py, pixel_speed.py, gpu_session.sh) use it from here:

    python benchmarks/unrolled_loops.py train --config C ...   # envgen-jax, with Crafter's short loops unrolled
    with unrolled_crafter(): ...                                # in a benchmark: games.get("crafter") unrolls them

Craftax's `craftax_step` and its renderers run about twenty `jax.lax.scan`s of 2-17 iterations each, over mobs,
plants, nearby cells and block types, and draw mob moves and spawn cells with `jax.random.choice(..., p=...)`, whose
binary search (`jnp.searchsorted`) is one more loop. Each becomes an XLA while loop, and on a GPU every iteration of
a while loop is launched from the host: for a small batch of envs the step is then bound by launches, not by work.

`short_loops_unrolled()` is a context manager that, while it is open, routes
- every `jax.lax.scan` call whose length is static and at most `max_length` to a Python loop over the same body
  (the carry threaded through, the per-iteration outputs stacked), and
- every weighted draw with replacement, `jax.random.choice(key, a, shape, p=p)`, to the same inverse-CDF draw
  (the same uniform numbers, running sums and binary search) with the search unrolled (`envs/draws.py`),
so the traced program has no loop there at all. It does not change what is computed, only how the program is laid
out: the same operations run in the same order. Integer and boolean work is then exact; float work could in
principle round differently once XLA fuses across the former iterations (a toy body of multiply-adds did, by one
ulp), so identity is a property of the body: for Craftax-Classic's step, renderers and our world generation it holds
bit for bit (tests/test_crafter_loops.py, many steps, pixels and resets included). Longer scans and everything else
(`fori_loop`s, jax.random's own loops, our rollout, which is traced outside the context) are left as they are.

It is per thread: while any thread has a context open, `jax.lax.scan` and `jax.random.choice` are routers that unroll
only for the threads inside one, so programs traced at the same time in other threads keep their loops (a run traces
its training chunk and its evaluation in two threads, `trainer/ahead.py`; with a process-wide patch the chunk's
rollout and epochs were unrolled while the evaluation's env step traced, and its compile took over 9 GB on a CPU).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping

import jax
import jax.numpy as jnp

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from envgen_jax import games  # noqa: E402
from envgen_jax.envs.crafter.env import CrafterEnv  # noqa: E402
from envgen_jax.envs.crafter.game import Crafter  # noqa: E402
from envgen_jax.envs.draws import weighted_choice  # noqa: E402

SHORT_SCAN = 32  # Craftax-Classic's per-step scans are 2-17 long; rollouts and epochs are far longer

_LOCK = threading.Lock()  # guards installing and removing the routers below


def _length(xs, length) -> int | None:
    """The static number of iterations of a scan over `xs` (None: cannot tell, leave it to `jax.lax.scan`)."""
    leaves = jax.tree.leaves(xs)
    if leaves:
        return int(leaves[0].shape[0])
    return length


def unrolled_scan(original, max_length: int):
    """`jax.lax.scan`'s signature; a Python loop when the length is static and at most `max_length`."""

    def scan(f, init, xs=None, length=None, reverse=False, unroll=1, **kwargs):
        n = _length(xs, length)
        if n is None or n == 0 or n > max_length or kwargs:
            return original(f, init, xs, length=length, reverse=reverse, unroll=unroll, **kwargs)
        xs = jax.tree.map(jnp.asarray, xs)  # as scan sees them (a numpy table becomes an array of jax's dtype)
        carry, ys = init, [None] * n
        for i in reversed(range(n)) if reverse else range(n):
            carry, ys[i] = f(carry, jax.tree.map(lambda x: x[i], xs))  # noqa: B023 (i is used at once)
        return carry, jax.tree.map(lambda *y: jnp.stack(y), *ys)

    return scan


def unrolled_choice(original):
    """`jax.random.choice`'s signature: a weighted draw with replacement from `a` (an int or a 1-D array) is
    `draws.weighted_choice` (the same draw, no loop); anything else goes to `original`."""

    def choice(key, a, shape=(), replace=True, p=None, axis=0, **kwargs):
        if p is None or not replace or axis != 0 or jnp.ndim(a) > 1 or kwargs:
            return original(key, a, shape, replace, p, axis, **kwargs)
        if not jnp.issubdtype(jnp.asarray(p).dtype, jnp.floating):
            return original(key, a, shape, replace, p, axis)
        return weighted_choice(key, a, shape, jnp.asarray(p))

    return choice


@contextlib.contextmanager
def short_loops_unrolled(max_length: int = SHORT_SCAN):
    """While open in this thread, `jax.lax.scan` of static length <= `max_length` runs as a Python loop and weighted
    `jax.random.choice` searches without a loop (see the module doc); other threads see jax as it is."""
    if getattr(_THREAD, "max_length", None) is not None:  # already inside one in this thread: nothing to add
        yield
        return
    _install()
    _THREAD.max_length = max_length
    try:
        yield
    finally:
        _THREAD.max_length = None
        _uninstall()


# Routers in jax's place while any thread has a context open; each call looks up its own thread's setting.
_THREAD = threading.local()  # max_length inside a context, None (or unset) outside
_ORIGINAL: dict = {}         # jax.lax.scan and jax.random.choice as the first context found them
_open = 0                    # contexts open in all threads


def _route_scan(*args, **kwargs):
    max_length = getattr(_THREAD, "max_length", None)
    scan = _ORIGINAL["scan"]
    return (scan if max_length is None else unrolled_scan(scan, max_length))(*args, **kwargs)


def _route_choice(*args, **kwargs):
    choice = _ORIGINAL["choice"]
    return (choice if getattr(_THREAD, "max_length", None) is None else unrolled_choice(choice))(*args, **kwargs)


def _install() -> None:
    global _open
    with _LOCK:
        if _open == 0:
            _ORIGINAL.update(scan=jax.lax.scan, choice=jax.random.choice)
            jax.lax.scan, jax.random.choice = _route_scan, _route_choice
        _open += 1


def _uninstall() -> None:
    global _open
    with _LOCK:
        _open -= 1
        if _open == 0:
            jax.lax.scan, jax.random.choice = _ORIGINAL["scan"], _ORIGINAL["choice"]


class UnrolledCrafterEnv(CrafterEnv):
    """CrafterEnv whose step, renderers and world generation trace inside `short_loops_unrolled` (the same outputs
    bit for bit: tests/test_crafter_loops.py)."""

    def observe(self, state):
        with short_loops_unrolled():
            return super().observe(state)

    def reset(self, key, params):
        with short_loops_unrolled():
            return super().reset(key, params)

    def step(self, key, state, action, params):
        with short_loops_unrolled():
            return super().step(key, state, action, params)


class UnrolledCrafter(Crafter):
    """The Crafter game (same name, prompts, scores) whose environments unroll the short loops."""

    def read_options(self, data=None, where="game_options", problems=None):
        """Crafter's options; `step_loops: unrolled` (configurations and saved runs from before the experiment left
        the package, which refuses it) reads as what this game runs: scan, unrolled while tracing."""
        if isinstance(data, Mapping) and data.get("step_loops") == "unrolled":
            data = {**data, "step_loops": "scan"}
        return super().read_options(data, where, problems)

    def make_env(self, observation="symbolic", options=None):
        self.read_options(options)
        return UnrolledCrafterEnv(observation=observation)


@contextlib.contextmanager
def unrolled_crafter():
    """While open, the registry's "crafter" is `UnrolledCrafter` (runs, trainers and benchmarks made inside use it)."""
    before = games.GAMES["crafter"]
    games.register("crafter", UnrolledCrafter())
    try:
        yield
    finally:
        games.register("crafter", before)


def make_env(variant: str, observation: str = "pixels") -> CrafterEnv:
    """Crafter's env with its short loops as craftax writes them ("scan") or "unrolled"."""
    if variant not in ("scan", "unrolled"):
        raise ValueError(f"variant: {variant!r} is not one of 'scan', 'unrolled'")
    return (UnrolledCrafterEnv if variant == "unrolled" else CrafterEnv)(observation=observation)


if __name__ == "__main__":  # the envgen-jax command with Crafter's short loops unrolled
    from envgen_jax.cli import main

    with unrolled_crafter():
        sys.exit(main(sys.argv[1:]))
