"""EnvGen with learnability (ours): the LLM writes a larger pool, learnability picks what to train on, and tells it.

Each cycle, as EnvGen: the design step, training in the designed environments, training in the original game, an
evaluation there. The difference: each LLM call asks for `pool` environments (its options, `method_options.envgen_sfl`;
not `schedule.envs_per_call`); before training in them, the current policy runs `rollouts_per_level` episodes in each
(one jitted evaluation),
and each seed trains on its `schedule.envs_per_call` most learnable ones (p (1 - p), `trainer.learnability`), each
episode's environment drawn with probability in proportion to its learnability. The next call's feedback adds, per
environment of the pool, its measured success rate on the skills still to learn, whether that made it learnable,
too easy or too hard, and whether the agent trained in it.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from envgen_jax.methods.selection import LearnabilityOptions, LearnabilitySelection
from envgen_jax.schema import bounded
from envgen_jax.trainer import learnability


@dataclasses.dataclass(frozen=True)
class EnvGenSFLOptions(LearnabilityOptions):
    """envgen_sfl's settings: the LLM's pool per call, and how learnability is measured."""

    pool: int = bounded(16, minimum=1)
    """environments the LLM writes per call; learnability picks `schedule.envs_per_call` of them"""

    PATH, WHAT = "method_options.envgen_sfl.", "envgen_sfl options"
    LEGACY: ClassVar[dict[str, str]] = {"llm_pool": "pool", **LearnabilityOptions.LEGACY}


def candidate_rows(cfg) -> np.ndarray:
    """i32[S, P]: each seed's designer's environments (pooled feedback: one designer for every seed)."""
    pool = EnvGenSFL.options(cfg).pool
    designer = np.arange(cfg.num_agents) if cfg.num_designers > 1 else np.zeros(cfg.num_agents, np.int64)
    return (1 + designer[:, None] * pool + np.arange(pool)[None, :]).astype(np.int32)


def learnability_notes(cfg, selection: dict) -> list[list[str]]:
    """Per designer, one note per environment of its latest pool, from a selection (the method state's
    `selections`): its p (mean over the seeds the designer serves), the verdict, and the share of episodes the agent
    ran in it."""
    p, measured, weights = (np.asarray(selection[k]) for k in ("p", "measured", "weights"))  # [S, K]
    rows = candidate_rows(cfg)  # [S, P]
    seeds_of = ([np.arange(cfg.num_agents)] if cfg.num_designers == 1
                else [np.array([d]) for d in range(cfg.num_designers)])  # the seeds each designer serves
    notes = []
    for seeds in seeds_of:
        per_env = []
        for row in rows[seeds[0]]:
            got = measured[seeds, row].astype(bool)
            mean_p = float(p[seeds, row][got].mean()) if got.any() else 0.0
            w = float(weights[seeds, row].mean())
            trained = (f"the agent trained in it ({100 * w:.0f}% of its episodes there)" if w > 0
                       else "the agent did not train in it")
            per_env.append(f"p = {100 * mean_p:.0f}%: {learnability.verdict(mean_p, bool(got.any()))}; {trained}")
        notes.append(per_env)
    return notes


class EnvGenSFL(LearnabilitySelection):
    NAME = "envgen_sfl"
    USES_LLM = True
    WHERE = "llm"  # learnability chooses the rows of the LLM-environment phases
    OPTIONS = EnvGenSFLOptions

    @staticmethod
    def design(ctx):
        n = EnvGenSFL.options(ctx.cfg).pool
        notes = ctx.learnability_notes or [None] * ctx.num_designers
        designers = iter(range(ctx.num_designers))

        def request(designer, success):
            d = next(designers)
            return designer.generate(n) if success is None else designer.feedback(success, n, notes=notes[d])
        return ctx.ask_each(request, n=n)

    @staticmethod
    def bank_rows(cfg) -> int:
        return 1 + EnvGenSFL.options(cfg).pool * cfg.num_designers

    @staticmethod
    def bank_use(cfg) -> str:
        return (f"row 0 the original game, then {EnvGenSFL.options(cfg).pool} per designer for the LLM's pool; each "
                f"seed trains on its {cfg.schedule.envs_per_call} most learnable")

    @staticmethod
    def config_problems(cfg) -> list[str]:
        pool = EnvGenSFL.options(cfg).pool
        if cfg.schedule.envs_per_call > pool:
            return [f"schedule.envs_per_call: envgen_sfl trains in {cfg.schedule.envs_per_call} of the LLM's "
                    f"{EnvGenSFLOptions.PATH}pool = {pool} environments; it cannot be more"]
        return []

    @staticmethod
    def training_weights(cfg, learn):
        return learnability.weights_by_learnability(learn, candidate_rows(cfg), cfg.schedule.envs_per_call)

    def candidates(self):
        return self.run.llm_configs()  # the latest design's pool, all designers in order

    def designer_notes(self):
        """What the latest selection measured, one note per environment of each designer's pool."""
        return learnability_notes(self.run.cfg, self.selections[-1]) if self.selections else None
