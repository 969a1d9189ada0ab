"""Batched environments with per-environment configuration rows and config-aware auto-resets.

Every environment slot i runs row `rows[i]` of a bank (`envs.bank.Bank`). When an episode ends, the slot's next world
must come from its own row: craftax's auto-reset generates a whole world for every environment on every step (about
48x slower than stepping on CPU), and Craftax_Baselines' shared reset pool is built from one params, so with
per-env configs it hands out worlds of the wrong configuration.

Here each slot keeps a *spare* world, pre-generated from its own row. At an episode end the spare is swapped in (a
select, no generation), and the spare is marked stale. Each step regenerates at most `resets_per_step` stale spares,
chosen round-robin, again from each slot's own row. So the per-step cost is a fixed, small number of world
generations, and a new world never comes from another row. If a slot ends episodes faster than its spare is
refreshed, it restarts in its previous starting world (still its own row); `StepInfo.stale_reset` counts those so the
rate can be tuned.

Two layouts (`rows` argument of reset/step):
* fixed (an i32[N] array, the default): slot i always runs row rows[i], as above;
* sampled (a `RowSampler(probs)`, probs a traced f32[K] of weights): each episode's row is drawn from `probs`.
  A slot's spare is generated from a row sampled when the spare is (re)generated, and `VecState.spare_row` keeps
  it; at an episode end the slot swaps in the spare *and its row*, so every episode runs, and is recorded under,
  the row its world came from (a stale restart reuses the spare and its row). New probs never recompile; the
  refresh still costs `refresh_count` generations per step. The fixed layout carries no row fields and
  takes exactly the code path (and PRNG splits) it took before the sampled layout existed; the sampled one's state
  is a `SampledVecState`.

The env protocol (gymnax-style, one environment): `reset(key, params) -> (obs, state)`,
`step(key, state, action, params) -> (obs, state, reward, done, info)` with info["truncated"] and
info["achievements"]; attributes `obs_shape`, `num_actions`, `achievement_names`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envgen_jax.envs.bank import Bank
from envgen_jax.envs.draws import weighted_choice


@struct.dataclass
class VecState:
    env: Any                 # [N] environment states
    spare: Any               # [N] pre-generated next worlds, each from its slot's own row
    spare_obs: jax.Array     # [N, *obs_shape] observations of the spares
    spare_fresh: jax.Array   # bool[N]: the spare has not been used yet
    episode_return: jax.Array  # f32[N] running return of the current episode
    episode_length: jax.Array  # i32[N]
    refresh_cursor: jax.Array  # i32: where the round-robin refresh continues


@struct.dataclass
class SampledVecState(VecState):
    """VecState of the sampled layout (a subclass, so the fixed layout's state and checkpoints stay as they were)."""

    row: jax.Array        # i32[N]: the row of each slot's current world
    spare_row: jax.Array  # i32[N]: the row each spare was generated from


@struct.dataclass
class RowSampler:
    """The sampled layout: every episode's row is drawn from `probs` (f32[K] nonnegative weights, normalised when
    drawn; traced, so new values never recompile). Rows with weight 0 are never drawn."""

    probs: jax.Array

    def draw(self, key: jax.Array, n: int) -> jax.Array:
        # jax.random.choice's draw, with no while loop for a GPU to launch on every step (envs/draws.py)
        return weighted_choice(key, self.probs.shape[-1], (n,), self.probs).astype(jnp.int32)

    @classmethod
    def one_row(cls, rows, num_rows: int, seeds: int) -> "RowSampler | None":
        """Fixed rows (i32[N] or [S, N], host) as a sampled layout that draws each seed's only row, with probs
        f32[S, K] one-hot; None when some seed's slots run several rows. A method that samples the rows of some
        phases runs its other phases so, and all its phases share one compiled chunk (the two layouts' env states
        differ in type, so they compile apart)."""
        rows = np.broadcast_to(np.asarray(rows, np.int32), (seeds, np.shape(rows)[-1]))
        if (rows != rows[:, :1]).any():
            return None
        return cls(jax.device_put(np.eye(num_rows, dtype=np.float32)[rows[:, 0]]))


@struct.dataclass
class StepInfo:
    """Per-step outputs, all with leading [N]. Episode fields describe the episode that just ended (valid where done)."""

    reward: jax.Array
    done: jax.Array
    truncated: jax.Array       # ended by the time limit, not by death
    episode_return: jax.Array
    episode_length: jax.Array
    achievements: jax.Array    # bool[N, A]: unlocked in the finished episode
    available: jax.Array       # bool[N, A]: the finished episode offered the achievement (Heist: a key that exists)
    row: jax.Array             # i32[N]: the config row the slot ran
    stale_reset: jax.Array     # bool[N]: done, and the restart reused the previous starting world


def _select(mask, on_true, on_false):
    """Leafwise per-env select with a [N] mask broadcast over trailing dims."""
    def pick(a, b):
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)
    return jax.tree.map(pick, on_true, on_false)


