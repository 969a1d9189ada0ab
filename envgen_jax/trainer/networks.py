"""The actor-critic (flax linen): encoder -> [memory] -> torso -> heads, and the categorical policy.

Encoders (`network.kind`), one module each (their settings, which build them: trainer/encoders.py; the layers they
share, one convolution and one residual block among them: trainer/layers.py):
* `FlatEncoder` ('mlp', symbolic observations, e.g. Craftax-Classic's f32[1345]): the flat observation; before a
  recurrent cell one Dense(`width`) embedding, which sets the cell's input size. Its torso: separate actor and
  critic MLPs, `depth` x Dense(`width`) each, as in Craftax_Baselines (3 x 512, about 2.4M parameters).
* `MapEncoder` ('map', symbolic observations that start with a local map, declared by the env as `map_shape`, e.g.
  Craftax-Classic's 7 x 9 cells x 21 one-hot channels): 3x3 convs over the map (`channels`, weights shared across
  cells), `res_blocks` pre-activation residual blocks at the last channel count, flattened and joined with the rest
  of the vector (inventory, intrinsics, direction, light), then one Dense(`width`) embedding; the torso of 'mlp'.
* `ConvEncoder` ('conv', pixel observations [H, W, C]): an IMPALA-style ResNet (per stack: 3x3 conv, max-pool 3/2,
  `res_blocks` residual blocks), then Dense(`width`); shared heads. The paper's agent: channels (64, 128, 128),
  width 256, and `norm` (Moon et al.'s AD repository, after VPT's ImpalaCNN: GroupNorm after each pool and before
  each residual conv, LayerNorm before the bottleneck) with `head_width` 1024 (LayerNorm -> Dense -> ReLU after
  the bottleneck).
* `TrunkEncoder` ('trunk') and `GridEncoder` ('grid', 'drawn'; symbolic, issue 56's ladder toward the pixel agent):
  the pixel agent's trunk and shared heads on the flat vector, or after IMPALA stacks with GroupNorm over the local
  map as a C-channel image ('grid') or drawn as an RGB image, a fixed colour per block and mob ('drawn'); the rest
  of the vector joins before the trunk.

`execution.compute_dtype` ("float32" or "bfloat16"): the dtype of activations and matrix products; parameters,
normalisation statistics, logits and values stay float32 (mixed precision). `execution.conv_as_matmul` runs each
3x3 convolution as its patches times the kernel (`layers.Conv`). Orthogonal init with scale sqrt(2) in the torso,
0.01 on the policy head and 1.0 on the value head.

Memory (`network.recurrent`: "gru" or "lstm"): a recurrent cell of `memory_size` over the encoder's features, shared
by both heads; the torso sees [features, cell output] (a skip around the cell, as in Dedieu et al.'s model-free
agent). The carry is reset to zeros where an episode starts. Recurrent networks are called with `step` (one time
step of a batch of env slots) or `unroll` (a [T, N] sequence from a stored initial carry).

Parameter names: the encoder's and the torso's layers sit in the agent's own namespace (`nn.share_scope`), under
the names of the first release's single ActorCritic ("ImpalaEncoder_0", "Dense_0", "actor_torso", ...): flax draws
each initial parameter from its path, so the initial parameters stay what they were; layers renamed since are
renamed on restore (trainer/migrations.py, migration 4).

`ActorCritic.__call__(obs[..., *obs_shape]) -> (logits[..., A], value[...])` for feed-forward networks;
`policy(logits)` gives the `distrax.Categorical`. Observations of any dtype are cast to float32; batch dims are free.
"""

from __future__ import annotations

import functools

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from envgen_jax.trainer.layers import (ACTIVATIONS, MLP, Conv, ImpalaResNet, ResidualBlock, cell_colours, dense,
                                       draw_cells, embed, normalise, split_map, trunk)

RECURRENT_CELLS = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell}
RESNET = "ImpalaEncoder_0"  # the IMPALA ResNet's parameter name (the first release's)


def policy(logits: jax.Array) -> distrax.Categorical:
    return distrax.Categorical(logits=logits)


class FlatEncoder(nn.Module):
    """'mlp': [B, D] -> the flat observation, or its `embed_width` embedding (0: none)."""

    embed_width: int = 0
    activation: str = "tanh"
    layer_norm: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))
        return embed(x, self.embed_width, self.activation, self.layer_norm, self.dtype) if self.embed_width else x


