"""XLA's LLVM optimisation level against compile time and speed: the tiny golden run's training chunk (tests/golden.py,
the ppo case, 4 updates a chunk) lowered once, then compiled with each variant's compiler options in one process,
round-robin over `--rounds` rounds (so drift on the machine hits every variant alike), each compiled program timed
over 3 calls after 2 warm-ups. Measured to choose the test suite's flags (tests/conftest.py: level 1;
docs/benchmarks.md). Saves benchmarks/results/compile_levels_cpu.json, with each variant's median
compile time and chunk time as ratios to XLA's default.

    JAX_PLATFORMS=cpu python benchmarks/compile_levels.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_training import time_calls  # noqa: E402
from benchmarks.common import save  # noqa: E402
from envgen_jax.run.parts import RunParts  # noqa: E402
from envgen_jax.run_config import load_run_config  # noqa: E402
from envgen_jax.trainer.train import _chunk_arguments  # noqa: E402
from tests import golden  # noqa: E402

LEVEL, CHEAP = "xla_backend_optimization_level", "xla_llvm_disable_expensive_passes"
VARIANTS = {  # name -> compiler options (DebugOptions fields)
    "default": {},
    "O3": {LEVEL: 3},
    "O2": {LEVEL: 2},
    "O1": {LEVEL: 1},  # the test suite's
    "O1 cheap": {LEVEL: 1, CHEAP: True},
    "O0": {LEVEL: 0},
    "O0 cheap": {LEVEL: 0, CHEAP: True},  # the benchmark and compile tests' subprocesses
}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="compiles of each variant, round-robin (default 2)")
    ap.add_argument("--out-dir", default=None, help="where the JSON goes (default benchmarks/results)")
    args = ap.parse_args(argv)
    jax.config.update("jax_enable_compilation_cache", False)  # every compile is a compile
    cfg = load_run_config(ROOT / "configs" / "smoke.yaml", golden.CASES["ppo"])
    parts = RunParts.of(cfg)
    trainer = parts.make_trainer()
    bank = parts.env.make_params([parts.game.config_cls.original()] * cfg.bank_rows)
    rows = np.zeros(cfg.ppo.num_envs, np.int32)
    state = trainer.init(bank, rows)
    chunk_args = _chunk_arguments(state, bank, rows)  # the chunk's traced arguments, as train_chunk calls it
    lowered = trainer._chunk_jit.lower(*chunk_args, num_updates=4)
    measured = {name: {"compile_s": [], "chunk_ms": []} for name in VARIANTS}
    for round_ in range(args.rounds):
        for name, options in VARIANTS.items():
            jax.clear_caches()  # else a round after the first gets the in-memory executable of the one before
            start = time.perf_counter()
            compiled = lowered.compile(options)
            compile_s = time.perf_counter() - start
            chunk = lambda ts: compiled(ts, *chunk_args[1:])[0]  # noqa: E731 (the state is donated)
            _, times = time_calls(chunk, jax.tree.map(lambda x: x.copy(), state), repeats=3)
            measured[name]["compile_s"].append(round(compile_s, 2))
            measured[name]["chunk_ms"].append(round(statistics.median(times) * 1000, 1))
            ms = measured[name]["chunk_ms"][-1]
            print(f"round {round_ + 1} {name:9s} compile {compile_s:5.1f} s, a chunk {ms:4.0f} ms", flush=True)
    base = {k: statistics.median(measured["default"][k]) for k in ("compile_s", "chunk_ms")}
    for m in measured.values():
        m["compile_vs_default"] = round(statistics.median(m["compile_s"]) / base["compile_s"], 3)
        m["chunk_vs_default"] = round(statistics.median(m["chunk_ms"]) / base["chunk_ms"], 3)
    print("\nvariant    compile/default  chunk/default")
    for name, m in measured.items():
        print(f"{name:9s}  {m['compile_vs_default']:15.2f}  {m['chunk_vs_default']:13.2f}")
    path = save("compile_levels", {
        "benchmark": "compile_levels", "program": "tests/golden.py ppo case: _train_chunk, 4 updates",
        "rounds": args.rounds, "variants": {name: dict(options) for name, options in VARIANTS.items()},
        "results": measured,
        "note": "one process, the persistent cache off; medians over rounds; on a CPU read the ratios"},
        args.out_dir)
    print(f"wrote {path}")
    return measured


if __name__ == "__main__":
    main()
