"""Training sharded over several (forced) CPU devices gives the same results as on one device; the layout rules."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envgen_jax.trainer.sharding import describe, layout
from tests.fast_compile import xla_flags

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, numpy as np
    from envgen_jax.trainer import probes
    from envgen_jax.trainer.config import PPOAlgorithm, TrainerConfig
    from envgen_jax.trainer.encoders import MLPNet, NetworkConfig
    from envgen_jax.trainer.factory import make_trainer
    from envgen_jax.trainer.sharding import device_mesh, shard_train_state
    assert jax.device_count() == 2, jax.devices()
    seeds, envs = int(sys.argv[1]), 8
    cfg = TrainerConfig(PPOAlgorithm(num_envs=envs, num_steps=8, update_epochs=1, num_minibatches=2),
                        NetworkConfig(mlp=MLPNet(width=32, depth=1)), num_agents=seeds)
    # a bandit whose two rows reward other actions: what is sharded is the trainer's state, whatever the game
    env, bank = probes.BanditEnv(), probes.make_bank([1.0, 0.5], shifts=[0, 1])
    rows = np.arange(envs) % 2
    out = {}
    for name, devices in [("one", jax.devices()[:1]), ("two", jax.devices())]:
        trainer = make_trainer(env, cfg)
        # blank env slots, filled by the sharded chunk's own reset (the init program makes no world)
        ts = shard_train_state(trainer.init(bank, rows, episodes=False), envs, device_mesh(devices))
        ts, metrics = trainer.train_chunk(ts, bank, rows, num_updates=2, reset=True)
        out[name] = {"params": [np.asarray(x).tolist() for x in jax.tree.leaves(ts.params)][:2],
                     "episodes": np.asarray(metrics.rows.episodes).tolist(),
                     "devices": len(jax.tree.leaves(ts.obs)[0].sharding.device_set)}
    print(json.dumps(out))
""")


def test_layout_rules():
    assert layout(8, 1024, 1) == "replicated"
    assert layout(8, 1024, 4) == "agents"  # whole agents per device when they divide evenly
    assert layout(3, 1024, 4) == "envs"  # else each agent's env slots
    assert layout(8, 1024, 4, shard="envs") == "envs"  # forced
    with pytest.raises(ValueError, match="multiple of the device count"):
        layout(3, 10, 4)
    with pytest.raises(ValueError, match="execution.shard=agents: cannot split 3 agent"):
        layout(3, 1024, 4, shard="agents")
    with pytest.raises(ValueError, match="execution.shard=envs: cannot split 10 env slots"):
        layout(8, 10, 4, shard="envs")
    with pytest.raises(ValueError, match="'seeds' is not one of auto, agents, envs"):
        layout(8, 8, 2, shard="seeds")


def test_the_dry_run_says_which_layout_applies_and_what_each_device_holds(capsys):
    assert describe(16, 1024, 8) == ("agents over 8 devices: 2 whole agent(s) per device (1024 env slots each), "
                                     "no gradient crosses devices")
    assert describe(1, 1024, 8).startswith("envs over 8 devices: 128 of each agent's 1024 env slots per device")
    from envgen_jax.cli import main
    assert main(["train", "--config", str(ROOT / "configs" / "ppo_smoke.yaml"), "--set", "seeds=2",
                 "execution.shard=envs", "--dry-run"]) == 0
    assert "devices: one device: all 2 agent(s) x 32 env slots on it" in capsys.readouterr().out
    assert main(["train", "--config", str(ROOT / "configs" / "ppo_smoke.yaml"), "--set", "execution.shard=gpus",
                 "--dry-run"]) == 1
    assert "execution.shard" in capsys.readouterr().err
    # a fused study: the whole agent axis (methods x seeds) of each program
    assert main(["study", "--config", str(ROOT / "configs" / "ppo_smoke.yaml"), "--methods", "ppo,random",
                 "--seeds", "2", "--grouping", "fused", "--dry-run"]) == 0
    assert "devices (paper loop): one device: all 4 agent(s) x 32 env slots on it" in capsys.readouterr().out


# Whole agents per device (2 seeds on 2 devices) is tested end to end by tests/test_multiprocess.py.
@pytest.mark.parametrize("seeds", [1])  # 1 seed: split by env slot
def test_two_forced_devices_match_one(seeds):
    # Two host devices, and the fast-compile flags: these tiny programs are compiled, not timed.
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": xla_flags("--xla_force_host_platform_device_count=2")}
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(seeds)], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["one"]["devices"] == 1 and out["two"]["devices"] == 2
    assert out["one"]["episodes"] == out["two"]["episodes"]
    import numpy as np
    for a, b in zip(out["one"]["params"], out["two"]["params"]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
