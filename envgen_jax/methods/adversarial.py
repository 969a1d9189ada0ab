"""Adversarial (Table 3): cycle 1 the generation prompt; later the LLM sees the success rates and is asked for
environments as hard as possible for the skills the agent does best."""

from envgen_jax.llm.prompts import format_configs, format_success, output_format, render_template
from envgen_jax.methods.base import PAPER_LOOP, Method


def request(designer, n: int, success):
    if success is None:
        return designer.generate(n)
    spec, per = designer.spec, designer.strategy.envs_per_reply  # asked as the designer asks (Designer.ask)
    prompt = render_template("curriculum_adversarial.txt", ("success", "previous_configs", "output_format", "num_envs"),
                             title=spec.title, num_envs=n, success=format_success(spec, success, order="strongest"),
                             previous_configs=format_configs(designer.configs),
                             output_format=output_format(spec, n, designer.strategy, per))
    return designer.ask(prompt, n, kind="adversarial")


class Adversarial(Method):
    NAME = "adversarial"
    PROGRAM = PAPER_LOOP
    USES_LLM = True

    @staticmethod
    def design(ctx):
        return ctx.ask_each(lambda d, success: request(d, ctx.n, success))
