"""One method's run inside the driver (`run.loop.EnvGenRun`): its configuration, run directory, plan, LoopState,
method, design step, records and checkpoints, and where its agents sit on the trainer's agent axis.

A run of one method is one member holding every agent. A fused study (`study --grouping fused`) drives several
members over one trainer: member m's agents are the slice [m * S, (m + 1) * S) of the agent axis, and its bank rows
the block [m * K, (m + 1) * K) of the concatenated bank, so each member sees its metrics, evaluation and TrainState
exactly as its run alone would (`metrics`, `train_state`), and writes exactly that run's files in its own directory.

Several processes (`run.distributed`): process 0 writes a member's files in its run directory, the others the same
files in scratch folders of their own (`files_dir`); the checkpoints are everyone's (orbax's multi-process save into
the run directory's `checkpoints/`); a design step runs on process 0 and its outcome is sent to the others
(`shared`); and which checkpoints a fused run resumes from is process 0's choice (`from_lead`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml

from envgen_jax.methods.rows import ORIGINAL_ROW
from envgen_jax.methods.view import RunView
from envgen_jax.report import write_report
from envgen_jax.run.compile_record import RunTiming
from envgen_jax.run.design_step import DesignStep
from envgen_jax.run.distributed import files_dir, from_lead, shared
from envgen_jax.run.log import RunLog
from envgen_jax.run.loop_state import (Evaluation, LoopState, accumulate_env_learning, add_stats, chunk_record,
                                       load_loop_state)
from envgen_jax.run.parts import RunParts
from envgen_jax.run.plan import Phase, build_plan, first_training_where, train_updates
from envgen_jax.trainer.checkpoint import Checkpoints, load_metadata, newest_checkpoint, saved_steps
from envgen_jax.trainer.evaluate import report_from_stats
from envgen_jax.trainer.train import select_seeds


class Member:
    """One method's run on the agent slice `agents` (a slice of the agent axis; None: the whole axis) and bank
    offset `bank_offset`. `resume_from`: the checkpoint its state was loaded from, or None."""

    def __init__(self, cfg, out: Path, parts: RunParts, trainer, log, llm_client=None, callbacks: Any = None,
                 state: LoopState | None = None, resume_from: Path | None = None):
        # Several processes: process 0 writes the run directory, the others a scratch copy; checkpoints are everyone's
        self.cfg, self.out, self.log = cfg, files_dir(out), log
        self.checkpoint_dir = Path(out).absolute() / "checkpoints"
        self.state = state or LoopState()
        self.resume_from = resume_from
        self.game, self.env = parts.game, parts.env
        self.plan = build_plan(cfg, parts.method)
        self.view = RunView(cfg, self.out, self.game, self.env, self.state)  # what the method sees of the run
        self.method = parts.method(self.view, trainer)
        self.method.load_state(self.state.method)
        self.design = shared(DesignStep(self.view, self.method, log, llm_client), self.state, self.method)
        self.records = RunLog(self.out, cfg.output.tensorboard)
        self.timing = RunTiming(self.out, callbacks)  # hook (issue 44): phases.json, compile.json
        self.agents: slice | None = None  # set by the driver when it lays members out on the agent axis
        self.bank_offset = 0
        self.checkpoints: Checkpoints | None = None
        self.layout = None  # (bank, rows) of the training phase running now, made when it is entered
        self.reset = False  # fresh episodes before the next chunk (a phase starts)
        self.session_start = time.monotonic()

    # ----------------------------------------------------------------------------------------- where it stands
    @property
    def phase(self) -> Phase | None:
        return self.plan[self.state.phase] if self.state.phase < len(self.plan) else None

    def state_where(self) -> str:
        """The `where` whose layout the TrainState has at this point of the plan: the last one trained if the
        current phase has not started (sampled and fixed layouts differ in state), else the current one."""
        if self.state.phase_updates == 0:
            done = [p for p in self.plan[: self.state.phase] if p.kind == "train"]
            if done:
                return done[-1].where
        return first_training_where(self.plan, self.state.phase)

    def advance(self) -> None:
        self.state.phase += 1
        self.state.phase_updates = 0

    # ----------------------------------------------------------------------------------------- its slices
    def train_state(self, ts):
        """This member's part of the driver's TrainState (the whole state for a member holding every agent)."""
        return ts if self.agents is None else select_seeds(ts, self.agents)

    def row_stats(self, stats, rows: slice | None = None):
        """This member's agents and bank rows (`rows`, default its block of the training bank) of host RowStats
        [agents, rows, ...]."""
        if self.agents is None:
            return stats
        rows = rows or slice(self.bank_offset, self.bank_offset + self.cfg.bank_rows)
        return jax.tree.map(lambda x: x[self.agents, rows], stats)

    def metrics(self, metrics):
        """This member's part of host ChunkMetrics (its agents; its bank rows of the RowStats)."""
        if self.agents is None:
            return metrics
        return jax.tree.map(lambda x: x[self.agents], metrics).replace(rows=self.row_stats(metrics.rows))

    def eval_layout(self):
        """(bank, rows) of an evaluation in the original game: that row alone, whatever else the method's bank holds,
        so that every method's evaluation is one program (a study compiles it once)."""
        bank = self.method.bank_and_rows("original")[0]
        return bank.only_row(ORIGINAL_ROW), np.zeros(self.cfg.eval.envs_per_agent, np.int32)

    # ----------------------------------------------------------------------------------------- its work
    def start(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.yaml").write_text(yaml.safe_dump(self.cfg.to_dict(), sort_keys=False))
        # Drop chunks recorded after the checkpoint we start from (all of them when a killed run had none yet).
        self.records.truncate(self.state.metrics_lines)
        self.timing.start(resumed=self.resume_from is not None)  # hook (issue 44)
        self.checkpoints = Checkpoints(self.checkpoint_dir, keep=self.cfg.output.keep_checkpoints)
        self.log.info(f"envgen-jax: {self.cfg.method} on {self.cfg.env}, {self.cfg.num_agents} agent(s), "
                      f"{train_updates(self.plan) * self.cfg.steps_per_update:,} env steps per seed, output in "
                      f"{self.out}")

    def initial_train_state(self, trainer):
        """This member's TrainState: restored from its checkpoint, or fresh (blank env slots: the first chunk
        resets)."""
        bank, rows = self.method.bank_and_rows(self.state_where())
        if self.resume_from is not None:
            return trainer.restore(self.resume_from, bank, rows, seeds=self.cfg.agent_seeds)
        return trainer.init(bank, rows, seeds=self.cfg.agent_seeds, hparams=self.cfg.agent_hparams, episodes=False)

    def enter_phase(self, ts) -> None:
        """Before the first chunk of a training phase in this session: the method's hook, the phase's layout."""
        phase = self.phase
        starting = self.state.phase_updates == 0
        if starting:
            self.method.before_phase(ts, phase)
        self.layout = self.method.bank_and_rows(phase.where)
        self.reset = starting  # fresh episodes from the phase's rows, in the chunk's own program

    def chunk_done(self, ts, metrics, seconds: float, chunk: int):
        """Book a trained chunk (this member's host metrics): counters, metrics.jsonl, the method's hooks, the scored
        statistics and the learning inside the LLM environments; the phase's end. Returns the TrainState."""
        phase, (bank, rows) = self.phase, self.layout
        self.state.phase_updates += chunk
        steps = chunk * self.cfg.steps_per_update
        self.state.env_steps += steps
        record, returns, lengths, episodes = chunk_record(self.state, self.cfg, phase, metrics, seconds, steps)
        record.update(self.method.chunk_record(ts, phase))
        self.state.curve.append({k: record[k] for k in ("env_steps", "cycle", "phase", "episodes_per_seed",
                                                        "return_per_seed")})
        self.records.chunk(record, returns, lengths, episodes)
        self.state.metrics_lines += 1
        ts, bank = self.method.after_chunk(ts, phase, bank)
        self.layout, self.reset = (bank, rows), False
        if phase.where == "final":  # the scored phase: its original-game episodes make the score
            original = jax.tree.map(lambda x: np.asarray(x)[:, ORIGINAL_ROW], metrics.rows)  # [S], [S, A]
            self.state.scored = add_stats(self.state.scored, original)
        elif phase.where in ("llm", "mixed"):
            accumulate_env_learning(self.state, phase, metrics.rows)
        if self.phase_trained:
            self.end_phase(ts)
        return ts

    @property
    def phase_trained(self) -> bool:
        """Whether the current phase is a training phase with every update done (a checkpoint written after a
        phase's last chunk resumes there)."""
        return self.phase is not None and self.phase.kind == "train" and self.state.phase_updates >= self.phase.updates

    def end_phase(self, ts) -> None:
        self.method.after_phase(ts, self.phase)
        self.layout = None
        self.advance()

    def evaluated(self, stats, cycle: int) -> None:
        """Book an evaluation in the original game (this member's host RowStats [S, K])."""
        report = report_from_stats(stats, self.env.achievement_names, [ORIGINAL_ROW], game=self.game)
        self.state.evals.append(Evaluation.of(report, cycle, final=cycle == self.cfg.schedule.cycles,
                                              env_steps=self.state.env_steps))
        self.records.evaluation(self.state.env_steps, report)
        self.advance()

    def checkpoint(self, ts, reason: str) -> Path:
        """Save this member's part of the TrainState with its LoopState: what its run alone would save."""
        with self.timing.section("checkpoint"):
            self.state.wall_seconds += time.monotonic() - self.session_start
            self.session_start = time.monotonic()
            self.state.checkpoints += 1
            self.state.method = self.method.state_dict()
            return self.checkpoints.save(self.state.checkpoints, self.train_state(ts), metadata={
                "loop": self.state.to_dict(), "reason": reason})

    def close(self) -> None:
        self.timing.stop()  # hook (issue 44)
        if self.checkpoints is not None:
            self.checkpoints.close()
        self.design.close()
        self.records.close()

    def finish(self) -> dict:
        """Write report.json and report.md; returns the report."""
        self.state.method = self.method.state_dict()
        report = write_report(self.out, self.cfg, self.state, list(self.env.achievement_names),
                              scored_env_steps=train_updates(self.plan, "final") * self.cfg.steps_per_update,
                              wall_seconds=self.state.wall_seconds + (time.monotonic() - self.session_start),
                              method_entries=self.method.report_entries(self.state.method),
                              timing=self.timing.report_fields())  # hook (issue 44)
        if report["score"] is not None:
            self.log.info(f"done: score {report['score']:.2f} +/- {report['score_std']:.2f} %, reward "
                          f"{report['reward']:.2f} +/- {report['reward_std']:.2f}; report: {self.out / 'report.md'}")
        return report


def checkpoints_by_steps(out: Path) -> list[tuple[int, int, Path]]:
    """(env steps per seed, step number, path) of every complete checkpoint of run directory `out`, oldest first; a
    run directory of the older layout (`trainer.checkpoint`, read only) gives its newest, as step -1."""
    directory = (Path(out) / "checkpoints").absolute()
    if not directory.is_dir():
        return []
    steps = saved_steps(directory)
    found = [(_env_steps(directory / str(s)), s, directory / str(s)) for s in steps]
    newest = newest_checkpoint(directory)
    if newest is not None and not steps:  # the older layout's, before any of today's
        found.append((_env_steps(newest), -1, newest))
    return sorted(found, key=lambda x: x[1])


def _env_steps(checkpoint: Path) -> int:
    return int(load_metadata(checkpoint)["loop"]["env_steps"])


def common_checkpoints(found: list[list[tuple[int, int, Path]]]) -> list[Path | None]:
    """For the members of a fused run, given each one's `checkpoints_by_steps`, the checkpoint each resumes from, all
    at one env step: the newest step at which every member has a checkpoint (None: the member starts from the
    beginning, step 0). A kill can stop a fused run between two members' saves; a member's checkpoints after the one
    chosen are removed, since its run continues from the earlier one and saves those step numbers again."""
    target = max(set.intersection(*({c[0] for c in f} | {0} for f in found)))  # 0: from the beginning
    chosen = []
    for f in found:
        at_target = [c for c in f if c[0] == target]
        pick = at_target[-1] if at_target else None
        for _, step, path in f:
            if pick is None or step > pick[1]:
                shutil.rmtree(path)
        chosen.append(None if pick is None else pick[2])
    return chosen


def concatenated(trees: list):
    """Pytrees with a leading axis, concatenated along it on the host (no program compiled per leaf shape)."""
    return jax.tree.map(lambda *x: jax.device_put(np.concatenate([np.asarray(leaf) for leaf in x])), *trees)


def lay_out(members: list[Member]) -> None:
    """The members' places on the agent axis: member m's agents [m * S, (m + 1) * S), its bank rows after those of
    the members before it (one member holds the whole axis)."""
    if len(members) > 1:
        seeds, offset = members[0].cfg.num_agents, 0
        for i, m in enumerate(members):
            m.agents, m.bank_offset = slice(i * seeds, (i + 1) * seeds), offset
            offset += m.cfg.bank_rows


def side_by_side(cfg, given: list[tuple[Member, tuple, Any]], offsets: list[int] | None = None):
    """(bank, rows, reset) of the agent axis from each member's (bank, rows) and reset flag: one member's as they
    are; several members' banks concatenated, each member's rows [S, N] offset into its block (`offsets`, default
    each member's block of the training bank, `bank_offset`), a flag per agent."""
    if len(given) == 1:
        return given[0][1] + (given[0][2],)
    seeds = cfg.num_agents
    offsets = offsets or [m.bank_offset for m, _, _ in given]
    bank = concatenated([bank for _, (bank, _), _ in given])
    rows = np.concatenate([np.broadcast_to(np.asarray(r), (seeds, np.shape(r)[-1])) + offset
                           for (_, (_, r), _), offset in zip(given, offsets)]).astype(np.int32)
    return bank, rows, np.repeat([bool(flag) for _, _, flag in given], seeds)


def group_members(runs: list[tuple[Any, Path]], logs: list, llm_clients: list | None = None, callbacks=None,
                  parts: list | None = None, resume: bool = True):
    """(members, trainer) of a group of runs trained as one program (a plain run: a group of one). The group's
    trainer is made once here and handed to every member, whatever the process-wide program cache
    (`trainer.reuse`) holds; members whose agent, env or level sampler differ cannot share it (an error). The one
    resume rule (`resume`): every member from `common_checkpoints`, as process 0 chose them (it alone removes the
    checkpoints left out); a run of its own resumes from its newest checkpoint. `parts`: each run's `RunParts`,
    if made already."""
    parts = [p or RunParts.of(cfg) for p, (cfg, _) in zip(parts or [None] * len(runs), runs)]
    # One env for runs of one game, observation and options: a game's env need not compare equal to another
    # instance of itself, and the trainer is shared by its env.
    same_env = [(c.env, c.observation, c.game_options) == (parts[0].cfg.env, parts[0].cfg.observation,
                                                           parts[0].cfg.game_options) for c, _ in runs]
    parts = [dataclasses.replace(p, env=parts[0].env) if same else p for p, same in zip(parts, same_env)]
    if any(p.trainer_key() != parts[0].trainer_key() for p in parts):
        raise ValueError("runs of one group must share one trainer (the same agent and env, no level sampler)")
    trainer = parts[0].make_trainer()
    if resume:
        found = [checkpoints_by_steps(Path(out)) for _, out in runs]  # every process: orbax's reads are collectives
        chosen = [c and Path(c) for c in from_lead(lambda: [c and str(c) for c in common_checkpoints(found)])]
    else:
        chosen = [None] * len(runs)
    clients = llm_clients or [None] * len(runs)
    members = []
    for i, ((cfg, out), p, checkpoint) in enumerate(zip(runs, parts, chosen)):
        state = load_loop_state(checkpoint) if checkpoint is not None else None
        member = Member(cfg, Path(out), p, trainer, logs[i], clients[i], callbacks if i == 0 else None, state,
                        checkpoint)
        members.append(member)
        if checkpoint is not None:
            logs[i].info(f"resuming {out} from {checkpoint.name} (phase {state.phase + 1}/{len(member.plan)}, "
                         f"{state.env_steps:,} env steps per seed)")
        elif resume:
            logs[i].info(f"no checkpoint in {out}: starting the run from the beginning")
    return members, trainer


def sections(name: str, members: list[Member]):
    """Each member's timing section `name` (phases.json, compile.json), entered together."""
    stack = contextlib.ExitStack()
    for m in members:
        stack.enter_context(m.timing.section(name))
    return stack
