"""The EnvGen host loop: compiled training chunks, with the design step (the LLM) between them.

The driver walks the plan (`envgen_jax.run.plan.build_plan`: phases from the config and the method) in order and
checkpoints between phases:

    design    the method's design step (`Method.design`, through `design_step.DesignStep`), e.g. an LLM call per
              designer
    train     compiled chunks in the phase's bank and rows (`Method.bank_and_rows`), with the method's hooks
              around the phase and each chunk (`envgen_jax.methods`)
    evaluate  the policy in the original game: the next feedback, and the final evaluation

Everything the host needs to continue is in `LoopState` (JSON; the method's own state in its `method` field) next to
the TrainState in each checkpoint (one orbax composite checkpoint per step in `<out>/checkpoints/`,
`trainer.checkpoint.Checkpoints`); a killed run resumes from its newest complete checkpoint and, on CPU, ends with the
same report as an uninterrupted one. `Callbacks.section(name)` wraps each part of the work ("init", "llm", "train",
"evaluate", "checkpoint"), for benchmarks that time them.

The driver trains one or several members (`run.member.Member`: one method's plan, state, records and run directory)
over one trainer, made once for the group. A run is a group of one member; a fused study (`EnvGenRun.group`) puts
several methods of one program on the agent axis (methods x seeds), aligned by training updates: each chunk trains
every member in its own phase's rows (the banks concatenated, each member's rows offset into its block), resets only
the agents of members that start a phase, and each member does its host work (design, evaluation, checkpoints) at
its own phase boundaries.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Any

import jax

from envgen_jax.run.distributed import spread
from envgen_jax.run.failures import MemberFailures
from envgen_jax.run.member import Member, concatenated, group_members, lay_out, sections, side_by_side
from envgen_jax.run.parts import RunParts
from envgen_jax.run.plan import Phase, phase_label, train_updates
from envgen_jax.run.progress import Progress
from envgen_jax.run_config import RunConfig, load_run_config
from envgen_jax.run.log import logger
from envgen_jax.run.loop_state import LoopState, load_loop_state
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.checkpoint import newest_checkpoint
from envgen_jax.trainer.evaluate import make_evaluator
from envgen_jax.trainer.metrics import to_host

__all__ = ["EnvGenRun", "LoopState", "Callbacks", "Phase", "latest_checkpoint", "check_no_run_there", "load_loop_state"]


class Callbacks:
    """Hooks around the driver's work, for benchmarks; the default does nothing."""

    @contextlib.contextmanager
    def section(self, name: str):  # name: init | llm | train | evaluate | checkpoint
        yield


