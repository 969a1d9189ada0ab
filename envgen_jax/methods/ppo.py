"""PPO alone: the original game only, for the same number of steps (the paper's "PPO, 0.96M PT in Crafter")."""

from envgen_jax.plan import Phase

NAME = "ppo"
USES_LLM = False


def cycle_phases(cfg, c):
    return [Phase("train", c, "original", cfg.cycle_updates())]


def design(ctx):
    raise AssertionError("ppo has no design step")
