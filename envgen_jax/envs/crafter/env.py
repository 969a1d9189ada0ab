"""Craftax-Classic with per-environment configuration as traced arrays.

`CrafterParams` extends craftax's `EnvParams` with the world-generation and start-state numbers that EnvGen's knobs
control. Everything in it is a traced leaf, so a bank of K configurations (`envs.bank.Bank`) is one pytree with a
leading [K] axis, and writing new LLM configurations into the bank never recompiles anything.

`CrafterEnv` is the gymnax-style single environment (vmap it; see `envs.vector.VecEnv` for the batched, auto-resetting
version). Stepping is craftax's own `craftax_step`, imported, not copied.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from craftax.craftax_classic.constants import OBS_DIM, Achievement, BlockType
from craftax.craftax_classic.envs.craftax_state import EnvParams, EnvState, StaticEnvParams
from craftax.craftax_classic.game_logic import craftax_step, is_game_over
from craftax.craftax_classic.renderer import render_craftax_symbolic
from flax import struct

from envgen_jax.envs.bank import Bank
from envgen_jax.envs.crafter import config as C
from envgen_jax.envs.crafter.worldgen import LAVA, generate_world

ACHIEVEMENTS = tuple(a.name.lower() for a in Achievement)  # craftax's order (not Crafter's alphabetical one)
NUM_ACTIONS = 17


@struct.dataclass
class CrafterParams(EnvParams):
    """craftax's EnvParams plus our world-generation knobs. Defaults reproduce Craftax-Classic exactly."""

    water_shift: float = 0.0
    mountain_shift: float = 0.0
    sand_low: float = 0.6
    forest_shift: float = 0.0
    ensure_water: bool = False
    ensure_stone: bool = False
    coal_chance: float = 0.04
    iron_chance: float = 0.03
    diamond_chance: float = 0.005
    tree_threshold: float = 0.8
    table_nearby: bool = False
    furnace_nearby: bool = False
    inventory: jax.Array = dataclasses.field(default_factory=lambda: jnp.zeros(12, jnp.int32))


def config_to_params(cfg: C.CrafterConfig) -> CrafterParams:
    """The numbers behind one configuration's words (see config.py for the tables)."""
    biome = C.BIOME_SHAPES[cfg.target_biome]
    rarity = C.RARITIES.index
    freq = C.FREQUENCIES.index
    zombies = 0 if cfg.peaceful else freq(cfg.zombies)
    skeletons = 0 if cfg.peaceful else freq(cfg.skeletons)
    # Host arrays with strong dtypes: the bank must not change weak types, and building it compiles nothing.
    f32 = lambda x: np.asarray(x, np.float32)  # noqa: E731
    i32 = lambda x: np.asarray(x, np.int32)  # noqa: E731
    b = lambda x: np.asarray(x, bool)  # noqa: E731
    base = EnvParams()
    return CrafterParams(
        max_timesteps=i32(cfg.episode_length),
        day_length=i32(cfg.day_length),
        always_diamond=b(base.always_diamond),
        zombie_health=i32(base.zombie_health),
        cow_health=i32(base.cow_health),
        skeleton_health=i32(base.skeleton_health),
        mob_despawn_distance=i32(base.mob_despawn_distance),
        spawn_cow_chance=f32(C.COW_CHANCE[freq(cfg.cows)]),
        spawn_zombie_base_chance=f32(C.ZOMBIE_BASE_CHANCE[zombies]),
        spawn_zombie_night_chance=f32(C.ZOMBIE_NIGHT_CHANCE[zombies]),
        spawn_skeleton_chance=f32(C.SKELETON_CHANCE[skeletons]),
        water_shift=f32(biome.water_shift),
        mountain_shift=f32(biome.mountain_shift),
        sand_low=f32(biome.sand_low),
        forest_shift=f32(biome.forest_shift),
        ensure_water=b(biome.ensure_water),
        ensure_stone=b(biome.ensure_stone),
        coal_chance=f32(C.COAL_CHANCE[rarity(cfg.coal_rarity)]),
        iron_chance=f32(C.IRON_CHANCE[rarity(cfg.iron_rarity)]),
        diamond_chance=f32(C.DIAMOND_CHANCE[rarity(cfg.diamond_rarity)]),
        tree_threshold=f32(C.TREE_THRESHOLD[rarity(cfg.tree_rarity)]),
        table_nearby=b(cfg.table_nearby),
        furnace_nearby=b(cfg.furnace_nearby),
        inventory=i32(cfg.inventory()),
    )


