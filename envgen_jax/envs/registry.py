"""Configuration files of the games (`envgen_jax.games` holds each game's entry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envgen_jax.schema import ConfigError

def config_class(env_name: str):
    from envgen_jax import games  # games imports this module's package lazily; keep the cycle out of import time
    return games.get(env_name).config_cls


def read_config_file(path: str | Path, env_name: str) -> list[Any]:
    """Read configurations from JSON: one config object, a list of them, or {"environments": [...]} as written by
    `envgen-jax llm generate` (each item either a config or {"purpose": ..., "config": {...}})."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file"]) from None
    except json.JSONDecodeError as e:
        raise ConfigError([f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"]) from None
    cls = config_class(env_name)
    if isinstance(data, dict) and "environments" in data:
        items, where = data["environments"], "environments"
        if not isinstance(items, list):
            raise ConfigError([f"environments: expected a list, got {type(items).__name__}"])
    elif isinstance(data, list):
        items, where = data, ""
    else:
        return [cls.from_dict(data)]
    configs, problems = [], []
    for i, item in enumerate(items):
        here = f"{where}[{i}]"
        if isinstance(item, dict) and "config" in item:
            item, here = item["config"], f"{here}.config"
        found = cls.collect_problems(item, here)
        problems += found
        if not found:
            configs.append(cls.from_dict(item))
    if problems:
        raise ConfigError(problems, what=f"{env_name} configurations in {path}")
    if not configs:
        raise ConfigError([f"{path}: contains no configuration"])
    return configs


def make_env(env_name: str, observation: str = "symbolic", heist_mode: str = "hard"):
    """The single-environment object of a game (vmapped by `envs.vector.VecEnv`)."""
    from envgen_jax import games
    return games.get(env_name).make_env(observation, heist_mode)
