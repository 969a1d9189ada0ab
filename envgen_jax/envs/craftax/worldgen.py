"""Full-Craftax worlds from one params row: craftax's own floor generators fed each environment's settings.

craftax's `generate_world` reads its floors' settings from module constants; here the same generators
(`generate_smoothworld`, `generate_dungeon`, imported) get the row's `smoothgen` as an argument, the floors are put in
the game's order, and the start state is ours: the floor, vitals and inventory the row asks for. PRNG keys are
consumed in craftax's order, so the original configuration builds craftax's world, field for field (tested).

Starting below the overworld puts the player at the floor's ladder up, as arriving there would, with the floors
above counted as entered (their achievements marked, no reward) and cleared (their ladders down open); the XP the
game gives for entering each of them is given too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from craftax.craftax.constants import (BOSS_FIGHT_SPAWN_TURNS, LEVEL_ACHIEVEMENT_MAP, MONSTERS_KILLED_TO_CLEAR_LEVEL,
                                       Achievement, Action, BlockType)
from craftax.craftax.craftax_state import EnvState, Mobs, StaticEnvParams
from craftax.craftax.game_logic import calculate_inventory_achievements, calculate_light_level
from craftax.craftax.world_gen.world_gen import generate_dungeon, generate_smoothworld
from craftax.craftax.world_gen.world_gen_configs import ALL_DUNGEON_CONFIGS

from envgen_jax.envs.craftax import config as C

# Where each floor comes from: (smooth floors, dungeon floors) rows, in the game's order 0..8.
FLOOR_SOURCES = (("smooth", 0), ("dungeon", 0), ("smooth", 1), ("dungeon", 1), ("dungeon", 2), ("smooth", 2),
                 ("smooth", 3), ("smooth", 4), ("smooth", 5))


def _floors(rng, params, static: StaticEnvParams, start):
    """The nine floors (map, item map, light map, ladders down, ladders up), stacked in the game's order."""
    keys = jax.random.split(rng, 7)
    rng, smooth_keys = keys[0], keys[1:]
    smooth = jax.vmap(generate_smoothworld, in_axes=(0, None, None, 0, None))(
        smooth_keys, static, start, params.smoothgen, params)
    keys = jax.random.split(rng, 4)
    rng, dungeon_keys = keys[0], keys[1:]
    dungeon = jax.vmap(generate_dungeon, in_axes=(0, None, 0))(dungeon_keys, static, ALL_DUNGEON_CONFIGS)
    sources = {"smooth": smooth, "dungeon": dungeon}
    floors = jax.tree.map(lambda *floor: jnp.stack(floor),
                          *[jax.tree.map(lambda x, i=i: x[i], sources[kind]) for kind, i in FLOOR_SOURCES])
    return rng, floors


def _empty_mobs(static: StaticEnvParams, n: int) -> Mobs:
    floors = static.num_levels
    return Mobs(position=jnp.zeros((floors, n, 2), jnp.int32), health=jnp.ones((floors, n), jnp.float32),
                mask=jnp.zeros((floors, n), bool), attack_cooldown=jnp.zeros((floors, n), jnp.int32),
                type_id=jnp.zeros((floors, n), jnp.int32))


def _place_nearby(map_, floor, position, params, static: StaticEnvParams):
    """The table, furnace and diamond the row asks for, next to the start on the starting floor."""
    for wanted, offset, block in ((params.table_nearby, C.TABLE_AT, BlockType.CRAFTING_TABLE.value),
                                  (params.furnace_nearby, C.FURNACE_AT, BlockType.FURNACE.value),
                                  (params.diamond_nearby, C.DIAMOND_AT, BlockType.DIAMOND.value)):
        cell = jnp.clip(position + jnp.array(offset), 0, jnp.array(static.map_size) - 1)
        map_ = map_.at[floor, cell[0], cell[1]].set(jnp.where(wanted, block, map_[floor, cell[0], cell[1]]))
    return map_


