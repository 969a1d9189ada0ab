"""Where the paper's pixel agent spends its time (issue 57), for several seed counts and network variants.

    python benchmarks/pixel_speed.py --out pixel_speed.json                                   # a GPU: the preset
    python benchmarks/pixel_speed.py --cpu-tiny --seeds 1,2 --out /tmp/pixel_speed.json      # a dry run on a CPU
    python benchmarks/pixel_speed.py --config configs/crafter_ppo_paper_agent_wide.yaml --seeds 1,4,8,16 \
        --variants dense:bfloat16 --parts chunk --out ...      # the wide rollout's whole updates (issue 64 item 2)
    ... --set game_options.step_loops=unrolled                 # any run-configuration override (this one: the
                                                               # short loops unrolled, benchmarks/unrolled_loops.py)
    XLA_FLAGS=... python benchmarks/pixel_speed.py --label cmdbuf --out ...   # a variant of XLA's options: a process

Parts, each its own compiled program over S seeds (--config's sizes; by default configs/crafter_ppo_paper_agent.yaml's:
8 envs x 512 steps, 3 epochs x 8 minibatches), timed after two warm-up calls:
    env      the rollout's env steps alone (random actions; Craftax's step and pixel renderer)     per variant: once
    rollout  the rollout as PPO runs it: env steps + the policy's forward pass each step
    learn    the update's epochs: forward and backward passes and Adam over the rollout's minibatches
    chunk    one whole PPO update (rollout, GAE, learn) as a training chunk runs it: the figure that counts
    eval     the evaluator's loop (8 envs a seed, a fixed number of steps, sampling the policy)
so `rollout - env` is the forward passes and `chunk - rollout - learn` the rest. A variant is
`seed_axis:compute_dtype` (execution.seed_axis vmap | map, or dense: vmap with execution.conv_as_matmul;
execution.compute_dtype float32 | bfloat16).

Every row is saved as it is measured (a run cut off by a time limit keeps its rows) and rows from earlier
invocations are kept (a row measured again replaces its older self), so parts, seed counts, configurations and
variants of XLA's flags (`--label`) measured in separate processes end up side by side in one file; a row names its
configuration (`config`) and overrides (`set`).
A part that fails (out of memory, say) is saved as a row with its error, and the next part goes on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import ROOT, environment, time_call, write_text_atomic  # noqa: E402

CONFIG = ROOT / "configs" / "crafter_ppo_paper_agent.yaml"
TINY = ["ppo.num_envs=2", "ppo.num_steps=8", "ppo.update_epochs=1", "ppo.num_minibatches=2",
        "network.conv.channels=[4,8]", "network.conv.width=16", "network.conv.head_width=32"]
PARTS = ("env", "rollout", "learn", "chunk", "eval")
VARIANTS = ("vmap:float32", "dense:float32", "dense:bfloat16")


def _variant(text: str) -> tuple[str, str]:
    axis, _, dtype = text.partition(":")
    if axis not in ("vmap", "map", "dense") or dtype not in ("float32", "bfloat16"):
        raise argparse.ArgumentTypeError(f"a variant is seed_axis:compute_dtype with seed_axis vmap | map | dense "
                                         f"and compute_dtype float32 | bfloat16, got {text!r}")
    return axis, dtype


def _timed(fn, *args, repeats: int) -> dict:
    """Compile ahead of time (timed apart), then `time_call`: two warm-up calls and the median of `repeats`."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    timing = time_call(compiled, *args, repeats=repeats)
    return {"compile_s": round(compile_s, 2), "median_s": timing["median_s"], "times_s": timing["times_s"]}


