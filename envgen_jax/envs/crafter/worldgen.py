"""Configurable Craftax-Classic world generation.

Our own generator, written from the rules of craftax's `world_gen.generate_world` with every hard-coded number that
EnvGen's knobs touch turned into a traced `CrafterParams` field. It consumes PRNG keys in upstream's order, so with
`CrafterConfig.original()` it builds the same world, tile for tile, as craftax does for the same key (tested).

Biomes bend the noise fields instead of rewriting them, and the `ensure_*` guarantees add a pond and a stone outcrop
near the start, so no biome strands the agent without water or the pickaxe chain (a defect of the original EnvGen code).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from craftax.craftax_classic.constants import Achievement, Action, BlockType
from craftax.craftax_classic.envs.craftax_state import EnvState, Inventory, Mobs, StaticEnvParams
from craftax.craftax_classic.game_logic import calculate_light_level, get_distance_map
from craftax.craftax_classic.util.noise import generate_fractal_noise_2d

from envgen_jax.envs.draws import weighted_choice

GRASS, WATER, STONE, TREE, PATH = (BlockType.GRASS.value, BlockType.WATER.value, BlockType.STONE.value,
                                   BlockType.TREE.value, BlockType.PATH.value)
SAND, LAVA, COAL, IRON, DIAMOND = (BlockType.SAND.value, BlockType.LAVA.value, BlockType.COAL.value,
                                   BlockType.IRON.value, BlockType.DIAMOND.value)
TABLE, FURNACE = BlockType.CRAFTING_TABLE.value, BlockType.FURNACE.value

# Guaranteed features, as (first row, last row, first col, last col) offsets from the start. The start faces UP
# (row - 1), which stays open.
POND = (-5, -3, 3, 4)                 # a 3x2 pond a few steps up-right
OUTCROP = (3, 7, -7, -3)              # a 5x5 stone block down-left, ores drawn at the config's rates
OUTCROP_COAL, OUTCROP_IRON = (4, -6), (6, -4)  # plus one coal and one iron always inside it
TABLE_AT, FURNACE_AT = (1, -1), (1, 1)         # diagonal neighbours count as "nearby" for crafting


def _fractal(key, static: StaticEnvParams, res):
    return generate_fractal_noise_2d(key, static.map_size, res, octaves=1)


def _box(static: StaticEnvParams, start, box):
    """Mask of the cells whose offset from `start` lies in the (inclusive) box."""
    rows = jnp.arange(static.map_size[0])[:, None] - start[0]
    cols = jnp.arange(static.map_size[1])[None, :] - start[1]
    return (rows >= box[0]) & (rows <= box[1]) & (cols >= box[2]) & (cols <= box[3])


def _cell(static, start, offset):
    return _box(static, start, (offset[0], offset[0], offset[1], offset[1]))


def generate_world(rng: jax.Array, params, static: StaticEnvParams) -> EnvState:
    """Build the initial state of one world from one params row (see `CrafterParams`)."""
    size = static.map_size
    start = jnp.array([size[0] // 2, size[1] // 2])
    # Noise near the start is pushed down so the spawn area stays open grass.
    near_start = jnp.clip(get_distance_map(start, static).astype(jnp.float32) / 5.0, 0.0, 1.0)

    rng, key = jax.random.split(rng)
    water = _fractal(key, static, (size[0] // 16, size[1] // 16)) + near_start - 1.0 + params.water_shift
    rng, _ = jax.random.split(rng)  # upstream draws and discards a key here; keep the order for parity
    map_ = jnp.where(water > 0.7, WATER, GRASS)
    sand = (water < 0.75) & (water > params.sand_low) & (map_ != WATER)
    map_ = jnp.where(sand, SAND, map_)

    rng, key = jax.random.split(rng)
    mountain = _fractal(key, static, (size[0] // 16, size[1] // 16)) + 0.05 + near_start - 1.0 + params.mountain_shift
    map_ = jnp.where(mountain > 0.7, STONE, map_)

    rng, key = jax.random.split(rng)
    tunnels = _fractal(key, static, (size[0] // 8, size[1] // 2))
    map_ = jnp.where((mountain > 0.7) & (tunnels > 0.8), PATH, map_)
    map_ = jnp.where((mountain > 0.7) & (tunnels.T > 0.8), PATH, map_)
    rng, _ = jax.random.split(rng)
    map_ = jnp.where((mountain > 0.85) & (water > 0.4), PATH, map_)  # caves

    rng, key = jax.random.split(rng)
    coal_draw = jax.random.uniform(key, size)
    map_ = jnp.where((map_ == STONE) & (coal_draw < params.coal_chance), COAL, map_)
    rng, key = jax.random.split(rng)
    iron_draw = jax.random.uniform(key, size)
    map_ = jnp.where((map_ == STONE) & (iron_draw < params.iron_chance), IRON, map_)
    rng, key = jax.random.split(rng)
    diamond_draw = jax.random.uniform(key, size)
    map_ = jnp.where((mountain > 0.8) & (diamond_draw < params.diamond_chance) & (map_ == STONE), DIAMOND, map_)

    rng, key = jax.random.split(rng)
    forest = _fractal(key, static, (size[0] // 4, size[1] // 4)) + params.forest_shift
    # Upstream draws the tree uniforms from the parent key (not a fresh split); parity needs the same.
    tree = ((forest > 0.5) * jax.random.uniform(rng, size) > params.tree_threshold) & (map_ == GRASS)
    map_ = jnp.where(tree, TREE, map_)
    map_ = jnp.where((mountain > 0.85) & (forest > 0.7), LAVA, map_)

    # Guarantees (no-ops for the natural biome, so the original config keeps upstream parity).
    feature_key = jax.random.fold_in(rng, 1)  # a side key: does not disturb upstream's split chain
    map_ = jnp.where(params.ensure_water & _box(static, start, POND), WATER, map_)
    ore_draw = jax.random.uniform(feature_key, size)
    ores = jnp.where(ore_draw < params.coal_chance, COAL, jnp.where(ore_draw > 1.0 - params.iron_chance, IRON, STONE))
    ores = jnp.where(_cell(static, start, OUTCROP_COAL), COAL, jnp.where(_cell(static, start, OUTCROP_IRON), IRON, ores))
    map_ = jnp.where(params.ensure_stone & _box(static, start, OUTCROP), ores, map_)
    map_ = jnp.where(params.table_nearby & _cell(static, start, TABLE_AT), TABLE, map_)
    map_ = jnp.where(params.furnace_nearby & _cell(static, start, FURNACE_AT), FURNACE, map_)
    map_ = map_.at[start[0], start[1]].set(GRASS)

    # Upstream's "always_diamond": one random stone tile becomes diamond. Guarded, because with no stone at all the
    # choice has NaN probabilities and upstream writes the diamond to cell (0, 0).
    stone = (map_.flatten() == STONE).astype(jnp.float32)
    has_stone = stone.sum() > 0
    rng, key = jax.random.split(rng)
    index = weighted_choice(key, size[0] * size[1], (), stone / jnp.maximum(stone.sum(), 1.0))
    row, col = index // size[0], index % size[0]
    diamond_block = jax.lax.select(params.always_diamond, DIAMOND, STONE)
    map_ = map_.at[row, col].set(jnp.where(has_stone, diamond_block, map_[row, col]))

    rng, state_key = jax.random.split(rng)
    return _initial_state(map_, start, params, static, state_key)


def _mobs(n: int, health) -> Mobs:
    return Mobs(position=jnp.zeros((n, 2), jnp.int32), health=jnp.ones(n, jnp.int32) * health,
                mask=jnp.zeros(n, bool), attack_cooldown=jnp.zeros(n, jnp.int32))


def _initial_state(map_, start, params, static: StaticEnvParams, state_key) -> EnvState:
    inventory = Inventory(*[params.inventory[i].astype(jnp.int32) for i in range(12)])
    return EnvState(
        map=map_.astype(jnp.int32),
        mob_map=jnp.zeros(static.map_size, bool),
        player_position=start,
        # Strong dtypes throughout: a weak-typed leaf would change type after one step and retrace jitted loops.
        player_direction=jnp.int32(Action.UP.value),
        player_health=jnp.int32(9), player_food=jnp.int32(9), player_drink=jnp.int32(9), player_energy=jnp.int32(9),
        player_recover=jnp.float32(0.0), player_hunger=jnp.float32(0.0), player_thirst=jnp.float32(0.0),
        player_fatigue=jnp.float32(0.0),
        is_sleeping=jnp.bool_(False),
        inventory=inventory,  # a starting inventory unlocks nothing: achievements stay all False
        zombies=_mobs(static.max_zombies, 1),
        skeletons=_mobs(static.max_skeletons, 0),
        arrows=_mobs(static.max_arrows, 0),
        arrow_directions=jnp.ones((static.max_arrows, 2), jnp.int32),
        cows=_mobs(static.max_cows, params.cow_health),
        growing_plants_positions=jnp.zeros((static.max_growing_plants, 2), jnp.int32),
        growing_plants_age=jnp.zeros(static.max_growing_plants, jnp.int32),
        growing_plants_mask=jnp.zeros(static.max_growing_plants, bool),
        achievements=jnp.zeros((len(Achievement),), bool),
        light_level=calculate_light_level(0, params),
        state_rng=state_key,
        timestep=jnp.int32(0),
    )
