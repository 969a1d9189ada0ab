"""The plan of a run: a flat list of phases, a pure function of the run configuration.

    for cycle in 1..N_cycle:   the method's phases (e.g. design -> train in LLM envs -> train in the original env)
                               -> evaluate
    final:                     train in the original env (scored) -> evaluate

Which phases a cycle has is the method's (`Method.cycle_phases`; `method` is the method's class, which the run
looks up once, `run.parts.RunParts`); phases of 0 updates are dropped. `describe_plan(cfg, method, ...)` is the
plan in numbers, as `envgen-jax train --dry-run` prints it. Nothing here builds or runs anything.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from envgen_jax.methods.base import Phase
from envgen_jax.methods.rows import ORIGINAL_ROW, assign_rows

__all__ = ["Phase", "build_plan", "train_updates", "phase_label", "first_training_where", "PhaseCost", "phase_costs",
           "describe_plan"]


def build_plan(cfg, method) -> list[Phase]:
    s = cfg.schedule
    plan: list[Phase] = []
    for c in range(s.cycles):
        plan += [*method.cycle_phases(cfg, c), Phase("evaluate", c)]
    plan += [Phase("train", s.cycles, "final", cfg.updates_for(s.final_steps)), Phase("evaluate", s.cycles)]
    return [p for p in plan if p.kind != "train" or p.updates > 0]


def train_updates(plan: list[Phase], where: str | None = None) -> int:
    """PPO updates of the plan's training phases (only those training `where`, if given)."""
    return sum(p.updates for p in plan if p.kind == "train" and (where is None or p.where == where))


def phase_label(phase: Phase, cycles: int) -> str:
    cycle = "final" if phase.cycle >= cycles else f"cycle {phase.cycle + 1}/{cycles}"
    what = {"design": "LLM step", "evaluate": "evaluate"}.get(phase.kind, f"train: {phase.where}")
    return f"{cycle} {what}"


def first_training_where(plan: list[Phase], start: int) -> str:
    """Where the first training phase at or after plan index `start` trains ("original" if none is left)."""
    return next((p.where for p in plan[start:] if p.kind == "train"), "original")


# ------------------------------------------------------------------------------------------------ the plan in numbers
@dataclasses.dataclass(frozen=True)
class PhaseCost:
    """One phase of the plan in numbers, per seed."""

    label: str
    kind: str
    env_steps: int = 0       # training env steps
    updates: int = 0         # PPO updates
    chunks: int = 0          # compiled chunks of schedule.updates_per_chunk updates
    llm_calls: int = 0       # LLM requests, repair turns not counted
    original_slots: int = 0  # env slots in the original game (bank row 0)
    llm_slots: int = 0       # env slots in designed environments
    llm_rows: int = 0        # the designed environments (bank rows) those slots run


def phase_costs(cfg, method) -> list[PhaseCost]:
    """Every phase of the plan of `cfg` in numbers (a pure function of the config, like the plan)."""
    s = cfg.schedule
    costs = []
    for phase in build_plan(cfg, method):
        label = phase_label(phase, s.cycles)
        if phase.kind == "design":
            costs.append(PhaseCost(label, "design",
                                   llm_calls=method.llm_calls(phase.cycle, cfg.num_designers)))
        elif phase.kind == "evaluate":
            costs.append(PhaseCost(label, "evaluate", original_slots=cfg.eval.envs_per_agent))
        elif (candidates := method.sampled_rows(cfg, phase.where)) is not None:  # rows the method draws on the device
            costs.append(PhaseCost(label, "train", env_steps=phase.updates * cfg.steps_per_update,
                                   updates=phase.updates, chunks=phase.updates // s.updates_per_chunk,
                                   llm_slots=cfg.ppo.num_envs, llm_rows=candidates))
        else:
            rows = assign_rows(phase.where, cfg.ppo.num_envs, cfg.num_agents, cfg.num_designers, s.envs_per_call,
                               s.original_share, has_llm_configs=True)
            one_seed = np.atleast_2d(rows)[0]  # every seed uses as many rows and slots (its own, per designer)
            designed = one_seed[one_seed != ORIGINAL_ROW]
            costs.append(PhaseCost(label, "train", env_steps=phase.updates * cfg.steps_per_update,
                                   updates=phase.updates, chunks=phase.updates // s.updates_per_chunk,
                                   original_slots=int((one_seed == ORIGINAL_ROW).sum()), llm_slots=int(designed.size),
                                   llm_rows=len(np.unique(designed))))
    return costs


