"""The network's settings: one frozen settings class per encoder kind (fields, checks, and `modules`, which builds
the kind's encoder and torso, flax modules of trainer/networks.py), and `NetworkConfig`, which picks the kind.

    network = NetworkConfig(kind="conv", conv=ConvNet(channels=(64, 128, 128), norm=True, width=256))
    network.encoder            # the chosen kind's settings (ENCODERS[kind] is its class)
    make_network(env, network, execution)   # the ActorCritic

An encoder's settings class declares what it reads (`OBSERVATIONS`: the run's `observation` values it accepts) and
checks the env's observation (`input_problems`).

A new encoder: its flax module (networks.py), its settings class here, and one line, NetworkConfig's field of that
name (docs/agent.md).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

import jax.numpy as jnp

from envgen_jax.schema import ConfigError, Declared, bounded
from envgen_jax.trainer.networks import (ActorCritic, ConvEncoder, FlatEncoder, GridEncoder, MapEncoder,
                                         SeparateTorsos, SharedTorso, TrunkEncoder)

ACTIVATION = Literal["tanh", "relu", "gelu"]


class ChannelsChecked:
    """The check of a kind with `channels` (a mixin of settings classes: fields stay in each kind's class)."""

    PATH: ClassVar[str]
    channels: tuple[int, ...]

    def more_problems(self) -> list[str]:
        if not self.channels or min(self.channels) < 1:
            return [f"{self.PATH}channels: {list(self.channels)} must be one or more channel counts >= 1"]
        return []


class ReadsMap(ChannelsChecked):
    """A kind that convolves the local map at the start of a symbolic observation (the env's `map_shape`)."""

    OBSERVATIONS: ClassVar[tuple[str, ...]] = ("symbolic",)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        if map_shape is None:
            return [f"network.kind: {self.PATH.split('.')[1]!r} needs an observation that starts with a local map; "
                    "this env with these settings has none (use 'mlp', 'trunk' or 'conv')"]
        return []


@dataclasses.dataclass(frozen=True)
class MLPNet(Declared):
    """'mlp' (symbolic observations): separate actor and critic MLPs over the flat observation (Craftax_Baselines:
    3 x 512 tanh, about 2.4M parameters on Craftax-Classic's 1345-d vector)."""

    width: int = bounded(512, minimum=1)
    """hidden width of each MLP (Craftax 512), and of the embedding a recurrent cell reads"""
    depth: int = bounded(3, minimum=1)
    """hidden layers per MLP (Craftax 3)"""
    activation: ACTIVATION = "tanh"
    """hidden activation (Craftax tanh)"""
    layer_norm: bool = False
    """LayerNorm before every hidden activation"""

    PATH, WHAT = "network.mlp.", "network settings"
    OBSERVATIONS: ClassVar[tuple[str, ...]] = ("symbolic",)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        return []

    def modules(self, map_shape, memory: bool, dtype, conv_as_matmul: bool):
        """(encoder, torso); `memory`: a recurrent cell reads the features (here: one Dense(width) embedding)."""
        return (FlatEncoder(self.width if memory else 0, self.activation, self.layer_norm, dtype),
                SeparateTorsos(self.width, self.depth, self.activation, self.layer_norm, dtype))


@dataclasses.dataclass(frozen=True)
class MapNet(ReadsMap, Declared):
    """'map' (symbolic observations that start with a local map, declared by the env as `map_shape`): 3x3 convs
    over the map, flattened and joined with the rest of the vector, one shared Dense(width) embedding, then the
    actor and critic MLPs of 'mlp' (width, depth, activation and layer_norm as there; the convs use the activation
    and layer_norm too)."""

    width: int = bounded(512, minimum=1)
    """the embedding's and each MLP's hidden width"""
    depth: int = bounded(3, minimum=1)
    """hidden layers per MLP"""
    activation: ACTIVATION = "tanh"
    """the activation of the convs, the embedding and the MLPs"""
    layer_norm: bool = False
    """LayerNorm before every hidden activation"""
    channels: tuple[int, ...] = (32, 32)
    """channels of the 3x3 convs over the local map"""
    res_blocks: int = bounded(0, minimum=0)
    """pre-activation residual blocks (LayerNorm, activation, 3x3 conv, twice) after `channels`, at the last
    channel count"""

    PATH, WHAT = "network.map.", "network settings"
    def modules(self, map_shape, memory: bool, dtype, conv_as_matmul: bool):
        """(encoder, torso); its convolutions are matrix products whatever `conv_as_matmul`."""
        return (MapEncoder(map_shape, tuple(self.channels), self.res_blocks, self.width, self.activation,
                           self.layer_norm, dtype),
                SeparateTorsos(self.width, self.depth, self.activation, self.layer_norm, dtype))


@dataclasses.dataclass(frozen=True)
class ConvNet(ChannelsChecked, Declared):
    """'conv' (pixel observations [H, W, C]): an IMPALA-style ResNet shared by both heads (per stack: 3x3 conv,
    max-pool 3/2, `res_blocks` residual blocks), then Dense(width), then the heads. The paper's agent: channels
    (64, 128, 128), norm, width 256, head_width 1024 (Moon et al.'s AD repository, after VPT's ImpalaCNN)."""

    channels: tuple[int, ...] = (16, 32, 32)
    """IMPALA channels, one stack each (the paper's agent: 64, 128, 128)"""
    res_blocks: int = bounded(2, minimum=0)
    """residual blocks per stack (IMPALA 2)"""
    norm: bool = False
    """the paper's normalised variant: GroupNorm after each pool and in each residual block, LayerNorm before the
    bottleneck"""
    width: int = bounded(512, minimum=1)
    """the bottleneck: Dense(width) after the ResNet (the paper's agent: 256)"""
    head_width: int = bounded(0, minimum=0)
    """a LayerNorm -> Dense(head_width) -> ReLU layer between the bottleneck and the heads (the paper's agent:
    1024; 0: none)"""

    PATH, WHAT = "network.conv.", "network settings"
    OBSERVATIONS: ClassVar[tuple[str, ...]] = ("pixels",)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        if len(obs_shape) != 3:
            return [f"network.kind: 'conv' needs [H, W, C] (pixel) observations, got obs_shape={tuple(obs_shape)}"]
        return []

    def modules(self, map_shape, memory: bool, dtype, conv_as_matmul: bool):
        return (ConvEncoder(tuple(self.channels), self.res_blocks, self.norm, self.width, self.head_width,
                            conv_as_matmul, dtype), SharedTorso())


@dataclasses.dataclass(frozen=True)
class TrunkNet(Declared):
    """'trunk' (symbolic observations): the paper agent's trunk and shared heads on the flat vector, without an
    encoder: LayerNorm -> Dense(width) -> ReLU -> LayerNorm -> Dense(head_width) -> ReLU -> the policy and value
    heads (the layers after the conv agent's ResNet; issue 56's ladder)."""

    width: int = bounded(256, minimum=1)
    """the bottleneck (the paper's agent: 256)"""
    head_width: int = bounded(1024, minimum=0)
    """the shared layer before the heads (the paper's agent: 1024; 0: none)"""

    PATH, WHAT = "network.trunk.", "network settings"
    OBSERVATIONS: ClassVar[tuple[str, ...]] = ("symbolic",)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        return []

    def modules(self, map_shape, memory: bool, dtype, conv_as_matmul: bool):
        return TrunkEncoder(self.width, self.head_width, dtype), SharedTorso()


@dataclasses.dataclass(frozen=True)
class GridNet(ReadsMap, Declared):
    """'grid' (symbolic observations that start with a local map, `map_shape`): the paper agent's encoder on the
    symbolic grid. The map [H, W, C] as a C-channel image through IMPALA stacks with GroupNorm (ConvNet with
    norm; a 'SAME' max-pool 3/2 per stack keeps at least one cell: 7 x 9 -> 4 x 5 -> 2 x 3 -> 1 x 2), flattened
    and joined with the rest of the vector (inventory, intrinsics, direction, light), then the paper's trunk and
    shared heads ('trunk'). 716,606 parameters on Craftax-Classic at the defaults."""

    width: int = bounded(256, minimum=1)
    """the bottleneck (the paper's agent: 256)"""
    head_width: int = bounded(1024, minimum=0)
    """the shared layer before the heads (the paper's agent: 1024; 0: none)"""
    channels: tuple[int, ...] = (32, 64, 64)
    """IMPALA channels, one stack each (the pixel agent's 64, 128, 128 halved: a CPU trains it)"""
    res_blocks: int = bounded(2, minimum=0)
    """residual blocks per stack (IMPALA 2)"""

    PATH, WHAT = "network.grid.", "network settings"
    def modules(self, map_shape, memory: bool, dtype, conv_as_matmul: bool):
        return (GridEncoder(map_shape, tuple(self.channels), self.res_blocks, self.width, self.head_width, 0,
                            conv_as_matmul, dtype), SharedTorso())


@dataclasses.dataclass(frozen=True)
class DrawnNet(ReadsMap, Declared):
    """'drawn' (symbolic observations with a local map): the map drawn as a small RGB image inside the network, each
    cell a `cell` x `cell` patch of a fixed colour per block and mob type (the cell's one-hot channels times a fixed
    [C, 3] table, `layers.cell_colours`: a cell with a mob on a block gets their sum), 49 x 63 x 3 for
    Craftax-Classic at `cell` 7; then the pixel agent's network unchanged in structure (IMPALA stacks with
    GroupNorm, LayerNorm -> Dense(width) -> LayerNorm -> Dense(head_width), shared heads) with the rest of the
    vector joined before the trunk, as 'grid'. The env is unchanged. 848,798 parameters on Craftax-Classic at
    the defaults."""

    width: int = bounded(256, minimum=1)
    """the bottleneck (the paper's agent: 256)"""
    head_width: int = bounded(1024, minimum=0)
    """the shared layer before the heads (the paper's agent: 1024; 0: none)"""
    channels: tuple[int, ...] = (16, 32, 32)
    """IMPALA channels (the pixel agent's 64, 128, 128 at a quarter: a CPU trains it)"""
    res_blocks: int = bounded(2, minimum=0)
    """residual blocks per stack (IMPALA 2)"""
    cell: int = bounded(7, minimum=1)
    """pixels per cell side (Crafter's 63 x 63 view draws a 9 x 9 area at 7)"""

    PATH, WHAT = "network.drawn.", "network settings"
    def modules(self, map_shape, memory: bool, dtype, conv_as_matmul: bool):
        return (GridEncoder(map_shape, tuple(self.channels), self.res_blocks, self.width, self.head_width, self.cell,
                            conv_as_matmul, dtype), SharedTorso())


@dataclasses.dataclass(frozen=True)
class NetworkConfig(Declared):
    """The actor-critic: which encoder (`kind`), each kind's settings in its own section (only the chosen kind's
    are read), and an optional memory over the encoder's features. The sections are the registry of encoder kinds:
    a new kind is one more field here, named for the kind and holding its settings (`ENCODERS` and `kind`'s choices
    are read from these fields)."""

    kind: Literal[KINDS] = "mlp"  # one of ENCODERS' names (a Literal of them, so that settings checks name them)
    """'mlp', 'map', 'trunk', 'grid' or 'drawn' (symbolic observations) or 'conv' (pixel observations); its
    settings: the section of that name"""
    mlp: MLPNet = MLPNet()
    map: MapNet = MapNet()
    conv: ConvNet = ConvNet()
    trunk: TrunkNet = TrunkNet()
    grid: GridNet = GridNet()
    drawn: DrawnNet = DrawnNet()
    recurrent: Literal["none", "gru", "lstm"] = "none"
    """memory over the encoder's features: 'gru' or 'lstm' (each env slot's state is carried, reset at episode
    starts; PPO learns on whole env trajectories, ppo.num_minibatches must divide ppo.num_envs), or 'none'"""
    memory_size: int = bounded(256, minimum=1)
    """recurrent state size"""

    PATH, WHAT = "network.", "network settings"

    @property
    def encoder(self):
        """The chosen kind's settings."""
        return getattr(self, self.kind)


# kind -> its settings class: NetworkConfig's fields whose settings build an encoder (`modules`)
ENCODERS: dict[str, type] = {f.name: type(f.default) for f in dataclasses.fields(NetworkConfig)
                             if hasattr(f.default, "modules")}
KINDS = tuple(ENCODERS)  # NetworkConfig.kind's choices (its annotation is read after this module has loaded)


def make_network(env, network: NetworkConfig, compute_dtype: str = "float32",
                 conv_as_matmul: bool = False) -> ActorCritic:
    """The actor-critic of `network` for `env`'s observations (ConfigError where its encoder cannot read them)."""
    map_shape = getattr(env, "map_shape", None)
    map_shape = None if map_shape is None else tuple(map_shape)
    problems = network.encoder.input_problems(tuple(env.obs_shape), map_shape)
    if problems:
        raise ConfigError([f"{p} ({type(env).__name__})" for p in problems], what="network settings")
    return actor_critic(network.encoder, tuple(env.obs_shape), int(env.num_actions), map_shape, network.recurrent,
                        network.memory_size, compute_dtype, conv_as_matmul)


def actor_critic(settings, obs_shape: tuple[int, ...], num_actions: int, map_shape: tuple[int, ...] | None = None,
                 recurrent: str = "none", memory_size: int = 256, compute_dtype: str = "float32",
                 conv_as_matmul: bool = False) -> ActorCritic:
    """The ActorCritic of one encoder kind's `settings`. `compute_dtype`: of activations and matrix products
    ('bfloat16': mixed precision); `conv_as_matmul`: 3x3 convolutions as patches x kernel (`layers.Conv`)."""
    if compute_dtype not in ("float32", "bfloat16"):
        raise ValueError(f"compute_dtype must be float32 or bfloat16, not {compute_dtype!r}")
    dtype = None if compute_dtype == "float32" else jnp.dtype(compute_dtype)  # None: each layer in its input's
    encoder, torso = settings.modules(map_shape, recurrent != "none", dtype, conv_as_matmul)
    return ActorCritic(encoder, torso, num_actions=num_actions, obs_shape=tuple(obs_shape), recurrent=recurrent,
                       memory_size=memory_size, dtype=dtype)
