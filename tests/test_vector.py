"""VecEnv: every auto-reset world comes from the resetting slot's own config row."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.envs.crafter import CrafterConfig, make_params
from envgen_jax.envs.vector import VecEnv

N, ROWS, T = 8, 4, 90
LENGTHS = [4, 5, 6, 7]


@pytest.fixture(scope="module")
def run(crafter_env):
    # Row r starts with r saplings (a marker readable at every reset) and ends episodes after LENGTHS[r] steps.
    bank = make_params([CrafterConfig(sapling=r, episode_length=LENGTHS[r], peaceful=True) for r in range(ROWS)])
    rows = jnp.arange(N) % ROWS
    venv = VecEnv(crafter_env, N, resets_per_step=1)

    @jax.jit
    def rollout(key):
        reset_key, run_key = jax.random.split(key)
        _, vstate = venv.reset(reset_key, bank, rows)

        def body(vstate, key):
            act_key, step_key = jax.random.split(key)
            actions = jax.random.randint(act_key, (N,), 0, 6)  # moves and noop/do: never places saplings
            obs, vstate, info = venv.step(step_key, vstate, actions, bank, rows)
            return vstate, (info, vstate.env.inventory.sapling, vstate.env.timestep, vstate.env.map, obs)

        return jax.lax.scan(body, vstate, jax.random.split(run_key, T))[1]

    return rows, jax.device_get(rollout(jax.random.PRNGKey(0)))


def test_resets_come_from_own_row(run):
    rows, (info, sapling, timestep, maps, obs) = run
    rows = np.asarray(rows)
    done = np.asarray(info.done)
    assert done.sum() >= 4 * N
    t_idx, slot = np.nonzero(done)
    assert (timestep[t_idx, slot] == 0).all()
    # Saplings can be collected mid-episode, but a fresh episode starts with exactly its row's marker.
    assert (sapling[t_idx, slot] == rows[slot]).all()
    assert (info.row == rows[None]).all()


def test_episode_accounting(run):
    rows, (info, *_rest) = run
    t_idx, slot = np.nonzero(info.done)
    lengths = info.episode_length[t_idx, slot]
    expected = np.asarray(LENGTHS)[np.asarray(rows)[slot]]
    truncated = info.truncated[t_idx, slot]
    assert (lengths[truncated] == expected[truncated]).all()
    assert (lengths <= expected).all()


def test_spares_refresh_and_stale_restarts_stay_in_row(run):
    rows, (info, sapling, timestep, maps, obs) = run
    done = np.asarray(info.done)
    stale = np.asarray(info.stale_reset)
    # One refresh per step for 8 slots ending every 4-7 steps: some restarts must reuse the previous world.
    assert stale.any() and (done & ~stale).any()
    # A fresh restart gets a new world; a stale one restarts the slot's previous starting world.
    for slot in range(N):
        starts = np.nonzero(done[:, slot])[0]
        for prev, nxt in zip(starts, starts[1:]):
            same = (maps[prev, slot] == maps[nxt, slot]).all()
            assert same == bool(stale[nxt, slot]), (slot, prev, nxt)


def test_row_stats_count_stale_restarts_per_row(run):
    from envgen_jax.trainer.metrics import row_stats_from_steps

    rows, (info, *_rest) = run
    stats = jax.device_get(row_stats_from_steps(info, ROWS))
    done, stale, row = np.asarray(info.done), np.asarray(info.stale_reset), np.asarray(info.row)
    expected = [int((done & stale & (row == r)).sum()) for r in range(ROWS)]
    assert np.asarray(stats.stale_resets).tolist() == expected
    assert 0 < sum(expected) < int(np.asarray(stats.episodes).sum())
