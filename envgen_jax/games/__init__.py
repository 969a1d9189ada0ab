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
from pathlib import Path
from typing import Any, Mapping

from envgen_jax.envs.game import ConfigurableEnv, Game, GameOptions, parse_options
from envgen_jax.games.files import read_configs
from envgen_jax.schema import ConfigError

__all__ = ["GAMES", "NAMES", "ConfigurableEnv", "Game", "GameOptions", "config_class", "get", "make_env",
           "read_config_file", "read_run_options", "register"]

GAMES: dict[str, str | Game] = {
    "crafter": "envgen_jax.envs.crafter.game",
    "heist": "envgen_jax.envs.heist.game",
    "craftax": "envgen_jax.envs.craftax.game",
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


def config_class(env_name: str) -> type:
    return get(env_name).config_cls


def read_config_file(path: str | Path, env_name: str) -> list[Any]:
    """The game's configurations in a JSON file (`files.read_configs`: one config object, a list of them, or
    {"environments": [...]} as `envgen-jax llm generate` and a run's environments/cycle_<c>.json write them)."""
    return read_configs(path, config_class(env_name), env_name)


def make_env(env_name: str, observation: str = "symbolic", options: Any = None):
    """The single-environment object of a game (vmapped by `envs.vector.VecEnv`); `options` as in `read_options`."""
    game = get(env_name)
    return game.make_env(observation, game.read_options(options))
