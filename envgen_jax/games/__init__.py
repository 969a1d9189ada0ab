"""The games: one line per game, naming the module of its package that declares its `Game`.

    game = games.get("heist")                       # imports envgen_jax.envs.heist.game on first use
    options = game.read_options({"mode": "easy"})   # a run configuration's `game_options`, typed and checked
    env = game.make_env("symbolic", options)
    game.config_cls, game.designer_spec(env), game.targeting, game.score(rates), game.render(configs, path, 0, options)

A game is a package (under envgen_jax/envs/, or anywhere importable) whose `game` module defines `GAME`, an instance
of a `Game` subclass: its environment, configuration class, prompt folder, targeting map, score, renderer and its own
options. Adding one is that package plus one line in `GAMES` below (or `register(name, module)` at run time, as a
test may). Nothing outside the games' packages and this module branches on a game's name.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, Mapping

from envgen_jax.envs.game import ConfigurableEnv, Game, GameOptions, parse_options
from envgen_jax.schema import ConfigError

__all__ = ["GAMES", "NAMES", "ConfigurableEnv", "Game", "GameOptions", "config_class", "get", "make_env",
           "read_config_file", "read_run_options", "register"]

GAMES: dict[str, str | Game] = {
    "crafter": "envgen_jax.envs.crafter.game",
    "heist": "envgen_jax.envs.heist.game",
}
NAMES = GAMES.keys()  # a live view: a game registered later is known everywhere (command-line choices included)

def read_run_options(settings: Mapping, value: Any, where: str, problems: list[str], default_env: str) -> Any:
    """A run configuration's `game_options` (`value`), read as the options of the game `settings` names (the run's
    own settings, `default_env` when they name none); a name that is no game (its problem is reported with `env`)
    has no options."""
    env = settings.get("env", default_env)
    if isinstance(env, str) and env in GAMES:
        return get(env).read_options(value, where, problems)
    return parse_options(GameOptions, repr(env), value, where, problems)


_loaded: dict[str, Game] = {}  # module -> its GAME


def register(name: str, game: str | Game) -> None:
    """Add (or replace) a game: the module that defines its `GAME`, or the Game itself."""
    GAMES[name] = game


def get(name: str) -> Game:
    """The game registered under `name` (its module is imported on first use)."""
    if not isinstance(name, str) or name not in GAMES:
        raise ConfigError([f"env: {name!r} is not known; expected one of {', '.join(GAMES)}"])
    entry = GAMES[name]
    if isinstance(entry, Game):
        return entry
    if entry not in _loaded:
        game = getattr(importlib.import_module(entry), "GAME", None)
        if not isinstance(game, Game) or game.name != name:
            raise TypeError(f"{entry}.GAME must be the Game named {name!r}, got {game!r}")
        _loaded[entry] = game
    return _loaded[entry]


# ------------------------------------------------------------------------------------- configuration files
def _no_duplicate_keys(pairs):
    """json's object hook: a key given twice is an error (json keeps the last silently, dropping the first)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def config_class(env_name: str) -> type:
    return get(env_name).config_cls


def read_config_file(path: str | Path, env_name: str) -> list[Any]:
    """Read configurations from JSON: one config object, a list of them, or {"environments": [...]} as written by
    `envgen-jax llm generate` and a run's environments/cycle_<c>.json (each item either a config or {"purpose": ...,
    "config": {...}}, with the designer's "targets" where it wrote them)."""
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


def make_env(env_name: str, observation: str = "symbolic", options: Any = None):
    """The single-environment object of a game (vmapped by `envs.vector.VecEnv`); `options` as in `read_options`."""
    game = get(env_name)
    return game.make_env(observation, game.read_options(options))
