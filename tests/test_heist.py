"""HeistEnv: level generation (perfect mazes, forced key chain), per-row configs without recompiles, Procgen's
physics, rewards and ends, observations. Tiny sizes; three compiled functions shared by every test."""

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.envs.heist import ACHIEVEMENTS, HeistConfig, HeistEnv, render_level, render_levels
from envgen_jax.envs.heist import physics, render

ROWS = [
    HeistConfig.original(),
    HeistConfig(maze_dim=5, num_keys=0),
    HeistConfig(maze_dim=13, num_keys=3),
    HeistConfig(maze_dim=11, num_keys=3, key_distance="near", gem_distance="near"),
    HeistConfig(maze_dim=11, num_keys=3, key_distance="far", gem_distance="far"),
    HeistConfig(maze_dim=9, num_keys=2, start_with_blue_key=True, max_episode_steps=50),
]
PER_ROW = 8
RIGHT, LEFT, UP, NOOP = 7, 1, 5, 4


@pytest.fixture(scope="session")
def env():
    return HeistEnv(mode="hard", obs="symbolic")


@pytest.fixture(scope="session")
def traces():
    return {"reset": 0}


@pytest.fixture(scope="session")
def batch_reset(env, traces):
    def reset(keys, bank, ids):
        traces["reset"] += 1  # runs only while tracing
        return jax.vmap(env.reset)(keys, bank.get(ids))

    return jax.jit(reset)


@pytest.fixture(scope="session")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="session")
def levels(env, batch_reset):
    """PER_ROW levels of every row of ROWS, as numpy."""
    bank = env.make_params(ROWS)
    ids = jnp.repeat(jnp.arange(len(ROWS)), PER_ROW)
    keys = jax.random.split(jax.random.PRNGKey(0), ids.shape[0])
    obs, state = batch_reset(keys, bank, ids)
    return np.asarray(ids), jax.tree.map(np.asarray, state), np.asarray(obs)


def one(tree, i):
    return jax.tree.map(lambda leaf: leaf[i], tree)


# ------------------------------------------------------------------------------------------------------------------
# Numpy references.

def reachable(open_cells, start, blocked=()):
    """Cells reachable from start (x, y) through open cells, never entering a `blocked` (x, y) cell."""
    blocked = {tuple(map(int, b)) for b in blocked}
    seen, todo = {tuple(map(int, start))}, deque([tuple(map(int, start))])
    width = open_cells.shape[0]
    while todo:
        x, y = todo.popleft()
        for nx, ny in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
            if 0 <= nx < width and 0 <= ny < width and open_cells[ny, nx] and (nx, ny) not in seen \
                    and (nx, ny) not in blocked:
                seen.add((nx, ny))
                todo.append((nx, ny))
    return seen


def test_levels_are_perfect_mazes(levels):
    _, state, _ = levels
    for i in range(len(state.time)):
        level = one(state.level, i)
        open_cells = ~level.walls
        cells = int(open_cells.sum())
        edges = int((open_cells[:, 1:] & open_cells[:, :-1]).sum() + (open_cells[1:, :] & open_cells[:-1, :]).sum())
        assert edges == cells - 1, f"level {i}: {edges} edges for {cells} open cells is not a tree"
        assert len(reachable(open_cells, level.agent_cell)) == cells, f"level {i} is not connected"
        ys, xs = np.nonzero(open_cells)
        md = int(level.maze_dim)
        assert xs.max() - xs.min() + 1 == md and ys.max() - ys.min() + 1 == md
        rooms = (md + 1) // 2
        assert cells == rooms * rooms + rooms * rooms - 1  # rooms plus one corridor per tree edge


