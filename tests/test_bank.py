"""Bank: configurations stacked on a row axis, padded to a fixed capacity, gathered by traced row indices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.envs.bank import Bank
from envgen_jax.envs.crafter import CrafterConfig, config_to_params
from envgen_jax.schema import ConfigError
from tests.trees import assert_trees_equal

CONFIGS = [CrafterConfig.original(), CrafterConfig(target_biome="mountain", wood=3),
           CrafterConfig(coal_rarity="very common", episode_length=1024), CrafterConfig(peaceful=True, sapling=2)]


def shapes(tree):
    return jax.tree.map(lambda x: (x.shape, x.dtype), tree)


def test_gather_equals_each_configs_own_params():
    bank = Bank.from_configs(CONFIGS, config_to_params)
    assert bank.num_rows == len(CONFIGS)
    for i, config in enumerate(CONFIGS):
        assert_trees_equal(bank.get(i), config_to_params(config))
    rows = [3, 0, 2, 2, 1]
    gathered = jax.jit(lambda bank, rows: bank.get(rows))(bank, jnp.asarray(rows))
    assert_trees_equal(gathered, Bank.stack([config_to_params(CONFIGS[r]) for r in rows]).params)
    assert_trees_equal(jax.vmap(bank.get)(jnp.asarray(rows)), gathered)  # one traced row index per vmapped env


def test_padding_repeats_the_first_row_up_to_capacity():
    bank = Bank.from_configs(CONFIGS[1:3], config_to_params, capacity=5)
    assert bank.num_rows == 5 and bank.params.inventory.shape == (5, 12)
    assert_trees_equal(bank.get(1), config_to_params(CONFIGS[2]))
    for padding in (2, 3, 4):
        assert_trees_equal(bank.get(padding), config_to_params(CONFIGS[1]))


def test_too_many_configs_or_none_is_a_clear_error():
    with pytest.raises(ConfigError, match="5 configurations do not fit a bank of capacity 3"):
        Bank.from_configs(CONFIGS + CONFIGS[:1], config_to_params, capacity=3)
    with pytest.raises(ConfigError, match="expected at least one configuration"):
        Bank.from_configs([], config_to_params, capacity=3)


def test_designs_of_any_size_up_to_capacity_keep_the_shapes_and_never_retrace():
    traces = []

    @jax.jit
    def gather(bank, rows):
        traces.append(bank.num_rows)  # runs only while tracing; num_rows is a static int there
        return bank.get(rows)

    rows = jnp.asarray([0, 1, 3, 1])
    designs = [CONFIGS[1:2], CONFIGS[1:4], CONFIGS[2:4], []]
    banks = [Bank.from_configs([CrafterConfig.original(), *design], config_to_params, capacity=4)
             for design in designs]
    for bank in banks:
        assert shapes(bank) == shapes(banks[0])
        assert_trees_equal(gather(bank, rows), bank.get(np.asarray(rows)))
    assert traces == [4]  # traced once, with the static capacity, for four banks of new contents
    assert not np.array_equal(gather(banks[0], rows).inventory, gather(banks[2], rows).inventory)  # new contents


def test_replace_rows_swaps_a_design_in_place():
    bank = Bank.from_configs(CONFIGS[:1], config_to_params, capacity=4)
    swapped = jax.jit(Bank.replace_rows)(bank, jnp.asarray([1, 2]), Bank.from_configs(CONFIGS[2:4], config_to_params))
    assert shapes(swapped) == shapes(bank)
    for row, config in enumerate([CONFIGS[0], CONFIGS[2], CONFIGS[3], CONFIGS[0]]):
        assert_trees_equal(swapped.get(row), config_to_params(config))
