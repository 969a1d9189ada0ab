"""PPO alone: the original game only, for the same number of steps (the paper's "PPO, 0.96M PT in Crafter")."""

from envgen_jax.methods.base import PAPER_LOOP, Method, Phase


class PPO(Method):
    NAME = "ppo"
    PROGRAM = PAPER_LOOP
    USES_LLM = False

    @staticmethod
    def cycle_phases(cfg, c):
        return [Phase("train", c, "original", cfg.cycle_updates())]
