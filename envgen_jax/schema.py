"""Declarative settings schemas.

One description of every knob an environment designer may set serves four readers: the validator (strict, with
field paths), the config dataclass (typed defaults), the LLM prompt (a readable list of settings) and the JSON Schema
sent to structured-output endpoints. Keeping them in one place means they cannot drift apart.

A config class is a frozen dataclass whose fields are declared with `setting(...)`; `SchemaConfig` gives it
`from_dict`, `to_dict`, `original()` and `schema()`.
"""

from __future__ import annotations

import dataclasses
import math
import re
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
        if number < self.minimum:
            return None, f"{where}: {number} is below the minimum {self.minimum}"
        if number > self.maximum:
            return None, f"{where}: {number} is above the maximum {self.maximum}"
        return number, None

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