class MapEncoder(nn.Module):
    """'map': 3x3 convs (as matrix products) and residual blocks over the local map at the vector's start, joined
    with the vector's rest, then a Dense(`width`) embedding."""

    map_shape: tuple[int, int, int]
    channels: tuple[int, ...] = (32, 32)
    res_blocks: int = 0
    width: int = 512
    activation: str = "tanh"
    layer_norm: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        grid, rest = split_map(x.reshape((x.shape[0], -1)), self.map_shape)
        for ch in self.channels:
            grid = Conv(ch, as_matmul=True, dtype=self.dtype)(grid)
            grid = ACTIVATIONS[self.activation](normalise("layer" if self.layer_norm else "none", self.dtype)(grid))
        for _ in range(self.res_blocks):
            grid = ResidualBlock("layer", self.activation, as_matmul=True, dtype=self.dtype)(grid)
        h = jnp.concatenate([grid.reshape((grid.shape[0], -1)), rest], axis=-1)
        return embed(h, self.width, self.activation, self.layer_norm, self.dtype)


class ConvEncoder(nn.Module):
    """'conv': pixels [B, H, W, C] -> the IMPALA ResNet -> the trunk."""

    channels: tuple[int, ...] = (16, 32, 32)
    res_blocks: int = 2
    norm: bool = False
    width: int = 512
    head_width: int = 0
    as_matmul: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        h = ImpalaResNet(self.channels, self.res_blocks, self.norm, self.as_matmul, self.dtype, name=RESNET)(x)
        return trunk(h, self.width, self.head_width, self.norm, self.dtype)


class TrunkEncoder(nn.Module):
    """'trunk': the flat vector -> the pixel agent's trunk (normalised)."""

    width: int = 256
    head_width: int = 1024
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        return trunk(x.reshape((x.shape[0], -1)), self.width, self.head_width, True, self.dtype)


class GridEncoder(nn.Module):
    """'grid' and 'drawn': the local map as an image (its C channels, or with `cell` > 0 drawn in RGB, each cell a
    `cell` x `cell` patch of its channels' colours) -> the IMPALA ResNet with GroupNorm, joined with the vector's
    rest -> the trunk (normalised)."""

    map_shape: tuple[int, int, int]
    channels: tuple[int, ...] = (32, 64, 64)
    res_blocks: int = 2
    width: int = 256
    head_width: int = 1024
    cell: int = 0
    as_matmul: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        grid, rest = split_map(x.reshape((x.shape[0], -1)), self.map_shape)
        if self.cell:
            grid = draw_cells(grid @ cell_colours(grid.shape[-1]).astype(grid.dtype), self.cell)
        h = ImpalaResNet(self.channels, self.res_blocks, True, self.as_matmul, self.dtype, name=RESNET)(grid)
        return trunk(jnp.concatenate([h, rest], axis=-1), self.width, self.head_width, True, self.dtype)


class SeparateTorsos(MLP):
    """'mlp' and 'map': an actor MLP and a critic MLP of these sizes over the same input (`actor_torso`,
    `critic_torso`)."""

    @nn.compact
    def __call__(self, h):
        mlp = functools.partial(MLP, self.width, self.depth, self.activation, self.layer_norm, self.dtype)
        return mlp(name="actor_torso")(h), mlp(name="critic_torso")(h)


class SharedTorso(nn.Module):
    """The pixel agent's: both heads read the features (its trunk ends the encoder)."""

    def __call__(self, h):
        return h, h


