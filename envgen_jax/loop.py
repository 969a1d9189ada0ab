"""The EnvGen host loop: compiled training chunks, with the LLM step between them.

A run is a flat plan of phases, executed in order and checkpointed between them:

    for cycle in 1..N_cycle:   design (LLM step)  ->  train in LLM envs  ->  train in the original env  ->  evaluate
    final:                     train in the original env (scored)          ->  evaluate

Baselines are the same plan, one setting apart (`method`): `ppo` trains only in the original environment for the
same number of steps; `fixed` keeps the first cycle's LLM environments; `random` draws uniformly random valid
configurations (no LLM); `easy_to_hard` asks the LLM for a curriculum from easy to the original difficulty with no
feedback; `adversarial` gives the LLM the feedback but asks for environments that are hard for the agent's current
skills. With `schedule.mixing: mixed`, a cycle's two training phases run as one phase on a mixture of env slots.

Everything the host needs to continue is in `LoopState` (JSON) next to the TrainState (orbax) in each checkpoint;
a killed run resumes from its newest checkpoint and, on CPU, ends with the same report as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np

from envgen_jax.run_config import RunConfig
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.checkpoint import load_metadata, restore_checkpoint, save_checkpoint
from envgen_jax.trainer.evaluate import make_evaluator
from envgen_jax.trainer.metrics import RowStats, pool_rows, to_host
from envgen_jax.trainer.ppo import make_trainer

ORIGINAL_ROW = 0


@dataclasses.dataclass(frozen=True)
class Phase:
    kind: str    # design | train | evaluate
    cycle: int   # 0-based; cycle == cycles means the final phase
    where: str = ""   # train: llm | original | mixed | final
    updates: int = 0  # train: PPO updates


def build_plan(cfg: RunConfig) -> list[Phase]:
    s = cfg.schedule
    plan: list[Phase] = []
    for c in range(s.cycles):
        if cfg.method == "ppo":
            plan.append(Phase("train", c, "original", cfg.updates_for(s.llm_env_steps + s.original_env_steps)))
        elif s.mixing == "mixed":
            plan += [Phase("design", c), Phase("train", c, "mixed", cfg.updates_for(s.llm_env_steps + s.original_env_steps))]
        else:
            plan += [Phase("design", c), Phase("train", c, "llm", cfg.updates_for(s.llm_env_steps)),
                     Phase("train", c, "original", cfg.updates_for(s.original_env_steps))]
        plan.append(Phase("evaluate", c))
    plan += [Phase("train", s.cycles, "final", cfg.updates_for(s.final_steps)), Phase("evaluate", s.cycles)]
    return [p for p in plan if p.kind != "train" or p.updates > 0]


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


class EnvGenRun:
    """One run directory: `EnvGenRun(cfg, out_dir).run()`, or `EnvGenRun.resume(out_dir).run()`."""

    def __init__(self, cfg: RunConfig, out_dir: str | Path, state: LoopState | None = None,
                 log: Callable[[str], None] = print, llm_client: Any = None):
        from envgen_jax.envs import registry

        self.cfg, self.out = cfg, Path(out_dir)
        self.log = log
        self.state = state or LoopState()
        self.plan = build_plan(cfg)
        self.env = registry.make_env(cfg.env, cfg.observation, cfg.heist_mode)
        self.config_cls = registry.config_class(cfg.env)
        self.trainer = make_trainer(self.env, cfg.trainer_ppo)
        self.evaluator = make_evaluator(self.trainer, cfg.eval.num_envs, cfg.eval.episodes_per_env,
                                        cfg.eval.max_steps)
        self.num_designers = cfg.seeds if cfg.schedule.feedback == "per_seed" else 1
        self.capacity = 1 + cfg.schedule.envs_per_call * self.num_designers
        self._llm_client = llm_client  # tests inject a scripted client here
        self._designers: list | None = None
        self._last_checkpoint = time.monotonic()
        self._session_start = time.monotonic()
        self._writer = None

    # ---------------------------------------------------------------------------------------------------- setup
    @classmethod
    def resume(cls, out_dir: str | Path, log: Callable[[str], None] = print, llm_client: Any = None) -> "EnvGenRun":
        from envgen_jax.run_config import load_run_config
        out = Path(out_dir)
        checkpoint = latest_checkpoint(out)
        cfg = load_run_config(out / "config.yaml")
        if checkpoint is None:
            log(f"no checkpoint in {out}: starting the run from the beginning")
            return cls(cfg, out, log=log, llm_client=llm_client)
        state = LoopState(**load_metadata(checkpoint)["loop"])
        run = cls(cfg, out, state=state, log=log, llm_client=llm_client)
        run._resume_from = checkpoint
        log(f"resuming {out} from {checkpoint.name} (phase {state.phase + 1}/{len(run.plan)}, "
            f"{state.env_steps:,} env steps per seed)")
        return run

    def _initial_train_state(self):
        bank, rows = self._bank_and_rows(self._where_of_phase())
        if getattr(self, "_resume_from", None) is not None:
            like = self.trainer.abstract_state(bank, rows)
            return restore_checkpoint(self._resume_from, like)
        return self.trainer.init(bank, rows)

    def _where_of_phase(self) -> str:
        for phase in self.plan[self.state.phase:]:
            if phase.kind == "train":
                return phase.where
        return "original"

    # ----------------------------------------------------------------------------------------------- the run
    def run(self) -> dict:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.yaml").write_text(_yaml(self.cfg.to_dict()))
        # Drop chunks recorded after the checkpoint we start from (all of them when a killed run had none yet).
        _truncate_lines(self.out / "metrics.jsonl", self.state.metrics_lines)
        total_updates = sum(p.updates for p in self.plan if p.kind == "train")
        steps_per_update = self.cfg.steps_per_update
        self.log(f"envgen-jax: {self.cfg.method} on {self.cfg.env}, {self.cfg.seeds} seed(s), "
                 f"{total_updates * steps_per_update:,} env steps per seed, output in {self.out}")
        ts = self._initial_train_state()
        if jax.device_count() > 1:  # every local device (or every host's, after jax.distributed.initialize())
            from envgen_jax.trainer.sharding import layout, shard_train_state
            ts = shard_train_state(ts, self.cfg.ppo.num_envs)
            self.log(f"spread over {jax.device_count()} devices by "
                     f"{layout(self.cfg.seeds, self.cfg.ppo.num_envs, jax.device_count())}")
        bar = _progress(total_updates * steps_per_update, self.state.env_steps, self.cfg.output.progress)
        try:
            while self.state.phase < len(self.plan):
                phase = self.plan[self.state.phase]
                bar.set_description(_phase_label(phase, self.cfg.schedule.cycles))
                if phase.kind == "design":
                    # No checkpoint before the LLM step: the cycle-boundary one just before it holds the same state.
                    self._design(phase.cycle, bar)
                    self._advance()
                    self._checkpoint(ts, reason="after the LLM step")
                elif phase.kind == "train":
                    ts = self._train(ts, phase, bar)
                    self._advance()
                else:
                    self._evaluate(ts, phase.cycle, bar)
                    self._advance()
                    self._checkpoint(ts, reason="cycle boundary")
        finally:
            bar.close()
            self._close_designers()
            if self._writer is not None:
                self._writer.close()
        from envgen_jax.report import write_report
        report = write_report(self)
        if report["score"] is not None:
            self.log(f"done: score {report['score']:.2f} +/- {report['score_std']:.2f} %, reward "
                     f"{report['reward']:.2f} +/- {report['reward_std']:.2f}; report: {self.out / 'report.md'}")
        return report

    def _advance(self):
        self.state.phase += 1
        self.state.phase_updates = 0

    # ------------------------------------------------------------------------------------------------- design
    def _design(self, cycle: int, bar) -> None:
        from envgen_jax.llm import curricula
        method, n = self.cfg.method, self.cfg.schedule.envs_per_call
        if method == "fixed" and cycle > 0:
            self.state.designs.append(dict(self.state.designs[0], cycle=cycle, reused=True))
            return
        per_designer = []
        if method == "random":
            rng = np.random.default_rng([self.cfg.seed, cycle, 7])
            for _ in range(self.num_designers):
                configs = [random_config(self.config_cls, rng) for _ in range(n)]
                per_designer.append({"configs": [c.to_dict() for c in configs],
                                     "purposes": ["uniformly random valid configuration"] * n})
        else:
            feedback = self._feedback(cycle)
            for i, designer in enumerate(self._get_designers()):
                bar.set_postfix_str(f"LLM step: asking for {n} environments ({method}, cycle {cycle + 1})")
                start = time.monotonic()
                design = curricula.request(designer, method, cycle, self.cfg.schedule.cycles, n,
                                           feedback[i] if feedback else None)
                seconds = time.monotonic() - start
                self.state.llm_calls += 1
                self.state.llm_seconds += seconds
                self.log(f"LLM step {self.state.llm_calls}: {n} environments in {seconds:.1f}s")
                per_designer.append({"configs": [c.to_dict() for c in design.configs],
                                     "purposes": list(design.purposes)})
                self.state.designers = [d.state_dict() for d in self._designers]
        record = {"cycle": cycle, "designers": per_designer}
        self.state.designs.append(record)
        self._write_design(record)

    def _feedback(self, cycle: int) -> list | None:
        """Success rates (percent, mean and std over seeds) from the previous cycle's evaluation."""
        if cycle == 0 or not self.state.evals:
            return None
        last = self.state.evals[-1]
        names = self.env.achievement_names
        if self.num_designers == 1:
            return [{a: (100 * _nz(last["success_mean"][a]), 100 * _nz(last["success_std"][a])) for a in names}]
        return [{a: (100 * _nz(per_seed[j]), 0.0) for j, a in enumerate(names)}
                for per_seed in last["success_per_seed"]]

    def _get_designers(self) -> list:
        if self._designers is None:
            from envgen_jax.llm.designer import Designer
            transcript = self.out / "llm_transcript.jsonl"
            spec = self.cfg.env
            if self.cfg.env == "heist":  # mazes that do not fit this world size go back to the LLM for repair
                from envgen_jax.llm.spec import heist_spec
                spec = heist_spec(self.env.world_dim)
            if self.state.designers:
                self._designers = [Designer.from_state(s, self.cfg.llm, transcript, env=spec, client=self._llm_client)
                                   for s in self.state.designers]
            else:
                self._designers = [Designer(spec, self.cfg.llm, transcript, client=self._llm_client)
                                   for _ in range(self.num_designers)]
        return self._designers

    def _close_designers(self):
        for d in self._designers or []:
            d.close()

    def _write_design(self, record: dict) -> None:
        cycle = record["cycle"]
        folder = self.out / "environments"
        folder.mkdir(exist_ok=True)
        (folder / f"cycle_{cycle + 1}.json").write_text(json.dumps(
            {"environments": [{"purpose": p, "config": c} for d in record["designers"]
                              for p, c in zip(d["purposes"], d["configs"])]}, indent=2))
        if self.cfg.output.pictures:
            configs = self._llm_configs(record)[: self.cfg.schedule.envs_per_call]
            path = folder / f"cycle_{cycle + 1}.png"
            if self.cfg.env == "crafter":
                from envgen_jax.envs.crafter.render import save_world_pictures
                save_world_pictures(configs, path, seed=self.cfg.seed)
            else:
                from envgen_jax.envs.heist import render_levels
                render_levels(configs, path, seed=self.cfg.seed, mode=self.cfg.heist_mode)

    # --------------------------------------------------------------------------------------------- training
    def _llm_configs(self, record: dict | None = None) -> list:
        """The current LLM configurations, all designers in order, with the LLM episode length applied."""
        record = record or (self.state.designs[-1] if self.state.designs else None)
        if record is None:
            return []
        default_length = getattr(self.config_cls.original(), "episode_length", None)  # Crafter only
        out = []
        for d in record["designers"]:
            for c in d["configs"]:
                cfg = self.config_cls.from_dict(c)
                if default_length is not None and cfg.episode_length == default_length:
                    cfg = dataclasses.replace(cfg, episode_length=self.cfg.schedule.llm_episode_length)
                out.append(cfg)
        return out

    def _bank_and_rows(self, where: str):
        """Bank: row 0 the original game, then the LLM configurations (padded to a fixed capacity)."""
        llm = self._llm_configs() if where in ("llm", "mixed") else []
        padding = [self.config_cls.original()] * (self.capacity - 1 - len(llm))  # fixed shapes: no recompiles
        bank = self.env.make_params([self.config_cls.original(), *llm, *padding])
        n, s = self.cfg.ppo.num_envs, self.cfg.seeds
        if where not in ("llm", "mixed") or not llm:
            return bank, np.zeros(n, np.int32)
        per = self.cfg.schedule.envs_per_call
        first_llm = round(n * self.cfg.schedule.original_share) if where == "mixed" else 0
        slot = np.arange(n)
        llm_rows = 1 + (slot - first_llm) % per
        if self.num_designers == 1:
            return bank, np.where(slot < first_llm, ORIGINAL_ROW, llm_rows).astype(np.int32)
        rows = [np.where(slot < first_llm, ORIGINAL_ROW, llm_rows + i * per) for i in range(s)]
        return bank, np.stack(rows).astype(np.int32)

    def _train(self, ts, phase: Phase, bar):
        bank, rows = self._bank_and_rows(phase.where)
        if self.state.phase_updates == 0:
            ts = self.trainer.reset_envs(ts, bank, rows)  # a new phase starts fresh episodes, from its rows
        chunk = self.cfg.schedule.updates_per_chunk
        scored = phase.where == "final"
        while self.state.phase_updates < phase.updates:
            start = time.monotonic()
            ts, metrics = self.trainer.train_chunk(ts, bank, rows, num_updates=chunk)
            metrics = to_host(metrics)
            seconds = time.monotonic() - start
            self.state.phase_updates += chunk
            steps = chunk * self.cfg.steps_per_update
            self.state.env_steps += steps
            self._record_chunk(phase, metrics, seconds, steps)
            if scored:
                original = jax.tree.map(lambda x: np.asarray(x)[:, ORIGINAL_ROW], metrics.rows)  # [S], [S, A]
                self.state.scored = _add_stats(self.state.scored, original)
            elif phase.where in ("llm", "mixed"):
                self._accumulate_env_learning(phase, metrics.rows)
            bar.update(steps)
            bar.set_postfix_str(f"{steps * self.cfg.seeds / seconds:,.0f} steps/s")
            if time.monotonic() - self._last_checkpoint > 60 * self.cfg.output.checkpoint_minutes:
                self._checkpoint(ts, reason="timer")
        return ts

    def _record_chunk(self, phase: Phase, metrics, seconds: float, steps: int) -> None:
        pooled = pool_rows(metrics.rows)  # [S]
        episodes = np.asarray(pooled.episodes)
        with np.errstate(invalid="ignore", divide="ignore"):
            returns = np.where(episodes > 0, pooled.return_sum / np.maximum(episodes, 1), np.nan)
            lengths = np.where(episodes > 0, pooled.length_sum / np.maximum(episodes, 1), np.nan)
        record = {
            "env_steps": self.state.env_steps, "cycle": phase.cycle, "phase": phase.where,
            "episodes_per_seed": episodes.tolist(), "return_per_seed": _nan_to_none(returns),
            # restarts that reused the slot's previous world (no fresh spare ready): see envs/vector.py
            "stale_resets_per_seed": np.asarray(pooled.stale_resets).tolist(),
            "length_per_seed": _nan_to_none(lengths),
            "steps_per_second": steps * self.cfg.seeds / seconds, "seconds": seconds,
            "losses": {k: float(np.mean(v)) for k, v in vars(metrics.losses).items()},
        }
        self.state.curve.append({k: record[k] for k in ("env_steps", "cycle", "phase", "episodes_per_seed",
                                                        "return_per_seed")})
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        self.state.metrics_lines += 1
        writer = self._tensorboard()
        if writer is not None:
            step = self.state.env_steps
            if np.any(episodes > 0):
                writer.add_scalar("train/episode_return", float(np.nanmean(returns)), step)
                writer.add_scalar("train/episode_length", float(np.nanmean(lengths)), step)
            writer.add_scalar("train/steps_per_second", record["steps_per_second"], step)
            for k, v in record["losses"].items():
                writer.add_scalar(f"loss/{k}", v, step)

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
                 **report.to_dict(), "success_per_seed": _nan_to_none(report.success)}
        self.state.evals.append(entry)
        writer = self._tensorboard()
        if writer is not None:
            for name, value in report.success_mean.items():
                if not np.isnan(value):
                    writer.add_scalar(f"eval_success/{name}", 100 * value, self.state.env_steps)
            if not np.isnan(report.crafter_score_mean):
                writer.add_scalar("eval/crafter_score", report.crafter_score_mean, self.state.env_steps)

    def _tensorboard(self):
        if not self.cfg.output.tensorboard:
            return None
        if self._writer is None:
            from tensorboardX import SummaryWriter
            self._writer = SummaryWriter(str(self.out / "tb"))
        return self._writer

    # ------------------------------------------------------------------------------------------- checkpoints
    def _checkpoint(self, ts, reason: str) -> Path:
        self.state.wall_seconds += time.monotonic() - self._session_start
        self._session_start = time.monotonic()
        folder = self.out / "checkpoints"
        name = f"ckpt_{self.state.phase:03d}_{self.state.phase_updates:06d}"
        path = save_checkpoint(folder / name, ts, metadata={"loop": dataclasses.asdict(self.state),
                                                             "reason": reason}, overwrite=True)
        (folder / "latest").write_text(name)  # written last: a checkpoint counts once it is complete
        older = sorted(p for p in folder.glob("ckpt_*") if p.name != name)
        for old in older[: max(len(older) - (self.cfg.output.keep_checkpoints - 1), 0)]:
            shutil.rmtree(old, ignore_errors=True)
        self._last_checkpoint = time.monotonic()
        return path


