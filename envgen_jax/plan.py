"""The plan of a run: a flat list of phases, a pure function of the run configuration.

    for cycle in 1..N_cycle:   the method's phases (e.g. design -> train in LLM envs -> train in the original env)
                               -> evaluate
    final:                     train in the original env (scored) -> evaluate

Which phases a cycle has is the method's (`envgen_jax.methods.<name>.cycle_phases`); phases of 0 updates are dropped.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Phase:
    kind: str    # design | train | evaluate
    cycle: int   # 0-based; cycle == cycles means the final phase
    where: str = ""   # train: llm | original | mixed | final
    updates: int = 0  # train: PPO updates


def build_plan(cfg) -> list[Phase]:
    from envgen_jax import methods  # methods import Phase from here
    method = methods.get(cfg.method)
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
