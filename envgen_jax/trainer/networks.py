"""Actor-critic networks (flax linen) and the categorical policy.

Encoders (`network.kind`; each kind's settings, and how they build these modules: trainer/encoders.py):
* `mlp` (symbolic observations, e.g. Craftax-Classic's f32[1345]): separate actor and critic MLPs,
  `depth` x Dense(`width`) each, as in Craftax_Baselines (3 x 512, about 2.4M parameters on the 1345-d input).
* `map` (symbolic observations that start with a local map, declared by the env as `map_shape`, e.g.
  Craftax-Classic's 7 x 9 cells x 21 one-hot channels): a small conv over the map (`channels`, 3x3, so weights
  are shared across cells instead of learnt position by position), flattened and joined with the rest of the vector
  (inventory, intrinsics, direction, light), then one shared Dense(`width`) embedding; then separate actor and
  critic MLPs as in `mlp`. `res_blocks` adds pre-activation residual blocks (LayerNorm, ReLU, 3x3 conv, twice)
  at the last channel count: a deeper encoder that still sees the whole 7 x 9 view at full resolution.
* `conv` (pixel observations [H, W, C]): a small IMPALA-style ResNet shared by both heads (per stack: Conv3x3,
  max-pool 3/2, `res_blocks` residual blocks), then Dense(`width`), then the two heads. The paper's agent used
  channels (64, 128, 128) and a 256 bottleneck; the default here is the smaller (16, 32, 32). `norm` builds
  the paper's variant (Moon et al.'s AD repository, after VPT's ImpalaCNN): GroupNorm (one group) after each pool
  and before each residual conv, LayerNorm before the bottleneck; `head_width` > 0 adds LayerNorm -> Dense(1024 in
  the paper) -> ReLU between the bottleneck and the heads.

* `trunk`, `grid`, `drawn` (symbolic; issue 56's ladder from the symbolic default toward the pixel agent): the
  pixel agent's trunk and shared heads (LayerNorm -> Dense 256 -> ReLU -> LayerNorm -> Dense 1024 -> ReLU) on the
  flat vector (`trunk`), after IMPALA stacks with GroupNorm over the local map as a 21-channel image (`grid`), or
  after the same stacks over the map drawn as an RGB image, a fixed colour per block and mob (`drawn`:
  `cell_colours`, `draw_cells`); the rest of the vector joins before the trunk.

`layer_norm` (mlp, map) puts a LayerNorm before every hidden activation (the low-sample agents' torsos).
`execution.compute_dtype` ("float32" or "bfloat16"): the dtype of activations and matrix products; parameters,
normalisation statistics, logits and values stay float32 (mixed precision). `execution.seed_axis: dense` runs each
3x3 convolution as its patches times the kernel (`Conv(as_matmul=True)`, one matrix product): vmapped over the seeds'
parameters that is a batched matrix product, where XLA's convolution becomes a grouped one.
Orthogonal init with scale sqrt(2) in the torso, 0.01 on the policy head and 1.0 on the value head.

Memory (`network.recurrent`: "gru" or "lstm"): a recurrent cell of `memory_size` over the encoder's features (for
`mlp`, a shared Dense(`width`) embedding of the observation), shared by both heads; the heads see [features, cell
output] (a skip around the cell, as in Dedieu et al.'s model-free agent). The
carry is reset to zeros where an episode starts. Recurrent networks are called with `step` (one time step of a batch
of env slots) or `unroll` (a [T, N] sequence from a stored initial carry).

`ActorCritic.__call__(obs[..., *obs_shape]) -> (logits[..., A], value[...])` for feed-forward networks;
`policy(logits)` gives the `distrax.Categorical`. Observations of any dtype are cast to float32; batch dims are free.
"""

from __future__ import annotations

from typing import Any, Sequence

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax.linen.initializers import constant, orthogonal

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu}
RECURRENT_CELLS = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell}


def policy(logits: jax.Array) -> distrax.Categorical:
    return distrax.Categorical(logits=logits)


def dense(features: int, scale: float, name: str | None = None, dtype=None) -> nn.Dense:
    return nn.Dense(features, kernel_init=orthogonal(scale), bias_init=constant(0.0), name=name, dtype=dtype)


class Conv(nn.Module):
    """A 3x3 'SAME' convolution with nn.Conv's parameters (kernel [3, 3, C, F], bias [F]; auto-named Conv_i, so
    checkpoints are the same). `as_matmul`: computed as patches3x3(x) times the kernel seen as [9C, F] (equal up to
    float summation order); vmapped over per-seed kernels this is a batched matrix product instead of the grouped
    convolution XLA makes of a vmapped convolution."""

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


class MLP(nn.Module):
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


