"""The EnvGen host loop: compiled training chunks, with the design step (the LLM) between them.

The driver walks the plan (`envgen_jax.plan.build_plan`: phases from the config and the method) in order and
checkpoints between phases:

    design    the method's design step (`envgen_jax.methods.<name>.design`), e.g. an LLM call per designer
    train     compiled chunks in the phase's bank rows (`envgen_jax.rows.assign_rows`)
    evaluate  the policy in the original game: the next feedback, and the final evaluation

Everything the host needs to continue is in `LoopState` (JSON) next to the TrainState in each checkpoint (one orbax
composite checkpoint per step in `<out>/checkpoints/`, `trainer.checkpoint.Checkpoints`); a killed run resumes from
its newest complete checkpoint and, on CPU, ends with the same report as an uninterrupted one.
`Callbacks.section(name)` wraps each part of the work ("init", "llm", "train", "evaluate", "checkpoint"), for
benchmarks that time them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from envgen_jax import games, methods
from envgen_jax.envs.vector import RowSampler
from envgen_jax.methods.base import DesignContext
from envgen_jax.methods.random import random_config  # noqa: F401 -- re-exported
from envgen_jax.plan import Phase, build_plan, first_training_where, phase_label, train_updates
from envgen_jax.rows import ORIGINAL_ROW, assign_rows
from envgen_jax.report import environment_learning, selection_summary, write_report
from envgen_jax.run_config import RunConfig, load_run_config
from envgen_jax.run_log import RunLog, logger, nan_to_none
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.checkpoint import Checkpoints, load_metadata, newest_checkpoint
from envgen_jax.trainer.evaluate import make_evaluator
from envgen_jax.trainer.metrics import RowStats, nan_to_zero, pool_rows, to_host
from envgen_jax.trainer.ppo import make_trainer

__all__ = ["EnvGenRun", "LoopState", "Callbacks", "Phase", "build_plan", "latest_checkpoint", "check_no_run_there",
           "abstract_train_state", "checkpoint_bytes"]


@dataclasses.dataclass
class LoopState:
    """The host side of a run, saved as JSON with every checkpoint."""

    phase: int = 0                      # index into the plan of the phase to run next (or running)
    phase_updates: int = 0              # updates already done in that phase
    designs: list = dataclasses.field(default_factory=list)   # per cycle: configs (per designer) + purposes
    evals: list = dataclasses.field(default_factory=list)     # per evaluation: success mean/std, score, ...
    curve: list = dataclasses.field(default_factory=list)     # per chunk: env steps, phase, per-seed returns
    scored: dict | None = None          # RowStats of the final phase, summed (per seed, lists)
    # Per cycle: RowStats of its LLM-environment training phase, summed per bank row ([S, K] lists), so the report
    # can show what the agent learned inside each LLM environment.
    env_learning: list = dataclasses.field(default_factory=list)
    llm_calls: int = 0
    llm_seconds: float = 0.0            # wall time spent waiting for the LLM (all designers, all cycles)
    designers: list = dataclasses.field(default_factory=list)  # Designer.state_dict() per designer
    metrics_lines: int = 0              # lines of metrics.jsonl that belong to this state
    wall_seconds: float = 0.0           # training-loop wall time before this session
    env_steps: int = 0                  # per seed
    checkpoints: int = 0                # checkpoints saved: the step number of the newest
    buffer: list = dataclasses.field(default_factory=list)  # level replay: the bank rows' configurations (dicts)
    buffer_draws: int = 0               # level replay: refills of the buffer so far (seeds its random draws)
    # Learnability (sfl, envgen_sfl): the training distribution over bank rows per seed ([S, K] lists) chosen by
    # the latest selection, and every selection's measurements (p, learnability, weights, per seed and row).
    row_weights: list = dataclasses.field(default_factory=list)
    selections: list = dataclasses.field(default_factory=list)
    # Per seed and achievement: the env step (per seed, at the end of the chunk) by which some training episode, in
    # any environment, first unlocked it; None until then (empty for checkpoints written before it was kept).
    first_unlock: list = dataclasses.field(default_factory=list)


class Callbacks:
    """Hooks around the driver's work, for benchmarks; the default does nothing."""

    @contextlib.contextmanager
    def section(self, name: str):  # name: init | llm | train | evaluate | checkpoint
        yield


