"""Probe environments: tiny envs with known values or policies that catch sign, discount and masking bugs.

They follow the project's env protocol (gymnax-style, one environment; `envgen_jax.envs.vector.VecEnv` batches them):
`reset(key, params) -> (obs, state)`, `step(key, state, action, params) -> (obs, state, reward, done, info)` with
`info = {"truncated": bool, "achievements": bool[A]}`, plus `num_actions`, `obs_shape`, `achievement_names`.

Rewards are traced params (`ProbeParams`), so a bank of several rows exercises the per-row plumbing and the
no-retrace contract exactly as the Crafter config bank does. `make_bank(rewards)` stacks rows.

| env                  | episode                    | target                                              |
|----------------------|----------------------------|-----------------------------------------------------|
| `ConstantRewardEnv`  | 1 step, reward r           | V = r                                               |
| `TwoObsEnv`          | 1 step, obs c in {0,1}     | V(c) = r_c                                          |
| `DiscountEnv`        | 2 steps, reward r at end   | V(t=0) = gamma * r, V(t=1) = r                      |
| `BanditEnv`          | 1 step, C contexts         | pi(a* given c) -> 1, with a* = (c + shift) % A      |
| `TimeLimitEnv`       | reward r per step, cut at L| V = r / (1 - gamma) if truncation bootstraps        |
| `MarkerEnv`          | reward[0] steps, reward 0  | obs one-hot of `shift`: reveals the world's row     |
| `SkillEnv`           | 1 step, per-row difficulty | learnable (1, 0), trivial (1, 1), impossible (0, 0) |
| `CueMemoryEnv`       | cue at t=0, act at t=delay | recurrent: return -> r; feed-forward: r / 2 at best |
| `PixelBanditEnv`     | `BanditEnv` as a picture   | as BanditEnv, for conv agents (bytes [H, W, 3])     |
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envgen_jax.envs.bank import Bank


@struct.dataclass
class ProbeParams:
    reward: jax.Array  # f32[2]: per-context (or per-episode) reward; envs with one reward use reward[0]
    shift: jax.Array  # i32: BanditEnv's rewarded action is (context + shift) % num_actions


def make_bank(rewards, shifts=None) -> Bank:
    """A bank of K rows: `rewards` is [K] or [K, 2] floats, `shifts` [K] ints (default 0)."""
    r = np.asarray(rewards, np.float32)
    if r.ndim == 1:
        r = np.stack([r, r], axis=1)
    shifts = np.zeros(len(r), np.int32) if shifts is None else np.asarray(shifts, np.int32)
    return Bank(ProbeParams(reward=jnp.asarray(r), shift=jnp.asarray(shifts)))


@struct.dataclass
class ProbeState:
    t: jax.Array  # i32 step within the episode
    context: jax.Array  # i32


def _info(truncated, achievements):
    return {"truncated": jnp.asarray(truncated, bool), "achievements": jnp.asarray(achievements, bool)}


@dataclasses.dataclass(frozen=True)
class _Probe:
    obs_dim: int = 4
    num_actions: int = 2
    achievement_names: tuple[str, ...] = ("rewarded",)

    @property
    def obs_shape(self) -> tuple[int, ...]:
        return (self.obs_dim,)

    def _obs(self, idx):
        return jax.nn.one_hot(idx, self.obs_dim, dtype=jnp.float32)


@dataclasses.dataclass(frozen=True)
class ConstantRewardEnv(_Probe):
    """One step, constant obs, reward `params.reward[0]`: V -> r."""

    def reset(self, key, params):
        return self._obs(0), ProbeState(jnp.int32(0), jnp.int32(0))

    def step(self, key, state, action, params):
        r = params.reward[0]
        return self._obs(0), state, r, jnp.bool_(True), _info(False, [r > 0])


@dataclasses.dataclass(frozen=True)
class TwoObsEnv(_Probe):
    """One step; obs one-hot of a random context c in {0, 1}; reward `params.reward[c]`: V(c) -> r_c."""

    def reset(self, key, params):
        c = jax.random.randint(key, (), 0, 2)
        return self._obs(c), ProbeState(jnp.int32(0), c)

    def step(self, key, state, action, params):
        r = params.reward[state.context]
        return self._obs(state.context), state, r, jnp.bool_(True), _info(False, [r > 0])


@dataclasses.dataclass(frozen=True)
class DiscountEnv(_Probe):
    """Two steps, obs one-hot of t; reward 0 then `params.reward[0]`: V(t=0) -> gamma r, V(t=1) -> r."""

    def reset(self, key, params):
        return self._obs(0), ProbeState(jnp.int32(0), jnp.int32(0))

    def step(self, key, state, action, params):
        t = state.t + 1
        done = t >= 2
        r = jnp.where(done, params.reward[0], 0.0)
        return self._obs(t), ProbeState(t, state.context), r, done, _info(False, [r > 0])


@dataclasses.dataclass(frozen=True)
class BanditEnv(_Probe):
    """Contextual bandit: one step, obs one-hot of context c in [0, obs_dim); reward 1 iff a == (c + shift) % A."""

    num_actions: int = 4
    achievement_names: tuple[str, ...] = ("correct", "chose_action_0")

    def reset(self, key, params):
        c = jax.random.randint(key, (), 0, self.obs_dim)
        return self._obs(c), ProbeState(jnp.int32(0), c)

    def step(self, key, state, action, params):
        correct = action == (state.context + params.shift) % self.num_actions
        r = correct.astype(jnp.float32) * params.reward[0]
        return self._obs(state.context), state, r, jnp.bool_(True), _info(False, [correct, action == 0])


@dataclasses.dataclass(frozen=True)
class TimeLimitEnv(_Probe):
    """Constant obs, reward `params.reward[0]` every step, never terminates; truncated after `limit` steps.

    With time-limit bootstrapping V -> r / (1 - gamma); treating the cut as a termination biases V low.
    """

    limit: int = 4

    def reset(self, key, params):
        return self._obs(0), ProbeState(jnp.int32(0), jnp.int32(0))

    def step(self, key, state, action, params):
        t = state.t + 1
        trunc = t >= self.limit
        r = params.reward[0]
        return self._obs(0), ProbeState(t, state.context), r, trunc, _info(trunc, [r > 0])


@dataclasses.dataclass(frozen=True)
class MarkerEnv(_Probe):
    """Obs one-hot of `params.shift` at every step (give each row its own shift and the obs reveals the row of the
    world); episodes end after `params.reward[0]` steps (at least 1); reward 0. Tests the row bookkeeping."""

    obs_dim: int = 8

    def reset(self, key, params):
        return self._obs(params.shift), ProbeState(jnp.int32(0), params.shift)

    def step(self, key, state, action, params):
        t = state.t + 1
        done = t >= jnp.maximum(params.reward[0], 1.0)
        return self._obs(params.shift), ProbeState(t, state.context), jnp.float32(0.0), done, _info(False, [done])


@dataclasses.dataclass(frozen=True)
class SkillEnv(_Probe):
    """Contextual bandit with a per-row difficulty: one step; obs one-hot of a context c in [0, A) next to a
    one-hot of `shift` (give rows distinct shifts and the agent can tell them apart, so a solved row's value is
    exact); reward `reward[0]` for the action (c + shift) % A, `reward[1]` for any other; the achievement
    "success" is reward > 0. Rows (1, 0): learnable; (1, 1): trivial (always succeeds); (0, 0): impossible."""

    obs_dim: int = 8
    num_actions: int = 4
    achievement_names: tuple[str, ...] = ("success",)

    def _skill_obs(self, c, params):
        a = self.num_actions
        return jnp.concatenate([jax.nn.one_hot(c, a), jax.nn.one_hot(params.shift % a, a)]).astype(jnp.float32)

    def reset(self, key, params):
        c = jax.random.randint(key, (), 0, self.num_actions)
        return self._skill_obs(c, params), ProbeState(jnp.int32(0), c)

    def step(self, key, state, action, params):
        correct = action == (state.context + params.shift) % self.num_actions
        r = jnp.where(correct, params.reward[0], params.reward[1])
        return self._skill_obs(state.context, params), state, r, jnp.bool_(True), _info(False, [r > 0])


@dataclasses.dataclass(frozen=True)
class CueMemoryEnv(_Probe):
    """A memory probe: the first obs shows a cue c in {0, 1} (one-hot at index c); the next `delay` obs show only a
    blank (index 2, then 3 at the last step). The episode ends at the step after the last obs; the reward is
    `params.reward[0]` iff that last action equals c. Only a policy that remembers the cue scores above half."""

    delay: int = 2
    achievement_names: tuple[str, ...] = ("recalled",)

    def reset(self, key, params):
        c = jax.random.randint(key, (), 0, 2)
        return self._obs(c), ProbeState(jnp.int32(0), c)

    def step(self, key, state, action, params):
        t = state.t + 1
        done = t > self.delay
        correct = done & (action == state.context)
        r = correct.astype(jnp.float32) * params.reward[0]
        obs = self._obs(jnp.where(t == self.delay, 3, 2))
        return obs, ProbeState(t, state.context), r, done, _info(False, [correct])


@dataclasses.dataclass(frozen=True)
class PixelBanditEnv(BanditEnv):
    """BanditEnv seen as pixels: the context's one-hot drawn as bytes (0 or 255) in every row and channel of a
    [size, size, 3] picture. A conv agent's program on it compiles in seconds, where one on Crafter's pixels takes
    about a minute: for tests of what the network and the update do (execution modes), not of the game."""

    size: int = 8

    @property
    def obs_shape(self) -> tuple[int, ...]:
        return (self.size, self.size, 3)

    def _obs(self, idx):
        columns = (jax.nn.one_hot(idx, self.size) * 255).astype(jnp.uint8)
        return jnp.broadcast_to(columns[None, :, None], self.obs_shape)
