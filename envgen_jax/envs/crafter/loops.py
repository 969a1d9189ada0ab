"""Craftax-Classic's short per-step loops, unrolled while our env traces (`game_options: {step_loops: unrolled}`).

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
(`fori_loop`s, jax.random's own loops, our rollout, which is traced outside the context) are left as they are. It
patches module attributes, so it holds a lock and is meant for tracing, not for running code concurrently on other
threads.
"""

from __future__ import annotations

import contextlib
import threading

import jax
import jax.numpy as jnp

from envgen_jax.envs.draws import weighted_choice

SHORT_SCAN = 32  # Craftax-Classic's per-step scans are 2-17 long; rollouts and epochs are far longer

_LOCK = threading.RLock()


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

    scan.unrolled_from = original
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

    choice.unrolled_from = original
    return choice


@contextlib.contextmanager
def short_loops_unrolled(max_length: int = SHORT_SCAN):
    """While open, `jax.lax.scan` of static length <= `max_length` runs as a Python loop and weighted
    `jax.random.choice` searches without a loop (see the module doc)."""
    with _LOCK:
        scan, choice = jax.lax.scan, jax.random.choice
        if hasattr(scan, "unrolled_from"):  # already inside one: nothing to add
            yield
            return
        jax.lax.scan, jax.random.choice = unrolled_scan(scan, max_length), unrolled_choice(choice)
        try:
            yield
        finally:
            jax.lax.scan, jax.random.choice = scan, choice
