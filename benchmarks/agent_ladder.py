"""Issue 56's ladder: one row per rung, from the symbolic default toward the paper's pixel agent, built from the rows
benchmarks/agent_sample_efficiency.py saved (run the rungs there: `--recipes ladder_trunk --seeds 2 --steps 500000`).

    python benchmarks/agent_ladder.py        # writes benchmarks/results/agent_ladder_<platform>.{json,md}

A rung's columns, from its row with the most seeds (rungs not yet run are left out):

    score_0_0.5M      Crafter score (%) of the training episodes finished in the first 0.5M env steps per agent,
                      mean over seeds (score_0_0.5M_std: their std); score_0_1M the same over the first 1M, where run
    score_0_0.2M      the same over the first 0.2M: the horizon every rung reached, so a rung a CPU could not train
                      to 0.5M (the pixel-sized ones) still stands beside the others
    return_at_0.5M    mean episode return of the training episodes finished in the last 0.1M steps before 0.5M
                      (those that ended in chunks ending in (0.4M, 0.5M]), pooled per seed, then the mean over seeds
    env_steps_per_s   training env steps per second of all the program's agents (`seeds` of them) together, on
                      whatever else shared the CPU (the source row's load_note)
    parameters        the network's parameters (one agent), counted from the recipe as the code builds it now

    python benchmarks/agent_ladder.py --speed   # the rungs' training speed side by side: agent_ladder_speed_<platform>.*

`--speed` times each rung's training chunk in one process (compiled, two warm-up calls, then the timed calls
round-robin, so a shared machine's drift hits every rung alike) and gives env steps/s and the ratio to rung 0: the
cost of each rung, fairer than the screens' own speeds, which ran at different times beside different jobs.

The pixel agent (one H200 seed, 2026-11-27) is a reference row, copied from ../shared/gpu/2026-11-27/
pixel_agent_1seed.json and its _metrics.jsonl (PIXEL_AGENT).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import agent_sample_efficiency as ase  # noqa: E402
from benchmarks.common import RESULTS, markdown_table, platform_tag, time_interleaved  # noqa: E402
from envgen_jax.envs.crafter.env import CrafterEnv  # noqa: E402
from envgen_jax.envs.scores import crafter_score  # noqa: E402
from envgen_jax.run.provenance import environment  # noqa: E402
from envgen_jax.trainer.networks import count_params  # noqa: E402
from envgen_jax.trainer.train import make_network  # noqa: E402

NAME = "agent_ladder"
RETURN_WINDOW = (400_000, 500_000)  # return_at_0.5M: episodes finished in chunks ending in this (lo, hi]
COMMON_HORIZON = 200_000  # score_0_0.2M: what the slowest rungs reached on a CPU

# (recipe, what the rung changes): each rung one difference from the one before it.
LADDER: list[tuple[str, str]] = [
    ("lowsample_mlp", "rung 0, the symbolic default: 64 envs x 64 steps, 4 x 8 minibatches, separate 2 x 256 "
                      "actor and critic MLPs (LayerNorm, ReLU)"),
    ("ladder_rollout", "rung 1: the paper's rollout shape and epochs (8 envs x 512 steps, 3 x 8)"),
    ("ladder_trunk", "rung 2: the paper's trunk and shared heads on the flat vector (LN -> 256 -> LN -> 1024)"),
    ("ladder_grid", "rung 3: the paper's encoder on the symbolic grid (IMPALA + GroupNorm, 32-64-64) before the "
                    "trunk"),
    ("ladder_drawn", "rung 4: the map drawn as a 21 x 27 RGB image (3 x 3 pixels a cell) through the pixel network "
                     "(16-32-32)"),
    ("ladder_pixels_narrow", "rung 5: pixel observations through the paper's network at 16-32-32"),
]

# The paper's pixel agent (configs/crafter_ppo_paper_agent.yaml, one seed on one H200, commit 62f66e5): its score
# over the 3,018 episodes of its first 487,424 steps (stopped by the session's time limit before 0.5M), its return
# as defined above (633 episodes in the chunks ending at 401,408-487,424 steps), steady training speed on the GPU.
PIXEL_AGENT = {"rung": "reference: the paper's pixel agent (IMPALA 64-128-128, 8 envs x 512 steps; one H200 seed, "
                       "score over its first 487,424 steps)",
               "recipe": "configs/crafter_ppo_paper_agent.yaml", "seeds": 1, "trained_to": 516_096,
               "score_0_0.5M": 9.673, "score_0_0.5M_std": 0.0,
               # its run logged returns, not achievements, per chunk: no score over a shorter horizon
               "score_0_0.2M": None, "score_0_0.2M_std": None, "score_0_1M": None, "score_0_1M_std": None,
               "return_at_0.5M": 8.000, "env_steps_per_s": 1_724, "device": "gpu:NVIDIA H200",
               "parameters": 3_950_738, "source": "../shared/gpu/2026-11-27/pixel_agent_1seed.json"}


def return_at(row: dict, window=RETURN_WINDOW) -> tuple[float | None, list[float]]:
    """(mean over seeds, per seed) of the mean return of the episodes finished in chunks ending in `window` (None,
    []: the row was not trained past it)."""
    lo, hi = window
    sel = [c for c in row["chunks"] if lo < c["env_steps"] <= hi]
    if not sel or row["chunks"][-1]["env_steps"] < hi:
        return None, []
    per_seed = ase._pool(sel)["reward"]
    return float(np.nanmean(per_seed)), per_seed.tolist()


def score_first(row: dict, horizon: int = COMMON_HORIZON) -> tuple[float | None, float | None]:
    """(mean, std over seeds) of the Crafter score of the episodes finished in chunks ending by `horizon` (None, None:
    the row was not trained that far)."""
    sel = [c for c in row["chunks"] if c["env_steps"] <= horizon]
    if not sel or row["chunks"][-1]["env_steps"] < horizon:
        return None, None
    per_seed = crafter_score(ase._pool(sel)["success"])
    return float(np.mean(per_seed)), float(np.std(per_seed))


def parameters(recipe: str) -> int:
    """One agent's network parameters for `recipe` as the code builds it (shapes only: nothing is computed)."""
    cfg, _, _ = ase.recipe_config(recipe, 1)
    env = CrafterEnv(observation=ase.observation(recipe))
    net = make_network(env, cfg)
    shapes = jax.eval_shape(net.init, jax.random.PRNGKey(0), jnp.zeros(env.obs_shape, env.obs_dtype))
    return count_params(shapes)


