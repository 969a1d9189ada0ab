"""Mob spawning with each environment's own spawn table.

craftax's `spawn_mobs` reads the spawn chances from a module constant (`FLOOR_MOB_SPAWN_CHANCE`), so a per-env rate
cannot reach it. This is our own spawner, written from the game's rules, that takes the table from the params row
(`CraftaxParams.spawn_chance`, f32[9, 4]: passive, melee, ranged, melee at night). It draws its random numbers in
craftax's order, so with craftax's table it spawns the same mobs in the same cells (tested against craftax's own
function on every floor).

The rules, per step and per class (passive, then melee, then ranged), on the player's floor:
- a class spawns at most one mob, when it has a free slot, a uniform draw falls under its chance, and some cell is
  allowed; the cell is drawn uniformly from the allowed ones;
- monsters' chances are tripled on a floor not yet cleared; in the boss fight they spawn on graves near the player,
  in waves (chance x1000), and no passive mob spawns;
- melee monsters add the night term (chance x (1 - light)^2); ranged ones of the deep-thing kind spawn in water;
- passive mobs appear more than 3 cells away, monsters more than 9 (boss fight: within 6), all closer than the
  despawn distance, never on a cell that holds a mob.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from craftax.craftax.constants import (FLOOR_MOB_MAPPING, MOB_TYPE_HEALTH_MAPPING, MONSTERS_KILLED_TO_CLEAR_LEVEL,
                                       BlockType, MobType)
from craftax.craftax.util.game_logic_utils import is_boss_spawn_wave, is_fighting_boss
from craftax.craftax.util.maths_utils import get_distance_map

DEEP_THING = 5  # the ranged mob type that lives in water (FLOOR_MOB_MAPPING)


def _add_mob(state, rng, field: str, kind: MobType, mob_type, chance, allowed, cells, cap: int):
    """One spawn attempt of one class: two keys, drawn in craftax's order (the chance, then the cell)."""
    level = state.player_level
    mobs = getattr(state, field)
    size = state.map.shape[1:]
    rng, key = jax.random.split(rng)
    spawn = (mobs.mask[level].sum() < cap) & (jax.random.uniform(key) < chance) & allowed & (cells.sum() > 0)
    rng, key = jax.random.split(rng)
    flat = jax.random.choice(key, jnp.arange(size[0] * size[1]), shape=(1,),
                             p=jnp.reshape(cells, -1) / jnp.sum(cells))[0]
    cell = jnp.stack([flat // size[0], flat % size[1]]).astype(jnp.int32)
    slot = jnp.argmax(~mobs.mask[level])

    def put(values, new):
        return values.at[level, slot].set(jax.lax.select(spawn, new, values[level, slot]))

    mobs = mobs.replace(position=put(mobs.position, cell),
                        health=put(mobs.health, MOB_TYPE_HEALTH_MAPPING[mob_type, kind.value]),
                        mask=put(mobs.mask, True),
                        type_id=mobs.type_id.at[level, slot].set(mob_type))
    where = mobs.position[level, slot]
    mob_map = state.mob_map.at[level, where[0], where[1]].set(state.mob_map[level, where[0], where[1]] |
                                                              mobs.mask[level, slot])
    return state.replace(**{field: mobs}, mob_map=mob_map), rng


def spawn_mobs(state, rng, params, static):
    """craftax's `spawn_mobs` with the spawn table taken from `params.spawn_chance`."""
    level = state.player_level
    floor_map = state.map[level]
    distance = get_distance_map(state.player_position, static.map_size)
    boss = is_fighting_boss(state, static)
    table = params.spawn_chance[level]
    coeff = 1 + (state.monsters_killed[level] < MONSTERS_KILLED_TO_CLEAR_LEVEL) * 2
    coeff = coeff * jax.lax.select(boss, is_boss_spawn_wave(state, static) * 1000, 1)
    walkable = ((floor_map == BlockType.GRASS.value) | (floor_map == BlockType.PATH.value) |
                (floor_map == BlockType.FIRE_GRASS.value) | (floor_map == BlockType.ICE_GRASS.value))
    graves = ((floor_map == BlockType.GRAVE.value) | (floor_map == BlockType.GRAVE2.value) |
              (floor_map == BlockType.GRAVE3.value))

    def free(cells):
        return cells & (distance < params.mob_despawn_distance) & ~state.mob_map[level]

    passive_type = FLOOR_MOB_MAPPING[level, MobType.PASSIVE.value]
    state, rng = _add_mob(state, rng, "passive_mobs", MobType.PASSIVE, passive_type, table[0], ~boss,
                          free(walkable & (distance > 3)), static.max_passive_mobs)

    monster_range = jax.lax.select(boss, distance <= 6, distance > 9)

    def monster_type(kind: MobType):
        return jax.lax.select(boss, FLOOR_MOB_MAPPING[state.boss_progress, kind.value],
                              FLOOR_MOB_MAPPING[level, kind.value])

    def free_now(cells):  # the mob map as the previous spawn left it
        return cells & monster_range & (distance < params.mob_despawn_distance) & ~state.mob_map[level]

    melee_chance = (table[1] + table[3] * jnp.square(1 - state.light_level)) * coeff
    melee_cells = jax.lax.select(boss, graves, walkable)
    state, rng = _add_mob(state, rng, "melee_mobs", MobType.MELEE, monster_type(MobType.MELEE), melee_chance,
                          jnp.bool_(True), free_now(melee_cells), static.max_melee_mobs)

    ranged_type = monster_type(MobType.RANGED)
    ranged_cells = jax.lax.select(ranged_type == DEEP_THING, floor_map == BlockType.WATER.value, walkable)
    ranged_cells = jax.lax.select(boss, graves, ranged_cells)
    state, _ = _add_mob(state, rng, "ranged_mobs", MobType.RANGED, ranged_type, table[2] * coeff, jnp.bool_(True),
                        free_now(ranged_cells), static.max_ranged_mobs)
    return state
