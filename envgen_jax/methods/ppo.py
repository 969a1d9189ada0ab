"""PPO alone: the original game only, for the same number of steps (the paper's "PPO, 0.96M PT in Crafter")."""

from envgen_jax.plan import Phase

NAME = "ppo"
USES_LLM = False


def cycle_phases(cfg, c):
    s = cfg.schedule
    return [Phase("train", c, "original", cfg.updates_for(s.llm_env_steps + s.original_env_steps))]


def design(ctx):
    raise AssertionError("ppo has no design step")
