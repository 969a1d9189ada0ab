"""What a study runs (the methods and the one run configuration they share), saved in OUT/study.yaml, and how a
rerun of the same command continues it: the saved settings, plus any methods it adds."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Sequence

from envgen_jax.config_io import dump_yaml, from_mapping, move_old_keys, parse_yaml, renamed
from envgen_jax.run_config import METHODS, OLD_KEYS, RunConfig, load_run_config
from envgen_jax.schema import ConfigError


@dataclasses.dataclass(frozen=True)
class StudySettings:
    """What a study runs: the methods, and the one resolved run configuration they all share (`method` left out)."""

    methods: tuple[str, ...]
    run: dict
    config: str = ""                   # where `run` came from (for the reader; `run` is what counts)
    overrides: tuple[str, ...] = ()
    # method -> llm_transcript.jsonl whose designs that LLM method replays instead of asking an LLM (--replay;
    # envgen_jax/llm/replay.py says what a replayed designer does with feedback it was not recorded with)
    replay: dict = dataclasses.field(default_factory=dict)

    def run_config(self, method: str) -> RunConfig:
        return from_mapping(RunConfig, {**self.run, "method": method})

    def to_dict(self) -> dict:
        return {"config": self.config, "overrides": list(self.overrides), "methods": list(self.methods),
                **({"replay": dict(self.replay)} if self.replay else {}), "run": self.run}


def _shared(cfg: RunConfig) -> dict:
    run = json.loads(json.dumps(cfg.to_dict()))  # plain JSON types, as read back from study.yaml
    run.pop("method")
    return run


def resolve(config: str | Path, methods: Sequence[str], seeds: int | None = None,
            overrides: Sequence[str] = ()) -> StudySettings:
    """Check the methods and build the shared run configuration (`seeds` overrides the config's)."""
    problems = [f"--methods: {m!r} is not a method; allowed: {', '.join(METHODS)}"
                for m in methods if m not in METHODS]
    problems += [f"--methods: {m!r} is listed twice" for m in sorted(set(methods)) if list(methods).count(m) > 1]
    if not methods:
        problems.append(f"--methods: no method given; allowed: {', '.join(METHODS)}")
    if problems:
        raise ConfigError(problems, what="study")
    cfg = load_run_config(config, [*overrides, *([f"seeds={seeds}"] if seeds is not None else [])])
    if cfg.sweep.active:
        raise ConfigError(["sweep: a study compares methods at one PPO setting; remove the sweep section (sweep "
                           "with `envgen-jax train`)"], what="study")
    settings = StudySettings(tuple(methods), _shared(cfg), str(config), tuple(overrides))
    for m in methods:  # every method's configuration is valid before anything trains
        settings.run_config(m)
    return settings


def load_settings(path: Path) -> StudySettings:
    """A saved study.yaml, its run configuration re-read through the current code (new settings get defaults)."""
    data = parse_yaml(path.read_bytes())
    problems: list[str] = []
    run, moved = move_old_keys(data["run"], OLD_KEYS, (), problems)  # a study saved with older versions' keys
    if problems:
        raise ConfigError(renamed(problems, moved), what=f"study settings in {path}")
    cfg = from_mapping(RunConfig, {**run, "method": data["methods"][0]})
    return StudySettings(tuple(data["methods"]), _shared(cfg), data.get("config", ""),
                         tuple(data.get("overrides", ())), dict(data.get("replay") or {}))


def save_settings(settings: StudySettings, path: Path) -> None:
    path.write_text("# The study's resolved settings (envgen-jax study): every method runs `run` with its own "
                    "`method`.\n# Rerunning the study needs the same settings; it may add methods.\n"
                    + dump_yaml(settings.to_dict()))


def _differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in dict.fromkeys([*a, *b])
                for d in _differences(a.get(k), b.get(k), f"{path}.{k}" if path else k)]
    return [] if a == b else [(path, a, b)]


def reconcile(settings: StudySettings, out: Path) -> StudySettings:
    """The settings to run in OUT: the given ones for a new study; for an existing one its saved settings, plus any
    methods the command adds. Other differences are an error (a study compares like with like)."""
    path = out / "study.yaml"
    if not path.exists():
        return settings
    saved = load_settings(path)
    problems = [f"{key}: the study in {out} has {old!r}, this command gives {new!r}"
                for key, old, new in _differences(saved.run, settings.run)]
    problems += [f"--replay {method}: the study in {out} has {saved.replay.get(method)!r}, this command gives "
                 f"{settings.replay.get(method)!r}" for method in sorted({*saved.replay, *settings.replay})
                 if saved.replay.get(method) != settings.replay.get(method) and method in saved.methods]
    dropped = [m for m in saved.methods if m not in settings.methods]
    if dropped:
        problems.append(f"--methods: the study in {out} also runs {', '.join(dropped)}; a rerun may only add methods "
                        f"(give at least {','.join(saved.methods)})")
    if problems:
        raise ConfigError(problems + [f"to study other settings, give another --out than {out}"],
                          what="rerun of an existing study")
    return dataclasses.replace(saved, methods=saved.methods + tuple(m for m in settings.methods
                                                                    if m not in saved.methods),
                               replay={**saved.replay, **{m: path for m, path in settings.replay.items()
                                                          if m not in saved.methods}})
