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
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml

from envgen_jax.run.compile_record import RunTiming
from envgen_jax.run.design_step import DesignStep
from envgen_jax.run.distributed import files_dir, shared, spread
from envgen_jax.run.loop_state import LoopState, accumulate_env_learning, add_stats, chunk_record, load_loop_state
from envgen_jax.run.parts import RunParts
from envgen_jax.run.plan import Phase, build_plan, first_training_where, phase_label, train_updates
from envgen_jax.run.progress import chunk_done, progress_bar
from envgen_jax.report import write_report
from envgen_jax.methods.rows import ORIGINAL_ROW
from envgen_jax.run_config import RunConfig, load_run_config
from envgen_jax.run.log import RunLog, logger, nan_to_none
from envgen_jax.methods.view import RunView
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.checkpoint import Checkpoints, newest_checkpoint
from envgen_jax.trainer.evaluate import make_evaluator
from envgen_jax.trainer.metrics import to_host

__all__ = ["EnvGenRun", "LoopState", "Callbacks", "Phase", "latest_checkpoint", "check_no_run_there", "load_loop_state"]


class Callbacks:
    """Hooks around the driver's work, for benchmarks; the default does nothing."""

    @contextlib.contextmanager
    def section(self, name: str):  # name: init | llm | train | evaluate | checkpoint
        yield


