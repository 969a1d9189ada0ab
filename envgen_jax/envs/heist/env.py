"""Procgen Heist as a gymnax-style JAX environment whose every level can follow its own designer config.

    env = HeistEnv(mode="hard", obs="pixels")          # static: world size and observation kind
    bank = env.make_params([HeistConfig.original(), HeistConfig(num_keys=1)])   # an envs.bank.Bank: leading axis K
    params = bank.get(config_ids)                       # one row per env, e.g. under vmap
    obs, state = env.reset(key, params)
    obs, state, reward, done, info = env.step(key, state, action, params)

One env is written; batch it with `jax.vmap(env.reset)` / `jax.vmap(env.step)` with params mapped on axis 0. Only
`self` is static, so new param values (a new bank) never recompile. There is no auto-reset: after `done` the state
is stale and the caller resets it.

Rewards and ends as in Procgen: +10 when the agent touches the gem, which ends the episode
(`info["truncated"]` False); at `max_episode_steps` (Procgen: 1000) the episode ends with reward 0 and
`info["truncated"]` True. `info["achievements"]` are the episode's subtask events so far (ACHIEVEMENTS order) and
`info["achievements_available"]` says which of them the level offers: a key that is in the maze, a lock that exists,
and always the gem. Rates over episodes should count only episodes where the subtask was available.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envgen_jax.envs.bank import Bank
from envgen_jax.envs.heist import maze, physics, render
from envgen_jax.envs.heist.config import DISTANCES, KEY_COLOURS, WORLD_DIMS, HeistConfig
from envgen_jax.schema import ConfigError

COMPLETION_BONUS = 10.0
ACHIEVEMENTS = (*(f"collect_key_{c}" for c in KEY_COLOURS), *(f"open_lock_{c}" for c in KEY_COLOURS),
                "collect_gem")
OBS_KINDS = ("pixels", "symbolic")


@struct.dataclass
class HeistParams:
    """Traced per-level settings (see HeistConfig). Every leaf has the same leading axes; in a bank, [K]."""

    maze_dim: jax.Array       # int32: 5..13 odd, or -1 = Procgen's draw
    num_keys: jax.Array       # int32: 0..3, or -1 = Procgen's draw
    key_distance: jax.Array   # int32: index in config.DISTANCES (any, near, far)
    gem_distance: jax.Array   # int32: index in config.DISTANCES
    start_keys: jax.Array     # bool[..., 3]: keys held at the start (blue, green, red)
    max_steps: jax.Array      # int32: episode cut-off


@struct.dataclass
class HeistState:
    level: maze.Level        # the level as generated: walls, cells, sizes (kept for statistics and tests)
    door_present: jax.Array  # bool[3]: a locked door still stands
    key_pos: jax.Array       # float32[3, 2] centre (x, y)
    key_present: jax.Array   # bool[3]: the key lies in the maze
    gem_pos: jax.Array       # float32[2]
    gem_present: jax.Array   # bool
    has_keys: jax.Array      # bool[3]
    pos: jax.Array           # float32[2] agent centre
    vel: jax.Array           # float32[2]
    time: jax.Array          # int32 steps taken
    achievements: jax.Array  # bool[7]
    available: jax.Array     # bool[7]

    @property
    def walls(self) -> jax.Array:  # bool[W, W], [y, x], y up
        return self.level.walls

    @property
    def door_cell(self) -> jax.Array:  # int32[3, 2] (x, y)
        return self.level.door_cell


def config_to_params(config: HeistConfig) -> HeistParams:
    """One level's settings as host arrays (without a row axis: building a bank compiles nothing)."""
    return HeistParams(
        maze_dim=np.asarray(config.maze_dim, np.int32),
        num_keys=np.asarray(config.num_keys, np.int32),
        key_distance=np.asarray(DISTANCES.index(config.key_distance), np.int32),
        gem_distance=np.asarray(DISTANCES.index(config.gem_distance), np.int32),
        start_keys=np.asarray(config.start_keys, bool),
        max_steps=np.asarray(config.max_episode_steps, np.int32),
    )


def make_params(configs: HeistConfig | Mapping | Sequence[HeistConfig | Mapping],
                world_dim: int = WORLD_DIMS["hard"], capacity: int | None = None) -> Bank:
    """A bank (`envs.bank.Bank`) of configs (HeistConfig objects or designer JSON dicts), padded to `capacity` rows
    when given.

    Every problem, including a maze that does not fit `world_dim`, is raised in one ConfigError whose field paths
    start with `configs[i]`."""
    if isinstance(configs, (HeistConfig, Mapping)):
        configs = [configs]
    rows, problems = [], []
    for index, config in enumerate(configs):
        where = f"configs[{index}]"
        if isinstance(config, Mapping):
            found = HeistConfig.collect_problems(config, where)
            if found:
                problems += found
                continue
            config = HeistConfig.from_dict(config, where)
        problems += config.fit_problems(world_dim, where)
        rows.append(config)
    if problems:
        raise ConfigError(problems, what="heist configurations")
    if not rows:
        raise ConfigError(["configs: expected at least one configuration"], what="heist configurations")
    return Bank.from_configs(rows, config_to_params, capacity)


