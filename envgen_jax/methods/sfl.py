"""Sampling For Learnability (Rutherford et al. 2024, "No Regrets"; as in Kinetix) over the schema's space.

Each cycle trains the same steps as the other methods, in one phase: at its start, and every
`ued.sfl_refresh_updates` updates, `ued.sfl_pool` uniformly random configurations are drawn, the current policy runs
`ued.rollouts_per_level` episodes in each (one jitted evaluation over the whole pool), and each seed keeps its top
`ued.sfl_keep` by learnability p (1 - p) (`trainer.learnability`). Training episodes then draw their row on the
device: the original game with probability `schedule.original_share` (Kinetix: half of the envs on random levels;
ours, as EnvGen, on the original game), else one of the kept configurations, evenly. The final phase is the
original game, as for every method.
"""

from __future__ import annotations

import numpy as np

from envgen_jax.methods.plr import new_configs  # noqa: F401 -- the same random draws, seeded by a counter
from envgen_jax.plan import Phase
from envgen_jax.trainer import learnability

NAME = "sfl"
USES_LLM = False
LEARNS_WHERE = "sfl"  # the training phases whose rows learnability chooses


def cycle_phases(cfg, c):
    return [Phase("train", c, LEARNS_WHERE, cfg.cycle_updates())]


def design(ctx):
    raise AssertionError("sfl has no design step")


def bank_rows(cfg) -> int:
    return 1 + cfg.ued.sfl_pool


def bank_use(cfg) -> str:
    return (f"row 0 the original game, then {cfg.ued.sfl_pool} random configurations drawn again at each "
            f"selection; each seed trains on its top {cfg.ued.sfl_keep} by learnability")


def pool_size(cfg) -> int:
    """Configurations drawn at each selection (rows 1..pool of the bank)."""
    return cfg.ued.sfl_pool


def candidate_rows(cfg) -> np.ndarray:
    """i32[S, P]: the rows each seed chooses from."""
    return np.tile(np.arange(1, 1 + cfg.ued.sfl_pool, dtype=np.int32), (cfg.num_agents, 1))


def row_weights(cfg, learn: np.ndarray) -> np.ndarray:
    return learnability.training_weights(learn, cfg.ued.sfl_keep, cfg.schedule.original_share)
