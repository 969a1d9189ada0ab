"""Where and with what a result was produced: device, library versions, git commit (shared by the study and the
benchmarks, so every saved result names its machine and code)."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parent.parent
REPO = ROOT.parent  # the checkout: envgen_jax/, benchmarks/, configs/


def git_commit(repo: Path = REPO) -> dict:
    """{'commit': HEAD, 'dirty': uncommitted changes to tracked files, 'commit_source'}. BENCH_COMMIT /
    BENCH_DIRTY=1 in the environment, where set, say what a copied tree is and win over git: git on a device
    machine's copy answered with an older commit once (the first H200 session's, its parent)."""
    if os.environ.get("BENCH_COMMIT"):
        return {"commit": os.environ["BENCH_COMMIT"], "dirty": os.environ.get("BENCH_DIRTY", "") == "1",
                "commit_source": "BENCH_COMMIT"}
    head, dirty = "", False
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=repo)
        if proc.returncode == 0:
            head = proc.stdout.strip()
            # Dirty means the measured code differs from the commit: docs and saved results do not count. (Run
            # from the checkout's root: these paths are relative to it.)
            dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "envgen_jax",
                                         "benchmarks", "configs", "pyproject.toml", ":(exclude)benchmarks/results"],
                                        capture_output=True, text=True, cwd=repo).stdout.strip())
    except OSError:
        pass
    if head:
        return {"commit": head, "dirty": dirty, "commit_source": "git"}
    return {"commit": "", "dirty": None, "commit_source": "unknown: no git here and no BENCH_COMMIT"}


def code_version() -> dict:
    """{'commit', 'dirty'} only: what a single measurement (one LLM call, one chain) records as its own code."""
    return {k: v for k, v in git_commit().items() if k in ("commit", "dirty")}


def _version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def environment() -> dict:
    """Where and with what a result was measured."""
    device = jax.devices()[0]
    memory = None
    try:
        stats = device.memory_stats() or {}
        memory = stats.get("bytes_limit")
    except Exception:  # CPU devices have no memory stats
        pass
    cache_dir = jax.config.jax_compilation_cache_dir
    return {
        "device": f"{device.platform}:{getattr(device, 'device_kind', '')}", "platform": device.platform,
        "device_kind": getattr(device, "device_kind", ""), "device_count": jax.device_count(),
        "local_device_count": jax.local_device_count(), "process_count": jax.process_count(),
        "device_memory_bytes": memory,
        "jax": jax.__version__, "jaxlib": _version("jaxlib"), "craftax": _version("craftax"),
        "envgen_jax": _version("envgen-jax"), "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(), "host": platform.node(),
        **git_commit(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "persistent_compilation_cache": (cache_dir if cache_dir and jax.config.jax_enable_compilation_cache
                                         else None),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
