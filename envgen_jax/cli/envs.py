"""`envgen-jax validate`, `render` and `settings`: environment configurations, checked, drawn and documented."""

from __future__ import annotations

import argparse
import dataclasses

from envgen_jax import games
from envgen_jax.schema import ConfigError

FILE_FORMATS = ("FILE holds one configuration object, a list of them, or {\"environments\": [...]} as written by "
                "`envgen-jax llm generate`.")

VALIDATE_HELP = f"""\
Check environment configurations against the schema (and, for Heist, against the mode's world size). Prints one
summary line per valid configuration; writes nothing.

  envgen-jax validate envs.json
  envgen-jax validate heist.json --env heist --heist-mode easy

{FILE_FORMATS} Every problem is listed with its field path, e.g. `[0].inventory_settings.iron_pickaxe: 3 is above
the maximum 1`, and the command exits 1.
"""

RENDER_HELP = f"""\
Generate each configuration's world for one seed and draw the whole map: one panel per configuration, with a legend,
in one PNG (--out, default world.png).

  envgen-jax render envs.json --seed 0 --out world.png
  envgen-jax render heist.json --env heist --heist-mode easy --out heist.png

{FILE_FORMATS} Invalid configurations are listed as for `validate` (exit 1) and nothing is drawn.
"""

SETTINGS_HELP = """\
Print every setting an environment designer (the LLM or you) may use: its path in the configuration JSON, meaning,
allowed values and default. The same text goes into the LLM prompt. Writes nothing.

  envgen-jax settings
  envgen-jax settings --env heist
"""


def add_commands(commands) -> None:
    """Register `validate`, `render` and `settings` on the top-level subparsers."""
    p = commands.add_parser("validate", help="check configuration JSON; exit 1 listing every problem with its field path",
                            description=VALIDATE_HELP)
    p.add_argument("file", metavar="FILE.json")
    _env_options(p)
    p.set_defaults(handler=cmd_validate)

    p = commands.add_parser("render", help="draw the whole generated world of each configuration as a PNG",
                            description=RENDER_HELP)
    p.add_argument("file", metavar="FILE.json", help="configurations, as for `validate`")
    p.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    p.add_argument("--out", default="world.png", help="output PNG path (default world.png)")
    _env_options(p)
    p.set_defaults(handler=cmd_render)

    p = commands.add_parser("settings", help="list every designer setting with allowed values and defaults",
                            description=SETTINGS_HELP)
    p.add_argument("--env", choices=games.NAMES, default="crafter", help="which game's settings (default crafter)")
    p.set_defaults(handler=cmd_settings)


def _env_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", choices=games.NAMES, default="crafter",
                   help="which game the configurations are for (default crafter)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="one of the game's options, as a run configuration's game_options (repeatable), e.g. "
                        "--option mode=easy for Heist")
    p.add_argument("--heist-mode", choices=("easy", "hard"), default=None,
                   help="Heist only: Procgen's distribution mode, which fixes the world size (easy 9x9, hard 13x13; "
                        "default hard); short for --option mode=...")


def _game_options(args, game):
    """The game's options from --option KEY=VALUE (values read as YAML, as --set reads them) and --heist-mode (the
    option `mode` of a game that has one; other games ignore it, as they did)."""
    from envgen_jax.config_io import parse_yaml

    given, problems = {}, []
    if args.heist_mode is not None and "mode" in {f.name for f in dataclasses.fields(game.options_cls)}:
        given["mode"] = args.heist_mode
    for item in args.option:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            problems.append(f"--option {item!r}: expected KEY=VALUE, e.g. --option mode=easy")
            continue
        try:
            given[key.strip()] = parse_yaml(raw) if raw.strip() else ""
        except ValueError:
            given[key.strip()] = raw
    options = game.read_options(given, problems=problems)
    if problems:
        raise ConfigError(problems, what="game options")
    return options


def _read_configs(args) -> list:
    """The file's configurations, checked against the schema and against the game's options (Heist: the mode's
    world size)."""
    game = games.get(args.env)
    configs = games.read_config_file(args.file, args.env)
    problems = game.option_problems(configs, _game_options(args, game))
    if problems:
        raise ConfigError(problems)
    return configs


def cmd_validate(args) -> int:
    configs = _read_configs(args)
    print(f"{args.file}: {len(configs)} valid {args.env} configuration{'s' * (len(configs) != 1)}")
    for i, c in enumerate(configs):
        print(f"  [{i}] {c.summary()}")
    return 0


def cmd_render(args) -> int:
    configs = _read_configs(args)
    game = games.get(args.env)
    path = game.render(configs, args.out, seed=args.seed, options=_game_options(args, game))
    print(f"wrote {path} ({len(configs)} world{'s' * (len(configs) != 1)}, seed {args.seed})")
    return 0


def cmd_settings(args) -> int:
    print(games.config_class(args.env).describe_settings())
    return 0
