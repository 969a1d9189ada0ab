"""Actor-critic networks (flax linen) and the categorical policy.

* `mlp` (symbolic observations, e.g. Craftax-Classic's f32[1345]): separate actor and critic MLPs,
  `depth` x Dense(`width`) each, as in Craftax_Baselines (3 x 512, about 2.4M parameters on the 1345-d input).
  Orthogonal init with scale sqrt(2) in the torso, 0.01 on the policy head and 1.0 on the value head.
* `conv` (pixel observations [H, W, C]): a small IMPALA-style ResNet shared by both heads (per stack: Conv3x3,
  max-pool 3/2, `res_blocks` residual blocks), then Dense(`width`), then the two heads. The paper's agent used
  channels (64, 128, 128) and a 256 bottleneck; the default here is the smaller (16, 32, 32).

`ActorCritic.__call__(obs[..., *obs_shape]) -> (logits[..., A], value[...])`; `policy(logits)` gives the
`distrax.Categorical`. Observations of any dtype are cast to float32; batch dims are free.
"""

from __future__ import annotations

from typing import Sequence

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax.linen.initializers import constant, orthogonal

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu}


def policy(logits: jax.Array) -> distrax.Categorical:
    return distrax.Categorical(logits=logits)


def _dense(features: int, scale: float, name: str | None = None) -> nn.Dense:
    return nn.Dense(features, kernel_init=orthogonal(scale), bias_init=constant(0.0), name=name)


class MLP(nn.Module):
    width: int
    depth: int
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x):
        act = ACTIVATIONS[self.activation]
        for _ in range(self.depth):
            x = act(_dense(self.width, np.sqrt(2))(x))
        return x


class ResidualBlock(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x):
        y = nn.relu(x)
        y = nn.Conv(self.channels, (3, 3), kernel_init=orthogonal(np.sqrt(2)))(y)
        y = nn.relu(y)
        y = nn.Conv(self.channels, (3, 3), kernel_init=orthogonal(np.sqrt(2)))(y)
        return x + y


class ImpalaEncoder(nn.Module):
    channels: Sequence[int] = (16, 32, 32)
    res_blocks: int = 2

    @nn.compact
    def __call__(self, x):
        for ch in self.channels:
            x = nn.Conv(ch, (3, 3), kernel_init=orthogonal(np.sqrt(2)))(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            for _ in range(self.res_blocks):
                x = ResidualBlock(ch)(x)
        x = nn.relu(x)
        return x.reshape(x.shape[:-3] + (-1,))


class ActorCritic(nn.Module):
    num_actions: int
    obs_shape: tuple[int, ...]
    kind: str = "mlp"  # "mlp" | "conv"
    width: int = 512
    depth: int = 3
    activation: str = "tanh"
    conv_channels: tuple[int, ...] = (16, 32, 32)
    res_blocks: int = 2

    @nn.compact
    def __call__(self, obs):
        x = obs.astype(jnp.float32)
        if obs.dtype == jnp.uint8:  # pixels (Crafter, Heist) travel as bytes: scale to [0, 1]
            x = x / 255.0
        nd = len(self.obs_shape)
        batch = x.shape[: x.ndim - nd]
        if self.kind == "mlp":
            x = x.reshape(batch + (-1,))
            actor = MLP(self.width, self.depth, self.activation, name="actor_torso")(x)
            critic = MLP(self.width, self.depth, self.activation, name="critic_torso")(x)
        elif self.kind == "conv":
            if nd != 3:
                raise ValueError(f"conv network needs [H, W, C] observations, got obs_shape={self.obs_shape}")
            h = x.reshape((-1,) + tuple(self.obs_shape))
            h = ImpalaEncoder(self.conv_channels, self.res_blocks)(h)
            h = nn.relu(_dense(self.width, np.sqrt(2))(h))
            h = h.reshape(batch + (self.width,))
            actor = critic = h
        else:
            raise ValueError(f"unknown network kind {self.kind!r} (mlp | conv)")
        logits = _dense(self.num_actions, 0.01, name="policy_head")(actor)
        value = _dense(1, 1.0, name="value_head")(critic)[..., 0]
        return logits, value


def count_params(params) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(params)))
