"""Our configurable full-Craftax step and reset against craftax's own, side by side in one run (issue 72).

  craftax   craftax's CraftaxSymbolicEnvNoAutoReset: `reset` then `steps` steps of n envs, vmapped, default params
  ours      our CraftaxEnv with the original configuration's params row (traced, as a bank row is), the same work

Per env count, two programs a side: n worlds generated, and `steps` steps with random actions from those worlds (no
resets inside). Each pair is timed round-robin after two warm-ups each (`time_interleaved`); `ours_s` and `craftax_s`
are the sums (what a run pays for n worlds and their steps), `ratio` = ours_s / craftax_s, with `reset_ratio` and
`step_ratio` apart. On a CPU read the ratios only.

  python benchmarks/craftax_step.py                      # 8 and 1,024 envs: benchmarks/results/craftax_step_cpu.json
  python benchmarks/craftax_step.py --envs 8 --steps 8 --no-save   # a quick check
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import CPU_NOTE, format_table, save, time_interleaved  # noqa: E402
from envgen_jax.envs.craftax import CraftaxConfig, CraftaxEnv, config_to_params  # noqa: E402


def programs(env, n: int, steps: int):
    """jit: n worlds from a key (the map's sum returned, so nothing is left out), and `steps` vmapped steps with
    random actions from a given state (no resets inside; the summed reward returned)."""
    def reset(key, params):
        _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)
        return state, jax.tree.leaves(state)[0].sum()  # the first leaf is the map, in craftax's state and in ours

    def run(key, state, params):
        def body(state, key):
            action_key, step_key = jax.random.split(key)
            actions = jax.random.randint(action_key, (n,), 0, 43)
            _, state, reward, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, n), state, actions, params)
            return state, reward.sum()

        return jax.lax.scan(body, state, jax.random.split(key, steps))[1].sum()
    return jax.jit(reset), jax.jit(run)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 1024])
    parser.add_argument("--steps", type=int, default=32, help="steps after the reset, per timed call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)

    from craftax.craftax.craftax_state import EnvParams
    from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnvNoAutoReset
    key = jax.random.PRNGKey(0)
    ours_params = jax.device_put(config_to_params(CraftaxConfig.original()))
    rows = []
    for n in args.envs:
        (reset_theirs, run_theirs), (reset_ours, run_ours) = (
            programs(CraftaxSymbolicEnvNoAutoReset(), n, args.steps), programs(CraftaxEnv(), n, args.steps))
        worlds = time_interleaved({"craftax": (reset_theirs, (key, EnvParams())),
                                   "ours": (reset_ours, (key, ours_params))}, repeats=args.repeats)
        start_theirs, start_ours = reset_theirs(key, EnvParams())[0], reset_ours(key, ours_params)[0]
        steps = time_interleaved({"craftax": (run_theirs, (key, start_theirs, EnvParams())),
                                  "ours": (run_ours, (key, start_ours, ours_params))}, repeats=args.repeats)
        total = {name: worlds[name]["median_s"] + steps[name]["median_s"] for name in ("ours", "craftax")}
        rows.append({"num_envs": n, "steps": args.steps, "ours_s": total["ours"], "craftax_s": total["craftax"],
                     "ratio": total["ours"] / total["craftax"],
                     "reset_ratio": worlds["ours"]["median_s"] / worlds["craftax"]["median_s"],
                     "step_ratio": steps["ours"]["median_s"] / steps["craftax"]["median_s"],
                     "reset": worlds, "steps_timed": steps})
    print(format_table(["num_envs", "steps", "ours_s", "craftax_s", "ratio", "reset_ratio", "step_ratio"],
                       [[r["num_envs"], r["steps"], f"{r['ours_s']:.3f}", f"{r['craftax_s']:.3f}",
                         f"{r['ratio']:.3f}", f"{r['reset_ratio']:.3f}", f"{r['step_ratio']:.3f}"] for r in rows],
                       title="full Craftax: n worlds + steps, ours (configurable) vs craftax's own"))
    if not args.no_save:
        path = save("craftax_step", {"note": CPU_NOTE, "what": "n worlds generated (one program) plus `steps` "
                                     "vmapped steps from them (another), each side timed round-robin against "
                                     "craftax's; ratio = ours_s / craftax_s of the sum", "rows": rows})
        print(f"saved {path}")


if __name__ == "__main__":
    main()
