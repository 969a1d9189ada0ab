"""Procgen Heist in JAX, configurable per environment by a designer (see config.py and env.py)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp

from envgen_jax.envs.heist.config import HeistConfig
from envgen_jax.envs.heist.env import ACHIEVEMENTS, HeistEnv, HeistParams, HeistState, make_params

__all__ = ["ACHIEVEMENTS", "HeistConfig", "HeistEnv", "HeistParams", "HeistState", "make_params", "render_level",
           "render_levels"]


def generate_states(configs: Sequence[HeistConfig | Mapping], seed: int = 0, mode: str = "hard") -> list[HeistState]:
    """The starting state of level `seed` of each config (a HeistConfig or designer JSON dict) in a `mode` world."""

    env, reset = _batched_reset(mode)
    bank = env.make_params(list(configs))
    keys = jnp.broadcast_to(jax.random.PRNGKey(seed), (bank.num_rows, *jax.random.PRNGKey(seed).shape))
    _, states = reset(keys, bank.params)
    return [jax.tree.map(lambda leaf, i=i: leaf[i], states) for i in range(bank.num_rows)]


@functools.lru_cache(maxsize=None)
def _batched_reset(mode: str):
    import jax

    env = HeistEnv(mode=mode, obs="symbolic")
    return env, jax.jit(jax.vmap(env.reset))


def render_level(config: HeistConfig | Mapping | None = None, seed: int = 0, path: str | Path = "heist_level.png",
                 mode: str = "hard", size: int = 512) -> Path:
    """Write the picture of level `seed` of `config` (default: Procgen's own distribution) in a `mode` world
    ("hard" 13x13, "easy" 9x9) as a PNG of `size` pixels; the agent sees the same picture at 64x64."""
    from envgen_jax.envs.heist import render

    state = generate_states([config if config is not None else HeistConfig.original()], seed, mode)[0]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    render.render_png(state, HeistEnv(mode=mode).world_dim, path, size)
    return path


def render_levels(configs: Sequence[HeistConfig | Mapping], path: str | Path, seed: int = 0, mode: str = "hard",
                  titles: Sequence[str] | None = None) -> Path:
    """One panel per configuration (level `seed` of each), with a legend: what `envgen-jax render --env heist`
    draws."""
    from envgen_jax.envs.heist import render

    configs = [c if isinstance(c, HeistConfig) else HeistConfig.from_dict(c) for c in configs]
    states = generate_states(configs, seed, mode)
    return render.save_panels(states, HeistEnv(mode=mode).world_dim, path,
                              titles or [c.summary() for c in configs], f"Heist levels ({mode}, seed {seed})")
