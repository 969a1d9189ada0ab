"""Orbax checkpoint round trip: a restored run continues exactly like the uninterrupted one."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.trainer import probes
from envgen_jax.trainer.checkpoint import load_metadata, restore_checkpoint, save_checkpoint
from envgen_jax.trainer.metrics import to_host
from envgen_jax.trainer.ppo import PPOConfig, make_trainer


def _assert_trees_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_restored_run_continues_exactly(tmp_path):
    env = probes.BanditEnv()
    cfg = PPOConfig(num_envs=8, num_steps=4, update_epochs=2, num_minibatches=2, width=16, depth=1, num_seeds=2,
                    anneal_lr=True, total_updates=20)
    trainer = make_trainer(env, cfg)
    bank = probes.make_bank([1.0, 0.5], shifts=[1, 2])
    rows = jnp.asarray([0, 1] * 4, jnp.int32)

    ts = trainer.init(bank, rows)
    for _ in range(2):  # k = 2 chunks
        ts, _ = trainer.train_chunk(ts, bank, rows, num_updates=3)
    meta = {"chunk": 2, "config": {"lr": cfg.lr}, "seeds": [0, 1]}
    save_checkpoint(tmp_path / "ckpt", ts, meta)
    saved = jax.tree.map(np.array, ts)  # host copy: train_chunk donates its input

    uninterrupted, m_a = trainer.train_chunk(ts, bank, rows, num_updates=3)  # chunk k+1

    restored = restore_checkpoint(tmp_path / "ckpt", like=trainer.abstract_state(bank, rows))
    _assert_trees_equal(restored, saved)
    resumed, m_b = trainer.train_chunk(restored, bank, rows, num_updates=3)

    _assert_trees_equal(resumed, uninterrupted)
    _assert_trees_equal(to_host(m_a), to_host(m_b))
    assert int(resumed.update_step[0]) == 9
    assert load_metadata(tmp_path / "ckpt") == meta

    with pytest.raises(FileExistsError):
        save_checkpoint(tmp_path / "ckpt", resumed)
    save_checkpoint(tmp_path / "ckpt", resumed, overwrite=True)
    _assert_trees_equal(restore_checkpoint(tmp_path / "ckpt", like=resumed), resumed)
