"""Declarative settings: one way to declare a setting and one place that checks it.

Every settings class is a frozen dataclass whose fields declare their own limits: a `Literal[...]` type names the
allowed values, `bounded(...)` a numeric range, `setting(...)` (the designer-facing knobs of a game's environment
configuration) its section, choices, range and meaning. `declared_problems` checks the first two for every class
(the run configuration's sections, the LLM settings, a game's options, a method's options: subclasses of
`Declared`, checked on construction), and `Setting.check` the designer's, with the same `Bounds`. The YAML parser
(`config_io`) checks each value's type on the way in.

One description of every designer knob serves four readers: the validator (strict, with field paths), the config
dataclass (typed defaults), the LLM prompt (a readable list of settings) and the JSON Schema sent to
structured-output endpoints. Keeping them in one place means they cannot drift apart. Such a config class is a
frozen dataclass whose fields are declared with `setting(...)`; `SchemaConfig` gives it `from_dict`, `to_dict`,
`original()` and `schema()`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
import types
import typing
from typing import Any, ClassVar, Mapping, Sequence


class ConfigError(ValueError):
    """Bad configuration input. `problems` lists every problem found, each naming its field path."""

    def __init__(self, problems: Sequence[str], what: str = "configuration"):
        self.problems = list(problems)
        self.what = what
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid {what} ({len(self.problems)} problem{'s' * (len(self.problems) != 1)}):\n{lines}")


def normalise_word(value: str) -> str:
    """'Very_Common', 'very-common' and ' very  common ' all read as 'very common'."""
    return re.sub(r"\s+", " ", re.sub(r"[_\-]", " ", value)).strip().lower()


def choices(tp: Any) -> tuple:
    """The allowed values of a `Literal[...]` type (also inside `X | None`)."""
    if typing.get_origin(tp) is typing.Literal:
        return typing.get_args(tp)
    return tuple(c for arg in typing.get_args(tp) for c in choices(arg))


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The range of a numeric setting, declared with its field (`bounded`, `setting`) and checked by
    `declared_problems` and `Setting.check`."""

    low: float | None = None
    low_open: bool = False
    high: float | None = None
    high_open: bool = False

    def problem(self, path: str, value: Any, interval: bool = True) -> str | None:
        """The problem with a number, or None; `interval`: a range bounded on both sides is named whole
        ("is not in [0, 1]") rather than by the side crossed ("is above the maximum 1")."""
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        if not (too_low or too_high):
            return None
        if interval and self.high is not None and self.low is not None:
            return (f"{path}: {value} is not in {'(' if self.low_open else '['}{self.low}, {self.high}"
                    f"{')' if self.high_open else ']'}")
        if too_high:
            return f"{path}: {value} must be below {self.high}" if self.high_open else \
                f"{path}: {value} is above the maximum {self.high}"
        return f"{path}: {value} must be above {self.low}" if self.low_open else \
            f"{path}: {value} is below the minimum {self.low}"


def bounded(default: Any, *, minimum: float | None = None, above: float | None = None,
            maximum: float | None = None, below: float | None = None) -> Any:
    """A dataclass field with a declared range: `minimum`/`maximum` inclusive, `above`/`below` exclusive (none: a
    number of the field's type, or null where the type allows it)."""
    bounds = Bounds(low=above if above is not None else minimum, low_open=above is not None,
                    high=below if below is not None else maximum, high_open=below is not None)
    return dataclasses.field(default=default, metadata={"bounds": bounds})


def _number_problem(path: str, value: Any, tp: Any) -> str | None:
    """A bounded field's value of the wrong type (an object built in code; the parser refuses them on the way in)."""
    optional = typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)
    if value is None and optional:
        return None
    whole = int in (typing.get_args(tp) if optional else (tp,))
    ok = isinstance(value, numbers.Integral if whole else numbers.Real) and not isinstance(value, bool)
    if ok and not (isinstance(value, float) and math.isnan(value)):
        return None
    return f"{path}: expected {'an integer' if whole else 'a number'}{' or null' if optional else ''}, got {value!r}"


