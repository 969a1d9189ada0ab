"""Environment stepping, side by side in one run (issue 2):

  craftax        craftax's own CraftaxClassicSymbolicEnvNoAutoReset, default params, vmapped (no resets)
  craftax_auto   craftax's CraftaxClassicSymbolicEnv (auto-reset: a new world every step for every env)
  ours_original  our CrafterEnv, one original-config row, vmapped (no resets)
  ours_hetero    our CrafterEnv, a bank of 8 different configurations, slots spread over rows (no resets)
  ours_resets    VecEnv (config-aware auto-resets) over the heterogeneous bank, 1024-step episodes

Each variant starts from a state reset outside its timed calls, so stepping is timed apart from world generation,
which is timed on its own (n worlds, vmapped; ours vs craftax's). Variants compared by a ratio are timed round-robin
(time_interleaved), so drift on a shared machine hits them alike; craftax_auto (~100x slower) is timed on its own. Ratios printed: ours_original / craftax,
ours_hetero / ours_original, ours_resets / ours_hetero, ..., and one world generation in env steps.
ours_original and ours_hetero share one compiled step scan (same shapes), so ours_hetero's first call compiles nothing.
benchmarks/run_all.py runs this as its `envs` part (with training and end-to-end beside it).
Absolute steps/s mean something only on a GPU, with the device named; on a CPU read the ratios.

  python benchmarks/bench_envs.py --envs 1024 --steps 128           # GPU
  python benchmarks/bench_envs.py --envs 64 --steps 32 --no-save   # quick CPU check
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import save, time_call, time_interleaved  # noqa: E402
from envgen_jax.envs.crafter import CrafterConfig, CrafterEnv, make_params  # noqa: E402
from envgen_jax.envs.vector import VecEnv  # noqa: E402

HETERO = [
    CrafterConfig.original(),
    CrafterConfig(target_biome="mountain", coal_rarity="very common", wood=5, wood_pickaxe=1),
    CrafterConfig(target_biome="grassland", tree_rarity="very common", peaceful=True),
    CrafterConfig(target_biome="beaches", iron_rarity="rare", stone=3),
    CrafterConfig(diamond_rarity="very common", iron_pickaxe=1, table_nearby=True),
    CrafterConfig(cows="very common", zombies="rare", day_length=100),
    CrafterConfig(target_biome="mountain", skeletons="very common", stone_sword=1),
    CrafterConfig(coal_rarity="rare", tree_rarity="rare", furnace_nearby=True),
]


def plain_steps(step, n, steps):
    """`steps` vmapped steps of n envs from a given state, random actions, no resets. The state comes from a reset
    done outside the timed call, so stepping is timed apart from world generation."""
    def run(key, state, params):
        def body(state, key):
            a_key, s_key = jax.random.split(key)
            actions = jax.random.randint(a_key, (n,), 0, 17)
            _, state, reward, done, _ = jax.vmap(step)(jax.random.split(s_key, n), state, actions, params)
            return state, reward.sum()

        return jax.lax.scan(body, state, jax.random.split(key, steps))[1]

    return jax.jit(run)


def vec_steps(venv, steps):
    """`steps` VecEnv steps from a given state: episode ends swap in spares and stale spares are regenerated, all
    inside the timed call (the reset cost a training run pays while stepping)."""
    def run(key, vstate, bank, rows):
        def body(vstate, key):
            a_key, s_key = jax.random.split(key)
            actions = jax.random.randint(a_key, (venv.num_envs,), 0, 17)
            _, vstate, info = venv.step(s_key, vstate, actions, bank, rows)
            return vstate, (info.done.sum(), info.stale_reset.sum())

        return jax.lax.scan(body, vstate, jax.random.split(key, steps))[1]

    return jax.jit(run)


VARIANTS = ("craftax", "craftax_auto", "ours_original", "ours_hetero", "ours_resets")


def run(envs=(1024,), steps: int = 128, repeats: int = 3, log=print) -> dict:
    """Every variant at every env count, side by side in this process; returns {"benchmark", "settings", "rows"}."""
    from craftax.craftax_classic.envs.craftax_symbolic_env import (CraftaxClassicSymbolicEnv,
                                                                     CraftaxClassicSymbolicEnvNoAutoReset)
    ours = CrafterEnv()
    table = []
    for n in envs:
        key = jax.random.PRNGKey(0)
        rows = jnp.arange(n) % len(HETERO)
        original = make_params([CrafterConfig()]).get(jnp.zeros(n, jnp.int32))
        hetero = make_params(HETERO).get(rows)
        resets_bank = make_params([CrafterConfig(**{**c.__dict__, "episode_length": 1024}) for c in HETERO])

        step_key, reset_key = jax.random.split(key)
        reset_keys = jax.random.split(reset_key, n)
        craftax, craftax_auto = CraftaxClassicSymbolicEnvNoAutoReset(), CraftaxClassicSymbolicEnv()
        default = jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (n,)), craftax.default_params)
        craftax_reset, ours_reset = jax.jit(jax.vmap(craftax.reset)), jax.jit(jax.vmap(ours.reset))
        worlds = time_interleaved({"craftax": (craftax_reset, (reset_keys, default)),
                                   "ours": (ours_reset, (reset_keys, hetero))}, repeats=repeats)
        # Every stepping variant starts from a state made outside its timed calls. One compiled step scan serves
        # both of our banks (same shapes), so ours_hetero's first call compiles nothing.
        ours_plain = plain_steps(ours.step, n, steps)
        venv = VecEnv(ours, n)
        vstate = jax.block_until_ready(jax.jit(venv.reset)(reset_key, resets_bank, rows)[1])
        vec = vec_steps(venv, steps)
        def start_of(reset, params):
            return jax.block_until_ready(reset(reset_keys, params)[1])

        craftax_start = start_of(craftax_reset, default)
        results = time_interleaved({
            "craftax": (plain_steps(craftax.step, n, steps), (step_key, craftax_start, default)),
            "ours_original": (ours_plain, (step_key, start_of(ours_reset, original), original)),
            "ours_hetero": (ours_plain, (step_key, start_of(ours_reset, hetero), hetero)),
            "ours_resets": (vec, (step_key, vstate, resets_bank, rows)),
        }, repeats=repeats)
        # craftax's auto-reset env is ~100x slower (a world per env per step): timed on its own, not interleaved.
        # Its reset is the same world generator, so it starts from the same state as "craftax".
        results["craftax_auto"] = time_call(plain_steps(craftax_auto.step, n, steps), step_key, craftax_start,
                                            default, repeats=repeats)
        dones, stale = vec(step_key, vstate, resets_bank, rows)
        results["ours_resets"].update(episodes_ended=int(dones.sum()), stale_resets=int(stale.sum()),
                                      resets_per_step=venv.refresh_count)
        for w in worlds.values():
            w["s_per_world"] = w["median_s"] / n
        for r in results.values():
            r["steps_per_s"] = n * steps / r["median_s"]
        sps = {k: v["steps_per_s"] for k, v in results.items()}
        ratios = {"ours_original_vs_craftax": sps["ours_original"] / sps["craftax"],
                  "ours_hetero_vs_craftax": sps["ours_hetero"] / sps["craftax"],
                  "hetero_vs_homogeneous": sps["ours_hetero"] / sps["ours_original"],
                  "with_resets_vs_without": sps["ours_resets"] / sps["ours_hetero"],
                  "ours_resets_vs_craftax_auto": sps["ours_resets"] / sps["craftax_auto"],
                  "craftax_autoreset_vs_no_reset": sps["craftax_auto"] / sps["craftax"],
                  "ours_world_vs_craftax_world": worlds["ours"]["s_per_world"] / worlds["craftax"]["s_per_world"],
                  # one world generation, in env steps of the same device: why resets go through spare worlds
                  "world_generation_in_steps": worlds["ours"]["s_per_world"] * sps["ours_hetero"]}
        table.append({"num_envs": n, "steps": steps, "results": results, "world_generation": worlds, "ratios": ratios,
                      "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        log(f"\n{n} envs x {steps} steps on {jax.devices()[0]}")
        for k, v in sps.items():
            log(f"  {k:14s} {v:12,.0f} steps/s   (compile+first {results[k]['compile_and_first_call_s']:.1f}s)")
        for k, w in worlds.items():
            log(f"  {k:14s} world generation {1e3 * w['s_per_world']:.3f} ms per world ({n} at once)")
        for k, v in ratios.items():
            log(f"  {k:32s} {v:6.3f}")
    return {"benchmark": "envs", "settings": {"steps": steps, "repeats": repeats, "hetero_bank_rows": len(HETERO)},
            "variants": VARIANT_DOC, "rows": table}


VARIANT_DOC = {
    "craftax": "craftax CraftaxClassicSymbolicEnvNoAutoReset, default params, vmapped, no resets",
    "craftax_auto": "craftax CraftaxClassicSymbolicEnv (auto-reset: a new world every step for every env)",
    "ours_original": "our CrafterEnv, every env the original config, vmapped, no resets",
    "ours_hetero": f"our CrafterEnv, {len(HETERO)} different configs spread over the envs, no resets",
    "ours_resets": "our VecEnv over the heterogeneous bank (config-aware auto-resets, 1024-step episodes)",
    "world_generation": "vmapped reset of n worlds, timed apart (craftax: default params; ours: the hetero bank); "
                        "every stepping variant starts from a state reset outside its timed calls",
}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, nargs="+", default=[1024])
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    payload = run(args.envs, args.steps, args.repeats)
    if not args.no_save:
        print("saved", save("envs", payload))
    return payload


if __name__ == "__main__":
    main()
