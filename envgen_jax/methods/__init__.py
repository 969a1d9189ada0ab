"""The methods a run compares (docs/methods.md), one module each, behind one registry.

A method is a subclass of `envgen_jax.methods.base.Method` in its own module; its defaults are the paper's loop
(the bank: the original game in row 0, then the latest design's environments; each phase's slots on fixed rows).

Class level (functions of the run configuration; the plan, the dry run and RunConfig call them on the class):

    NAME, USES_LLM                  the `method:` value; whether its design step asks a language model
    PROGRAM                         the program family its runs compile (PAPER_LOOP: fused with the paper loop's
                                    methods in a study; None, the default: a program of its own)
    cycle_phases(cfg, c)            the phases of cycle c (design, train, ...), before the cycle's evaluation
                                    (default: the paper's cycle, `llm_cycle`)
    design(ctx)                     the design step of one cycle (`DesignContext`): per designer {"configs": [...],
                                    "purposes": [...]}, or a whole design record (`fixed` reusing cycle 1's)
    llm_calls(c, designers)         LLM requests of cycle c's design step (default: one per designer if USES_LLM)
    bank_rows(cfg), bank_use(cfg)   the bank's rows, and the dry run's line on what they hold
    level_sampler(cfg)              the trainer's on-device row sampler (plr's level replay), or None
    WHERE, sampled_rows(cfg, where) the `where` of the training phases whose rows the method chooses itself, and
                                    how many rows it draws from there (the dry run)
    config_problems(cfg)            the method's own checks of the run configuration
    OPTIONS, options(cfg)           its own settings, `method_options.<NAME>` (a frozen `schema.Declared` dataclass
                                    declaring defaults, bounds and choices, as a game declares its options)
    report_entries(state)           its entries in report.json, from its saved state (sfl's selections)

One run (the loop makes `cls(run, trainer)` with its `view.RunView` and PPO trainer):

    state_dict(), load_state(d)     the method's own host state, saved with every checkpoint (LoopState.method)
    bank_and_rows(where)            the bank and rows of a training phase (its own WHERE; default the loop's)
    before_phase, before_chunk, chunk_record, after_chunk, after_phase
                                    around a training phase and each of its compiled chunks: e.g. sfl's
                                    learnability selections, plr's buffer refresh, their lines in metrics.jsonl
                                    and pictures of their top levels
    designer_notes()                notes for the next design step (envgen_sfl: what learnability measured)

Level replay lives in plr.py; the learnability selection shared by sfl.py and envgen_sfl.py in selection.py. The
contract a method works against is here too: base.py (Method, Phase, DesignContext), view.py (RunView, what a method
sees of its run), rows.py (the bank's row layout) and learning.py (what the agent learned inside each LLM
environment, for the next design step and the report): a method imports nothing from `envgen_jax.run`.
Adding a method is one module here and one line in `REGISTRY` (or `register(name, cls)` at run time, as a test
may); the driver (`envgen_jax.run.loop`) does not change.
"""

from __future__ import annotations

import dataclasses

from envgen_jax.methods.adversarial import Adversarial
from envgen_jax.methods.base import Method
from envgen_jax.methods.easy_to_hard import EasyToHard
from envgen_jax.methods.envgen import EnvGen
from envgen_jax.methods.envgen_sfl import EnvGenSFL
from envgen_jax.methods.fixed import Fixed
from envgen_jax.methods.plr import PLR
from envgen_jax.methods.ppo import PPO
from envgen_jax.methods.random import Random
from envgen_jax.methods.scripted import Scripted
from envgen_jax.methods.sfl import SFL
from envgen_jax.schema import Declared

REGISTRY: dict[str, type[Method]] = {
    "envgen": EnvGen,
    "ppo": PPO,
    "fixed": Fixed,
    "easy_to_hard": EasyToHard,
    "adversarial": Adversarial,
    "random": Random,
    "plr": PLR,
    "sfl": SFL,
    "envgen_sfl": EnvGenSFL,
    "scripted": Scripted,
}
METHODS = REGISTRY.keys()  # a live view: a method registered later is known everywhere (run config, study, CLI)


_options_classes: dict[tuple, type] = {}


def options_class() -> type:
    """The run configuration's `method_options` section: a subsection per registered method that declares OPTIONS
    (made once for each set of them, so a method registered later is read like the others)."""
    declared = tuple((name, cls.OPTIONS) for name, cls in REGISTRY.items() if cls.OPTIONS is not None)
    if declared not in _options_classes:
        fields = [(name, options, dataclasses.field(default_factory=options)) for name, options in declared]
        _options_classes[declared] = dataclasses.make_dataclass(
            "MethodOptions", fields, bases=(Declared,), frozen=True,
            namespace={"PATH": "method_options.", "WHAT": "method options", "__module__": __name__})
    return _options_classes[declared]


def __getattr__(name: str):
    if name == "MethodOptions":  # RunConfig's `method_options` type: the registry's of the moment
        return options_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(name: str, cls: type[Method]) -> None:
    """Add (or replace) a method: `cls` is a Method subclass whose NAME is `name`."""
    if not (isinstance(cls, type) and issubclass(cls, Method)) or cls.NAME != name:
        raise TypeError(f"a method must be a Method subclass with NAME {name!r}, got {cls!r}")
    REGISTRY[name] = cls


def get(name: str) -> type[Method]:
    """The class of method `name` (a name not in METHODS raises KeyError naming the allowed ones)."""
    if name not in REGISTRY:
        raise KeyError(f"{name!r} is not one of {', '.join(METHODS)}")
    return REGISTRY[name]


def uses_llm(name: str) -> bool:
    return get(name).USES_LLM


def llm_calls(name: str, cycle: int, num_designers: int) -> int:
    """LLM requests of method `name`'s design step in `cycle` (repair turns not counted)."""
    return get(name).llm_calls(cycle, num_designers)
