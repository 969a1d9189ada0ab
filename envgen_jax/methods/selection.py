"""What sfl and envgen_sfl share: training rows chosen by learnability (`trainer.learnability`), measured between
chunks with the current policy.

A selection plays `rollouts_per_level` episodes (the method's options, `LearnabilityOptions`) of each seed's policy
in every candidate (bank rows 1, 2, ...; one jitted evaluation), and the method turns the learnability p (1 - p)
into each seed's distribution over bank rows (`training_weights`), which the training phase's episodes draw their
rows from (a `RowSampler`). The method's state: the latest distribution (`row_weights`, [S, K] lists) and every
selection's measurements (`selections`: p, learnability, weights, per seed and row), which the report summarises.
"""

from __future__ import annotations

import dataclasses
import time
from typing import ClassVar

import jax
import numpy as np

from envgen_jax.envs.vector import RowSampler
from envgen_jax.methods.base import Method
from envgen_jax.methods.rows import ORIGINAL_ROW
from envgen_jax.schema import Declared, bounded
from envgen_jax.trainer import learnability
from envgen_jax.trainer.evaluate import make_evaluator


@dataclasses.dataclass(frozen=True)
class LearnabilityOptions(Declared):
    """How learnability is measured (sfl's and envgen_sfl's options share these)."""

    rollouts_per_level: int = bounded(2, minimum=1)
    """episodes of the current policy per configuration (one evaluation over the whole pool)"""
    rollout_steps: int = bounded(1024, minimum=1)
    """step budget of that evaluation; episodes still running then are not counted"""
    mastered_at: float = bounded(0.9, above=0, maximum=1)
    """an achievement the agent unlocks at this rate in the original game (last evaluation) is mastered, and left
    out of a configuration's success rate p"""

    # Run configurations written before methods declared their settings hold them under `ued:` (old key -> field).
    LEGACY: ClassVar[dict[str, str]] = {"rollouts_per_level": "rollouts_per_level", "rollout_steps": "rollout_steps",
                                        "mastered_at": "mastered_at"}


def selection_summary(sel: dict) -> dict:
    """One learnability selection (the method state's `selections`) in brief: per seed, learnability quartiles over the
    candidates measured, their mean p, the rows trained on and their weights, the original game's weight."""
    learn, p, measured, w = (np.asarray(sel[k], np.float64) for k in ("learnability", "p", "measured", "weights"))
    out = {"cycle": sel["cycle"], "env_steps": sel["env_steps"], "seconds": sel["seconds"],
           "measured_per_seed": measured[:, 1:].sum(1).astype(int).tolist(),
           "learnability_quartiles_per_seed": [], "mean_p_per_seed": [], "trained_rows_per_seed": [],
           "trained_weights_per_seed": [], "original_weight_per_seed": w[:, 0].tolist()}
    for s in range(learn.shape[0]):
        got = measured[s, 1:].astype(bool)
        out["learnability_quartiles_per_seed"].append(
            np.quantile(learn[s, 1:][got], [0, .25, .5, .75, 1]).tolist() if got.any() else None)
        out["mean_p_per_seed"].append(float(p[s, 1:][got].mean()) if got.any() else None)
        rows = [int(r) for r in np.flatnonzero(w[s]) if r != 0]
        out["trained_rows_per_seed"].append(rows)
        out["trained_weights_per_seed"].append([float(w[s, r]) for r in rows])
    return out


