"""Configurable Crafter (Craftax-Classic): schema, world generation, and the gymnax-style environment."""

from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.envs.crafter.env import ACHIEVEMENTS, CrafterEnv, CrafterParams, config_to_params, make_params

__all__ = ["ACHIEVEMENTS", "CrafterConfig", "CrafterEnv", "CrafterParams", "config_to_params", "make_params"]
