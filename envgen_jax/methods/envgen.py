"""EnvGen: cycle 1 the LLM generates environments; each later cycle it sees the agent's success in the original
game (mean +/- std over seeds) and the previous environments with what the agent unlocked inside each, and adapts
them (in one conversation, or in a fresh one per feedback call: llm.conversation)."""

from envgen_jax.methods.base import PAPER_LOOP, Method


class EnvGen(Method):
    NAME = "envgen"
    PROGRAM = PAPER_LOOP
    USES_LLM = True

    @staticmethod
    def design(ctx):
        inside = ctx.inside or [None] * ctx.num_designers
        designers = iter(range(ctx.num_designers))

        def request(designer, success):
            d = next(designers)
            return designer.generate(ctx.n) if success is None else designer.feedback(success, ctx.n, inside=inside[d])
        return ctx.ask_each(request)