class Parts:
    """The compiled pieces of one trainer's update, each over every seed (the trainer's own seed axis)."""

    def __init__(self, trainer, bank, rows, eval_steps: int):
        self.trainer, self.bank, self.rows, self.eval_steps = trainer, bank, rows, eval_steps
        self.cfg, self.ppo, self.venv = trainer.cfg, trainer.ppo, trainer.venv
        self.over = trainer.over_seeds  # the trainer's own seed axis

    def env(self, ts):
        def one(env_state, key):
            def step(env_state, k):
                k_act, k_env = jax.random.split(k)
                action = jax.random.randint(k_act, (self.cfg.ppo.num_envs,), 0, self.trainer.num_actions)
                _, env_state, info = self.venv.step(k_env, env_state, action, self.bank, self.rows)
                return env_state, info.reward
            return jax.lax.scan(step, env_state, jax.random.split(key, self.cfg.ppo.num_steps))[1].sum()
        return self.over(one, (0, 0)), (ts.env_state, ts.key)

    def rollout(self, ts):
        def one(params, obs, env_state, memory, key):
            out = self.ppo.rollout(params, obs, env_state, memory, key, self.bank, self.rows)
            return out[3].value.sum()
        return self.over(one, (0, 0, 0, 0, 0)), (ts.params, ts.obs, ts.env_state, ts.memory, ts.key)

    def learn(self, ts, traj):
        def one(params, opt_state, hparams, traj, memory, key):
            adv = traj.reward - traj.value  # any advantages: the cost does not depend on them
            return self.ppo.learn(params, opt_state, hparams, traj, adv, traj.value, memory, key)[2]["total_loss"]
        return self.over(one, (0,) * 6), (ts.params, ts.opt_state, ts.hparams, traj, ts.memory, ts.key)

    def trajectory(self, ts):
        """One rollout's Transition [S, T, N] (the input of `learn`)."""
        def one(params, obs, env_state, memory, key):
            return self.ppo.rollout(params, obs, env_state, memory, key, self.bank, self.rows)[3]
        return jax.jit(self.over(one, (0,) * 5))(ts.params, ts.obs, ts.env_state, ts.memory, ts.key)


def _key(row: dict) -> tuple:
    """What makes a row: a row measured again replaces its older self (rows of older files had no config)."""
    return (row["label"], row.get("config", CONFIG.name), tuple(row.get("set", ())), row["variant"], row["seeds"],
            row["part"])


