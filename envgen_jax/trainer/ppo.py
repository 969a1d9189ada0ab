"""PPO in one jit-compiled training chunk, with independent seeds vmapped (PureJaxRL layout).

    trainer = make_trainer(env, PPOConfig(...))
    ts = trainer.init(bank, rows)                      # TrainState, leading seed axis [S] on every leaf
    ts, metrics = trainer.train_chunk(ts, bank, rows, num_updates=8)   # jitted; `ts` is donated
    host = to_host(metrics)                            # ChunkMetrics: RowStats [S, K], LossStats [S, U]
    ts = trainer.reset_envs(ts, new_bank, new_rows)    # after the LLM step changed rows that slots run

One chunk = `lax.scan` over `num_updates` PPO updates; one update = `lax.scan` over `num_steps` vector-env steps,
a reverse-scan GAE, then `update_epochs` x `num_minibatches` Adam steps in two nested scans. The host acts only
between chunks (the EnvGen LLM step goes there).

* `bank` (an `envs.bank.Bank`: env params with leading K rows) and `rows` (i32[N] shared by all seeds, or i32[S, N]
  per seed; or `envs.vector.RowSampler(probs)` with probs f32[K] or [S, K]: every episode's row drawn from probs)
  are traced arguments: new values never recompile; a new K or N does (it changes shapes). Per-seed configs
  (one LLM per seed): stack every seed's rows into one bank and give rows [S, N] pointing into each seed's block.
* `PPOConfig` is static (frozen, hashable): shapes, loop sizes and hyperparameters are closed over, so a new
  config compiles a new trainer.
* Seeds: seed `s` starts from `jax.random.PRNGKey(s)`; `init(seeds=[3])` trains exactly the agent that is row i of
  `init(seeds=[..., 3, ...])` (equal up to float reassociation of the vmapped matmuls). Every leaf of a TrainState
  carries the seed axis, also with one seed; `select_seeds` slices it.
* Time limits: `StepInfo.truncated` is kept apart from `done`. With `bootstrap_truncated` (default) a truncated
  step bootstraps from V(s_t) (the final observation is not available after the auto-reset, and the value of the
  state just before the cut is the usual proxy); otherwise the cut is treated like a termination (PureJaxRL).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Literal, Protocol, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from envgen_jax.config_io import bounded, declared_problems
from envgen_jax.envs.vector import VecEnv
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.metrics import ChunkMetrics, LossStats, RowStats, row_stats_from_steps
from envgen_jax.trainer.networks import ActorCritic, policy


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters and sizes (static: part of the compiled program).

    Defaults follow Craftax_Baselines `ppo.py` (craftax-notes section 12) except the sizes, which are small so
    that CPU runs stay cheap. Presets: `PPOConfig.craftax_baseline()` and `PPOConfig.envgen_paper()`.
    """

    num_envs: int = bounded(64, minimum=1)
    """parallel environments per seed (the rollout batch is num_envs x num_steps)"""
    num_steps: int = bounded(64, minimum=1)
    """env steps per environment per update (Craftax baselines 64; the paper's AD agent 512)"""
    update_epochs: int = bounded(4, minimum=1)
    """passes over each rollout (Craftax 4; paper 3)"""
    num_minibatches: int = bounded(8, minimum=1)
    """minibatches per epoch (Craftax 8; paper 8)"""
    gamma: float = bounded(0.99, minimum=0, maximum=1)
    """discount (Craftax 0.99; paper 0.95)"""
    gae_lambda: float = bounded(0.8, minimum=0, maximum=1)
    """GAE lambda (Craftax 0.8; paper 0.65)"""
    clip_eps: float = bounded(0.2, minimum=0)
    """PPO ratio clip, also used for the value clip (both 0.2)"""
    clip_value: bool = True
    """clipped value loss as in PureJaxRL/Craftax (the paper's SB3-style agent does not clip the value)"""
    ent_coef: float = bounded(0.01, minimum=0)
    """entropy bonus (both 0.01)"""
    vf_coef: float = bounded(0.5, minimum=0)
    """value-loss weight (both 0.5)"""
    max_grad_norm: float = bounded(1.0, above=0)
    """global-norm gradient clip (Craftax 1.0; paper 0.5)"""
    lr: float = bounded(2e-4, minimum=0)
    """Adam learning rate (Craftax 2e-4 annealed; paper 3e-4 constant)"""
    adam_eps: float = bounded(1e-5, above=0)
    """Adam epsilon (Craftax 1e-5)"""
    anneal_lr: bool = False
    """linear decay of the learning rate to 0 over `total_updates` updates (Craftax True; paper False)"""
    total_updates: int = bounded(0, minimum=0)
    """updates over which the learning rate anneals; required (> 0) when anneal_lr"""
    adv_norm: Literal["minibatch", "batch", "none"] = "minibatch"
    """advantage normalisation: 'minibatch' (PureJaxRL/Craftax), 'batch' (per rollout, the paper) or 'none'"""
    bootstrap_truncated: bool = True
    """bootstrap time-limit cuts from V(s_t) instead of treating them as terminations"""
    value_norm: bool = False
    """value head predicts returns normalised by a bias-corrected moving average of their mean and std (decay
    `value_norm_decay`; the paper's agent, Moon et al. 2023); predictions are de-normalised for GAE"""
    value_norm_decay: float = bounded(0.99, above=0, below=1)
    """decay of value_norm's moving averages (Moon et al. 0.99; Dedieu et al. 0.95)"""
    network: Literal["mlp", "map", "conv"] = "mlp"
    """'mlp' (symbolic obs; separate actor and critic MLPs), 'map' (symbolic obs: a conv over the local map, then
    separate actor and critic MLPs) or 'conv' (pixel obs; shared IMPALA encoder)"""
    layer_norm: bool = False
    """LayerNorm before every hidden activation (MLPs and the map conv)"""
    map_channels: tuple[int, ...] = (32, 32)
    """channels of the 'map' network's 3x3 convs over the local map"""
    map_res_blocks: int = bounded(0, minimum=0)
    """'map': pre-activation residual blocks (LayerNorm, ReLU, 3x3 conv, twice) after map_channels, at the last
    channel count"""
    recurrent: Literal["none", "gru", "lstm"] = "none"
    """memory over the encoder's features: 'gru' or 'lstm' (each env slot's state is carried, reset at episode
    starts; PPO learns on whole env trajectories, num_minibatches must divide num_envs), or 'none'"""
    memory_size: int = bounded(256, minimum=1)
    """recurrent state size"""
    width: int = bounded(512, minimum=1)
    """hidden width (Craftax 512)"""
    depth: int = bounded(3, minimum=1)
    """hidden layers per MLP (Craftax 3)"""
    activation: Literal["tanh", "relu", "gelu"] = "tanh"
    """MLP activation (Craftax tanh)"""
    conv_channels: tuple[int, ...] = (16, 32, 32)
    """IMPALA channels for 'conv' (the paper's agent: 64, 128, 128)"""
    conv_norm: bool = False
    """'conv': the paper's normalised IMPALA network (GroupNorm after each pool and in each residual block,
    LayerNorm before the bottleneck; Moon et al.'s AD repository)"""
    head_width: int = bounded(0, minimum=0)
    """'conv': a LayerNorm -> Dense(head_width) -> ReLU layer between the bottleneck and the heads (the paper's
    agent: 1024; 0: none)"""
    num_seeds: int = bounded(1, minimum=1)
    """independent agents vmapped in one compiled run"""
    seed: int = 0
    """first seed; seeds are seed, seed+1, ..., seed+num_seeds-1 unless given to init()"""
    resets_per_step: int = bounded(0, minimum=0)
    """fresh worlds generated per vector-env step (VecEnv; 0: its default, max(1, num_envs // 256))"""

    def __post_init__(self):
        problems = declared_problems(self, "ppo.")
        if self.num_minibatches >= 1 and self.batch_size % self.num_minibatches:
            problems.append(f"ppo.num_minibatches: num_envs x num_steps = {self.batch_size} is not divisible by "
                            f"num_minibatches = {self.num_minibatches}")
        if self.recurrent != "none" and self.num_minibatches >= 1 and self.num_envs % self.num_minibatches:
            problems.append(f"ppo.num_minibatches: a recurrent agent learns on whole env trajectories, so "
                            f"num_minibatches = {self.num_minibatches} must divide num_envs = {self.num_envs}")
        if not self.map_channels or min(self.map_channels) < 1:
            problems.append(f"ppo.map_channels: {list(self.map_channels)} must be one or more channel counts >= 1")
        if self.anneal_lr and self.total_updates <= 0:
            problems.append("ppo.total_updates: anneal_lr needs total_updates > 0")
        if not self.conv_channels or min(self.conv_channels) < 1:
            problems.append(f"ppo.conv_channels: {list(self.conv_channels)} must be one or more channel counts >= 1")
        if problems:
            raise ConfigError(problems, what="PPO settings")

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def steps_per_update(self) -> int:
        """env steps per update per seed (one rollout batch)"""
        return self.batch_size

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.num_seeds))

    @classmethod
    def craftax_baseline(cls, **overrides) -> "PPOConfig":
        """Craftax_Baselines ppo.py (1024 envs x 64 steps, 4 epochs x 8 minibatches, lr 2e-4 annealed, gamma .99,
        lambda .8, clip .2, ent .01, vf .5, grad norm 1.0, 3 x 512 tanh). Set total_updates for the anneal
        (1e9 steps = 15,258 updates)."""
        base = dict(num_envs=1024, num_steps=64, update_epochs=4, num_minibatches=8, gamma=0.99, gae_lambda=0.8,
                    clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=1.0, lr=2e-4, anneal_lr=True,
                    total_updates=15258, width=512, depth=3, activation="tanh")
        base.update(overrides)
        return cls(**base)

    @classmethod
    def envgen_paper(cls, **overrides) -> "PPOConfig":
        """The EnvGen paper's agent (AD repo configs/ppo.yaml): 8 envs x 512 steps, 3 epochs x 8 minibatches,
        gamma .95, lambda .65, clip .2, ent .01, vf .5, grad norm .5, constant lr 3e-4, per-rollout advantage
        normalisation. Not reproduced: its EWMA value-target normalisation and its IMPALA pixel network (use
        network='conv' with conv_channels=(64, 128, 128) for pixels)."""
        base = dict(num_envs=8, num_steps=512, update_epochs=3, num_minibatches=8, gamma=0.95, gae_lambda=0.65,
                    clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5, lr=3e-4, anneal_lr=False,
                    adv_norm="batch", clip_value=False)
        base.update(overrides)
        return cls(**base)


