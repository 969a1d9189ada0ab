"""Run a GPU-session stage's command only as far as its first large program, then stop (gpu_session.sh --check).

    python benchmarks/stage_check.py SCRIPT.py ARGS...        # as `python SCRIPT.py ARGS...`
    python benchmarks/stage_check.py -m MODULE ARGS...        # as `python -m MODULE ARGS...`
    python benchmarks/stage_check.py -c CODE ARGS...          # as `python -c CODE ARGS...`

Everything before it runs for real: the imports, the arguments, the run configurations and their overrides, the
environments, trainers and plans, and the tracing and lowering of the first program larger than --large characters
of StableHLO (the stage's own work: a step, a training chunk; jax's small eager programs compile as usual). When
that program is about to be compiled, this prints `stage_check: reached <name> (<chars> chars of StableHLO)` and
exits 0, so a stage's smallest form costs seconds instead of its compiles. A command that compiles nothing that
large runs to its end. What comes after the first large program (its compile, its run, the writing of results) is
left to the full dry run, `gpu_session.sh --cpu-tiny`.
"""

from __future__ import annotations

import os
import runpy
import sys

LARGE = int(os.environ.get("STAGE_CHECK_LARGE", "60000"))  # chars: a Craftax step lowers to far more, eager ops to far less


def _stop_at_first_large_program() -> None:
    from jax._src.interpreters import pxla

    compile_ = pxla.MeshComputation.compile

    def compile(self, *args, **kwargs):
        size = len(str(self.stablehlo()))
        if size > LARGE:
            print(f"stage_check: reached {getattr(self, '_name', 'a program')} ({size:,} chars of StableHLO); "
                  f"stopping before its compile", flush=True)
            sys.stdout.flush()
            os._exit(0)  # no atexit work: nothing of the stage's has been measured, nothing to save
        return compile_(self, *args, **kwargs)

    pxla.MeshComputation.compile = compile


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    _stop_at_first_large_program()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<stage>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
