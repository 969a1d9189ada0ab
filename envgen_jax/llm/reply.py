"""Turn an LLM reply into validated configurations, or into a list of problems to send back for repair.

Nothing is dropped or defaulted: a reply is accepted only when it holds exactly the asked-for number of environments
and every one validates. Purposes are free text, kept verbatim and never parsed, so instructions injected there
cannot change a configuration.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Callable

MAX_REPLY_CHARS = 100_000     # 4 full Crafter configs are about 4k characters; far beyond that is runaway output
MAX_PURPOSE_CHARS = 2_000
MAX_DEPTH = 8                 # {"environments": [{"config": {section: {name: value}}}]} is depth 4
MAX_PROBLEM_CHARS = 300       # keep echoed junk short in repair prompts and error messages
MAX_PROBLEMS = 40
MAX_SCAN_STARTS = 50          # brace positions tried when looking for JSON inside prose
MAX_TARGETS = 3               # achievements an environment may name as its targets (llm.targets)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.S)


@dataclasses.dataclass(frozen=True)
class ParsedReply:
    configs: tuple = ()
    purposes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    source: str = ""          # where the JSON came from: "whole", "fenced" or "embedded"
    analysis: str = ""        # the model's reasoning before its design (optional; kept, never parsed)
    targets: tuple[tuple[str, ...], ...] = ()  # per environment, the achievements it says it trains (() if none)

    @property
    def ok(self) -> bool:
        return not self.problems


def environment_entry(purpose: str, config: dict, targets=()) -> dict:
    """One environment as the reply format holds it (a design sent back to the model, a run's
    environments/cycle_<c>.json): "targets" only where the designer named some."""
    return {**({"targets": list(targets)} if targets else {}), "purpose": purpose, "config": config}


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise _Duplicate(f"duplicate key {dup[0]!r}")
    return dict(pairs)


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)


def _clip(message: str) -> str:
    return message if len(message) <= MAX_PROBLEM_CHARS else message[:MAX_PROBLEM_CHARS - 15] + " ...(truncated)"


def _depth(value: Any) -> int:
    """Nesting depth, iteratively so hostile input cannot exhaust the stack."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                return d
            stack.extend((v, d + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _looks_like_reply(value: Any) -> bool:
    if isinstance(value, dict):
        return "environments" in value
    # A bare list of environment objects; a list of numbers from inside a truncated reply is not one.
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, dict) and ("config" in v or "purpose" in v) for v in value)


def extract_json(text: str) -> tuple[Any, str, list[str]]:
    """Find the reply's JSON: the whole text, else a fenced block, else the first JSON value embedded in prose."""
    stripped = text.strip().lstrip("\ufeff")
    errors: list[str] = []

    def attempt(candidate: str, source: str):
        try:
            return _loads(candidate)
        except RecursionError:
            errors.append(f"the {source} JSON is nested too deeply")
        except (ValueError, _Duplicate) as e:
            errors.append(f"the {source} JSON is malformed: {e}")
        return None

    if stripped[:1] in "{[" and stripped:
        value = attempt(stripped, "reply's")
        if value is not None:
            return value, "whole", []
    for block in _FENCE.findall(text):
        value = attempt(block.strip(), "fenced")
        if _looks_like_reply(value):
            return value, "fenced", []
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    for start in [m.start() for m in re.finditer(r"[{\[]", text)][:MAX_SCAN_STARTS]:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if _looks_like_reply(value):
            return value, "embedded", []
    if not errors:
        errors.append("the reply holds no JSON object with an \"environments\" list")
    return None, "", errors[:1]


def parse_reply(text: str, config_cls, n: int, finish_reason: str | None = None,
                check: Callable[[Any, str], list[str]] | None = None,
                achievements: tuple[str, ...] = ()) -> ParsedReply:
    """`check(config, where)`: optional extra problems of a validated config (see EnvSpec.check). An environment's
    optional "targets" must name 1 to MAX_TARGETS of `achievements`, a name written twice counting once (llm.targets;
    a reply without them is read as before)."""
    problems = _parse(text, config_cls, n, finish_reason, check, achievements)
    if isinstance(problems, ParsedReply):
        return problems
    if len(problems) > MAX_PROBLEMS:
        problems = problems[:MAX_PROBLEMS] + [f"... and {len(problems) - MAX_PROBLEMS} more problems"]
    return ParsedReply(problems=tuple(_clip(p) for p in problems))


