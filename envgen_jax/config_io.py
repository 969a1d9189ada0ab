"""Typed run configurations: nested frozen dataclasses read from YAML, overridden with `--set a.b=value`.

The one parser of the project's settings (run, PPO, schedule, evaluation, LLM, output, a game's and a method's
options): every key is checked against the dataclass fields (unknown keys are an error naming the path and the
allowed keys), every value against the field's type, and all problems are reported together in one ConfigError.
What each field allows (`Literal[...]` choices, `bounded` ranges) is declared with the field and checked when the
object is made (`schema.declared_problems`, `schema.Declared`), so objects built in code are checked alike.

Why our own rather than a library: OmegaConf's structured configs raise at the first invalid value, and tyro
turns dataclasses into command-line flags rather than reading nested YAML with `a.b=v` overrides; a run
configuration should list every problem at once with its path and allowed values, which these ~160 lines do.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from envgen_jax.schema import (Bounds, ConfigError, bounded, choice_problems, choices,  # noqa: F401 -- the
                               declared_problems)  # settings' declarations, read here and imported from here


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error: PyYAML keeps the last one
    silently, so a second `ppo:` section would reset every PPO value of the first. Merge keys (`<<: *base`) still
    override what they merge."""

    def __init__(self, stream):
        super().__init__(stream)
        self._checked_nodes: set[int] = set()

    def flatten_mapping(self, node):
        if id(node) not in self._checked_nodes:  # a node's own keys, seen before merges are flattened into it
            self._checked_nodes.add(id(node))
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                            f"found duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
        super().flatten_mapping(node)


# YAML 1.1 (PyYAML) reads a float only with a dot, so `3e-4` and `1e-5`, as researchers write learning rates and
# epsilons, were strings; YAML 1.2 and Python read them as numbers, and so do we (`1.0e-4`, `8`, `.5` unchanged).
_EXPONENT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT, list("-+0123456789."))


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe writer, reading numbers as `_StrictLoader` does: a string such as '1e5' is quoted, so it reads
    back as a string."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT, list("-+0123456789."))