# -------------------------------------------------------------------------------------------------- helpers
def random_config(config_cls, rng: np.random.Generator):
    """A uniformly random valid configuration: every setting drawn uniformly from its allowed values."""
    values = {}
    for s in config_cls.schema():
        if s.kind is str:
            values[s.name] = s.choices[rng.integers(len(s.choices))]
        elif s.kind is bool:
            values[s.name] = bool(rng.integers(2))
        else:
            options = s.suggested or tuple(range(s.minimum, s.maximum + 1))
            values[s.name] = int(options[rng.integers(len(options))])
    return config_cls(**values)


def latest_checkpoint(out: Path) -> Path | None:
    marker = out / "checkpoints" / "latest"
    if not marker.exists():
        return None
    path = out / "checkpoints" / marker.read_text().strip()
    return path if (path / "metadata.json").exists() else None


def _truncate_lines(path: Path, keep: int) -> None:
    if path.exists():
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:keep]))


def _add_stats(total: dict | None, stats: RowStats) -> dict:
    """Running sum of host RowStats kept as JSON lists (LoopState is saved as JSON with every checkpoint)."""
    new = {k: np.asarray(v) for k, v in vars(stats).items() if v is not None}
    if total is not None:
        new = {k: np.asarray(total.get(k, 0)) + v for k, v in new.items()}  # .get: older checkpoints
    return {k: v.tolist() for k, v in new.items()}


def _nz(x) -> float:
    return 0.0 if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def _nan_to_none(a) -> list:
    a = np.asarray(a, np.float64)
    return np.where(np.isnan(a), None, a).tolist() if a.size else []


def _yaml(data: dict) -> str:
    import yaml
    return yaml.safe_dump(data, sort_keys=False)


def _phase_label(phase: Phase, cycles: int) -> str:
    cycle = "final" if phase.cycle >= cycles else f"cycle {phase.cycle + 1}/{cycles}"
    what = {"design": "LLM step", "evaluate": "evaluate"}.get(phase.kind, f"train: {phase.where}")
    return f"{cycle} {what}"


class _NoBar:
    def update(self, n): pass
    def set_description(self, s): pass
    def set_postfix_str(self, s): pass
    def close(self): pass


def _progress(total: int, done: int, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm
    return tqdm(total=total, initial=done, unit="step", unit_scale=True, dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {postfix}]")


def check_no_run_there(out: Path) -> None:
    if (out / "checkpoints").exists() or (out / "report.json").exists():
        raise ConfigError([f"{out}: already holds a run; use --resume {out} to continue it, or another --out"],
                          what="output directory")
