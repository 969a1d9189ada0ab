"""Bad input, fuzzed: property tests (hypothesis) of every parser of outside input.

The run configuration (`from_mapping`, `apply_overrides` / `--set`, `load_yaml`, `load_run_config`, with the nested
PPO and LLM settings), the game configurations' validators (`CrafterConfig` / `HeistConfig.from_dict`,
`read_config_file`) and the designer's reply parser (`parse_reply`). The property, for ANY input: the parser either
returns a valid object that holds every value given, or reports the project's error (a `ConfigError`, or a
`ParsedReply` whose `.ok` is False) with problems that name the path of every wrong key. Never another exception,
never a bad value silently dropped or defaulted.

The strategies mix values drawn from the declared field types (`Literal` choices, integer ranges, ...) with wrong
ones, and each test counts its outcomes and asserts that both acceptance and rejection happened, so that a parser
which rejected (or accepted) everything would fail. The expected outcome is computed by an oracle written here from
the documented rules, independently of the parser's code. Examples are fixed (`derandomize=True`) so CI is
reproducible; `@example`s keep the bugs these tests found (see the commit that added this file).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import json
import math
import re
import tempfile
import types
import typing
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st

from envgen_jax import games
from envgen_jax.config_io import apply_overrides, from_mapping, load_yaml, parse_yaml, to_mapping
from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.envs.heist.config import KEY_COLOURS, MAZE_DIMS, RANDOM, HeistConfig
from envgen_jax.games import read_config_file
from envgen_jax.llm.reply import MAX_DEPTH, MAX_PROBLEM_CHARS, MAX_PROBLEMS, MAX_PURPOSE_CHARS, ParsedReply, parse_reply
from envgen_jax.llm.settings import LLMSettings
from envgen_jax.run_config import RunConfig, load_run_config
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.config import PPOAlgorithm

ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])
SMALL = settings(FUZZ, max_examples=50)
SCRATCH = Path(tempfile.mkdtemp(prefix="envgen_fuzz_"))  # hypothesis cannot share pytest's function-scoped tmp_path
NoneType = type(None)


def both_outcomes(counts: collections.Counter, *names: str) -> None:
    """The run exercised every branch named (e.g. 'accepted' and 'rejected'): a property that only ever saw one
    branch proves little."""
    missing = [n for n in names if not counts[n]]
    assert not missing, f"never {missing} in {dict(counts)}: the strategies no longer reach that branch"


def named(problems, path: str) -> bool:
    """Some problem names `path` the way every message does: 'path: ...' (or 'path / other: ...' for a rule of two
    settings, or 'path[i]: ...' for an item of a list)."""
    return any(p.startswith((f"{path}:", f"{path} /", f"{path}[")) or f" / {path}:" in p for p in problems)


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN and the type kept (1 is not 1.0 is not True)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


# -- the rules of the run configuration, restated as an oracle ----------------------------------------------------

def hints(cls) -> dict[str, Any]:
    types_ = typing.get_type_hints(cls)
    return {f.name: types_[f.name] for f in dataclasses.fields(cls) if f.init}


def is_union(tp) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def integral(v) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and math.isfinite(v) and v == int(v))


def accepts(tp, v) -> bool:
    """Whether the parser must take value `v` for a field typed `tp` (the type alone; `__post_init__` rules aside)."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return any(type(v) is type(c) and v == c for c in typing.get_args(tp))
    if is_union(tp):
        return any(v is None if a is NoneType else accepts(a, v) for a in typing.get_args(tp))
    if origin is tuple:
        return isinstance(v, (list, tuple)) and all(accepts(typing.get_args(tp)[0], x) for x in v)
    if tp is bool:
        return isinstance(v, bool)
    if tp is int:
        return integral(v)
    if tp is float:  # any number but a boolean or NaN (NaN passes every `< 0` check, so it is refused)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        try:
            return not math.isnan(float(v))
        except OverflowError:
            return False
    if tp is str:
        return isinstance(v, str)
    raise AssertionError(f"no oracle for {tp}")


def coerced(tp, v):
    """The value an accepted `v` must have in the built object."""
    if is_union(tp):
        return None if v is None else coerced(next(a for a in typing.get_args(tp) if a is not NoneType), v)
    if typing.get_origin(tp) is tuple:
        return tuple(coerced(typing.get_args(tp)[0], x) for x in v)
    if tp is int:
        return int(v)
    if tp is float:
        return float(v)
    return v


def conforms(obj) -> list[str]:
    """Fields of a built (nested) dataclass whose value is not of its declared type, exactly (an int field holds an
    int, a float field a float, a tuple field a tuple)."""
    bad = []
    for name, tp in hints(type(obj)).items():
        v = getattr(obj, name)
        if dataclasses.is_dataclass(tp):
            bad += [f"{name}.{b}" for b in conforms(v)]
        elif not _strict(tp, v):
            bad.append(f"{name}={v!r}")
    return bad


def _strict(tp, v) -> bool:
    if is_union(tp):
        return any(v is None if a is NoneType else _strict(a, v) for a in typing.get_args(tp))
    if typing.get_origin(tp) is tuple:
        return isinstance(v, tuple) and all(_strict(typing.get_args(tp)[0], x) for x in v)
    if tp in (int, float, bool, str):
        return type(v) is tp
    return accepts(tp, v)


def leaves(cls, prefix: str = "") -> dict[str, Any]:
    """Every setting's dotted path -> its type (sections recursed into)."""
    out = {}
    for name, tp in hints(cls).items():
        path = f"{prefix}{name}"
        if dataclasses.is_dataclass(tp):
            out.update(leaves(tp, f"{path}."))
        else:
            out[path] = tp
    return out


def sections(cls, prefix: str = "") -> dict[str, type]:
    out = {prefix.rstrip("."): cls}
    for name, tp in hints(cls).items():
        if dataclasses.is_dataclass(tp):
            out.update(sections(tp, f"{prefix}{name}."))
    return out


RUN_LEAVES = leaves(RunConfig)
RUN_SECTIONS = sections(RunConfig)
# `game_options` holds the options of the game the run names (`env`; Crafter has none, Heist a `mode`): its type
# depends on that setting, so the strategies draw it for the env they drew, and each game's option paths are known.
GAME_OPTION_PATHS = {f"game_options.{f.name}": games.get(env).options_cls
                     for env in games.NAMES for f in dataclasses.fields(games.get(env).options_cls)}
RUN_PATHS = set(RUN_LEAVES) | set(RUN_SECTIONS) | set(GAME_OPTION_PATHS) - {""}


def game_options_type(data: dict) -> type:
    """The options class a run configuration mapping's `game_options` is read as: its env's (the default env,
    crafter, when none is given), or no options for a name that is no game."""
    env = data.get("env", "crafter")
    return games.get(env).options_cls if isinstance(env, str) and env in games.NAMES else games.GameOptions


