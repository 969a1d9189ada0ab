"""Weighted draws without a while loop.

`jax.random.choice(key, a, shape, p=p)` with replacement draws by inverse CDF: one uniform number per draw, scaled to
the total weight, looked up among the running sums of the weights by a binary search (`jnp.searchsorted`), which XLA
compiles as a while loop. On a GPU every iteration of a while loop is launched from the host, so a draw made on every
env step (a spawn cell, a mob's move, the bank row of the next episode) costs launches, not work. `weighted_choice`
is the same draw with the search unrolled (`method="scan_unrolled"`): the same uniform numbers, running sums and
comparisons, so the same result bit for bit (tests/test_crafter_loops.py checks it against `jax.random.choice`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def weighted_choice(key: jax.Array, a, shape, p: jax.Array) -> jax.Array:
    """`jax.random.choice(key, a, shape, replace=True, p=p)` for `a` an int (draw indices) or a 1-D array and `p`
    float weights (nonnegative, any total), with no loop in the program."""
    n = int(a) if jnp.ndim(a) == 0 else jnp.shape(a)[0]
    if jnp.ndim(a) > 1 or jnp.shape(p) != (n,):
        raise ValueError(f"weighted_choice: `a` an int or 1-D and `p` of shape ({n},), got a {jnp.shape(a)} "
                         f"and p {jnp.shape(p)}")
    if n == 1:  # the one index there is (jax's unrolled search keeps a loop for a single entry)
        index = jnp.zeros(tuple(shape), int)
    else:
        cumulative = jnp.cumsum(p)
        target = cumulative[-1] * (1 - jax.random.uniform(key, tuple(shape), dtype=cumulative.dtype))
        index = jnp.searchsorted(cumulative, target, method="scan_unrolled").astype(int)
    return index if jnp.ndim(a) == 0 else jnp.take(jnp.asarray(a), index, 0)
