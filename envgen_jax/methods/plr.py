"""Robust PLR (Jiang et al. 2021) over a buffer of random configurations, inside the compiled loop.

The bank is the buffer: `capacity` rows (its options, `method_options.plr`: `PLROptions`), each a configuration
drawn uniformly from the schema's space (`methods.random.random_config`). Inside every compiled chunk each episode's
row is drawn from the level sampler (`trainer.level_sampler`: unseen rows are new levels; seen ones are replayed by
rank and staleness), the PPO update scores the rows it ran, and robust PLR takes gradients only from replayed rows.
Between chunks (host) the buffer is refreshed: once no new level is left, its lowest-scoring `refresh_share` is
replaced by new random configurations (same shapes: nothing recompiles). The buffer's configurations are shared by
the seeds (one bank); each seed has its own scores and samples on its own; eviction ranks rows by their mean score
over seeds.

A level here is a configuration from which every reset draws a fresh world; in jaxued it is one world (an EnvState).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import numpy as np

from envgen_jax.methods.base import Method, Phase
from envgen_jax.methods.random import random_configs
from envgen_jax.methods.rows import ORIGINAL_ROW
from envgen_jax.schema import Declared, bounded
from envgen_jax.trainer import level_sampler as ls
from envgen_jax.trainer.layouts import Replay
from envgen_jax.trainer.metrics import to_host


@dataclasses.dataclass(frozen=True)
class PLROptions(ls.LevelSampler, Declared):
    """plr's settings: the trainer's `LevelSampler` fields (capacity, replay_prob, temperature, staleness_coef,
    min_fill, score, robust; `trainer/level_sampler.py`), with jaxued's PLR examples' defaults
    (examples/craftax/craftax_plr.py: replay probability 0.8; temperature 0.3, staleness 0.3, rank prioritisation,
    minimum fill 0.5 in all its examples, as in minimax); jaxued's Craftax buffer holds 4000 levels, ours 256 rows
    (a row is a configuration, not a world)."""

    refresh_share: float = bounded(0.25, minimum=0, maximum=1)
    """when no new level is left, this share of the buffer (its lowest-scoring levels) is replaced by new random
    configurations at the next chunk boundary (ours: jaxued instead replaces the lowest one by each better new one)"""

    PATH, WHAT = "method_options.plr.", "plr options"
    LEGACY: ClassVar[dict[str, str]] = {f.name: f.name for f in [*dataclasses.fields(ls.LevelSampler)]} | {
        "refresh_share": "refresh_share"}


def rows_to_refresh(cfg, sampler) -> np.ndarray:
    """Host side, sampler leaves [S, K]: the rows to replace now (none while some seed still has new levels)."""
    seen = np.asarray(sampler.seen)
    if not seen.all():
        return np.zeros(0, np.int32)
    k = max(1, int(round(PLR.options(cfg).refresh_share * seen.shape[1])))
    mean_score = np.asarray(sampler.score).mean(axis=0)
    return np.argsort(mean_score, kind="stable")[:k].astype(np.int32)


# One program each, not one per operation (run eagerly, these two made 60 small programs in a tiny CPU run).
_level_probs_per_seed = jax.jit(jax.vmap(ls.level_probs, in_axes=(None, 0)), static_argnums=0)
_replace_rows = jax.jit(ls.replace_rows)


def buffer_metrics(hp: ls.LevelSampler, sampler) -> dict:
    """Per seed: seen rows, score quartiles over seen rows, mean staleness, and the replay share of the next
    episodes (the probability mass on seen rows)."""
    probs = np.asarray(_level_probs_per_seed(hp, sampler))
    seen, score = np.asarray(sampler.seen), np.asarray(sampler.score)
    staleness = np.asarray(sampler.time)[:, None] - np.asarray(sampler.last_run)
    out = {"seen_per_seed": seen.sum(1).tolist(), "replay_share_per_seed": (probs * seen).sum(1).tolist(),
           "mean_staleness_per_seed": [], "score_quartiles_per_seed": [], "top_rows_per_seed": []}
    for s in range(seen.shape[0]):
        mask = seen[s]
        out["mean_staleness_per_seed"].append(float(staleness[s][mask].mean()) if mask.any() else None)
        out["score_quartiles_per_seed"].append(np.quantile(score[s][mask], [0, .25, .5, .75, 1]).tolist()
                                               if mask.any() else None)
        out["top_rows_per_seed"].append(np.argsort(-np.where(mask, score[s], -np.inf), kind="stable")[:4].tolist())
    return out


class PLR(Method):
    NAME = "plr"
    USES_LLM = False
    WHERE = "plr"  # the training phases' `where`: rows drawn by the level sampler
    OPTIONS = PLROptions

    @staticmethod
    def cycle_phases(cfg, c):
        return [Phase("train", c, PLR.WHERE, cfg.cycle_updates())]  # the same env steps per cycle as the others

    @staticmethod
    def bank_rows(cfg) -> int:
        return PLR.options(cfg).capacity

    @staticmethod
    def bank_use(cfg) -> str:
        return "the level buffer (random configurations; the final phase: the original game)"

    @staticmethod
    def level_sampler(cfg) -> ls.LevelSampler:
        """The trainer's static PLR settings: the options a LevelSampler has (PLROptions is one, with more fields)."""
        options = PLR.options(cfg)
        return ls.LevelSampler(**{f.name: getattr(options, f.name) for f in dataclasses.fields(ls.LevelSampler)})

    @classmethod
    def sampled_rows(cls, cfg, where):
        return cfg.bank_rows if where == cls.WHERE else None  # the buffer is the whole bank

    # -- one run: the buffer's configurations (dicts, shared by the seeds) and the count of its random draws --
    def __init__(self, run, trainer):
        super().__init__(run, trainer)
        self.buffer: list = []   # the bank rows' configurations
        self.buffer_draws = 0    # refills so far (seeds their random draws)

    def state_dict(self) -> dict:
        return {"buffer": self.buffer, "buffer_draws": self.buffer_draws}

    def load_state(self, state: dict) -> None:
        self.buffer, self.buffer_draws = state.get("buffer", []), state.get("buffer_draws", 0)

    def bank_and_rows(self, where):
        """The buffer's configurations, with rows the level sampler draws; in the original game's phases, the
        curriculum held on that one row (`layouts.Replay`: every phase in one program)."""
        if where != self.WHERE:
            bank, _ = super().bank_and_rows(where)  # the original game's bank: every slot on its row
            return bank, Replay.held(np.eye(bank.num_rows, dtype=np.float32)[ORIGINAL_ROW])
        if not self.buffer:
            self.buffer = random_configs(self.run.cfg, self.run.config_cls, self.run.cfg.bank_rows, 0)
            self.buffer_draws = 1
        return self.run.make_params([self.run.config_cls.from_dict(c) for c in self.buffer]), self._running()

    def _running(self) -> Replay:
        return Replay.running(self.run.cfg.bank_rows)

    def chunk_record(self, ts, phase):
        if phase.where != self.WHERE:
            return {}
        return {"buffer": buffer_metrics(self.trainer.level_sampler, to_host(ts.sampler))}

    def after_chunk(self, ts, phase, bank):
        """Replace the rows `rows_to_refresh` picks (the lowest-scoring, once no new level is left) by new random
        configurations; their statistics are forgotten and every slot starts a fresh episode."""
        if phase.where != self.WHERE:
            return ts, bank
        replace = rows_to_refresh(self.run.cfg, to_host(ts.sampler))
        if replace.size == 0:
            return ts, bank
        new = random_configs(self.run.cfg, self.run.config_cls, replace.size, self.buffer_draws)
        self.buffer_draws += 1
        for row, config in zip(replace.tolist(), new):
            self.buffer[row] = config
        bank = self.run.make_params([self.run.config_cls.from_dict(c) for c in self.buffer])
        ts = ts.replace(sampler=_replace_rows(ts.sampler, replace))
        return self.trainer.reset_envs(ts, bank, self._running()), bank

    def after_phase(self, ts, phase):
        """The four highest-scored configurations of seed 0's buffer, through the game's renderer."""
        if phase.where != self.WHERE or not self.run.cfg.output.pictures:
            return
        top = buffer_metrics(self.trainer.level_sampler, to_host(ts.sampler))["top_rows_per_seed"][0]
        self.run.picture_levels(phase.cycle, top, [self.run.config_cls.from_dict(self.buffer[r]) for r in top])