def declared_problems(obj: Any, prefix: str) -> list[str]:
    """Every declared check of dataclass `obj`: `Literal[...]` choices and `bounded` ranges (and types), each
    problem named by its path (`prefix` + field). `Declared` runs them on construction, so objects built in code are
    checked like those read from YAML; checks that involve several fields are the class's own."""
    out = choice_problems(obj, prefix)
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        bounds, value = f.metadata.get("bounds"), getattr(obj, f.name)
        if bounds is None:
            continue
        problem = _number_problem(prefix + f.name, value, hints[f.name])
        if problem is None and value is not None:
            problem = bounds.problem(prefix + f.name, value)
        if problem:
            out.append(problem)
    return out


def choice_problems(obj: Any, prefix: str) -> list[str]:
    """Fields of dataclass `obj` typed `Literal[...]` whose value is not one of the choices."""
    hints = typing.get_type_hints(type(obj))
    out = []
    for f in dataclasses.fields(obj):
        allowed = choices(hints[f.name])
        value = getattr(obj, f.name)
        if allowed and value not in allowed and not (value is None and type(None) in typing.get_args(hints[f.name])):
            out.append(f"{prefix}{f.name}: {value!r} is not one of {', '.join(map(repr, allowed))}")
    return out


class Declared:
    """Base of a frozen settings dataclass whose declared checks run when it is made (from YAML or in code): every
    problem of `declared_problems`, and those of `more_problems` (checks involving several fields), named by path
    under `PATH` (e.g. "schedule."), raised together in one ConfigError."""

    PATH: ClassVar[str] = ""
    WHAT: ClassVar[str] = "settings"

    def __post_init__(self):
        problems = declared_problems(self, self.PATH) + self.more_problems()
        if problems:
            raise ConfigError(problems, what=self.WHAT)

    def more_problems(self) -> list[str]:
        return []


