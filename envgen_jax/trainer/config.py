"""PPOConfig: everything static about a trainer (frozen, hashable: part of the compiled program), in the three
sections a run configuration names: `ppo` (PPOAlgorithm: the algorithm's sizes, switches and hyperparameters),
`network` (encoders.NetworkConfig: the encoder kind, each kind's settings, the memory) and `execution`
(ExecutionConfig: how the agents run: their seeds, the seed axis, the env resets).

    PPOConfig(ppo=PPOAlgorithm(num_envs=8), network=NetworkConfig(kind="conv"), execution=ExecutionConfig(num_seeds=2))
    PPOConfig(num_envs=8, network="conv", width=256, num_seeds=2)    # the same from the flat keys of older versions

The numbers in `HYPERPARAMS` are also carried per agent as traced values (`ppo.Hyperparams`), so a sweep over them
runs vmapped in one program; the config's values are their defaults.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, Mapping

from envgen_jax.config_io import bounded, declared_problems
from envgen_jax.schema import ConfigError, Declared
from envgen_jax.trainer.encoders import ENCODERS, NetworkConfig


@dataclasses.dataclass(frozen=True)
class PPOAlgorithm:
    """PPO sizes, switches and hyperparameters (the run configuration's `ppo:` section). The hyperparameters named
    in HYPERPARAMS are only the defaults of the traced per-agent values (`ppo.Hyperparams` in the TrainState).

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
    `execution:` section. A run's seeds are its top-level `seeds` and `seed`."""

    num_seeds: int = bounded(1, minimum=1)
    """independent agents in one compiled run"""
    seed: int = 0
    """first seed; seeds are seed, seed+1, ..., seed+num_seeds-1 unless given to init()"""
    seed_axis: Literal["vmap", "map", "dense"] = "vmap"
    """how the agents run side by side in training, evaluation and init: 'vmap' (batched together), 'map' (one
    after another in the same program) or 'dense' (batched together, each 3x3 convolution computed as its patches
    times the kernel). Vmapped over their parameters, a conv network's convolutions become grouped convolutions
    (docs/devices.md); 'map' keeps them dense at the price of a batch per agent; 'dense' makes them batched matrix
    products (the same parameters and training; for a network without convolutions it is 'vmap')"""
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

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.num_seeds))


# The flat keys of PPOConfig before it had sections (run configurations, saved runs and studies still hold them):
# each names its place today. None: the chosen kind's own setting (`width` was each MLP's width for mlp and map,
# the bottleneck for conv); a kind without it ignored it (conv had no depth), and so does the move.
LEGACY_KEYS: dict[str, tuple[str, ...] | None] = {
    "network": ("network", "kind"), "recurrent": ("network", "recurrent"),
    "memory_size": ("network", "memory_size"), "width": None, "depth": None, "activation": None, "layer_norm": None,
    "map_channels": ("network", "map", "channels"), "map_res_blocks": ("network", "map", "res_blocks"),
    "conv_channels": ("network", "conv", "channels"), "conv_norm": ("network", "conv", "norm"),
    "head_width": ("network", "conv", "head_width"),
    **{f.name: ("execution", f.name) for f in dataclasses.fields(ExecutionConfig)},
}


def legacy_path(key: str, kind: str) -> tuple[str, ...] | None:
    """Where the flat key `key` of an older PPOConfig lives today, the network's kind being `kind` (None: nowhere;
    that kind never read it)."""
    path = LEGACY_KEYS[key]
    if path is None:
        settings = ENCODERS.get(kind)
        return ("network", kind, key) if settings and key in {f.name for f in dataclasses.fields(settings)} else None
    return path


def _replaced(obj, path: tuple[str, ...], value):
    """`obj` (nested frozen dataclasses) with the field at `path` set to `value`."""
    head, *rest = path
    return dataclasses.replace(obj, **{head: _replaced(getattr(obj, head), tuple(rest), value) if rest else value})