def make_params(configs: Sequence[C.CrafterConfig], capacity: int | None = None) -> Bank:
    """A bank of configurations (`envs.bank.Bank`), padded to `capacity` rows when given."""
    return Bank.from_configs(configs, config_to_params, capacity)


@dataclasses.dataclass(frozen=True)
class CrafterEnv:
    """One Craftax-Classic environment with traced, per-environment params (vmap it over envs and params rows).

    observation: "symbolic" (f32[1345], craftax's symbolic view) or "pixels" (u8[63, 63, 3], craftax's pixel view
    rounded to bytes: a quarter of the float rollout memory; the network scales it to [0, 1]. The first use builds
    craftax's texture cache, ~20 s once per install).
    """

    observation: str = "symbolic"
    static: StaticEnvParams = StaticEnvParams()

    def __post_init__(self):
        if self.observation not in ("symbolic", "pixels"):
            raise ValueError(f"observation must be 'symbolic' or 'pixels', got {self.observation!r}")

    num_actions = NUM_ACTIONS
    achievement_names = ACHIEVEMENTS

    @property
    def obs_shape(self) -> tuple[int, ...]:
        return (1345,) if self.observation == "symbolic" else (63, 63, 3)

    @property
    def map_shape(self) -> tuple[int, int, int] | None:
        """The local map at the start of the symbolic vector: 7 x 9 cells, one-hot block types then 4 mob types
        (craftax's render_craftax_symbolic); None for pixels. The 'map' network reads it as a grid."""
        if self.observation != "symbolic":
            return None
        return (*OBS_DIM, len(BlockType) + 4)

    @property
    def obs_dtype(self):
        return jnp.float32 if self.observation == "symbolic" else jnp.uint8

    def make_params(self, configs: Sequence[C.CrafterConfig], capacity: int | None = None) -> Bank:
        return make_params(configs, capacity)

    def default_params(self) -> CrafterParams:
        return config_to_params(C.CrafterConfig.original())

    def observe(self, state: EnvState) -> jax.Array:
        if self.observation == "symbolic":
            return render_craftax_symbolic(state)
        pixels = _pixel_renderer()(state)  # float in [0, 255]
        return jnp.round(jnp.clip(pixels, 0.0, 255.0)).astype(jnp.uint8)

    def reset(self, key: jax.Array, params: CrafterParams) -> tuple[jax.Array, EnvState]:
        state = generate_world(key, params, self.static)
        return self.observe(state), state

    def step(self, key: jax.Array, state: EnvState, action, params: CrafterParams):
        state, reward = craftax_step(key, state, action, params, self.static)
        done = is_game_over(state, params)
        died = (state.player_health <= 0) | (state.map[state.player_position[0], state.player_position[1]] == LAVA)
        info = {"truncated": done & ~died, "achievements": state.achievements}
        return self.observe(state), state, reward, done, info


_RENDERER = []


def _pixel_renderer():
    # Imported lazily: building the renderer loads craftax's textures (writes a cache file on first use). The first
    # call may come while tracing; the textures are computed eagerly so that craftax's cache never keeps a tracer.
    if not _RENDERER:
        from craftax.craftax_classic.constants import BLOCK_PIXEL_SIZE_AGENT
        from craftax.craftax_classic.renderer import make_craftax_pixel_renderer
        with jax.ensure_compile_time_eval():
            _RENDERER.append(make_craftax_pixel_renderer(BLOCK_PIXEL_SIZE_AGENT))
    return _RENDERER[0]