@dataclasses.dataclass(frozen=True)
class Setting:
    """One knob: where it lives in the JSON (`section.name`), its type, allowed values, default and meaning."""

    section: str
    name: str
    kind: type  # str (a word from `choices`), int (in [minimum, maximum]) or bool
    default: Any
    doc: str
    choices: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    suggested: tuple[int, ...] | None = None  # a short menu of values offered to LLMs for wide integer ranges

    @property
    def path(self) -> str:
        return f"{self.section}.{self.name}"

    def allowed(self) -> str:
        if self.kind is str:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind is bool:
            return "true or false"
        return f"an integer from {self.minimum} to {self.maximum}"

    def check(self, value: Any) -> tuple[Any, str | None]:
        """Return (canonical value, None) or (None, problem message)."""
        where = self.path
        if self.kind is str:
            if not isinstance(value, str):
                return None, f"{where}: {value!r} is a {type(value).__name__}, expected {self.allowed()}"
            word = normalise_word(value)
            if word not in self.choices:
                return None, f"{where}: {value!r} is not allowed; expected {self.allowed()}"
            return word, None
        if self.kind is bool:
            if not isinstance(value, bool):
                return None, f"{where}: {value!r} is a {type(value).__name__}, expected true or false"
            return value, None
        # Integers: JSON has one number type, so an integral float such as 3.0 is accepted as 3; 3.5, "3" and
        # booleans are not.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, f"{where}: {value!r} is a {type(value).__name__}, expected {self.allowed()}"
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            return None, f"{where}: {value!r} is not a whole number; expected {self.allowed()}"
        number = int(value)
        problem = Bounds(low=self.minimum, high=self.maximum).problem(where, number, interval=False)
        return (None, problem) if problem else (number, None)

    def describe(self) -> str:
        return f"{self.path}: {self.allowed()} (default {self.format(self.default)}). {self.doc}"

    @staticmethod
    def format(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return repr(value) if isinstance(value, str) else str(value)

    def json_schema(self, changes_only: bool = False) -> dict:
        """`changes_only`: leave the default out of the allowed values, so that a reply constrained by the schema
        can only write a setting it changes (the 1.5B model filled configs with standard values, making its
        environments identical); the validator still accepts the default."""
        if self.kind is bool:
            return {"type": "boolean", "enum": [not self.default]} if changes_only else {"type": "boolean"}
        if self.kind is str:
            kind, values = "string", list(self.choices)
        else:
            # Small local models' grammar converters ignore minimum/maximum but honour enums, so bounded integers
            # are offered as explicit value lists (see shared/docs/local-llm.md).
            kind, values = "integer", list(self.suggested) if self.suggested else list(range(self.minimum,
                                                                                             self.maximum + 1))
        return {"type": kind, "enum": [v for v in values if not (changes_only and v == self.default)]}


def setting(section: str, default: Any, doc: str, *, choices: Sequence[str] | None = None, minimum: int | None = None,
            maximum: int | None = None, suggested: Sequence[int] | None = None) -> Any:
    """Declare a dataclass field as a designer-facing setting."""
    return dataclasses.field(default=default, metadata={"setting": dict(
        section=section, doc=doc, choices=tuple(choices) if choices else None, minimum=minimum, maximum=maximum,
        suggested=tuple(suggested) if suggested else None)})


class SchemaConfig:
    """Mixin for frozen dataclasses declared with `setting(...)` fields."""

    ENV_NAME: ClassVar[str] = "environment"

    @classmethod
    def schema(cls) -> tuple[Setting, ...]:
        out = []
        for f in dataclasses.fields(cls):
            meta = f.metadata.get("setting")
            if meta is None:
                continue
            kind = str if meta["choices"] else (bool if isinstance(f.default, bool) else int)
            out.append(Setting(name=f.name, kind=kind, default=f.default, **meta))
        return tuple(out)

    @classmethod
    def sections(cls) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.section for s in cls.schema()))

    @classmethod
    def original(cls):
        """The unmodified game: every setting at its default."""
        return cls()

    @classmethod
    def from_dict(cls, data: Any, where: str = ""):
        """Validate designer JSON (nested by section). Every problem is collected and raised in one ConfigError."""
        problems = cls.collect_problems(data, where)
        if problems:
            raise ConfigError(problems, what=f"{cls.ENV_NAME} configuration")
        values = {}
        by_path = {s.path: s for s in cls.schema()}
        for section, body in data.items():
            for name, value in body.items():
                values[name] = by_path[f"{section}.{name}"].check(value)[0]
        return cls(**values)

    @classmethod
    def collect_problems(cls, data: Any, where: str = "") -> list[str]:
        prefix = f"{where}." if where else ""
        if not isinstance(data, Mapping):
            return [f"{where or 'configuration'}: expected a JSON object with sections "
                    f"{', '.join(cls.sections())}, got {type(data).__name__}"]
        settings = {s.section: {} for s in cls.schema()}
        for s in cls.schema():
            settings[s.section][s.name] = s
        problems = []
        for section, body in data.items():
            if section not in settings:
                problems.append(f"{prefix}{section}: unknown section; allowed sections are {', '.join(settings)}")
                continue
            if not isinstance(body, Mapping):
                problems.append(f"{prefix}{section}: expected an object of settings, got {type(body).__name__}")
                continue
            for name, value in body.items():
                if name not in settings[section]:
                    problems.append(f"{prefix}{section}.{name}: unknown setting; allowed in {section}: "
                                    f"{', '.join(settings[section])}")
                    continue
                problem = settings[section][name].check(value)[1]
                if problem:
                    problems.append(prefix + problem)
        return problems

    def to_dict(self, only_changed: bool = False) -> dict:
        """Nested JSON form; `from_dict(to_dict())` gives the same config."""
        out: dict = {}
        for s in self.schema():
            value = getattr(self, s.name)
            if only_changed and value == s.default:
                continue
            out.setdefault(s.section, {})[s.name] = value
        return out

    def summary(self) -> str:
        changed = self.to_dict(only_changed=True)
        if not changed:
            return f"original {self.ENV_NAME}"
        return "; ".join(f"{k}={Setting.format(v)}" for body in changed.values() for k, v in body.items())

    @classmethod
    def json_schema(cls, changes_only: bool = False) -> dict:
        """JSON Schema of one configuration (every setting optional, nothing else allowed); `changes_only`: each
        setting's default left out of its values (Setting.json_schema)."""
        props: dict = {}
        for s in cls.schema():
            section = props.setdefault(s.section, {"type": "object", "properties": {}, "additionalProperties": False})
            section["properties"][s.name] = s.json_schema(changes_only)
        return {"type": "object", "properties": props, "additionalProperties": False}

    @classmethod
    def describe_settings(cls) -> str:
        """Human-readable list of every setting: the single source for prompts and docs."""
        lines = []
        for section in cls.sections():
            lines.append(f"{section}:")
            lines += [f"  - {s.describe()}" for s in cls.schema() if s.section == section]
        return "\n".join(lines)