def lookup(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


# -- strategies: values right and wrong for a type ----------------------------------------------------------------

TEXT = st.text(max_size=8)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
JSON_LIKE = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                         max_leaves=6)
JUNK_MAPPING = JSON_LIKE.filter(lambda v: v is not None and not isinstance(v, dict))  # anything but a mapping
# Strings a --set value or a YAML file may hold: plain words, numbers and YAML's own odd corners (tags, anchors,
# sexagesimal and date-like numbers, flow collections), so the YAML reader's every failure is reached.
YAML_BITS = ["2001-13-45", "2001-12-14", "!!float abc", "!!int x", "!!timestamp x", "!!bool maybe", "!!binary ?",
             "!!python/object:os.system", "!!set {a}", "&a [*a]", "*nope", "[", "]", "{", "}", ": ", "- ", ", ", "\n",
             "  ", "'", '"', "? ", "<<: ", ".nan", ".inf", "1_0", "0x1F", "12:30", "1e3", "1.5e+3", "---", "...", "#",
             "|", ">", "\t", "%YAML 1.1\n", "null", "true", "no", "~", "8", "-1", "0.5", "crafter", "seed", "ppo",
             "\x00", "\ufeff", "\x85", "é"]
YAMLISH = st.lists(st.sampled_from(YAML_BITS) | st.text(max_size=4), max_size=8).map("".join)

INT_GOOD = st.sampled_from([0, 1, 2, 4, 8, 16, 64, 512, 1.0, 8.0, 64.0]) | st.integers(-2, 10**6)
FLOAT_GOOD = (st.sampled_from([0.0, 0.5, 0.99, 2e-4, 1, 5, 1e-5, math.inf])
              | st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.integers(-10, 10**6))
STR_GOOD = st.sampled_from(["crafter", "heist", "envgen", "ppo", "random", "smollm2-135m", "qwen2.5-coder-1.5b",
                            "", "runs/x.jsonl"]) | TEXT


def good_value(tp) -> st.SearchStrategy:
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(tp))
    if is_union(tp):
        return st.none() | good_value(next(a for a in typing.get_args(tp) if a is not NoneType))
    if origin is tuple:
        return st.lists(good_value(typing.get_args(tp)[0]), max_size=4) | st.lists(
            st.sampled_from([8, 16, 32]), min_size=1, max_size=3).map(tuple)
    return {bool: st.booleans(), int: INT_GOOD, float: FLOAT_GOOD, str: STR_GOOD}[tp]


def near_misses(tp) -> st.SearchStrategy:
    """Wrong values a person or a model plausibly writes for type `tp`."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        words = typing.get_args(tp)
        return st.sampled_from([w.upper() for w in words] + [w + "s" for w in words] + [" " + words[0], 0, True])
    if is_union(tp):
        return near_misses(next(a for a in typing.get_args(tp) if a is not NoneType))
    if origin is tuple:
        return st.sampled_from(["16,32", 16, [1.5], ["a"], {"a": 1}, None, [True]])
    return {
        bool: st.sampled_from([0, 1, "true", "yes", None, 1.0, []]),
        int: st.sampled_from([2.5, "8", True, False, None, math.nan, math.inf, -math.inf, [8], {"n": 8}, "1e3"]),
        float: st.sampled_from(["0.1", True, None, math.nan, [0.1], {}, "nan"]),
        str: st.sampled_from([1, 0.5, None, True, ["a"], {"a": "b"}]),
    }[tp]


def bad_value(tp) -> st.SearchStrategy:
    return (near_misses(tp) | JSON_LIKE).filter(lambda v: not accepts(tp, v))


def unknown_key(names) -> st.SearchStrategy:
    near = [n + "s" for n in names] + [n.upper() for n in names] + [n.replace("_", "-") for n in names if "_" in n]
    near_names = st.sampled_from(near) if near else st.nothing()  # a section with no settings: any key is unknown
    return (near_names | TEXT | st.integers(-3, 3) | st.none() | st.booleans()).filter(
        lambda k: k not in names)


class Given(NamedTuple):
    good: list            # (path, type, value) of every value the parser must keep
    bad: list             # paths the parser must name


@st.composite
def section_data(draw, cls, path: str = "", size: int = 4):
    """A mapping for dataclass `cls` mixing right and wrong values, and what the parser must make of it."""
    fields = hints(cls)
    names = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=size)) if fields else []
    if cls is RunConfig:  # game_options after env, whose game it follows (the mapping's order is kept)
        order = sorted(names, key=lambda n: n == "game_options")
        data = {name: None for name in names}
    else:
        order, data = names, {}
    given = Given([], [])
    for name in order:
        tp, here = fields[name], f"{path}.{name}" if path else name
        if cls is RunConfig and name == "game_options":
            tp = game_options_type(data)  # env, if given, is drawn by now
        if dataclasses.is_dataclass(tp):
            kind = draw(st.sampled_from(["section", "section", "section", "null", "junk"]))
            if kind == "section":
                data[name], sub = draw(section_data(tp, here, size=3))
                given.good.extend(sub.good)
                given.bad.extend(sub.bad)
            elif kind == "null":  # YAML's `ppo:` with every line under it commented out: the defaults
                data[name] = None
            else:
                data[name] = draw(JUNK_MAPPING)
                given.bad.append(here)
            continue
        wrong = draw(st.integers(0, 4)) == 0
        value = draw(bad_value(tp) if wrong else good_value(tp))
        data[name] = value
        (given.good.append((here, tp, value)) if accepts(tp, value) else given.bad.append(here))
    if draw(st.integers(0, 5)) == 0:
        key = draw(unknown_key(fields))
        data[key] = draw(JSON_LIKE)
        given.bad.append(f"{path}.{key}" if path else str(key))
    return data, given


def check_outcome(build, given: Given, known_paths: set, counts: collections.Counter, what: str, root: str = ""):
    """Run `build()`: an accepted object holds every given value; a rejection names every wrong path; every
    problem names a setting (or a wrong key given); nothing else is raised."""
    note(f"must keep {given.good}; must name {given.bad}")
    try:
        obj = build()
    except ConfigError as e:
        problems = e.problems
        note(f"problems: {problems}")
        assert problems, "a ConfigError without problems"
        for path in given.bad:
            assert named(problems, path), f"{path!r} is wrong but no problem names it: {problems}"
        for p in problems:
            assert any(named([p], k) for k in known_paths | set(given.bad)), f"problem names no setting: {p!r}"
        counts["rejected"] += 1
        event(f"{what}: rejected")
        return None
    assert not given.bad, f"accepted although {given.bad} are wrong: {obj}"
    assert not conforms(obj), f"fields of the wrong type: {conforms(obj)}"
    for path, tp, value in given.good:
        kept = lookup(obj, path[len(root) + 1:] if root else path)
        assert same(kept, coerced(tp, value)), f"{path}: given {value!r}, holds {kept!r}"
    counts["accepted"] += 1
    event(f"{what}: accepted")
    return obj


# -- 1. run configuration: mapping, --set overrides, YAML files ---------------------------------------------------

# Regressions, per target: (data, what the parser must make of it).
MAPPING_EXAMPLES = {
    "run": [([], Given([], ["config"])),                                # bug: from_mapping returned None
            ({"seed": 2.5, "ppo": {"lr": math.nan}}, Given([], ["seed", "ppo.lr"])),
            # game options: the game's own, checked by it (Crafter has none)
            ({"env": "heist", "game_options": {"mode": "easy"}}, Given([("game_options.mode", str, "easy")], [])),
            ({"env": "heist", "game_options": {"mode": "medium"}}, Given([], ["game_options.mode"])),
            ({"game_options": {"mode": "easy"}}, Given([], ["game_options.mode"])),
            ({"env": "crafter", "game_options": None}, Given([], []))],
    "ppo": [({"lr": 10**400}, Given([], ["ppo.lr"])),                  # bug: OverflowError
            ({"gamma": math.nan}, Given([], ["ppo.gamma"]))],            # bug: NaN passed every range check
    "llm": [({"temperature": math.nan}, Given([], ["llm.temperature"])),  # bug: NaN passed `< 0`
            ("xy", Given([], ["llm"])),                                  # bug: ValueError from dict("xy")
            (5, Given([], ["llm"])),                                     # bug: TypeError from dict(5)
            ([["backend", "openai"], ["model", "m"]], Given([], ["llm"]))],  # bug: pairs taken as a mapping
}


@pytest.mark.parametrize("target", ["run", "ppo", "llm"])
def test_run_config_mapping_either_builds_what_was_given_or_names_every_wrong_key(target):
    cls, path = {"run": (RunConfig, ""), "ppo": (PPOAlgorithm, "ppo"), "llm": (LLMSettings, "llm")}[target]
    build = {"run": lambda d: from_mapping(RunConfig, d), "ppo": lambda d: from_mapping(PPOAlgorithm, d, "ppo"),
             "llm": LLMSettings.from_dict}[target]
    known = {p for p in RUN_PATHS if p == path or p.startswith(f"{path}.")} if path else RUN_PATHS
    counts = collections.Counter()

    def prop(case):
        data, given_ = case
        obj = check_outcome(lambda: build(data), given_, known, counts, target, path)
        if obj is not None:  # an accepted configuration reads back the same
            assert from_mapping(cls, to_mapping(obj), path) == obj

    for case in MAPPING_EXAMPLES[target]:
        prop = example(case=case)(prop)
    junk = JUNK_MAPPING.map(lambda v: (v, Given([], [path or "config"])))
    FUZZ(given(case=st.one_of(section_data(cls, path, size=5), section_data(cls, path, size=5), junk))(prop))()
    both_outcomes(counts, "accepted", "rejected")


# Settings where a negative number means something (seeds).
NEGATIVE_OK = {"seed", "llm.seed", "llm.transport.seed"}


@pytest.mark.parametrize("path", sorted(p for p, tp in RUN_LEAVES.items()
                                        if accepts(tp, -1) and p not in NEGATIVE_OK))
def test_negative_counts_and_amounts_are_refused_by_name(path):
    # Regression: eval.num_envs=-1 (and 0), eval.max_steps=0, output.checkpoint_minutes=-1 and ppo.gamma=-1 or
    # ppo.lr=-1 were accepted, and the run failed (or misbehaved) only after compiling.
    with pytest.raises(ConfigError) as err:
        load_run_config(None, [f"{path}=-1"])
    assert named(err.value.problems, path), err.value.problems


def render(value) -> str:
    """YAML text that reads back as `value` (the `--set` value syntax)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, allow_unicode=True)
    return text[:-len("\n...\n")] if text.endswith("\n...\n") else text.rstrip("\n")


