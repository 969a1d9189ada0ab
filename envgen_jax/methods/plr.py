"""Robust PLR (Jiang et al. 2021) over a buffer of random configurations, inside the compiled loop.

The bank is the buffer: `ued.capacity` rows, each a configuration drawn uniformly from the schema's space
(`methods.random.random_config`). Inside every compiled chunk each episode's row is drawn from the level sampler
(`trainer.level_sampler`: unseen rows are new levels; seen ones are replayed by rank and staleness), the PPO update
scores the rows it ran, and robust PLR takes gradients only from replayed rows. Between chunks (host) the buffer is
refreshed: once no new level is left, its lowest-scoring `ued.refresh_share` is replaced by new random
configurations (same shapes: nothing recompiles). The buffer's configurations are shared by the seeds (one bank);
each seed has its own scores and samples on its own; eviction ranks rows by their mean score over seeds.

A level here is a configuration from which every reset draws a fresh world; in jaxued it is one world (an EnvState).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from envgen_jax.methods.random import random_config
from envgen_jax.plan import Phase
from envgen_jax.trainer import level_sampler as ls

NAME = "plr"
USES_LLM = False
WHERE = "plr"  # the training phases' `where`: rows drawn by the level sampler


def cycle_phases(cfg, c):
    return [Phase("train", c, WHERE, cfg.cycle_updates())]  # the same env steps per cycle as the other methods


def design(ctx):
    raise AssertionError("plr has no design step")


def bank_rows(cfg) -> int:
    return cfg.ued.capacity


def level_sampler(cfg) -> ls.LevelSampler:
    """The trainer's static PLR settings: the `ued:` fields a LevelSampler has (cfg.ued is one, with more fields)."""
    return ls.LevelSampler(**{f.name: getattr(cfg.ued, f.name) for f in dataclasses.fields(ls.LevelSampler)})


def new_configs(cfg, config_cls, n: int, draw: int) -> list[dict]:
    """`n` random configurations; `draw` (a counter kept in the loop state) makes every refill different and
    a resumed run draw the same ones."""
    rng = np.random.default_rng([cfg.seed, draw, 11])
    return [random_config(config_cls, rng).to_dict() for _ in range(n)]


def rows_to_refresh(cfg, sampler) -> np.ndarray:
    """Host side, sampler leaves [S, K]: the rows to replace now (none while some seed still has new levels)."""
    seen = np.asarray(sampler.seen)
    if not seen.all():
        return np.zeros(0, np.int32)
    k = max(1, int(round(cfg.ued.refresh_share * seen.shape[1])))
    mean_score = np.asarray(sampler.score).mean(axis=0)
    return np.argsort(mean_score, kind="stable")[:k].astype(np.int32)


def buffer_metrics(hp: ls.LevelSampler, sampler) -> dict:
    """Per seed: seen rows, score quartiles over seen rows, mean staleness, and the replay share of the next
    episodes (the probability mass on seen rows)."""
    import jax
    import jax.numpy as jnp

    probs = np.asarray(jax.vmap(lambda s: ls.level_probs(hp, s))(jax.tree.map(jnp.asarray, sampler)))
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


def bank_use(cfg) -> str:
    return "the level buffer (random configurations; the final phase: the original game)"