@dataclasses.dataclass(frozen=True)
class VecEnv:
    """`num_envs` copies of `env`, each running its own bank row. Static (hashable): closed over by jitted code."""

    env: Any
    num_envs: int
    # 0 means max(1, num_envs // 256): on a CPU one Crafter world costs about 95 env steps (craftax's noise), so
    # this spends about a third of a step on resets and keeps spares fresh for episodes of 256+ steps.
    resets_per_step: int = 0

    @property
    def refresh_count(self) -> int:
        return min(self.num_envs, self.resets_per_step or max(1, self.num_envs // 256))

    def reset(self, key: jax.Array, bank: Bank, rows: "jax.Array | RowSampler") -> tuple[jax.Array, VecState]:
        """Fresh worlds (and fresh spares) for every slot from its row (fixed layout) or from rows drawn from
        `rows.probs` (sampled layout). Call after changing which rows slots run."""
        n = self.num_envs
        if isinstance(rows, RowSampler):
            key_now, key_spare, key_rows = jax.random.split(key, 3)
            row, spare_row = rows.draw(key_rows, 2 * n).reshape(2, n)
        else:
            key_now, key_spare = jax.random.split(key)
            row = spare_row = rows
        # The worlds, then their spares: two turns of one loop, so world generation is compiled once, not twice
        # (one vmap over 2n slots would compile it once too, but XLA's CPU kernels then round some spares' floats
        # otherwise than at n: other worlds).
        keys = jnp.stack([jax.random.split(key_now, n), jax.random.split(key_spare, n)])
        params = jax.tree.map(lambda *p: jnp.stack(p), bank.get(row), bank.get(spare_row))
        both_obs, both = jax.lax.map(lambda kp: jax.vmap(self.env.reset)(*kp), (keys, params))
        (obs, state), (spare_obs, spare) = (jax.tree.map(lambda x, i=i: x[i], (both_obs, both)) for i in (0, 1))
        fields = dict(env=state, spare=spare, spare_obs=spare_obs, spare_fresh=jnp.ones(n, bool),
                      episode_return=jnp.zeros(n, jnp.float32), episode_length=jnp.zeros(n, jnp.int32),
                      refresh_cursor=jnp.zeros((), jnp.int32))
        if isinstance(rows, RowSampler):
            return obs, SampledVecState(**fields, row=row, spare_row=spare_row)
        return obs, VecState(**fields)

    def step(self, key: jax.Array, vstate: VecState, actions: jax.Array, bank: Bank, rows: "jax.Array | RowSampler"):
        sampler = rows if isinstance(rows, RowSampler) else None
        if sampler is not None:
            rows = vstate.row
        key_step, key_refresh = jax.random.split(key)
        params = bank.get(rows)
        obs, state, reward, done, info = jax.vmap(self.env.step)(
            jax.random.split(key_step, self.num_envs), vstate.env, actions, params)

        episode_return = vstate.episode_return + reward
        episode_length = vstate.episode_length + 1
        step_info = StepInfo(
            reward=reward, done=done, truncated=info["truncated"] & done, episode_return=episode_return,
            episode_length=episode_length, achievements=info["achievements"],
            available=info.get("achievements_available", jnp.ones_like(info["achievements"])), row=rows,
            stale_reset=done & ~vstate.spare_fresh)

        # Episode ends: swap in the spare world (already generated from this slot's row).
        state = _select(done, vstate.spare, state)
        obs = jnp.where(done.reshape(done.shape + (1,) * (obs.ndim - 1)), vstate.spare_obs, obs)
        vstate = vstate.replace(env=state, spare_fresh=vstate.spare_fresh & ~done,
                                episode_return=jnp.where(done, 0.0, episode_return),
                                episode_length=jnp.where(done, 0, episode_length))
        if sampler is not None:  # the next episode runs the spare's row
            vstate = vstate.replace(row=jnp.where(done, vstate.spare_row, vstate.row))
        return obs, self._refresh_spares(key_refresh, vstate, bank, rows, sampler), step_info

    def _refresh_spares(self, key, vstate: VecState, bank: Bank, rows, sampler: RowSampler | None = None) -> VecState:
        """Regenerate up to `refresh_count` stale spares, round-robin from the cursor, each from its own row
        (fixed layout) or from a row freshly drawn from the sampler (sampled layout)."""
        n, k = self.num_envs, self.refresh_count
        stale_from_cursor = jnp.roll(~vstate.spare_fresh, -vstate.refresh_cursor)
        (picked,) = jnp.nonzero(stale_from_cursor, size=k, fill_value=n)
        valid = picked < n
        slots = jnp.where(valid, (picked + vstate.refresh_cursor) % n, n)  # n = out of range: dropped below
        if sampler is None:
            new_rows = rows[jnp.minimum(slots, n - 1)]
        else:
            key, key_rows = jax.random.split(key)
            new_rows = sampler.draw(key_rows, k)
        new_obs, new_spare = jax.vmap(self.env.reset)(jax.random.split(key, k), bank.get(new_rows))
        scatter = lambda old, new: old.at[slots].set(new, mode="drop")  # noqa: E731
        last = jnp.max(jnp.where(valid, picked, -1))
        if sampler is not None:
            vstate = vstate.replace(spare_row=scatter(vstate.spare_row, new_rows))
        return vstate.replace(
            spare=jax.tree.map(scatter, vstate.spare, new_spare),
            spare_obs=scatter(vstate.spare_obs, new_obs),
            spare_fresh=vstate.spare_fresh.at[slots].set(True, mode="drop"),
            refresh_cursor=(vstate.refresh_cursor + last + 1) % n)
