"""A bank: the parameters of K environment configurations, stacked on a leading row axis as one pytree.

Every environment slot runs one row, picked by a traced row index, so thousands of environment variants run in one
jitted program. A bank's contents are traced values and its capacity K is a shape: a bank of new designs with the
same capacity reuses every compiled function, while a new capacity compiles anew.

    bank = Bank.from_configs(configs, config_to_params, capacity=9)  # padded to 9 rows whatever len(configs) is
    params = bank.get(rows)                                           # rows i32[N], may be traced: leading [N]
    bank = bank.replace_rows(jnp.array([1, 2]), Bank.from_configs(two_new_configs, config_to_params))

Each game builds its banks with `env.make_params(configs, capacity)` (one configuration's params: its
`config_to_params`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import numpy as np
from flax import struct

from envgen_jax.schema import ConfigError


@struct.dataclass
class Bank:
    params: Any  # the env's params pytree; every leaf has the leading row axis [K]

    @classmethod
    def stack(cls, rows: Sequence[Any]) -> "Bank":
        """A bank of the given params rows (each one configuration's params, without the row axis)."""
        # On the host, then one transfer per leaf: jnp.stack would compile a program per leaf shape.
        return cls(jax.tree.map(lambda *leaves: jax.device_put(np.stack(leaves)), *rows))

    @classmethod
    def from_configs(cls, configs: Sequence[Any], to_params: Callable[[Any], Any],
                     capacity: int | None = None) -> "Bank":
        """One row per configuration (`to_params(config)`), then copies of the first row up to `capacity` rows.

        The padding keeps a bank's shapes fixed however many configurations a design has, so a new design never
        recompiles; no env slot is meant to run a padding row (it is a valid configuration all the same)."""
        configs = list(configs)
        capacity = len(configs) if capacity is None else capacity
        if not configs:
            raise ConfigError(["configs: expected at least one configuration"], what="bank of configurations")
        if len(configs) > capacity:
            raise ConfigError([f"{len(configs)} configurations do not fit a bank of capacity {capacity}"],
                              what="bank of configurations")
        rows = [to_params(c) for c in configs]
        return cls.stack(rows + rows[:1] * (capacity - len(rows)))

    @property
    def num_rows(self) -> int:
        """K, the capacity: a shape, so a static Python int even under jit."""
        return jax.tree.leaves(self.params)[0].shape[0]

    def get(self, rows) -> Any:
        """The params of `rows`: an int gives one row, an int array [N] (traced or not) gives N rows."""
        return jax.tree.map(lambda leaf: leaf[rows], self.params)

    def only_row(self, row: int) -> "Bank":
        """A bank of row `row` alone, cut on the host (no program compiled per leaf shape)."""
        return self.replace(params=jax.tree.map(lambda leaf: jax.device_put(np.asarray(leaf)[row:row + 1]),
                                                self.params))

    def replace_rows(self, rows, new: "Bank") -> "Bank":
        """This bank with `rows` (int array [M]) holding `new`'s M rows; the shapes stay, so nothing recompiles."""
        return self.replace(params=jax.tree.map(lambda old, x: old.at[rows].set(x), self.params, new.params))