def dump_yaml(data: Any) -> str:
    """YAML text of plain data (keys in their order) that `parse_yaml` reads back as the same values."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def parse_yaml(text: str | bytes) -> Any:
    """YAML text (or UTF-8/16 bytes) to Python values; ValueError with the reason for anything that does not read.

    PyYAML raises YAMLError for bad syntax, but lets its value constructors' own errors through: ValueError for
    '2001-13-45' (read as a date) or a 5000-digit integer, AttributeError for '!!timestamp x', KeyError for
    '!!bool maybe', RecursionError for deep nesting. All of them mean the same to a reader of settings."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as e:
        raise ValueError(str(e)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except Exception as e:  # noqa: BLE001 -- see above: any failure of the YAML reader is unreadable text
        raise ValueError(f"{type(e).__name__}: {e}") from None


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
        try:
            number = float(value)
        except OverflowError:
            problems.append(f"{path}: expected a number, got an integer too large for one")
            return value
        if math.isnan(number):  # NaN passes every `x < 0` check and poisons what it touches
            problems.append(f"{path}: expected a number, got nan")
        return number
    if tp is str:
        if not isinstance(value, str):
            problems.append(f"{path}: expected a string, got {value!r}")
        return value
    return value


def from_mapping(cls, data: Any, path: str = "", problems: list[str] | None = None):
    """Build dataclass `cls` from a (nested) mapping. Missing keys keep their defaults. Problems raise one
    ConfigError; with `problems` given they are appended to it instead, and None is returned. A field whose metadata
    holds `read`, (mapping, value, path, problems) -> value, is read by it instead of by its type: a run's
    `game_options`, whose settings the chosen game declares. A class with an `upgrade_mapping(data, problems)`
    classmethod has its mapping passed through it first: older versions' keys moved to where they live today."""
    own = problems is None
    problems = [] if own else problems
    start = len(problems)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        problems.append(f"{path or 'config'}: expected a mapping of settings, got {data!r}")
        if own:
            raise ConfigError(problems, what="settings")
        return None
    upgrade = getattr(cls, "upgrade_mapping", None)  # a class whose older versions' keys live elsewhere today
    if upgrade is not None:
        data = upgrade(data, problems)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for key, value in data.items():
        here = f"{path}.{key}" if path else str(key)
        if key not in fields:
            problems.append(f"{here}: unknown setting; allowed: {', '.join(fields)}")
            continue
        before = len(problems)
        read = fields[key].metadata.get("read")  # a section whose settings depend on other settings
        coerced = read(data, value, here, problems) if read else _coerce(value, hints[key], here, problems)
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


def apply_overrides(data: dict, overrides: Sequence[str], problems: list[str] | None = None) -> dict:
    """`a.b.c=value` strings onto a nested dict; values are read as YAML (8, 3e-4, true, [1, 2], null, text), and
    text that YAML cannot read is taken as it is. A later override of the same key wins; an override inside a key
    that holds a value other than a mapping (`ppo: 3`, then `ppo.width=8`) is an error naming that key, since
    replacing the value would silently drop it. Problems raise a ConfigError, or with `problems` are appended to it
    (and the override is left out), so that a caller can report them with those of the settings."""
    data = dict(data)
    own = problems is None
    problems = [] if own else problems
    for item in overrides:
        key, sep, raw = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(part.strip() for part in parts):
            problems.append(f"--set {item!r}: expected KEY.PATH=VALUE, e.g. --set ppo.num_envs=1024")
            continue
        try:
            value = parse_yaml(raw) if raw.strip() else ""
        except ValueError:
            value = raw
        node = data
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is not None and not isinstance(child, Mapping):
                problems.append(f"{'.'.join(parts[:depth + 1])}: {child!r} is not a mapping of settings, so "
                                f"--set {item!r} cannot set a value inside it")
                break
            child = dict(child or {})
            node[part] = child
            node = child
        else:
            node[parts[-1]] = value
    if problems and own:
        raise ConfigError(problems, what="--set overrides")
    return data


def load_yaml(path: str | Path) -> dict:
    """A YAML file's top-level mapping; ConfigError (naming the file) for anything else, duplicate keys included."""
    path = Path(path)
    try:
        text = path.read_bytes()  # PyYAML decodes (UTF-8, or UTF-16 with a byte-order mark) and reports bad bytes
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file"], what="run configuration") from None
    except OSError as e:
        raise ConfigError([f"{path}: cannot be read ({e.strerror or e})"], what="run configuration") from None
    try:
        data = parse_yaml(text)
    except ValueError as e:
        raise ConfigError([f"{path}: not valid YAML ({e})"], what="run configuration") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError([f"{path}: expected a mapping of settings at the top level"], what="run configuration")
    return dict(data)


def load_config_file(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict:
    """A run configuration file with its `extends:` resolved: `extends: base/crafter.yaml` (a path relative to the
    file) reads that file first (itself possibly extending another), then this file's settings go over it, section
    by section (`ppo: {lr: 1e-3}` changes the base's learning rate and keeps the rest of its `ppo`)."""
    path = Path(path)
    data = load_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str) or not parent.strip():
        raise ConfigError([f"{path}: extends: expected the path of a run configuration file, got {parent!r}"],
                          what="run configuration")
    base_path = (path.parent / parent).resolve()
    chain = (*_chain, path.resolve())
    if base_path in chain:
        loop = " -> ".join(str(p) for p in (*chain, base_path))
        raise ConfigError([f"{path}: extends: {parent!r} makes a loop ({loop})"], what="run configuration")
    if not base_path.is_file():
        raise ConfigError([f"{path}: extends: {parent!r}: no such file ({base_path})"], what="run configuration")
    return merge_settings(load_config_file(base_path, chain), data)


def merge_settings(base: Mapping, over: Mapping) -> dict:
    """`over` on top of `base`: mappings merge key by key, any other value (lists included) replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_settings(out[key], value)
        else:
            out[key] = value
    return out


# ----------------------------------------------------------------------------------------------- old keys
OldKey = typing.Callable[[dict, str, Any, list], "Sequence[str] | Mapping[str, Any] | None"]
"""A rule of an old-key table: (the whole mapping, the key's last part, its value, problems) -> the paths it moves
to (several: each gets the value; none: it is dropped, as the settings that read it ignore it; a mapping: each path
with its own value), or None where the key is no old key (it stays)."""


def move_old_keys(data: Mapping, table: Mapping[str, "str | OldKey"], overrides: Sequence[str] = (),
                  problems: list[str] | None = None) -> tuple[dict, dict[str, str]]:
    """`data` with the keys of older versions moved to where they live today. `table`: old path ('ppo.width', or
    'ued.*' for each key of a section) -> its new path, or a rule (`OldKey`) where the new path depends on the rest
    of the mapping; rows move in the table's order. Where the new path holds another value, the one `overrides` set
    (a --set of it, of a section above it or of a value inside it; already applied to `data`) wins; set alike both
    ways, it is a problem naming both. Returns (the mapping, {new path: old path}) to name the moved keys' problems
    by the key written (`renamed`)."""
    own = problems is None
    problems = [] if own else problems
    data = _copied(data)
    set_by = {item.partition("=")[0].strip() for item in overrides}
    renames: dict[str, str] = {}
    for old, rule in table.items():
        section, _, key = old.rpartition(".")
        parent = _node(data, section.split(".")) if section else data
        if not isinstance(parent, dict):
            continue
        for name in [k for k in parent if key in ("*", k)]:
            value = parent[name]
            here = f"{section}.{name}" if section else name
            paths = [rule] if isinstance(rule, str) else rule(data, name, value, problems)
            if paths is None:
                continue
            del parent[name]
            moves = paths if isinstance(paths, Mapping) else dict.fromkeys(paths, value)
            for path, new_value in moves.items():
                if _put(data, path.split("."), new_value, _set(set_by, here), _set(set_by, path), here, problems):
                    renames[path] = here
        if key == "*" and _node(data, section.split(".")) == {}:  # a section of old keys only
            _drop(data, section.split("."))
    if own and problems:
        raise ConfigError(problems, what="settings")
    return data, renames


def renamed(problems: list[str], renames: Mapping[str, str]) -> list[str]:
    """Problems naming moved settings by the key the user wrote (`move_old_keys`' renames), each once."""
    out = []
    for problem in problems:
        for new in sorted(renames, key=len, reverse=True):
            problem = re.sub(rf"(?<![\w.]){re.escape(new)}(?![\w])", renames[new], problem)
        if problem not in out:
            out.append(problem)
    return out


def _set(set_by: set, path: str) -> bool:
    """Whether a --set gave `path`, a section above it or a value inside it."""
    return any(s == path or path.startswith(s + ".") or s.startswith(path + ".") for s in set_by)


def _put(data: dict, path: list[str], value: Any, old_set: bool, new_set: bool, old: str, problems: list) -> bool:
    """Put an old key's value at `path` unless a value there wins over it (the one rule); whether it was put."""
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if child is not None and not isinstance(child, dict):
            return False  # reported when that section is read
        node[part] = node = {} if child is None else child  # `data` is a copy: its sections change in place
    new = ".".join(path)
    if path[-1] in node and node[path[-1]] != value:
        if old_set == new_set:
            problems.append(f"{old}: {value!r} differs from {new} = {node[path[-1]]!r}; {old} is the old name of "
                            f"{new}, give only one")
        if not old_set or new_set:
            return False
    node[path[-1]] = value
    return True


def _copied(data: Mapping) -> dict:
    return {k: _copied(v) if isinstance(v, Mapping) else v for k, v in data.items()}


def _node(data: dict, path: list[str]):
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _drop(data: dict, path: list[str]) -> None:
    parent = _node(data, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
