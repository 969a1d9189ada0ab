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
from envgen_jax.trainer import probes
from envgen_jax.trainer.config import ExecutionConfig, PPOAlgorithm, TrainerConfig
from envgen_jax.trainer.encoders import ConvNet, NetworkConfig
from envgen_jax.trainer.factory import make_trainer
from envgen_jax.trainer.metrics import to_host
from tests.conftest import random_actions
from tests.trainer_configs import with_encoder, with_ppo

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


def _conv_config(how: str) -> TrainerConfig:
    # One stack with one residual block has every kind of convolution the encoder has (the stack's, the block's two):
    # these tests check the machinery, not the network's size, and conv_as_matmul's program compiled in half the time
    # of the two-stack (8, 8) network's (the paper's network has its own smoke below).
    return TrainerConfig(PPOAlgorithm(num_envs=4, num_steps=8, update_epochs=1, num_minibatches=2),
                         NetworkConfig(kind="conv", conv=ConvNet(width=32, channels=(8,), res_blocks=1)),
                         ExecutionConfig(seed_axis="vmap" if how == "dense" else how, conv_as_matmul=how == "dense"),
                         num_agents=2)


def _train_conv(env, how: str, bank, rows, seeds=None):
    """(the chunk's lowered program, params before, params after, metrics) of 2 updates, from blank slots (filled by
    the chunk's reset: no world in the init)."""
    from envgen_jax.trainer.train import _chunk_arguments
    trainer = make_trainer(env, _conv_config(how))
    ts = trainer.init(bank, rows, seeds=seeds, episodes=False)
    program = trainer._chunk_jit.lower(*_chunk_arguments(ts, bank, rows), num_updates=2).as_text()
    before = jax.device_get(ts.params)
    ts, metrics = trainer.train_chunk(ts, bank, rows, num_updates=2, reset=True)
    assert np.asarray(ts.obs).dtype == np.uint8  # rollouts carry bytes, not floats
    return program, before, jax.device_get(ts.params), to_host(metrics)


@pytest.fixture(scope="module")
def conv_run(pixel_env):
    """A tiny conv agent on Crafter's pixels, 2 seeds vmapped (the default), 2 updates: the only training on them."""
    bank = make_params([CrafterConfig.original(), CrafterConfig(target_biome="mountain", wood=3)])
    return _train_conv(pixel_env, "vmap", bank, jnp.array([0, 1, 0, 1], jnp.int32))


@pytest.fixture(scope="module")
def conv_modes():
    """The same conv agent in each execution mode (vmap, map, dense, dense with seed 1 alone) on a pixel probe, a
    bandit drawn as bytes: the modes are the network's and the update's, and each mode's program compiles in seconds
    there, where each took about a minute on Crafter's pixels."""
    env, bank = probes.PixelBanditEnv(), probes.make_bank([1.0, 0.5], shifts=[0, 1])
    rows = jnp.array([0, 1, 0, 1], jnp.int32)
    return {name: _train_conv(env, how, bank, rows, seeds)
            for name, how, seeds in (("vmap", "vmap", None), ("map", "map", None), ("dense", "dense", None),
                                     ("dense_seed1", "dense", [1]))}


def test_conv_agent_trains_on_pixels(conv_run):
    _, before, after, metrics = conv_run
    assert all(np.isfinite(np.asarray(v)).all() for v in vars(metrics.losses).values())
    assert any(not np.allclose(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)))
    assert np.asarray(metrics.env_steps).tolist() == [2 * 4 * 8] * 2


