"""The host side of a run (`LoopState`, saved as JSON with every checkpoint) and what each training chunk adds to it:
the learning curve, the first unlock of each achievement, the scored phase's statistics, and what the agent did
inside each LLM environment; each evaluation in the original game is an `Evaluation`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from envgen_jax.trainer.checkpoint import load_metadata
from envgen_jax.trainer.metrics import RowStats, nan_to_none, pool_rows


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """One evaluation of the agents in the original game, as a run keeps it (JSON values: None for NaN). Success
    rates are fractions per achievement, mean and std over seeds, and per seed [S][A]; the score is the game's own,
    written under its name (`score_key`: crafter_score_mean, ... for Crafter, score_mean, ... for other games)."""

    cycle: int
    final: bool                         # the final evaluation, after the scored phase (else after `cycle`)
    env_steps: int                      # per seed, when it was taken
    episodes_per_seed: list
    success_mean: dict                  # achievement -> rate
    success_std: dict
    return_mean: float | None
    return_std: float | None
    mean_length_mean: float | None
    score_mean: float | None
    score_std: float | None
    score_pooled: float | None          # of every seed's episodes pooled
    score_per_seed: list
    success_per_seed: list              # [S][A], in the env's achievement order
    mean_return_per_seed: list | None = None  # [S] mean episode return (None: written before it was kept)
    score_key: str = "crafter_score"

    @classmethod
    def of(cls, report, cycle: int, final: bool, env_steps: int) -> Evaluation:
        """From the evaluator's `trainer.evaluate.EvalReport`."""
        return cls.from_dict({"cycle": cycle, "final": final, "env_steps": env_steps, **report.to_dict(),
                              "success_per_seed": nan_to_none(report.success)})

    @classmethod
    def from_dict(cls, entry: dict) -> Evaluation:
        """From its JSON (`to_dict`), the score under whichever name it was written."""
        key = next((k.removesuffix("_pooled") for k in entry if k.endswith("_pooled")), "crafter_score")
        return cls(score_key=key, **{f: entry.get(_json_name(f, key)) for f in _RECORDED})

    def to_dict(self) -> dict:
        """Its JSON, as checkpoints, report.json and report.md hold it."""
        return {_json_name(f, self.score_key): getattr(self, f) for f in _RECORDED}


_RECORDED = tuple(f.name for f in dataclasses.fields(Evaluation) if f.name != "score_key")


def _json_name(field: str, score_key: str) -> str:
    return field.replace("score", score_key, 1) if field.startswith("score_") else field


@dataclasses.dataclass
class LoopState:
    """The host side of a run, saved as JSON with every checkpoint."""

    phase: int = 0                      # index into the plan of the phase to run next (or running)
    phase_updates: int = 0              # updates already done in that phase
    designs: list = dataclasses.field(default_factory=list)   # per cycle: configs (per designer) + purposes
    evals: list[Evaluation] = dataclasses.field(default_factory=list)  # per evaluation in the original game
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
    # Per seed and achievement: the env step (per seed, at the end of the chunk) by which some training episode, in
    # any environment, first unlocked it; None until then (empty for checkpoints written before it was kept).
    first_unlock: list = dataclasses.field(default_factory=list)
    method: dict = dataclasses.field(default_factory=dict)  # the method's own state (`Method.state_dict()`)

    def to_dict(self) -> dict:
        """Its JSON (a checkpoint's `loop`)."""
        out = dataclasses.asdict(dataclasses.replace(self, evals=[]))
        out["evals"] = [e.to_dict() for e in self.evals]
        return out

    @classmethod
    def from_dict(cls, loop: dict) -> LoopState:
        """From its JSON; fields added since it was written take their defaults."""
        loop = dict(loop)
        old = {k: loop.pop(k) for k in _METHOD_FIELDS if k in loop}
        if "method" not in loop:
            loop["method"] = old
        return cls(**{**loop, "evals": [Evaluation.from_dict(e) for e in loop.get("evals", [])]})


# Fields that older checkpoints kept for the methods themselves (level replay's buffer, learnability's selections);
# they now live in the method's state under the same names.
_METHOD_FIELDS = ("buffer", "buffer_draws", "row_weights", "selections")


def load_loop_state(checkpoint: Path) -> LoopState:
    """The LoopState saved in a checkpoint (`LoopState.from_dict`)."""
    return LoopState.from_dict(load_metadata(checkpoint)["loop"])


def add_stats(total: dict | None, stats: RowStats) -> dict:
    """Running sum of host RowStats kept as JSON lists (LoopState is saved as JSON with every checkpoint)."""
    new = {k: np.asarray(v) for k, v in vars(stats).items() if v is not None}
    if total is not None:
        new = {k: np.asarray(total.get(k, 0)) + v for k, v in new.items()}  # .get: older checkpoints
    return {k: v.tolist() for k, v in new.items()}


def chunk_record(state: LoopState, cfg, phase, metrics, seconds: float, steps: int) -> tuple:
    """A chunk's line of metrics.jsonl, and its per-seed returns, lengths and episodes (for TensorBoard); notes the
    chunk's first unlocks in `state`."""
    pooled = pool_rows(metrics.rows)  # [S]
    note_first_unlocks(state, cfg, np.asarray(pooled.achievement_counts))
    episodes = np.asarray(pooled.episodes)
    with np.errstate(invalid="ignore", divide="ignore"):
        returns = np.where(episodes > 0, pooled.return_sum / np.maximum(episodes, 1), np.nan)
        lengths = np.where(episodes > 0, pooled.length_sum / np.maximum(episodes, 1), np.nan)
    record = {
        "env_steps": state.env_steps, "cycle": phase.cycle, "phase": phase.where,
        "episodes_per_seed": episodes.tolist(), "return_per_seed": nan_to_none(returns),
        # restarts that reused the slot's previous world (no fresh spare ready): see envs/vector.py
        "stale_resets_per_seed": np.asarray(pooled.stale_resets).tolist(),
        "length_per_seed": nan_to_none(lengths),
        "steps_per_second": steps * cfg.num_agents / seconds, "seconds": seconds,
        "losses": {k: float(np.mean(v)) for k, v in vars(metrics.losses).items()},
    }
    return record, returns, lengths, episodes


def note_first_unlocks(state: LoopState, cfg, counts: np.ndarray) -> None:
    """counts [S, A]: the chunk's unlocks per seed; the first chunk with one sets that achievement's step."""
    if not state.first_unlock:
        if state.env_steps > cfg.steps_per_update * cfg.schedule.updates_per_chunk:
            return  # resumed from a checkpoint written before first_unlock was kept: unknown, not zero
        state.first_unlock = [[None] * counts.shape[1] for _ in range(counts.shape[0])]
    for s, a in zip(*np.nonzero(counts)):
        if state.first_unlock[s][a] is None:
            state.first_unlock[s][a] = state.env_steps


def accumulate_env_learning(state: LoopState, phase, rows: RowStats) -> None:
    """Sum the chunk's per-row stats ([S, K]) into this cycle's entry: one entry per LLM-environment phase."""
    entries = state.env_learning
    if not entries or entries[-1]["cycle"] != phase.cycle:
        entries.append({"cycle": phase.cycle, "phase": phase.where, "stats": None})
    entries[-1]["stats"] = add_stats(entries[-1]["stats"], rows)
