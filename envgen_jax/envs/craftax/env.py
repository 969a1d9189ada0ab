"""Full Craftax ("Craftax-Symbolic-v1") with per-environment configuration as traced arrays.

`CraftaxEnv` is the gymnax-style single environment (vmap it; `envs.vector.VecEnv` batches and auto-resets it). Its
step runs craftax's own game functions, imported, in the game's order; only the mob spawner is ours (spawn.py: the
spawn table is per environment). World generation feeds craftax's floor generators each row's settings
(worldgen.py). With `CraftaxConfig.original()` both are craftax's environment, bit for bit (tested).

The state is craftax's `EnvState` plus `given`: the achievements marked at reset (the starting inventory's, the
floors above the start). They pay no reward and are reported as not available in that episode, so a designed world
never counts a skill as learned that the agent did not perform.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
from craftax.craftax.constants import ACHIEVEMENT_REWARD_MAP, OBS_DIM, Achievement, Action, BlockType, ItemType
from craftax.craftax.craftax_state import EnvState, StaticEnvParams
from craftax.craftax.game_logic import (boss_logic, calculate_inventory_achievements, calculate_light_level,
                                        cast_spell, change_floor, do_action, do_crafting, drink_potion, enchant,
                                        is_game_over, level_up_attributes, move_player, place_block, read_book,
                                        shoot_projectile, update_mobs, update_plants, update_player_intrinsics)
from craftax.craftax.renderer import render_craftax_symbolic
from craftax.craftax.util.game_logic_utils import clip_inventory_and_intrinsics, has_beaten_boss
from flax import struct

from envgen_jax.envs.bank import Bank
from envgen_jax.envs.craftax import config as C
from envgen_jax.envs.craftax.params import CraftaxParams, config_to_params, make_params
from envgen_jax.envs.craftax.spawn import spawn_mobs
from envgen_jax.envs.craftax.worldgen import generate_world

ACHIEVEMENTS = tuple(a.name.lower() for a in sorted(Achievement, key=lambda a: a.value))  # craftax's index order
NUM_ACTIONS = len(Action)
MAX_RETURN = int(ACHIEVEMENT_REWARD_MAP.sum())  # 226: every achievement once (the health reward nets out)
# The reward of each achievement's first unlock in an episode (1, 3, 5 or 8 by its tier), by name.
ACHIEVEMENT_REWARDS = dict(zip(ACHIEVEMENTS, (float(r) for r in ACHIEVEMENT_REWARD_MAP.tolist())))
MAP_CHANNELS = len(BlockType) + len(ItemType) + 5 * 8 + 1  # blocks, items, 5 mob classes x 8 types, light


@struct.dataclass
class CraftaxState:
    game: EnvState       # craftax's own state
    given: jax.Array     # bool[67]: marked at reset, not earnable in this episode


def craftax_game_step(rng, state: EnvState, action, params, static: StaticEnvParams):
    """One step of the game: craftax's functions in craftax's order (its `craftax_step`), our spawner."""
    achievements, health = state.achievements, state.player_health
    action = jax.lax.select(state.is_sleeping | state.is_resting, Action.NOOP.value, action)
    state = change_floor(state, action, params, static)
    state = do_crafting(state, action)
    rng, key = jax.random.split(rng)
    state = do_action(key, state, action, static)
    state = place_block(state, action, static)
    state = shoot_projectile(state, action, static)
    state = cast_spell(state, action, static)
    state = drink_potion(state, action)
    rng, key = jax.random.split(rng)
    state = read_book(key, state, action)
    rng, key = jax.random.split(rng)
    state = enchant(key, state, action)
    state = boss_logic(state, static)
    state = level_up_attributes(state, action, params)
    state = move_player(state, action, params)
    rng, key = jax.random.split(rng)
    state = update_mobs(key, state, params, static)
    rng, key = jax.random.split(rng)
    state = spawn_mobs(state, key, params, static)
    state = update_plants(state, static)
    state = update_player_intrinsics(state, action, static)
    state = clip_inventory_and_intrinsics(state, params)
    state = calculate_inventory_achievements(state)
    unlocked = state.achievements.astype(int) - achievements.astype(int)
    reward = (unlocked * ACHIEVEMENT_REWARD_MAP).sum() + (state.player_health - health) * 0.1
    rng, key = jax.random.split(rng)
    state = state.replace(timestep=state.timestep + 1, light_level=calculate_light_level(state.timestep + 1, params),
                          state_rng=key)
    return state, reward


@dataclasses.dataclass(frozen=True)
class CraftaxEnv:
    """One full-Craftax environment with traced, per-environment params (vmap it over envs and params rows).

    observation: "symbolic" only (f32[8268], craftax's symbolic view: a 9 x 11 local map of 83 channels, then 51
    numbers of inventory, vitals and the rest).
    """

    observation: str = "symbolic"
    static: StaticEnvParams = StaticEnvParams()

    def __post_init__(self):
        if self.observation != "symbolic":
            raise ValueError(f"observation: full Craftax runs 'symbolic' observations only, got {self.observation!r}")

    num_actions = NUM_ACTIONS
    achievement_names = ACHIEVEMENTS
    obs_dtype = jnp.float32
    map_shape = (*OBS_DIM, MAP_CHANNELS)  # the local map at the start of the observation ('map' networks)

    @property
    def obs_shape(self) -> tuple[int, ...]:
        return (OBS_DIM[0] * OBS_DIM[1] * MAP_CHANNELS + 51,)

    def make_params(self, configs: Sequence[C.CraftaxConfig], capacity: int | None = None) -> Bank:
        return make_params(configs, capacity)

    def default_params(self) -> CraftaxParams:
        return config_to_params(C.CraftaxConfig.original())

    def observe(self, state: CraftaxState) -> jax.Array:
        return render_craftax_symbolic(state.game)

    def reset(self, key: jax.Array, params: CraftaxParams) -> tuple[jax.Array, CraftaxState]:
        _, key = jax.random.split(key)  # craftax's reset_env keeps the second key for the world
        game = generate_world(key, params, self.static)
        state = CraftaxState(game=game, given=game.achievements)
        return self.observe(state), state

    def step(self, key: jax.Array, state: CraftaxState, action, params: CraftaxParams):
        game, reward = craftax_game_step(key, state.game, action, params, self.static)
        state = state.replace(game=game)
        done = is_game_over(game, params, self.static)
        ended_early = (game.player_health <= 0) | has_beaten_boss(game, self.static)
        info = {"truncated": done & ~ended_early, "achievements": game.achievements & ~state.given,
                "achievements_available": ~state.given}
        return self.observe(state), state, reward, done, info
