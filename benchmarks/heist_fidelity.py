"""Fidelity of envgen_jax's Heist against the original Procgen, measured side by side in one run.

The original runs from the `procgen-mirror` wheel (a cp311 rebuild of procgen 0.10.7) in its own virtual
environment, because it needs numpy < 2:

    python3 -m venv .cache/procgen-venv && .cache/procgen-venv/bin/pip install procgen-mirror
    (or: python benchmarks/heist_fidelity.py --make-venv)

This same file is the oracle: run under that venv with `--oracle`, it imports procgen (and never jax) and prints
JSON. The main run (in the project venv) compares, for each mode (easy, hard):

* behaviour: a uniformly random policy over the 15 actions; each of N environments plays exactly its first
  episode (no early stop, so short episodes are not over-sampled): success rate (two-proportion z-test) and mean
  episode length (Welch t-test);
* levels: N fresh levels each; the original's are read off its first frame rendered with flat monochrome assets
  (cell centres give walls and locks, colour centroids give the agent, keys and gem): maze size and number of
  doors (chi-square tests of homogeneity), start-to-gem and start-to-blue-key path lengths (Welch t-tests, the
  latter over levels with a blue key), and the share of levels whose key chain is solvable in the forced order
  (must be 1 on both sides).

Every test is at the 5% level; `agree_all` also reports the Bonferroni-corrected verdict over all tests.
The JSON goes to benchmarks/results/heist_fidelity.json and a table is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_VENV = ROOT / ".cache" / "procgen-venv"
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "heist_fidelity.json"
WORLD_DIMS = {"easy": 9, "hard": 13}
NUM_ACTIONS = 15
MAX_STEPS = 1000

# Procgen's monochrome colours (BasicAbstractGame::color_for_type with restrict_themes): type, theme -> RGB.
MONO_WALL = (191, 127, 63)
MONO_PLAYER = (127, 255, 127)
MONO_GEM = (191, 63, 191)
MONO_KEYS = ((127, 127, 255), (191, 191, 191), (255, 255, 127))   # blue, green, red
MONO_LOCKS = ((255, 191, 191), (63, 255, 127), (191, 63, 63))


# ----------------------------------------------------------------------------------------------------------------
# Shared by both sides: numpy only.

def _bfs(open_cells: np.ndarray, start, blocked=frozenset()) -> dict:
    width = open_cells.shape[0]
    dist = {start: 0}
    todo = deque([start])
    while todo:
        x, y = todo.popleft()
        for nxt in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
            if 0 <= nxt[0] < width and 0 <= nxt[1] < width and open_cells[nxt[1], nxt[0]] and nxt not in dist \
                    and nxt not in blocked:
                dist[nxt] = dist[(x, y)] + 1
                todo.append(nxt)
    return dist


def level_summary(open_cells: np.ndarray, agent, doors: list, keys: list, gem) -> dict:
    """Statistics of one level. `open_cells` is [y, x]; cells are (x, y); `doors`/`keys` list colours in order,
    None where absent."""
    ys, xs = np.nonzero(open_cells)
    present = [d for d in doors if d is not None]
    agent, gem = tuple(agent), tuple(gem)
    solvable = all(d is not None for d in doors[:len(present)])  # doors come in colour order
    for k in range(len(present) + 1):
        region = _bfs(open_cells, agent, blocked=frozenset(present[k:]))
        if k < len(present):
            key_ok = keys[k] is None or tuple(keys[k]) in region
            solvable &= key_ok and gem not in region
        else:
            solvable &= gem in region
    dist = _bfs(open_cells, agent)
    return {
        "maze_dim": int(max(xs.max() - xs.min(), ys.max() - ys.min()) + 1),
        "doors": len(present),
        "gem_path": dist.get(gem, -1),
        "blue_key_path": dist.get(tuple(keys[0]), -1) if keys[0] is not None else -1,
        "solvable": bool(solvable),
    }


# ----------------------------------------------------------------------------------------------------------------
# The oracle (procgen venv).

def _parse_frame(image: np.ndarray, world_dim: int) -> dict:
    """Read one 64x64 monochrome first frame of a Heist level."""
    centres = ((np.arange(world_dim) + 0.5) * 64 / world_dim).astype(int)
    cells = image[63 - centres][:, centres]  # [y, x], y up: row 63 - c is world y = c
    open_cells = ~np.all(cells == MONO_WALL, axis=-1)

    def centroid_cell(colour):
        ys, xs = np.nonzero(np.all(image == colour, axis=-1))
        if len(xs) == 0:
            return None
        x = (xs.mean() + 0.5) * world_dim / 64
        y = world_dim - (ys.mean() + 0.5) * world_dim / 64
        return int(x), int(y)

    doors = []
    for colour in MONO_LOCKS:
        ys, xs = np.nonzero(np.all(cells == colour, axis=-1))
        doors.append((int(xs[0]), int(ys[0])) if len(xs) else None)
    keys = [centroid_cell(colour) for colour in MONO_KEYS]
    return level_summary(open_cells, centroid_cell(MONO_PLAYER), doors, keys, centroid_cell(MONO_GEM))


def oracle(mode: str, what: str, count: int, seed: int) -> dict:
    import importlib.metadata

    from procgen import ProcgenGym3Env

    out = {"procgen_version": importlib.metadata.version("procgen-mirror"), "numpy_version": np.__version__}
    if what == "levels":
        env = ProcgenGym3Env(num=count, env_name="heist", distribution_mode=mode, start_level=seed, num_levels=0,
                             rand_seed=seed, use_backgrounds=False, restrict_themes=True, use_monochrome_assets=True)
        _, obs, _ = env.observe()
        out["levels"] = [_parse_frame(image, WORLD_DIMS[mode]) for image in obs["rgb"]]
        return out
    env = ProcgenGym3Env(num=count, env_name="heist", distribution_mode=mode, start_level=seed, num_levels=0,
                         rand_seed=seed)
    rng = np.random.default_rng(seed)
    length = np.zeros(count, int)
    success = np.zeros(count, bool)
    for t in range(1, MAX_STEPS + 1):
        env.act(rng.integers(0, NUM_ACTIONS, size=count))
        reward, _, first = env.observe()
        ended = first & (length == 0)  # `first` marks the observation after an episode's last step
        length[ended] = t
        success[ended] = reward[ended] > 0
    assert (length > 0).all(), "an episode outlived Procgen's 1000-step timeout"
    out.update(lengths=length.tolist(), successes=success.tolist())
    return out


# ----------------------------------------------------------------------------------------------------------------
# Our side (project venv).

def ours(mode: str, episodes: int, levels: int, seed: int) -> dict:
    import jax
    import jax.numpy as jnp

    from envgen_jax.envs.heist import HeistConfig, HeistEnv

    env = HeistEnv(mode=mode, obs="symbolic")
    bank = env.make_params([HeistConfig.original()])

    def play(key):
        k_reset, k_steps = jax.random.split(key)
        params = bank.get(jnp.zeros(episodes, jnp.int32))
        _, state = jax.vmap(env.reset)(jax.random.split(k_reset, episodes), params)

        def one_step(carry, key):
            state, length, success = carry
            k_act, k_env = jax.random.split(key)
            actions = jax.random.randint(k_act, (episodes,), 0, NUM_ACTIONS)
            _, state, reward, done, _ = jax.vmap(env.step)(jax.random.split(k_env, episodes), state, actions, params)
            ended = done & (length == 0)
            return (state, jnp.where(ended, state.time, length), success | (ended & (reward > 0))), None

        init = (state, jnp.zeros(episodes, jnp.int32), jnp.zeros(episodes, bool))
        (_, length, success), _ = jax.lax.scan(one_step, init, jax.random.split(k_steps, MAX_STEPS))
        return length, success

    def generate(key):
        params = bank.get(jnp.zeros(levels, jnp.int32))
        return jax.vmap(env.reset)(jax.random.split(key, levels), params)[1].level

    key_play, key_levels = jax.random.split(jax.random.PRNGKey(seed))
    started = time.perf_counter()
    play_compiled = jax.jit(play).lower(key_play).compile()
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    length, success = jax.block_until_ready(play_compiled(key_play))
    run_s = time.perf_counter() - started
    level = jax.tree.map(np.asarray, jax.jit(generate)(key_levels))
    summaries = []
    for i in range(levels):
        doors = [tuple(level.door_cell[i, c]) if level.door_exists[i, c] else None for c in range(3)]
        keys = [tuple(level.key_cell[i, c]) if level.key_exists[i, c] else None for c in range(3)]
        summaries.append(level_summary(~level.walls[i], level.agent_cell[i], doors, keys, level.gem_cell[i]))
    return {"lengths": np.asarray(length).tolist(), "successes": np.asarray(success).tolist(), "levels": summaries,
            "compile_s": compile_s, "run_s": run_s,
            "env_steps_per_s": float(episodes * MAX_STEPS / run_s)}


# ----------------------------------------------------------------------------------------------------------------
# Statistics.

def _normal_p(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


def proportion_test(a: list, b: list) -> dict:
    n1, n2 = len(a), len(b)
    p1, p2 = float(np.mean(a)), float(np.mean(b))
    pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    z = (p1 - p2) / se if se > 0 else 0.0
    return {"test": "two-proportion z", "statistic": z, "p": _normal_p(z)}


def welch_test(a: list, b: list) -> dict:
    from scipy import stats

    result = stats.ttest_ind(np.asarray(a, float), np.asarray(b, float), equal_var=False)
    p = float(result.pvalue) if np.isfinite(result.pvalue) else 1.0
    return {"test": "Welch t", "statistic": float(np.nan_to_num(result.statistic)), "p": p}


def chi2_test(a: list, b: list) -> dict:
    from scipy import stats

    values = sorted(set(a) | set(b))
    table = np.array([[a.count(v) for v in values], [b.count(v) for v in values]])
    if len(values) < 2:
        return {"test": "chi-square homogeneity", "statistic": 0.0, "p": 1.0, "values": values}
    statistic, p, dof, _ = stats.chi2_contingency(table)
    return {"test": "chi-square homogeneity", "statistic": float(statistic), "p": float(p), "dof": int(dof),
            "values": values, "counts_ours": table[0].tolist(), "counts_procgen": table[1].tolist()}


def _mean_se(values) -> tuple[float, float]:
    values = np.asarray(values, float)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))


def compare_mode(ours_out: dict, theirs_behaviour: dict, theirs_levels: dict) -> dict:
    rows = {}

    def add(name, ours_values, procgen_values, test):
        mine, mine_se = _mean_se(ours_values)
        other, other_se = _mean_se(procgen_values)
        rows[name] = {"ours": mine, "ours_se": mine_se, "procgen": other, "procgen_se": other_se,
                      "n_ours": len(ours_values), "n_procgen": len(procgen_values), **test(ours_values, procgen_values)}
        rows[name]["agree_95"] = rows[name]["p"] >= 0.05

    add("success_rate", ours_out["successes"], theirs_behaviour["successes"], proportion_test)
    add("episode_length", ours_out["lengths"], theirs_behaviour["lengths"], welch_test)
    mine, other = ours_out["levels"], theirs_levels["levels"]
    for field in ("maze_dim", "doors"):
        add(field, [s[field] for s in mine], [s[field] for s in other], chi2_test)
    add("gem_path_length", [s["gem_path"] for s in mine], [s["gem_path"] for s in other], welch_test)
    add("blue_key_path", [s["blue_key_path"] for s in mine if s["blue_key_path"] >= 0],
        [s["blue_key_path"] for s in other if s["blue_key_path"] >= 0], welch_test)
    rows["solvable_share"] = {"ours": float(np.mean([s["solvable"] for s in mine])),
                              "procgen": float(np.mean([s["solvable"] for s in other])),
                              "n_ours": len(mine), "n_procgen": len(other), "test": "must be 1.0 on both sides"}
    rows["solvable_share"]["agree_95"] = rows["solvable_share"]["ours"] == 1.0 == rows["solvable_share"]["procgen"]
    return rows


# ----------------------------------------------------------------------------------------------------------------

def run_oracle(python: Path, mode: str, what: str, count: int, seed: int) -> dict:
    command = [str(python), str(Path(__file__).resolve()), "--oracle", mode, what, str(count), str(seed)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"procgen oracle failed ({' '.join(command)}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_venv(venv: Path) -> None:
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "procgen-mirror"], check=True)


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_state() -> dict:
    """HEAD, and whether the Heist code measured differs from it (uncommitted changes)."""
    changed = _git("status", "--porcelain", "--", "envgen_jax/envs/heist", "benchmarks/heist_fidelity.py")
    return {"git_commit": _git("rev-parse", "HEAD"), "heist_code_uncommitted": bool(changed) if changed is not None
            else None}


def print_table(result: dict) -> None:
    print(f"\nHeist fidelity: ours (envgen_jax) vs Procgen {result['versions']['procgen']}, "
          f"uniform random policy, {result['episodes']} episodes and {result['levels']} levels per mode")
    print(f"{'mode':5} {'statistic':16} {'ours':>17} {'procgen':>17} {'test':>24} {'p':>7}  agree@95%")
    for mode, rows in result["modes"].items():
        for name, row in rows.items():
            if "ours_se" in row:
                mine = f"{row['ours']:.3f} ± {row['ours_se']:.3f}"
                other = f"{row['procgen']:.3f} ± {row['procgen_se']:.3f}"
                p = f"{row['p']:.3f}"
            else:
                mine, other, p = f"{row['ours']:.3f}", f"{row['procgen']:.3f}", "-"
            print(f"{mode:5} {name:16} {mine:>17} {other:>17} {row['test'][:24]:>24} {p:>7}  "
                  f"{'yes' if row['agree_95'] else 'NO'}")
    print(f"all agree at 95% per test: {result['agree_all_95']}; "
          f"with Bonferroni over {result['num_tests']} tests: {result['agree_all_bonferroni']}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000, help="random-policy episodes per mode and side")
    parser.add_argument("--levels", type=int, default=1000, help="generated levels per mode and side")
    parser.add_argument("--modes", nargs="+", default=["easy", "hard"], choices=sorted(WORLD_DIMS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="virtual environment with procgen-mirror")
    parser.add_argument("--make-venv", action="store_true", help="create --venv with procgen-mirror first")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    python = args.venv / "bin" / "python"
    if args.make_venv and not python.exists():
        make_venv(args.venv)
    if not python.exists():
        sys.exit(f"no procgen venv at {args.venv}: run with --make-venv, or\n"
                 f"  python3 -m venv {args.venv} && {args.venv}/bin/pip install procgen-mirror")

    import jax

    import envgen_jax

    started = time.perf_counter()
    modes, procgen_version, timing = {}, None, {}
    for mode in args.modes:
        mine = ours(mode, args.episodes, args.levels, args.seed)
        t0 = time.perf_counter()
        behaviour = run_oracle(python, mode, "behaviour", args.episodes, args.seed)
        levels = run_oracle(python, mode, "levels", args.levels, args.seed)
        procgen_version = behaviour["procgen_version"]
        timing[mode] = {"ours_compile_s": mine["compile_s"], "ours_run_s": mine["run_s"],
                        "ours_env_steps_per_s": mine["env_steps_per_s"],  # every env steps all 1000 steps
                        "procgen_s": time.perf_counter() - t0}
        modes[mode] = compare_mode(mine, behaviour, levels)

    tests = [row for rows in modes.values() for row in rows.values() if "p" in row]
    result = {
        "benchmark": "heist_fidelity",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        **git_state(),
        "device": "CPU",
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": {"python": platform.python_version(), "jax": jax.__version__,
                     "jaxlib": getattr(jax.lib, "__version__", None) or _version("jaxlib"),
                     "numpy": np.__version__, "envgen_jax": envgen_jax.__version__,
                     "procgen": f"procgen-mirror {procgen_version}"},
        "policy": f"uniform random over {NUM_ACTIONS} actions; each environment's first episode",
        "config": "HeistConfig.original() (Procgen's own distribution for each mode)",
        "episodes": args.episodes,
        "levels": args.levels,
        "seed": args.seed,
        "modes": modes,
        "num_tests": len(tests),
        "agree_all_95": all(row["agree_95"] for rows in modes.values() for row in rows.values()),
        "agree_all_bonferroni": all(row["p"] >= 0.05 / len(tests) for row in tests)
        and all(rows["solvable_share"]["agree_95"] for rows in modes.values()),
        "timing": timing,
        "wall_s": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print_table(result)
    print(f"wrote {args.out}")
    return result


def _version(package: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--oracle":
        mode, what, count, seed = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(oracle(mode, what, count, seed)))
    else:
        main()
