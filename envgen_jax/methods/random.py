"""Random: uniformly random valid configurations each cycle, no LLM."""

from __future__ import annotations

import numpy as np

from envgen_jax.methods.base import PAPER_LOOP, Method


def random_config(config_cls, rng: np.random.Generator):
    """A uniformly random valid configuration: every setting drawn uniformly from its allowed values."""
    values = {}
    for s in config_cls.schema():
        if s.kind is str:
            values[s.name] = s.choices[rng.integers(len(s.choices))]
        elif s.kind is bool:
            values[s.name] = bool(rng.integers(2))
        else:
            options = s.suggested or tuple(range(s.minimum, s.maximum + 1))
            values[s.name] = int(options[rng.integers(len(options))])
    return config_cls(**values)


def random_configs(cfg, config_cls, n: int, draw: int) -> list[dict]:
    """`n` random configurations (dicts) for a method that keeps drawing them (plr's buffer, sfl's pools): `draw`,
    a counter kept in the method's state, makes every draw different and a resumed run draw the same ones."""
    rng = np.random.default_rng([cfg.seed, draw, 11])
    return [random_config(config_cls, rng).to_dict() for _ in range(n)]


class Random(Method):
    NAME = "random"
    PROGRAM = PAPER_LOOP
    USES_LLM = False

    @staticmethod
    def design(ctx):
        rng = np.random.default_rng([ctx.cfg.seed, ctx.cycle, 7])
        out = []
        for _ in range(ctx.num_designers):
            configs = [random_config(ctx.config_cls, rng) for _ in range(ctx.n)]
            out.append({"configs": [c.to_dict() for c in configs],
                        "purposes": ["uniformly random valid configuration"] * ctx.n})
        return out
