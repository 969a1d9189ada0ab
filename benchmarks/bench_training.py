"""Training throughput vs env-only stepping, homogeneous vs heterogeneous config banks.

For each env count N (per seed, one seed):
  env-only   random actions through VecEnv in a jitted lax.scan of `num_steps` steps (the upper limit)
  train-homo train_chunk (Craftax-baseline PPO: 64 steps, 4 epochs x 8 minibatches, 3 x 512 MLP) with a bank of K
             rows that are all the original config
  train-het  the same compiled train_chunk with a bank of K different configs (biomes, rarities, inventories, ...)
Compile time is measured on its own (AOT lower + compile); each timed function is warmed up twice, then timed
`repeats` times with block_until_ready, and the best and median are kept. SPS = env steps / second.

    python benchmarks/bench_training.py                      # GPU default: N = 1024 .. 16384
    python benchmarks/bench_training.py --cpu-tiny           # CPU smoke: N = 8, 32, tiny updates

Writes benchmarks/results/bench_training_<platform>_<UTC time>.json (device, versions, git commit, numbers).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import git_commit  # noqa: E402
from envgen_jax.envs.crafter.config import CrafterConfig  # noqa: E402
from envgen_jax.envs.crafter.env import CrafterEnv, make_params  # noqa: E402
from envgen_jax.envs.vector import VecEnv  # noqa: E402
from envgen_jax.trainer.config import ExecutionConfig, TrainerConfig  # noqa: E402
from envgen_jax.trainer.factory import make_trainer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def heterogeneous_configs(k: int) -> list[CrafterConfig]:
    base = CrafterConfig.original()
    menu = [
        dict(),
        dict(target_biome="grassland", tree_rarity="very common", cows="very common"),
        dict(target_biome="mountain", coal_rarity="very common", iron_rarity="very common", skeletons="rare"),
        dict(target_biome="beaches", wood=3, stone=2, wood_pickaxe=1),
        dict(table_nearby=True, furnace_nearby=True, coal=2, iron=1, episode_length=1024),
        dict(peaceful=True, day_length=100, diamond_rarity="very common"),
        dict(zombies="very common", wood_sword=1, stone_sword=1, episode_length=512),
        dict(target_biome="mountain", stone_pickaxe=1, iron_rarity="rare", cows="none"),
    ]
    return [dataclasses.replace(base, **menu[i % len(menu)]) for i in range(k)]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def time_calls(fn, state, repeats: int, warmup: int = 2):
    """Warm up, then time `repeats` calls of state -> fn(state) (the state is threaded, as donation requires)."""
    for _ in range(warmup):
        state = jax.block_until_ready(fn(state))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        state = jax.block_until_ready(fn(state))
        times.append(time.perf_counter() - t0)
    return state, times


def bench_env_only(env, n: int, num_steps: int, bank, rows, repeats: int, resets_per_step: int):
    venv = VecEnv(env, n, resets_per_step)

    def run(key, vstate, obs, bank, rows):
        def body(carry, k):
            vstate, obs, ret = carry
            k_act, k_env = jax.random.split(k)
            actions = jax.random.randint(k_act, (n,), 0, env.num_actions)
            obs, vstate, info = venv.step(k_env, vstate, actions, bank, rows)
            return (vstate, obs, ret + info.reward.sum()), None

        key, k = jax.random.split(key)
        (vstate, obs, ret), _ = jax.lax.scan(body, (vstate, obs, jnp.float32(0)), jax.random.split(k, num_steps))
        return key, vstate, obs, ret

    obs, vstate = jax.jit(venv.reset)(jax.random.PRNGKey(0), bank, rows)
    key = jax.random.PRNGKey(1)
    jitted = jax.jit(run, donate_argnums=(1, 2))
    t0 = time.perf_counter()
    compiled = jitted.lower(key, vstate, obs, bank, rows).compile()
    compile_s = time.perf_counter() - t0

    def step(s):
        key, vstate, obs, _ = s
        return compiled(key, vstate, obs, bank, rows)

    _, times = time_calls(step, (key, vstate, obs, None), repeats)
    return compile_s, times, num_steps * n


def craftax_baseline(num_envs: int, num_steps: int, width: int, resets_per_step: int) -> TrainerConfig:
    """Craftax_Baselines' agent (`TrainerConfig.craftax_baseline`) at these sizes, its lr annealed over 1e6 updates."""
    base = TrainerConfig.craftax_baseline()
    ppo = dataclasses.replace(base.ppo, num_envs=num_envs, num_steps=num_steps, total_updates=10 ** 6,
                              num_minibatches=min(8, num_envs * num_steps))
    network = dataclasses.replace(base.network, mlp=dataclasses.replace(base.network.mlp, width=width))
    return TrainerConfig(ppo, network, ExecutionConfig(resets_per_step=resets_per_step))


def bench_train(env, cfg: TrainerConfig, updates: int, banks: dict, rows, repeats: int, on_compiled=None):
    trainer = make_trainer(env, cfg)
    first = next(iter(banks.values()))
    ts = trainer.init(first, rows)
    t0 = time.perf_counter()
    compiled = trainer.compile_train_chunk(ts, first, rows, num_updates=updates)
    compile_s = time.perf_counter() - t0
    if on_compiled is not None:
        on_compiled(compile_s)
    # Two warm-ups per bank, then the timed calls go round-robin over the banks (the TrainState is threaded
    # through, as donation requires), so drift on a shared machine hits homogeneous and heterogeneous alike.
    for bank in banks.values():
        for _ in range(2):
            ts = jax.block_until_ready(compiled(ts, bank, rows))[0]
    out = {name: [] for name in banks}
    for _ in range(repeats):
        for name, bank in banks.items():
            t0 = time.perf_counter()
            ts = jax.block_until_ready(compiled(ts, bank, rows))[0]
            out[name].append(time.perf_counter() - t0)
    return compile_s, out, updates * cfg.steps_per_update