class EnvGenRun:
    """One run directory: `EnvGenRun(cfg, out_dir).run()`, or `EnvGenRun.resume(out_dir).run()`.

    log: a logging.Logger (or LoggerAdapter) for messages; llm_client: a client for the designers (tests script
    one); callbacks: `Callbacks` whose sections wrap each part of the work."""

    def __init__(self, cfg: RunConfig, out_dir: str | Path, state: LoopState | None = None,
                 log: logging.Logger | logging.LoggerAdapter | None = None, llm_client: Any = None,
                 callbacks: Callbacks | None = None):
        self.cfg, self.out = cfg, Path(out_dir)
        self.log = log or logger
        self.callbacks = callbacks or Callbacks()
        self.state = state or LoopState()
        self.plan = build_plan(cfg)
        self.method = methods.get(cfg.method)
        self.game = games.get(cfg.env)
        self.env = self.game.make_env(cfg.observation, cfg.game_options)
        self.config_cls = self.game.config_cls
        # A method with a level sampler (plr) draws its training rows on the device; see methods/plr.py.
        self.level_sampler = _level_sampler(cfg)
        self.trainer = make_trainer(self.env, cfg.trainer_ppo, level_sampler=self.level_sampler)
        self.evaluator = make_evaluator(self.trainer, cfg.eval.num_envs, cfg.eval.episodes_per_env,
                                        cfg.eval.max_steps)
        # A method that chooses rows by learnability (sfl, envgen_sfl) measures its candidates with this one.
        self.learns_where = getattr(self.method, "LEARNS_WHERE", None)
        self._selected = None  # the selection made since the last recorded chunk, for metrics.jsonl
        if self.learns_where is not None:
            u = cfg.ued
            self.learn_evaluator = make_evaluator(self.trainer, (cfg.bank_rows - 1) * u.rollouts_per_level, 1,
                                                  u.rollout_steps)
        self.records = RunLog(self.out, cfg.output.tensorboard)
        self._llm_client = llm_client  # tests inject a scripted client here
        self._designers: list | None = None
        self._resume_from: Path | None = None
        self._checkpoints: Checkpoints | None = None  # open while run() runs
        self._last_checkpoint = time.monotonic()
        self._compiled = False  # the first training chunk of a session compiles the chunk
        self._session_start = time.monotonic()

    @classmethod
    def resume(cls, out_dir: str | Path, log: logging.Logger | logging.LoggerAdapter | None = None,
               llm_client: Any = None, callbacks: Callbacks | None = None) -> "EnvGenRun":
        log = log or logger
        out = Path(out_dir)
        checkpoint = latest_checkpoint(out)
        cfg = load_run_config(out / "config.yaml")
        if checkpoint is None:
            log.info(f"no checkpoint in {out}: starting the run from the beginning")
            return cls(cfg, out, log=log, llm_client=llm_client, callbacks=callbacks)
        state = load_loop_state(checkpoint)
        run = cls(cfg, out, state=state, log=log, llm_client=llm_client, callbacks=callbacks)
        run._resume_from = checkpoint
        log.info(f"resuming {out} from {checkpoint.name} (phase {state.phase + 1}/{len(run.plan)}, "
                 f"{state.env_steps:,} env steps per seed)")
        return run

    # ----------------------------------------------------------------------------------------------- the run
    def run(self) -> dict:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.yaml").write_text(_yaml(self.cfg.to_dict()))
        # Drop chunks recorded after the checkpoint we start from (all of them when a killed run had none yet).
        self.records.truncate(self.state.metrics_lines)
        total_steps = train_updates(self.plan) * self.cfg.steps_per_update
        self.log.info(f"envgen-jax: {self.cfg.method} on {self.cfg.env}, {self.cfg.num_agents} agent(s), "
                      f"{total_steps:,} env steps per seed, output in {self.out}")
        with self.callbacks.section("init"):
            ts = jax.block_until_ready(self._initial_train_state())
        bar = _progress(total_steps, self.state.env_steps, self.cfg.output.progress)
        self._checkpoints = Checkpoints(self.out / "checkpoints", keep=self.cfg.output.keep_checkpoints)
        try:
            while self.state.phase < len(self.plan):
                phase = self.plan[self.state.phase]
                bar.set_description(phase_label(phase, self.cfg.schedule.cycles))
                if phase.kind == "design":
                    # No checkpoint before the design step: the cycle-boundary one just before it holds the same state.
                    with self.callbacks.section("llm"):
                        self._design(phase.cycle, bar)
                    self._advance()
                    self._checkpoint(ts, reason="after the LLM step")
                elif phase.kind == "train":
                    with self.callbacks.section("train"):
                        ts = jax.block_until_ready(self._train(ts, phase, bar))
                    self._advance()
                else:
                    with self.callbacks.section("evaluate"):
                        self._evaluate(ts, phase.cycle, bar)
                    self._advance()
                    self._checkpoint(ts, reason="cycle boundary")
        finally:
            bar.close()
            self._checkpoints.close()
            for d in self._designers or []:
                d.close()
            self.records.close()
        report = write_report(self.out, self.cfg, self.state, list(self.env.achievement_names),
                              scored_env_steps=train_updates(self.plan, "final") * self.cfg.steps_per_update,
                              wall_seconds=self.state.wall_seconds + (time.monotonic() - self._session_start))
        if report["score"] is not None:
            self.log.info(f"done: score {report['score']:.2f} +/- {report['score_std']:.2f} %, reward "
                          f"{report['reward']:.2f} +/- {report['reward_std']:.2f}; report: {self.out / 'report.md'}")
        return report

    def _initial_train_state(self):
        bank, rows = self._bank_and_rows(self._state_where())
        if self._resume_from is not None:
            ts = self.trainer.restore(self._resume_from, bank, rows, seeds=self.cfg.agent_seeds)
        else:
            ts = self.trainer.init(bank, rows, seeds=self.cfg.agent_seeds, hparams=self.cfg.agent_hparams)
        if jax.device_count() > 1:  # every local device (or every host's, after jax.distributed.initialize())
            from envgen_jax.trainer.sharding import layout, shard_train_state
            ts = shard_train_state(ts, self.cfg.ppo.num_envs)
            self.log.info(f"spread over {jax.device_count()} devices by "
                          f"{layout(self.cfg.num_agents, self.cfg.ppo.num_envs, jax.device_count())}")
        return ts

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

    # ------------------------------------------------------------------------------------------------- design
    def _design(self, cycle: int, bar) -> None:
        def on_llm_call(seconds: float, n: int) -> None:
            self.state.llm_calls += 1
            self.state.llm_seconds += seconds
            self.log.info(f"LLM step {self.state.llm_calls}: {n} environments in {seconds:.1f}s")
            self.state.designers = [d.state_dict() for d in self._designers]

        ctx = DesignContext(cfg=self.cfg, cycle=cycle, cycles=self.cfg.schedule.cycles,
                            n=self.cfg.schedule.envs_per_call, num_designers=self.cfg.num_designers,
                            feedback=self._feedback(cycle), previous=self.state.designs,
                            config_cls=self.config_cls, designers=self._get_designers, on_llm_call=on_llm_call,
                            status=bar.set_postfix_str, learnability_notes=self._learnability_notes(),
                            inside=self._inside(cycle))
        result = self.method.design(ctx)
        if isinstance(result, dict):  # a whole record (e.g. fixed reusing cycle 1's): nothing new to write
            self.state.designs.append(result)
            return
        record = {"cycle": cycle, "designers": result}
        self.state.designs.append(record)
        self._write_design(record)

    def _feedback(self, cycle: int) -> list | None:
        """Success rates (percent, mean and std over seeds) from the previous cycle's evaluation."""
        if cycle == 0 or not self.state.evals:
            return None
        last = self.state.evals[-1]
        names = self.env.achievement_names
        if self.cfg.num_designers == 1:
            return [{a: (100 * nan_to_zero(last["success_mean"][a]), 100 * nan_to_zero(last["success_std"][a]))
                     for a in names}]
        return [{a: (100 * nan_to_zero(per_seed[j]), 0.0) for j, a in enumerate(names)}
                for per_seed in last["success_per_seed"]]

    def _inside(self, cycle: int) -> list | None:
        """Per designer, per environment of the previous cycle's design: the agent's success (%) per achievement
        inside it, from that cycle's training episodes (report.py's environment_learning); None if not measured."""
        if cycle == 0:
            return None
        entry = next((e for e in environment_learning(self.state, self.env.achievement_names)
                      if e["cycle"] == cycle - 1), None)
        if entry is None:
            return None
        envs = [env["success"] for env in entry["environments"]]
        per = len(envs) // self.cfg.num_designers
        return [envs[d * per:(d + 1) * per] for d in range(self.cfg.num_designers)]

    def _learnability_notes(self) -> list | None:
        """What the latest learnability selection measured, as notes for the designers (envgen_sfl), or None."""
        if not hasattr(self.method, "learnability_notes") or not self.state.selections:
            return None
        return self.method.learnability_notes(self.cfg, self.state.selections[-1])

    def _get_designers(self) -> list:
        if self._designers is None:
            from envgen_jax.llm.designer import Designer
            transcript = self.out / "llm_transcript.jsonl"
            spec = self.game.designer_spec(self.env)
            if self.state.designers:
                self._designers = [Designer.from_state(s, self.cfg.llm, transcript, env=spec, client=self._llm_client)
                                   for s in self.state.designers]
            else:
                self._designers = [Designer(spec, self.cfg.llm, transcript, client=self._llm_client)
                                   for _ in range(self.cfg.num_designers)]
        return self._designers

    def _write_design(self, record: dict) -> None:
        cycle = record["cycle"]
        folder = self.out / "environments"
        folder.mkdir(exist_ok=True)
        (folder / f"cycle_{cycle + 1}.json").write_text(json.dumps(
            {"environments": [{"purpose": p, "config": c} for d in record["designers"]
                              for p, c in zip(d["purposes"], d["configs"])]}, indent=2))
        if self.cfg.output.pictures:
            configs = self._llm_configs(record)[: self.cfg.schedule.envs_per_call]
            self.game.render(configs, folder / f"cycle_{cycle + 1}.png", seed=self.cfg.seed,
                             options=self.cfg.game_options)

    # --------------------------------------------------------------------------------------------- training
    def _llm_configs(self, record: dict | None = None) -> list:
        """The current LLM configurations, all designers in order, with the LLM episode length applied."""
        record = record or (self.state.designs[-1] if self.state.designs else None)
        if record is None:
            return []
        return self._generated([c for d in record["designers"] for c in d["configs"]])

    def _generated(self, dicts: list) -> list:
        """Configurations of generated environments: those that keep the original episode length get the LLM
        environments' (`schedule.llm_episode_length`; Crafter only)."""
        default_length = getattr(self.config_cls.original(), "episode_length", None)
        out = []
        for c in dicts:
            cfg = self.config_cls.from_dict(c)
            if default_length is not None and cfg.episode_length == default_length:
                cfg = dataclasses.replace(cfg, episode_length=self.cfg.schedule.llm_episode_length)
            out.append(cfg)
        return out

    def _bank_and_rows(self, where: str):
        """Bank: row 0 the original game, then the LLM configurations, padded to a fixed capacity (no recompiles).
        A level-replay phase: the buffer's configurations, and rows None (the level sampler draws them)."""
        if where == getattr(self.method, "WHERE", None):
            if not self.state.buffer:
                self.state.buffer = self.method.new_configs(self.cfg, self.config_cls, self.cfg.bank_rows, 0)
                self.state.buffer_draws = 1
            return self.env.make_params([self.config_cls.from_dict(c) for c in self.state.buffer]), None
        if where == self.learns_where:
            return self._learning_bank(), RowSampler(jnp.asarray(self._weights(), jnp.float32))
        llm = self._llm_configs() if where in ("llm", "mixed") else []
        bank = self.env.make_params([self.config_cls.original(), *llm], capacity=self.cfg.bank_rows)
        s = self.cfg.schedule
        rows = assign_rows(where, self.cfg.ppo.num_envs, self.cfg.num_agents, self.cfg.num_designers, s.envs_per_call,
                           s.original_share, bool(llm))
        return bank, rows

    def _train(self, ts, phase: Phase, bar):
        learns = phase.where == self.learns_where
        if learns and self.state.phase_updates == 0:
            self._select(ts, phase, bar)
        bank, rows = self._bank_and_rows(phase.where)
        if self.state.phase_updates == 0:
            ts = self.trainer.reset_envs(ts, bank, rows)  # a new phase starts fresh episodes, from its rows
        chunk = self.cfg.schedule.updates_per_chunk
        while self.state.phase_updates < phase.updates:
            if learns and self._reselect_now(phase):  # sfl: a new pool every ued.sfl_refresh_updates updates
                self._select(ts, phase, bar)
                bank, rows = self._bank_and_rows(phase.where)
                ts = self.trainer.reset_envs(ts, bank, rows)
            if not self._compiled:
                bar.set_postfix_str("compiling the training chunk (its time is left out of the ETA)")
            start = time.monotonic()
            ts, metrics = self.trainer.train_chunk(ts, bank, rows, num_updates=chunk)
            metrics = to_host(metrics)
            seconds = time.monotonic() - start
            self.state.phase_updates += chunk
            steps = chunk * self.cfg.steps_per_update
            self.state.env_steps += steps
            self._record_chunk(phase, metrics, seconds, steps, ts)
            if rows is None:  # level replay: refresh the buffer between chunks
                ts, bank = self._refresh_buffer(ts, bank)
            if phase.where == "final":  # the scored phase: its original-game episodes make the score
                original = jax.tree.map(lambda x: np.asarray(x)[:, ORIGINAL_ROW], metrics.rows)  # [S], [S, A]
                self.state.scored = _add_stats(self.state.scored, original)
            elif phase.where in ("llm", "mixed"):
                self._accumulate_env_learning(phase, metrics.rows)
            if self._compiled:
                bar.update(steps)
                bar.set_postfix_str(f"{steps * self.cfg.num_agents / seconds:,.0f} steps/s")
            else:
                _count_steps_not_time(bar, steps)
                bar.set_postfix_str(f"compiled and ran the first chunk in {seconds:.0f}s")
                self._compiled = True
            if time.monotonic() - self._last_checkpoint > 60 * self.cfg.output.checkpoint_minutes:
                self._checkpoint(ts, reason="timer")
        if rows is None and self.cfg.output.pictures:
            self._picture_top_levels(ts, phase.cycle)
        return ts

    # ------------------------------------------------------------------------------------ learnability (sfl)
    def _candidates(self) -> list:
        """The configurations learnability chooses from (bank rows 1, 2, ...): sfl's random pool, or envgen_sfl's
        LLM environments."""
        return self._generated(self.state.buffer) if hasattr(self.method, "pool_size") else self._llm_configs()

    def _learning_bank(self, candidates: list | None = None):
        candidates = self._candidates() if candidates is None else candidates
        return self.env.make_params([self.config_cls.original(), *candidates], capacity=self.cfg.bank_rows)

    def _weights(self) -> np.ndarray:
        """The latest selection's training distribution [S, K]; before any, the original game."""
        if self.state.row_weights:
            return np.asarray(self.state.row_weights, np.float32)
        w = np.zeros((self.cfg.num_agents, self.cfg.bank_rows), np.float32)
        w[:, ORIGINAL_ROW] = 1.0
        return w

    def _reselect_now(self, phase: Phase) -> bool:
        every = self.cfg.ued.sfl_refresh_updates
        return (hasattr(self.method, "pool_size") and 0 < self.state.phase_updates < phase.updates
                and self.state.phase_updates % every == 0)

    def _select(self, ts, phase: Phase, bar) -> None:
        """Measure every candidate's learnability with the current policy and set the rows to train on."""
        from envgen_jax.trainer import learnability
        bar.set_postfix_str("measuring the candidates' learnability")
        start = time.monotonic()
        if hasattr(self.method, "pool_size"):  # sfl: a fresh random pool (the draw counter makes resumes equal)
            self.state.buffer = self.method.new_configs(self.cfg, self.config_cls, self.method.pool_size(self.cfg),
                                                        self.state.buffer_draws)
            self.state.buffer_draws += 1
        candidates = self._candidates()
        bank = self._learning_bank(candidates)
        key = jax.random.fold_in(jax.random.PRNGKey(self.cfg.seed), 5000 + len(self.state.selections))
        last_eval = self.state.evals[-1]["success_per_seed"] if self.state.evals else None
        mastered = (learnability.mastered_from(np.asarray(last_eval, np.float64), self.cfg.ued.mastered_at)
                    if last_eval is not None else np.zeros((self.cfg.num_agents, len(self.env.achievement_names)), bool))
        m = learnability.measure(self.learn_evaluator, ts.params, bank, np.arange(1, self.cfg.bank_rows),
                                 self.cfg.ued.rollouts_per_level, key, mastered)
        p, measured, learn = m["p"], m["measured"], m["learnability"]
        weights = self.method.row_weights(self.cfg, learn)
        self.state.row_weights = weights.tolist()
        self.state.selections.append({
            "cycle": phase.cycle, "env_steps": self.state.env_steps, "seconds": time.monotonic() - start,
            "mastered_per_seed": mastered.sum(-1).tolist(), "episodes": m["episodes"].tolist(),
            "p": p.tolist(), "measured": measured.tolist(), "learnability": learn.tolist(),
            "weights": weights.tolist()})
        self._selected = self.state.selections[-1]
        if self.cfg.output.pictures and self.state.phase_updates == 0:
            top = [int(r) for r in np.argsort(-learn[0, 1:], kind="stable")[:4] + 1]
            self._picture_levels(phase.cycle, top, [candidates[r - 1] for r in top], {"learnability": [learn[0, r] for r in top],
                                                              "p": [p[0, r] for r in top]})

    def _refresh_buffer(self, ts, bank):
        """Replace the rows the method picks (plr: the lowest-scoring, once no new level is left) by new random
        configurations; their statistics are forgotten and every slot starts a fresh episode."""
        from envgen_jax.trainer import level_sampler as ls
        replace = self.method.rows_to_refresh(self.cfg, jax.device_get(ts.sampler))
        if replace.size == 0:
            return ts, bank
        new = self.method.new_configs(self.cfg, self.config_cls, replace.size, self.state.buffer_draws)
        self.state.buffer_draws += 1
        for row, config in zip(replace.tolist(), new):
            self.state.buffer[row] = config
        bank = self.env.make_params([self.config_cls.from_dict(c) for c in self.state.buffer])
        ts = ts.replace(sampler=ls.replace_rows(ts.sampler, replace))
        return self.trainer.reset_envs(ts, bank, None), bank

    def _picture_top_levels(self, ts, cycle: int) -> None:
        """The four highest-scored configurations of seed 0's buffer, through the game's renderer."""
        top = self.method.buffer_metrics(self.level_sampler, jax.device_get(ts.sampler))["top_rows_per_seed"][0]
        self._picture_levels(cycle, top, [self.config_cls.from_dict(self.state.buffer[r]) for r in top])

    def _picture_levels(self, cycle: int, rows: list, configs: list, extra: dict | None = None) -> None:
        """environments/cycle_<c>_top_levels.{json,png}: seed 0's highest-scored rows, through the game's renderer."""
        folder = self.out / "environments"
        folder.mkdir(exist_ok=True)
        (folder / f"cycle_{cycle + 1}_top_levels.json").write_text(json.dumps(
            {"rows": rows, "configs": [c.to_dict() for c in configs],
             **{k: [float(x) for x in v] for k, v in (extra or {}).items()}}, indent=2))
        self.game.render(configs, folder / f"cycle_{cycle + 1}_top_levels.png", seed=self.cfg.seed,
                         options=self.cfg.game_options)

    def _record_chunk(self, phase: Phase, metrics, seconds: float, steps: int, ts=None) -> None:
        pooled = pool_rows(metrics.rows)  # [S]
        self._note_first_unlocks(np.asarray(pooled.achievement_counts))
        episodes = np.asarray(pooled.episodes)
        with np.errstate(invalid="ignore", divide="ignore"):
            returns = np.where(episodes > 0, pooled.return_sum / np.maximum(episodes, 1), np.nan)
            lengths = np.where(episodes > 0, pooled.length_sum / np.maximum(episodes, 1), np.nan)
        record = {
            "env_steps": self.state.env_steps, "cycle": phase.cycle, "phase": phase.where,
            "episodes_per_seed": episodes.tolist(), "return_per_seed": nan_to_none(returns),
            # restarts that reused the slot's previous world (no fresh spare ready): see envs/vector.py
            "stale_resets_per_seed": np.asarray(pooled.stale_resets).tolist(),
            "length_per_seed": nan_to_none(lengths),
            "steps_per_second": steps * self.cfg.num_agents / seconds, "seconds": seconds,
            "losses": {k: float(np.mean(v)) for k, v in vars(metrics.losses).items()},
        }
        if self.level_sampler is not None and phase.where == getattr(self.method, "WHERE", None):
            record["buffer"] = self.method.buffer_metrics(self.level_sampler, jax.device_get(ts.sampler))
        if self._selected is not None:  # the learnability selection made before this chunk
            record["selection"] = {k: v for k, v in selection_summary(self._selected).items()
                                   if k not in ("cycle", "env_steps")}
            self._selected = None
        self.state.curve.append({k: record[k] for k in ("env_steps", "cycle", "phase", "episodes_per_seed",
                                                        "return_per_seed")})
        self.records.chunk(record, returns, lengths, episodes)
        self.state.metrics_lines += 1

    def _note_first_unlocks(self, counts: np.ndarray) -> None:
        """counts [S, A]: the chunk's unlocks per seed; the first chunk with one sets that achievement's step."""
        if not self.state.first_unlock:
            if self.state.env_steps > self.cfg.steps_per_update * self.cfg.schedule.updates_per_chunk:
                return  # resumed from a checkpoint written before first_unlock was kept: unknown, not zero
            self.state.first_unlock = [[None] * counts.shape[1] for _ in range(counts.shape[0])]
        for s, a in zip(*np.nonzero(counts)):
            if self.state.first_unlock[s][a] is None:
                self.state.first_unlock[s][a] = self.state.env_steps

    def _accumulate_env_learning(self, phase: Phase, rows: RowStats) -> None:
        """Sum the chunk's per-row stats ([S, K]) into this cycle's entry: one entry per LLM-environment phase."""
        entries = self.state.env_learning
        if not entries or entries[-1]["cycle"] != phase.cycle:
            entries.append({"cycle": phase.cycle, "phase": phase.where, "stats": None})
        entries[-1]["stats"] = _add_stats(entries[-1]["stats"], rows)

    # ------------------------------------------------------------------------------------------- evaluation
    def _evaluate(self, ts, cycle: int, bar) -> None:
        bar.set_postfix_str("evaluating in the original environment")
        bank, _ = self._bank_and_rows("original")
        rows = np.zeros(self.cfg.eval.num_envs, np.int32)
        key = jax.random.fold_in(jax.random.PRNGKey(self.cfg.seed), 1000 + cycle)
        report = self.evaluator.evaluate(ts.params, bank, rows, key=key, mode=self.cfg.eval.mode,
                                         report_rows=[ORIGINAL_ROW])
        entry = {"cycle": cycle, "final": cycle == self.cfg.schedule.cycles, "env_steps": self.state.env_steps,
                 **report.to_dict(), "success_per_seed": nan_to_none(report.success)}
        self.state.evals.append(entry)
        self.records.evaluation(self.state.env_steps, report)

    # ------------------------------------------------------------------------------------------- checkpoints
    def _checkpoint(self, ts, reason: str) -> Path:
        with self.callbacks.section("checkpoint"):
            self.state.wall_seconds += time.monotonic() - self._session_start
            self._session_start = time.monotonic()
            self.state.checkpoints += 1
            path = self._checkpoints.save(self.state.checkpoints, ts, metadata={
                "loop": dataclasses.asdict(self.state), "reason": reason})
            self._last_checkpoint = time.monotonic()
            return path