class LearnabilitySelection(Method):
    """Subclasses set WHERE (the training phases whose rows learnability chooses) and define `candidates()` and
    `training_weights(cfg, learn)`; `reselect_now(phase)` asks for selections inside a phase too."""

    @classmethod
    def sampled_rows(cls, cfg, where):
        return cfg.bank_rows - 1 if where == cls.WHERE else None  # every row but the original game's

    @staticmethod
    def training_weights(cfg, learn: np.ndarray) -> np.ndarray:
        """f32[S, K]: each seed's distribution over bank rows, from the learnability of every row ([S, K])."""
        raise NotImplementedError

    def __init__(self, run, trainer):
        super().__init__(run, trainer)
        u = self.options(run.cfg)
        self.learn_evaluator = make_evaluator(trainer, (run.cfg.bank_rows - 1) * u.rollouts_per_level, 1,
                                              u.rollout_steps)
        self.row_weights: list = []  # the latest selection's training distribution, [S, K]
        self.selections: list = []   # every selection's measurements
        self._selected = None        # the selection made since the last recorded chunk, for metrics.jsonl

    def state_dict(self) -> dict:
        return {"row_weights": self.row_weights, "selections": self.selections}

    def load_state(self, state: dict) -> None:
        self.row_weights, self.selections = state.get("row_weights", []), state.get("selections", [])

    def candidates(self) -> list:
        """The configurations learnability chooses from (bank rows 1, 2, ...)."""
        raise NotImplementedError

    def new_candidates(self) -> None:
        """Before each selection: draw new candidates, if the method does."""

    @classmethod
    def report_entries(cls, state):
        selections = state.get("selections")  # each selection in brief
        return {"learnability_selections": [selection_summary(sel) for sel in selections]} if selections else {}

    def reselect_now(self, phase) -> bool:
        """Whether to select again before the next chunk of a phase already under way."""
        return False

    def learning_bank(self, candidates: list | None = None):
        candidates = self.candidates() if candidates is None else candidates
        return self.run.make_params([self.run.config_cls.original(), *candidates], capacity=self.run.cfg.bank_rows)

    def weights(self) -> np.ndarray:
        """The latest selection's training distribution [S, K]; before any, the original game."""
        if self.row_weights:
            return np.asarray(self.row_weights, np.float32)
        w = np.zeros((self.run.cfg.num_agents, self.run.cfg.bank_rows), np.float32)
        w[:, ORIGINAL_ROW] = 1.0
        return w

    # -- the loop's hooks --
    def bank_and_rows(self, where):
        if where != self.WHERE:  # the original game's phases: rows drawn too (one program for every phase)
            bank, rows = super().bank_and_rows(where)
            sampled = RowSampler.one_row(rows, bank.num_rows, self.run.cfg.num_agents)
            return bank, rows if sampled is None else sampled
        return self.learning_bank(), RowSampler(jax.device_put(np.asarray(self.weights(), np.float32)))

    def before_phase(self, ts, phase):
        if phase.where == self.WHERE:
            self.select(ts, phase)

    def before_chunk(self, ts, phase, bank, rows):
        if phase.where == self.WHERE and self.reselect_now(phase):
            self.select(ts, phase)
            bank, rows = self.bank_and_rows(phase.where)
            ts = self.trainer.reset_envs(ts, bank, rows)
        return ts, bank, rows

    def chunk_record(self, ts, phase):
        if self._selected is None:
            return {}
        record = {"selection": {k: v for k, v in selection_summary(self._selected).items()
                                if k not in ("cycle", "env_steps")}}
        self._selected = None
        return record

    def select(self, ts, phase) -> None:
        """Measure every candidate's learnability with the current policy and set the rows to train on."""
        run, cfg, state = self.run, self.run.cfg, self.run.state
        run.status("measuring the candidates' learnability")
        start = time.monotonic()
        self.new_candidates()
        candidates = self.candidates()
        bank = self.learning_bank(candidates)
        last_eval = state.evals[-1].success_per_seed if state.evals else None
        u = self.options(cfg)
        mastered = (learnability.mastered_from(np.asarray(last_eval, np.float64), u.mastered_at)
                    if last_eval is not None else np.zeros((cfg.num_agents, len(run.env.achievement_names)), bool))
        m = learnability.measure(self.learn_evaluator, ts.params, bank, np.arange(1, cfg.bank_rows),
                                 u.rollouts_per_level, cfg.seed, mastered,
                                 fold_in=5000 + len(self.selections))
        p, measured, learn = m["p"], m["measured"], m["learnability"]
        weights = self.training_weights(cfg, learn)
        self.row_weights = weights.tolist()
        self.selections.append({
            "cycle": phase.cycle, "env_steps": state.env_steps, "seconds": time.monotonic() - start,
            "mastered_per_seed": mastered.sum(-1).tolist(), "episodes": m["episodes"].tolist(),
            "p": p.tolist(), "measured": measured.tolist(), "learnability": learn.tolist(),
            "weights": weights.tolist()})
        self._selected = self.selections[-1]
        if cfg.output.pictures and state.phase_updates == 0:  # seed 0's top candidates, at the phase's start
            top = [int(r) for r in np.argsort(-learn[0, 1:], kind="stable")[:4] + 1]
            run.picture_levels(phase.cycle, top, [candidates[r - 1] for r in top],
                               {"learnability": [learn[0, r] for r in top], "p": [p[0, r] for r in top]})
