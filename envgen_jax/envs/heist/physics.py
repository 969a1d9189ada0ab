"""Procgen's continuous movement for the Heist agent (`BasicAbstractGame`), in JAX.

Per step: v = 0.9 * (0.5 v + 0.5 * 0.75 * a), a in {-1, 0, 1} per axis, so the terminal speed along an axis is
0.3375 / 0.55 = 0.614 cells/step. The move is split into 4 sub-steps (Procgen uses max(4, int(4 |v|)) and |v| < 1
here); in each, one axis moves and then the other. A move into a wall snaps the agent flush against it; a move into a
locked door whose key is not held pushes the agent back out and zeroes that axis' velocity. Afterwards each axis'
velocity is scaled by the share of sub-steps in which it was free. Positions are in cells, y up.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MAXSPEED = 0.75
MIXRATE = 0.5
DECAY = 0.9
SUB_STEPS = 4
AGENT_R = 0.375
CORNER_MARGIN = 0.98          # wall probes sit at 0.98 of the radius
POS_EPS = -0.001              # entity overlap tolerance when blocking
DOOR_R = 0.5
KEY_RX, KEY_RY = 0.375, 0.375 * 52 / 84   # keyBlue.png is 84x52; Procgen matches the key's height to it
GEM_RX, GEM_RY = 0.375, 0.375 * 48 / 70   # gemYellow.png is 70x48
NUM_ACTIONS = 15
TERMINAL_SPEED = MIXRATE * MAXSPEED * DECAY / (1 - (1 - MIXRATE) * DECAY)


def action_xy(action: jax.Array) -> jax.Array:
    """Procgen's combos: for 0-8 (vx, vy) = (a // 3 - 1, a % 3 - 1); 9-14 are special actions, which stand still."""
    move = jnp.where(action < 9, action, 4)
    return jnp.stack([move // 3 - 1, move % 3 - 1]).astype(jnp.float32)


def _wall_at(walls: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    width = walls.shape[0]
    cx, cy = jnp.floor(x).astype(jnp.int32), jnp.floor(y).astype(jnp.int32)
    outside = (x < 0) | (y < 0) | (cx >= width) | (cy >= width)
    return outside | walls[jnp.clip(cy, 0, width - 1), jnp.clip(cx, 0, width - 1)]


def _wall_move(walls, x, y, dx, dy):
    """Procgen's `sub_step` against the grid: returns (x, y, blocked). A zero dx counts as a vertical move."""
    nx, ny = x + dx, y + dy
    probe = AGENT_R * CORNER_MARGIN
    blocked = (_wall_at(walls, nx - probe, ny - probe) | _wall_at(walls, nx - probe, ny + probe)
               | _wall_at(walls, nx + probe, ny - probe) | _wall_at(walls, nx + probe, ny + probe))
    horizontal = dx != 0
    snap_x = jnp.where(dx > 0, jnp.floor(nx + AGENT_R) - AGENT_R, jnp.ceil(nx - AGENT_R) + AGENT_R)
    snap_y = jnp.where(dy > 0, jnp.floor(ny + AGENT_R) - AGENT_R, jnp.ceil(ny - AGENT_R) + AGENT_R)
    nx = jnp.where(blocked & horizontal, snap_x, nx)
    ny = jnp.where(blocked & ~horizontal, snap_y, ny)
    return nx, ny, blocked


def _sub_step(walls, locked_doors, door_centre, pos, vel, dx, dy):
    """One axis move with walls and locked doors. Returns (pos, vel, blocked)."""
    nx, ny, blocked = _wall_move(walls, pos[0], pos[1], dx, dy)
    horizontal = dx != 0
    reach = DOOR_R + AGENT_R + POS_EPS
    hits = locked_doors & (jnp.abs(nx - door_centre[:, 0]) < reach) & (jnp.abs(ny - door_centre[:, 1]) < reach)
    hit = jnp.any(hits)
    centre = door_centre[jnp.argmax(hits)]  # doors sit at forks two cells apart, so at most one overlaps
    rsum = DOOR_R + AGENT_R
    push_x = centre[0] + jnp.sign(nx - centre[0]) * rsum - nx
    push_y = centre[1] + jnp.sign(ny - centre[1]) * rsum - ny
    px, py, _ = _wall_move(walls, nx, ny, jnp.where(horizontal, push_x, 0.0), jnp.where(horizontal, 0.0, push_y))
    pos = jnp.where(hit, jnp.stack([px, py]), jnp.stack([nx, ny]))
    vel = jnp.where(hit & jnp.stack([horizontal, ~horizontal]), 0.0, vel)
    return pos, vel, blocked | hit


def move(walls, locked_doors, door_centre, pos, vel, action, coin):
    """One step of agent movement. `locked_doors` bool[3] are doors that block (present, key not held);
    `coin` breaks Procgen's tie in which axis moves first when neither is pressed and |vx| == |vy|."""
    act = action_xy(action)
    vel = DECAY * ((1 - MIXRATE) * vel + MIXRATE * MAXSPEED * act)
    x_first = jnp.where(act[1] != 0, False,
                        jnp.where(act[0] != 0, True,
                                  jnp.where(jnp.abs(vel[0]) == jnp.abs(vel[1]), coin,
                                            jnp.abs(vel[0]) > jnp.abs(vel[1]))))
    pct = 1.0 / SUB_STEPS
    free = jnp.zeros(2)
    stopped = jnp.array(False)
    for _ in range(SUB_STEPS):
        # First axis, then the other; both as (dx, dy) with one of them zero.
        first = jnp.where(x_first, jnp.stack([vel[0] * pct, 0.0]), jnp.stack([0.0, vel[1] * pct]))
        new_pos, new_vel, block_first = _sub_step(walls, locked_doors, door_centre, pos, vel, first[0], first[1])
        second = jnp.where(x_first, jnp.stack([0.0, new_vel[1] * pct]), jnp.stack([new_vel[0] * pct, 0.0]))
        new_pos, new_vel, block_second = _sub_step(walls, locked_doors, door_centre, new_pos, new_vel, second[0],
                                                   second[1])
        block = jnp.where(x_first, jnp.stack([block_first, block_second]), jnp.stack([block_second, block_first]))
        pos = jnp.where(stopped, pos, new_pos)
        vel = jnp.where(stopped, vel, new_vel)
        free = free + jnp.where(stopped, 0.0, (~block).astype(jnp.float32))
        stopped = stopped | jnp.all(block)
    return pos, vel * free / SUB_STEPS