def describe_plan(cfg, method, checkpoint_bytes: int, parameters: int | None = None) -> str:
    """The run's plan as a table of phases, with totals, LLM calls, the agent's size, bank rows and the size of a
    checkpoint (its bytes and parameters given: `run.parts.checkpoint_bytes`, `run.parts.parameter_count`)."""
    s, costs = cfg.schedule, phase_costs(cfg, method)
    columns = f"  {'phase':<28}{'kind':<10}{'env steps':>11}{'updates':>9}{'chunks':>8}{'LLM calls':>11}  env slots"
    seeds = f"seed {cfg.seed}" if cfg.seeds == 1 else f"seeds {cfg.seed}-{cfg.seed + cfg.seeds - 1}"
    if cfg.sweep.active:
        seeds += f" for each of {len(cfg.sweep.points())} sweep combinations ({cfg.num_agents} agents)"
    lines = [f"Plan of {cfg.method} on {cfg.env}, {seeds}, {_count(s.cycles, 'cycle')} (numbers per seed):", "",
             columns]
    for c in costs:
        numbers = [f"{n:,}" if c.kind == "train" else "-" for n in (c.env_steps, c.updates, c.chunks)]
        calls = f"{c.llm_calls:,}" if c.kind == "design" else "-"
        lines.append(f"  {c.label:<28}{c.kind:<10}{numbers[0]:>11}{numbers[1]:>9}{numbers[2]:>8}{calls:>11}  "
                     f"{_slots(c)}".rstrip())

    steps, updates, chunks = (sum(getattr(c, k) for c in costs) for k in ("env_steps", "updates", "chunks"))
    scored = train_updates(build_plan(cfg, method), "final") * cfg.steps_per_update
    calls = sum(c.llm_calls for c in costs)
    size = checkpoint_bytes
    lines += [
        "",
        f"env steps:   {steps:,} per seed ({scored:,} of them scored), {steps * cfg.num_agents:,} over all "
        f"{'agents' if cfg.num_agents != cfg.seeds else 'seeds'}",
        f"PPO updates: {updates:,} in {chunks:,} compiled chunks of {s.updates_per_chunk}; an update is "
        f"{cfg.ppo.num_envs} envs x {cfg.ppo.num_steps} steps = {cfg.steps_per_update:,} env steps",
        f"LLM calls:   {calls}" + (f" ({_count(cfg.num_designers, 'designer')}; each call may add up to "
                                   f"{cfg.llm.strategy.max_repairs} repair turns)" if calls
                                   else " (this method asks no LLM)"),
        *([f"agent:       {cfg.network.kind} network on {cfg.observation} observations, {parameters:,} parameters "
           f"per agent"] if parameters is not None else []),
        f"bank:        {cfg.bank_rows} rows shared by the seeds: " + _bank_use(cfg, method, costs),
        f"checkpoint:  about {_bytes(size)} ({size:,} bytes of TrainState) each; the newest "
        f"{cfg.output.keep_checkpoints} kept",
    ]
    return "\n".join(lines)


def _bank_use(cfg, method, costs: list[PhaseCost]) -> str:
    use = method.bank_use(cfg)
    if use is not None:  # a method whose rows are its own says what they hold
        return use
    if any(c.kind == "design" for c in costs):
        return f"row 0 the original game, then {cfg.schedule.envs_per_call} per designer for the designed environments"
    return ("row 0 the original game, then rows this method leaves unused (the bank's shape is the same for every "
            "method)")


def _slots(c: PhaseCost) -> str:
    parts = [f"{c.original_slots} original"] if c.original_slots else []
    if c.llm_slots:
        parts.append(f"{c.llm_slots} in {_count(c.llm_rows, 'designed env')}")
    return " + ".join(parts)


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"
