"""The network's settings: one frozen settings class per encoder kind, each building its layers from its own fields.

    network = NetworkConfig(kind="conv", conv=ConvNet(channels=(64, 128, 128), norm=True, width=256))
    network.encoder            # the chosen kind's settings (ENCODERS[kind] is its class)

An encoder's settings class declares what it reads (`OBSERVATIONS`: the run's `observation` values it accepts),
checks the env's observation (`input_problems`), and gives `networks.ActorCritic` its layers (`layers`, keyed by
their parameter names), the features of a batch of observations (`features`) and the actor's and critic's inputs
(`torsos`). The parameter names are those of the first release's single ActorCritic, so older checkpoints restore.

A new encoder: its settings class here (with its flax module in networks.py), an entry in ENCODERS and a field of
NetworkConfig named by its kind (docs/agent.md).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from envgen_jax.schema import Declared, bounded
from envgen_jax.trainer.networks import ACTIVATIONS, MLP, ImpalaEncoder, MapEncoder, cell_colours, dense, draw_cells


@dataclasses.dataclass(frozen=True)
class MLPNet(Declared):
    """'mlp' (symbolic observations): separate actor and critic MLPs over the flat observation (Craftax_Baselines:
    3 x 512 tanh, about 2.4M parameters on Craftax-Classic's 1345-d vector)."""

    width: int = bounded(512, minimum=1)
    """hidden width of each MLP (Craftax 512), and of the embedding a recurrent cell reads"""
    depth: int = bounded(3, minimum=1)
    """hidden layers per MLP (Craftax 3)"""
    activation: Literal["tanh", "relu", "gelu"] = "tanh"
    """hidden activation (Craftax tanh)"""
    layer_norm: bool = False
    """LayerNorm before every hidden activation"""

    PATH, WHAT = "network.mlp.", "network settings"
    OBSERVATIONS: ClassVar[tuple[str, ...]] = ("symbolic",)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        return []

    def embeds(self, memory: bool) -> bool:
        """Whether the features are one shared Dense(width) embedding (always for 'map'; 'mlp' only before a
        recurrent cell, whose input size it sets)."""
        return memory

    def layers(self, obs_shape, map_shape, memory: bool, dtype=None, conv_as_matmul=False) -> dict[str, nn.Module]:
        """The layers by parameter name; `dtype`: their computation dtype (None: float32); `conv_as_matmul`: 3x3
        convolutions as patches x kernel (`networks.Conv`)."""
        out = {}
        if self.embeds(memory):
            out["embed"] = dense(self.width, np.sqrt(2), dtype=dtype)
            if self.layer_norm:
                out["embed_norm"] = nn.LayerNorm(dtype=dtype)
        out["actor_torso"] = MLP(self.width, self.depth, self.activation, self.layer_norm, dtype)
        out["critic_torso"] = MLP(self.width, self.depth, self.activation, self.layer_norm, dtype)
        return out

    def features(self, net, x, memory: bool):
        x = x.reshape((x.shape[0], -1))
        if not self.embeds(memory):
            return x
        x = net.embed(x)
        return ACTIVATIONS[self.activation](net.embed_norm(x) if self.layer_norm else x)

    def torsos(self, net, h):
        return net.actor_torso(h), net.critic_torso(h)


@dataclasses.dataclass(frozen=True)
class MapNet(MLPNet):
    """'map' (symbolic observations that start with a local map, declared by the env as `map_shape`): 3x3 convs
    over the map, flattened and joined with the rest of the vector, one shared Dense(width) embedding, then the
    actor and critic MLPs of 'mlp' (width, depth, activation and layer_norm as there; the convs use the activation
    and layer_norm too)."""

    channels: tuple[int, ...] = (32, 32)
    """channels of the 3x3 convs over the local map"""
    res_blocks: int = bounded(0, minimum=0)
    """pre-activation residual blocks (LayerNorm, activation, 3x3 conv, twice) after `channels`, at the last
    channel count"""

    PATH = "network.map."

    def more_problems(self) -> list[str]:
        return channel_problems(self.PATH + "channels", self.channels)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        if map_shape is None:
            return ["network.kind: 'map' needs an observation that starts with a local map; this env with these "
                    "settings has none (use 'mlp' or 'conv')"]
        return []

    def embeds(self, memory: bool) -> bool:
        return True

    def layers(self, obs_shape, map_shape, memory: bool, dtype=None, conv_as_matmul=False) -> dict[str, nn.Module]:
        encoder = MapEncoder(tuple(map_shape), tuple(self.channels), self.activation, self.layer_norm, self.res_blocks,
                             dtype)  # its convolutions are matrix products already
        return {"encoder": encoder, **super().layers(obs_shape, map_shape, memory, dtype)}

    def features(self, net, x, memory: bool):
        return super().features(net, net.encoder(x.reshape((x.shape[0], -1))), memory)


@dataclasses.dataclass(frozen=True)
class ConvNet(Declared):
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

    def more_problems(self) -> list[str]:
        return channel_problems(self.PATH + "channels", self.channels)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        if len(obs_shape) != 3:
            return [f"network.kind: 'conv' needs [H, W, C] (pixel) observations, got obs_shape={tuple(obs_shape)}"]
        return []

    def layers(self, obs_shape, map_shape, memory: bool, dtype=None, conv_as_matmul=False) -> dict[str, nn.Module]:
        return {"ImpalaEncoder_0": ImpalaEncoder(tuple(self.channels), self.res_blocks, self.norm, conv_as_matmul,
                                                 dtype),
                **trunk_layers(self.width, self.head_width, self.norm, dtype)}

    def features(self, net, x, memory: bool):
        return trunk(net, net.ImpalaEncoder_0(x), self.norm, self.head_width)

    def torsos(self, net, h):
        return h, h  # one shared encoder: the heads read its features directly


def trunk_layers(width: int, head_width: int, norm: bool, dtype) -> dict[str, nn.Module]:
    """The layers after an encoder, named as the conv agent's: [LayerNorm ->] Dense(width) -> ReLU [-> LayerNorm ->
    Dense(head_width) -> ReLU]."""
    out = {"Dense_0": dense(width, np.sqrt(2), dtype=dtype)}
    if norm:
        out["bottleneck_norm"] = nn.LayerNorm(dtype=dtype)
    if head_width:
        out["head_norm"] = nn.LayerNorm(dtype=dtype)
        out["head_dense"] = dense(head_width, np.sqrt(2), dtype=dtype)
    return out


def trunk(net, x, norm: bool, head_width: int):
    x = nn.relu(net.Dense_0(net.bottleneck_norm(x) if norm else x))
    return nn.relu(net.head_dense(net.head_norm(x))) if head_width else x


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

    def layers(self, obs_shape, map_shape, memory: bool, dtype=None, conv_as_matmul=False) -> dict[str, nn.Module]:
        return trunk_layers(self.width, self.head_width, True, dtype)

    def features(self, net, x, memory: bool):
        return trunk(net, x.reshape((x.shape[0], -1)), True, self.head_width)

    def torsos(self, net, h):
        return h, h


@dataclasses.dataclass(frozen=True)
class GridNet(TrunkNet):
    """'grid' (symbolic observations that start with a local map, `map_shape`): the paper agent's encoder on the
    symbolic grid. The map [H, W, C] as a C-channel image through IMPALA stacks with GroupNorm (ConvNet with
    norm; a 'SAME' max-pool 3/2 per stack keeps at least one cell: 7 x 9 -> 4 x 5 -> 2 x 3 -> 1 x 2), flattened
    and joined with the rest of the vector (inventory, intrinsics, direction, light), then the paper's trunk and
    shared heads ('trunk'). 716,606 parameters on Craftax-Classic at the defaults."""

    channels: tuple[int, ...] = (32, 64, 64)
    """IMPALA channels, one stack each (the pixel agent's 64, 128, 128 halved: a CPU trains it)"""
    res_blocks: int = bounded(2, minimum=0)
    """residual blocks per stack (IMPALA 2)"""

    PATH = "network.grid."

    def more_problems(self) -> list[str]:
        return channel_problems(self.PATH + "channels", self.channels)

    def input_problems(self, obs_shape, map_shape) -> list[str]:
        if map_shape is None:
            return [f"network.kind: {self.PATH.split('.')[1]!r} needs an observation that starts with a local map; "
                    "this env with these settings has none"]
        return []

    def layers(self, obs_shape, map_shape, memory: bool, dtype=None, conv_as_matmul=False) -> dict[str, nn.Module]:
        return {"ImpalaEncoder_0": ImpalaEncoder(tuple(self.channels), self.res_blocks, True, conv_as_matmul, dtype),
                **super().layers(obs_shape, map_shape, memory, dtype)}

    def image(self, grid):
        """[B, H, W, C] map -> the image the ResNet reads."""
        return grid

    def features(self, net, x, memory: bool):
        cells = int(np.prod(net.map_shape))
        grid = x[:, :cells].reshape((-1,) + tuple(net.map_shape))
        h = jnp.concatenate([net.ImpalaEncoder_0(self.image(grid)), x[:, cells:]], axis=-1)
        return trunk(net, h, True, self.head_width)


@dataclasses.dataclass(frozen=True)
class DrawnNet(GridNet):
    """'drawn' (symbolic observations with a local map): the map drawn as a small RGB image inside the network, each
    cell a `cell` x `cell` patch of a fixed colour per block and mob type (the cell's one-hot channels times a fixed
    [C, 3] table, `networks.cell_colours`: a cell with a mob on a block gets their sum), 49 x 63 x 3 for
    Craftax-Classic at `cell` 7; then the pixel agent's network unchanged in structure (IMPALA stacks with
    GroupNorm, LayerNorm -> Dense(width) -> LayerNorm -> Dense(head_width), shared heads) with the rest of the
    vector joined before the trunk, as 'grid'. The env is unchanged. 848,798 parameters on Craftax-Classic at
    the defaults."""

    channels: tuple[int, ...] = (16, 32, 32)
    """IMPALA channels (the pixel agent's 64, 128, 128 at a quarter: a CPU trains it)"""
    cell: int = bounded(7, minimum=1)
    """pixels per cell side (Crafter's 63 x 63 view draws a 9 x 9 area at 7)"""

    PATH = "network.drawn."

    def image(self, grid):
        rgb = grid @ cell_colours(grid.shape[-1]).astype(grid.dtype)
        return draw_cells(rgb, self.cell)


def channel_problems(path: str, channels) -> list[str]:
    if not channels or min(channels) < 1:
        return [f"{path}: {list(channels)} must be one or more channel counts >= 1"]
    return []


ENCODERS: dict[str, type] = {"mlp": MLPNet, "map": MapNet, "conv": ConvNet, "trunk": TrunkNet, "grid": GridNet,
                              "drawn": DrawnNet}


@dataclasses.dataclass(frozen=True)
class NetworkConfig(Declared):
    """The actor-critic: which encoder (`kind`), each kind's settings in its own section (only the chosen kind's
    are read), and an optional memory over the encoder's features."""

    kind: Literal["mlp", "map", "conv", "trunk", "grid", "drawn"] = "mlp"
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
