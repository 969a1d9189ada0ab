"""Jittable Heist observations: the whole-level RGB picture as in Procgen's easy/hard modes, and a symbolic grid.

Both put the top of the world (largest y) in row 0. The picture uses clean flat colours instead of Procgen's
sprites and background images: dirt-brown walls, a dark floor, locks as dark squares of their colour with a black
keyhole, keys as bright rectangles of the key's size, a yellow gem, a white agent, and the held keys in the top-right
corner (blue rightmost, as in Procgen).
"""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np

from envgen_jax.envs.heist import physics

FLOOR = (32, 32, 40)
WALL = (133, 94, 56)
AGENT = (240, 240, 240)
GEM = (255, 214, 0)
KEY = ((64, 128, 255), (64, 220, 64), (255, 64, 64))  # blue, green, red
LOCK = ((24, 48, 160), (24, 120, 24), (150, 24, 24))
KEYHOLE = (0, 0, 0)
KEYHOLE_R = 0.15  # cells

SYMBOLIC_CHANNELS = ("wall", "key_blue", "key_green", "key_red", "lock_blue", "lock_green", "lock_red", "gem",
                     "agent", "held_blue", "held_green", "held_red")


def _paint(image: jax.Array, mask: jax.Array, colour) -> jax.Array:
    return jnp.where(mask[..., None], jnp.asarray(colour, jnp.uint8), image)


def pixels(state, world_dim: int, size: int = 64) -> jax.Array:
    """uint8[size, size, 3] picture of the whole level (Procgen: size 64, `world_dim` cells across)."""
    centres = (np.arange(size) + 0.5) * world_dim / size
    wx = jnp.asarray(centres, jnp.float32)[None, :]                 # world x of each column
    wy = jnp.asarray(world_dim - centres, jnp.float32)[:, None]     # world y of each row
    cell_x = np.minimum(np.floor(centres).astype(np.int32), world_dim - 1)
    cell_y = np.minimum(np.floor(world_dim - centres).astype(np.int32), world_dim - 1)

    image = jnp.broadcast_to(jnp.asarray(FLOOR, jnp.uint8), (size, size, 3))
    image = _paint(image, state.walls[cell_y[:, None], cell_x[None, :]], WALL)

    def box(cx, cy, rx, ry):
        return (jnp.abs(wx - cx) < rx) & (jnp.abs(wy - cy) < ry)

    for c in range(3):
        door_x = state.door_cell[c, 0] + 0.5
        door_y = state.door_cell[c, 1] + 0.5
        closed = state.door_present[c]
        image = _paint(image, closed & box(door_x, door_y, physics.DOOR_R, physics.DOOR_R), LOCK[c])
        image = _paint(image, closed & box(door_x, door_y, KEYHOLE_R, KEYHOLE_R), KEYHOLE)
        image = _paint(image, state.key_present[c] & box(state.key_pos[c, 0], state.key_pos[c, 1],
                                                         physics.KEY_RX, physics.KEY_RY), KEY[c])
    image = _paint(image, state.gem_present & box(state.gem_pos[0], state.gem_pos[1], physics.GEM_RX,
                                                  physics.GEM_RY), GEM)
    image = _paint(image, box(state.pos[0], state.pos[1], physics.AGENT_R, physics.AGENT_R), AGENT)

    # Held keys, top right, drawn in screen fractions as Procgen's KEY_ON_RING entities (slightly enlarged).
    col = (np.arange(size) + 0.5)[None, :] / size
    row = (np.arange(size) + 0.5)[:, None] / size
    for c in range(3):
        centre = 1 - 0.03 * (2 * c + 1.25)
        mark = (np.abs(col - centre) < 0.022) & (np.abs(row - 0.035) < 0.03)
        image = _paint(image, state.has_keys[c] & jnp.asarray(mark), KEY[c])
    return image


def symbolic(state, world_dim: int) -> jax.Array:
    """float32[W, W, 12] grid, channels SYMBOLIC_CHANNELS; the agent channel holds the share of its box per cell."""
    cells = jnp.arange(world_dim)
    xs, ys = jnp.meshgrid(cells, cells, indexing="xy")  # [y, x]

    def at(cell, present):
        return present & (xs == cell[0]) & (ys == cell[1])

    keys = [at(jnp.floor(state.key_pos[c]).astype(jnp.int32), state.key_present[c]) for c in range(3)]
    locks = [at(state.door_cell[c], state.door_present[c]) for c in range(3)]
    gem = at(jnp.floor(state.gem_pos).astype(jnp.int32), state.gem_present)

    def overlap(centre):
        low = jnp.maximum(centre - physics.AGENT_R, cells)
        high = jnp.minimum(centre + physics.AGENT_R, cells + 1)
        return jnp.clip(high - low, 0.0, None) / (2 * physics.AGENT_R)

    agent = overlap(state.pos[1])[:, None] * overlap(state.pos[0])[None, :]
    held = [jnp.broadcast_to(state.has_keys[c], (world_dim, world_dim)) for c in range(3)]
    planes = [state.walls, *keys, *locks, gem, agent, *held]
    grid = jnp.stack([p.astype(jnp.float32) for p in planes], axis=-1)
    return grid[::-1]  # row 0 = top of the world, as in the picture


def render_png(state, world_dim: int, path, size: int = 512) -> None:
    """Write a picture of one (unbatched) state to `path` (PNG)."""
    from PIL import Image

    Image.fromarray(_picture(state, world_dim, size)).save(path)


_pixels_jit = jax.jit(pixels, static_argnums=(1, 2))


def _picture(state, world_dim: int, size: int) -> np.ndarray:
    return np.asarray(_pixels_jit(state, world_dim, size))


LEGEND = (("wall", WALL), ("floor", FLOOR), ("agent", AGENT), ("gem", GEM),
          *((f"{c} key", KEY[i]) for i, c in enumerate(("blue", "green", "red"))),
          *((f"{c} lock", LOCK[i]) for i, c in enumerate(("blue", "green", "red"))))


def save_panels(states, world_dim: int, path, titles, heading: str, size: int = 256):
    """One panel per (unbatched) state with its title, and a colour legend; returns the PNG path."""
    from pathlib import Path

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    count = len(states)
    fig, axes = plt.subplots(1, count, figsize=(3.6 * count + 1.8, 4.2), squeeze=False)
    for ax, state, title in zip(axes[0], states, titles):
        ax.imshow(_picture(state, world_dim, size), interpolation="nearest")
        ax.set_title("\n".join(textwrap.wrap(title, 44)[:4]), fontsize=8)
        ax.set_xticks([]), ax.set_yticks([])
    handles = [Patch(facecolor=np.asarray(colour) / 255, edgecolor="grey", label=name) for name, colour in LEGEND]
    fig.legend(handles=handles, loc="center right", fontsize=8, frameon=False)
    fig.suptitle(heading, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 1.6 / (3.6 * count + 1.8), 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