class Slot(NamedTuple):
    kind: str        # good | bad | text | through | unknown | malformed
    path: str        # the setting path it targets ("" for malformed)
    item: str        # the --set string
    value: Any = None


@st.composite
def set_slot(draw, path: str):
    tp = RUN_LEAVES[path]
    kind = draw(st.sampled_from(["good", "good", "good", "bad", "text", "through"]))
    if kind in ("good", "bad"):
        value = draw(good_value(tp) if kind == "good" else bad_value(tp))
        value = list(value) if isinstance(value, tuple) else value  # YAML has lists
        raw = render(value)
        try:  # only values whose YAML text reads back as themselves (YAML has a few lossy corners)
            ok = same(parse_yaml(raw), value)  # the reader's own: '1e3' is a number
        except Exception:
            ok = False
        if not ok:
            return Slot("text", path, f"{path}={raw}")
        return Slot("good" if accepts(tp, value) else "bad", path, f"{path}={raw}", value)
    if kind == "text":
        return Slot("text", path, f"{path}={draw(YAMLISH)}")
    name = draw(st.sampled_from(["x", "value", "a.b"]))
    return Slot("through", path, f"{path}.{name}={draw(st.sampled_from(['1', 'true', 'x']))}")


MALFORMED = st.sampled_from(["seeds", "", "=3", " =3", "ppo..width=8", ".seed=1", "ppo.=1", "..=1", "ppo. .lr=1"]) | (
    TEXT.filter(lambda s: "=" not in s))


@st.composite
def override_case(draw):
    paths = draw(st.lists(st.sampled_from(sorted(RUN_LEAVES)), unique=True, max_size=5))
    slots = [draw(set_slot(p)) for p in paths]
    for _ in range(draw(st.integers(0, 1))):
        section = draw(st.sampled_from(sorted(RUN_SECTIONS)))
        names = ({p.split(".", 1)[1] for p in GAME_OPTION_PATHS} if section == "game_options"  # no game has it
                 else hints(RUN_SECTIONS[section]))
        key = draw(unknown_key(names).filter(
            lambda k: isinstance(k, str) and k.strip() == k and k and not set(k) & set(".=")))
        path = f"{section}.{key}" if section else key
        slots.append(Slot("unknown", path, f"{path}={render(draw(JSON_LIKE))}"))
    if draw(st.integers(0, 6)) == 0:
        slots.append(Slot("malformed", "", draw(MALFORMED)))
    slots = draw(st.permutations(slots))
    base = draw(st.sampled_from([None, None, "smoke.yaml", "heist_envgen.yaml", "crafter_ppo.yaml"]))
    return base, slots