def patches3x3(grid):
    """[B, H, W, C] -> [B, H, W, 9C]: each cell's 3x3 neighbourhood (zero-padded at the border), so a 3x3 'SAME'
    convolution is one Dense layer over it."""
    h, w = grid.shape[1:3]
    padded = jnp.pad(grid, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return jnp.concatenate([padded[:, i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=-1)


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


def conv3x3(features: int, dtype=None):
    """A 3x3 'SAME' convolution over [B, H, W, C] cells as patches + Dense (see MapEncoder)."""
    layer = dense(features, np.sqrt(2), dtype=dtype)
    return lambda grid: layer(patches3x3(grid))


class MapResidualBlock(nn.Module):
    """x + conv(act(LN(conv(act(LN(x)))))): a pre-activation residual block over the map's cells."""

    activation: str = "relu"
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, grid):
        act = ACTIVATIONS[self.activation]
        y = conv3x3(grid.shape[-1], self.dtype)(act(nn.LayerNorm(dtype=self.dtype)(grid)))
        y = conv3x3(grid.shape[-1], self.dtype)(act(nn.LayerNorm(dtype=self.dtype)(y)))
        return grid + y


class MapEncoder(nn.Module):
    """3x3 convolutions over the local map at the start of a symbolic vector, joined with the vector's remaining
    features. Each convolution is written as patches + Dense: with parameters vmapped over seeds, nn.Conv becomes a
    grouped convolution that XLA:CPU runs about 28x slower than these batched matmuls (measured: 105 vs 2,927 env
    steps/s for the whole training step)."""

    map_shape: tuple[int, int, int]
    channels: Sequence[int] = (32, 32)
    activation: str = "relu"
    layer_norm: bool = False
    res_blocks: int = 0
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):  # x: [B, D] with D >= prod(map_shape)
        act = ACTIVATIONS[self.activation]
        cells = int(np.prod(self.map_shape))
        grid = x[:, :cells].reshape((-1,) + tuple(self.map_shape))
        for ch in self.channels:
            grid = dense(ch, np.sqrt(2), dtype=self.dtype)(patches3x3(grid))
            grid = act(nn.LayerNorm(dtype=self.dtype)(grid) if self.layer_norm else grid)
        for _ in range(self.res_blocks):
            grid = MapResidualBlock(self.activation, self.dtype)(grid)
        return jnp.concatenate([grid.reshape((grid.shape[0], -1)), x[:, cells:]], axis=-1)


class ResidualBlock(nn.Module):
    channels: int
    as_matmul: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        y = nn.relu(x)
        y = Conv(self.channels, self.as_matmul, self.dtype)(y)
        y = nn.relu(y)
        y = Conv(self.channels, self.as_matmul, self.dtype)(y)
        return x + y


class NormResidualBlock(nn.Module):
    """x + relu(conv(GN(relu(conv(GN(x)))))): the residual block of VPT's ImpalaCNN, as the AD repository uses it."""

    channels: int
    as_matmul: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        y = x
        for _ in range(2):
            y = nn.GroupNorm(num_groups=1, dtype=self.dtype)(y)
            y = nn.relu(Conv(self.channels, self.as_matmul, self.dtype)(y))
        return x + y


class ImpalaEncoder(nn.Module):
    channels: Sequence[int] = (16, 32, 32)
    res_blocks: int = 2
    norm: bool = False  # the paper's variant: GroupNorm after each pool and inside each residual block
    as_matmul: bool = False
    dtype: jnp.dtype | None = None

    @nn.compact
    def __call__(self, x):
        block = NormResidualBlock if self.norm else ResidualBlock
        for ch in self.channels:
            x = Conv(ch, self.as_matmul, self.dtype)(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            if self.norm:
                x = nn.GroupNorm(num_groups=1, dtype=self.dtype)(x)
            for _ in range(self.res_blocks):
                x = block(ch, self.as_matmul, self.dtype)(x)
        x = nn.relu(x)
        return x.reshape(x.shape[:-3] + (-1,))


class ActorCritic(nn.Module):
    num_actions: int
    obs_shape: tuple[int, ...]
    settings: Any  # the encoder kind's settings (trainer.encoders: MLPNet, MapNet, ConvNet), which build its layers
    map_shape: tuple[int, ...] | None = None  # the env's local-map layout [H, W, C] at the vector's start, if any
    recurrent: str = "none"  # "none" | "gru" | "lstm"
    memory_size: int = 256
    compute_dtype: str = "float32"  # activations and matrix products ("bfloat16": mixed precision)
    conv_as_matmul: bool = False  # 3x3 convolutions as patches x kernel (dense when vmapped over seeds)

    def setup(self):
        memory = self.recurrent != "none"
        # Attribute names = parameter names: the encoder names its layers as the first release's checkpoints did.
        layers = self.settings.layers(self.obs_shape, self.map_shape, memory, self._dtype, self.conv_as_matmul)
        for name, layer in layers.items():
            setattr(self, name, layer)
        if memory:  # the memory stays float32: its state is carried across many steps
            self.cell = RECURRENT_CELLS[self.recurrent](features=self.memory_size)
        self.policy_head = dense(self.num_actions, 0.01, dtype=self._dtype)
        self.value_head = dense(1, 1.0, dtype=self._dtype)

    @property
    def _dtype(self):
        """The computation dtype given to every layer: None for float32 (each layer then computes in its inputs'
        float32, the same program as before the setting existed)."""
        if self.compute_dtype not in ("float32", "bfloat16"):
            raise ValueError(f"compute_dtype must be float32 or bfloat16, not {self.compute_dtype!r}")
        return None if self.compute_dtype == "float32" else jnp.dtype(self.compute_dtype)

    def _features(self, obs):
        """[B, *obs_shape] -> [B, F]: the encoder's output (the flat observation for a feed-forward `mlp`)."""
        x = obs.astype(jnp.float32)
        if obs.dtype == jnp.uint8:  # pixels (Crafter, Heist) travel as bytes: scale to [0, 1]
            x = x / 255.0
        return self.settings.features(self, x, self.recurrent != "none")

    def _heads(self, h):
        actor, critic = self.settings.torsos(self, h)
        logits, value = self.policy_head(actor), self.value_head(critic)[..., 0]
        if self._dtype is not None:  # the policy, the losses and GAE in float32
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
