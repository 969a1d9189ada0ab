"""Pixel observations: craftax's own pixel view (as bytes) for the original config, and the conv agent trains on it.

The first use builds craftax's texture cache (~20 s once per install); the compiles here take about a minute on CI.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from craftax.craftax_classic.envs.craftax_pixels_env import CraftaxClassicPixelsEnvNoAutoReset
from craftax.craftax_classic.envs.craftax_state import EnvParams

from envgen_jax.envs.crafter import CrafterConfig, CrafterEnv, config_to_params, make_params
from envgen_jax.trainer.metrics import to_host
from envgen_jax.trainer.ppo import PPOConfig
from envgen_jax.trainer.train import make_trainer
from tests.conftest import random_actions

STEPS = 12


def _rollout(reset, step):
    def run(key, actions, params):
        reset_key, step_key = jax.random.split(key)
        obs0, state = reset(reset_key, params)

        def body(state, inputs):
            key, action = inputs
            obs, state, *_ = step(key, state, action, params)
            return state, obs

        return obs0, jax.lax.scan(body, state, (jax.random.split(step_key, STEPS), actions))[1]

    return jax.jit(run)


@pytest.fixture(scope="module")
def pixel_env():
    return CrafterEnv(observation="pixels")


def test_pixels_are_craftax_pixels_as_bytes(pixel_env):
    key, actions = jax.random.PRNGKey(3), random_actions(5, STEPS)
    ours0, ours = _rollout(pixel_env.reset, pixel_env.step)(key, actions, config_to_params(CrafterConfig.original()))
    upstream = CraftaxClassicPixelsEnvNoAutoReset()
    theirs0, theirs = _rollout(upstream.reset, upstream.step)(key, actions, EnvParams())
    assert ours.shape == (STEPS, *pixel_env.obs_shape) and ours.dtype == pixel_env.obs_dtype == jnp.uint8
    for a, b in ((ours0, theirs0), (ours, theirs)):
        expected = np.clip(np.round(np.asarray(b, np.float64) * 255.0), 0, 255)
        diff = np.abs(np.asarray(a, np.int32) - expected)
        assert diff.max() <= 1 and (diff == 0).mean() > 0.99  # equal up to the float -> byte rounding
    assert len(np.unique(np.asarray(ours))) > 20  # a picture, not a blank


def test_conv_agent_trains_on_pixels(pixel_env):
    cfg = PPOConfig(num_envs=4, num_steps=8, update_epochs=1, num_minibatches=2, network="conv", width=32,
                    conv_channels=(8, 8))
    trainer = make_trainer(pixel_env, cfg)
    bank = make_params([CrafterConfig.original(), CrafterConfig(target_biome="mountain", wood=3)])
    rows = jnp.array([0, 1, 0, 1], jnp.int32)
    ts = trainer.init(bank, rows)
    before = jax.tree.leaves(jax.device_get(ts.params))
    ts, metrics = trainer.train_chunk(ts, bank, rows, num_updates=2)
    metrics = to_host(metrics)
    assert np.asarray(ts.obs).dtype == np.uint8  # rollouts carry bytes, not floats
    assert all(np.isfinite(np.asarray(v)).all() for v in vars(metrics.losses).values())
    after = jax.tree.leaves(jax.device_get(ts.params))
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    assert int(np.asarray(metrics.env_steps)[0]) == 2 * 4 * 8
