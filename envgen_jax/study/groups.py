"""Which methods of a study train as one program (`study --grouping fused`): the groups, and the grouping's rule
(a run's `schedule` is its phases; the study's `--grouping`, called `--schedule` before, which runs share a program).

Each method names its program family (`Method.PROGRAM`), and the groups follow from it: methods of one family whose
evaluations fall at the same training updates share one compiled chunk, their agents side by side on one agent axis
(methods x seeds) that the driver (`run.loop.EnvGenRun.group`) aligns by updates. The paper's loop (`PAPER_LOOP`:
envgen, ppo, fixed, easy_to_hard, adversarial, random, scripted) is such a family: its runs differ only in data
(which configurations the env slots run). A method of no family (PROGRAM None) is a group of its own: plr (its level
sampler is part of the trainer's state and chunk), sfl and envgen_sfl (rows drawn on the device, whose env state has
another type, and selections that measure the TrainState between chunks).
"""

from __future__ import annotations

import jax

from envgen_jax import methods as registry
from envgen_jax.methods.base import PAPER_LOOP
from envgen_jax.run.plan import build_plan

__all__ = ["GROUPINGS", "PAPER_LOOP", "describe_groups", "groups", "memory_estimate", "program_of", "resolve_grouping"]

GROUPINGS = ("auto", "fused", "sequential")
# `auto` on a CPU: which of the two benchmarks/study_fused.py measured faster there (benchmarks/results/
# study_fused_cpu.json); on a GPU or TPU always fused (one program fills the chip that many would leave idle).
CPU_GROUPING = "fused"


def program_of(method: str, cfg) -> tuple:
    """What decides the program a method's run compiles beyond the shared agent: (its family, where its evaluations
    fall) for a method that names a family (`Method.PROGRAM`), else (the method's name,): a program of its own."""
    family = registry.get(method).PROGRAM
    if family is None:
        return (method,)
    done, evaluations = 0, []
    for p in build_plan(cfg, registry.get(method)):
        done += p.updates if p.kind == "train" else 0
        if p.kind == "evaluate":
            evaluations.append(done)
    return family, tuple(evaluations)


def resolve_grouping(grouping: str, backend: str | None = None) -> str:
    """`fused` or `sequential` for `--grouping` (auto: fused on a GPU or TPU, CPU_GROUPING on a CPU)."""
    if grouping not in GROUPINGS:
        raise ValueError(f"--grouping: {grouping!r} is not one of {', '.join(GROUPINGS)}")
    if grouping != "auto":
        return grouping
    return CPU_GROUPING if (backend or jax.default_backend()) == "cpu" else "fused"


def groups(settings, grouping: str = "fused") -> list[list[str]]:
    """The study's methods in the groups that train as one program each, in the study's order (by each group's
    first method); `sequential`: every method on its own."""
    if resolve_grouping(grouping) == "sequential":
        return [[m] for m in settings.methods]
    by_program: dict[tuple, list[str]] = {}
    for m in settings.methods:
        by_program.setdefault(program_of(m, settings.run_config(m)), []).append(m)
    return list(by_program.values())


# The compiled chunk's device memory per agent beyond its TrainState (the rollout, the update's minibatches, the
# network's activations and gradients): bytes per rollout step of one env slot, as a multiple of the observation's
# size in float32, fitted to the chunk's memory_analysis() on CPU (benchmarks/study_fused.py --memory, results in
# benchmarks/results/study_fused_cpu.json; docs/studies.md, "Scale and memory"): the 2 x 256 MLP on symbolic
# observations (configs/study_cpu.yaml) and the paper's IMPALA CNN on pixels (crafter_envgen_paper_agent.yaml).
UPDATE_BYTES_PER_STEP = {"symbolic": 3.9, "pixels": 38.4}


def memory_estimate(parts, agents: int) -> dict:
    """Estimated device memory of a program training `agents` agents of `parts`'s configuration, in bytes: the
    TrainStates (exact, from their shapes) and the update (the fit above), every agent's at once when the agents
    are vmapped, one agent's at a time with `execution.seed_axis: map`."""
    import numpy as np

    from envgen_jax.run.parts import checkpoint_bytes

    cfg = parts.cfg
    state = checkpoint_bytes(parts) / cfg.num_agents
    obs = int(np.prod(parts.env.obs_shape)) * 4  # as float32, as the network reads it
    update = UPDATE_BYTES_PER_STEP[cfg.observation] * cfg.ppo.num_steps * cfg.ppo.num_envs * obs
    updates_at_once = 1 if cfg.execution.seed_axis == "map" else agents
    return {"state_per_agent": state, "update_per_agent": update, "total": agents * state + updates_at_once * update}


def describe_groups(settings, grouping: str = "auto") -> str:
    """The study's programs as `study --dry-run` prints them: per group its methods, agents, env slots, bank rows and
    the estimated memory, and how its agents spread over the devices (`trainer.sharding.describe`)."""
    from envgen_jax.run.parts import RunParts
    from envgen_jax.trainer.sharding import devices_line

    chosen = resolve_grouping(grouping)
    cfg0 = settings.run_config(settings.methods[0])
    lines = [f"Study of {len(settings.methods)} methods x {cfg0.seeds} seeds on {cfg0.env}, grouping {chosen}"
             + (f" (auto on {jax.default_backend()})" if grouping == "auto" else "") + ":", "",
             f"  {'program':<12}{'agents':>7}{'env slots':>11}{'eval slots':>11}{'bank rows':>10}{'memory':>11}  methods"]
    total, devices = 0, []
    for group in groups(settings, chosen):
        cfgs = [settings.run_config(m) for m in group]
        agents = len(group) * cfg0.num_agents
        estimate = memory_estimate(RunParts.of(cfgs[0]), agents)
        total = max(total, estimate["total"])
        name = program_of(group[0], cfgs[0])[0] if len(group) > 1 else group[0]
        lines.append(f"  {name:<12}{agents:>7}{agents * cfg0.ppo.num_envs:>11,}{agents * cfg0.eval.envs_per_agent:>11,}"
                     f"{sum(c.bank_rows for c in cfgs):>10}{estimate['total'] / 1e9:>9.2f}GB  {', '.join(group)}")
        line = devices_line(agents, cfg0.ppo.num_envs, cfg0.execution.shard, label=f"{name}: ")
        devices.append(f"devices ({name}): {line}")
    one = memory_estimate(RunParts.of(cfg0), 1)
    n = len(groups(settings, chosen))
    lines += ["", f"programs: {n} training program{'s' * (n != 1)}, one after another; the largest needs about "
              f"{total / 1e9:.2f} GB",
              f"memory per agent: {one['state_per_agent'] / 1e6:.1f} MB of TrainState (exact) + "
              f"{one['update_per_agent'] / 1e6:.1f} MB for the update ({UPDATE_BYTES_PER_STEP[cfg0.observation]:g} x "
              f"{cfg0.ppo.num_steps} steps x {cfg0.ppo.num_envs} envs x the observation in float32, fitted to the "
              f"compiled chunk on CPU"
              + (", one agent's at a time: execution.seed_axis map" if cfg0.execution.seed_axis == "map" else "")
              + "; docs/studies.md)", "", *devices]
    return "\n".join(lines)