@FUZZ
@given(case=override_case())
@example(case=(None, [Slot("text", "seed", "seed=2001-13-45")])).via("bug: a date-like value raised ValueError")
@example(case=(None, [Slot("text", "seed", "seed=!!float abc")])).via("bug: a YAML tag raised ValueError")
@example(case=(None, [Slot("text", "seed", "seed=!!timestamp x")])).via("bug: a YAML tag raised TypeError")
@example(case=(None, [Slot("text", "llm.model", "llm.model=!!bool maybe")])).via("bug: a YAML tag raised KeyError")
@example(case=(None, [Slot("text", "seed", "seed=" + "1" * 5000)])).via("bug: a long integer raised ValueError")
@example(case=(None, [Slot("text", "ppo.lr", "ppo.lr=" + "1" * 400)])).via("bug: OverflowError")
@example(case=(None, [Slot("text", "seed", "seed=" + "[" * 3000 + "]" * 3000)])).via("bug: RecursionError")
@example(case=(None, [Slot("bad", "llm.temperature", "llm.temperature=.nan", math.nan)])).via("bug: NaN accepted")
@example(case=(None, [Slot("malformed", "", ".=3")])).via("bug: an empty key named no setting")
@example(case=(None, [Slot("malformed", "", "ppo..width=8")])).via("bug: an empty key part named 'ppo.'")
@example(case=("heist_envgen.yaml", [Slot("good", "env", "env=crafter", "crafter")])).via("Heist's options for Crafter")
@example(case=("heist_envgen.yaml", [Slot("unknown", "game_options.size", "game_options.size=9")])).via("no option")
def test_set_overrides_either_apply_every_value_or_name_every_wrong_key(case):
    base, slots = case
    items = [s.item for s in slots]
    note(f"--set {items}")
    counts = _OVERRIDE_COUNTS
    malformed = [s.item for s in slots if s.kind == "malformed"]
    misfits = game_option_misfits(base, slots)
    try:
        cfg = load_run_config(ROOT / "configs" / base if base else None, items)
    except ConfigError as e:  # every problem at once: wrong --set strings with wrong settings
        problems = e.problems
        note(f"problems: {problems}")
        assert problems
        for item in malformed:
            assert any(p.startswith(f"--set {item!r}:") for p in problems), (item, problems)
        for s in slots:
            if s.kind in ("bad", "through", "unknown"):
                assert named(problems, s.path), f"{s.item!r} is wrong but no problem names {s.path!r}: {problems}"
        for path in misfits or ():
            assert named(problems, path), f"the file's {path} is not an option of the game chosen: {problems}"
        given_paths = {s.path for s in slots}
        for p in problems:
            assert p.startswith("--set ") or any(named([p], k) for k in RUN_PATHS | given_paths), (
                f"problem names no setting: {p!r}")
        counts["malformed" if malformed else "rejected"] += 1
        event("--set: rejected")
        return
    assert not malformed and not any(s.kind in ("bad", "through", "unknown") for s in slots), slots
    assert not misfits, misfits
    assert not conforms(cfg), conforms(cfg)
    for s in slots:
        if s.kind == "good":
            kept = lookup(cfg, s.path)
            assert same(kept, coerced(RUN_LEAVES[s.path], s.value)), f"--set {s.item!r} left {s.path} = {kept!r}"
    counts["accepted"] += 1
    event("--set: accepted")


def game_option_misfits(base: str | None, slots) -> list[str] | None:
    """The base file's game options that the game the run ends up with does not declare (e.g. heist_envgen.yaml's
    game_options.mode with --set env=crafter): each must be named. None when the game is not known in advance."""
    data = load_yaml(ROOT / "configs" / base) if base else {}
    env = data.get("env", "crafter")
    for s in slots:
        if s.path == "env":
            if s.kind != "good":
                return None  # a wrong env is named anyway; text may read as any name
            env = s.value
    if not (isinstance(env, str) and env in games.NAMES):
        return None
    declared = {f.name for f in dataclasses.fields(games.get(env).options_cls)}
    return [f"game_options.{key}" for key in data.get("game_options") or {} if key not in declared]


_OVERRIDE_COUNTS: collections.Counter = collections.Counter()


def test_set_overrides_reach_both_outcomes():
    # Runs after the property above in this file (pytest keeps file order); on its own it runs the property first.
    if not _OVERRIDE_COUNTS:
        test_set_overrides_either_apply_every_value_or_name_every_wrong_key()
    both_outcomes(_OVERRIDE_COUNTS, "accepted", "rejected", "malformed")


@SMALL
@given(path=st.sampled_from(sorted(RUN_LEAVES)), data=st.data())
def test_later_set_wins_and_never_digs_silently_through_a_value(path, data):
    tp = RUN_LEAVES[path]
    first, second = as_lists(data.draw(good_value(tp))), as_lists(data.draw(good_value(tp)))
    raw1, raw2 = render(first), render(second)
    if not (same(parse_yaml(raw1), first) and same(parse_yaml(raw2), second)):
        return
    try:
        cfg = load_run_config(None, [f"{path}={raw1}", f"{path}={raw2}"])
    except ConfigError as e:  # the value itself broke a rule of its section: named
        assert all(any(named([p], k) for k in RUN_PATHS) for p in e.problems), e.problems
    else:
        assert same(lookup(cfg, path), coerced(tp, second))
    # A section set to a value, then a setting inside it: the value is wrong and must be reported, not replaced.
    section = path.rpartition(".")[0]
    if section:
        junk = data.draw(st.sampled_from(["3", "true", "[1, 2]", "x"]))
        with pytest.raises(ConfigError) as err:
            load_run_config(None, [f"{section}={junk}", f"{path}={raw2}"])
        assert named(err.value.problems, section), err.value.problems


def test_set_through_a_wrong_section_in_the_file_names_it(tmp_path):
    # Regression: `ppo: 3` in the file and `--set ppo.width=8` built a valid run with every other PPO value default.
    path = tmp_path / "run.yaml"
    path.write_text("ppo: 3\n")
    with pytest.raises(ConfigError) as err:
        load_run_config(path, ["ppo.width=8"])
    assert named(err.value.problems, "ppo")
    with pytest.raises(ConfigError) as err:
        load_run_config(None, ["ppo=3", "ppo.width=8"])
    assert named(err.value.problems, "ppo")
    assert load_run_config(None, ["ppo=null", "ppo.width=8"]).network.mlp.width == 8  # an empty section is no value


@SMALL
@given(data=section_data(RunConfig, size=6))
def test_apply_overrides_never_changes_its_input(data):
    data = data[0]
    before = copy.deepcopy(data)
    try:
        apply_overrides(data, ["ppo.width=8", "llm.model=x", "a.b.c=1", "seeds=2"])
    except ConfigError:
        pass
    assert same(data, before)


