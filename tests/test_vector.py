"""VecEnv: every auto-reset world comes from the resetting slot's own config row.

The vector env's machinery is the game's business nowhere: the fixed layout runs on the toy game (tests/toy.py),
whose rollout compiles in a second or two where Crafter's took 17-30 s; the sampled layout on a probe env."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.envs.vector import VecEnv, VecState

N, ROWS, T = 8, 4, 90
LENGTHS = [4, 5, 6, 7]


@pytest.fixture(scope="module")
def run(toy_module):
    # Row r's rooms hold r coins (a marker readable at every reset), have lava in odd rows (an agent that steps on it
    # dies: episodes that end before the time limit), and time out after LENGTHS[r] steps (its params' max_steps).
    env = toy_module.make_env()
    bank = env.make_params([toy_module.config_cls(coins=r, lava=r % 2 == 1) for r in range(ROWS)])
    bank = bank.replace(params=bank.params.replace(max_steps=jax.device_put(np.asarray(LENGTHS, np.int32))))
    rows = jnp.arange(N) % ROWS
    venv = VecEnv(env, N, resets_per_step=1)

    @jax.jit
    def rollout(key):
        reset_key, run_key = jax.random.split(key)
        _, vstate = venv.reset(reset_key, bank, rows)

        def body(vstate, key):
            act_key, step_key = jax.random.split(key)
            actions = jax.random.randint(act_key, (N,), 0, env.num_actions)  # left, right, jump
            obs, vstate, info = venv.step(step_key, vstate, actions, bank, rows)
            return vstate, (info, vstate.env, obs)

        return jax.lax.scan(body, vstate, jax.random.split(run_key, T))[1]

    return rows, jax.device_get(rollout(jax.random.PRNGKey(0)))


def test_resets_come_from_own_row(run):
    rows, (info, state, obs) = run
    rows = np.asarray(rows)
    done = np.asarray(info.done)
    assert done.sum() >= 4 * N
    t_idx, slot = np.nonzero(done)
    assert (state.time[t_idx, slot] == 0).all()
    # Coins can be collected mid-episode, but a fresh episode starts with exactly its row's marker.
    assert (state.coins.sum(-1)[t_idx, slot] == rows[slot]).all()
    assert (info.row == rows[None]).all()


def test_episode_accounting(run):
    rows, (info, *_rest) = run
    t_idx, slot = np.nonzero(info.done)
    lengths = info.episode_length[t_idx, slot]
    expected = np.asarray(LENGTHS)[np.asarray(rows)[slot]]
    truncated = info.truncated[t_idx, slot]
    assert truncated.any() and (~truncated).any()  # time-limit cuts, and episodes ended by the lava or the exit
    assert (lengths[truncated] == expected[truncated]).all()
    assert (lengths <= expected).all()


def test_spares_refresh_and_stale_restarts_stay_in_row(run):
    rows, (info, state, obs) = run
    done = np.asarray(info.done)
    stale = np.asarray(info.stale_reset)
    # One refresh per step for 8 slots ending every 2-7 steps: some restarts must reuse the previous world.
    assert stale.any() and (done & ~stale).any()
    # A fresh restart gets a new world (the toy's `world`, drawn at reset, differs); a stale one restarts the slot's
    # previous starting world (its whole state: coins, world, time, position).
    for slot in range(N):
        starts = np.nonzero(done[:, slot])[0]
        for prev, nxt in zip(starts, starts[1:]):
            same = all(np.array_equal(x[prev, slot], x[nxt, slot]) for x in jax.tree.leaves(state))
            assert same == bool(stale[nxt, slot]), (slot, prev, nxt)


def test_row_stats_count_stale_restarts_per_row(run):
    from envgen_jax.trainer.metrics import row_stats_from_steps

    rows, (info, *_rest) = run
    stats = jax.device_get(row_stats_from_steps(info, ROWS))
    done, stale, row = np.asarray(info.done), np.asarray(info.stale_reset), np.asarray(info.row)
    expected = [int((done & stale & (row == r)).sum()) for r in range(ROWS)]
    assert np.asarray(stats.stale_resets).tolist() == expected
    assert 0 < sum(expected) < int(np.asarray(stats.episodes).sum())


# -- the sampled layout: each episode's row is drawn from traced probabilities ------------------------------------

class _Sampled:
    """One compiled rollout of MarkerEnv under the sampled layout; counts its Python traces."""

    def __init__(self, num_envs, steps, resets_per_step):
        from envgen_jax.envs.vector import RowSampler
        from envgen_jax.trainer.probes import MarkerEnv

        self.traces = 0
        venv = VecEnv(MarkerEnv(), num_envs, resets_per_step=resets_per_step)

        @jax.jit
        def rollout(key, bank, probs):
            self.traces += 1
            sampler = RowSampler(probs)
            reset_key, run_key = jax.random.split(key)
            obs, vstate = venv.reset(reset_key, bank, sampler)

            def body(carry, key):
                obs, vstate = carry
                next_obs, vstate, info = venv.step(key, vstate, jnp.zeros(num_envs, jnp.int32), bank, sampler)
                return (next_obs, vstate), (obs.argmax(-1), info)

            return jax.lax.scan(body, (obs, vstate), jax.random.split(run_key, steps))[1]

        self.rollout = rollout


def _marker_bank(lengths):
    from envgen_jax.trainer.probes import make_bank
    return make_bank(np.asarray(lengths, np.float32), shifts=np.arange(len(lengths)))


@pytest.fixture(scope="module")
def sampled():
    return _Sampled(num_envs=8, steps=120, resets_per_step=1)


def test_sampled_episodes_are_recorded_under_their_worlds_row(sampled):
    lengths = [1, 2, 3, 5]
    shown, info = jax.device_get(sampled.rollout(jax.random.PRNGKey(1), _marker_bank(lengths),
                                                 jnp.asarray([0.1, 0.2, 0.3, 0.4])))
    # The observation the step ran on reveals its world's row: the step (and its finished episode) is booked there.
    assert (info.row == shown).all()
    done = np.asarray(info.done)
    assert done.sum() > 100 and np.asarray(info.stale_reset).any() and (done & ~info.stale_reset).any()
    # Every finished episode lasted its row's length: no episode mixes two rows.
    assert (info.episode_length[done] == np.asarray(lengths)[info.row[done]]).all()
    assert set(np.unique(info.row[done])) == {0, 1, 2, 3}


def test_sampled_rows_follow_probs_and_new_probs_never_recompile():
    run = _Sampled(num_envs=16, steps=200, resets_per_step=16)  # every spare refreshed each step: draws are iid
    bank = _marker_bank([1, 1, 1, 1])
    for i, probs in enumerate([[0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 0.0, 0.5]]):
        _, info = jax.device_get(run.rollout(jax.random.PRNGKey(i), bank, jnp.asarray(probs)))
        rows = info.row[info.done]
        freq = np.bincount(rows, minlength=4) / rows.size
        assert rows.size == 16 * 200
        np.testing.assert_allclose(freq, probs, atol=0.03)  # 3200 draws: the standard error is below 0.009
    # New contents of the bank and of the probabilities are traced values.
    run.rollout(jax.random.PRNGKey(9), _marker_bank([2, 3, 1, 1]), jnp.asarray([1.0, 0.0, 0.0, 0.0]))
    assert run.traces == 1


def test_fixed_layout_carries_no_row_fields():
    from envgen_jax.trainer.probes import MarkerEnv
    _, vstate = VecEnv(MarkerEnv(), 4).reset(jax.random.PRNGKey(0), _marker_bank([1, 2]), jnp.asarray([0, 1, 0, 1]))
    assert type(vstate) is VecState and not hasattr(vstate, "row")
