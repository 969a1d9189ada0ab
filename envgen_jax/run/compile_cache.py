"""JAX's persistent compilation cache for `envgen-jax train` and `study`: a second run with the same shapes loads its
programs from disk instead of compiling them (30-50 s a program on a GPU, minutes on a CPU).

Where: `$XDG_CACHE_HOME/envgen_jax/xla` (default `~/.cache/envgen_jax/xla`). Off with the run setting
`output.compile_cache: false` or `ENVGEN_JAX_COMPILE_CACHE=0` (the variable, when set, wins over the setting). A
`JAX_COMPILATION_CACHE_DIR` set in the environment (or a cache directory already configured in-process, as the test
suite does) is JAX's own choice and is left as it is. A folder that cannot be written is a warning, and the run
compiles without the cache; a corrupt entry is one JAX warns about and compiles again.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import jax

from envgen_jax.schema import ConfigError

ENV_SWITCH = "ENVGEN_JAX_COMPILE_CACHE"
_ON, _OFF = ("1", "true", "on", "yes"), ("0", "false", "off", "no")

logger = logging.getLogger("envgen_jax.run")


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envgen_jax" / "xla"


def cache_wanted(setting: bool) -> bool:
    """The run setting, unless ENVGEN_JAX_COMPILE_CACHE says otherwise (a value not on/off is bad input)."""
    raw = os.environ.get(ENV_SWITCH)
    if raw is None or raw.strip() == "":
        return setting
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ConfigError([f"{ENV_SWITCH}: {raw!r} is not one of {', '.join(_ON + _OFF)}"], what="environment")


def configure_compile_cache(setting: bool = True, log: logging.Logger | logging.LoggerAdapter = logger) -> str | None:
    """Turn the persistent cache on (before the first compile) unless switched off; returns the folder in use, or
    None when the run compiles without one."""
    configured = jax.config.jax_compilation_cache_dir
    if configured:  # JAX_COMPILATION_CACHE_DIR, or a caller's own choice: theirs wins
        return configured if jax.config.jax_enable_compilation_cache else None
    if not cache_wanted(setting):
        return None
    folder = default_cache_dir()
    problem = _unwritable(folder)
    if problem:
        log.warning(f"warning: the compilation cache folder {folder} cannot be written ({problem}); this run "
                    f"compiles every program without it (set XDG_CACHE_HOME elsewhere, or {ENV_SWITCH}=0)")
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    # Every program, however quick to compile: "a second run compiles nothing" includes the small ones.
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return str(folder)


def _unwritable(folder: Path) -> str | None:
    """Why `folder` cannot hold cache entries (made if missing), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"
    return None