def test_every_level_is_solvable_in_the_forced_key_order(levels):
    _, state, _ = levels
    for i in range(len(state.time)):
        level = one(state.level, i)
        open_cells = ~level.walls
        doors = [tuple(level.door_cell[c]) for c in range(3) if level.door_exists[c]]
        n = len(doors)
        assert n <= level.num_keys
        gem, start = tuple(level.gem_cell), tuple(level.agent_cell)
        assert gem != start and start not in doors
        for k in range(n + 1):
            region = reachable(open_cells, start, blocked=doors[k:])  # doors 0..k-1 opened
            if k < n:
                assert tuple(level.key_cell[k]) in region, f"level {i}: key {k} is not before door {k}"
                x, y = doors[k]
                assert {(x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)} & region, f"level {i}: door {k} unreachable"
                if k + 1 < n:
                    assert tuple(level.key_cell[k + 1]) not in region, f"level {i}: key {k + 1} before door {k}"
                assert gem not in region, f"level {i}: the gem is reachable with {k} doors open"
            else:
                assert gem in region


def test_rows_follow_their_configs(levels):
    ids, state, _ = levels
    level = state.level
    doors = level.door_exists.sum(-1)
    assert set(level.maze_dim[ids == 1]) == {5} and (doors[ids == 1] == 0).all()
    assert set(level.maze_dim[ids == 2]) == {13} and (doors[ids == 2] == 3).all()
    # Procgen's joint draw: num_keys = min(3, difficulty + 0 or 1).
    difficulty = (level.maze_dim[ids == 0] - 5) // 2
    assert np.isin(level.num_keys[ids == 0] - np.minimum(difficulty, 3), [0, 1]).all()
    assert set(level.maze_dim[ids == 0]) <= {5, 7, 9, 11, 13}
    # Keys in hand: held, not placed, and their collect achievement unavailable; the lock still stands.
    held = ids == 5
    assert state.has_keys[held, 0].all() and not state.key_present[held, 0].any()
    assert state.door_present[held, 0].all() and not state.available[held, 0].any() and state.available[held, 3].all()
    assert (state.available[:, 6]).all()
    np.testing.assert_array_equal(state.available[:, :3], state.key_present)


def test_near_and_far_placement(levels):
    """Keys and the gem lie within 2 cells (path distance from the start) of the nearest / farthest cell of the
    region they are drawn from: the part of the maze opened by the previous door."""
    ids, state, _ = levels
    for row, rule in ((3, min), (4, max)):
        for i in np.nonzero(ids == row)[0]:
            level = one(state.level, i)
            open_cells, start = ~level.walls, tuple(level.agent_cell)
            doors = [tuple(level.door_cell[c]) for c in range(3) if level.door_exists[c]]
            dist = distances(open_cells, start)
            placed = [tuple(level.key_cell[k]) for k in range(len(doors))] + [tuple(level.gem_cell)]
            for k, cell in enumerate(placed):
                region = reachable(open_cells, start, doors[k:]) - reachable(open_cells, start, doors[k - 1:]) \
                    if k else reachable(open_cells, start, doors) - {start}
                region -= set(doors)
                assert cell in region
                assert abs(dist[cell] - rule(dist[c] for c in region)) <= 2, f"level {i}, object {k}"


def distances(open_cells, start):
    dist, todo = {start: 0}, deque([start])
    while todo:
        x, y = todo.popleft()
        for nxt in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
            if 0 <= nxt[0] < open_cells.shape[1] and 0 <= nxt[1] < open_cells.shape[0] and open_cells[nxt[1], nxt[0]] \
                    and nxt not in dist:
                dist[nxt] = dist[(x, y)] + 1
                todo.append(nxt)
    return dist


def test_new_bank_values_reuse_the_compiled_reset(env, batch_reset, traces, levels):
    ids, first, _ = levels
    assert traces["reset"] == 1
    other = env.make_params([HeistConfig(maze_dim=13, num_keys=0), HeistConfig(maze_dim=7, gem_distance="far"),
                             *ROWS[2:]])
    keys = jax.random.split(jax.random.PRNGKey(0), len(ids))
    _, state = batch_reset(keys, other, jnp.asarray(ids))
    assert traces["reset"] == 1  # new values in a bank of the same capacity: no new trace, no compile
    maze_dim = np.asarray(state.level.maze_dim)
    assert set(maze_dim[ids == 0]) == {13} and set(maze_dim[ids == 1]) == {7}
    assert not np.asarray(state.level.door_exists)[ids == 0].any()
    # Same row and key give the same level; another key gives another level.
    np.testing.assert_array_equal(np.asarray(state.walls)[ids >= 2], first.walls[ids >= 2])
    assert not np.array_equal(first.walls[16], first.walls[17])