class EnvGenRun:
    """One run directory: `EnvGenRun(cfg, out_dir).run()`, or `EnvGenRun.resume(out_dir).run()`.

    log: a logging.Logger (or LoggerAdapter) for messages; llm_client: a client for the designers (tests script
    one); callbacks: `Callbacks` whose sections wrap each part of the work; parts: `RunParts` made already."""

    def __init__(self, cfg: RunConfig, out_dir: str | Path, state: LoopState | None = None,
                 log: logging.Logger | logging.LoggerAdapter | None = None, llm_client: Any = None,
                 callbacks: Callbacks | None = None, parts: RunParts | None = None):
        # Several processes: only process 0 writes to the run directory; checkpoints are everyone's (run.distributed)
        self.cfg, self.out = cfg, files_dir(out_dir)
        self.checkpoint_dir = Path(out_dir).absolute() / "checkpoints"
        self.log = log or logger
        # hook (issue 44): the sections are timed into phases.json and compile.json, then run the given callbacks
        self.callbacks = RunTiming(self.out, callbacks or Callbacks())
        self.state = state or LoopState()
        parts = parts or RunParts.of(cfg)  # the game, its env and the method's class, looked up once
        self.game, self.env = parts.game, parts.env
        self.plan = build_plan(cfg, parts.method)
        self.view = RunView(cfg, self.out, self.game, self.env, self.state)  # what the method sees of the run
        self.trainer = parts.make_trainer()
        self.evaluator = make_evaluator(self.trainer, cfg.eval.num_envs, cfg.eval.episodes_per_env,
                                        cfg.eval.max_steps, game=self.game)
        self.method = parts.method(self.view, self.trainer)
        self.method.load_state(self.state.method)
        self.design = shared(DesignStep(self.view, self.method, self.log, llm_client), self.state, self.method)
        self.records = RunLog(self.out, cfg.output.tensorboard)
        self._resume_from: Path | None = None
        self._checkpoints: Checkpoints | None = None  # open while run() runs
        self._last_checkpoint = time.monotonic()
        self._compiled = False  # the first training chunk of a session compiles the chunk
        self._session_start = time.monotonic()

    @classmethod
    def resume(cls, out_dir: str | Path, log: logging.Logger | logging.LoggerAdapter | None = None,
               llm_client: Any = None, callbacks: Callbacks | None = None, parts: RunParts | None = None) -> EnvGenRun:
        log = log or logger
        out = Path(out_dir)
        checkpoint = latest_checkpoint(out)
        cfg = load_run_config(out / "config.yaml")
        if checkpoint is None:
            log.info(f"no checkpoint in {out}: starting the run from the beginning")
            return cls(cfg, out, log=log, llm_client=llm_client, callbacks=callbacks, parts=parts)
        state = load_loop_state(checkpoint)
        run = cls(cfg, out, state=state, log=log, llm_client=llm_client, callbacks=callbacks, parts=parts)
        run._resume_from = checkpoint
        log.info(f"resuming {out} from {checkpoint.name} (phase {state.phase + 1}/{len(run.plan)}, "
                 f"{state.env_steps:,} env steps per seed)")
        return run

    def run(self) -> dict:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.yaml").write_text(yaml.safe_dump(self.cfg.to_dict(), sort_keys=False))
        # Drop chunks recorded after the checkpoint we start from (all of them when a killed run had none yet).
        self.records.truncate(self.state.metrics_lines)
        self.callbacks.start(resumed=self._resume_from is not None)  # hook (issue 44)
        total_steps = train_updates(self.plan) * self.cfg.steps_per_update
        self.log.info(f"envgen-jax: {self.cfg.method} on {self.cfg.env}, {self.cfg.num_agents} agent(s), "
                      f"{total_steps:,} env steps per seed, output in {self.out}")
        with self.callbacks.section("init"):
            ts = jax.block_until_ready(self._initial_train_state())
        bar = progress_bar(total_steps, self.state.env_steps, self.cfg.output.progress)
        self.view.status = bar.set_postfix_str
        self._checkpoints = Checkpoints(self.checkpoint_dir, keep=self.cfg.output.keep_checkpoints)
        try:
            while self.state.phase < len(self.plan):
                phase = self.plan[self.state.phase]
                bar.set_description(phase_label(phase, self.cfg.schedule.cycles))
                if phase.kind == "design":
                    # No checkpoint before the design step: the cycle-boundary one just before it holds the same state.
                    with self.callbacks.section("llm"):
                        self.design(phase.cycle)
                    self._advance()
                    self._checkpoint(ts, reason="after the LLM step")
                elif phase.kind == "train":
                    with self.callbacks.section("train"):
                        ts = jax.block_until_ready(self._train(ts, phase, bar))
                    self._advance()
                else:
                    with self.callbacks.section("evaluate"):
                        self._evaluate(ts, phase.cycle)
                    self._advance()
                    self._checkpoint(ts, reason="cycle boundary")
        finally:
            self.callbacks.stop()  # hook (issue 44)
            self.trainer.ahead.close()
            self.evaluator.ahead.close()
            bar.close()
            self._checkpoints.close()
            self.design.close()
            self.records.close()
        self.state.method = self.method.state_dict()
        report = write_report(self.out, self.cfg, self.state, list(self.env.achievement_names),
                              scored_env_steps=train_updates(self.plan, "final") * self.cfg.steps_per_update,
                              wall_seconds=self.state.wall_seconds + (time.monotonic() - self._session_start),
                              method_entries=self.method.report_entries(self.state.method),
                              timing=self.callbacks.report_fields())  # hook (issue 44)
        if report["score"] is not None:
            self.log.info(f"done: score {report['score']:.2f} +/- {report['score_std']:.2f} %, reward "
                          f"{report['reward']:.2f} +/- {report['reward_std']:.2f}; report: {self.out / 'report.md'}")
        return report

    def _initial_train_state(self):
        bank, rows = self.method.bank_and_rows(self._state_where())
        seeds, hparams = self.cfg.agent_seeds, self.cfg.agent_hparams  # init: blank env slots, the first chunk resets
        ts = (self.trainer.restore(self._resume_from, bank, rows, seeds=seeds) if self._resume_from is not None
              else self.trainer.init(bank, rows, seeds=seeds, hparams=hparams, episodes=False))
        if jax.device_count() > 1:  # every local device, or every process's (run.distributed)
            ts = spread(ts, self.cfg, self.log)
        else:
            self._compile_ahead(ts, bank, rows)
        return ts

    def _compile_ahead(self, ts, bank, rows) -> None:
        """Compile the chunk (for the layout the state was made with, the next phase's, which every other phase
        shares) and the evaluation in threads while the first design step runs. One device only: a sharded state's
        programs compile on first use."""
        self.trainer.precompile_chunk(ts, bank, rows, num_updates=self.cfg.schedule.updates_per_chunk)
        self.evaluator.precompile(self.trainer.agent_state(ts).params, *self._eval_layout(), self.cfg.seed,
                                  self.cfg.eval.mode)

    def _state_where(self) -> str:
        """The `where` whose layout the TrainState has at this point of the plan: the last one trained if the
        current phase has not started (sampled and fixed layouts differ in state), else the current one."""
        if self.state.phase_updates == 0:
            done = [p for p in self.plan[: self.state.phase] if p.kind == "train"]
            if done:
                return done[-1].where
        return first_training_where(self.plan, self.state.phase)

    def _advance(self):
        self.state.phase += 1
        self.state.phase_updates = 0

    def _train(self, ts, phase: Phase, bar):
        starting = self.state.phase_updates == 0
        if starting:
            self.method.before_phase(ts, phase)
        bank, rows = self.method.bank_and_rows(phase.where)
        reset = starting  # fresh episodes from the phase's rows, in the chunk's own program (no reset program)
        chunk = self.cfg.schedule.updates_per_chunk
        while self.state.phase_updates < phase.updates:
            ts, bank, rows = self.method.before_chunk(ts, phase, bank, rows)
            if not self._compiled:
                bar.set_postfix_str("compiling the training chunk (its time is left out of the ETA)")
            start = time.monotonic()
            ts, metrics = self.trainer.train_chunk(ts, bank, rows, num_updates=chunk, reset=reset)
            reset = False
            metrics = to_host(metrics)
            seconds = time.monotonic() - start
            self.state.phase_updates += chunk
            steps = chunk * self.cfg.steps_per_update
            self.state.env_steps += steps
            self._record_chunk(phase, metrics, seconds, steps, ts)
            ts, bank = self.method.after_chunk(ts, phase, bank)
            if phase.where == "final":  # the scored phase: its original-game episodes make the score
                original = jax.tree.map(lambda x: np.asarray(x)[:, ORIGINAL_ROW], metrics.rows)  # [S], [S, A]
                self.state.scored = add_stats(self.state.scored, original)
            elif phase.where in ("llm", "mixed"):
                accumulate_env_learning(self.state, phase, metrics.rows)
            chunk_done(bar, steps, seconds, self.cfg.num_agents, self._compiled)
            self._compiled = True
            if time.monotonic() - self._last_checkpoint > 60 * self.cfg.output.checkpoint_minutes:
                self._checkpoint(ts, reason="timer")
        self.method.after_phase(ts, phase)
        return ts

    def _record_chunk(self, phase: Phase, metrics, seconds: float, steps: int, ts) -> None:
        record, returns, lengths, episodes = chunk_record(self.state, self.cfg, phase, metrics, seconds, steps)
        record.update(self.method.chunk_record(ts, phase))
        self.state.curve.append({k: record[k] for k in ("env_steps", "cycle", "phase", "episodes_per_seed",
                                                        "return_per_seed")})
        self.records.chunk(record, returns, lengths, episodes)
        self.state.metrics_lines += 1

    def _eval_layout(self):
        return self.method.bank_and_rows("original")[0], np.zeros(self.cfg.eval.num_envs, np.int32)

    def _evaluate(self, ts, cycle: int) -> None:
        self.view.status("evaluating in the original environment")
        bank, rows = self._eval_layout()
        report = self.evaluator.evaluate(self.trainer.agent_state(ts).params, bank, rows, key=self.cfg.seed,
                                         fold_in=1000 + cycle, mode=self.cfg.eval.mode, report_rows=[ORIGINAL_ROW])
        entry = {"cycle": cycle, "final": cycle == self.cfg.schedule.cycles, "env_steps": self.state.env_steps,
                 **report.to_dict(), "success_per_seed": nan_to_none(report.success)}
        self.state.evals.append(entry)
        self.records.evaluation(self.state.env_steps, report)

    def _checkpoint(self, ts, reason: str) -> Path:
        with self.callbacks.section("checkpoint"):
            self.state.wall_seconds += time.monotonic() - self._session_start
            self._session_start = time.monotonic()
            self.state.checkpoints += 1
            self.state.method = self.method.state_dict()
            path = self._checkpoints.save(self.state.checkpoints, ts, metadata={
                "loop": dataclasses.asdict(self.state), "reason": reason})
            self._last_checkpoint = time.monotonic()
            return path


def latest_checkpoint(out: Path) -> Path | None:
    """The newest complete checkpoint of the run directory `out`, or None."""
    return newest_checkpoint(Path(out) / "checkpoints")


def check_no_run_there(out: Path) -> None:
    if (out / "checkpoints").exists() or (out / "report.json").exists():
        raise ConfigError([f"{out}: already holds a run; use --resume {out} to continue it, or another --out"],
                          what="output directory")
