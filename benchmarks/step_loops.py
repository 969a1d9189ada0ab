"""How many while loops Craftax-Classic's step holds, with its short loops as scans and unrolled (issue 64 item 1),
and, with --time, how long the env step takes at each batch size for each.

    python benchmarks/step_loops.py --out benchmarks/results/step_loops_cpu.json             # the counts, on a CPU
    python benchmarks/step_loops.py --time 8,128 --out step_loops.json                       # a GPU: counts and times
    XLA_FLAGS=... python benchmarks/step_loops.py --time 8,128 --label cmdbuf --out ...      # XLA's options: a process
    python benchmarks/step_loops.py --cpu-tiny --time 2 --out /tmp/step_loops.json           # a dry run

Programs, each compiled for the device it runs on (scan | unrolled: benchmarks/unrolled_loops.py):
    step     `CrafterEnv.step` vmapped over --envs envs (default 8): craftax's step plus the pixel render, the program
             the issue counted (73 while loops, about 1,005 fusions on a CPU with jax 0.10.2)
    vecstep  `VecEnv.step`, what the rollout runs: the step and render, plus the auto-reset's spare world (one world
             generation and its render a step)
    chunk    a whole training chunk of configs/crafter_ppo_paper_agent_wide.yaml (one update, 2 agents, tiny
             convolutions: the loops do not depend on the widths), its rows fixed and drawn per episode (a
             RowSampler, as fused studies run); lowered for CUDA only, nothing compiled: its loops and the
             functions that hold them (the rollout, GAE, epochs and minibatches are loops by design)
For each: `while` and `fusion` instructions in the compiled HLO (`compiled.as_text()`), and `stablehlo.while` in
the program lowered for CUDA before XLA's passes (on a CPU each jax.random call adds a loop of its own, threefry's
rolled rounds, that a GPU lowering does not have; the CUDA lowering needs no GPU). --time: the rollout's env
steps alone (`vecstep` in a scan of --steps steps, random actions; pixel_speed.py's `env` part) at each batch size,
every variant compiled, warmed up twice, then timed side by side (round-robin, --repeats each): ms per step and
env steps/s. Rows are saved as measured and rows of
other labels kept, so XLA's options (--label, one process each) end up side by side in one file.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import environment, time_interleaved, write_text_atomic  # noqa: E402
from benchmarks.unrolled_loops import make_env  # noqa: E402

VARIANTS = ("scan", "unrolled")
WIDE = Path(__file__).resolve().parent.parent / "configs" / "crafter_ppo_paper_agent_wide.yaml"


def hlo_counts(compiled_text: str) -> dict:
    """While loops and fusions among the instructions of an optimised HLO module's text."""
    return {"while": len(re.findall(r"\swhile\(", compiled_text)),
            "fusion": len(re.findall(r"\sfusion\(", compiled_text))}


def lowered_whiles(traced, platform: str) -> int | None:
    """`stablehlo.while` ops of the program lowered for `platform` (None: this jax cannot lower for it here)."""
    try:
        text = traced.lower(lowering_platforms=(platform,)).as_text()
    except Exception:  # noqa: BLE001 (a jax without that platform's lowering rules: no figure, not a failure)
        return None
    return text.count("stablehlo.while")