class EnvGenRun:
    """One run directory: `EnvGenRun(cfg, out_dir).run()`, or `EnvGenRun.resume(out_dir).run()`; several methods'
    run directories trained as one program: `EnvGenRun.group([(cfg, out_dir), ...]).run()`. All three are a group
    of members (`member.group_members`): a run is a group of one, on the same path.

    log: a logging.Logger (or LoggerAdapter) for messages; llm_client: a client for the designers (tests script
    one); callbacks: `Callbacks` whose sections wrap each part of the work; parts: `RunParts` made already."""

    def __init__(self, cfg: RunConfig, out_dir: str | Path, log: logging.Logger | logging.LoggerAdapter | None = None,
                 llm_client: Any = None, callbacks: Callbacks | None = None, parts: RunParts | None = None):
        """A run of `cfg` from its beginning (whatever `out_dir` holds: `check_no_run_there` first)."""
        self._drive(*group_members([(cfg, Path(out_dir))], [log or logger], [llm_client], callbacks or Callbacks(),
                                   parts=[parts], resume=False))

    def _drive(self, members: list[Member], trainer) -> None:
        self.members, self.trainer = members, trainer
        self.failures = MemberFailures(fused=len(members) > 1)  # a fused run's failed members
        self.cfg, self.out, first = members[0].cfg, members[0].out, members[0]
        self.state, self.plan, self.method, self.view = first.state, first.plan, first.method, first.view
        self.env = first.env
        self.evaluator = make_evaluator(trainer, self.cfg.eval.envs_per_agent, self.cfg.eval.episodes_per_env,
                                        self.cfg.eval.max_steps, game=first.game)
        lay_out(members)
        self._key_period = self.cfg.num_agents if len(members) > 1 else None  # evaluation keys by seed, not position
        self._last_checkpoint = time.monotonic()
        self._compiled = False  # the first training chunk of a session compiles the chunk

    @classmethod
    def resume(cls, out_dir: str | Path, log: logging.Logger | logging.LoggerAdapter | None = None,
               llm_client: Any = None, callbacks: Callbacks | None = None, parts: RunParts | None = None) -> EnvGenRun:
        """The run in `out_dir` (its config.yaml), from its newest checkpoint (none: from the beginning)."""
        out = Path(out_dir)
        return cls.group([(load_run_config(out / "config.yaml"), out)], [log or logger], llm_client, callbacks,
                         parts=[parts])

    @classmethod
    def group(cls, runs: list[tuple[RunConfig, Path]], logs: list | None = None, llm_client: Any = None,
              callbacks: Callbacks | None = None, parts: list | None = None) -> EnvGenRun:
        """Runs of one program trained as one: several methods' runs (configurations alike but for `method`:
        `study.groups`) on one agent axis, or one run. Each member resumes from the newest env step at which every
        one has a checkpoint (`member.common_checkpoints`; a run of its own: its newest checkpoint). A member of
        several that fails (its design step raises, say) is left out of the rest, its error in `failures.errors`.
        llm_client: one client for every run, or a list of one per run."""
        clients = llm_client if isinstance(llm_client, list) else [llm_client] * len(runs)
        members, trainer = group_members(runs, logs or [logger] * len(runs), clients, callbacks or Callbacks(),
                                         parts=parts)
        run = cls.__new__(cls)
        run._drive(members, trainer)
        return run

    def run(self) -> dict | list[dict | None]:
        """Train every member to its end; the report (a run), or each member's (None where it failed)."""
        for m in self.members:
            m.start()
        if len(self.members) > 1:
            logger.info(f"fused: {len(self.members)} methods x {self.cfg.num_agents} seeds = "
                        f"{len(self.members) * self.cfg.num_agents} agents in one compiled chunk")
        with sections("init", self.members):
            ts = jax.block_until_ready(self._initial_train_state())
        bar = Progress(train_updates(self.plan) * self.cfg.steps_per_update, self.state.env_steps,
                       self.cfg.output.progress)
        for m in self.members:
            m.view.status = bar.set_postfix_str
        try:
            while True:
                self._host_work(ts)
                training = self._live(lambda m: m.phase is not None)
                if not training:
                    break
                bar.set_description(phase_label(training[0].phase, self.cfg.schedule.cycles))
                with sections("train", training):
                    ts = jax.block_until_ready(self._train_chunk(ts, training, bar))
        finally:
            for m in self.members:
                m.close()
            self.trainer.ahead.close()
            self.evaluator.ahead.close()
            bar.close()
        reports = [None if self.failures.failed(m) else m.finish() for m in self.members]
        return reports[0] if len(reports) == 1 else reports

    def _live(self, where=lambda m: True) -> list[Member]:
        return [m for m in self.members if not self.failures.failed(m) and where(m)]

    def _initial_train_state(self):
        """Each member's part, restored from its checkpoint or fresh (blank env slots: the first chunk resets),
        laid side by side on the agent axis."""
        parts = [m.initial_train_state(self.trainer) for m in self.members]
        ts = parts[0] if len(parts) == 1 else concatenated(parts)
        if jax.device_count() > 1:  # the whole agent axis (methods x seeds) over every device of every process
            ts = spread(ts, self.cfg, len(self.members) * self.cfg.num_agents, logger)
        else:  # compile the chunk and the evaluation in threads while the first design step runs
            bank, rows, _ = side_by_side(self.cfg, [(m, m.method.bank_and_rows(m.state_where()), False) for m in self.members])
            self.trainer.precompile_chunk(ts, bank, rows, num_updates=self.cfg.schedule.updates_per_chunk)
            self.evaluator.precompile(self.trainer.agent_state(ts).params, *self._eval_layout(), self.cfg.seed,
                                      self.cfg.eval.mode, key_period=self._key_period)
        return ts

    def _eval_layout(self):
        """(bank, rows) of an evaluation: each member's original-game row (member i's is row i), its agents' slots on
        it."""
        bank, rows, _ = side_by_side(self.cfg, [(m, m.eval_layout(), False) for m in self.members],
                                     offsets=list(range(len(self.members))))
        return bank, rows

    def _host_work(self, ts) -> None:
        """Every member's design and evaluation phases up to its next training phase, in rounds (each member one
        phase a round), so that at each env step every member checkpoints before any checkpoints twice."""
        while ready := self._live(lambda m: m.phase is not None and (m.phase.kind != "train" or m.phase_trained)):
            for m in ready:
                if m.phase_trained:  # resumed after the last chunk of a phase
                    m.end_phase(ts)
            at = {kind: [m for m in ready if m.phase is not None and m.phase.kind == kind] for kind in ("evaluate",
                                                                                                        "design")}
            for cycle in sorted({m.phase.cycle for m in at["evaluate"]}):
                self._evaluate(ts, [m for m in at["evaluate"] if m.phase.cycle == cycle], cycle)
            for m in at["design"]:
                self.failures.guarded(m, lambda m=m: self._design(ts, m))

    def _design(self, ts, m: Member) -> None:
        # No checkpoint before the design step: the cycle-boundary one just before it holds the same state.
        with sections("llm", [m]):
            m.design(m.phase.cycle)
        m.advance()
        m.checkpoint(ts, reason="after the LLM step")
        self._last_checkpoint = time.monotonic()

    def _evaluate(self, ts, members: list[Member], cycle: int) -> None:
        """One evaluation of every agent in the original game (one program), booked by the members at it."""
        with sections("evaluate", members):
            for m in members:
                m.view.status("evaluating in the original environment")
            stats, _ = self.evaluator.run(self.trainer.agent_state(ts).params, *self._eval_layout(), key=self.cfg.seed,
                                          fold_in=1000 + cycle, mode=self.cfg.eval.mode, key_period=self._key_period)
            stats = to_host(stats)
            for m in members:
                row = self.members.index(m)  # its row of the evaluation's layout
                self.failures.guarded(m, lambda m=m, r=row: m.evaluated(m.row_stats(stats, slice(r, r + 1)), cycle))
        for m in members:
            if not self.failures.failed(m):
                m.checkpoint(ts, reason="cycle boundary")
        self._last_checkpoint = time.monotonic()

    def _train_chunk(self, ts, training: list[Member], bar: Progress):
        chunk = self.cfg.schedule.updates_per_chunk
        for m in training:
            if m.layout is None:
                m.enter_phase(ts)
            ts, *layout = m.method.before_chunk(ts, m.phase, *m.layout)
            m.layout = tuple(layout)
        # A failed or finished member's agents idle in the original game (their results are kept, never saved again).
        given = [(m, m.layout, m.reset) if m in training else (m, m.method.bank_and_rows("original"), False)
                 for m in self.members]
        bank, rows, reset = side_by_side(self.cfg, given)
        if not self._compiled:
            bar.set_postfix_str("compiling the training chunk (its time is left out of the ETA)")
        start = time.monotonic()
        ts, metrics = self.trainer.train_chunk(ts, bank, rows, num_updates=chunk, reset=reset)
        metrics = to_host(metrics)
        seconds = time.monotonic() - start
        for m in training:
            ts = m.chunk_done(ts, m.metrics(metrics), seconds, chunk)
        bar.chunk_done(chunk * self.cfg.steps_per_update, seconds, len(self.members) * self.cfg.num_agents)
        self._compiled = True
        if time.monotonic() - self._last_checkpoint > 60 * self.cfg.output.checkpoint_minutes:
            for m in self._live(lambda m: m.phase is not None):
                m.checkpoint(ts, reason="timer")
            self._last_checkpoint = time.monotonic()
        return ts


def latest_checkpoint(out: Path) -> Path | None:
    """The newest complete checkpoint of the run directory `out`, or None."""
    return newest_checkpoint(Path(out) / "checkpoints")


def check_no_run_there(out: Path) -> None:
    if (out / "checkpoints").exists() or (out / "report.json").exists():
        raise ConfigError([f"{out}: already holds a run; use --resume {out} to continue it, or another --out"],
                          what="output directory")
