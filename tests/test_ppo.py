"""PPO trainer on probe environments (CPU, tiny): GAE, value/policy targets, no retrace, seed-vmap equivalence."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.trainer import probes
from envgen_jax.trainer.metrics import mean_or_nan, to_host
from envgen_jax.trainer.encoders import ConvNet, MLPNet
from envgen_jax.trainer.config import ExecutionConfig, PPOAlgorithm, TrainerConfig
from envgen_jax.trainer.ppo import compute_gae
from envgen_jax.trainer.factory import make_trainer
from envgen_jax.trainer.train import prng_key, seed_keys, select_seeds
from tests.trainer_configs import mlp, with_encoder, with_ppo

N = 16  # envs per seed
TINY = TrainerConfig(PPOAlgorithm(num_envs=N, num_steps=8, update_epochs=2, num_minibatches=2, lr=3e-3), mlp(32, 1),
                     ExecutionConfig(resets_per_step=N))  # every finished probe episode gets a freshly generated start


def _seed0(tree):
    return jax.tree.map(lambda x: x[0], tree)


def _values(trainer, ts, obs):
    _, v = trainer.apply(_seed0(ts.params), obs)
    return np.asarray(v)


# ------------------------------------------------------------------------------------------------------------------
# GAE


def _gae_loop(rewards, values, dones, truncated, last_value, gamma, lam, bootstrap_truncated):
    T = len(rewards)
    adv = np.zeros_like(values)
    gae = np.zeros_like(last_value)
    for t in reversed(range(T)):
        next_value = last_value if t == T - 1 else values[t + 1]
        done = dones[t].astype(np.float64)
        trunc = (truncated[t] & dones[t]).astype(np.float64)
        if bootstrap_truncated:
            boot = np.where(trunc > 0, values[t], next_value)
            term = done - trunc
        else:
            boot, term = next_value, done
        delta = rewards[t] + gamma * boot * (1 - term) - values[t]
        gae = delta + gamma * lam * (1 - done) * gae
        adv[t] = gae
    return adv, adv + values


@pytest.mark.parametrize("bootstrap_truncated", [True, False])
def test_gae_scan_matches_python_loop(bootstrap_truncated):
    rng = np.random.default_rng(0)
    T, B = 37, 5  # T not a multiple of the unroll (16)
    rewards = rng.normal(size=(T, B)).astype(np.float32)
    values = rng.normal(size=(T, B)).astype(np.float32)
    dones = rng.random((T, B)) < 0.2
    truncated = rng.random((T, B)) < 0.5
    last_value = rng.normal(size=(B,)).astype(np.float32)
    adv, tgt = jax.jit(compute_gae, static_argnums=(5, 6, 7))(rewards, values, dones, truncated, last_value, 0.97,
                                                               0.9, bootstrap_truncated)
    ref_adv, ref_tgt = _gae_loop(rewards.astype(np.float64), values.astype(np.float64), dones, truncated,
                                 last_value.astype(np.float64), 0.97, 0.9, bootstrap_truncated)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tgt, ref_tgt, rtol=1e-5, atol=1e-5)


def test_gae_without_dones_is_discounted_td_lambda():
    # lambda = 1, no dones, V = 0: the advantage is the discounted return to the end plus the bootstrap
    r = jnp.ones((4, 1))
    adv, _ = compute_gae(r, jnp.zeros((4, 1)), jnp.zeros((4, 1), bool), jnp.zeros((4, 1), bool), jnp.full((1,), 2.0),
                         0.5, 1.0)
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [1 + .5 + .25 + .125 + 2 * .0625, 1 + .5 + .25 + 2 * .125,
                                                       1 + .5 + 2 * .25, 1 + 2 * .5], rtol=1e-6)


# ------------------------------------------------------------------------------------------------------------------
# probe environments (one trainer per env and per static setting, compiled once per module)

# Updates per chunk on each probe: a probe's learning runs are chunks of the size its other tests run, so that every
# test on one probe runs one compiled program (the number of updates in a chunk is static: each size is a program).
CHUNK = {probes.ConstantRewardEnv: 2, probes.BanditEnv: 3}
BANDIT_BANK = probes.make_bank([1.0, 0.5], shifts=[1, 2])  # row 0 is every test's bandit; row 1 is the seed tests'


def _train(env, bank, updates, static=None, **hparams):
    """`updates` PPO updates on `env` from TINY (`static`: settings that change the program), in chunks of the
    probe's size; `hparams` (traced: lr, gamma, ...) change no program. (trainer, state, host metrics per chunk)"""
    trainer = make_trainer(env, with_ppo(TINY, **(static or {})))
    rows = jnp.zeros(N, jnp.int32)
    ts = trainer.init(bank, rows, hparams=hparams)
    size = CHUNK.get(type(env), 2)
    assert updates % size == 0, (updates, size)
    metrics = []
    for _ in range(updates // size):
        ts, m = trainer.train_chunk(ts, bank, rows, num_updates=size)
        metrics.append(to_host(m))
    return trainer, ts, metrics


def test_constant_reward_value():
    env = probes.ConstantRewardEnv()
    trainer, ts, ms = _train(env, probes.make_bank([1.0]), 150, gamma=0.9)
    v = _values(trainer, ts, env._obs(0)[None])
    assert abs(v[0] - 1.0) < 0.1, v
    assert all(np.isfinite(m.losses.total_loss).all() for m in ms)


def test_two_obs_value_per_observation():
    env = probes.TwoObsEnv()
    trainer, ts, _ = _train(env, probes.make_bank([[1.0, -1.0]]), 150)
    v = _values(trainer, ts, jnp.eye(env.obs_dim)[:2])
    np.testing.assert_allclose(v, [1.0, -1.0], atol=0.15)


def test_discount_probe():
    env = probes.DiscountEnv()
    trainer, ts, _ = _train(env, probes.make_bank([1.0]), 250, gamma=0.8, gae_lambda=0.95)
    v = _values(trainer, ts, jnp.eye(env.obs_dim)[:2])
    np.testing.assert_allclose(v, [0.8, 1.0], atol=0.12)


def test_bandit_policy_learns_rewarded_action():
    env = probes.BanditEnv()
    trainer, ts, ms = _train(env, BANDIT_BANK, 150, ent_coef=0.0, lr=1e-2)
    logits, _ = trainer.apply(_seed0(ts.params), jnp.eye(env.obs_dim))
    probs = np.asarray(jax.nn.softmax(logits))
    best = (np.arange(env.obs_dim) + 1) % env.num_actions
    assert (probs[np.arange(env.obs_dim), best] > 0.9).all(), probs
    # the chunk's success counts show the same thing: late in training "correct" dominates
    rate = sum(m.rows.achievement_counts[0, 0, 0] for m in ms) / sum(m.rows.episodes[0, 0] for m in ms)
    assert rate > 0.5


def test_kl_limit_skips_the_rest_of_an_update_and_a_limit_never_reached_changes_nothing():
    env = probes.BanditEnv()
    bank = BANDIT_BANK
    first, free, (m_free,) = _train(env, bank, 3, lr=1e-2)
    _, loose, (m_loose,) = _train(env, bank, 3, static=dict(target_kl=1e6), lr=1e-2)
    _, tight, (m_tight,) = _train(env, bank, 3, static=dict(target_kl=1e-7), lr=1e-2)
    for a, b in zip(jax.tree.leaves(free.params), jax.tree.leaves(loose.params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    assert (m_free.losses.kl_stopped == 0).all() and (m_loose.losses.kl_stopped == 0).all()
    # any step moves the policy beyond 1.5e-7 nats: at most the first of the 2 epochs x 2 minibatches is taken
    assert (m_tight.losses.kl_stopped >= 0.75).all(), m_tight.losses.kl_stopped
    start = first.init(bank, jnp.zeros(N, jnp.int32)).params
    moved = lambda ts: sum(float(jnp.abs(a - b).sum()) for a, b in zip(jax.tree.leaves(ts.params),
                                                                       jax.tree.leaves(start)))
    assert 0 <= moved(tight) < 0.5 * moved(free), (moved(tight), moved(free))


@pytest.mark.parametrize("bootstrap, target", [(True, 2.0), (False, None)])
def test_time_limit_bootstrap(bootstrap, target):
    env = probes.TimeLimitEnv(limit=4)
    trainer, ts, _ = _train(env, probes.make_bank([1.0]), 200, static=dict(bootstrap_truncated=bootstrap), gamma=0.5,
                            gae_lambda=0.95)
    v = _values(trainer, ts, env._obs(0)[None])[0]
    if bootstrap:
        assert abs(v - target) < 0.15, v  # r / (1 - gamma)
    else:
        assert v < 1.8, v  # cut treated as a termination: mean of 1.875, 1.75, 1.5, 1 over the positions


# ------------------------------------------------------------------------------------------------------------------
# bank / rows plumbing, retrace, seeds


@pytest.fixture(scope="module")
def two_seed_trainer():
    """Three seeds on the constant-reward probe; the chunks of the tests on it run 2 updates on a 3-row bank: one
    program."""
    cfg = dataclasses.replace(TINY, num_agents=3)
    return make_trainer(probes.ConstantRewardEnv(), cfg)


def test_per_row_metrics_and_no_retrace_when_bank_changes(two_seed_trainer):
    trainer = two_seed_trainer
    bank = probes.make_bank([1.0, 0.5, 2.0])
    rows = jnp.asarray([0] * 10 + [1] * 6, jnp.int32)
    ts = trainer.init(bank, rows)
    ts, m = trainer.train_chunk(ts, bank, rows, num_updates=2)
    before = trainer.trace_counts["train_chunk"]
    m = to_host(m)
    # one-step episodes: every step ends one, and each row's return is its reward exactly
    steps = 2 * trainer.cfg.ppo.num_steps
    np.testing.assert_array_equal(m.rows.episodes, [[10 * steps, 6 * steps, 0]] * 3)
    np.testing.assert_array_equal(m.rows.env_steps, m.rows.episodes)
    means = mean_or_nan(m.rows.return_sum, m.rows.episodes)
    np.testing.assert_allclose(means[:, :2], [[1.0, 0.5]] * 3)
    assert np.isnan(means[:, 2]).all()  # row 2 ran no env: NaN, not 0
    np.testing.assert_array_equal(m.losses.total_loss.shape, (3, 2))
    np.testing.assert_array_equal(m.env_steps, [2 * N * trainer.cfg.ppo.num_steps] * 3)

    # new bank values and a new mixture: same shapes, so no retrace, and the numbers follow the new bank
    bank2 = probes.make_bank([3.0, -1.0, 0.25])
    rows2 = jnp.asarray([2] * 4 + [1] * 12, jnp.int32)
    ts, m2 = trainer.train_chunk(ts, bank2, rows2, num_updates=2)
    assert trainer.trace_counts["train_chunk"] == before
    m2 = to_host(m2)
    np.testing.assert_allclose(mean_or_nan(m2.rows.return_sum, m2.rows.episodes)[0], [np.nan, -1.0, 0.25])
    np.testing.assert_array_equal(m2.rows.episodes[0], [0, 12 * steps, 4 * steps])

    # fresh episodes after a mixture change: new key, counters and params kept
    key, env_steps, p0 = np.asarray(ts.key), np.asarray(ts.env_steps), np.asarray(jax.tree.leaves(ts.params)[0])
    ts = trainer.reset_envs(ts, bank2, rows2)
    assert not (np.asarray(ts.key) == key).all(axis=1).any()
    np.testing.assert_array_equal(ts.env_steps, env_steps)
    np.testing.assert_array_equal(jax.tree.leaves(ts.params)[0], p0)
    assert trainer.trace_counts["reset_envs"] == 1


def test_output_state_matches_input_types(two_seed_trainer):
    """The chunk's output TrainState has the input's exact shapes/dtypes/weak types (else the next call recompiles)."""
    trainer = two_seed_trainer
    bank = probes.make_bank([1.0])
    rows = jnp.zeros(N, jnp.int32)
    a = trainer.abstract_state(bank, rows)
    b, _ = jax.eval_shape(lambda t: trainer._train_chunk(t, bank, rows, np.bool_(True), 1), a)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        assert (x.shape, x.dtype, x.weak_type) == (y.shape, y.dtype, y.weak_type)


def test_seed_vmap_matches_single_seed():
    env = probes.BanditEnv()
    cfg = dataclasses.replace(TINY, num_agents=3, seed=5)
    trainer = make_trainer(env, cfg)
    bank = BANDIT_BANK
    rows = jnp.asarray([0, 1] * (N // 2), jnp.int32)

    ts = trainer.init(bank, rows)  # seeds 5, 6, 7
    assert ts.key.shape == (3, 2)
    for _ in range(2):
        ts, m = trainer.train_chunk(ts, bank, rows, num_updates=3)

    one = trainer.init(bank, rows, seeds=[6])
    for _ in range(2):
        one, m1 = trainer.train_chunk(one, bank, rows, num_updates=3)

    mid = select_seeds(ts, [1])
    np.testing.assert_array_equal(mid.key, one.key)
    np.testing.assert_array_equal(mid.env_steps, one.env_steps)
    np.testing.assert_array_equal(to_host(m).rows.episodes[1], to_host(m1).rows.episodes[0])
    for a, b in zip(jax.tree.leaves(mid.params), jax.tree.leaves(one.params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # the seeds really differ
    assert not np.allclose(jax.tree.leaves(ts.params)[0][0], jax.tree.leaves(ts.params)[0][1])


def test_per_seed_rows_match_shared_rows(two_seed_trainer):
    trainer = two_seed_trainer
    bank = probes.make_bank([1.0, 0.5, 2.0])  # 3 rows, 2 updates: the shared-rows chunk is the fixture's program
    rows = jnp.asarray([0] * 8 + [1] * 8, jnp.int32)
    shared, m_shared = trainer.train_chunk(trainer.init(bank, rows), bank, rows, num_updates=2)
    per_seed_rows = jnp.stack([rows, 1 - rows, rows])
    per, m_per = trainer.train_chunk(trainer.init(bank, per_seed_rows), bank, per_seed_rows, num_updates=2)
    m_shared, m_per = to_host(m_shared), to_host(m_per)
    np.testing.assert_array_equal(m_per.rows.episodes[0], m_shared.rows.episodes[0])
    np.testing.assert_allclose(mean_or_nan(m_per.rows.return_sum, m_per.rows.episodes)[:, :2],
                               [[1.0, 0.5]] * 3)
    for a, b in zip(jax.tree.leaves(select_seeds(per, 0).params), jax.tree.leaves(select_seeds(shared, 0).params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_lr_anneal_schedule():
    env = probes.ConstantRewardEnv()
    cfg = with_ppo(TINY, anneal_lr=True, total_updates=4, lr=1e-3)
    trainer = make_trainer(env, cfg)
    bank = probes.make_bank([1.0])
    rows = jnp.zeros(N, jnp.int32)
    ts, m = trainer.train_chunk(trainer.init(bank, rows), bank, rows, num_updates=5)
    np.testing.assert_allclose(to_host(m).losses.learning_rate[0], [1e-3, 7.5e-4, 5e-4, 2.5e-4, 0.0], rtol=1e-6)


def test_config_validation():
    with pytest.raises(ValueError, match="divisible"):
        PPOAlgorithm(num_envs=3, num_steps=3, num_minibatches=2)
    with pytest.raises(ValueError, match="total_updates"):
        PPOAlgorithm(anneal_lr=True)
    assert TrainerConfig.craftax_baseline().ppo.batch_size == 65536
    from envgen_jax.run_config import load_run_config
    paper = load_run_config(Path(__file__).resolve().parent.parent / "configs" / "base" / "crafter_pixels.yaml").ppo
    assert (paper.gamma, paper.gae_lambda, paper.update_epochs, paper.num_minibatches, paper.lr) == \
        (0.95, 0.65, 3, 8, 3e-4)
    assert paper.minibatch_size == 512


def test_networks_shapes_and_size():
    from envgen_jax.trainer.encoders import actor_critic
    from envgen_jax.trainer.networks import count_params

    # jitted: one program each, where op by op every layer's operations compiled one by one
    mlp = actor_critic(num_actions=17, obs_shape=(1345,), settings=MLPNet())
    params = jax.jit(mlp.init)(jax.random.PRNGKey(0), jnp.zeros((1345,)))
    assert 2.3e6 < count_params(params) < 2.5e6  # Craftax baselines: about 2.4M on the 1345-d input
    logits, value = jax.jit(mlp.apply)(params, jnp.zeros((3, 5, 1345)))
    assert logits.shape == (3, 5, 17) and value.shape == (3, 5)

    conv = actor_critic(num_actions=17, obs_shape=(63, 63, 3), settings=ConvNet(width=32, channels=(8, 16)))
    params = jax.jit(conv.init)(jax.random.PRNGKey(0), jnp.zeros((63, 63, 3)))
    logits, value = jax.jit(conv.apply)(params, jnp.ones((2, 4, 63, 63, 3)))
    assert logits.shape == (2, 4, 17) and value.shape == (2, 4)
    # heads start near-uniform (policy head init scale 0.01)
    assert float(jnp.abs(logits).max()) < 0.5


def test_init_many_seeds_does_not_hang(two_seed_trainer):
    """Orthogonal initialisers are QR decompositions (LAPACK custom calls). Vmapped over seeds, six of them in one
    program deadlocked jaxlib 0.10's CPU runtime (a measured 10/10 hangs), so `init` makes parameters one seed at a
    time (lax.map): every decomposition in its program is of one matrix, none batched over seeds."""
    trainer, bank = two_seed_trainer, probes.make_bank([1.0])
    keys = seed_keys(range(8))
    rows = np.zeros(trainer.cfg.ppo.num_envs, np.int32)
    jaxpr = jax.make_jaxpr(trainer._init)(keys, trainer.hparams(count=8), bank, rows)
    decompositions = [e for e in _equations(jaxpr.jaxpr) if e.primitive.name in ("householder_product", "geqrf", "qr")]
    assert decompositions, "the network has orthogonal initialisers: their QR decompositions must be found"
    assert all(v.aval.ndim == 2 for e in decompositions for v in e.invars if hasattr(v.aval, "ndim") and v.aval.ndim)
    ts = trainer.init(bank, rows, seeds=range(8))
    assert jax.tree.leaves(jax.device_get(ts.params))[0].shape[0] == 8


def _equations(jaxpr):
    """Every equation of a jaxpr, inside scans, conds and nested jits too."""
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for inner in (value if isinstance(value, (tuple, list)) else (value,)):
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns"):
                    yield from _equations(inner)


def test_a_chunk_compiled_ahead_is_the_program_train_chunk_runs(monkeypatch):
    monkeypatch.setenv("ENVGEN_JAX_REUSE_PROGRAMS", "0")  # two trainers of their own, neither traced before
    bank, rows = probes.make_bank([1.0]), np.zeros(N, np.int32)
    ahead, plain = (make_trainer(probes.ConstantRewardEnv(), dataclasses.replace(TINY)) for _ in range(2))
    ts = ahead.init(bank, rows)
    ahead.precompile_chunk(ts, bank, rows, num_updates=2)  # in a thread
    got, m = ahead.train_chunk(ts, bank, rows, num_updates=2)
    assert ahead.trace_counts["train_chunk"] == 1  # traced once, for the thread's compile: the call ran that program
    want, w = plain.train_chunk(plain.init(bank, rows), bank, rows, num_updates=2)
    for x, y in zip(jax.tree.leaves((got, m)), jax.tree.leaves((want, w))):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    ahead.train_chunk(got, bank, rows, num_updates=1)  # other static arguments: compiled on the call, as always
    assert ahead.trace_counts["train_chunk"] == 2
    ahead.ahead.close()


def test_host_prng_keys_are_jax_keys():
    """Seeds become keys on the host without compiling (`prng_key`): the same keys as jax.random.PRNGKey."""
    for seed in (0, 1, 7, 12345, 2**31 - 1, -1, -2**31):
        np.testing.assert_array_equal(prng_key(seed), np.asarray(jax.random.PRNGKey(seed)), err_msg=str(seed))


def test_reset_flag_is_reset_envs_then_the_chunk(two_seed_trainer):
    """train_chunk(reset=True) starts fresh episodes inside the chunk's own program, exactly as reset_envs first."""
    trainer = two_seed_trainer
    bank, rows = probes.make_bank([1.0, 0.5, 2.0]), np.asarray([0] * 10 + [1] * 6, np.int32)
    ts, _ = trainer.train_chunk(trainer.init(bank, rows), bank, rows, num_updates=2)
    rows2 = rows[::-1].copy()
    copy = lambda t: jax.tree.map(jnp.copy, t)  # noqa: E731 -- the chunk donates its state
    a, ma = trainer.train_chunk(trainer.reset_envs(copy(ts), bank, rows2), bank, rows2, num_updates=2)
    b, mb = trainer.train_chunk(copy(ts), bank, rows2, num_updates=2, reset=True)
    c, _ = trainer.train_chunk(copy(ts), bank, rows2, num_updates=2)
    for x, y in zip(jax.tree.leaves((a, ma)), jax.tree.leaves((b, mb))):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert not (np.asarray(c.key) == np.asarray(b.key)).all()  # without the flag: no reset, another key


def test_blank_init_then_a_resetting_chunk_trains_as_init(two_seed_trainer):
    """init(episodes=False) leaves the env slots blank and makes no world; the first chunk's reset fills them from
    the state's key, so the run is the same as after init() (the loop inits so; the goldens check it on Crafter)."""
    trainer = two_seed_trainer
    bank, rows = probes.make_bank([1.0, 0.5, 2.0]), np.asarray([0] * 10 + [1] * 6, np.int32)
    full, blank = trainer.init(bank, rows), trainer.init(bank, rows, episodes=False)
    assert jax.tree.structure(full) == jax.tree.structure(blank)
    for x, y in zip(jax.tree.leaves(full), jax.tree.leaves(blank)):
        assert (x.shape, x.dtype, x.weak_type) == (y.shape, y.dtype, y.weak_type)
    assert not np.asarray(blank.obs).any() and np.asarray(full.obs).any()
    a, ma = trainer.train_chunk(full, bank, rows, num_updates=2, reset=True)
    b, mb = trainer.train_chunk(blank, bank, rows, num_updates=2, reset=True)
    for x, y in zip(jax.tree.leaves((a, ma)), jax.tree.leaves((b, mb))):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_process_reuses_the_trainer_and_evaluator_of_an_equal_configuration(monkeypatch):
    """make_trainer / make_evaluator give back what an earlier call with equal arguments made (its programs traced
    and compiled already): a study's next method or the next run in a process compiles nothing (trainer.reuse)."""
    from envgen_jax.envs.crafter import CrafterEnv
    from envgen_jax.trainer.evaluate import make_evaluator
    from envgen_jax.trainer.reuse import forget
    cfg = dataclasses.replace(TINY)
    first = make_trainer(CrafterEnv(), cfg)  # building one traces and compiles nothing
    assert make_trainer(CrafterEnv(), dataclasses.replace(TINY)) is first  # equal values, new objects
    assert make_trainer(CrafterEnv(), with_encoder(TINY, width=16)) is not first
    assert make_trainer(CrafterEnv(observation="pixels"), cfg) is not first
    assert make_trainer(CrafterEnv(), cfg, venv=first.venv) is not first  # a VecEnv of one's own
    evaluator = make_evaluator(first, 4, 1, 50)
    assert make_evaluator(first, 4, 1, 50) is evaluator and make_evaluator(first, 4, 1, 60) is not evaluator
    monkeypatch.setenv("ENVGEN_JAX_REUSE_PROGRAMS", "0")
    assert make_trainer(CrafterEnv(), cfg) is not first
    monkeypatch.delenv("ENVGEN_JAX_REUSE_PROGRAMS")
    forget()
    assert make_trainer(CrafterEnv(), cfg) is not first