@dataclasses.dataclass(frozen=True, init=False)
class PPOConfig:
    """A trainer's static configuration: the algorithm (`ppo`), the network and the execution. Built from the
    sections, or from the flat keys of older versions (`PPOConfig(num_envs=8, width=32, num_seeds=2)`, also
    `dataclasses.replace(cfg, num_seeds=2)`): each flat key goes to its section (LEGACY_KEYS) over the sections
    given."""

    ppo: PPOAlgorithm
    network: NetworkConfig
    execution: ExecutionConfig

    def __init__(self, ppo: PPOAlgorithm | None = None, network: NetworkConfig | None = None,
                 execution: ExecutionConfig | None = None, **flat):
        if isinstance(network, str):  # the flat key of older versions: the kind
            network, flat = None, {**flat, "network": network}
        sections = {"ppo": ppo or PPOAlgorithm(), "network": network or NetworkConfig(),
                    "execution": execution or ExecutionConfig()}
        unknown = sorted(set(flat) - set(LEGACY_KEYS) - _ALGORITHM)
        if unknown:
            raise TypeError(f"PPOConfig got unexpected settings {', '.join(unknown)}")
        kind = flat.get("network", sections["network"].kind)
        problems: list[str] = []  # every section's, reported together

        def change(section, update):
            try:
                sections[section] = update(sections[section])
            except ConfigError as e:
                problems.extend(p for p in e.problems if p not in problems)

        algorithm = {k: v for k, v in flat.items() if k in _ALGORITHM}  # at once: their checks involve several
        change("ppo", lambda section: dataclasses.replace(section, **algorithm))
        for key, value in flat.items():
            path = None if key in _ALGORITHM else legacy_path(key, kind)
            if path is not None:
                change(path[0], lambda section: _replaced(section, path[1:], value))
        for name, value in sections.items():
            object.__setattr__(self, name, value)
        # the values asked for, also where another of the algorithm's settings was refused
        envs, minibatches = (algorithm.get(k, getattr(self.ppo, k)) for k in ("num_envs", "num_minibatches"))
        if self.network.recurrent != "none" and isinstance(envs, int) and isinstance(minibatches, int) and \
                minibatches >= 1 and envs % minibatches:
            problems.append(f"ppo.num_minibatches: a recurrent agent learns on whole env trajectories, so "
                            f"num_minibatches = {minibatches} must divide num_envs = {envs}")
        if problems:
            raise ConfigError(problems, what="PPO settings")

    @classmethod
    def upgrade_mapping(cls, data, problems: list[str]) -> dict:
        """A mapping of the sections (`config_io.from_mapping` reads it), with an older version's flat keys moved
        into them."""
        flat = {k: v for k, v in data.items() if k not in _SECTIONS}
        out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items() if k in _SECTIONS}
        if flat:
            out.setdefault("ppo", {})
            if isinstance(out["ppo"], Mapping):
                out["ppo"] = {**out["ppo"], **{k: v for k, v in flat.items() if k not in LEGACY_KEYS}}
            kind = flat.get("network", "mlp")
            for key in (k for k in flat if k in LEGACY_KEYS):
                path = legacy_path(key, kind if isinstance(kind, str) else "mlp")
                if path is not None:
                    node = out
                    for part in path[:-1]:
                        node = node.setdefault(part, {})
                    node[path[-1]] = flat[key]
        return out

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.execution.seeds

    @property
    def steps_per_update(self) -> int:
        """env steps per update per seed (one rollout batch)"""
        return self.ppo.steps_per_update

    @classmethod
    def craftax_baseline(cls, **overrides) -> "PPOConfig":
        """Craftax_Baselines ppo.py (1024 envs x 64 steps, 4 epochs x 8 minibatches, lr 2e-4 annealed, gamma .99,
        lambda .8, clip .2, ent .01, vf .5, grad norm 1.0, 3 x 512 tanh). Set total_updates for the anneal
        (1e9 steps = 15,258 updates). `overrides`: flat keys."""
        base = dict(num_envs=1024, num_steps=64, update_epochs=4, num_minibatches=8, gamma=0.99, gae_lambda=0.8,
                    clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=1.0, lr=2e-4, anneal_lr=True,
                    total_updates=15258, width=512, depth=3, activation="tanh")
        return cls(**{**base, **overrides})

    @classmethod
    def envgen_paper(cls, **overrides) -> "PPOConfig":
        """The EnvGen paper's agent (AD repo configs/ppo.yaml): 8 envs x 512 steps, 3 epochs x 8 minibatches,
        gamma .95, lambda .65, clip .2, ent .01, vf .5, grad norm .5, constant lr 3e-4, per-rollout advantage
        normalisation. Its network and value normalisation on pixels, with every other setting:
        configs/base/crafter_pixels.yaml (value_norm, network.kind conv, channels (64, 128, 128), norm, width 256,
        head_width 1024). `overrides`: flat keys."""
        base = dict(num_envs=8, num_steps=512, update_epochs=3, num_minibatches=8, gamma=0.95, gae_lambda=0.65,
                    clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5, lr=3e-4, anneal_lr=False,
                    adv_norm="batch", clip_value=False)
        return cls(**{**base, **overrides})


_ALGORITHM = frozenset(f.name for f in dataclasses.fields(PPOAlgorithm))
_SECTIONS = ("ppo", "network", "execution")
