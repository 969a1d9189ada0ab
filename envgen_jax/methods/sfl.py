"""Sampling For Learnability (Rutherford et al. 2024, "No Regrets"; as in Kinetix) over the schema's space.

Each cycle trains the same steps as the other methods, in one phase: at its start, and every `refresh_updates`
updates, `pool` uniformly random configurations are drawn, the current policy runs `rollouts_per_level` episodes in
each (one jitted evaluation over the whole pool), and each seed keeps its top `keep` by learnability p (1 - p)
(`trainer.learnability`); those are its options, `method_options.sfl` (`SFLOptions`). Training episodes then draw
their row on the device: the original game with probability `schedule.original_share` (Kinetix: half of the envs on
random levels; ours, as EnvGen, on the original game), else one of the kept configurations, evenly. The final phase
is the original game, as for every method.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from envgen_jax.methods.base import Phase
from envgen_jax.methods.random import random_configs
from envgen_jax.methods.selection import LearnabilityOptions, LearnabilitySelection
from envgen_jax.schema import bounded
from envgen_jax.trainer import learnability


@dataclasses.dataclass(frozen=True)
class SFLOptions(LearnabilityOptions):
    """sfl's settings, after Kinetix's `configs/ued/sfl.yaml` in proportion (it samples 4096 levels, keeps the top
    1024 by learnability, refreshes every 128 updates, half of the envs on them): 64 sampled, 16 kept, every 128
    updates, `schedule.original_share` of the envs in the original game."""

    pool: int = bounded(64, minimum=1)
    """random configurations whose learnability is measured at each selection (Kinetix 4096)"""
    keep: int = bounded(16, minimum=1)
    """the top ones by learnability trained on, evenly (Kinetix 1024 of 4096)"""
    refresh_updates: int = bounded(128, minimum=1)
    """PPO updates between selections, besides one at the start of each training phase (Kinetix 128)"""

    PATH, WHAT = "method_options.sfl.", "sfl options"
    LEGACY: ClassVar[dict[str, str]] = {"sfl_pool": "pool", "sfl_keep": "keep",
                                        "sfl_refresh_updates": "refresh_updates", **LearnabilityOptions.LEGACY}

    def more_problems(self):
        if self.keep > self.pool:
            return [f"{self.PATH}keep: {self.keep} is more than {self.PATH}pool ({self.pool})"]
        return []


def candidate_rows(cfg) -> np.ndarray:
    """i32[S, P]: the rows each seed chooses from."""
    return np.tile(np.arange(1, 1 + SFL.options(cfg).pool, dtype=np.int32), (cfg.num_agents, 1))


class SFL(LearnabilitySelection):
    NAME = "sfl"
    USES_LLM = False
    WHERE = "sfl"  # the training phases whose rows learnability chooses
    OPTIONS = SFLOptions

    @staticmethod
    def cycle_phases(cfg, c):
        return [Phase("train", c, SFL.WHERE, cfg.cycle_updates())]

    @staticmethod
    def bank_rows(cfg) -> int:
        return 1 + SFL.options(cfg).pool

    @staticmethod
    def bank_use(cfg) -> str:
        o = SFL.options(cfg)
        return (f"row 0 the original game, then {o.pool} random configurations drawn again at each selection; each "
                f"seed trains on its top {o.keep} by learnability")

    @staticmethod
    def training_weights(cfg, learn):
        return learnability.training_weights(learn, SFL.options(cfg).keep, cfg.schedule.original_share)

    # -- one run: the random pool of the latest selection (bank rows 1..pool) and the count of its draws --
    def __init__(self, run, trainer):
        super().__init__(run, trainer)
        self.buffer: list = []  # the pool's configurations (dicts)
        self.buffer_draws = 0   # pools drawn so far (seeds their random draws, so resumes draw the same)

    def state_dict(self) -> dict:
        return {"buffer": self.buffer, "buffer_draws": self.buffer_draws, **super().state_dict()}

    def load_state(self, state: dict) -> None:
        super().load_state(state)
        self.buffer, self.buffer_draws = state.get("buffer", []), state.get("buffer_draws", 0)

    def new_candidates(self):
        self.buffer = random_configs(self.run.cfg, self.run.config_cls, self.options(self.run.cfg).pool,
                                     self.buffer_draws)
        self.buffer_draws += 1

    def candidates(self):
        return self.run.generated(self.buffer)

    def reselect_now(self, phase):  # a new pool every `refresh_updates` updates
        done = self.run.state.phase_updates
        return 0 < done < phase.updates and done % self.options(self.run.cfg).refresh_updates == 0