def _write(name: str, content: str | bytes) -> Path:
    path = SCRATCH / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


_YAML_COUNTS: collections.Counter = collections.Counter()


@FUZZ
@given(content=YAMLISH | st.binary(max_size=20) | st.text(max_size=30))
@example(content="seed: 2001-13-45\n").via("bug: a date-like value raised ValueError")
@example(content="seed: !!timestamp x\n").via("bug: TypeError")
@example(content="seed: !!bool maybe\n").via("bug: KeyError")
@example(content="seed: " + "1" * 5000 + "\n").via("bug: a long integer raised ValueError")
@example(content="seed: " + "[" * 3000).via("bug: RecursionError")
@example(content=b"\xff\xfe\x00seed: 1").via("bug: bytes that are not UTF-8 raised UnicodeDecodeError")
def test_run_config_file_is_read_or_refused_by_name(content):
    path = _write("fuzz.yaml", content)
    try:
        data = load_yaml(path)
    except ConfigError as e:
        assert e.problems and all(p.startswith(f"{path}:") for p in e.problems), e.problems
        _YAML_COUNTS["refused"] += 1
        return
    assert isinstance(data, dict)
    try:
        cfg = load_run_config(path)
    except ConfigError as e:
        assert e.problems
        _YAML_COUNTS["rejected"] += 1
    else:
        assert isinstance(cfg, RunConfig) and not conforms(cfg)
        _YAML_COUNTS["accepted"] += 1


def as_lists(value):
    """`value` with its tuples as lists (as YAML and JSON read them back)."""
    if isinstance(value, (list, tuple)):
        return [as_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: as_lists(v) for k, v in value.items()}
    return value


_YAML_MAPPING_COUNTS: collections.Counter = collections.Counter()


@SMALL
@given(case=section_data(RunConfig, size=6))
def test_run_config_file_holds_every_value_given_or_names_every_wrong_key(case):
    # The same oracle as for a mapping, through a YAML file written from it.
    data, given_ = case
    text = yaml.safe_dump(data, allow_unicode=True)
    # PyYAML's writer garbles a few odd characters ('\x85') and writes '1e3' plain, which the reader takes for a number
    if not same(parse_yaml(text), as_lists(data)):
        event("yaml file: not written faithfully by PyYAML")
        return
    path = _write("mapping.yaml", text)
    check_outcome(lambda: load_run_config(path), given_, RUN_PATHS, _YAML_MAPPING_COUNTS, "yaml file")


def test_run_config_files_reach_every_outcome():
    if not _YAML_COUNTS:
        test_run_config_file_is_read_or_refused_by_name()
    if not _YAML_MAPPING_COUNTS:
        test_run_config_file_holds_every_value_given_or_names_every_wrong_key()
    both_outcomes(_YAML_COUNTS, "accepted", "rejected", "refused")
    both_outcomes(_YAML_MAPPING_COUNTS, "accepted", "rejected")


@SMALL
@given(data=section_data(RunConfig, size=6).filter(lambda d: not d[1].bad and d[0]), pick=st.data())
def test_duplicate_keys_in_a_yaml_file_are_refused(data, pick):
    # YAML's default is that the last of two equal keys wins, silently dropping the first (a second `ppo:` section
    # would reset every PPO value of the first). Every key of the file must count.
    mapping = data[0]
    key = pick.draw(st.sampled_from(sorted(mapping, key=str)))
    text = yaml.safe_dump(mapping, allow_unicode=True) + yaml.safe_dump({key: mapping[key]}, allow_unicode=True)
    path = _write("dup.yaml", text)
    with pytest.raises(ConfigError) as err:
        load_yaml(path)
    assert "duplicate key" in str(err.value) and repr(key) in str(err.value), err.value


