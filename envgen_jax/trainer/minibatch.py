"""Minibatches of one rollout for PPO's epochs: single steps (feed-forward agents) or whole env-slot sequences
(recurrent agents, which must be unrolled from a stored memory).

`minibatcher(recurrent)(batch, memory, num_minibatches)` takes the rollout's [T, N] leaves (and, recurrent, the
memory [N, H] the rollout started from) and returns `shuffle(key) -> (minibatches, memories)`: one epoch's
minibatches with a leading [M] axis, and their initial memories [M, n, H] (None for single steps).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def steps(batch, memory, num_minibatches: int):
    """Every step is a sample: [T, N] leaves flattened to [T*N], shuffled, cut into [M, T*N/M]."""
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batch)
    size = jax.tree.leaves(flat)[0].shape[0]

    def shuffle(key):
        perm = jax.random.permutation(key, size)
        return jax.tree.map(lambda x: jnp.take(x, perm, axis=0).reshape(
            (num_minibatches, size // num_minibatches) + x.shape[1:]), flat), None

    return shuffle


def sequences(batch, memory, num_minibatches: int):
    """Every env slot is a sample: its whole trajectory ([T, N] -> [M, T, n]) and its initial memory ([N, H] ->
    [M, n, H]), so the learner replays each slot's memory as the rollout built it."""
    num_envs = jax.tree.leaves(batch)[0].shape[1]
    m, n = num_minibatches, num_envs // num_minibatches

    def shuffle(key):
        perm = jax.random.permutation(key, num_envs)
        seq = jax.tree.map(lambda x: jnp.swapaxes(jnp.take(x, perm, axis=1).reshape(
            (x.shape[0], m, n) + x.shape[2:]), 0, 1), batch)
        mem = jax.tree.map(lambda x: jnp.take(x, perm, axis=0).reshape((m, n) + x.shape[1:]), memory)
        return seq, mem

    return shuffle


def minibatcher(recurrent: bool):
    return sequences if recurrent else steps
