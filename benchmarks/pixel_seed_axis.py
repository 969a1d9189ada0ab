"""The paper's pixel agent's training chunk with its seeds vmapped against one after another (`ppo.seed_axis`),
side by side in one process.

    python benchmarks/pixel_seed_axis.py --out pixel_seed_axis.json                 # the preset, 4 seeds (a GPU)
    python benchmarks/pixel_seed_axis.py --cpu-tiny --out /tmp/pixel_seed_axis.json  # tiny widths, a dry run

Vmapped over their parameters, the IMPALA network's convolutions become grouped convolutions (feature_group_count =
seeds in the lowered program); `map` runs the seeds one after another, each with dense convolutions. Each variant is
compiled ahead of time (timed on its own), called twice to warm up, then timed, before the next variant is built
(so a run stopped by a time limit keeps the first variant's speed; the first GPU try, timing round-robin after both
compiles, kept nothing). The JSON is rewritten after every call.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import environment, write_text_atomic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "crafter_ppo_paper_agent.yaml"
TINY = ["ppo.num_envs=2", "ppo.num_steps=16", "ppo.update_epochs=1", "ppo.num_minibatches=2",
        "network.conv.channels=[4,8]", "network.conv.width=16", "network.conv.head_width=32"]
MODES = ("map", "vmap")  # map first: the first GPU try compiled vmap (88 s) and never reached map


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=4, help="agents in the chunk (default 4, the pixel stage's)")
    ap.add_argument("--updates", type=int, default=1, help="PPO updates per timed call (default 1)")
    ap.add_argument("--repeats", type=int, default=2, help="timed calls per variant after two warm-ups (default 2)")
    ap.add_argument("--modes", type=lambda t: [m for m in t.split(",") if m], default=list(MODES),
                    help="variants in the order measured (default map,vmap: the one not yet measured first)")
    ap.add_argument("--cpu-tiny", action="store_true", help="tiny widths and rollouts: a dry run on a CPU")
    ap.add_argument("--out", type=Path, required=True, help="the JSON to write (replaced atomically)")
    args = ap.parse_args(argv)
    if not args.modes or set(args.modes) - set(MODES):
        ap.error(f"--modes: choose from {', '.join(MODES)} (comma separated), got {args.modes}")

    from envgen_jax import games
    from envgen_jax.envs.crafter import CrafterConfig, make_params
    from envgen_jax.run_config import load_run_config
    from envgen_jax.trainer.factory import make_trainer

    cfg = load_run_config(CONFIG, [f"seeds={args.seeds}", *(TINY if args.cpu_tiny else [])])
    env = games.get(cfg.env).make_env(cfg.observation, cfg.game_options)
    bank = make_params([CrafterConfig.original()])
    rows = np.zeros(cfg.ppo.num_envs, np.int32)
    steps_per_call = args.updates * cfg.ppo.num_envs * cfg.ppo.num_steps * args.seeds
    result = {"benchmark": "pixel_seed_axis", "environment": environment(), "config": str(CONFIG.relative_to(ROOT)),
              "settings": {"seeds": args.seeds, "updates_per_call": args.updates, "repeats": args.repeats,
                           "cpu_tiny": args.cpu_tiny, "num_envs": cfg.ppo.num_envs, "num_steps": cfg.ppo.num_steps,
                           "conv_channels": list(cfg.network.conv.channels), "steps_per_call": steps_per_call},
              "definition": "compile_s: ahead-of-time lower + compile of the chunk; median_s: the median timed call "
                            "after two warm-ups; steps_per_s = steps_per_call / median_s (all seeds)",
              "variants": {}}

    def save():
        write_text_atomic(args.out, json.dumps(result, indent=2, default=str))

    for how in args.modes:
        execution = dataclasses.replace(cfg.execution, seed_axis=how)
        trainer = make_trainer(env, dataclasses.replace(cfg.trainer_ppo, execution=execution))
        ts = trainer.init(bank, rows)
        start = time.perf_counter()
        run = trainer.compile_train_chunk(ts, bank, rows, num_updates=args.updates)
        v = result["variants"][how] = {"compile_s": time.perf_counter() - start, "warmup_s": [], "times_s": []}
        print(f"pixel_seed_axis {how}: compiled in {v['compile_s']:.1f} s", flush=True)
        save()
        # Timed right after its compile, so a run stopped by a time limit keeps the first variant's speed.
        for times in (v["warmup_s"],) * 2 + (v["times_s"],) * args.repeats:
            start = time.perf_counter()  # warm-ups: the first calls can retrace where weak types change
            ts, _ = jax.block_until_ready(run(ts, bank, rows))
            times.append(time.perf_counter() - start)
            save()
        v["median_s"] = statistics.median(v["times_s"])
        v["steps_per_s"] = steps_per_call / v["median_s"]
        print(f"pixel_seed_axis {how}: {v['median_s']:.3f} s a call, {v['steps_per_s']:,.0f} env steps/s", flush=True)
        save()
        del run, ts, trainer  # one variant's buffers at a time
    if set(result["variants"]) != set(MODES):
        return result
    result["map_over_vmap_speed"] = result["variants"]["map"]["steps_per_s"] / result["variants"]["vmap"]["steps_per_s"]
    print(f"pixel_seed_axis: map / vmap speed {result['map_over_vmap_speed']:.2f}x on {result['environment']['device']}")
    save()
    return result


if __name__ == "__main__":
    main()