# ------------------------------------------------------------------------------------------------------------------
# Physics, rewards and ends, on hand-made states.

def open_room(state, agent_xy, gem_xy=(11.5, 11.5), doors=()):
    """A 11x11 open room inside the 13x13 border wall; optional locked doors (x, y, colour) and the gem."""
    walls = np.ones((13, 13), bool)
    walls[1:12, 1:12] = False
    door_cell = np.zeros((3, 2), np.int32)
    door_present = np.zeros(3, bool)
    for x, y, colour in doors:
        door_cell[colour] = (x, y)
        door_present[colour] = True
    return state.replace(
        level=state.level.replace(walls=jnp.asarray(walls), door_cell=jnp.asarray(door_cell)),
        door_present=jnp.asarray(door_present), key_present=jnp.zeros(3, bool), has_keys=jnp.zeros(3, bool),
        gem_pos=jnp.asarray(gem_xy, jnp.float32), gem_present=jnp.array(True),
        pos=jnp.asarray(agent_xy, jnp.float32), vel=jnp.zeros(2, jnp.float32), time=jnp.int32(0),
        achievements=jnp.zeros(7, bool))


@pytest.fixture(scope="session")
def base(levels):
    ids, state, _ = levels
    return jax.tree.map(jnp.asarray, one(state, 0)), HeistEnv().default_params


def run(step, state, params, actions):
    out = []
    for t, action in enumerate(actions):
        _, state, reward, done, info = step(jax.random.PRNGKey(t), state, jnp.int32(action), params)
        out.append((state, float(reward), bool(done), info))
    return out


def test_terminal_speed_and_inertia(step, base):
    state, params = base
    state = open_room(state, (1.5, 6.5))
    trace = run(step, state, params, [RIGHT] * 12 + [NOOP] * 3)
    assert physics.TERMINAL_SPEED == pytest.approx(0.6136, abs=1e-4)
    vx = [float(s.vel[0]) for s, *_ in trace]
    assert vx[0] == pytest.approx(0.3375)
    assert vx[11] == pytest.approx(0.6136, abs=2e-3)
    assert float(trace[11][0].pos[0] - trace[10][0].pos[0]) == pytest.approx(0.6136, abs=2e-3)
    assert vx[12] == pytest.approx(0.45 * vx[11], rel=1e-5)  # no input: v <- 0.9 * 0.5 v
    assert all(float(s.vel[1]) == 0 and float(s.pos[1]) == 6.5 for s, *_ in trace)
    # Diagonals move both axes; the special actions 9-14 stand still like NOOP.
    diagonal = run(step, state, params, [8] * 3)[-1][0]
    assert float(diagonal.vel[0]) == pytest.approx(float(diagonal.vel[1])) and float(diagonal.vel[1]) > 0.5
    for action in range(9, 15):
        assert float(run(step, state, params, [action])[0][0].vel[0]) == 0.0


def test_walls_stop_the_agent_flush(step, base):
    state, params = base
    trace = run(step, open_room(state, (9.5, 6.5)), params, [RIGHT] * 8)
    last = trace[-1][0]
    assert float(last.pos[0]) == pytest.approx(12 - physics.AGENT_R)
    assert float(last.vel[0]) == 0.0 and not trace[-1][2]


def test_locked_door_blocks_until_its_key_is_held(step, base):
    state, params = base
    blocked = open_room(state, (5.5, 6.5), doors=[(8, 6, 1)])
    trace = run(step, blocked, params, [RIGHT] * 10)
    last = trace[-1][0]
    assert float(last.pos[0]) == pytest.approx(8.5 - 0.875, abs=1e-4)
    assert bool(last.door_present[1]) and not last.achievements.any()
    with_key = blocked.replace(key_present=jnp.array([False, True, False]),
                               key_pos=jnp.asarray([[0.0, 0.0], [6.5, 6.5], [0.0, 0.0]], jnp.float32))
    trace = run(step, with_key, params, [RIGHT] * 10)
    events = [np.asarray(info["achievements"]) for *_, info in trace]
    assert events[0][ACHIEVEMENTS.index("collect_key_green")]
    assert events[-1][ACHIEVEMENTS.index("open_lock_green")] and not bool(trace[-1][0].door_present[1])
    assert float(trace[-1][0].pos[0]) > 9.0  # walked through where the door stood
    assert bool(trace[-1][0].has_keys[1])  # keys are not consumed