def test_duplicate_keys_inside_a_section_are_refused(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("ppo:\n  width: 8\n  depth: 2\n  width: 16\n")
    with pytest.raises(ConfigError, match="duplicate key 'width'"):
        load_run_config(path)


def test_yaml_merge_keys_are_not_duplicates(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("base: &b {width: 8, depth: 2}\nppo:\n  <<: *b\n  width: 16\n")
    assert load_yaml(path)["ppo"] == {"width": 16, "depth": 2}
    # A merged mapping that itself overrides a merge, flattened (by the later merge) before it is built.
    path.write_text("a:\n  base: &b\n    <<: {width: 4}\n    width: 8\nppo:\n  <<: *b\n  depth: 2\n")
    assert load_yaml(path) == {"a": {"base": {"width": 8}}, "ppo": {"width": 8, "depth": 2}}


def test_unreadable_paths_are_config_errors(tmp_path):
    for path in (tmp_path, tmp_path / "missing.yaml"):
        with pytest.raises(ConfigError, match=re.escape(str(path))):
            load_yaml(path)
        with pytest.raises(ConfigError, match=re.escape(str(path))):
            read_config_file(path, "crafter")


# -- 2. game configurations ---------------------------------------------------------------------------------------

def normalise(word: str) -> str:
    return " ".join(word.replace("_", " ").replace("-", " ").split()).lower()


def setting_ok(s, v) -> bool:
    if s.kind is str:
        return isinstance(v, str) and normalise(v) in s.choices
    if s.kind is bool:
        return isinstance(v, bool)
    return integral(v) and s.minimum <= int(v) <= s.maximum


def canonical(s, v):
    return normalise(v) if s.kind is str else (int(v) if s.kind is int else v)


def spelled(word: str, how: str) -> str:
    return {"plain": word, "upper": word.upper(), "title": word.title(), "underscore": word.replace(" ", "_"),
            "dash": word.replace(" ", "-"), "spaced": f"  {word.replace(' ', '   ')} "}[how]


def setting_value(s, wrong: bool) -> st.SearchStrategy:
    if not wrong:
        if s.kind is str:
            return st.builds(spelled, st.sampled_from(s.choices),
                             st.sampled_from(["plain", "plain", "upper", "title", "underscore", "dash", "spaced"]))
        if s.kind is bool:
            return st.booleans()
        ints = st.integers(s.minimum, s.maximum)
        return ints | ints.map(float) | st.sampled_from(s.suggested or (s.default,))
    if s.kind is str:
        near = st.sampled_from([c + "s" for c in s.choices] + ["very  rare", "uncommon", "desert", "", 1, True])
    elif s.kind is bool:
        near = st.sampled_from([0, 1, "true", "false", None, "yes"])
    else:
        near = st.sampled_from([s.minimum - 1, s.maximum + 1, 2.5, "3", True, None, math.nan, math.inf, 10**30, [1]])
    return (near | JSON_LIKE).filter(lambda v: not setting_ok(s, v))


class GameCase(NamedTuple):
    data: Any
    good: list     # (setting, value given)
    bad: list      # paths (without the `where` prefix) that must be named; None: the whole configuration


@st.composite
def game_data(draw, cls, size: int = 4, clean: bool = False):
    """Designer JSON for `cls` mixing right and wrong values, sections and keys (`clean`: right values only)."""
    schema = cls.schema()
    by_section = {sec: [s for s in schema if s.section == sec] for sec in cls.sections()}
    top = 1 if clean else draw(st.integers(0, 14))
    if top == 0:
        return GameCase(draw(JUNK_MAPPING), [], [None])
    chosen = draw(st.lists(st.sampled_from(schema), unique_by=lambda s: s.path, max_size=size))
    data: dict = {}
    good, bad = [], []
    for s in chosen:
        value = draw(setting_value(s, wrong=not clean and draw(st.integers(0, 5)) == 0))
        data.setdefault(s.section, {})[s.name] = value
        (good.append((s, value)) if setting_ok(s, value) else bad.append(s.path))
    roll = 9 if clean else draw(st.integers(0, 9))
    if roll == 0:  # an unknown setting in a real section
        section = draw(st.sampled_from(sorted(by_section)))
        name = draw(unknown_key([s.name for s in by_section[section]]).filter(lambda k: isinstance(k, str)))
        data.setdefault(section, {})[name] = draw(JSON_LIKE)
        bad.append(f"{section}.{name}")
    elif roll == 1:  # an unknown section
        section = draw(unknown_key(list(by_section) + ["config", "purpose", "environments"]).filter(
            lambda k: isinstance(k, str)))
        data[section] = draw(JSON_LIKE)
        bad.append(section)
    elif roll == 2:  # a section that is not an object: everything in it is lost, so it is an error
        section = draw(st.sampled_from(sorted(by_section)))
        good = [(s, v) for s, v in good if s.section != section]
        bad = [p for p in bad if not (p or "").startswith(f"{section}.")] + [section]
        data[section] = draw(JUNK_MAPPING)
    return GameCase(data, good, bad)


def heist_rule_paths(case: GameCase, world_dim: int | None) -> tuple[list, list]:
    """Heist's cross-field rules over the good values (others at their defaults): (rule paths, fit paths)."""
    if not isinstance(case.data, dict):
        return [], []
    values = {f.name: f.default for f in dataclasses.fields(HeistConfig)}
    values.update({s.name: canonical(s, v) for s, v in case.good})
    rules = []
    if values["maze_dim"] != RANDOM and values["maze_dim"] not in MAZE_DIMS:
        rules.append("maze_settings.maze_dim")
    for i, colour in enumerate(KEY_COLOURS):
        if values[f"start_with_{colour}_key"] and values["num_keys"] != RANDOM and i >= values["num_keys"]:
            rules.append(f"start_settings.start_with_{colour}_key")
    fit = ["maze_settings.maze_dim"] if (world_dim is not None and values["maze_dim"] != RANDOM
                                         and values["maze_dim"] > world_dim) else []
    return rules, fit


def game_paths(cls) -> set:
    return {s.path for s in cls.schema()} | set(cls.sections())


def check_game_outcome(cls, case: GameCase, where: str, world_dim: int | None, counts):
    prefix = f"{where}." if where else ""
    rules, fit = heist_rule_paths(case, world_dim) if cls is HeistConfig else ([], [])
    must_name = [prefix + p if p is not None else (where or "configuration") for p in case.bad + rules]
    note(f"must name {must_name}; fit {fit}")
    kwargs = {"world_dim": world_dim} if world_dim is not None else {}
    try:
        cfg = cls.from_dict(case.data, where, **kwargs)
    except ConfigError as e:
        problems = e.problems
        note(f"problems: {problems}")
        assert problems and (must_name or fit), f"rejected a valid configuration: {problems}"
        for path in must_name if must_name else [prefix + p for p in fit]:
            assert named(problems, path), f"{path!r} is wrong but no problem names it: {problems}"
        allowed = {prefix + p for p in game_paths(cls)} | set(must_name) | {where or "configuration"}
        for p in problems:
            assert any(named([p], k) for k in allowed), f"problem names no setting: {p!r}"
        assert bool(cls.collect_problems(case.data, where)) == bool(must_name)
        counts["rejected"] += 1
        return None
    assert not must_name and not fit, f"accepted although {must_name + fit} are wrong: {cfg}"
    assert type(cfg) is cls and cls.collect_problems(case.data, where) == []
    for s, value in case.good:
        kept = getattr(cfg, s.name)
        assert type(kept) is s.kind and kept == canonical(s, value), f"{s.path}: given {value!r}, holds {kept!r}"
    given_names = {s.name for s, _ in case.good}
    for s in cls.schema():  # and nothing else changed
        if s.name not in given_names:
            assert getattr(cfg, s.name) == s.default, s.path
    assert cls.from_dict(cfg.to_dict()) == cfg and cls.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    counts["accepted"] += 1
    return cfg


@pytest.mark.parametrize("cls", [CrafterConfig, HeistConfig], ids=["crafter", "heist"])
def test_game_config_either_validates_what_was_given_or_names_every_wrong_key(cls):
    counts = collections.Counter()

    @FUZZ
    @given(case=game_data(cls, size=5), where=st.sampled_from(["", "", "environments[2].config"]),
           world_dim=st.sampled_from([None, None, 9, 13]))
    def prop(case, where, world_dim):
        check_game_outcome(cls, case, where, world_dim if cls is HeistConfig else None, counts)

    prop()
    both_outcomes(counts, "accepted", "rejected")


_FILE_COUNTS: collections.Counter = collections.Counter()


@st.composite
def config_file_case(draw):
    cls = draw(st.sampled_from([CrafterConfig, HeistConfig]))
    shape = draw(st.sampled_from(["single", "list", "wrapped", "wrapped"]))
    if shape == "single":
        case = draw(game_data(cls))
        if isinstance(case.data, list):  # a list is read as a list of configurations: not one wrong config
            case = case._replace(data=draw(SCALARS))
        return cls, case.data, [("", case)], []
    items, cases, extra = [], [], []
    for i in range(draw(st.integers(0, 3))):
        case = draw(game_data(cls, size=3))
        here = f"environments[{i}]" if shape == "wrapped" else f"[{i}]"
        form = draw(st.sampled_from(["bare", "item", "item", "item+junk", "bad purpose"]))
        if form == "bare":
            items.append(case.data)
            cases.append((here, case))
            continue
        item = {"purpose": draw(TEXT), "config": case.data}
        if form == "item+junk":
            key = draw(st.sampled_from(["confg", "notes", "settings", "Config"]))
            item[key] = draw(JSON_LIKE)
            extra.append(f"{here}.{key}")
        elif form == "bad purpose":
            item["purpose"] = draw(JSON_LIKE.filter(lambda v: not isinstance(v, str)))
            extra.append(f"{here}.purpose")
        items.append(item)
        cases.append((f"{here}.config", case))
    if shape == "list":
        return cls, items, cases, extra
    data = {"environments": items}
    if draw(st.booleans()):
        data.update(env=cls.ENV_NAME, backend="local", model="smollm2-135m")  # what `llm generate` writes
    return cls, data, cases, extra


@FUZZ
@given(case=config_file_case())
@example(case=(CrafterConfig, {"environments": [{"purpose": "p", "config": {}, "confg": {"wood": 3}}]},
               [("environments[0].config", GameCase({}, [], []))], ["environments[0].confg"])).via(
    "bug: a misspelt key next to a config was silently ignored")
def test_config_file_either_reads_every_config_or_names_every_wrong_key(case):
    cls, data, cases, extra = case
    env = cls.ENV_NAME
    path = _write("configs.json", json.dumps(data))
    must_name = extra + [(f"{where}." if where else "") + p if p is not None else (where or "configuration")
                         for where, c in cases for p in c.bad + (heist_rule_paths(c, None)[0] if cls is HeistConfig
                                                                 else [])]
    note(f"must name {must_name}")
    try:
        configs = read_config_file(path, env)
    except ConfigError as e:
        problems = e.problems
        note(f"problems: {problems}")
        if not must_name:  # nothing wrong in it: the only refusal is a file without any configuration
            assert not cases and problems == [f"{path}: contains no configuration"], problems
            _FILE_COUNTS["empty"] += 1
            return
        for p in must_name:
            assert named(problems, p), f"{p!r} is wrong but no problem names it: {problems}"
        _FILE_COUNTS["rejected"] += 1
        return
    assert not must_name, f"accepted although {must_name} are wrong"
    assert len(configs) == len(cases) and all(type(c) is cls for c in configs)
    for cfg, (_, c) in zip(configs, cases):
        for s, value in c.good:
            assert getattr(cfg, s.name) == canonical(s, value)
    _FILE_COUNTS["accepted"] += 1


def test_config_files_reach_every_outcome():
    if not _FILE_COUNTS:
        test_config_file_either_reads_every_config_or_names_every_wrong_key()
    both_outcomes(_FILE_COUNTS, "accepted", "rejected", "empty")


@FUZZ
@given(content=st.binary(max_size=30) | st.text(max_size=40) | st.lists(
    st.sampled_from(['{"', '"}', '[', ']', '{', '}', ':', ',', '"environments"', '"config"', '"inventory_settings"',
                     '"wood"', '3', '1e400', 'NaN', '-Infinity', '"x"', 'null', 'true', ' ', '\n']),
    max_size=12).map("".join))
@example(content=b"\xff\xfe\x00[]").via("bug: UnicodeDecodeError")
@example(content="1" * 5000).via("bug: a long integer raised ValueError")
@example(content="[" * 100_000).via("bug: RecursionError")
def test_any_config_file_is_read_or_refused(content):
    path = _write("any.json", content)
    for env in ("crafter", "heist"):
        try:
            configs = read_config_file(path, env)
        except ConfigError as e:
            assert e.problems
        else:
            assert configs and all(type(c).ENV_NAME == env for c in configs)


def test_duplicate_json_keys_are_refused(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text('{"environments": [{"purpose": "p", "config": {"inventory_settings": {"wood": 3, "wood": 5}}}]}')
    with pytest.raises(ConfigError, match="duplicate key 'wood'"):
        read_config_file(path, "crafter")


def test_an_environments_file_with_targets_is_read_and_bad_targets_are_named(tmp_path):
    path = tmp_path / "cycle_1.json"  # as a run writes environments/cycle_<c>.json
    path.write_text(json.dumps({"environments": [
        {"targets": ["collect_wood"], "purpose": "p", "config": {"inventory_settings": {"wood": 3}}}]}))
    assert read_config_file(path, "crafter")[0].wood == 3
    path.write_text(json.dumps({"environments": [{"targets": "collect_wood", "config": {}},
                                                 {"aims": [], "config": {}}]}))
    with pytest.raises(ConfigError) as err:
        read_config_file(path, "crafter")
    assert err.value.problems == [
        "environments[0].targets: expected a list of achievement names, got 'collect_wood'",
        'environments[1].aims: unknown key; an environment holds only "targets", "purpose" and "config"']


# -- 3. the designer's reply --------------------------------------------------------------------------------------

FINITE_JSON_LIKE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)


def finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(map(finite, value.values()))
    if isinstance(value, list):
        return all(map(finite, value))
    return True


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


class ReplyCase(NamedTuple):
    cls: type
    n: int
    world_dim: int | None           # Heist: the spec's world-size check (EnvSpec.check), else None
    text: str
    expect: dict | None             # None: no exact expectation (garbled text); else the oracle's verdict


@st.composite
def reply_case(draw):
    cls = draw(st.sampled_from([CrafterConfig, HeistConfig]))
    n = draw(st.integers(1, 4))
    world_dim = draw(st.sampled_from([None, 9, 13])) if cls is HeistConfig else None
    clean = draw(st.integers(0, 2)) == 0  # a reply without a wrong value (it may still break a Heist rule)
    count = n if clean or draw(st.integers(0, 4)) else draw(st.integers(0, 5))
    envs, must_name, configs, purposes = [], [], [], []
    for i in range(count):
        where = f"environments[{i}]"
        case = draw(game_data(cls, size=3, clean=clean))
        form = "env" if clean else draw(st.sampled_from(
            ["env"] * 8 + ["not object", "no purpose", "blank purpose", "long purpose", "no config", "extra key"]))
        if form == "not object":
            envs.append(draw(JUNK_MAPPING))
            must_name.append(where)
            continue
        purpose = draw(st.text(min_size=1, max_size=20).filter(str.strip))
        env: dict = {"purpose": purpose, "config": case.data}
        if form == "no purpose":
            del env["purpose"]
        elif form == "blank purpose":
            env["purpose"] = draw(st.sampled_from(["", "   ", None, 3, ["p"]]))
        elif form == "long purpose":
            env["purpose"] = "p" * (MAX_PURPOSE_CHARS + 1)
        elif form == "no config":
            del env["config"]
        elif form == "extra key":
            extra = draw(st.sampled_from(["notes", "Config", "settings"]))
            env[extra] = draw(JSON_LIKE)
        envs.append(env)
        if form in ("no purpose", "blank purpose", "long purpose"):
            must_name.append(f"{where}.purpose")
        if form == "extra key":
            must_name.append(f"{where}.{extra}")
        if form == "no config":
            must_name.append(f"{where}.config")
            continue
        rules, fit = heist_rule_paths(case, world_dim) if cls is HeistConfig else ([], [])
        wrong = [f"{where}.config.{p}" if p is not None else f"{where}.config" for p in case.bad + rules]
        must_name += wrong or [f"{where}.config.{p}" for p in fit]
        if not wrong and not fit:
            configs.append(cls.from_dict(case.data))
            purposes.append(purpose.strip())
    data: Any = {"environments": envs}
    roll = draw(st.sampled_from([0, 3, 4])) if clean else draw(st.integers(0, 7))
    if roll == 0:
        data["analysis"] = draw(TEXT)
    elif roll == 1:
        data["analysis"] = draw(FINITE_JSON_LIKE.filter(lambda v: not isinstance(v, str)))
        must_name.append("analysis")
    elif roll == 2:
        key = draw(st.sampled_from(["notes", "environment", "design"]))
        data[key] = draw(FINITE_JSON_LIKE)
        must_name.append(key)
    elif roll == 3 and envs:
        data = envs  # the bare list of environments
    if count != n:
        must_name.append("environments")
    text = json.dumps(data, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 2])))
    nonfinite = not finite(data)  # NaN/Infinity are no JSON: the reply parser refuses them
    expect = {"ok": not must_name, "name": must_name, "configs": configs, "purposes": purposes,
              "deep": depth(data) > MAX_DEPTH, "nonfinite": nonfinite}
    return ReplyCase(cls, n, world_dim, text, expect)


