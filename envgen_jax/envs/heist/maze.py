"""Heist level generation in JAX: Procgen's `MazeGen::generate_maze_with_doors` and `HeistGame::game_reset`.

Shapes are static: every grid is `world_dim` x `world_dim` (a Python int), while the maze size, the number of doors
and the placement rules are traced values, so one compiled generator serves every config. Grids are indexed
`[y, x]` with y pointing up, as in Procgen's world; flat cell order is `y * world_dim + x`, the order Procgen's
`std::set<int>` iterates in, which decides which door the breadth-first search meets first.

The steps, each matching Procgen:
1. Randomised Kruskal over a fixed list of candidate walls in random order (`lax.scan` with a union-find by
   relabelling); rooms sit at even coordinates and walls left out of the maze are masked.
2. Door sites: `min(num_keys, #forks)` forks (open cells with more than 2 open neighbours), uniformly.
3. The agent starts on a uniform open cell that is neither a door nor next to one.
4. For door k = 0, 1, ...: breadth-first search (a flood with levels, in `lax.while_loop`) from everything reached
   so far; the first unnumbered door met (level by level, lowest cell index first) becomes door k; key k goes in
   the region newly reached without crossing a door. After the last door, the gem goes in the final new region.
5. The maze is shifted by a uniform offset inside the world; everything outside it is wall.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

NUM_COLOURS = 3
MIN_MAZE_DIM = 5
DISTANCE_SLACK = 2  # "near"/"far" placement: within this many cells of the closest/farthest candidate
ANY, NEAR, FAR = 0, 1, 2  # placement codes, the index in config.DISTANCES


@struct.dataclass
class Level:
    """One generated level in world coordinates. Cells are (x, y) int32 pairs."""

    walls: jax.Array        # bool[W, W], [y, x]
    door_cell: jax.Array    # int32[3, 2]
    door_exists: jax.Array  # bool[3]
    key_cell: jax.Array     # int32[3, 2]
    key_exists: jax.Array   # bool[3]: the key is in the maze (its door exists and it is not held at the start)
    gem_cell: jax.Array     # int32[2]
    agent_cell: jax.Array   # int32[2]
    maze_dim: jax.Array     # int32
    num_keys: jax.Array     # int32, as requested or drawn (Procgen's `num_keys`; doors may be fewer)


# ---------------------------------------------------------------------------------------------------------------
# Grid helpers (static shapes, [y, x]).

def neighbour(grid: jax.Array, dx: int, dy: int) -> jax.Array:
    """out[y, x] = grid[y + dy, x + dx], False (0) outside."""
    height, width = grid.shape
    padded = jnp.pad(grid, 1)
    return padded[1 + dy:1 + dy + height, 1 + dx:1 + dx + width]


def dilate(grid: jax.Array) -> jax.Array:
    return (grid | neighbour(grid, -1, 0) | neighbour(grid, 1, 0) | neighbour(grid, 0, -1)
            | neighbour(grid, 0, 1))


def count_neighbours(grid: jax.Array) -> jax.Array:
    grid = grid.astype(jnp.int32)
    return neighbour(grid, -1, 0) + neighbour(grid, 1, 0) + neighbour(grid, 0, -1) + neighbour(grid, 0, 1)


def sample_cell(key: jax.Array, mask: jax.Array) -> jax.Array:
    """Uniform flat index among True cells (0 when the mask is empty; callers guarantee it is not)."""
    scores = jnp.where(mask, jax.random.uniform(key, mask.shape), -1.0)
    return jnp.argmax(scores.ravel()).astype(jnp.int32)


def flood(start: jax.Array, passable: jax.Array) -> jax.Array:
    """Breadth-first levels from `start` through `passable` cells: 0 on start cells, n on cells first reached in
    the n-th expansion, and a large value (the cell count) on cells never reached."""
    unreached = jnp.int32(start.size)

    def grow(carry):
        level, frontier, seen, step = carry
        frontier = dilate(frontier) & passable & ~seen
        return jnp.where(frontier, step + 1, level), frontier, seen | frontier, step + 1

    init = (jnp.where(start, 0, unreached).astype(jnp.int32), start, start, jnp.int32(0))
    level, *_ = jax.lax.while_loop(lambda c: jnp.any(c[1]), grow, init)
    return level


def place(key: jax.Array, mask: jax.Array, dist: jax.Array, mode: jax.Array) -> jax.Array:
    """A flat cell index in `mask`: uniform (ANY), or among the nearest/farthest cells by `dist` (NEAR/FAR)."""
    big = jnp.int32(mask.size)
    nearest = jnp.min(jnp.where(mask, dist, big))
    farthest = jnp.max(jnp.where(mask, dist, -1))
    near = mask & (dist <= nearest + DISTANCE_SLACK)
    far = mask & (dist >= farthest - DISTANCE_SLACK)
    chosen = jnp.where(mode == NEAR, near, jnp.where(mode == FAR, far, mask))
    return sample_cell(key, chosen)


# ---------------------------------------------------------------------------------------------------------------
# Kruskal.

@functools.lru_cache(maxsize=None)
def _wall_table(world_dim: int):
    """Candidate walls of the largest maze that fits: (room a, room b, wall cell x, wall cell y) per row."""
    rooms = (world_dim + 1) // 2
    rows = []
    for j in range(rooms):
        for i in range(rooms):
            if i + 1 < rooms:
                rows.append((j * rooms + i, j * rooms + i + 1, 2 * i + 1, 2 * j))
            if j + 1 < rooms:
                rows.append((j * rooms + i, (j + 1) * rooms + i, 2 * i, 2 * j + 1))
    return np.array(rows, dtype=np.int32)


def kruskal(key: jax.Array, maze_dim: jax.Array, world_dim: int) -> jax.Array:
    """bool[W, W] open cells of a perfect `maze_dim` maze at the origin of a `world_dim` frame."""
    rooms = (world_dim + 1) // 2
    table = jnp.asarray(_wall_table(world_dim))
    room_i, room_j = np.meshgrid(np.arange(rooms), np.arange(rooms), indexing="xy")
    room_i, room_j = room_i.ravel(), room_j.ravel()  # room r = j * rooms + i sits at cell (2i, 2j)
    used_rooms = (maze_dim + 1) // 2
    room_valid = (jnp.asarray(room_i) < used_rooms) & (jnp.asarray(room_j) < used_rooms)
    wall_valid = room_valid[table[:, 0]] & room_valid[table[:, 1]]

    def knock(labels, wall):
        a, b = table[wall, 0], table[wall, 1]
        la, lb = labels[a], labels[b]
        join = wall_valid[wall] & (la != lb)
        labels = jnp.where(join & (labels == lb), la, labels)
        return labels, join

    order = jax.random.permutation(key, table.shape[0])
    _, joined = jax.lax.scan(knock, jnp.arange(rooms * rooms), order)
    opened = jnp.zeros(table.shape[0], bool).at[order].set(joined)
    grid = jnp.zeros((world_dim, world_dim), bool)
    grid = grid.at[2 * room_j, 2 * room_i].set(room_valid)
    return grid.at[table[:, 3], table[:, 2]].set(opened)


# ---------------------------------------------------------------------------------------------------------------
# Doors, keys and the gem.

def _first_door(level: jax.Array, unnumbered: jax.Array) -> jax.Array:
    """Procgen's `expand_to_type(.., DOOR)` from the levels of one flood: the first unnumbered door met searching
    level by level, lowest cell index first within a level; returned as a flat index."""
    width = level.shape[1]
    door_next = (neighbour(unnumbered, -1, 0) | neighbour(unnumbered, 0, -1) | neighbour(unnumbered, 0, 1)
                 | neighbour(unnumbered, 1, 0))
    index = jnp.arange(level.size, dtype=jnp.int32).reshape(level.shape)
    order = jnp.where(door_next & (level < level.size), level * level.size + index, jnp.iinfo(jnp.int32).max)
    cell = jnp.argmin(order.ravel())
    # Procgen's neighbour order: (x-1, y), (x, y-1), (x, y+1), (x+1, y).
    y, x = cell // width, cell % width
    ys, xs = y + jnp.array([0, -1, 1, 0]), x + jnp.array([-1, 0, 0, 1])
    inside = (ys >= 0) & (ys < width) & (xs >= 0) & (xs < width)
    is_door = inside & unnumbered[jnp.clip(ys, 0, width - 1), jnp.clip(xs, 0, width - 1)]
    pick = jnp.argmax(is_door)
    return (ys[pick] * width + xs[pick]).astype(jnp.int32)


def draw_size(key: jax.Array, maze_dim: jax.Array, num_keys: jax.Array, world_dim: int):
    """Procgen's joint draw of maze size and key count; values >= 0 set by the config override it."""
    k_difficulty, k_extra = jax.random.split(key)
    max_difficulty = (world_dim - MIN_MAZE_DIM) // 2
    difficulty = jax.random.randint(k_difficulty, (), 0, max_difficulty + 1)
    maze_dim = jnp.where(maze_dim > 0, maze_dim, 2 * difficulty + MIN_MAZE_DIM)
    maze_dim = jnp.clip(maze_dim, MIN_MAZE_DIM, world_dim)  # guard only; configs are validated on the host
    drawn_keys = jnp.minimum(NUM_COLOURS, (maze_dim - MIN_MAZE_DIM) // 2 + jax.random.randint(k_extra, (), 0, 2))
    num_keys = jnp.where(num_keys >= 0, num_keys, drawn_keys)
    return maze_dim.astype(jnp.int32), jnp.clip(num_keys, 0, NUM_COLOURS).astype(jnp.int32)


def generate(key: jax.Array, params, world_dim: int) -> Level:
    """One level for one params row (see HeistParams); vmap it for a batch."""
    keys = jax.random.split(key, 7)
    maze_dim, num_keys = draw_size(keys[0], params.maze_dim, params.num_keys, world_dim)
    width = world_dim
    open_cells = kruskal(keys[1], maze_dim, world_dim)

    # Door sites: choose_n over the forks, which returns all forks when there are fewer than asked for.
    forks = open_cells & (count_neighbours(open_cells) > 2)
    num_doors = jnp.minimum(num_keys, jnp.sum(forks)).astype(jnp.int32)
    scores = jnp.where(forks, jax.random.uniform(keys[2], forks.shape), 2.0).ravel()
    rank = jnp.zeros(scores.shape, jnp.int32).at[jnp.argsort(scores)].set(jnp.arange(scores.size, dtype=jnp.int32))
    doors = forks & (rank.reshape(forks.shape) < num_doors)

    agent = sample_cell(keys[3], open_cells & ~doors & ~dilate(doors))
    reached = (jnp.arange(width * width) == agent).reshape(width, width)
    space = open_cells & ~doors  # Procgen's SPACE: the search never walks through a door, numbered or not

    # One flood per stage gives both the next door (the first met) and the region it closes off. Region k touches
    # what was reached before only at door k-1, so a cell's flood level is its path distance from the start less
    # that door's: a constant shift, which the nearest/farthest placement rules do not see.
    unnumbered = doors
    door_cells, key_cells = [], []
    key_keys = jax.random.split(keys[4], NUM_COLOURS)
    for k in range(NUM_COLOURS):
        active = k < num_doors
        level = flood(reached, space)
        door = _first_door(level, unnumbered)
        door_mask = (jnp.arange(width * width) == door).reshape(width, width) & active
        key_cells.append(place(key_keys[k], (level < level.size) & ~reached, level, params.key_distance))
        door_cells.append(door)
        unnumbered = unnumbered & ~door_mask
        reached = jnp.where(active, (level < level.size) | door_mask, reached)
    level = flood(reached, space)
    gem = place(keys[5], (level < level.size) & ~reached, level, params.gem_distance)

    off_x, off_y = jax.random.randint(keys[6], (2,), 0, world_dim - maze_dim + 1)
    shifted = jnp.roll(open_cells, (off_y, off_x), axis=(0, 1))

    def to_xy(flat):
        flat = jnp.asarray(flat)
        return jnp.stack([flat % width + off_x, flat // width + off_y], axis=-1).astype(jnp.int32)

    door_exists = jnp.arange(NUM_COLOURS) < num_doors
    return Level(
        walls=~shifted,
        door_cell=to_xy(jnp.stack(door_cells)),
        door_exists=door_exists,
        key_cell=to_xy(jnp.stack(key_cells)),
        key_exists=door_exists & ~params.start_keys,
        gem_cell=to_xy(gem),
        agent_cell=to_xy(agent),
        maze_dim=maze_dim,
        num_keys=num_keys,
    )
