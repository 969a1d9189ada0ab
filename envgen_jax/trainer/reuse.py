"""One trainer and one evaluator per configuration in a process, so that a later run of the same configuration (a
study's next method, a resumed run, the next test) neither traces nor compiles: the jitted functions it gets back
already hold their programs. (JAX's persistent cache saves the compile only; tracing a Craftax chunk and loading its
program still cost seconds every run.)

    trainer = reused(("trainer", env, cfg, level_sampler), lambda: Trainer(env, cfg))

Keys are values (frozen dataclasses: the env, the TrainerConfig, the level sampler, the evaluation's sizes); a key
that is not hashable builds a fresh object every time. The most recent `MAX_KEPT` are kept (each holds its compiled
programs). `ENVGEN_JAX_REUSE_PROGRAMS=0` turns reuse off (every run builds its own, as before).
"""

from __future__ import annotations

import collections
import os
from typing import Any, Callable, Hashable

MAX_KEPT = 16
_kept: collections.OrderedDict = collections.OrderedDict()


def enabled() -> bool:
    return os.environ.get("ENVGEN_JAX_REUSE_PROGRAMS", "1") != "0"


def reused(key: Hashable, build: Callable[[], Any]) -> Any:
    """The object built earlier in this process for an equal `key`, else `build()` (kept for the next call)."""
    if not enabled():
        return build()
    try:
        hash(key)
    except TypeError:
        return build()
    if key in _kept:
        _kept.move_to_end(key)
        return _kept[key]
    _kept[key] = value = build()
    while len(_kept) > MAX_KEPT:
        _kept.popitem(last=False)
    return value


def forget() -> None:
    """Drop every kept trainer and evaluator (their programs go with them once nothing else holds them)."""
    _kept.clear()