def garble(text: str, how: str, cut: float, junk: str) -> str:
    at = int(len(text) * cut)
    return {"truncate": text[:at], "drop": text[:at] + text[at + len(junk) + 1:], "insert": text[:at] + junk + text[at:],
            "prose": f"Here is my design: {text} I hope it helps{junk}", "fence": f"```json\n{text}\n```\n{junk}",
            "two fences": f"```json\n{text[:at]}\n```\n```json\n{text}\n```", "bom": "\ufeff" + text}[how]


@st.composite
def garbled_reply(draw):
    case = draw(reply_case())
    how = draw(st.sampled_from(["truncate", "drop", "insert", "prose", "fence", "two fences", "bom"]))
    text = garble(case.text, how, draw(st.floats(0, 1)), draw(st.text(max_size=5) | st.sampled_from(
        ["{", "}", "]", '"', ",", "```", "NaN", '{"environments": []}'])))
    return case._replace(text=text, expect=None)


RANDOM_REPLY = st.builds(ReplyCase, st.sampled_from([CrafterConfig, HeistConfig]), st.integers(1, 4),
                         st.sampled_from([None, 9]), st.text(max_size=60) | YAMLISH, st.none())


@functools.lru_cache(maxsize=None)
def heist_check(world_dim: int):
    """The designer's check of Heist levels for a world of this size (as a run of that size passes it)."""
    from envgen_jax.envs.heist import HeistEnv
    return games.get("heist").designer_spec(HeistEnv(world_dim=world_dim)).check


