"""A game's environment configurations read from a JSON file (`games.read_config_file` names the game)."""

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


def read_configs(path: str | Path, cls: type, env_name: str) -> list[Any]:
    """Configurations of class `cls` (the game `env_name`'s) from JSON: one config object, a list of them, or
    {"environments": [...]} as written by `envgen-jax llm generate` and a run's environments/cycle_<c>.json (each
    item either a config or {"purpose": ..., "config": {...}}, with the designer's "targets" where it wrote them)."""
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
            problems += [f"{here}.{key}: unknown key; an environment holds only \"targets\", \"purpose\" and "
                         f"\"config\"" for key in item if key not in ("targets", "purpose", "config")]
            if not isinstance(item.get("purpose", ""), str):
                problems.append(f"{here}.purpose: expected a string, got {type(item['purpose']).__name__}")
            targets = item.get("targets", [])
            if not (isinstance(targets, list) and all(isinstance(t, str) for t in targets)):
                problems.append(f"{here}.targets: expected a list of achievement names, got {targets!r}")
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
