"""`envgen-jax`: train agents in LLM-designed environments, and inspect those environments.

Commands:
  train      run EnvGen (or a baseline) from a YAML config; resume a killed run; --dry-run prints the plan
  study      train several methods with the same agent, steps and seeds, and compare them
  validate   check environment configuration JSON against the schema
  render     draw the worlds a configuration generates
  settings   list every setting a designer may use, with allowed values and defaults
  llm        try the LLM environment designer on its own

`envgen-jax COMMAND --help` explains a command, with examples and where its outputs go.

  envgen-jax train --config configs/smoke.yaml --dry-run     # the plan: phases, steps, LLM calls, checkpoint size
  envgen-jax train --config configs/smoke.yaml               # the whole loop on a CPU in minutes

Exit status (every command):
  0    done
  1    bad input: a bad setting or argument, a missing or malformed file (the problem is printed)
  2    the run failed: training, the LLM step, or an unexpected error (rerun with --debug for its traceback)
  130  interrupted (Ctrl-C)
"""

from __future__ import annotations

import argparse
import gc
import sys

from envgen_jax.cli import envs, llm, train
from envgen_jax.llm.errors import DesignError, LLMError
from envgen_jax.run.log import configure_console
from envgen_jax.schema import ConfigError

BAD_INPUT, FAILED, INTERRUPTED = 1, 2, 130  # and 0: done


class Parser(argparse.ArgumentParser):
    """argparse with the project's conventions, inherited by every subcommand's parser (argparse builds those with
    the parent's class): examples keep their layout, `--debug` is accepted anywhere, and a usage error is bad input
    (exit 1, where argparse would exit 2, the status of a failed run here)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        # SUPPRESS: a subcommand must not reset a --debug given before it.
        self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="let an error through with its traceback, instead of a one-line message")

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(BAD_INPUT, f"{self.prog}: error: {message}\n(`{self.prog} --help` explains every option)\n")


def build_parser() -> Parser:
    parser = Parser(prog="envgen-jax", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train.add_commands(commands)
    envs.add_commands(commands)
    llm.add_commands(commands)
    return parser


# Python's cyclic garbage collector at larger thresholds than CPython's (700, 10, 10): tracing a run's programs
# allocates objects by the million, and at the defaults thousands of collections took about a tenth of a small run's
# time (a toy study: 9.4 s -> 7.7-8.4 s; tests/conftest.py has the test suite's figures).
GC_THRESHOLDS = (50_000, 20, 100)


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (see the module docstring)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (1, from Parser.error)
        return e.code
    configure_console()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return args.handler(args)
    except KeyboardInterrupt as e:
        _report("interrupted", e)
        return INTERRUPTED
    except Exception as e:
        if getattr(args, "debug", False):
            raise
        status, message = explain(e)
        from envgen_jax.run.distributed import end_run, joined
        if joined():  # one process of a multi-process run: it ends at once (JAX's exit would wait for the others)
            end_run("\n".join([message, *getattr(e, "__notes__", ())]), status, e)
        _report(message, e)
        return status


def explain(error: Exception) -> tuple[int, str]:
    """The exit status for `error`, and its one-line (or one-list) message."""
    from envgen_jax.run.distributed import explain_failure
    lost = explain_failure(error)  # several processes: one of them stopped, or cannot join
    if lost is not None:
        return FAILED, lost
    if isinstance(error, (LLMError, DesignError)):  # before ConfigError: DesignError is one, but the LLM failed
        return FAILED, f"error: the LLM step failed: {error}"
    if isinstance(error, ConfigError):
        return BAD_INPUT, f"error: {error}"
    if isinstance(error, FileNotFoundError):
        return BAD_INPUT, f"error: {error.filename}: {error.strerror}" if error.filename else f"error: {error}"
    return FAILED, f"error: {type(error).__name__}: {error}\n(rerun with --debug to see the traceback)"


def _report(message: str, error: BaseException) -> None:
    """The message, then the notes commands added on the way out (e.g. how to resume)."""
    print("\n".join([message, *getattr(error, "__notes__", ())]), file=sys.stderr)
