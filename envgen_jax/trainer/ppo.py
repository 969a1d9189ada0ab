"""One PPO update, read top-down (PureJaxRL's layout): a rollout of `num_steps` vector-env steps, a reverse-scan GAE,
then `update_epochs` x `num_minibatches` Adam steps in two nested scans. Pure functions of one agent's TrainState;
`trainer.train.Trainer` scans updates into a compiled chunk and vmaps it over seeds.

    ppo = PPO(cfg, agent, venv)                            # agent: networks.Agent; venv: envs.vector.VecEnv
    ts, out = ppo.update(ts, bank, rows)                   # out.infos [T, N], out.losses (means over the epochs)
    ts, out = ppo.update(ts, bank, rows, grad_rows=mask)   # only steps in rows where mask (bool[K]) give gradients

* `rows`: the VecEnv layout (i32[N] fixed rows, or a `RowSampler`); `grad_rows`, data like the bank: the rows
  whose steps count in the loss (robust level replay, `trainer.replay`); None takes exactly the unmasked path.
* `TrainerConfig` is static (shapes, loop sizes, switches); the numbers that change no shape (`Hyperparams`: lr, gamma,
  GAE lambda, clip, loss weights) are traced values in the TrainState, so a sweep over them is a vmap.
* Time limits: `StepInfo.truncated` is kept apart from `done`. With `bootstrap_truncated` (default) a truncated
  step bootstraps from V(s_t) (the final observation is not available after the auto-reset, and the value of the
  state just before the cut is the usual proxy); otherwise the cut is treated like a termination (PureJaxRL).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax
from flax import struct

from envgen_jax.trainer.config import HYPERPARAMS, PPOAlgorithm, TrainerConfig
from envgen_jax.trainer.metrics import LossStats
from envgen_jax.trainer.networks import Agent, policy

__all__ = ["TrainerConfig", "PPOAlgorithm", "HYPERPARAMS", "Hyperparams", "ValueNorm", "TrainState",
           "Transition", "UpdateOut", "PPO", "compute_gae"]


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
    """Everything an agent needs to continue exactly (a checkpoint holds it). Leading seed axis [S] on every leaf
    outside one update."""

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


@struct.dataclass
class UpdateOut:
    """What one update saw: the rollout's StepInfo [T, N], its GAE advantages and de-normalised values [T, N] (a
    curriculum scores rows with them), and the losses (means over the epochs' minibatches)."""

    infos: Any
    advantages: jax.Array
    values: jax.Array
    losses: LossStats


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


@dataclasses.dataclass(frozen=True)
class PPO:
    """PPO for one static config, one network and one vector env. `minibatches`: `trainer.minibatch.minibatcher`
    (single steps, or whole sequences for a recurrent agent)."""

    cfg: PPOAlgorithm  # the trainer's TrainerConfig.ppo
    agent: Agent
    venv: Any
    minibatches: Callable

    def update(self, ts: TrainState, bank, rows, grad_rows=None) -> tuple[TrainState, UpdateOut]:
        """One PPO update of one agent: rollout, advantages, epochs of minibatch Adam steps."""
        cfg = self.cfg
        key, k_roll, k_learn = jax.random.split(ts.key, 3)
        obs, env_state, memory, traj, infos = self.rollout(ts.params, ts.obs, ts.env_state, ts.memory, k_roll,
                                                           bank, rows)
        _, _, last_value = self.agent.act(ts.params, memory, obs)
        adv, values, learn_traj, targets, value_norm = self.advantages(ts, traj, last_value)
        lr = self.learning_rate(ts.update_step * cfg.num_minibatches * cfg.update_epochs, ts.hparams.lr)
        mask = None if grad_rows is None else grad_rows[infos.row]
        params, opt_state, stats = self.learn(ts.params, ts.opt_state, ts.hparams, learn_traj, adv, targets,
                                              ts.memory, k_learn, mask)
        ts = ts.replace(params=params, opt_state=opt_state, env_state=env_state, obs=obs, key=key, memory=memory,
                        value_norm=value_norm, update_step=ts.update_step + 1,
                        env_steps=ts.env_steps + cfg.steps_per_update)
        return ts, UpdateOut(infos=infos, advantages=adv, values=values, losses=LossStats(learning_rate=lr, **stats))

    def rollout(self, params, obs, env_state, memory, key, bank, rows):
        """`num_steps` steps of every env slot: (next obs, env state, memory, Transition [T, N], StepInfo [T, N])."""
        def env_step(carry, k):
            obs, env_state, memory = carry
            k_act, k_env = jax.random.split(k)
            new_memory, logits, value = self.agent.act(params, memory, obs)
            pi = policy(logits)
            action = pi.sample(seed=k_act)
            log_prob = pi.log_prob(action)
            next_obs, env_state, info = self.venv.step(k_env, env_state, action, bank, rows)
            tr = Transition(obs=obs, action=action, log_prob=log_prob, value=value, reward=info.reward,
                            done=info.done, truncated=info.truncated)
            return (next_obs, env_state, self.agent.forget(new_memory, info.done)), (tr, info)

        keys = jax.random.split(key, self.cfg.num_steps)
        (obs, env_state, memory), (traj, infos) = jax.lax.scan(env_step, (obs, env_state, memory), keys)
        return obs, env_state, memory, traj.replace(start=self.agent.episode_starts(traj.done)), infos

    def advantages(self, ts: TrainState, traj: Transition, last_value):
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

    def learn(self, params, opt_state, hp: Hyperparams, traj: Transition, adv, targets, memory, key, mask=None):
        """Epochs of minibatch Adam steps. `mask` (bool[T, N] or None): the steps that give gradients (`masked_loss`).
        `memory`: a recurrent agent's state at the rollout's start (None when feed-forward)."""
        cfg = self.cfg
        tx = self.optimizer(hp.lr)
        if cfg.adv_norm == "batch":
            adv = _normalise(adv, None) if mask is None else jnp.where(mask.all(), _normalise(adv, None),
                                                                       _normalise(adv, _some(mask)))
        batch = (traj, adv, targets) if mask is None else (traj, adv, targets, mask)
        shuffle = self.minibatches(batch, memory, cfg.num_minibatches)
        grad_fn = jax.value_and_grad(self.loss if mask is None else self.masked_loss, has_aux=True)

        def minibatch_step(carry, mb):
            params, opt_state, stopped = carry
            samples, mb_memory = mb  # samples: (traj, adv, targets[, mask]) of the minibatch
            (_, stats), grads = grad_fn(params, hp, *samples, memory=mb_memory)
            updates, new_opt_state = tx.update(grads, opt_state, params)
            new = (optax.apply_updates(params, updates), new_opt_state)
            if cfg.target_kl:  # KL limit: from the first minibatch whose policy drifted too far, no more steps
                stopped = stopped | (stats["approx_kl"] > 1.5 * cfg.target_kl)
                new = jax.tree.map(lambda old, n: jnp.where(stopped, old, n), (params, opt_state), new)
            return (*new, stopped), dict(stats, grad_norm=optax.tree.norm(grads), kl_stopped=stopped)

        def epoch(carry, k):
            return jax.lax.scan(minibatch_step, carry, shuffle(k))

        (params, opt_state, _), stats = jax.lax.scan(epoch, (params, opt_state, jnp.bool_(False)),
                                                     jax.random.split(key, cfg.update_epochs))
        return params, opt_state, jax.tree.map(lambda x: jnp.mean(x.astype(jnp.float32)), stats)

    def loss(self, params, hp: Hyperparams, mb: Transition, adv, targets, mask=None, memory=None):
        """The clipped PPO loss and its terms; `mask` (bool per sample) averages every term over the masked samples
        only."""
        cfg = self.cfg
        mean = (lambda x: x.mean()) if mask is None else functools.partial(_masked_mean, mask=mask)
        logits, value = self.agent.evaluate(params, memory, mb.obs, mb.start)
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
        return total, dict(value_loss=value_loss, policy_loss=policy_loss, entropy=entropy,
                           approx_kl=mean((ratio - 1.0) - log_ratio),
                           clip_frac=mean(jnp.abs(ratio - 1.0) > hp.clip_eps), total_loss=total)

    def masked_loss(self, params, hp: Hyperparams, mb: Transition, adv, targets, mask, memory=None):
        """The loss over the selected steps; a minibatch without any logs the loss of all its steps (finite) and
        gets zero gradients: the loss is scaled by 0, else by exactly 1.0, so an all-True mask takes the unmasked
        update bit for bit."""
        total, terms = self.loss(params, hp, mb, adv, targets, _some(mask), memory)
        return total * mask.any(), terms

    def optimizer(self, lr):
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