def check_reply(case: ReplyCase, finish_reason, counts) -> ParsedReply:
    check = heist_check(case.world_dim) if case.world_dim else None
    if case.cls is not HeistConfig:
        check = None
    parsed = parse_reply(case.text, case.cls, case.n, finish_reason, check)
    assert isinstance(parsed, ParsedReply)
    if parsed.ok:
        assert parsed.problems == () and len(parsed.configs) == case.n == len(parsed.purposes)
        assert all(type(c) is case.cls and c == case.cls.from_dict(c.to_dict()) for c in parsed.configs)
        assert all(isinstance(p, str) and p.strip() == p and 0 < len(p) <= MAX_PURPOSE_CHARS for p in parsed.purposes)
        if check:
            assert all(check(c, "x") == [] for c in parsed.configs)
        counts["ok"] += 1
    else:
        assert parsed.problems and parsed.configs == () and parsed.purposes == ()
        assert all(isinstance(p, str) and p and len(p) <= MAX_PROBLEM_CHARS for p in parsed.problems)
        assert len(parsed.problems) <= MAX_PROBLEMS + 1
        counts["refused"] += 1
    event(f"reply: {'ok' if parsed.ok else 'refused'}")
    return parsed


_REPLY_COUNTS: collections.Counter = collections.Counter()


@FUZZ
@given(case=reply_case(), finish_reason=st.sampled_from([None, "stop", "length"]))
def test_reply_is_accepted_exactly_when_every_environment_validates(case, finish_reason):
    note(case.text)
    parsed = check_reply(case, finish_reason, _REPLY_COUNTS)
    expect = case.expect
    note(f"expected {expect}; problems {parsed.problems}")
    if expect["nonfinite"]:
        assert not parsed.ok  # NaN/Infinity in the environments: the JSON is refused
        return
    if expect["deep"]:
        assert not parsed.ok and any("nested" in p for p in parsed.problems)
        return
    assert parsed.ok == expect["ok"], (expect["name"], parsed.problems)
    if parsed.ok:
        assert list(parsed.configs) == expect["configs"] and list(parsed.purposes) == expect["purposes"]
        _REPLY_COUNTS["exact ok"] += 1
    elif len(parsed.problems) < MAX_PROBLEMS:
        for path in expect["name"]:
            assert named(parsed.problems, path) or any(p.startswith(f"{path}.") for p in parsed.problems), (
                f"{path!r} is wrong but no problem names it: {parsed.problems}")
        _REPLY_COUNTS["exact refused"] += 1


def test_replies_reach_both_outcomes():
    if not _REPLY_COUNTS:
        test_reply_is_accepted_exactly_when_every_environment_validates()
    both_outcomes(_REPLY_COUNTS, "exact ok", "exact refused")


@FUZZ
@given(case=garbled_reply() | RANDOM_REPLY, finish_reason=st.sampled_from([None, "stop", "length"]))
@example(case=ReplyCase(CrafterConfig, 4, None, "[" * 40_000 + "]" * 40_000, None), finish_reason=None)
@example(case=ReplyCase(CrafterConfig, 1, None, '{"environments": [' + "1" * 5000 + "]}", None), finish_reason=None)
@example(case=ReplyCase(HeistConfig, 1, 9, '```json\n{"environments": [{"purpose": "p", "config": '
                        '{"maze_settings": {"maze_dim": 13}}}]}\n```', None), finish_reason="stop")
def test_any_reply_text_gives_a_result_never_an_exception(case, finish_reason):
    note(repr(case.text))
    check_reply(case, finish_reason, _GARBLED_COUNTS)


_GARBLED_COUNTS: collections.Counter = collections.Counter()


def test_garbled_replies_reach_both_outcomes():
    if not _GARBLED_COUNTS:
        test_any_reply_text_gives_a_result_never_an_exception()
    both_outcomes(_GARBLED_COUNTS, "ok", "refused")
