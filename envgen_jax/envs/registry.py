"""Configuration files of the games (`envgen_jax.games` holds each game's entry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envgen_jax.schema import ConfigError


def _no_duplicate_keys(pairs):
    """json's object hook: a key given twice is an error (json keeps the last silently, dropping the first)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def config_class(env_name: str):
    from envgen_jax import games  # games imports this module's package lazily; keep the cycle out of import time
    return games.get(env_name).config_cls


def read_config_file(path: str | Path, env_name: str) -> list[Any]:
    """Read configurations from JSON: one config object, a list of them, or {"environments": [...]} as written by
    `envgen-jax llm generate` (each item either a config or {"purpose": ..., "config": {...}})."""
    path = Path(path)
    try:
        raw = path.read_bytes()  # json decodes UTF-8 (or UTF-16/32) itself
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file"]) from None
    except OSError as e:
        raise ConfigError([f"{path}: cannot be read ({e.strerror or e})"]) from None
    try:
        data = json.loads(raw, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise ConfigError([f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"]) from None
    except UnicodeDecodeError as e:
        raise ConfigError([f"{path}: not UTF-8 text ({e.reason} at byte {e.start})"]) from None
    except (ValueError, RecursionError) as e:  # a duplicate key, a number too long, nesting too deep
        reason = str(e).split(";")[0] if isinstance(e, ValueError) else "nested too deeply"
        raise ConfigError([f"{path}: not valid JSON ({reason})"]) from None
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
            problems += [f"{here}.{key}: unknown key; an environment holds only \"purpose\" and \"config\""
                         for key in item if key not in ("purpose", "config")]
            if not isinstance(item.get("purpose", ""), str):
                problems.append(f"{here}.purpose: expected a string, got {type(item['purpose']).__name__}")
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