# -------------------------------------------------------------------------------------------------- helpers
def load_loop_state(checkpoint: Path) -> LoopState:
    """The LoopState saved in a checkpoint; fields added since it was written take their defaults."""
    return LoopState(**load_metadata(checkpoint)["loop"])


def latest_checkpoint(out: Path) -> Path | None:
    """The newest complete checkpoint of the run directory `out`, or None."""
    return newest_checkpoint(Path(out) / "checkpoints")


def _add_stats(total: dict | None, stats: RowStats) -> dict:
    """Running sum of host RowStats kept as JSON lists (LoopState is saved as JSON with every checkpoint)."""
    new = {k: np.asarray(v) for k, v in vars(stats).items() if v is not None}
    if total is not None:
        new = {k: np.asarray(total.get(k, 0)) + v for k, v in new.items()}  # .get: older checkpoints
    return {k: v.tolist() for k, v in new.items()}


def _yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False)


class _NoBar:
    def update(self, n): pass
    def set_description(self, s): pass
    def set_postfix_str(self, s): pass
    def close(self): pass


def _count_steps_not_time(bar, steps: int) -> None:
    """Add a chunk's steps but not its time to tqdm's rate: the first chunk of a session includes compilation
    (minutes on a CPU), which would make the ETA several times too long. Until a compiled chunk is timed the ETA
    reads '?'."""
    if getattr(bar, "disable", True):
        return
    bar.n += steps
    bar.initial = bar.last_print_n = bar.n  # tqdm's rate: (n - initial) / elapsed, or its EMA of later updates
    bar.last_print_t = bar._time()
    bar.refresh()


