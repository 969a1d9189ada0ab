"""The methods a run compares (README "Methods and baselines"), one module each, behind one registry.

A method is a module with:

    NAME: str                 the `method:` value
    USES_LLM: bool            whether its design step asks a language model
    cycle_phases(cfg, c)      the phases of cycle c (design, train, ...), before the cycle's evaluation
    design(ctx) -> list|dict  the design step of one cycle: per designer {"configs": [...], "purposes": [...]}, or a
                              whole design record (e.g. `fixed` reusing cycle 1's)
    llm_calls(c, designers)   optional: LLM requests of cycle c's design step (default: one per designer if USES_LLM)

Optional, for methods that pick their training rows on the device (plr): `WHERE` (the `where` of its training
phases), `bank_rows(cfg)`, `level_sampler(cfg)`, `new_configs(...)`, `rows_to_refresh(cfg, sampler)` and
`buffer_metrics(hp, sampler)`, used by the driver between chunks. Methods that choose rows by learnability (sfl,
envgen_sfl): `LEARNS_WHERE` (the `where` of those phases), `candidate_rows(cfg)` and `row_weights(cfg, learn)`, and
sfl's `pool_size(cfg)` (a random pool drawn at each selection), envgen_sfl's `learnability_notes(cfg, selection)`
(the next feedback's notes). `bank_use(cfg)`: the dry run's line on the bank.

Adding a method is adding a module here and its name to `_MODULES`; the driver (`envgen_jax.loop`) does not change.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_MODULES = ("envgen", "ppo", "fixed", "easy_to_hard", "adversarial", "random", "plr", "sfl", "envgen_sfl",
            "scripted")
METHODS: tuple[str, ...] = _MODULES


def get(name: str) -> ModuleType:
    """The module of method `name` (a name not in METHODS raises KeyError naming the allowed ones)."""
    if name not in METHODS:
        raise KeyError(f"{name!r} is not one of {', '.join(METHODS)}")
    return importlib.import_module(f"envgen_jax.methods.{name}")


def uses_llm(name: str) -> bool:
    return get(name).USES_LLM


def llm_calls(name: str, cycle: int, num_designers: int) -> int:
    """LLM requests of method `name`'s design step in `cycle` (repair turns not counted)."""
    module = get(name)
    if hasattr(module, "llm_calls"):
        return module.llm_calls(cycle, num_designers)
    return num_designers if module.USES_LLM else 0
