"""The agent's options (issue: an agent that learns Crafter at the paper's budget), on probes and tiny shapes:
recurrent policies (unroll = step by step, resets at episode starts, a memory probe only they solve, exact resume),
traced hyperparameters (a sweep's row = a run with those values), value normalisation, the map encoder, and the
settings' checks."""

from __future__ import annotations

import dataclasses
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax import games
from envgen_jax.schema import ConfigError
from envgen_jax.trainer import probes
from envgen_jax.trainer.checkpoint import save_checkpoint
from envgen_jax.trainer.evaluate import make_evaluator
from envgen_jax.trainer.metrics import to_host
from envgen_jax.trainer.layers import patches3x3
from envgen_jax.trainer.config import ExecutionConfig, PPOAlgorithm, TrainerConfig
from envgen_jax.trainer.encoders import ConvNet, MapNet, MLPNet, NetworkConfig, actor_critic
from envgen_jax.trainer.ppo import ValueNorm
from envgen_jax.trainer.factory import make_trainer
from envgen_jax.trainer.train import select_seeds
from tests.trainer_configs import mlp, with_ppo
from tests.trees import assert_trees_equal

N = 16
RECURRENT = TrainerConfig(PPOAlgorithm(num_envs=N, num_steps=8, update_epochs=2, num_minibatches=4, lr=3e-3, gamma=0.9),
                          mlp(32, 1, recurrent="gru", memory_size=16), ExecutionConfig(resets_per_step=N))
FEED_FORWARD = dataclasses.replace(RECURRENT, network=mlp(32, 1, memory_size=16))
CHUNK = 10  # updates per chunk on the memory probe: every test there runs this one program per trainer