HYPERPARAMS = ("lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef")


@struct.dataclass
class Hyperparams:
    """The PPO settings that change no shape, as traced f32 values carried in the TrainState (one per agent): a
    sweep over them runs vmapped in one compiled program, like the seeds (`Trainer.init(..., hparams=...)`)."""

    lr: jax.Array
    gamma: jax.Array
    gae_lambda: jax.Array
    clip_eps: jax.Array
    ent_coef: jax.Array
    vf_coef: jax.Array


@struct.dataclass
class ValueNorm:
    """Bias-corrected moving averages of the value targets' mean and mean square (value normalisation)."""

    mean: jax.Array  # f32
    mean_sq: jax.Array  # f32
    weight: jax.Array  # f32: 1 - decay^updates, the bias correction

    @classmethod
    def empty(cls) -> "ValueNorm":
        return cls(mean=jnp.float32(0.0), mean_sq=jnp.float32(0.0), weight=jnp.float32(0.0))

    def stats(self):
        """(mean, std) of the targets so far; (0, 1) before the first update. The std has a floor of 0.1 (as
        Dedieu et al.), so near-constant early returns are not blown up."""
        w = jnp.maximum(self.weight, 1e-8)
        mean = jnp.where(self.weight > 0, self.mean / w, 0.0)
        var = jnp.where(self.weight > 0, self.mean_sq / w - jnp.square(mean), 1.0)
        return mean, jnp.maximum(jnp.sqrt(jnp.maximum(var, 0.0)), 0.1)

    def update(self, targets, decay: float) -> "ValueNorm":
        return ValueNorm(mean=decay * self.mean + (1 - decay) * jnp.mean(targets),
                         mean_sq=decay * self.mean_sq + (1 - decay) * jnp.mean(jnp.square(targets)),
                         weight=decay * self.weight + (1 - decay))


