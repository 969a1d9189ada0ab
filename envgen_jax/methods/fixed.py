"""Fixed (Table 3): the first cycle's LLM environments in every cycle, no feedback."""

from envgen_jax.methods.base import PAPER_LOOP, Method


class Fixed(Method):
    NAME = "fixed"
    PROGRAM = PAPER_LOOP
    USES_LLM = True

    @staticmethod
    def design(ctx):
        if ctx.cycle > 0:  # a whole record: cycle 1's environments again
            return dict(ctx.previous[0], cycle=ctx.cycle, reused=True)
        return ctx.ask_each(lambda d, success: d.generate(ctx.n))

    @classmethod
    def llm_calls(cls, cycle, num_designers):
        return num_designers if cycle == 0 else 0  # later cycles reuse cycle 1's environments