def run(env_counts=(1024, 2048, 4096, 8192, 16384), num_steps: int = 64, updates: int = 4, repeats: int = 3,
        bank_rows: int = 16, width: int = 512, resets_per_step: int = 0, log=print, partial=None) -> list[dict]:
    """Env-only vs training (homogeneous and heterogeneous banks) at every env count; one record per count.
    `partial(record)`, if given, receives an unfinished record after the env-only timing and after the training
    chunk's compile (same num_envs, `unfinished: True`): a run stopped by a time limit keeps those figures."""
    save_partial = partial or (lambda record: None)
    env = CrafterEnv()
    k = bank_rows
    homo = make_params([CrafterConfig.original()] * k)
    het = make_params(heterogeneous_configs(k))
    device = jax.devices()[0]
    log(f"device {device.device_kind} ({device.platform}), jax {jax.__version__}, K={k} rows, "
        f"{num_steps} steps/update, {updates} updates/chunk")
    results = []
    for n in env_counts:
        rows = jnp.asarray(np.arange(n) * k // n, jnp.int32)  # contiguous blocks of n / k envs per row
        cfg = craftax_baseline(n, num_steps, width, resets_per_step)
        sps = lambda steps, ts: steps / min(ts)  # noqa: E731
        env_compile, env_times, env_steps = bench_env_only(env, n, num_steps, het, rows, repeats, resets_per_step)
        env_only = {"compile_s": env_compile, "times_s": env_times, "sps": sps(env_steps, env_times),
                    "steps_per_call": env_steps}
        unfinished = {"num_envs": n, "error": "unfinished: stopped before its training timings (killed or out of "
                      "time)", "unfinished": True, "env_only": env_only}
        save_partial({**unfinished, "measured_at": _now()})
        tr_compile, tr_times, tr_steps = bench_train(
            env, cfg, updates, {"homogeneous": homo, "heterogeneous": het}, rows, repeats,
            on_compiled=lambda seconds: save_partial({**unfinished, "train_compile_s": seconds, "measured_at": _now()}))
        rec = {
            "num_envs": n,
            "env_only": env_only,
            "train_homogeneous": {"compile_s": tr_compile, "times_s": tr_times["homogeneous"],
                                  "sps": sps(tr_steps, tr_times["homogeneous"]), "steps_per_call": tr_steps},
            "train_heterogeneous": {"times_s": tr_times["heterogeneous"],
                                    "sps": sps(tr_steps, tr_times["heterogeneous"]), "steps_per_call": tr_steps},
            "ppo": {"num_steps": num_steps, "updates_per_chunk": updates, "update_epochs": cfg.ppo.update_epochs,
                    "num_minibatches": cfg.ppo.num_minibatches, "width": width, "depth": cfg.network.mlp.depth},
            "measured_at": _now(),
        }
        rec["ratio_train_homo_over_env"] = rec["train_homogeneous"]["sps"] / rec["env_only"]["sps"]
        rec["ratio_train_het_over_env"] = rec["train_heterogeneous"]["sps"] / rec["env_only"]["sps"]
        rec["ratio_het_over_homo"] = rec["train_heterogeneous"]["sps"] / rec["train_homogeneous"]["sps"]
        results.append(rec)
        log(f"N={n:6d}  env-only {rec['env_only']['sps']:12,.0f} sps (compile {env_compile:5.1f}s)  "
            f"train homo {rec['train_homogeneous']['sps']:12,.0f} sps (compile {tr_compile:5.1f}s)  "
            f"het {rec['train_heterogeneous']['sps']:12,.0f} sps  train/env {rec['ratio_train_homo_over_env']:.2f}  "
            f"het/homo {rec['ratio_het_over_homo']:.3f}")
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env-counts", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    ap.add_argument("--cpu-tiny", action="store_true", help="tiny sizes for a CPU smoke run")
    ap.add_argument("--num-steps", type=int, default=64, help="rollout length per update (and env-only scan)")
    ap.add_argument("--updates", type=int, default=4, help="PPO updates per timed train_chunk")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bank-rows", type=int, default=16, help="K: config rows in both banks")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--resets-per-step", type=int, default=0, help="VecEnv refreshes per step (0: its default)")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    if args.cpu_tiny:
        args.env_counts, args.num_steps, args.updates, args.repeats, args.width = [8, 32], 16, 2, 2, 64

    results = run(args.env_counts, args.num_steps, args.updates, args.repeats, args.bank_rows, args.width,
                  args.resets_per_step, log=lambda s: print(s, flush=True))
    device = jax.devices()[0]
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    payload = {
        "benchmark": "bench_training", "utc": stamp, "device": str(device), "device_kind": device.device_kind,
        "platform": device.platform, "jax_version": jax.__version__, "python": platform.python_version(),
        **git_commit(), "host": platform.node(), "cpu_count": os.cpu_count(),
        "settings": vars(args), "results": results,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench_training_{device.platform}_{stamp}.json"
    path.write_text(json.dumps(payload, indent=2))
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