def programs(variant: str, num_envs: int, steps: int, concrete: bool = True):
    """{name: (function, args)} of the programs to count and time, for one variant; `concrete` False: the env states
    as shapes only (enough to trace, lower and compile: nothing is generated or run)."""
    from envgen_jax.envs.crafter import CrafterConfig, make_params
    from envgen_jax.envs.vector import VecEnv

    env = make_env(variant, "pixels")
    venv = VecEnv(env, num_envs, resets_per_step=1)
    bank = make_params([CrafterConfig.original()])
    rows = jnp.zeros(num_envs, jnp.int32)
    key = jax.random.PRNGKey(0)
    _, vstate = (jax.jit(venv.reset) if concrete else partial(jax.eval_shape, venv.reset))(key, bank, rows)
    actions = jnp.zeros(num_envs, jnp.int32)
    params = bank.get(rows)

    def step(keys, state, actions, params):
        return jax.vmap(env.step)(keys, state, actions, params)

    def vecstep(key, vstate, actions):
        return venv.step(key, vstate, actions, bank, rows)

    def env_steps(vstate, key):  # pixel_speed.py's `env` part: the rollout's env steps, random actions
        def one(vstate, k):
            k_act, k_env = jax.random.split(k)
            action = jax.random.randint(k_act, (num_envs,), 0, env.num_actions)
            _, vstate, info = venv.step(k_env, vstate, action, bank, rows)
            return vstate, info.reward
        return jax.lax.scan(one, vstate, jax.random.split(key, steps))[1].sum()

    keys = jax.random.split(key, num_envs)
    return {"step": (step, (keys, vstate.env, actions, params)),
            "vecstep": (vecstep, (key, vstate, actions)),
            "env_steps": (env_steps, (vstate, key))}


def count(variant: str, num_envs: int, names: list[str]):
    """A row per counted program, yielded as measured."""
    for name, (fn, args) in programs(variant, num_envs, steps=1, concrete=False).items():
        if name not in names:
            continue
        traced = jax.jit(fn).trace(*args)
        start = time.perf_counter()
        compiled = traced.lower().compile()
        compile_s = time.perf_counter() - start
        row = {"kind": "count", "program": name, "variant": variant, "envs": num_envs,
               **hlo_counts(compiled.as_text()), "compile_s": round(compile_s, 2),
               "while_lowered_cuda": lowered_whiles(traced, "cuda")}
        print(f"step_loops {variant} {name} x{num_envs}: {row}", flush=True)
        yield row


def chunk_loops(variant: str):
    """A row per layout (fixed rows, drawn rows): the wide preset's training chunk lowered for CUDA, its while loops
    counted by the function that holds them."""
    import dataclasses

    from envgen_jax.envs.crafter import CrafterConfig, make_params
    from envgen_jax.envs.vector import RowSampler
    from envgen_jax.run_config import load_run_config
    from envgen_jax.trainer import make_trainer
    from envgen_jax.trainer.train import lowered_chunk

    tiny = ["network.conv.channels=[4,8]", "network.conv.width=16", "network.conv.head_width=32"]
    cfg = load_run_config(WIDE, tiny)
    env = make_env(variant, cfg.observation)
    trainer = make_trainer(env, dataclasses.replace(cfg.trainer_ppo, num_agents=2))
    bank = make_params([CrafterConfig.original()] * 4)
    layouts = {"fixed": np.zeros(cfg.ppo.num_envs, np.int32), "drawn": RowSampler(np.full(4, 0.25, np.float32))}
    for layout, rows in layouts.items():
        ts = jax.eval_shape(trainer.init, bank, rows)
        text = lowered_chunk(trainer, ts, bank, rows, num_updates=1, platforms=("cuda",)).as_text()
        holders, function = {}, None
        for line in text.splitlines():
            if m := re.match(r"\s*func\.func (?:public |private )?@([\w.\-]+)", line):
                function = re.sub(r"_\d+$", "", m.group(1))
            if "stablehlo.while" in line:
                holders[function] = holders.get(function, 0) + 1
        row = {"kind": "count", "program": "chunk", "rows": layout, "variant": variant, "envs": cfg.ppo.num_envs,
               "while_lowered_cuda": sum(holders.values()), "functions": holders}
        print(f"step_loops {variant} chunk ({layout} rows): {row}", flush=True)
        yield row


