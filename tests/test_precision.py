"""The network's computation dtype (execution.compute_dtype) and its convolutions as matrix products (conv_as_matmul),
on tiny shapes with no environment: float32 is the program it was before these settings existed, bfloat16 keeps
parameters and outputs float32 and trains."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.linen.initializers import orthogonal

from envgen_jax.trainer.encoders import ConvNet, actor_critic
from envgen_jax.trainer.layers import Conv
from envgen_jax.trainer.networks import MapEncoder

OBS = (9, 9, 3)


def test_conv_is_flax_conv_bit_for_bit_and_its_matmul_form_agrees():
    x = jax.random.uniform(jax.random.PRNGKey(0), (2, 7, 5, 3))
    ours = Conv(4)
    theirs = nn.Conv(4, (3, 3), kernel_init=orthogonal(np.sqrt(2)))
    params = ours.init(jax.random.PRNGKey(1), x)
    assert jax.tree.map(jnp.shape, params) == jax.tree.map(jnp.shape, theirs.init(jax.random.PRNGKey(1), x))
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(theirs.init(jax.random.PRNGKey(1), x))):
        np.testing.assert_array_equal(a, b)
    params = jax.tree.map(lambda p: p + 0.1, params)  # a non-zero bias too
    np.testing.assert_array_equal(ours.apply(params, x), theirs.apply(params, x))
    np.testing.assert_allclose(Conv(4, as_matmul=True).apply(params, x), ours.apply(params, x), rtol=1e-5, atol=1e-5)


def _network(**kw):
    settings = ConvNet(channels=(4, 8), norm=True, width=16, head_width=16)
    return actor_critic(num_actions=5, obs_shape=OBS, settings=settings, **kw)


def _fit(network, steps=30):
    """A few Adam steps pulling the policy toward action 2 and the value toward 1: (params, losses)."""
    obs = jax.random.uniform(jax.random.PRNGKey(2), (8,) + OBS)
    tx = optax.adam(3e-3)

    def loss(p):
        logits, value = network.apply(p, obs)
        return -jax.nn.log_softmax(logits)[:, 2].mean() + ((value - 1.0) ** 2).mean()

    def step(carry, _):
        p, s = carry
        value, grads = jax.value_and_grad(loss)(p)
        updates, s = tx.update(grads, s)
        return (optax.apply_updates(p, updates), s), value

    @jax.jit  # one program: op by op, the init and the optimiser's state compiled a program per operation
    def fit():
        params = network.init(jax.random.PRNGKey(0), obs[0])
        (params, _), losses = jax.lax.scan(step, (params, tx.init(params)), None, length=steps)
        return params, losses

    params, losses = fit()
    return params, np.asarray(losses)


def test_bfloat16_computes_in_bfloat16_keeps_float32_state_and_trains():
    f32, bf16 = _network(), _network(compute_dtype="bfloat16")
    obs = jnp.zeros((3,) + OBS, jnp.uint8)
    params = jax.jit(f32.init)(jax.random.PRNGKey(0), obs[0])
    dtypes = jax.tree.map(lambda p: p.dtype, jax.eval_shape(bf16.init, jax.random.PRNGKey(0), obs[0]))
    assert jax.tree.map(lambda p: p.dtype, params) == dtypes
    logits, value = jax.jit(bf16.apply)(params, obs)
    assert logits.dtype == value.dtype == jnp.float32
    hlo = jax.jit(bf16.apply).lower(params, obs).as_text()
    assert "bf16" in hlo and "bf16" not in jax.jit(f32.apply).lower(params, obs).as_text()
    params, losses = _fit(bf16)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(params))
    assert np.isfinite(losses).all() and losses[-1] < 0.5 * losses[0]
    _, f32_losses = _fit(f32)
    assert abs(losses[-1] - f32_losses[-1]) < 0.1 * f32_losses[0]  # it learns as float32 does, to bf16's precision


def test_bad_compute_dtype_is_refused():
    with pytest.raises(ValueError, match="compute_dtype"):
        _network(compute_dtype="float16").init(jax.random.PRNGKey(0), jnp.zeros(OBS))


@pytest.mark.parametrize("dtype", [None, jnp.bfloat16])
def test_map_encoder_with_residual_blocks_builds_in_either_dtype(dtype):
    """The map encoder's residual blocks (3x3 convolutions as patches x kernel) in float32 and bfloat16."""
    x = jax.random.uniform(jax.random.PRNGKey(0), (2, 7 * 9 * 4 + 5))
    encoder = MapEncoder((7, 9, 4), channels=(8,), res_blocks=1, width=16, dtype=dtype)
    out = jax.jit(lambda x: encoder.apply(encoder.init(jax.random.PRNGKey(1), x), x))(x)  # one program
    assert out.shape == (2, 16) and np.isfinite(np.asarray(out, np.float32)).all()