class HeistEnv:
    """Heist with a static world size (`mode` "easy" = 9, "hard" = 13, Procgen's default) and observation kind."""

    num_actions = physics.NUM_ACTIONS
    achievement_names = ACHIEVEMENTS

    def __init__(self, mode: str = "hard", obs: str = "pixels", world_dim: int | None = None):
        if obs not in OBS_KINDS:
            raise ValueError(f"obs: {obs!r} is not one of {OBS_KINDS}")
        if world_dim is None:
            if mode not in WORLD_DIMS:
                raise ValueError(f"mode: {mode!r} is not one of {tuple(WORLD_DIMS)} (memory mode is not modelled)")
            world_dim = WORLD_DIMS[mode]
        if world_dim < maze.MIN_MAZE_DIM or world_dim % 2 == 0:
            raise ValueError(f"world_dim: {world_dim} must be odd and at least {maze.MIN_MAZE_DIM}")
        self.world_dim = int(world_dim)
        self.mode = {v: k for k, v in WORLD_DIMS.items()}.get(self.world_dim, f"world_dim={self.world_dim}")
        self.obs_kind = obs

    def __repr__(self) -> str:
        return f"HeistEnv(world_dim={self.world_dim}, obs={self.obs_kind!r})"

    @property
    def obs_shape(self) -> tuple[int, ...]:
        if self.obs_kind == "pixels":
            return (64, 64, 3)
        return (self.world_dim, self.world_dim, len(render.SYMBOLIC_CHANNELS))

    @property
    def obs_dtype(self):
        return jnp.uint8 if self.obs_kind == "pixels" else jnp.float32

    def make_params(self, configs, capacity: int | None = None) -> Bank:
        return make_params(configs, self.world_dim, capacity)

    @property
    def default_params(self) -> HeistParams:
        """Procgen's own distribution for this mode, one unbatched row."""
        return config_to_params(HeistConfig.original())

    def observe(self, state: HeistState) -> jax.Array:
        if self.obs_kind == "pixels":
            return render.pixels(state, self.world_dim)
        return render.symbolic(state, self.world_dim)

    # -----------------------------------------------------------------------------------------------------------

    def reset(self, key: jax.Array, params: HeistParams) -> tuple[jax.Array, HeistState]:
        k_level, k_keys, k_gem = jax.random.split(key, 3)
        level = maze.generate(k_level, params, self.world_dim)
        # Keys and the gem are spawned at a uniform spot of their cell that keeps a 0.375 radius inside it.
        key_pos = level.key_cell + 0.375 + 0.25 * jax.random.uniform(k_keys, (3, 2))
        gem_pos = level.gem_cell + 0.375 + 0.25 * jax.random.uniform(k_gem, (2,))
        has_keys = params.start_keys & level.door_exists
        available = jnp.concatenate([level.key_exists, level.door_exists, jnp.array([True])])
        state = HeistState(
            level=level,
            door_present=level.door_exists,
            key_pos=key_pos.astype(jnp.float32),
            key_present=level.key_exists,
            gem_pos=gem_pos.astype(jnp.float32),
            gem_present=jnp.array(True),
            has_keys=has_keys,
            pos=(level.agent_cell + 0.5).astype(jnp.float32),
            vel=jnp.zeros(2, jnp.float32),
            time=jnp.int32(0),
            achievements=jnp.zeros(len(ACHIEVEMENTS), bool),
            available=available,
        )
        return self.observe(state), state

    def step(self, key: jax.Array, state: HeistState, action: jax.Array, params: HeistParams):
        door_centre = state.door_cell.astype(jnp.float32) + 0.5
        locked = state.door_present & ~state.has_keys
        coin = jax.random.bernoulli(key)
        pos, vel = physics.move(state.walls, locked, door_centre, state.pos, state.vel, action, coin)

        def touching(centre, rx, ry):
            return (jnp.abs(pos[0] - centre[..., 0]) < physics.AGENT_R + rx) & \
                   (jnp.abs(pos[1] - centre[..., 1]) < physics.AGENT_R + ry)

        got_key = state.key_present & touching(state.key_pos, physics.KEY_RX, physics.KEY_RY)
        has_keys = state.has_keys | got_key
        opened = state.door_present & has_keys & touching(door_centre, physics.DOOR_R, physics.DOOR_R)
        got_gem = state.gem_present & touching(state.gem_pos, physics.GEM_RX, physics.GEM_RY)

        time = state.time + 1
        timeout = time >= params.max_steps
        events = jnp.concatenate([got_key, opened, got_gem[None]])
        state = state.replace(
            pos=pos, vel=vel, time=time, has_keys=has_keys,
            key_present=state.key_present & ~got_key,
            door_present=state.door_present & ~opened,
            gem_present=state.gem_present & ~got_gem,
            achievements=state.achievements | events,
        )
        reward = jnp.where(got_gem, COMPLETION_BONUS, 0.0).astype(jnp.float32)
        done = got_gem | timeout
        info = {
            "truncated": timeout & ~got_gem,
            "achievements": state.achievements,
            "achievements_available": state.available,
            "success": got_gem,
        }
        return self.observe(state), state, reward, done, info
