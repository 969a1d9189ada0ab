"""PPOConfig: the PPO settings and sizes of a trainer (static, frozen, hashable: part of the compiled program).

The numbers in `HYPERPARAMS` are also carried per agent as traced values (`ppo.Hyperparams`), so a sweep over them
runs vmapped in one program; the config's values are their defaults.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from envgen_jax.config_io import bounded, declared_problems
from envgen_jax.schema import ConfigError


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO sizes, switches and hyperparameters (static: part of the compiled program). The hyperparameters named in
    HYPERPARAMS are only the defaults of the traced per-agent values (`ppo.Hyperparams` in the TrainState).

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
    seed_axis: Literal["vmap", "map", "dense"] = "vmap"
    """how training and evaluation run the agents: 'vmap' (batched together), 'map' (one after another in the same
    program) or 'dense' (batched together, each 3x3 convolution computed as its patches times the kernel). Vmapped
    over their parameters, a conv network's convolutions become grouped convolutions, which XLA runs far slower than
    dense ones (docs/devices.md); 'map' keeps them dense at the price of a batch per agent; 'dense' makes them
    batched matrix products (the same parameters; for networks without convolutions it is 'vmap')"""
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    """dtype of the network's activations and matrix products: 'bfloat16' is mixed precision (parameters, optimizer
    state, normalisation statistics, logits, values and the losses stay float32); off until measured
    (docs/devices.md)"""
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
        normalisation. Its network and value normalisation on pixels, with every other setting:
        configs/base/crafter_pixels.yaml (value_norm, network='conv', conv_channels=(64, 128, 128), conv_norm,
        head_width=1024)."""
        base = dict(num_envs=8, num_steps=512, update_epochs=3, num_minibatches=8, gamma=0.95, gae_lambda=0.65,
                    clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5, lr=3e-4, anneal_lr=False,
                    adv_norm="batch", clip_value=False)
        base.update(overrides)
        return cls(**base)


HYPERPARAMS = ("lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef")