def test_seeds_one_after_another_train_as_vmapped_with_dense_convolutions(conv_modes):
    """execution.seed_axis='map': the chunk runs the agents one after another, so their convolutions stay dense (vmapped
    over parameters they are grouped: feature_group_count = seeds), and each agent trains as in the vmapped program."""
    (vmapped, _, vmap_params, vmap_metrics), (mapped, _, map_params, map_metrics) = conv_modes["vmap"], conv_modes["map"]
    assert "feature_group_count = 2" in vmapped and "feature_group_count = 2" not in mapped
    for a, b in zip(jax.tree.leaves(vmap_params), jax.tree.leaves(map_params)):
        assert a.shape[0] == 2 and np.allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(vmap_metrics.losses.total_loss, map_metrics.losses.total_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(vmap_metrics.rows.episodes, map_metrics.rows.episodes)


def test_dense_seeds_train_as_vmapped_with_matrix_products_and_seed_i_is_run_i(conv_modes):
    """execution.conv_as_matmul: the seeds are vmapped but each 3x3 convolution is patches x kernel, so the program has
    no grouped convolution (a batched matrix product instead); the agents train as the vmapped ones (up to float
    summation order), and seed 1 of the two-seed run is the run of seed 1 alone."""
    (vmapped, _, vmap_params, vmap_metrics), (dense, _, params, metrics) = conv_modes["vmap"], conv_modes["dense"]
    assert "feature_group_count = 2" in vmapped and "feature_group_count" not in dense
    assert "convolution" not in dense  # every convolution, gradients included, became a matrix product
    for a, b in zip(jax.tree.leaves(vmap_params), jax.tree.leaves(params)):
        assert a.shape[0] == 2 and np.allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(vmap_metrics.losses.total_loss, metrics.losses.total_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(vmap_metrics.rows.episodes, metrics.rows.episodes)
    _, _, alone, alone_metrics = conv_modes["dense_seed1"]
    for a, b in zip(jax.tree.leaves(alone), jax.tree.leaves(params)):
        assert a.shape[0] == 1 and np.allclose(a[0], b[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(alone_metrics.losses.total_loss[0], metrics.losses.total_loss[1], rtol=1e-4, atol=1e-6)
    # the probe's agents did learn something different per seed (else equal parameters would prove little)
    assert any(not np.allclose(a[0], a[1]) for a in jax.tree.leaves(params))


def test_paper_agent_preset_is_the_papers_network_and_trains(pixel_env):
    """configs/crafter_ppo_paper_agent.yaml: the AD repository's network (about 4M parameters, the paper's count)
    and its PPO settings; a one-update smoke of the preset's network structure (GroupNorm stacks, LayerNorm
    bottleneck, the 1024-wide layer) at tiny widths: at full width its convolution gradients take minutes on CPU."""
    import dataclasses

    from envgen_jax.run.parts import RunParts, parameter_count
    from envgen_jax.run_config import load_run_config

    cfg = load_run_config("configs/crafter_ppo_paper_agent.yaml")
    envgen = load_run_config("configs/crafter_envgen_paper_agent.yaml")
    assert (cfg.method, envgen.method) == ("ppo", "envgen") and envgen.trainer_ppo == cfg.trainer_ppo
    assert cfg.observation == "pixels"
    p = cfg.ppo
    assert (p.num_envs, p.num_steps, p.update_epochs, p.num_minibatches) == (8, 512, 3, 8)
    assert (p.gamma, p.gae_lambda, p.lr, p.ent_coef, p.max_grad_norm) == (0.95, 0.65, 3e-4, 0.01, 0.5)
    assert p.value_norm and p.value_norm_decay == 0.99 and p.adv_norm == "batch" and not p.clip_value
    c = cfg.network.conv
    assert (cfg.network.kind, c.channels, c.res_blocks, c.norm, c.width, c.head_width) == \
        ("conv", (64, 128, 128), 2, True, 256, 1024)
    assert 3.8e6 < parameter_count(RunParts.of(cfg)) < 4.2e6  # the paper: "about 4M"

    tiny = with_encoder(with_ppo(cfg.trainer_ppo, num_envs=2, num_steps=4, num_minibatches=2, update_epochs=1),
                        channels=(4, 8), width=16, head_width=32)
    # On a pixel probe of Crafter's picture size (the network's input and flattened sizes as on Crafter): what is
    # tested is the preset's network and update, and Crafter's pixels train in test_conv_agent_trains_on_pixels.
    height, width, _ = pixel_env.obs_shape
    assert height == width
    trainer = make_trainer(probes.PixelBanditEnv(size=height), tiny)
    bank = probes.make_bank([1.0])
    rows = jnp.zeros(2, jnp.int32)
    ts = trainer.init(bank, rows, episodes=False)
    before = jax.tree.leaves(jax.device_get(ts.params))
    ts, metrics = trainer.train_chunk(ts, bank, rows, num_updates=1, reset=True)
    losses = to_host(metrics).losses
    assert all(np.isfinite(np.asarray(v)).all() for v in vars(losses).values())
    assert any(not np.allclose(a, b) for a, b in zip(before, jax.tree.leaves(jax.device_get(ts.params))))