@struct.dataclass
class TrainState:
    """Everything a run needs to continue exactly. Leading seed axis [S] on every leaf."""

    params: Any
    opt_state: Any
    env_state: Any  # the VecEnv state
    obs: jax.Array  # [N, *obs_shape], the observation the next action is chosen from
    key: jax.Array  # u32[2]
    update_step: jax.Array  # i32, PPO updates done
    env_steps: jax.Array  # i32, env steps done (per seed)
    hparams: Hyperparams | None = None  # traced PPO settings (always set by the trainer)
    value_norm: ValueNorm | None = None  # with ppo.value_norm
    memory: Any = None  # with ppo.recurrent: each env slot's recurrent state [N, H], already reset at episode starts


# Fields added after the first release: a checkpoint without them restores with fresh values (Trainer.restore).
AGENT_FIELDS = ("hparams", "value_norm", "memory")


@struct.dataclass
class PLRTrainState(TrainState):
    """The TrainState of a trainer with a level sampler: the sampler's state travels (and is checkpointed) with it."""

    sampler: Any = None  # level_sampler.SamplerState


@struct.dataclass
class Transition:
    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array
    truncated: jax.Array
    start: jax.Array | None = None  # recurrent: an episode starts at this obs (its memory was cleared before it)


def compute_gae(rewards, values, dones, truncated, last_value, gamma, gae_lambda, bootstrap_truncated=True):
    """Generalised advantage estimation over [T, ...] arrays by a reverse scan.

    done[t] means the episode ended with step t (the next obs is a fresh episode). A truncated step (time limit)
    bootstraps from V(s_t) when `bootstrap_truncated`, else it counts as terminal. Returns (advantages, targets).
    """
    dones = dones.astype(jnp.float32)
    truncated = truncated.astype(jnp.float32) * dones
    terminal = dones - truncated if bootstrap_truncated else dones

    def body(carry, x):
        gae, next_value = carry
        r, v, d, term, tr = x
        boot = tr * v + (1.0 - tr) * next_value if bootstrap_truncated else next_value
        delta = r + gamma * boot * (1.0 - term) - v
        gae = delta + gamma * gae_lambda * (1.0 - d) * gae
        return (gae, v), gae

    init = (jnp.zeros_like(last_value), last_value)
    _, adv = jax.lax.scan(body, init, (rewards, values, dones, terminal, truncated), reverse=True, unroll=16)
    return adv, adv + values


def _normalise(adv, mask):
    """Advantage normalisation (over the masked samples when a mask is given)."""
    if mask is None:
        return (adv - adv.mean()) / (adv.std() + 1e-8)
    mu = _masked_mean(adv, mask)
    return (adv - mu) / (jnp.sqrt(_masked_mean(jnp.square(adv - mu), mask)) + 1e-8)


def _masked_mean(x, mask):
    """Mean over the masked entries (0 for an all-False mask)."""
    w = mask.astype(x.dtype)
    return jnp.mean(x * w) * (w.size / jnp.maximum(w.sum(), 1.0))


def _some(mask):
    """The mask, or all True where it selects nothing (keeps masked means finite; their gradients are dropped)."""
    return jnp.where(mask.any(), mask, True)