def ladder_rows(rows: list[dict], ladder=LADDER) -> list[dict]:
    """One row per rung that has a measured row (its row with the most seeds, then the longest trained)."""
    out = []
    for recipe, rung in ladder:
        measured = [r for r in rows if r["recipe"] == recipe]
        if not measured:
            continue
        row = max(measured, key=lambda r: (r["seeds"], r["chunks"][-1]["env_steps"]))
        summary = ase.summarise(row)[0]
        windows = summary["windows"]
        ret, ret_per_seed = return_at(row)
        early, early_std = score_first(row)

        def score(window, key="score_mean"):
            return windows[window][key] if window in windows else None
        out.append({"rung": rung, "recipe": recipe, "seeds": row["seeds"], "trained_to": summary["env_steps"],
                    "score_0_0.5M": score("first_0.5M"), "score_0_0.5M_std": score("first_0.5M", "score_std"),
                    "score_0_1M": score("first_1M"), "score_0_1M_std": score("first_1M", "score_std"),
                    "score_0_0.2M": early, "score_0_0.2M_std": early_std,
                    "return_at_0.5M": ret, "return_at_0.5M_per_seed": ret_per_seed,
                    "env_steps_per_s": summary["cost"]["steps_per_s_all_agents"],
                    "parameters": parameters(recipe), "load_note": row.get("load_note", "")})
    return out


def table(rows: list[dict]) -> str:
    def pm(r, key):
        return "n/a" if r[key] is None else f"{r[key]:.1f} +/- {r[key + '_std']:.1f}"
    body = [[r["rung"], r["recipe"], r["seeds"], f"{r['trained_to'] / 1e6:.2f}M", pm(r, "score_0_0.2M"),
             pm(r, "score_0_0.5M"), pm(r, "score_0_1M"), r["return_at_0.5M"], f"{r['env_steps_per_s']:,.0f}",
             f"{r['parameters']:,}"]
            for r in rows]
    return markdown_table(["rung", "recipe", "seeds", "trained to", "score 0-0.2M %", "score 0-0.5M %",
                           "score 0-1M %", "return at 0.5M", "env steps/s (all agents)", "parameters"], body)


def write(source: Path, out_dir: Path) -> list[dict]:
    """The ladder's rows from `source` (agent_sample_efficiency's JSON) into out_dir/agent_ladder_<platform>.*"""
    rows = ladder_rows(json.loads(source.read_text())["rows"]) + [PIXEL_AGENT]
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": NAME, "environment": environment(), "source": str(source),
               "return_window": RETURN_WINDOW, "rows": rows}
    stem = out_dir / f"{NAME}_{platform_tag()}"
    Path(f"{stem}.json").write_text(json.dumps(payload, indent=1))
    note = ("Symbolic rungs: plain PPO in Craftax-Classic on this CPU (benchmarks/agent_sample_efficiency.py); the "
            "last row is the pixel agent on a GPU, its speed not comparable. Definitions: benchmarks/agent_ladder.py.")
    Path(f"{stem}.md").write_text(table(rows) + "\n\n" + note + "\n")
    return rows


