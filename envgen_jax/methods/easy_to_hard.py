"""Easy-to-Hard (Table 3): every cycle the LLM is asked, with no success rates, for stage k of N of a curriculum from
very easy to the original game (one continuing conversation)."""

from envgen_jax.llm.prompts import generation_prompt, output_format, render_template
from envgen_jax.methods.base import PAPER_LOOP, Method


def request(designer, cycle: int, cycles: int, n: int):
    spec, per = designer.spec, designer.strategy.envs_per_reply  # asked as the designer asks (Designer.ask)
    stage = render_template("curriculum_easy_to_hard.txt", ("stage", "stages", "output_format", "num_envs"),
                            stage=cycle + 1, stages=cycles, title=spec.title, num_envs=n,
                            output_format=output_format(spec, n, designer.strategy, per))
    prompt = generation_prompt(spec, n, designer.strategy, per) + "\n\n" + stage if not designer.messages else stage
    return designer.ask(prompt, n, kind="easy_to_hard")


class EasyToHard(Method):
    NAME = "easy_to_hard"
    PROGRAM = PAPER_LOOP
    USES_LLM = True

    @staticmethod
    def design(ctx):
        return ctx.ask_each(lambda d, success: request(d, ctx.cycle, ctx.cycles, ctx.n))