def _default_vecenv(env, cfg: PPOConfig, num_envs: int):

    return VecEnv(env, num_envs, cfg.resets_per_step)


def _layout(rows):
    """The VecEnv layout argument: a RowSampler (sampled rows) or None (a trainer with a level sampler) as given,
    else the fixed rows as i32."""
    from envgen_jax.envs.vector import RowSampler

    return rows if rows is None or isinstance(rows, RowSampler) else jnp.asarray(rows, jnp.int32)


def _rows_axis(rows) -> int | None:
    """vmap axis of the layout: per-seed rows [S, N] (or per-seed probs [S, K]) map over seeds."""
    from envgen_jax.envs.vector import RowSampler

    if rows is None:
        return None
    return 0 if jnp.ndim(rows.probs if isinstance(rows, RowSampler) else rows) == 2 else None


def select_seeds(tree, idx: int | Sequence[int] | slice) -> Any:
    """Slice the leading seed axis of a TrainState / metrics pytree; the axis is kept (an int selects [idx])."""
    if not isinstance(idx, slice):
        idx = np.atleast_1d(np.asarray(idx))
    return jax.tree.map(lambda x: x[idx], tree)


def seed_keys(seeds: Sequence[int]) -> jax.Array:
    """u32[S, 2]: jax.random.PRNGKey(seed) for each seed."""
    return jnp.stack([jax.random.PRNGKey(int(s)) for s in seeds])