SPEED_RECIPES = ("lowsample_mlp", "ladder_rollout", "ladder_trunk", "ladder_grid")


def speed(recipes=SPEED_RECIPES, seeds: int = 2, updates: int = 1, repeats: int = 3) -> list[dict]:
    """Each recipe's training chunk (`updates` PPO updates, `seeds` agents) timed side by side: env steps/s of all
    its agents and the ratio to the first recipe's."""
    calls, agents, steps = {}, {}, {}
    for name in recipes:
        cfg, agent_seeds, hparams, _, bank, rows, trainer = ase.recipe_trainer(name, seeds)
        ts = trainer.init(bank, rows, seeds=agent_seeds, hparams=hparams)
        calls[name] = (_carried(trainer.compile_train_chunk(ts, bank, rows, num_updates=updates), ts, bank, rows), ())
        agents[name] = len(agent_seeds)  # seeds x the recipe's grid points
        steps[name] = updates * cfg.steps_per_update * agents[name]
    timed = time_interleaved(calls, repeats)
    out = [{"recipe": name, "seeds": agents[name], "updates_per_call": updates, "env_steps_per_call": steps[name],
            **timed[name], "env_steps_per_s": steps[name] / timed[name]["median_s"]} for name in recipes]
    for r in out:
        r["speed_vs_" + recipes[0]] = r["env_steps_per_s"] / out[0]["env_steps_per_s"]
    return out


def _carried(compiled, ts, bank, rows):
    """A call of the compiled chunk that carries its train state on (the chunk donates it)."""
    state = {"ts": ts}

    def call():
        state["ts"], metrics = compiled(state["ts"], bank, rows)
        return metrics
    return call


def write_speed(rows: list[dict], out_dir: Path) -> str:
    base = rows[0]["recipe"]
    md = markdown_table(["recipe", "seeds", "env steps a call", "median s a call", "env steps/s (all agents)",
                         f"x {base}", "first call s"],
                        [[r["recipe"], r["seeds"], f"{r['env_steps_per_call']:,}", f"{r['median_s']:.2f}",
                          f"{r['env_steps_per_s']:,.0f}", f"{r['speed_vs_' + base]:.2f}",
                          f"{r['compile_and_first_call_s']:.0f}"] for r in rows])
    stem = out_dir / f"{NAME}_speed_{platform_tag()}"
    out_dir.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.json").write_text(json.dumps({"benchmark": NAME + "_speed", "environment": environment(),
                                                "rows": rows}, indent=1))
    note = ("Training chunks (compiled ahead, so the first call is not the compile) timed side by side in one process "
            "(two warm-up calls, timed calls round-robin); a CPU's speeds are for the ratios only. Definitions: "
            "benchmarks/agent_ladder.py.")
    Path(f"{stem}.md").write_text(md + "\n\n" + note + "\n")
    return md


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default=None, help="agent_sample_efficiency's JSON (default: this platform's)")
    ap.add_argument("--out-dir", default=str(RESULTS))
    ap.add_argument("--speed", action="store_true", help="time the rungs' training side by side instead")
    ap.add_argument("--recipes", default=",".join(SPEED_RECIPES), help="--speed's recipes, comma separated; the "
                    "first is the base of the ratios (default: the symbolic rungs 0-3)")
    ap.add_argument("--seeds", type=int, default=2, help="--speed's agents a recipe (default 2, as the screens)")
    ap.add_argument("--updates", type=int, default=1, help="--speed's PPO updates a timed call (default 1)")
    args = ap.parse_args(argv)
    if args.speed:
        names = [n for n in args.recipes.split(",") if n]
        unknown = [n for n in names if n not in ase.RECIPES]
        if unknown or not names:
            ap.error(f"--recipes: {', '.join(unknown) or '(none given)'}; choose from {', '.join(ase.RECIPES)}")
        if args.seeds < 1 or args.updates < 1:
            ap.error("--seeds and --updates must be at least 1")
        print(write_speed(speed(names, args.seeds, args.updates), Path(args.out_dir)))
        return 0
    source = Path(args.source) if args.source else ase.results_path(RESULTS, ".json")
    if not source.exists():
        ap.error(f"--source: {source} does not exist (run benchmarks/agent_sample_efficiency.py first)")
    print(table(write(source, Path(args.out_dir))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
