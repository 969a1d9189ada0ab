"""Pytree comparisons shared by the tests."""

import jax
import numpy as np


def assert_trees_equal(a, b):
    """Same structure, and every leaf equal with the same dtype and shape."""
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
