"""The 'map' agent as the code before issue 63 wrote it (commit 932974f, envgen_jax/trainer/networks.py and
encoders.py: `MapEncoder` a submodule named `encoder`, each 3x3 convolution a Dense layer over the cells' 3x3 patches,
then `embed`, `embed_norm`, the actor and critic MLPs and the two heads), feed-forward and float32 only. The test of
migration 4 evaluates it on the machine that runs the test, so today's network is compared with the old one on the
same CPU (tests/test_trainer_checkpoint.py)."""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu}


def patches3x3(grid):
    """[B, H, W, C] -> [B, H, W, 9C]: each cell's 3x3 neighbourhood, zero-padded at the border."""
    h, w = grid.shape[1:3]
    padded = jnp.pad(grid, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return jnp.concatenate([padded[:, i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=-1)


class MLP(nn.Module):
    width: int
    depth: int
    activation: str
    layer_norm: bool

    @nn.compact
    def __call__(self, x):
        for _ in range(self.depth):
            x = nn.Dense(self.width)(x)
            x = ACTIVATIONS[self.activation](nn.LayerNorm()(x) if self.layer_norm else x)
        return x


class MapResidualBlock(nn.Module):
    activation: str

    @nn.compact
    def __call__(self, grid):
        act = ACTIVATIONS[self.activation]
        y = nn.Dense(grid.shape[-1])(patches3x3(act(nn.LayerNorm()(grid))))
        y = nn.Dense(grid.shape[-1])(patches3x3(act(nn.LayerNorm()(y))))
        return grid + y


class MapEncoder(nn.Module):
    map_shape: tuple[int, int, int]
    channels: tuple[int, ...]
    activation: str
    layer_norm: bool
    res_blocks: int

    @nn.compact
    def __call__(self, x):
        act = ACTIVATIONS[self.activation]
        cells = int(np.prod(self.map_shape))
        grid = x[:, :cells].reshape((-1,) + tuple(self.map_shape))
        for ch in self.channels:
            grid = nn.Dense(ch)(patches3x3(grid))
            grid = act(nn.LayerNorm()(grid) if self.layer_norm else grid)
        for _ in range(self.res_blocks):
            grid = MapResidualBlock(self.activation)(grid)
        return jnp.concatenate([grid.reshape((grid.shape[0], -1)), x[:, cells:]], axis=-1)


class MapAgent(nn.Module):
    """obs [B, D] -> (logits [B, A], value [B]), with the first layout's parameter names."""

    num_actions: int
    map_shape: tuple[int, int, int]
    width: int
    depth: int
    channels: tuple[int, ...]
    res_blocks: int
    layer_norm: bool
    activation: str

    def setup(self):
        self.encoder = MapEncoder(self.map_shape, self.channels, self.activation, self.layer_norm, self.res_blocks)
        self.embed = nn.Dense(self.width)
        if self.layer_norm:
            self.embed_norm = nn.LayerNorm()
        self.actor_torso = MLP(self.width, self.depth, self.activation, self.layer_norm)
        self.critic_torso = MLP(self.width, self.depth, self.activation, self.layer_norm)
        self.policy_head = nn.Dense(self.num_actions)
        self.value_head = nn.Dense(1)

    def __call__(self, obs):
        h = self.embed(self.encoder(obs.astype(jnp.float32)))
        h = ACTIVATIONS[self.activation](self.embed_norm(h) if self.layer_norm else h)
        return self.policy_head(self.actor_torso(h)), self.value_head(self.critic_torso(h))[..., 0]