def measure(args, cfg, env, bank, rows, variant, seeds, result, save):
    from envgen_jax.trainer.evaluate import make_evaluator
    from envgen_jax.trainer import make_trainer
    axis, dtype = variant
    dense = axis == "dense"  # the seeds vmapped, each convolution a matrix product (execution.conv_as_matmul)
    execution = dataclasses.replace(cfg.execution, seed_axis="vmap" if dense else axis, conv_as_matmul=dense,
                                    compute_dtype=dtype)
    ppo = dataclasses.replace(cfg.trainer_ppo, execution=execution, num_agents=seeds)
    trainer = make_trainer(env, ppo)
    ts = trainer.init(bank, rows)
    parts = Parts(trainer, bank, rows, args.eval_steps)
    steps = seeds * ppo.steps_per_update  # env steps of one update, all seeds
    for part in args.parts:
        name = "env" if part == "env" else f"{axis}:{dtype}"
        row = {"label": args.label, "config": args.config_name, "set": args.set, "variant": name, "seeds": seeds,
               "part": part}
        if part == "env" and any(_key(r) == _key(row) for r in result["rows"]):
            continue  # the env alone does not depend on the network variant
        try:
            if part == "chunk":
                t0 = time.perf_counter()
                run = trainer.compile_train_chunk(ts, bank, rows, num_updates=1)
                compile_s = time.perf_counter() - t0
                times = []
                for i in range(2 + args.repeats):
                    t0 = time.perf_counter()
                    ts, _ = jax.block_until_ready(run(ts, bank, rows))
                    if i >= 2:
                        times.append(time.perf_counter() - t0)
                timing = {"compile_s": round(compile_s, 2), "median_s": statistics.median(times), "times_s": times}
                row_steps = steps
            elif part == "eval":
                evaluator = make_evaluator(trainer, ppo.ppo.num_envs, episodes_per_env=10**6, max_steps=args.eval_steps)
                key = np.zeros(2, np.uint32)
                fn = lambda p: evaluator._run(p, key, np.int32(-1), bank, rows, np.int32(0))[1]  # noqa: E731
                timing = _timed(fn, ts.params, repeats=args.repeats)
                row_steps = seeds * ppo.ppo.num_envs * args.eval_steps
            elif part == "learn":
                fn, fn_args = parts.learn(ts, parts.trajectory(ts))
                timing = _timed(fn, *fn_args, repeats=args.repeats)
                row_steps = steps
            else:
                fn, fn_args = getattr(parts, part)(ts)
                timing = _timed(fn, *fn_args, repeats=args.repeats)
                row_steps = steps
            row.update(timing, env_steps=row_steps, env_steps_per_s=round(row_steps / timing["median_s"], 1))
            print(f"pixel_speed [{args.label}] {name} x{seeds} {part}: {row['env_steps_per_s']:,.0f} env steps/s "
                  f"({timing['median_s'] * 1e3:.1f} ms a call; compile {timing['compile_s']:.0f} s)", flush=True)
        except Exception as e:  # an out-of-memory variant is a result too; the next part goes on
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            print(f"pixel_speed [{args.label}] {name} x{seeds} {part}: failed: {row['error']}", flush=True)
        result["rows"] = [r for r in result["rows"] if _key(r) != _key(row)] + [row]
        save()
    del trainer, ts, parts


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="1,4,16", help="seed counts, comma separated (default 1,4,16)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help=f"seed_axis:compute_dtype, comma separated, in the order measured (default {','.join(VARIANTS)})")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"parts to time, comma separated ({', '.join(PARTS)})")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per part after two warm-ups (default 3)")
    ap.add_argument("--eval-steps", type=int, default=256, help="steps of the evaluation loop (default 256)")
    ap.add_argument("--label", default="default", help="a name for this process's XLA options (default 'default')")
    ap.add_argument("--cpu-tiny", action="store_true", help="tiny widths and rollouts: a dry run on a CPU")
    ap.add_argument("--config", type=Path, default=CONFIG, help=f"the run configuration (default {CONFIG.name})")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="overrides of the run configuration, as `envgen-jax train --set`")
    ap.add_argument("--out", type=Path, required=True, help="the JSON (its earlier rows are kept)")
    args = ap.parse_args(argv)
    try:
        variants = [_variant(v) for v in args.variants.split(",") if v]
        seed_counts = [int(s) for s in args.seeds.split(",") if s]
    except (argparse.ArgumentTypeError, ValueError) as e:
        ap.error(f"--variants/--seeds: {e}")
    args.parts = [p for p in args.parts.split(",") if p]
    if set(args.parts) - set(PARTS):
        ap.error(f"--parts: choose from {', '.join(PARTS)}, got {args.parts}")

    from envgen_jax import games
    from envgen_jax.envs.crafter import CrafterConfig, make_params
    from envgen_jax.run_config import load_run_config

    args.config_name = args.config.name
    # `game_options.step_loops=unrolled` (rows keep it in their `set`) is the experiment outside the package:
    # Crafter's env with its short loops unrolled (benchmarks/unrolled_loops.py)
    unrolled = "game_options.step_loops=unrolled" in args.set
    cfg = load_run_config(args.config, [*(TINY if args.cpu_tiny else []),
                                        *(s for s in args.set if not s.startswith("game_options.step_loops="))])
    if unrolled:
        from benchmarks.unrolled_loops import make_env
        env = make_env("unrolled", cfg.observation)
    else:
        env = games.get(cfg.env).make_env(cfg.observation, cfg.game_options)
    bank = make_params([CrafterConfig.original()])
    rows = jax.device_put(np.zeros(cfg.ppo.num_envs, np.int32))
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    result = {"benchmark": "pixel_speed", "config": str(CONFIG.relative_to(ROOT)) + " unless a row names another",
              "definition": "env_steps_per_s = env steps of one call (all seeds) / the median timed call after two "
                            "warm-ups; compile_s: ahead-of-time lower + compile; eval counts its loop's steps",
              "settings": {"num_envs": cfg.ppo.num_envs, "num_steps": cfg.ppo.num_steps, "cpu_tiny": args.cpu_tiny,
                           "update_epochs": cfg.ppo.update_epochs, "num_minibatches": cfg.ppo.num_minibatches,
                           "eval_steps": args.eval_steps, "repeats": args.repeats},
              "environments": {**old.get("environments", {}), args.label: environment()},
              "rows": old.get("rows", [])}  # a row measured again replaces its older self (`measure`)
    save = lambda: write_text_atomic(args.out, json.dumps(result, indent=1, default=str))  # noqa: E731
    save()
    print(f"pixel_speed [{args.label}] on {result['environments'][args.label]['device']}, XLA_FLAGS="
          f"{os.environ.get('XLA_FLAGS', '')!r}", flush=True)
    for seeds in seed_counts:
        for variant in variants:
            measure(args, cfg, env, bank, rows, variant, seeds, result, save)
    return result


if __name__ == "__main__":
    main()
