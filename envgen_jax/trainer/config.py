"""TrainerConfig: everything static about a trainer (frozen, hashable: part of the compiled program): the three
sections a run configuration names, `ppo` (PPOAlgorithm: the algorithm's sizes, switches and hyperparameters),
`network` (encoders.NetworkConfig: the encoder kind, each kind's settings, the memory) and `execution`
(ExecutionConfig: how the agents run: the seed axis, the convolutions, the dtype, the env resets), and the agents'
seeds (`num_agents` of them from `seed`: a run's agents, its top-level `seeds` for each sweep combination, from
its `seed`).

    TrainerConfig(PPOAlgorithm(num_envs=8), NetworkConfig(kind="conv", conv=ConvNet(width=256)), num_agents=2)

A run configuration's older flat keys (`ppo.width`, `ppo.seed_axis`, ...) are moved to these sections as it is read
(`run_config.OLD_KEYS`).

The numbers in `HYPERPARAMS` are also carried per agent as traced values (`ppo.Hyperparams`), so a sweep over them
runs vmapped in one program; the config's values are their defaults.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from envgen_jax.config_io import bounded, declared_problems
from envgen_jax.schema import ConfigError, Declared
from envgen_jax.trainer.encoders import MLPNet, NetworkConfig


@dataclasses.dataclass(frozen=True)
class PPOAlgorithm:
    """PPO sizes, switches and hyperparameters (the run configuration's `ppo:` section). The hyperparameters named
    in HYPERPARAMS are only the defaults of the traced per-agent values (`ppo.Hyperparams` in the TrainState).

    Defaults follow Craftax_Baselines `ppo.py` (craftax-notes section 12) except the sizes, which are small so
    that CPU runs stay cheap. Presets: `TrainerConfig.craftax_baseline()`; the EnvGen paper's agent is
    configs/base/crafter_pixels.yaml (its one statement).
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
    target_kl: float = bounded(0.0, minimum=0)
    """KL limit per update: once a minibatch's approximate KL to the rollout's policy exceeds 1.5 x target_kl, the
    update's remaining minibatch steps are skipped (as Stable-Baselines3's target_kl); 0 = no limit"""
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
    def __post_init__(self):
        problems = declared_problems(self, "ppo.")
        if self.num_minibatches >= 1 and self.batch_size % self.num_minibatches:
            problems.append(f"ppo.num_minibatches: num_envs x num_steps = {self.batch_size} is not divisible by "
                            f"num_minibatches = {self.num_minibatches}")
        if self.anneal_lr and self.total_updates <= 0:
            problems.append("ppo.total_updates: anneal_lr needs total_updates > 0")
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

HYPERPARAMS = ("lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef")


@dataclasses.dataclass(frozen=True)
class ExecutionConfig(Declared):
    """How the agents run (changes what is computed where, not what is learnt): the run configuration's
    `execution:` section. The seeds are the trainer config's (a run's top-level `seeds` and `seed`)."""

    seed_axis: Literal["vmap", "map"] = "vmap"
    """how the agents run side by side in training, evaluation and init: 'vmap' (batched together) or 'map' (one
    after another in the same program). Vmapped over their parameters, a conv network's convolutions become grouped
    convolutions (docs/devices.md); 'map' keeps them dense at the price of a batch per agent, `conv_as_matmul`
    makes them batched matrix products"""
    conv_as_matmul: bool = False
    """each 3x3 convolution computed as its patches times the kernel (`layers.Conv`; the same parameters and
    training): vmapped over the seeds, a batched matrix product instead of a grouped convolution (the older
    `seed_axis: dense` is 'vmap' with this)"""
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    """dtype of the network's activations and matrix products: 'bfloat16' is mixed precision (parameters, optimizer
    state, normalisation statistics, logits, values and the losses stay float32); off until its learning is
    measured on a GPU (docs/devices.md)"""
    resets_per_step: int = bounded(0, minimum=0)
    """fresh worlds generated per vector-env step (VecEnv; 0: its default, max(1, num_envs // 256))"""
    shard: Literal["auto", "agents", "envs"] = "auto"
    """how the run spreads over several devices (`trainer.sharding`, docs/devices.md): 'agents' (whole agents per
    device; their number a multiple of the device count), 'envs' (each agent's env slots split over the devices,
    parameters replicated) or 'auto' (agents when they divide evenly, else envs)"""

    PATH, WHAT = "execution.", "execution settings"


@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    """A trainer's static configuration: the algorithm (`ppo`), the network, the execution and the agents' seeds
    (`num_agents` agents from `seed`), built from its sections."""

    ppo: PPOAlgorithm = PPOAlgorithm()
    network: NetworkConfig = NetworkConfig()
    execution: ExecutionConfig = ExecutionConfig()
    num_agents: int = 1  # independent agents in one compiled program (a run's `num_agents`, not its `seeds`)
    seed: int = 0  # the first; the agents' seeds are seed, ..., seed+num_agents-1 unless given to init()

    def __post_init__(self):
        problems = _joint_problems(self.network.recurrent, self.ppo.num_envs, self.ppo.num_minibatches,
                                   self.num_agents)
        if problems:
            raise ConfigError(problems, what="PPO settings")

    @property
    def agent_seeds(self) -> tuple[int, ...]:
        """Each agent's seed when `Trainer.init` is given none."""
        return tuple(range(self.seed, self.seed + self.num_agents))

    @property
    def steps_per_update(self) -> int:
        """env steps per update per seed (one rollout batch)"""
        return self.ppo.steps_per_update

    @classmethod
    def craftax_baseline(cls) -> "TrainerConfig":
        """Craftax_Baselines ppo.py (1024 envs x 64 steps, 4 epochs x 8 minibatches, lr 2e-4 annealed over 15,258
        updates (1e9 steps), gamma .99, lambda .8, clip .2, ent .01, vf .5, grad norm 1.0, 3 x 512 tanh)."""
        return cls(PPOAlgorithm(num_envs=1024, num_steps=64, update_epochs=4, num_minibatches=8, gamma=0.99,
                                gae_lambda=0.8, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=1.0, lr=2e-4,
                                anneal_lr=True, total_updates=15258),
                   NetworkConfig(mlp=MLPNet(width=512, depth=3, activation="tanh")))


def _joint_problems(recurrent: str, envs, minibatches, num_agents) -> list[str]:
    """The checks across sections."""
    problems = []
    if recurrent != "none" and isinstance(envs, int) and isinstance(minibatches, int) and minibatches >= 1 and \
            envs % minibatches:
        problems.append(f"ppo.num_minibatches: a recurrent agent learns on whole env trajectories, so "
                        f"num_minibatches = {minibatches} must divide num_envs = {envs}")
    if not isinstance(num_agents, int) or num_agents < 1:
        problems.append(f"num_agents: {num_agents!r} must be an integer >= 1")
    return problems

