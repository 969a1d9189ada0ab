"""XLA's LLVM optimisation level against compile time and speed: the tiny golden run's training chunk (tests/golden.py,
the ppo case, 4 updates a chunk) lowered once, then compiled at XLA's default and at levels 3, 2, 1 and 0 in one
process, each timed over 3 calls after 2 warm-ups. Measured to choose the test suite's flags: the suite keeps XLA's
default (neither -O0 nor -O1 made it measurably faster; docs/benchmarks.md).

    JAX_PLATFORMS=cpu python benchmarks/compile_levels.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_training import time_calls  # noqa: E402
from envgen_jax.run.parts import RunParts  # noqa: E402
from envgen_jax.run_config import load_run_config  # noqa: E402
from envgen_jax.trainer.train import _chunk_arguments  # noqa: E402
from tests import golden  # noqa: E402

LEVELS = (None, 3, 2, 1, 0)  # None: XLA's default


def main() -> None:
    jax.config.update("jax_enable_compilation_cache", False)  # every compile is a compile
    cfg = load_run_config(ROOT / "configs" / "smoke.yaml", golden.CASES["ppo"])
    parts = RunParts.of(cfg)
    trainer = parts.make_trainer()
    bank = parts.env.make_params([parts.game.config_cls.original()] * cfg.bank_rows)
    rows = np.zeros(cfg.ppo.num_envs, np.int32)
    state = trainer.init(bank, rows)
    args = _chunk_arguments(state, bank, rows)  # the chunk's traced arguments, as train_chunk calls it
    lowered = trainer._chunk_jit.lower(*args, num_updates=4)
    for level in LEVELS:
        start = time.perf_counter()
        compiled = lowered.compile({} if level is None else {"xla_backend_optimization_level": level})
        compile_s = time.perf_counter() - start
        chunk = lambda ts: compiled(ts, *args[1:])[0]  # noqa: E731 (the state is donated)
        _, times = time_calls(chunk, jax.tree.map(lambda x: x.copy(), state), repeats=3)
        print(f"level {'default' if level is None else level}: compile {compile_s:.1f} s, a chunk "
              f"{sum(times) / len(times) * 1000:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
