"""The layers every encoder is built from (flax linen): one 3x3 convolution, one residual block, the IMPALA ResNet,
the MLP, and the two pieces of layers the encoders end with (`embed`, `trunk`).

Layers made inside a compact method by `embed` and `trunk` are the caller's: their names are parameter names.
"""

from __future__ import annotations

from typing import Literal, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax.linen.initializers import constant, orthogonal

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu}


def dense(features: int, scale: float, name: str | None = None, dtype=None) -> nn.Dense:
    return nn.Dense(features, kernel_init=orthogonal(scale), bias_init=constant(0.0), name=name, dtype=dtype)


def patches3x3(grid):
    """[B, H, W, C] -> [B, H, W, 9C]: each cell's 3x3 neighbourhood (zero-padded at the border), so a 3x3 'SAME'
    convolution is one matrix product over it."""
    h, w = grid.shape[1:3]
    padded = jnp.pad(grid, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return jnp.concatenate([padded[:, i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=-1)


class Conv(nn.Module):
    """The 3x3 'SAME' convolution of every encoder, with nn.Conv's parameters (kernel [3, 3, C, F], bias [F]).
    `as_matmul`: computed as patches3x3(x) times the kernel seen as [9C, F] (equal up to float summation order);
    vmapped over per-seed kernels this is a batched matrix product instead of the grouped convolution XLA makes of a
    vmapped convolution (XLA:CPU ran the map encoder's training step 28x faster so: 2,927 vs 105 env steps/s)."""

    features: int
    as_matmul: bool = False
    dtype: jnp.dtype | None = None  # computation dtype (None: the input's); parameters stay float32

    @nn.compact
    def __call__(self, x):
        kernel = self.param("kernel", orthogonal(np.sqrt(2)), (3, 3, x.shape[-1], self.features))
        bias = self.param("bias", constant(0.0), (self.features,))
        x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
        if self.as_matmul:
            y = patches3x3(x) @ kernel.reshape((-1, self.features))
        else:
            y = jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y + bias


def normalise(norm: str, dtype):
    """The norm layer of `norm` ('layer', 'group': GroupNorm with one group; 'none': the identity)."""
    if norm == "layer":
        return nn.LayerNorm(dtype=dtype)
    if norm == "group":
        return nn.GroupNorm(num_groups=1, dtype=dtype)
    return lambda x: x


class ResidualBlock(nn.Module):
    """x + f(f(x)) at x's channel count, f a 3x3 convolution with its norm and activation: norm -> activation ->
    conv (pre-activation: IMPALA's block with no norm, the map's with LayerNorm) or, with `post_activation`,
    norm -> conv -> activation (VPT's ImpalaCNN with GroupNorm, as the AD repository's agent uses it)."""

    norm: Literal["none", "layer", "group"] = "none"
    activation: str = "relu"
    post_activation: bool = False
    as_matmul: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        act = ACTIVATIONS[self.activation]
        y = x
        for _ in range(2):
            y = normalise(self.norm, self.dtype)(y)
            conv = Conv(x.shape[-1], self.as_matmul, self.dtype)
            y = act(conv(y)) if self.post_activation else conv(act(y))
        return x + y


class ImpalaResNet(nn.Module):
    """IMPALA's ResNet: per stack a 3x3 conv, a 'SAME' max-pool 3/2 and `res_blocks` residual blocks; then ReLU and
    flattening. `norm`: the paper's variant (GroupNorm after each pool, VPT's blocks)."""

    channels: Sequence[int] = (16, 32, 32)
    res_blocks: int = 2
    norm: bool = False
    as_matmul: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        # The blocks' parameter names are the first release's, which had a block class per variant: flax draws each
        # initial parameter from its name, so the paper agent's initial parameters stay as they were.
        block = "NormResidualBlock" if self.norm else "ResidualBlock"
        for i, ch in enumerate(self.channels):
            x = Conv(ch, self.as_matmul, self.dtype)(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            x = normalise("group" if self.norm else "none", self.dtype)(x)
            for j in range(self.res_blocks):
                x = ResidualBlock("group" if self.norm else "none", "relu", self.norm, self.as_matmul, self.dtype,
                                  name=f"{block}_{i * self.res_blocks + j}")(x)
        x = nn.relu(x)
        return x.reshape(x.shape[:-3] + (-1,))



class MLP(nn.Module):
    """`depth` x (Dense(width) [-> LayerNorm] -> activation)."""

    width: int
    depth: int
    activation: str = "tanh"
    layer_norm: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        act = ACTIVATIONS[self.activation]
        for _ in range(self.depth):
            x = dense(self.width, np.sqrt(2), dtype=self.dtype)(x)
            x = act(nn.LayerNorm(dtype=self.dtype)(x) if self.layer_norm else x)
        return x


def embed(x, width: int, activation: str, layer_norm: bool, dtype):
    """Dense(width) [-> LayerNorm] -> activation, as layers `embed` and `embed_norm` of the calling module."""
    x = dense(width, np.sqrt(2), name="embed", dtype=dtype)(x)
    return ACTIVATIONS[activation](nn.LayerNorm(dtype=dtype, name="embed_norm")(x) if layer_norm else x)


def trunk(x, width: int, head_width: int, norm: bool, dtype):
    """The pixel agent's layers after its ResNet, as layers of the calling module: [LayerNorm `bottleneck_norm` ->]
    Dense(width) `Dense_0` -> ReLU [-> LayerNorm `head_norm` -> Dense(head_width) `head_dense` -> ReLU]."""
    if norm:
        x = nn.LayerNorm(dtype=dtype, name="bottleneck_norm")(x)
    x = nn.relu(dense(width, np.sqrt(2), name="Dense_0", dtype=dtype)(x))
    if head_width:
        x = nn.relu(dense(head_width, np.sqrt(2), name="head_dense", dtype=dtype)(nn.LayerNorm(dtype=dtype,
                                                                                             name="head_norm")(x)))
    return x


def split_map(x, map_shape):
    """[B, D] symbolic vectors -> (the local map [B, H, W, C] at their start, the rest [B, D - H*W*C])."""
    cells = int(np.prod(map_shape))
    return x[:, :cells].reshape((-1,) + tuple(map_shape)), x[:, cells:]


def cell_colours(channels: int) -> np.ndarray:
    """f32[channels, 3]: a fixed RGB colour per map channel (block or mob type), what the 'drawn' encoder paints
    each cell with: distinct points of an evenly spaced n x n x n grid in [0.1, 1]^3 (n^3 >= channels; 21 channels:
    3 levels, at least 0.45 apart), in an order fixed by numpy's PCG64 seeded 0 (the same on every install)."""
    n = max(2, int(np.ceil(channels ** (1 / 3) - 1e-9)))
    levels = np.linspace(0.1, 1.0, n)
    grid = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 3)
    return grid[np.random.default_rng(0).permutation(len(grid))[:channels]].astype(np.float32)


def draw_cells(rgb, cell: int):
    """[B, H, W, 3] cell colours -> [B, H * cell, W * cell, 3]: each cell a `cell` x `cell` patch."""
    return jnp.repeat(jnp.repeat(rgb, cell, axis=1), cell, axis=2)
