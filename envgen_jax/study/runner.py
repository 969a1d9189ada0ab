"""Run a study: every method's run in turn (trained, resumed or reused), a failed one reported and skipped, and the
comparison (study.json, study.md, the plots) rewritten after each."""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from envgen_jax.run.distributed import explain_failure, is_lead
from envgen_jax.run.log import Prefixed
from envgen_jax.run.loop import EnvGenRun, latest_checkpoint
from envgen_jax.run.provenance import environment
from envgen_jax.run_config import load_run_config
from envgen_jax.schema import ConfigError
from envgen_jax.study.compare import build_comparison
from envgen_jax.study.markdown import markdown
from envgen_jax.study.plots import plot_study
from envgen_jax.study.settings import StudySettings, reconcile, save_settings


def run_study(settings: StudySettings, out: str | Path, log: Callable[[str], None] = print,
              llm_client: Any = None) -> int:
    """Run (resume, reuse) every method's run, then write the comparison. Returns 0, or 2 if a method failed."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = reconcile(settings, out)
    if not is_lead():  # several processes: each trains its part of every run; process 0 writes the study's files
        return run_methods_only(settings, out, llm_client)
    save_settings(settings, out / "study.yaml")
    errors: dict[str, str] = {}
    for method in settings.methods:
        try:
            trained = run_method(settings, method, out, log, llm_client)
        except Exception as e:  # noqa: BLE001 -- one failed method must not lose the others
            if explain_failure(e):  # a process of a multi-process study is gone: nothing more can run
                raise
            errors[method] = f"{type(e).__name__}: {e}"
            print(f"error: {method} failed ({errors[method]}); its checkpoints are kept, and rerunning the same "
                  f"command retries it (traceback in {log_traceback(out, f'{method} failed')})", file=sys.stderr)
            trained = True
        if trained and method != settings.methods[-1]:
            try:  # partial results, readable while the next methods train
                write_comparison(out, settings, errors)
            except Exception as e:  # noqa: BLE001 -- the runs matter more than their comparison, rebuilt at the end
                print(f"warning: could not write the comparison ({type(e).__name__}: {e}; traceback in "
                      f"{log_traceback(out, 'writing the comparison failed')})", file=sys.stderr)
    write_comparison(out, settings, errors)
    log(f"study: {len(settings.methods) - len(errors)}/{len(settings.methods)} methods finished; {out / 'study.md'}")
    return 2 if errors else 0


def run_methods_only(settings: StudySettings, out: Path, llm_client: Any = None) -> int:
    """A process other than 0 of a multi-process study: the same runs, in step with process 0, and no files."""
    failed = False
    for method in settings.methods:
        try:
            run_method(settings, method, out, lambda _: None, llm_client)
        except Exception as e:  # noqa: BLE001 -- process 0 reports it; the next method runs on every process
            if explain_failure(e):
                raise
            failed = True
    return 2 if failed else 0


def log_traceback(out: Path, what: str) -> Path:
    """Append the exception being handled to OUT/errors.log: stderr gets one line, the log the details."""
    path = out / "errors.log"
    with open(path, "a") as f:
        f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {what}\n{traceback.format_exc()}\n")
    return path


def run_method(settings: StudySettings, method: str, out: Path, log: Callable[[str], None],
               llm_client: Any = None) -> bool:
    """Train, resume or reuse OUT/<method>; returns False when the run had already finished."""
    run_dir = out / method
    cfg = settings.run_config(method)
    if (run_dir / "config.yaml").exists() and load_run_config(run_dir / "config.yaml") != cfg:
        raise ConfigError([f"{run_dir / 'config.yaml'}: differs from the study's settings in {out / 'study.yaml'}"],
                          what=f"{method} run")
    if (run_dir / "report.json").exists():
        log(f"{method}: finished earlier ({run_dir / 'report.md'})")
        return False
    prefix = Prefixed(f"[{method}] ")
    resumed = latest_checkpoint(run_dir) is not None
    if resumed:
        run = EnvGenRun.resume(run_dir, log=prefix, llm_client=llm_client)
    else:
        run = EnvGenRun(cfg, run_dir, log=prefix, llm_client=llm_client)
    run_dir.mkdir(parents=True, exist_ok=True)
    if is_lead():  # several processes: process 0 writes the files
        env = environment()  # which machine and code trained (part of) this run
        with open(run_dir / "sessions.jsonl", "a") as f:
            f.write(json.dumps({"action": "resume" if resumed else "start",
                                **{k: env[k] for k in ("date", "device", "jax", "jaxlib", "commit", "dirty", "host")}})
                    + "\n")
    run.run()
    return True


def write_comparison(out: Path, settings: StudySettings, errors: dict[str, str] | None = None) -> dict:
    """Write study.json, study.md and the plots; returns study.json's content."""
    study = build_comparison(out, settings, errors)
    (out / "study.json").write_text(json.dumps(study, indent=2))
    (out / "study.md").write_text(markdown(study, plot_study(out, study)))
    return study
