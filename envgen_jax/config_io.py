"""Typed run configurations: nested frozen dataclasses read from YAML, overridden with `--set a.b=value`.

The one parser of the project's settings (run, PPO, schedule, evaluation, LLM, output): every key is checked
against the dataclass fields (unknown keys are an error naming the path and the allowed keys), every value against
the field's type (`Literal[...]` choices name the allowed values), and all problems are reported together in one
ConfigError. Checks that involve several fields stay in the classes' `__post_init__`.

Why our own rather than a library: OmegaConf's structured configs raise at the first invalid value, and tyro
turns dataclasses into command-line flags rather than reading nested YAML with `a.b=v` overrides; a run
configuration should list every problem at once with its path and allowed values, which these ~160 lines do.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from envgen_jax.schema import ConfigError


def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp))


def choices(tp: Any) -> tuple:
    """The allowed values of a `Literal[...]` type (also inside `X | None`)."""
    if typing.get_origin(tp) is typing.Literal:
        return typing.get_args(tp)
    return tuple(c for arg in typing.get_args(tp) for c in choices(arg))


def choice_problems(obj: Any, prefix: str) -> list[str]:
    """Fields of dataclass `obj` typed `Literal[...]` whose value is not one of the choices (for `__post_init__`:
    objects built in code are checked like those read from YAML)."""
    hints = typing.get_type_hints(type(obj))
    out = []
    for f in dataclasses.fields(obj):
        allowed = choices(hints[f.name])
        value = getattr(obj, f.name)
        if allowed and value not in allowed and not (value is None and type(None) in typing.get_args(hints[f.name])):
            out.append(f"{prefix}{f.name}: {value!r} is not one of {', '.join(map(repr, allowed))}")
    return out


def _coerce(value: Any, tp: Any, path: str, problems: list[str]) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if value not in allowed or isinstance(value, bool) != any(isinstance(a, bool) for a in allowed):
            problems.append(f"{path}: {value!r} is not one of {', '.join(map(repr, allowed))}")
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        inner = [o for o in options if o is not type(None)]
        return _coerce(value, inner[0], path, problems)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            problems.append(f"{path}: expected a list, got {value!r}")
            return value
        (item_tp, *_rest) = typing.get_args(tp) or (Any,)
        return tuple(_coerce(v, item_tp, f"{path}[{i}]", problems) for i, v in enumerate(value))
    if dataclasses.is_dataclass(tp):
        return from_mapping(tp, value, path, problems)
    if tp is bool:
        if not isinstance(value, bool):
            problems.append(f"{path}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)  # YAML reads 1e6 as a float
            problems.append(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{path}: expected a number, got {value!r}")
            return value
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            problems.append(f"{path}: expected a string, got {value!r}")
        return value
    return value


def from_mapping(cls, data: Any, path: str = "", problems: list[str] | None = None):
    """Build dataclass `cls` from a (nested) mapping. Missing keys keep their defaults."""
    own = problems is None
    problems = [] if own else problems
    start = len(problems)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        problems.append(f"{path or 'config'}: expected a mapping of settings, got {data!r}")
        return None
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for key, value in data.items():
        here = f"{path}.{key}" if path else str(key)
        if key not in fields:
            problems.append(f"{here}: unknown setting; allowed: {', '.join(fields)}")
            continue
        before = len(problems)
        coerced = _coerce(value, hints[key], here, problems)
        if len(problems) == before:  # a bad value is left out, so the checks below still see the good ones
            kwargs[key] = coerced
    try:  # the class's own checks run even when a field failed, so every problem is reported at once
        obj = cls(**kwargs)
    except TypeError:  # a required field was left out above: its problem is already listed
        if len(problems) == start:
            raise
        obj = None
    except (ValueError, ConfigError) as e:
        if isinstance(e, ConfigError):
            problems.extend(e.problems)  # already named by their field paths
        else:
            problems.append(f"{path or cls.__name__}: {e}")
        obj = None
    if len(problems) > start:
        if own:
            raise ConfigError(problems, what="settings") from None
        return None
    return obj


def to_mapping(obj) -> dict:
    """Plain nested dict of a (nested) dataclass, tuples as lists (YAML/JSON friendly)."""
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            value = to_mapping(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def apply_overrides(data: dict, overrides: Sequence[str]) -> dict:
    """`a.b.c=value` strings onto a nested dict; values are read as YAML (8, 3e-4, true, [1, 2], null, text)."""
    data = dict(data)
    problems = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            problems.append(f"--set {item!r}: expected KEY.PATH=VALUE, e.g. --set ppo.num_envs=1024")
            continue
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            child = node.get(part)
            child = dict(child) if isinstance(child, Mapping) else {}
            node[part] = child
            node = child
        node[parts[-1]] = value
    if problems:
        raise ConfigError(problems, what="--set overrides")
    return data


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file"], what="run configuration") from None
    except yaml.YAMLError as e:
        raise ConfigError([f"{path}: not valid YAML ({e})"], what="run configuration") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError([f"{path}: expected a mapping of settings at the top level"], what="run configuration")
    return dict(data)
