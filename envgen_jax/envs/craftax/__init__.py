"""Full Craftax (craftax's "Craftax-Symbolic-v1": 9 floors, 43 actions, 67 achievements) as a configurable game:
every environment of a batch runs its own configuration (config.py: the designer's words; params.py: the numbers)."""

from envgen_jax.envs.craftax.config import CraftaxConfig
from envgen_jax.envs.craftax.env import ACHIEVEMENTS, MAX_RETURN, CraftaxEnv, CraftaxState, craftax_game_step
from envgen_jax.envs.craftax.params import CraftaxParams, config_to_params, make_params

__all__ = ["ACHIEVEMENTS", "MAX_RETURN", "CraftaxConfig", "CraftaxEnv", "CraftaxParams", "CraftaxState",
           "config_to_params", "craftax_game_step", "make_params"]
