"""Run GPU-session stages' commands only as far as their first large program (gpu_session.sh --check).

    python benchmarks/stage_check.py SCRIPT.py ARGS...        # one command, as `python SCRIPT.py ARGS...`
    python benchmarks/stage_check.py -m MODULE ARGS...        # as `python -m MODULE ARGS...`
    python benchmarks/stage_check.py -c CODE ARGS...          # as `python -c CODE ARGS...`
    python benchmarks/stage_check.py --batch QUEUE --tsv STAGES.tsv   # every queued stage, in this one process

Everything before that program runs for real: the imports, the arguments, the run configurations and their
overrides, the environments, trainers and plans, and the tracing and lowering of the first program larger than
STAGE_CHECK_LARGE characters of StableHLO (default 60,000: the stage's own work, a step or a training chunk; jax's
small eager programs compile as usual). When that program is about to be compiled, it prints
`stage_check: reached <name> (<chars> chars of StableHLO)` and the command ends there, a success. A command that
compiles nothing that large runs to its end. What comes after (the compile, the run, the results) is left to the
full dry run, `gpu_session.sh --cpu-tiny`.

--batch runs the queued commands (gpu_session.sh writes a record a stage, ended by \\x1e: its name and words, each
ended by \\x1f;
an `env K=V ...` prefix sets those variables for that command) one after another in this process, so jax and the
project are imported once; a stage's XLA_FLAGS cannot change a started backend, so each distinct XLA_FLAGS is tried
in a short process of its own instead (an unknown XLA flag aborts a process: that is the check).
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import time

LARGE = int(os.environ.get("STAGE_CHECK_LARGE", "60000"))


class StageReached(BaseException):
    """Raised at the first large compile: a BaseException, so the stage's own `except Exception` lets it pass."""


def _stop_at_first_large_program() -> None:
    from jax._src.interpreters import pxla

    compile_ = pxla.MeshComputation.compile

    def compile(self, *args, **kwargs):
        size = len(str(self.stablehlo()))
        if size > LARGE:
            raise StageReached(f"stage_check: reached {getattr(self, '_name', 'a program')} ({size:,} chars of "
                               "StableHLO); stopping before its compile")
        return compile_(self, *args, **kwargs)

    pxla.MeshComputation.compile = compile


def run_command(argv: list[str]) -> None:
    """`python ARGV...` in this process (argv as after the interpreter: SCRIPT ..., -m MODULE ..., -c CODE ...)."""
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<stage>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


def _queued(path: str) -> list[tuple[str, dict, list[str]]]:
    """(name, env, argv after the interpreter) of each queued stage."""
    out = []
    for record in open(path).read().split("\x1e"):
        if not record:
            continue
        name, *words = record.split("\x1f")
        words = words[:-1] if words and words[-1] == "" else words
        env = {}
        if words and words[0] == "env":
            words = words[1:]
            while words and "=" in words[0] and not words[0].startswith("-"):
                key, _, value = words.pop(0).partition("=")
                env[key] = value
        out.append((name, env, words[1:]))  # words[0] is the interpreter
    return out


def _xla_flags_work(flags: str) -> str | None:
    """None if a process starts its backend with these XLA_FLAGS, else the reason it did not."""
    proc = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], capture_output=True, text=True,
                          env={**os.environ, "XLA_FLAGS": flags}, timeout=300)
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]


def run_batch(queue: str, tsv: str) -> int:
    stages = _queued(queue)
    flag_problems = {flags: _xla_flags_work(flags) for flags in {env["XLA_FLAGS"] for _, env, _ in stages
                                                                 if "XLA_FLAGS" in env}}
    _stop_at_first_large_program()
    failed = 0
    for name, env, argv in stages:
        start, saved = time.perf_counter(), dict(os.environ)
        os.environ.update({k: v for k, v in env.items() if k != "XLA_FLAGS"})
        what = "ok"
        if flag_problems.get(env.get("XLA_FLAGS")):
            what = f"failed (its XLA_FLAGS: {flag_problems[env['XLA_FLAGS']]})"
        else:
            print(f"stage_check: {name}: {' '.join(argv)[:300]}", flush=True)
            try:
                run_command(argv)
            except StageReached as reached:
                print(reached, flush=True)
            except SystemExit as e:
                if e.code not in (0, None):
                    what = f"failed (exit {e.code})"
            except Exception as e:  # noqa: BLE001 (a stage's failure is this check's finding: report it, go on)
                what = f"failed ({type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''})"
        os.environ.clear()
        os.environ.update(saved)
        seconds = time.perf_counter() - start
        failed += what != "ok"
        print(f"stage_check: {name}: {what} in {seconds:.1f}s", flush=True)
        with open(tsv, "a") as f:
            f.write(f"{name}\t0\t{seconds:.1f}\t{what} (--check)\n")  # no box of its own: 0
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    if argv[0] == "--batch":
        return run_batch(argv[1], argv[argv.index("--tsv") + 1])
    _stop_at_first_large_program()
    try:
        run_command(argv)
    except StageReached as reached:
        print(reached, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
