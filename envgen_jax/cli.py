"""`envgen-jax`: train agents in LLM-designed environments, and inspect those environments.

Commands:
  train      run EnvGen (or a baseline) from a YAML config; resume a killed run
  study      train several methods with the same agent, steps and seeds, and compare them
  validate   check environment configuration JSON against the schema
  render     draw the worlds a configuration generates
  settings   list every setting a designer may use, with allowed values and defaults
  llm        try the LLM environment designer on its own
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from envgen_jax import games
from envgen_jax.run_log import configure_console
from envgen_jax.schema import ConfigError

ENVS = games.NAMES


def _read_configs(args) -> list:
    """The file's configurations, checked against the schema and (Heist) against the chosen mode's world size."""
    from envgen_jax.envs.registry import read_config_file
    configs = read_config_file(args.file, args.env)
    problems = games.get(args.env).mode_problems(configs, args.heist_mode)
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
    path = games.get(args.env).render(configs, args.out, seed=args.seed, mode=args.heist_mode)
    print(f"wrote {path} ({len(configs)} world{'s' * (len(configs) != 1)}, seed {args.seed})")
    return 0


def cmd_settings(args) -> int:
    from envgen_jax.envs.registry import config_class
    print(config_class(args.env).describe_settings())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="envgen-jax", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check configuration JSON; exit 1 listing every problem with its field path",
                       description="Validate environment configurations. FILE holds one configuration object, a list "
                                   "of them, or {\"environments\": [...]} as written by `envgen-jax llm generate`.")
    p.add_argument("file", metavar="FILE.json")
    p.add_argument("--env", choices=ENVS, default="crafter", help="which game the configurations are for")
    _heist_mode_option(p)
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("render", help="draw the whole generated world of each configuration as a PNG",
                       description="Generate each configuration's world for one seed and draw the whole map "
                                   "(one panel per configuration, with a legend).")
    p.add_argument("file", metavar="FILE.json", help="configurations, as for `validate`")
    p.add_argument("--env", choices=ENVS, default="crafter", help="which game the configurations are for")
    p.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    p.add_argument("--out", default="world.png", help="output PNG path (default world.png)")
    _heist_mode_option(p)
    p.set_defaults(handler=cmd_render)

    p = sub.add_parser("settings", help="list every designer setting with allowed values and defaults",
                       description="Print every setting an environment designer (the LLM or you) may use: its path "
                                   "in the configuration JSON, meaning, allowed values and default. The same text "
                                   "goes into the LLM prompt.")
    p.add_argument("--env", choices=ENVS, default="crafter", help="which game's settings (default crafter)")
    p.set_defaults(handler=cmd_settings)

    for register in _optional_commands():
        register(sub)
    return parser


def _heist_mode_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--heist-mode", choices=("easy", "hard"), default="hard",
                   help="Heist only: Procgen's distribution mode, which fixes the world size (easy 9x9, hard 13x13; "
                        "default hard)")


def _optional_commands() -> list[Callable]:
    """Commands that live with their subsystems (imported lazily so `--help` stays fast)."""
    registrars = []
    try:
        from envgen_jax.llm.cli import add_llm_commands
        registrars.append(add_llm_commands)
    except ImportError:
        pass
    try:
        from envgen_jax.loop_cli import add_study_commands, add_train_commands
        registrars += [add_train_commands, add_study_commands]
    except ImportError:
        pass
    return registrars


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_console()
    try:
        return args.handler(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
