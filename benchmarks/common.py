"""Shared benchmark plumbing: honest timing (compile apart, two warm-ups, block_until_ready) and result files."""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import time
from pathlib import Path

import jax

RESULTS = Path(__file__).parent / "results"


def time_call(fn, *args, repeats: int = 3) -> dict:
    """Compile time, then the median wall time of `repeats` calls after two warm-up calls.

    Two warm-ups, because a second call can retrace when weak types in a carried state change.
    """
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - start
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return {"compile_and_first_call_s": compile_s, "median_s": statistics.median(times), "times_s": times}


def environment() -> dict:
    device = jax.devices()[0]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    import craftax  # noqa: F401
    from importlib.metadata import version
    return {"device": f"{device.platform}:{getattr(device, 'device_kind', '')}", "device_count": jax.device_count(),
            "jax": jax.__version__, "craftax": version("craftax"), "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(), "commit": commit,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def save(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    platform_tag = jax.devices()[0].platform
    path = RESULTS / f"{name}_{platform_tag}.json"
    path.write_text(json.dumps({"environment": environment(), **payload}, indent=2))
    return path