def timing(variants: list[str], num_envs: int, steps: int, repeats: int) -> list[dict]:
    """The rollout's env steps at `num_envs`, every variant compiled, then timed side by side (round-robin)."""
    calls, compile_s = {}, {}
    for variant in variants:
        fn, args = programs(variant, num_envs, steps)["env_steps"]
        start = time.perf_counter()
        calls[variant] = (jax.jit(fn).lower(*args).compile(), args)
        compile_s[variant] = time.perf_counter() - start
    rows = []
    for variant, t in time_interleaved(calls, repeats=repeats).items():
        rows.append({"kind": "time", "program": "env_steps", "variant": variant, "envs": num_envs, "steps": steps,
                     "compile_s": round(compile_s[variant], 2), "median_s": t["median_s"], "times_s": t["times_s"],
                     "ms_per_step": round(1e3 * t["median_s"] / steps, 4),
                     "env_steps_per_s": round(num_envs * steps / t["median_s"], 1)})
        print(f"step_loops {variant} env_steps x{num_envs}: {rows[-1]['ms_per_step']} ms a step, "
              f"{rows[-1]['env_steps_per_s']:,.0f} env steps/s (compile {compile_s[variant]:.0f} s)", flush=True)
    return rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="scan, unrolled or both (default both)")
    ap.add_argument("--envs", type=int, default=8, help="envs of the counted programs (default 8)")
    ap.add_argument("--time", default="", help="batch sizes to time the env steps at, e.g. 8,128 (default: none)")
    ap.add_argument("--steps", type=int, default=64, help="env steps a timed call (default 64)")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls after two warm-ups (default 5)")
    ap.add_argument("--count", default="step,vecstep,chunk",
                    help="programs whose loops to count, comma separated: step, vecstep, chunk, or none (default all "
                         "three)")
    ap.add_argument("--label", default="default", help="a name for this process's XLA options (default 'default')")
    ap.add_argument("--cpu-tiny", action="store_true", help="a dry run: 2 envs counted, 4 steps a timed call")
    ap.add_argument("--out", type=Path, required=True, help="the JSON (rows of other labels are kept)")
    args = ap.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if set(variants) - set(VARIANTS) or not variants:
        ap.error(f"--variants: choose from {', '.join(VARIANTS)}, got {args.variants!r}")
    try:
        batch_sizes = [int(n) for n in args.time.split(",") if n]
    except ValueError:
        ap.error(f"--time: batch sizes as integers, comma separated, got {args.time!r}")
    counted = [p for p in args.count.split(",") if p and p != "none"]
    if set(counted) - {"step", "vecstep", "chunk"}:
        ap.error(f"--count: choose from step, vecstep, chunk, none, got {args.count!r}")
    if args.cpu_tiny:
        args.envs, args.steps, args.repeats = 2, 4, 1

    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    result = {"benchmark": "step_loops",
              "definition": "while / fusion: instructions of the compiled HLO (this device); while_lowered_cuda: "
                            "stablehlo.while ops of the same program lowered for CUDA, before XLA's passes; "
                            "ms_per_step: median timed call / steps (two warm-ups first)",
              "environments": {**old.get("environments", {}), args.label: environment()},
              "xla_flags": {**old.get("xla_flags", {}), args.label: os.environ.get("XLA_FLAGS", "")},
              "rows": [r for r in old.get("rows", []) if r.get("label") != args.label]}
    save = lambda: write_text_atomic(args.out, json.dumps(result, indent=1, default=str))  # noqa: E731
    for variant in variants:  # each row saved as measured: a run cut off by its time box keeps them
        for row in count(variant, args.envs, counted):
            result["rows"].append({"label": args.label, **row})
            save()
        for row in chunk_loops(variant) if "chunk" in counted else ():
            result["rows"].append({"label": args.label, **row})
            save()
    for n in batch_sizes:  # the variants side by side at each batch size
        result["rows"] += [{"label": args.label, **row} for row in timing(variants, n, args.steps, args.repeats)]
        save()
    return result


if __name__ == "__main__":
    main()