def _progress(total: int, done: int, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm
    return tqdm(total=total, initial=done, unit="step", unit_scale=True, dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {postfix}]")


def abstract_train_state(cfg: RunConfig):
    """The TrainState a run of `cfg` checkpoints, as shapes and dtypes only (jax.eval_shape: nothing is computed)."""
    game = games.get(cfg.env)
    env = game.make_env(cfg.observation, cfg.game_options)
    bank = env.make_params([game.config_cls.original()] * cfg.bank_rows)
    rows = np.zeros(cfg.ppo.num_envs, np.int32)  # which rows the slots run changes no shape
    return make_trainer(env, cfg.trainer_ppo, level_sampler=_level_sampler(cfg)).abstract_state(bank, rows)


def _level_sampler(cfg: RunConfig):
    """The method's level sampler (plr), or None."""
    method = methods.get(cfg.method)
    return method.level_sampler(cfg) if hasattr(method, "level_sampler") else None


def checkpoint_bytes(cfg: RunConfig) -> int:
    """Bytes of the arrays in one checkpoint of a run of `cfg` (orbax adds a little metadata)."""
    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(abstract_train_state(cfg)))


def check_no_run_there(out: Path) -> None:
    if (out / "checkpoints").exists() or (out / "report.json").exists():
        raise ConfigError([f"{out}: already holds a run; use --resume {out} to continue it, or another --out"],
                          what="output directory")