def generate_world(rng, params, static: StaticEnvParams) -> EnvState:
    """The initial state of one world from one params row (`CraftaxParams`)."""
    centre = jnp.array([static.map_size[0] // 2, static.map_size[1] // 2])
    rng, (map_, item_map, light_map, ladders_down, ladders_up) = _floors(rng, params, static, centre)
    rng, key = jax.random.split(rng)
    potion_mapping = jax.random.permutation(key, jnp.arange(6))
    rng, state_key = jax.random.split(rng)

    floor = params.start_floor
    position = jnp.where(floor == 0, centre, ladders_up[floor])  # arriving by the ladder, as the game does
    map_ = _place_nearby(map_, floor, position, params, static)
    above = jnp.arange(static.num_levels) < floor
    killed = jnp.zeros(static.num_levels, jnp.int32).at[0].set(10)  # craftax opens the first ladder at once
    cleared = above | params.ladders_open
    killed = jnp.where(cleared, jnp.maximum(killed, MONSTERS_KILLED_TO_CLEAR_LEVEL), killed)
    entered = jnp.zeros(len(Achievement), bool).at[LEVEL_ACHIEVEMENT_MAP[1:]].set(jnp.arange(1, static.num_levels)
                                                                                 <= floor)
    health, food, drink, energy, mana = (params.vitals[i] for i in range(5))
    mobs = {name: _empty_mobs(static, n) for name, n in (
        ("melee_mobs", static.max_melee_mobs), ("ranged_mobs", static.max_ranged_mobs),
        ("passive_mobs", static.max_passive_mobs), ("mob_projectiles", static.max_mob_projectiles),
        ("player_projectiles", static.max_player_projectiles))}
    directions = {f"{name}_directions": jnp.ones((static.num_levels, n, 2), jnp.int32) for name, n in (
        ("mob_projectile", static.max_mob_projectiles), ("player_projectile", static.max_player_projectiles))}
    state = EnvState(
        map=map_, item_map=item_map, mob_map=jnp.zeros((static.num_levels, *static.map_size), bool),
        light_map=light_map, down_ladders=ladders_down, up_ladders=ladders_up,
        chests_opened=jnp.zeros(static.num_levels, bool), monsters_killed=killed,
        player_position=position, player_direction=jnp.asarray(Action.UP.value, jnp.int32),
        player_level=jnp.asarray(floor, jnp.int32),
        player_health=health.astype(jnp.float32), player_food=food, player_drink=drink, player_energy=energy,
        player_mana=mana,
        player_recover=jnp.float32(0.0), player_hunger=jnp.float32(0.0), player_thirst=jnp.float32(0.0),
        player_fatigue=jnp.float32(0.0), player_recover_mana=jnp.float32(0.0),
        is_sleeping=jnp.asarray(False), is_resting=jnp.asarray(False),
        player_xp=jnp.asarray(floor, jnp.int32),  # one XP for each floor entered
        player_dexterity=jnp.int32(1), player_strength=jnp.int32(1), player_intelligence=jnp.int32(1),
        inventory=jax.tree.map(lambda x: jnp.asarray(x, jnp.int32), params.inventory),
        sword_enchantment=jnp.int32(0), bow_enchantment=jnp.int32(0),
        armour_enchantments=jnp.zeros(4, jnp.int32),
        **mobs, **directions,
        growing_plants_positions=jnp.zeros((static.max_growing_plants, 2), jnp.int32),
        growing_plants_age=jnp.zeros(static.max_growing_plants, jnp.int32),
        growing_plants_mask=jnp.zeros(static.max_growing_plants, bool),
        potion_mapping=potion_mapping, learned_spells=jnp.array([False, False]),
        boss_progress=jnp.int32(0), boss_timesteps_to_spawn_this_round=jnp.int32(BOSS_FIGHT_SPAWN_TURNS),
        achievements=entered,
        light_level=jnp.asarray(calculate_light_level(0, params), jnp.float32),
        state_rng=state_key, timestep=jnp.int32(0))
    # What the starting inventory would mark on the first step is marked now, so it pays nothing (the free-reward
    # trap: craftax marks 19 achievements from the inventory on every step).
    return calculate_inventory_achievements(state)
