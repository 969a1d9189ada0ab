"""EnvGen: cycle 1 the LLM generates environments; each later cycle it sees the agent's success in the original
game (mean +/- std over seeds) and the previous environments, and adapts them (one continuing conversation)."""

from envgen_jax.methods.base import llm_cycle

NAME = "envgen"
USES_LLM = True
cycle_phases = llm_cycle


def design(ctx):
    return ctx.ask_each(lambda d, success: d.generate(ctx.n) if success is None else d.feedback(success, ctx.n))
