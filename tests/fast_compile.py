"""XLA flags for the test subprocesses that only compile tiny programs and never time them (the benchmarks' tiny
runs, the compile tests, the sharding test): LLVM at -O0 without its expensive passes compiles them in about 0.65x
XLA's default time (benchmarks/compile_levels.py). Flags are part of the persistent-cache key, so every such
subprocess gets the same string."""

import os

FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def xla_flags(*extra: str) -> str:
    """The suite's XLA_FLAGS (tests/conftest.py), then `extra`, then FAST_COMPILE (the last level given wins)."""
    return " ".join([os.environ.get("XLA_FLAGS", ""), *extra, FAST_COMPILE]).strip()