class Trainer:
    """PPO trainer for one env and one static PPOConfig. Build with `make_trainer(env, cfg)`.

    Public:
      init(bank, rows, seeds=None, hparams=None) -> TrainState                (jitted)
      train_chunk(ts, bank, rows, num_updates) -> (TrainState, ChunkMetrics)   (jitted; ts donated)
      reset_envs(ts, bank, rows) -> TrainState   fresh episodes after a mixture change (jitted; ts donated)
      abstract_state(bank, rows, seeds=None) -> TrainState of ShapeDtypeStructs (for checkpoint restore)
      restore(path, bank, rows, seeds=None) -> TrainState from a checkpoint (also one written before hparams,
        value_norm and memory were carried)
      apply(params, obs) -> (logits, value)   (one seed's params; feed-forward networks)
      act(params, memory, obs) -> (memory, logits, value); initial_memory(n); forget(memory, done): one policy
        step for feed-forward and recurrent networks alike (memory is None without `recurrent`); values are
        de-normalised only in training (the evaluator and probes use logits)
    Attributes: env, cfg, venv, network, tx, trace_counts (dict: Python traces per jitted function; eval_shape
    via abstract_state counts as an init trace).
    Counters are int32: env_steps overflows past 2.1e9 env steps per seed.
    """

    def __init__(self, env, cfg: PPOConfig, venv=None, level_sampler: "UpdateHooks | None" = None):
        self.env = env
        self.cfg = cfg
        self.level_sampler = level_sampler  # the update's hooks (robust PLR's LevelSampler), or None
        self.venv = venv if venv is not None else _default_vecenv(env, cfg, cfg.num_envs)
        self.obs_shape = tuple(env.obs_shape)
        self.num_actions = int(env.num_actions)
        self.achievement_names = tuple(env.achievement_names)
        map_shape = getattr(env, "map_shape", None)
        if cfg.network == "map" and map_shape is None:
            raise ConfigError([f"ppo.network: 'map' needs an observation that starts with a local map; "
                               f"{type(env).__name__} with these settings has none (use 'mlp' or 'conv')"],
                              what="PPO settings")
        self.recurrent = cfg.recurrent != "none"
        self.network = ActorCritic(num_actions=self.num_actions, obs_shape=self.obs_shape, kind=cfg.network,
                                   width=cfg.width, depth=cfg.depth, activation=cfg.activation,
                                   conv_channels=tuple(cfg.conv_channels), layer_norm=cfg.layer_norm,
                                   map_shape=None if map_shape is None else tuple(map_shape),
                                   map_channels=tuple(cfg.map_channels), map_res_blocks=cfg.map_res_blocks,
                                   conv_norm=cfg.conv_norm, head_width=cfg.head_width, recurrent=cfg.recurrent,
                                   memory_size=cfg.memory_size)
        self.tx = self._optimizer(jnp.float32(cfg.lr))
        self.trace_counts = {"init": 0, "train_chunk": 0, "reset_envs": 0}
        self._init_jit = jax.jit(self._init)
        self._params_jit = jax.jit(self._init_params)
        self._reset_jit = jax.jit(self._reset_envs, donate_argnums=(0,))
        self._chunk_jit = jax.jit(self._train_chunk, static_argnames=("num_updates",), donate_argnums=(0,))

    # -- hyperparameters ------------------------------------------------------------------------------------
    def _optimizer(self, lr):
        """Adam with global-norm clipping, at base learning rate `lr` (traced: the agent's hparams.lr)."""
        return optax.chain(optax.clip_by_global_norm(self.cfg.max_grad_norm),
                           optax.adam(learning_rate=functools.partial(self.learning_rate, lr=lr),
                                      eps=self.cfg.adam_eps))

    def learning_rate(self, count, lr=None):
        """Adam step size at optimiser step `count` (linear anneal per update as in PureJaxRL); `lr` the base."""
        cfg = self.cfg
        lr = jnp.asarray(cfg.lr if lr is None else lr, jnp.float32)
        if not cfg.anneal_lr:
            return lr
        frac = 1.0 - (count // (cfg.num_minibatches * cfg.update_epochs)) / cfg.total_updates
        return lr * jnp.clip(frac, 0.0, 1.0)

    def hparams(self, values: dict | None = None, count: int | None = None) -> Hyperparams:
        """Hyperparams for `count` agents (a leading axis), from the config with `values` overriding: each a
        number or a sequence of `count` numbers (one per agent)."""
        values = dict(values or {})
        unknown = sorted(set(values) - set(HYPERPARAMS))
        if unknown:
            raise ConfigError([f"hparams: {', '.join(unknown)} cannot vary per agent (one of {', '.join(HYPERPARAMS)})"],
                              what="PPO settings")
        out = {}
        for name in HYPERPARAMS:
            v = np.asarray(values.get(name, getattr(self.cfg, name)), np.float32)
            if count is not None:
                v = np.broadcast_to(v, (count,)) if v.ndim == 0 else v
                if v.shape != (count,):
                    raise ConfigError([f"hparams.{name}: {v.shape[0]} values for {count} agents"], what="PPO settings")
            out[name] = jnp.asarray(v)
        return Hyperparams(**out)

    # -- the network ----------------------------------------------------------------------------------------
    def apply(self, params, obs):
        return self.network.apply(params, obs)

    def initial_memory(self, n: int):
        """The recurrent state of `n` env slots at an episode's start (None for a feed-forward network)."""
        return self.network.initial_carry(n) if self.recurrent else None

    def forget(self, memory, done):
        """The memory with the slots whose episode just ended (done bool[N]) reset for the next episode."""
        return None if memory is None else self.network.clear(memory, done)

    def act(self, params, memory, obs):
        """One policy step of N slots: (memory, logits [N, A], raw value [N]); memory None when feed-forward."""
        if not self.recurrent:
            logits, value = self.apply(params, obs)
            return None, logits, value
        no_reset = jnp.zeros(obs.shape[:1], bool)  # `memory` is already reset where episodes started
        return self.network.apply(params, memory, obs, no_reset, method="step")

    # -- init -----------------------------------------------------------------------------------------------
    def _seeds(self, seeds):
        seeds = self.cfg.seeds if seeds is None else tuple(int(s) for s in np.atleast_1d(seeds))
        return seed_keys(seeds)

    def _venv_reset(self, key, bank, rows):
        obs, env_state = self.venv.reset(key, bank, rows)
        # Strong dtypes: a weak-typed leaf from an env reset would make the chunk's output differ from its input
        # in weak_type and cost a second compile of train_chunk.
        return obs, jax.tree.map(lambda x: x.astype(x.dtype), env_state)

    def _init_params(self, key):
        """One seed's network parameters (from the first of the seed key's three splits)."""
        k_params, _, _ = jax.random.split(key, 3)
        obs = jnp.zeros(self.obs_shape, jnp.float32)
        if not self.recurrent:
            return self.network.init(k_params, obs)
        return self.network.init(k_params, self.initial_memory(1), obs[None, None], jnp.zeros((1, 1), bool),
                                 method="unroll")

    def _layout(self, rows, sampler):
        """What the VecEnv runs: `rows`, or with hooks and rows None, rows drawn from their distribution."""
        if self.level_sampler is None or rows is not None:
            return rows
        from envgen_jax.envs.vector import RowSampler
        return RowSampler(self.level_sampler.row_distribution(sampler))

    def _init_one(self, key, params, hparams, bank, rows):
        _, k_reset, k_run = jax.random.split(key, 3)
        sampler = None if self.level_sampler is None else self.level_sampler.init_state(bank.num_rows)
        obs, env_state = self._venv_reset(k_reset, bank, self._layout(rows, sampler))
        fields = dict(params=params, opt_state=self.tx.init(params), env_state=env_state, obs=obs, key=k_run,
                      update_step=jnp.int32(0), env_steps=jnp.int32(0), hparams=hparams,
                      value_norm=ValueNorm.empty() if self.cfg.value_norm else None,
                      memory=self.initial_memory(self.cfg.num_envs))
        return TrainState(**fields) if sampler is None else PLRTrainState(**fields, sampler=sampler)

    def _init(self, keys, params, hparams, bank, rows):
        self.trace_counts["init"] += 1
        return jax.vmap(self._init_one, in_axes=(0, 0, 0, None, _rows_axis(rows)))(keys, params, hparams, bank, rows)

    def init(self, bank, rows, seeds: Sequence[int] | None = None, hparams: dict | Hyperparams | None = None
             ) -> TrainState:
        """Fresh TrainState for `seeds` (default cfg.seeds); envs reset into `rows` of `bank`.

        `hparams`: per-agent PPO settings (a dict name -> a number or one number per seed, or a Hyperparams with a
        leading seed axis); the rest come from the config. A sweep is seeds repeated with different hparams:
        `init(bank, rows, seeds=[0, 0, 1, 1], hparams={"lr": [1e-4, 3e-4, 1e-4, 3e-4]})`; agent i trains exactly
        as a single-agent run with those values."""
        keys = self._seeds(seeds)
        if not isinstance(hparams, Hyperparams):
            hparams = self.hparams(hparams, count=keys.shape[0])
        # Parameters are made one seed at a time: vmapping the orthogonal initialisers (QR decompositions, LAPACK
        # custom calls) over seeds deadlocked jaxlib 0.10's CPU runtime once a program held six or more of them
        # (tests/test_ppo.py::test_init_many_seeds_does_not_hang).
        params = jax.tree.map(lambda *xs: jnp.stack(xs), *[self._params_jit(k) for k in keys])
        return self._init_jit(keys, params, hparams, bank, _layout(rows))

    def _reset_envs(self, ts, bank, rows):
        self.trace_counts["reset_envs"] += 1

        def one(ts, rows):
            key, k_reset = jax.random.split(ts.key)
            obs, env_state = self._venv_reset(k_reset, bank, self._layout(rows, getattr(ts, "sampler", None)))
            return ts.replace(obs=obs, env_state=env_state, key=key, memory=self.initial_memory(self.cfg.num_envs))

        return jax.vmap(one, in_axes=(0, _rows_axis(rows)))(ts, rows)

    def reset_envs(self, ts: TrainState, bank, rows) -> TrainState:
        """Fresh episodes in every env slot from `rows` of `bank` (params and optimiser kept; `ts` is donated).

        Call it after changing the mixture (which row each slot runs) or the contents of rows that slots run:
        running episodes, and the VecEnv's pre-generated spare worlds, were built from the old rows, so without a
        reset their lengths, returns and achievements would mix two configs. Writing only rows that no slot runs
        needs no reset. (Costs one world generation per env slot, plus the spares.)"""
        return self._reset_jit(ts, bank, _layout(rows))

    def abstract_state(self, bank, rows, seeds: Sequence[int] | None = None) -> TrainState:
        keys = self._seeds(seeds)
        params = jax.eval_shape(jax.vmap(self._init_params), keys)
        hparams = jax.eval_shape(lambda: self.hparams(count=keys.shape[0]))
        return jax.eval_shape(self._init, keys, params, hparams, bank, _layout(rows))

    def restore(self, path, bank, rows, seeds: Sequence[int] | None = None) -> TrainState:
        """The TrainState saved at `path`. A checkpoint written before the agent carried hparams, value_norm and
        memory (which that code did not have) gets the config's hparams and no value_norm or memory: exactly what
        the old code trained with, so this config must enable neither value_norm nor recurrent."""
        from envgen_jax.trainer.checkpoint import restore_checkpoint, saved_fields
        like = self.abstract_state(bank, rows, seeds)
        missing = [f for f in AGENT_FIELDS if f not in saved_fields(path)]
        if not missing:
            return restore_checkpoint(path, like)
        if self.cfg.value_norm or self.recurrent:
            raise ConfigError([f"ppo: the checkpoint {path} was written by an agent without value_norm and "
                               f"recurrent; resume it with the settings it was started with"], what="PPO settings")
        names = [f.name for f in dataclasses.fields(like) if f.name not in missing]
        saved = restore_checkpoint(path, {name: getattr(like, name) for name in names})
        return type(like)(**saved, hparams=self.hparams(count=len(self._seeds(seeds))), value_norm=None, memory=None)

    # -- one PPO update ---------------------------------------------------------------------------------------
    def _rollout(self, params, obs, env_state, memory, key, bank, rows):
        def env_step(carry, k):
            obs, env_state, memory = carry
            k_act, k_env = jax.random.split(k)
            new_memory, logits, value = self.act(params, memory, obs)
            pi = policy(logits)
            action = pi.sample(seed=k_act)
            log_prob = pi.log_prob(action)
            next_obs, env_state, info = self.venv.step(k_env, env_state, action, bank, rows)
            tr = Transition(obs=obs, action=action, log_prob=log_prob, value=value, reward=info.reward,
                            done=info.done, truncated=info.truncated)
            return (next_obs, env_state, self.forget(new_memory, info.done)), (tr, info)

        keys = jax.random.split(key, self.cfg.num_steps)
        (obs, env_state, memory), (traj, infos) = jax.lax.scan(env_step, (obs, env_state, memory), keys)
        if self.recurrent:  # an episode starts at step t where step t-1 ended one (t = 0: reset before the rollout)
            traj = traj.replace(start=jnp.concatenate([jnp.zeros_like(traj.done[:1]), traj.done[:-1]]))
        return obs, env_state, memory, traj, infos

    def _evaluate_actions(self, params, memory, mb: Transition):
        """(logits, raw values) of a minibatch: [B] samples, or for a recurrent agent [T, B] sequences unrolled
        from their stored initial memory."""
        if not self.recurrent:
            return self.apply(params, mb.obs)
        _, logits, value = self.network.apply(params, memory, mb.obs, mb.start, method="unroll")
        return logits, value

    def _loss(self, params, hp: Hyperparams, mb: Transition, adv, targets, memory=None, mask=None):
        """PPO loss; `mask` (bool per sample, robust PLR) averages every term over the masked samples only."""
        cfg = self.cfg
        mean = (lambda x: x.mean()) if mask is None else functools.partial(_masked_mean, mask=mask)
        logits, value = self._evaluate_actions(params, memory, mb)
        pi = policy(logits)
        log_prob = pi.log_prob(mb.action)

        if cfg.clip_value:
            v_clip = mb.value + jnp.clip(value - mb.value, -hp.clip_eps, hp.clip_eps)
            value_loss = 0.5 * mean(jnp.maximum(jnp.square(value - targets), jnp.square(v_clip - targets)))
        else:
            value_loss = 0.5 * mean(jnp.square(value - targets))

        if cfg.adv_norm == "minibatch":
            adv = _normalise(adv, mask)
        log_ratio = log_prob - mb.log_prob
        ratio = jnp.exp(log_ratio)
        pg1 = ratio * adv
        pg2 = jnp.clip(ratio, 1.0 - hp.clip_eps, 1.0 + hp.clip_eps) * adv
        policy_loss = -mean(jnp.minimum(pg1, pg2))
        entropy = mean(pi.entropy())
        total = policy_loss + hp.vf_coef * value_loss - hp.ent_coef * entropy
        aux = dict(value_loss=value_loss, policy_loss=policy_loss, entropy=entropy,
                   approx_kl=mean((ratio - 1.0) - log_ratio),
                   clip_frac=mean(jnp.abs(ratio - 1.0) > hp.clip_eps))
        return total, aux

    def _minibatches(self, key, batch):
        """One epoch's minibatches, [M, ...] leaves: feed-forward agents shuffle single steps ([T, N] leaves
        flattened); recurrent agents shuffle env slots and keep each slot's whole trajectory ([T, N] -> [M, T, n],
        the initial memory [N, H] -> [M, n, H])."""
        cfg = self.cfg
        if not self.recurrent:
            perm = jax.random.permutation(key, cfg.batch_size)
            return jax.tree.map(
                lambda x: jnp.take(x, perm, axis=0).reshape((cfg.num_minibatches, cfg.minibatch_size) + x.shape[1:]),
                batch)
        sequences, memory = batch
        m, n = cfg.num_minibatches, cfg.num_envs // cfg.num_minibatches
        perm = jax.random.permutation(key, cfg.num_envs)
        seq = jax.tree.map(lambda x: jnp.swapaxes(jnp.take(x, perm, axis=1).reshape(
            (x.shape[0], m, n) + x.shape[2:]), 0, 1), sequences)
        mem = jax.tree.map(lambda x: jnp.take(x, perm, axis=0).reshape((m, n) + x.shape[1:]), memory)
        return seq, mem

    def _learn(self, params, opt_state, hp: Hyperparams, lr, traj: Transition, adv, targets, memory, key,
               mask=None):
        """Epochs of minibatch Adam steps. `mask` (bool[T, N] or None): robust PLR's steps that give gradients; a
        minibatch without any gives zero gradients. None takes exactly the unmasked code path. `memory`: a
        recurrent agent's state at the rollout's start (None when feed-forward)."""
        cfg = self.cfg
        tx = self._optimizer(hp.lr)
        if cfg.adv_norm == "batch":
            adv = _normalise(adv, None) if mask is None else jnp.where(mask.all(), _normalise(adv, None),
                                                                       _normalise(adv, _some(mask)))
        batch = (traj, adv, targets) if mask is None else (traj, adv, targets, mask)
        if self.recurrent:
            batch = (batch, memory)
        else:
            batch = jax.tree.map(lambda x: x.reshape((cfg.batch_size,) + x.shape[2:]), batch)
        grad_fn = jax.value_and_grad(self._loss, has_aux=True)

        def minibatch_step(carry, mb):
            params, opt_state = carry
            mb, mb_memory = mb if self.recurrent else (mb, None)
            if mask is None:
                (total, aux), grads = grad_fn(params, hp, *mb, memory=mb_memory)
            else:
                *mb, mb_mask = mb

                def masked():  # an all-False minibatch: loss on all samples (finite), then zero gradients
                    out, grads = grad_fn(params, hp, *mb, memory=mb_memory, mask=_some(mb_mask))
                    return out, jax.tree.map(lambda g: jnp.where(mb_mask.any(), g, 0.0), grads)

                # A fully replayed minibatch takes exactly the unmasked update.
                (total, aux), grads = jax.lax.cond(mb_mask.all(), lambda: grad_fn(params, hp, *mb, memory=mb_memory),
                                                   masked)
            updates, opt_state = tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            return (params, opt_state), dict(aux, total_loss=total, grad_norm=optax.tree.norm(grads))

        def epoch(carry, k):
            return jax.lax.scan(minibatch_step, carry, self._minibatches(k, batch))

        (params, opt_state), stats = jax.lax.scan(epoch, (params, opt_state),
                                                  jax.random.split(key, cfg.update_epochs))
        return params, opt_state, jax.tree.map(jnp.mean, stats)

    def _advantages(self, ts: TrainState, traj: Transition, last_value):
        """GAE on de-normalised values. Returns (advantages, the de-normalised values, the trajectory and targets
        the learner compares in the critic's own scale, the new value-normalisation state). With value_norm the
        critic predicts normalised returns: its statistics take this rollout's targets first, then values and
        targets are normalised by them."""
        value_norm = ts.value_norm
        if value_norm is not None:
            mu, sd = value_norm.stats()
            traj = traj.replace(value=traj.value * sd + mu)
            last_value = last_value * sd + mu
        adv, targets = compute_gae(traj.reward, traj.value, traj.done, traj.truncated, last_value, ts.hparams.gamma,
                                   ts.hparams.gae_lambda, self.cfg.bootstrap_truncated)
        if value_norm is None:
            return adv, traj.value, traj, targets, None
        value_norm = value_norm.update(targets, self.cfg.value_norm_decay)
        mu, sd = value_norm.stats()
        return adv, traj.value, traj.replace(value=(traj.value - mu) / sd), (targets - mu) / sd, value_norm

    def _update(self, ts: TrainState, bank, rows):
        """One PPO update: rollout, advantages, epochs of minibatch steps; the hooks (level replay, where its
        distribution picks the rows) give the gradient mask and see the rollout afterwards."""
        cfg = self.cfg
        hooks = self.level_sampler if rows is None else None
        key, k_roll, k_learn = jax.random.split(ts.key, 3)
        layout = self._layout(rows, getattr(ts, "sampler", None))
        obs, env_state, memory, traj, infos = self._rollout(ts.params, ts.obs, ts.env_state, ts.memory, k_roll,
                                                            bank, layout)
        _, _, last_value = self.act(ts.params, memory, obs)
        adv, values, learn_traj, targets, value_norm = self._advantages(ts, traj, last_value)
        lr = self.learning_rate(ts.update_step * cfg.num_minibatches * cfg.update_epochs, ts.hparams.lr)
        mask = None if hooks is None else hooks.gradient_mask(ts.sampler, infos)
        params, opt_state, stats = self._learn(ts.params, ts.opt_state, ts.hparams, lr, learn_traj, adv, targets,
                                               ts.memory, k_learn, mask)
        if hooks is not None:
            ts = ts.replace(sampler=hooks.after_update(ts.sampler, infos, adv, values))
        ts = ts.replace(params=params, opt_state=opt_state, env_state=env_state, obs=obs, key=key, memory=memory,
                        value_norm=value_norm, update_step=ts.update_step + 1,
                        env_steps=ts.env_steps + cfg.steps_per_update)
        return ts, infos, LossStats(learning_rate=lr, **stats)

    def _chunk_one(self, ts: TrainState, bank, rows, num_updates: int):
        num_rows = bank.num_rows
        acc0 = RowStats.zeros(num_rows, len(self.achievement_names))

        def body(carry, _):
            ts, acc = carry
            ts, infos, losses = self._update(ts, bank, rows)
            return (ts, acc + row_stats_from_steps(infos, num_rows)), losses

        (ts, acc), losses = jax.lax.scan(body, (ts, acc0), None, length=num_updates)
        return ts, ChunkMetrics(rows=acc, losses=losses, env_steps=ts.env_steps, update_step=ts.update_step)

    def _train_chunk(self, ts, bank, rows, num_updates: int):
        self.trace_counts["train_chunk"] += 1
        fn = functools.partial(self._chunk_one, num_updates=num_updates)
        return jax.vmap(fn, in_axes=(0, None, _rows_axis(rows)))(ts, bank, rows)

    def compile_train_chunk(self, ts: TrainState, bank, rows, num_updates: int):
        """Ahead-of-time compile of train_chunk for these shapes: a callable (ts, bank, rows) -> (ts, metrics).
        Use it to time compilation on its own; it shares nothing with the `train_chunk` cache."""
        return self._chunk_jit.lower(ts, bank, _layout(rows), num_updates=num_updates).compile()

    def train_chunk(self, ts: TrainState, bank, rows, num_updates: int) -> tuple[TrainState, ChunkMetrics]:
        """Run `num_updates` PPO updates for every seed. `ts` is donated (do not reuse it afterwards).

        bank: a Bank (env params with leading K rows); rows: i32[N] or i32[S, N] (the bank row of each env slot; the
        VecEnv reads both on every step, so after moving slots to other rows call `reset_envs` first).
        Env steps in the chunk per seed: num_updates * num_envs * num_steps."""
        return self._chunk_jit(ts, bank, _layout(rows), num_updates=num_updates)


class UpdateHooks(Protocol):
    """What a PPO update lets a curriculum on the device do (robust PLR's `LevelSampler` implements it): a state
    carried in the TrainState's `sampler` field, the row distribution of new episodes, a per-step gradient mask, and
    an after-update step that sees the rollout. The update itself knows nothing else of level replay."""

    def init_state(self, num_rows: int) -> Any: ...
    def row_distribution(self, state) -> jax.Array: ...
    def gradient_mask(self, state, infos) -> jax.Array | None: ...
    def after_update(self, state, infos, advantages, values) -> Any: ...


def make_trainer(env, cfg: PPOConfig, venv=None, level_sampler: UpdateHooks | None = None) -> Trainer:
    """A Trainer for `env` (the project's env protocol) and `cfg`. `venv` overrides the default
    `VecEnv(env, cfg.num_envs[, cfg.resets_per_step])`. With `level_sampler` (robust PLR) every episode's row
    is drawn from the sampler's distribution over the whole bank where `rows` is None (and the sampler's state,
    carried in the TrainState, is updated after every PPO update); given rows (fixed or a RowSampler) it runs them
    as any trainer does and leaves the sampler's state as it is."""
    return Trainer(env, cfg, venv, level_sampler)