def test_gem_pays_ten_and_ends(step, base):
    state, params = base
    trace = run(step, open_room(state, (5.5, 5.5), gem_xy=(7.5, 5.5)), params, [RIGHT] * 4)
    rewards = [r for _, r, _, _ in trace]
    hit = next(i for i, (_, r, _, _) in enumerate(trace) if r)
    assert rewards[hit] == 10.0 and sum(rewards) == 10.0 and trace[hit][2]
    info = trace[hit][3]
    assert not bool(info["truncated"]) and bool(info["success"])
    assert bool(info["achievements"][ACHIEVEMENTS.index("collect_gem")])


def test_timeout_truncates_with_no_reward(step, base):
    state, params = base
    params = params.replace(max_steps=jnp.int32(5))
    trace = run(step, open_room(state, (5.5, 5.5)), params, [NOOP] * 5)
    assert [d for _, _, d, _ in trace] == [False] * 4 + [True]
    assert bool(trace[-1][3]["truncated"]) and trace[-1][1] == 0.0


def test_random_walk_never_enters_walls_or_locked_doors(step, levels):
    ids, state, _ = levels
    bank = HeistEnv().make_params(ROWS)
    rng = np.random.default_rng(0)
    for i in (0, 16, 24):
        s = jax.tree.map(jnp.asarray, one(state, i))
        for t in range(120):
            _, s, *_ = step(jax.random.PRNGKey(t), s, jnp.int32(rng.integers(15)), bank.get(int(ids[i])))
            x, y = np.asarray(s.pos)
            probe = physics.AGENT_R * physics.CORNER_MARGIN
            walls = np.asarray(s.walls)
            for cx, cy in ((x - probe, y - probe), (x - probe, y + probe), (x + probe, y - probe),
                           (x + probe, y + probe)):
                assert not walls[int(cy), int(cx)], f"level {i} step {t}: agent at {(x, y)} overlaps a wall"
            locked = np.asarray(s.door_present & ~s.has_keys)
            for c in np.nonzero(locked)[0]:
                door = np.asarray(s.door_cell[c]) + 0.5
                assert (np.abs(np.array([x, y]) - door) >= 0.874 - 1e-5).any()


# ------------------------------------------------------------------------------------------------------------------
# Observations and pictures.

def test_observations(env, levels, tmp_path):
    ids, state, obs = levels
    assert env.num_actions == 15 and env.achievement_names == ACHIEVEMENTS
    assert obs.shape == (len(ids), *env.obs_shape) == (len(ids), 13, 13, 12)
    first = one(state, 0)
    np.testing.assert_array_equal(obs[0, ::-1, :, 0], first.walls)  # row 0 is the top of the world
    assert obs[0, ..., 8].sum() == pytest.approx(1.0)                 # the agent's box is spread over cells
    pixels = HeistEnv(obs="pixels")
    shape = jax.eval_shape(pixels.reset, jax.random.PRNGKey(0), pixels.default_params)[0]
    assert shape.shape == (64, 64, 3) == pixels.obs_shape and shape.dtype == jnp.uint8
    picture = np.asarray(jax.jit(render.pixels, static_argnums=1)(jax.tree.map(jnp.asarray, first), 13))
    assert picture.shape == (64, 64, 3) and picture.dtype == np.uint8
    assert (picture == render.GEM).all(-1).any() and (picture == render.AGENT).all(-1).any()
    assert (picture == render.WALL).all(-1).mean() > 0.2
    from PIL import Image

    path = render_level({"maze_settings": {"maze_dim": 9, "num_keys": 2}}, seed=3, path=tmp_path / "level.png")
    assert Image.open(path).size == (512, 512)
    path = render_levels([HeistConfig(num_keys=3)], tmp_path / "panels.png", seed=3)  # `envgen-jax render`
    assert Image.open(path).size[0] > 300