class ActorCritic(nn.Module):
    encoder: nn.Module  # [B, *obs_shape] float32 -> features [B, F]: one of the encoders above
    torso: nn.Module  # [B, F'] -> (the actor's input, the critic's): SeparateTorsos or SharedTorso
    num_actions: int
    obs_shape: tuple[int, ...]
    recurrent: str = "none"  # "none" | "gru" | "lstm"
    memory_size: int = 256
    dtype: jnp.dtype | None = None  # the heads' computation dtype (None: float32), as the encoder's and torso's

    def setup(self):
        nn.share_scope(self, self.encoder)  # their layers' names are the agent's (the module's docstring)
        nn.share_scope(self, self.torso)
        if self.recurrent != "none":  # the memory stays float32: its state is carried across many steps
            self.cell = RECURRENT_CELLS[self.recurrent](features=self.memory_size)
        self.policy_head = dense(self.num_actions, 0.01, dtype=self.dtype)
        self.value_head = dense(1, 1.0, dtype=self.dtype)

    def _features(self, obs):
        """[B, *obs_shape] -> [B, F]: the encoder's output."""
        x = obs.astype(jnp.float32)
        if obs.dtype == jnp.uint8:  # pixels (Crafter, Heist) travel as bytes: scale to [0, 1]
            x = x / 255.0
        return self.encoder(x)

    def _heads(self, h):
        actor, critic = self.torso(h)
        logits, value = self.policy_head(actor), self.value_head(critic)[..., 0]
        if self.dtype is not None:  # the policy, the losses and GAE in float32
            logits, value = logits.astype(jnp.float32), value.astype(jnp.float32)
        return logits, value

    def __call__(self, obs):
        """Feed-forward: obs [..., *obs_shape] -> (logits [..., A], value [...])."""
        if self.recurrent != "none":
            raise ValueError("a recurrent network is called with step() or unroll()")
        nd = len(self.obs_shape)
        batch = obs.shape[: obs.ndim - nd]
        logits, value = self._heads(self._features(obs.reshape((-1,) + tuple(self.obs_shape))))
        return logits.reshape(batch + (self.num_actions,)), value.reshape(batch)

    def initial_carry(self, batch: int):
        """Zeros: the memory of env slots at an episode's start ([batch, memory_size]; an LSTM's is a (c, h) pair)."""
        zeros = jnp.zeros((batch, self.memory_size), jnp.float32)  # what flax's cells initialise to
        return (zeros, zeros) if self.recurrent == "lstm" else zeros

    def clear(self, carry, reset):
        """The carry with the slots where `reset` (bool[N]) is set back to an episode's start."""
        zeros = self.initial_carry(reset.shape[0])
        return jax.tree.map(lambda z, c: jnp.where(reset[:, None], z, c), zeros, carry)

    def step(self, carry, obs, reset):
        """One time step of N env slots: carry [N, H], obs [N, *obs_shape], reset bool[N] (an episode starts with
        this obs: its memory is cleared first) -> (carry, logits [N, A], value [N])."""
        h = self._features(obs)
        carry, out = self.cell(self.clear(carry, reset), h)
        logits, value = self._heads(jnp.concatenate([h, out], axis=-1))
        return carry, logits, value

    def unroll(self, carry, obs, reset):
        """A [T, N] sequence from the initial carry [N, H]: obs [T, N, *obs_shape], reset bool[T, N] ->
        (final carry, logits [T, N, A], value [T, N]). Equal to calling `step` T times."""
        t, n = reset.shape
        h = self._features(obs.reshape((t * n,) + tuple(self.obs_shape))).reshape((t, n, -1))

        def body(cell, carry, xs):
            h_t, reset_t = xs
            return cell(self.clear(carry, reset_t), h_t)

        scan = nn.scan(body, variable_broadcast="params", split_rngs={"params": False})
        carry, outs = scan(self.cell, carry, (h, reset))
        logits, value = self._heads(jnp.concatenate([h, outs], axis=-1).reshape((t * n, -1)))
        return carry, logits.reshape((t, n, self.num_actions)), value.reshape((t, n))


def count_params(params) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(params)))


class Agent:
    """The actor-critic as PPO and the evaluator call it, one interface for feed-forward and recurrent networks:
    `memory` is each env slot's recurrent state ([N, H]; None when feed-forward), and a minibatch is [B] samples
    (feed-forward) or [T, B] sequences unrolled from their stored initial memory (recurrent)."""

    def __init__(self, network: ActorCritic):
        self.network = network
        self.recurrent = network.recurrent != "none"

    def init(self, key):
        """One agent's parameters."""
        obs = jnp.zeros(self.network.obs_shape, jnp.float32)
        if not self.recurrent:
            return self.network.init(key, obs)
        return self.network.init(key, self.initial_memory(1), obs[None, None], jnp.zeros((1, 1), bool),
                                 method="unroll")

    def apply(self, params, obs):
        """Feed-forward networks: (logits, value) of observations with any batch dims."""
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

    def episode_starts(self, done):
        """bool[T, N]: an episode starts at step t where step t-1 ended one (t = 0: reset before the rollout), what
        a recurrent learner's unroll clears its memory at; None when feed-forward (nothing to clear)."""
        if not self.recurrent:
            return None
        return jnp.concatenate([jnp.zeros_like(done[:1]), done[:-1]])

    def evaluate(self, params, memory, obs, start):
        """(logits, raw values) of a minibatch: obs [B, ...] (feed-forward), or [T, B, ...] sequences from their
        initial memory [B, H] with their episode starts bool[T, B] (recurrent)."""
        if not self.recurrent:
            return self.apply(params, obs)
        _, logits, value = self.network.apply(params, memory, obs, start, method="unroll")
        return logits, value
