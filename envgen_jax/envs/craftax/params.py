"""One full-Craftax configuration as traced numbers: `CraftaxParams`, craftax's `EnvParams` plus the world and the
start that the designer's words set (config.py). Every field is a leaf, so a bank of K configurations (`envs.bank`)
is one pytree with a leading [K] axis and new designs never recompile.

The floors' generator settings are craftax's own `SmoothGenConfig`, one row per smooth floor as craftax stacks them,
with the designer's thresholds and ore chances written in; the spawn table is craftax's per-floor table
(`FLOOR_MOB_SPAWN_CHANCE`: passive, melee, ranged, melee at night) scaled per floor. Both are read from craftax at
import time, never written there, so the original configuration holds craftax's own numbers.
"""

from __future__ import annotations

from typing import Sequence

import jax
import numpy as np
from craftax.craftax.constants import FLOOR_MOB_SPAWN_CHANCE
from craftax.craftax.craftax_state import EnvParams, Inventory
from craftax.craftax.world_gen.world_gen_configs import ALL_SMOOTHGEN_CONFIGS, SmoothGenConfig
from flax import struct

from envgen_jax.envs.bank import Bank
from envgen_jax.envs.craftax import config as C

# craftax's generator settings and spawn table as host arrays (their own dtypes), copied per configuration.
SMOOTHGEN = jax.tree.map(np.asarray, ALL_SMOOTHGEN_CONFIGS)
SPAWN_CHANCE = np.asarray(FLOOR_MOB_SPAWN_CHANCE, np.float32)  # [9 floors, (passive, melee, ranged, melee at night)]


@struct.dataclass
class CraftaxParams(EnvParams):
    """craftax's EnvParams plus the designer's world and start. Defaults reproduce full Craftax exactly."""

    smoothgen: SmoothGenConfig = None       # leaves [6, ...]: the six smooth floors' generator settings
    spawn_chance: jax.Array = None          # f32[9, 4]
    start_floor: jax.Array = None           # i32: 0 = overworld (config.FLOORS)
    ladders_open: jax.Array = None          # bool: every floor counts as cleared
    vitals: jax.Array = None                # i32[5]: health, food, drink, energy, mana at the start
    inventory: Inventory = None             # craftax's Inventory at the start
    table_nearby: jax.Array = None          # bool
    furnace_nearby: jax.Array = None        # bool
    diamond_nearby: jax.Array = None        # bool


def _smoothgen(cfg: C.CraftaxConfig) -> SmoothGenConfig:
    """The six smooth floors' generator settings with the designer's words written in."""
    rarity, amount = C.RARITIES.index, C.AMOUNTS.index
    g = {name: np.array(value) for name, value in vars(SMOOTHGEN).items()}  # fresh copies to write into
    f32 = np.float32
    g["water_threshold"][0] = f32(C.WATER_THRESHOLD[rarity(cfg.water)])
    g["sand_threshold"][0] = f32(C.SAND_THRESHOLD[rarity(cfg.sand)])
    g["tree_threshold_uniform"][0] = f32(C.TREE_THRESHOLD[rarity(cfg.trees)])
    g["player_proximity_map_mountain_max"][0] = f32(C.MOUNTAIN_MAX[amount(cfg.mountains)])
    for ore, word in enumerate((cfg.coal_rarity, cfg.iron_rarity, cfg.diamond_rarity)):
        g["ore_chances"][0, ore] = f32(C.OVERWORLD_ORE[ore][rarity(word)])
    for floor in C.DEEP_SMOOTH:
        row, key = C.SMOOTH_FLOORS.index(floor), floor.replace(" ", "_")
        g["ore_chances"][row] *= f32(C.ORE_SCALE[rarity(getattr(cfg, f"{key}_ores"))])
        shift, times = C.ROCK[amount(getattr(cfg, f"{key}_rock"))]
        g["player_proximity_map_mountain_max"][row] += f32(shift)
        strength = g["player_proximity_map_mountain_strength"]
        strength[row] = (strength[row] * times).astype(strength.dtype)
    return SmoothGenConfig(**g)


def _spawn_chance(cfg: C.CraftaxConfig) -> np.ndarray:
    chance = SPAWN_CHANCE.copy()
    chance[:, 0] *= np.float32(C.PASSIVE_SCALE[C.FREQUENCIES.index(cfg.passive_creatures)])
    for floor, name in enumerate(C.FLOORS):
        word = "none" if cfg.peaceful else getattr(cfg, f"{name.replace(' ', '_')}_monsters")
        chance[floor, 1:] *= np.float32(C.MONSTER_SCALE[C.FREQUENCIES.index(word)])
    return np.minimum(chance, np.float32(1.0))


def _inventory(cfg: C.CraftaxConfig) -> Inventory:
    i32 = lambda x: np.asarray(x, np.int32)  # noqa: E731
    return Inventory(
        wood=i32(cfg.wood), stone=i32(cfg.stone), coal=i32(cfg.coal), iron=i32(cfg.iron), diamond=i32(cfg.diamond),
        sapling=i32(cfg.sapling), pickaxe=i32(C.TOOLS.index(cfg.pickaxe)), sword=i32(C.TOOLS.index(cfg.sword)),
        bow=i32(int(cfg.bow)), arrows=i32(cfg.arrows), armour=i32([C.ARMOUR.index(cfg.armour)] * 4),
        torches=i32(cfg.torches), ruby=i32(cfg.ruby), sapphire=i32(cfg.sapphire), potions=i32([cfg.potions] * 6),
        books=i32(cfg.books))


def config_to_params(cfg: C.CraftaxConfig) -> CraftaxParams:
    """The numbers behind one configuration's words; host arrays with strong dtypes (a bank compiles nothing)."""
    base = EnvParams()
    i32 = lambda x: np.asarray(x, np.int32)  # noqa: E731
    b = lambda x: np.asarray(x, bool)  # noqa: E731
    return CraftaxParams(
        max_timesteps=i32(cfg.episode_length), day_length=i32(cfg.day_length),
        always_diamond=b(base.always_diamond), mob_despawn_distance=i32(base.mob_despawn_distance),
        max_attribute=i32(base.max_attribute), god_mode=b(base.god_mode),
        smoothgen=_smoothgen(cfg), spawn_chance=_spawn_chance(cfg), start_floor=i32(cfg.floor()),
        ladders_open=b(cfg.ladders_open),
        vitals=i32([cfg.health, cfg.food, cfg.drink, cfg.energy, cfg.mana]), inventory=_inventory(cfg),
        table_nearby=b(cfg.table_nearby), furnace_nearby=b(cfg.furnace_nearby),
        diamond_nearby=b(cfg.diamond_nearby))


def make_params(configs: Sequence[C.CraftaxConfig], capacity: int | None = None) -> Bank:
    """A bank of configurations (`envs.bank.Bank`), padded to `capacity` rows when given."""
    return Bank.from_configs(configs, config_to_params, capacity)
