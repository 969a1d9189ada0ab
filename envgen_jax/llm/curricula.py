"""Which request the designer sends in each cycle, per method (EnvGen and the paper's Table 3 baselines).

  envgen        cycle 1: the generation prompt; later: the feedback prompt with the agent's success rates
  fixed         cycle 1 only (the loop reuses those environments; no feedback)
  easy_to_hard  every cycle: "stage k of N of an easy-to-hard curriculum", no success rates shown
  adversarial   cycle 1: the generation prompt; later: the success rates, asking for environments that are as hard
                as possible for the skills the agent does best

All continue one conversation per designer, as in the paper.
"""

from __future__ import annotations

from typing import Mapping

from envgen_jax.llm.prompts import PROMPTS_DIR, format_configs, format_success, generation_prompt, output_format, render


def request(designer, method: str, cycle: int, cycles: int, n: int, success: Mapping | None):
    spec = designer.spec
    if method == "easy_to_hard":
        stage = render((PROMPTS_DIR / "curriculum_easy_to_hard.txt").read_text(encoding="utf-8"),
                       "curriculum_easy_to_hard.txt", ("stage", "stages", "output_format", "num_envs"),
                       stage=cycle + 1, stages=cycles, title=spec.title, num_envs=n, output_format=output_format(spec, n))
        prompt = generation_prompt(spec, n) + "\n\n" + stage if not designer.messages else stage
        return designer.ask(prompt, n, kind="easy_to_hard")
    if success is None:
        return designer.generate(n)
    if method == "adversarial":
        prompt = render((PROMPTS_DIR / "curriculum_adversarial.txt").read_text(encoding="utf-8"),
                        "curriculum_adversarial.txt", ("success", "previous_configs", "output_format", "num_envs"),
                        title=spec.title, num_envs=n, success=format_success(spec, success, order="strongest"),
                        previous_configs=format_configs(designer.configs), output_format=output_format(spec, n))
        return designer.ask(prompt, n, kind="adversarial")
    return designer.feedback(success, n)