def _train(trainer, ts, bank, rows, updates):
    """`updates` PPO updates in chunks of CHUNK (the number of updates in a chunk is static: each is a program)."""
    for _ in range(updates // CHUNK):
        ts, metrics = trainer.train_chunk(ts, bank, rows, num_updates=CHUNK)
    return ts, metrics


@pytest.fixture(scope="module")
def memory_trainer():
    """One compiled recurrent trainer (GRU, value normalisation) on the cue-memory probe, shared by the tests."""
    env = probes.CueMemoryEnv()
    trainer = make_trainer(env, with_ppo(dataclasses.replace(RECURRENT, num_agents=2), value_norm=True))
    return trainer, probes.make_bank([1.0]), jnp.zeros(N, jnp.int32)


def test_unroll_equals_stepping_and_resets_clear_the_memory():
    net = actor_critic(num_actions=3, obs_shape=(5,), settings=MLPNet(width=8, depth=1), recurrent="gru", memory_size=6)
    t, n = 7, 4
    obs = jax.random.normal(jax.random.PRNGKey(0), (t, n, 5))
    reset = jnp.zeros((t, n), bool).at[3, 1].set(True).at[5, 2].set(True)
    # jitted: one program each, where op by op every layer's operations compiled one by one
    unroll, step = (jax.jit(functools.partial(net.apply, method=m)) for m in ("unroll", "step"))
    params = jax.jit(functools.partial(net.init, method="unroll"))(jax.random.PRNGKey(1), jnp.zeros((n, 6)), obs, reset)
    carry0 = jax.random.normal(jax.random.PRNGKey(2), (n, 6))
    final, logits, values = unroll(params, carry0, obs, reset)
    carry, stepped = carry0, []
    for i in range(t):
        carry, lg, v = step(params, carry, obs[i], reset[i])
        stepped.append((lg, v))
    np.testing.assert_allclose(jnp.stack([s[0] for s in stepped]), logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jnp.stack([s[1] for s in stepped]), values, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(carry, final, rtol=1e-5, atol=1e-6)
    # slot 1 restarts at t = 3: from there on it equals a run that starts from zeros at t = 3
    _, fresh_logits, _ = unroll(params, jnp.zeros((n, 6)), obs[3:], jnp.zeros((t - 3, n), bool))
    np.testing.assert_allclose(logits[3:, 1], fresh_logits[:, 1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(logits[3:, 0], fresh_logits[:, 0])  # slot 0 kept its memory


def test_lstm_carries_a_pair():
    net = actor_critic(num_actions=3, obs_shape=(5,), settings=MLPNet(width=8, depth=1), recurrent="lstm", memory_size=6)
    carry = net.initial_carry(4)
    params = net.init(jax.random.PRNGKey(1), carry, jnp.ones((2, 4, 5)), jnp.zeros((2, 4), bool), method="unroll")
    final, logits, _ = net.apply(params, carry, jnp.ones((2, 4, 5)), jnp.zeros((2, 4), bool), method="unroll")
    assert len(final) == 2 and final[0].shape == (4, 6) and logits.shape == (2, 4, 3)


def test_recurrent_rollout_is_what_training_replays(memory_trainer):
    """The log-probabilities and values the rollout stored step by step are what the learner's unroll from the
    stored initial memory recomputes (PPO's ratio starts at 1), and memories are cleared where episodes end."""
    trainer, bank, rows = memory_trainer
    ts = select_seeds(trainer.init(bank, rows), 0)
    one = jax.tree.map(lambda x: x[0], ts)
    obs, _, memory, traj, infos = jax.jit(trainer.ppo.rollout)(one.params, one.obs, one.env_state, one.memory,
                                                                jax.random.PRNGKey(3), bank, rows)
    logits, values = jax.jit(trainer.agent.evaluate)(one.params, one.memory, traj.obs, traj.start)  # as the learner
    from envgen_jax.trainer.networks import policy
    np.testing.assert_allclose(policy(logits).log_prob(traj.action), traj.log_prob, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(values, traj.value, rtol=1e-5, atol=1e-5)
    # episodes of 3 steps: they start at steps 0, 3, 6 of the rollout, and only there is the memory cleared
    assert np.asarray(traj.start).sum(axis=1).tolist() == [0, 0, 0, N, 0, 0, N, 0]
    assert np.all(np.asarray(memory) != 0)  # mid-episode at the rollout's end: the memory is kept for the next
    ended = jnp.arange(N) % 2 == 0
    cleared = np.asarray(trainer.forget(memory, ended))
    assert np.all(cleared[::2] == 0) and np.array_equal(cleared[1::2], np.asarray(memory)[1::2])


def test_only_a_recurrent_policy_solves_the_memory_probe(memory_trainer):
    trainer, bank, rows = memory_trainer
    ff = make_trainer(probes.CueMemoryEnv(), dataclasses.replace(FEED_FORWARD, num_agents=2))
    rates = {}
    for name, tr in (("gru", trainer), ("mlp", ff)):
        ts, _ = _train(tr, tr.init(bank, rows), bank, rows, 150)
        ts, m = tr.train_chunk(ts, bank, rows, num_updates=10)
        m = to_host(m)
        rates[name] = m.rows.achievement_counts[:, 0, 0] / m.rows.episodes[:, 0]
    assert np.all(rates["gru"] > 0.9), rates
    assert np.all(rates["mlp"] < 0.7), rates  # a cue it cannot see: a coin flip at best


def test_recurrent_evaluation_carries_memory(memory_trainer):
    trainer, bank, rows = memory_trainer
    ts, _ = _train(trainer, trainer.init(bank, rows), bank, rows, 150)
    evaluator = make_evaluator(trainer, 8, 2, 50, game=games.get("crafter"))
    report = evaluator.evaluate(ts.params, bank, np.zeros(8, np.int32), key=1)
    assert report.episodes.tolist() == [16, 16]
    assert np.all(report.success[:, 0] > 0.85)


def test_recurrent_value_norm_run_resumes_exactly(memory_trainer, tmp_path):
    trainer, bank, rows = memory_trainer
    ts = trainer.init(bank, rows)
    ts, _ = trainer.train_chunk(ts, bank, rows, num_updates=CHUNK)
    save_checkpoint(tmp_path / "ckpt", ts)
    # 80 steps into 3-step episodes: mid-episode, so the saved memory matters
    assert float(ts.value_norm.weight[0]) > 0 and np.any(np.asarray(ts.memory) != 0)
    straight, m1 = trainer.train_chunk(ts, bank, rows, num_updates=CHUNK)
    resumed = trainer.restore(tmp_path / "ckpt", bank, rows)
    resumed, m2 = trainer.train_chunk(resumed, bank, rows, num_updates=CHUNK)
    assert_trees_equal(jax.device_get(straight), jax.device_get(resumed))
    assert_trees_equal(to_host(m1), to_host(m2))


def test_a_sweep_row_equals_a_run_with_those_values():
    """Traced hyperparameters: agents with different lr / gamma / entropy in one compiled program; each trains
    exactly as a run of its own with those values in the config (same program shape, so bit for bit)."""
    env = probes.BanditEnv()
    bank, rows = probes.make_bank([1.0]), jnp.zeros(N, jnp.int32)
    base = dataclasses.replace(with_ppo(FEED_FORWARD, num_minibatches=2), num_agents=2)
    sweep = make_trainer(env, base)
    ts = sweep.init(bank, rows, seeds=[4, 4], hparams={"lr": [3e-3, 1e-3], "gamma": [0.9, 0.5], "ent_coef": 0.0})
    assert sweep.trace_counts["init"] == 1
    ts, m = sweep.train_chunk(ts, bank, rows, num_updates=4)

    single = make_trainer(env, with_ppo(base, lr=1e-3, gamma=0.5, ent_coef=0.0))
    one = single.init(bank, rows, seeds=[4, 4])
    one, m1 = single.train_chunk(one, bank, rows, num_updates=4)
    assert_trees_equal(jax.device_get(select_seeds(ts, 1)), jax.device_get(select_seeds(one, 1)))
    assert_trees_equal(to_host(select_seeds(m, 1)), to_host(select_seeds(m1, 1)))
    assert not np.allclose(jax.tree.leaves(ts.params)[0][0], jax.tree.leaves(ts.params)[0][1])  # lr differs
    np.testing.assert_allclose(to_host(m).losses.learning_rate[:, 0], [3e-3, 1e-3])
    # a new sweep of the same size reuses the compiled chunk
    ts2 = sweep.init(bank, rows, seeds=[1, 2], hparams={"clip_eps": [0.1, 0.3]})
    sweep.train_chunk(ts2, bank, rows, num_updates=4)
    assert sweep.trace_counts["train_chunk"] == 1


def test_sweep_values_are_checked():
    trainer = make_trainer(probes.BanditEnv(), dataclasses.replace(FEED_FORWARD, num_agents=2))
    with pytest.raises(ConfigError, match="hparams.lr: 3 values for 2 agents"):
        trainer.hparams({"lr": [1e-3, 2e-3, 3e-3]}, count=2)
    with pytest.raises(ConfigError, match="width cannot vary per agent"):
        trainer.hparams({"width": [1, 2]}, count=2)


def test_value_norm_is_a_bias_corrected_moving_average():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=64).astype(np.float32) for _ in range(5)]
    vn, decay = ValueNorm.empty(), 0.9
    assert [float(x) for x in vn.stats()] == [0.0, 1.0]
    m = sq = w = 0.0
    for b in batches:
        vn = vn.update(jnp.asarray(b), decay)
        m, sq, w = decay * m + (1 - decay) * b.mean(), decay * sq + (1 - decay) * (b ** 2).mean(), decay * w + 1 - decay
    mean, std = vn.stats()
    np.testing.assert_allclose(float(mean), m / w, rtol=1e-5)
    np.testing.assert_allclose(float(std), np.sqrt(sq / w - (m / w) ** 2), rtol=1e-4)
    assert float(ValueNorm.empty().update(jnp.full(8, 5.0), decay).stats()[1]) == pytest.approx(0.1)  # the floor


def test_value_norm_learns_the_value_scale():
    """A constant reward of 50 per 1-step episode: the de-normalised value reaches 50 while the head's raw output
    stays of order 1."""
    env = probes.ConstantRewardEnv()
    trainer = make_trainer(env, with_ppo(FEED_FORWARD, num_minibatches=2, lr=1e-2, value_norm=True,
                                         value_norm_decay=0.9))
    bank, rows = probes.make_bank([50.0]), jnp.zeros(N, jnp.int32)
    ts, _ = trainer.train_chunk(trainer.init(bank, rows), bank, rows, num_updates=60)
    mean, std = jax.tree.map(lambda x: x[0], ts.value_norm).stats()
    _, raw = trainer.apply(jax.tree.map(lambda x: x[0], ts.params), env._obs(0))
    assert abs(float(raw * std + mean) - 50.0) < 1.0 and abs(float(raw)) < 3.0


def test_map_encoder_convolution_equals_nn_conv():
    grid = jax.random.normal(jax.random.PRNGKey(0), (3, 7, 9, 5))
    conv = nn.Conv(4, (3, 3))
    params = conv.init(jax.random.PRNGKey(1), grid)
    kernel, bias = params["params"]["kernel"], params["params"]["bias"]  # [3, 3, 5, 4]
    ours = patches3x3(grid) @ kernel.reshape(9 * 5, 4) + bias
    np.testing.assert_allclose(ours, conv.apply(params, grid), rtol=1e-5, atol=1e-5)


def test_map_network_reads_crafters_layout(crafter_env):
    assert crafter_env.map_shape == (7, 9, 21)
    assert int(np.prod(crafter_env.map_shape)) + 22 == crafter_env.obs_shape[0]
    net = actor_critic(num_actions=17, obs_shape=(1345,), map_shape=(7, 9, 21),
                      settings=MapNet(width=16, depth=1, channels=(4,), layer_norm=True))
    params = jax.jit(net.init)(jax.random.PRNGKey(0), jnp.zeros(1345))  # jitted: one program, not one per operation
    logits, value = jax.jit(net.apply)(params, jnp.zeros((2, 3, 1345)))
    assert logits.shape == (2, 3, 17) and value.shape == (2, 3)


def test_agent_settings_are_checked():
    with pytest.raises(ConfigError, match="ppo.num_minibatches: a recurrent agent learns on whole env trajectories"):
        TrainerConfig(PPOAlgorithm(num_envs=6, num_steps=4, num_minibatches=4), NetworkConfig(recurrent="gru"))
    with pytest.raises(ConfigError, match=r"ppo.value_norm_decay: 1.0 is not in \(0, 1\)"):
        PPOAlgorithm(value_norm_decay=1.0)
    with pytest.raises(ConfigError, match="network.map.channels"):
        MapNet(channels=(0,))
    with pytest.raises(ConfigError, match="recurrent: 'rnn' is not one of 'none', 'gru', 'lstm'"):
        NetworkConfig(recurrent="rnn")
    with pytest.raises(ConfigError, match="network.kind: 'map' needs an observation that starts with a local map"):
        make_trainer(probes.BanditEnv(), TrainerConfig(network=NetworkConfig(kind="map")))


def test_network_and_execution_sections_read_the_older_flat_keys(tmp_path):
    """`ppo.width` and the other flat keys of older configurations go to their sections (`width` to the chosen
    kind's); one key given both ways with two values in one place is refused naming both, a --set wins."""
    from envgen_jax.run_config import load_run_config
    old = load_run_config(None, ["observation=pixels", "ppo.network=conv", "ppo.width=32", "ppo.depth=2",
                                 "ppo.conv_channels=[8]", "ppo.seed_axis=map", "ppo.resets_per_step=2"])
    new = load_run_config(None, ["observation=pixels", "network.kind=conv", "network.conv.width=32",
                                 "network.conv.channels=[8]", "execution.seed_axis=map", "execution.resets_per_step=2"])
    assert old == new and old.network.encoder == ConvNet(channels=(8,), width=32)  # conv never read depth
    path = tmp_path / "run.yaml"
    path.write_text("ppo: {width: 16}\nnetwork: {mlp: {width: 8}}\n")
    with pytest.raises(ConfigError) as e:
        load_run_config(path)
    assert e.value.problems == ["ppo.width: 16 differs from network.mlp.width = 8; ppo.width is the old name of "
                                "network.mlp.width, give only one"]
    assert load_run_config(path, ["ppo.width=4"]).network.mlp.width == 4
    with pytest.raises(ConfigError) as e:
        load_run_config(None, ["ppo.depth=0"])
    assert e.value.problems == ["ppo.depth: 0 is below the minimum 1"]  # named by the key written


def test_the_observation_and_the_network_are_checked_together():
    from envgen_jax.run_config import load_run_config
    symbolic = "'mlp' or 'map' or 'trunk' or 'grid' or 'drawn'"
    for observation, kind, readers in [("pixels", "mlp", "'conv'"), ("symbolic", "conv", symbolic)]:
        with pytest.raises(ConfigError) as e:
            load_run_config(None, [f"observation={observation}", f"network.kind={kind}"])
        assert e.value.problems == [f"network.kind: {kind!r} cannot read the {observation!r} observation "
                                    f"(observation: {observation} needs network.kind {readers})"]


def test_the_conv_encoders_residual_blocks_are_a_setting():
    counts = []
    for blocks in (2, 1, 0):
        net = actor_critic(num_actions=3, obs_shape=(9, 9, 3), settings=ConvNet(channels=(4,), res_blocks=blocks, width=8))
        params = jax.jit(net.init)(jax.random.PRNGKey(0), jnp.zeros((9, 9, 3), jnp.uint8))
        counts.append(sum(x.size for x in jax.tree.leaves(params)))
    per_block = 2 * (3 * 3 * 4 * 4 + 4)  # two 3x3 convs of 4 channels
    assert counts[0] - counts[1] == counts[1] - counts[2] == per_block


def test_the_shared_agent_is_the_benchmarks_chosen_recipe():
    """configs/base/crafter.yaml's `ppo:` (every Crafter config's agent) is the recipe the agent benchmark measured
    and docs/agent.md names: a change to one without the other fails here."""
    import sys
    from pathlib import Path

    from envgen_jax.run_config import load_run_config
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from benchmarks.agent_sample_efficiency import RECIPES
    chosen = RECIPES["lowsample_mlp"]["agent"]
    for name in ("base/crafter.yaml", "study_cpu.yaml"):
        cfg = load_run_config(root / "configs" / name)
        assert TrainerConfig(cfg.ppo, cfg.network, cfg.execution) == chosen, name
