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

from envgen_jax.methods.base import Phase
from envgen_jax.methods.random import random_configs
from envgen_jax.methods.selection import LearnabilitySelection
from envgen_jax.trainer import learnability


def candidate_rows(cfg) -> np.ndarray:
    """i32[S, P]: the rows each seed chooses from."""
    return np.tile(np.arange(1, 1 + cfg.ued.sfl_pool, dtype=np.int32), (cfg.num_agents, 1))


class SFL(LearnabilitySelection):
    NAME = "sfl"
    USES_LLM = False
    WHERE = "sfl"  # the training phases whose rows learnability chooses

    @staticmethod
    def cycle_phases(cfg, c):
        return [Phase("train", c, SFL.WHERE, cfg.cycle_updates())]

    @staticmethod
    def bank_rows(cfg) -> int:
        return 1 + cfg.ued.sfl_pool

    @staticmethod
    def bank_use(cfg) -> str:
        return (f"row 0 the original game, then {cfg.ued.sfl_pool} random configurations drawn again at each "
                f"selection; each seed trains on its top {cfg.ued.sfl_keep} by learnability")

    @staticmethod
    def training_weights(cfg, learn):
        return learnability.training_weights(learn, cfg.ued.sfl_keep, cfg.schedule.original_share)

    # -- one run: the random pool of the latest selection (bank rows 1..sfl_pool) and the count of its draws --
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
        self.buffer = random_configs(self.run.cfg, self.run.config_cls, self.run.cfg.ued.sfl_pool, self.buffer_draws)
        self.buffer_draws += 1

    def candidates(self):
        return self.run.generated(self.buffer)

    def reselect_now(self, phase):  # a new pool every ued.sfl_refresh_updates updates
        done = self.run.state.phase_updates
        return 0 < done < phase.updates and done % self.run.cfg.ued.sfl_refresh_updates == 0