def _targets(value: Any, where: str, achievements: tuple[str, ...], problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_TARGETS or not all(isinstance(v, str) for v in value):
        problems.append(f"{where}.targets: expected a list of 1 to {MAX_TARGETS} names from the list, got "
                        f"{_kind(value)}")
        return ()
    unknown = [v for v in value if v not in achievements]
    if unknown:
        problems.append(f"{where}.targets: {', '.join(map(repr, unknown))} not in the list; allowed: "
                        f"{', '.join(achievements)}")
    return tuple(dict.fromkeys(value))  # a name written twice is the same target (small models repeat one)


def _parse(text: str, config_cls, n: int, finish_reason: str | None, check,
           achievements: tuple[str, ...] = ()) -> ParsedReply | list[str]:
    if not isinstance(text, str) or not text.strip():
        return ["the reply is empty"]
    if len(text) > MAX_REPLY_CHARS:
        return [f"the reply is {len(text)} characters long (the limit is {MAX_REPLY_CHARS}); "
                f"answer with the JSON object only and keep each purpose short"]
    data, source, errors = extract_json(text)
    if data is None:
        if finish_reason == "length":
            errors.append("the reply was cut off at the token limit; keep each purpose to one or two sentences")
        return errors
    if _depth(data) > MAX_DEPTH:
        return [f"the JSON is nested more than {MAX_DEPTH} levels deep; a configuration is "
                f"{{section: {{setting: value}}}}"]

    problems: list[str] = []
    analysis = ""
    if isinstance(data, list):  # a bare list of environments is the same answer without its wrapper
        envs = data
    elif isinstance(data, dict):
        problems += [f"{key}: unknown top-level key; the reply holds only \"analysis\" and \"environments\""
                     for key in data if key not in ("analysis", "environments")]
        analysis = data.get("analysis", "")
        if not isinstance(analysis, str):
            problems.append(f"analysis: expected a string, got {_kind(analysis)}")
        envs = data.get("environments")
    else:
        return [f"expected a JSON object with an \"environments\" list, got {type(data).__name__}"]
    if not isinstance(envs, list):
        return problems + [f"environments: expected a list of {n} environments, got {type(envs).__name__}"]
    if len(envs) != n:
        problems.append(f"environments: expected exactly {n} environments, got {len(envs)}")

    configs, purposes, targets = [], [], []
    for i, env in enumerate(envs):
        where = f"environments[{i}]"
        if not isinstance(env, dict):
            problems.append(f"{where}: expected an object with \"purpose\" and \"config\", got {type(env).__name__}")
            continue
        keys = ("targets", "purpose", "config") if achievements else ("purpose", "config")
        problems += [f"{where}.{key}: unknown key; an environment holds only {', '.join(map(json.dumps, keys))}"
                     for key in env if key not in keys]
        aims = _targets(env.get("targets"), where, achievements, problems) if achievements else ()
        purpose = env.get("purpose")
        if not isinstance(purpose, str) or not purpose.strip():
            problems.append(f"{where}.purpose: expected a non-empty string, got {_kind(purpose)}")
        elif len(purpose) > MAX_PURPOSE_CHARS:
            problems.append(f"{where}.purpose: {len(purpose)} characters; keep it under {MAX_PURPOSE_CHARS}")
        if "config" not in env:
            problems.append(f"{where}.config: missing")
            continue
        config_problems = config_cls.collect_problems(env["config"], where=f"{where}.config")
        if config_problems:
            problems += config_problems
            continue
        config = config_cls.from_dict(env["config"], where=f"{where}.config")
        extra = check(config, f"{where}.config") if check else []
        if extra:
            problems += extra
            continue
        configs.append(config)
        purposes.append(purpose.strip() if isinstance(purpose, str) else "")
        targets.append(aims)
    if problems:
        return problems
    return ParsedReply(configs=tuple(configs), purposes=tuple(purposes), source=source,
                       analysis=analysis.strip()[:MAX_PURPOSE_CHARS], targets=tuple(targets))


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {value!r}"
