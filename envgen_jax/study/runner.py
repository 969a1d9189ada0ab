"""Run a study: every group of methods in turn (one program each, `groups`; trained, resumed or reused), a failed
method reported and skipped, and the comparison (study.json, study.md, the plots) rewritten after each group.

Several processes (`run.distributed`): every process trains every group in step (each its part of the agents);
process 0 alone writes the study's files and reports failures, and a lost process ends the study.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from envgen_jax.llm.replay import replay_client
from envgen_jax.methods import uses_llm
from envgen_jax.run.distributed import explain_failure, is_lead
from envgen_jax.run.log import Prefixed
from envgen_jax.run.loop import EnvGenRun, latest_checkpoint
from envgen_jax.run.provenance import environment
from envgen_jax.run_config import RunConfig, load_run_config
from envgen_jax.schema import ConfigError
from envgen_jax.study.compare import build_comparison
from envgen_jax.study.groups import groups
from envgen_jax.study.markdown import markdown
from envgen_jax.study.plots import plot_study
from envgen_jax.study.settings import StudySettings, reconcile, save_settings


class RunSettingsDiffer(ConfigError):
    """OUT/<method> holds a run made with other settings than the study's."""


def run_study(settings: StudySettings, out: str | Path, log: Callable[[str], None] = print,
              llm_client: Any = None, grouping: str = "auto") -> int:
    """Run (resume, reuse) every method's run, then write the comparison. Returns 0, or 2 if a method failed.
    grouping: `fused` (the methods of one program trained as one run: `study.groups`), `sequential` (one method
    after another) or `auto` (`groups.resolve_grouping`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = reconcile(settings, out)
    lead = is_lead()  # several processes: process 0 writes the study's files and reports
    if lead:
        save_settings(settings, out / "study.yaml")
    errors: dict[str, str] = {}
    program_groups = groups(settings, grouping)
    for i, group in enumerate(program_groups):
        try:
            trained, failed = run_group(settings, group, out, log, llm_client)
        except RunSettingsDiffer:  # bad input, not a failed method (a method's own ConfigError fails it alone)
            raise
        except Exception as e:  # noqa: BLE001 -- one failed group must not lose the others
            if explain_failure(e):  # a process of a multi-process study is gone: nothing more can run
                raise
            failed = {m: (f"{type(e).__name__}: {e}", traceback.format_exc()) for m in group
                      if not (out / m / "report.json").exists()}  # its runs finished earlier stay finished
            trained = True
        errors.update({method: error for method, (error, _) in failed.items()})
        if not lead:
            continue
        for method, (error, details) in failed.items():
            print(f"error: {method} failed ({error}); its checkpoints are kept, and rerunning the same command "
                  f"retries it (traceback in {log_traceback(out, f'{method} failed', details)})", file=sys.stderr)
        if trained and i < len(program_groups) - 1:
            try:  # partial results, readable while the next methods train
                write_comparison(out, settings, errors)
            except Exception as e:  # noqa: BLE001 -- the runs matter more than their comparison, rebuilt at the end
                print(f"warning: could not write the comparison ({type(e).__name__}: {e}; traceback in "
                      f"{log_traceback(out, 'writing the comparison failed')})", file=sys.stderr)
    if not lead:
        return 2 if errors else 0
    write_comparison(out, settings, errors)
    log(f"study: {len(settings.methods) - len(errors)}/{len(settings.methods)} methods finished; {out / 'study.md'}")
    return 2 if errors else 0


def run_group(settings: StudySettings, group: list[str], out: Path, log: Callable[[str], None],
              llm_client: Any = None) -> tuple[bool, dict[str, tuple[str, str]]]:
    """Train, resume or reuse the runs of `group` as one program (`EnvGenRun.group`: one method is a group of one,
    on the same path and with the same resume rule). Returns whether any trained, and each failed method's error
    and traceback (a group of one raises its error)."""
    todo = [m for m in group if _check_or_reuse(settings, m, out, log)]
    if not todo:
        return False, {}
    for m in todo:
        _session(out / m, resumed=latest_checkpoint(out / m) is not None, fused_with=todo if len(todo) > 1 else None)
    run = EnvGenRun.group([(settings.run_config(m), out / m) for m in todo],
                          logs=[Prefixed(f"[{m}] ") for m in todo],
                          llm_client=[method_client(settings, m, llm_client, log) for m in todo])
    run.run()
    failures = run.failures
    return True, {m: (failures.errors[m], failures.tracebacks[m]) for m in todo if m in failures.errors}


def log_traceback(out: Path, what: str, details: str | None = None) -> Path:
    """Append the exception being handled (or `details`) to OUT/errors.log: stderr gets one line, the log the
    details."""
    path = out / "errors.log"
    with open(path, "a") as f:
        f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {what}\n{details or traceback.format_exc()}\n")
    return path


def _check_or_reuse(settings: StudySettings, method: str, out: Path, log: Callable[[str], None]) -> bool:
    """Whether OUT/<method> still has to train (False: finished earlier). A run made with other settings is an
    error, but for a finished one whose other settings cannot change what it learnt (`what_trains`: e.g. plain
    PPO trained outside the study, with its own output and LLM settings), which is reused and said so."""
    run_dir = out / method
    finished = (run_dir / "report.json").exists()
    saved = load_run_config(run_dir / "config.yaml") if (run_dir / "config.yaml").exists() else None
    wanted = settings.run_config(method)
    if saved is not None and saved != wanted:
        if not (finished and what_trains(saved) == what_trains(wanted)):
            raise RunSettingsDiffer([f"{run_dir / 'config.yaml'}: differs from the study's settings in "
                                     f"{out / 'study.yaml'}"], what=f"{method} run")
        old, new = saved.to_dict(), wanted.to_dict()
        log(f"{method}: reusing a run made with other {', '.join(sorted(k for k in old if old[k] != new[k]))} "
            f"settings, none of which changes what it learns ({run_dir / 'config.yaml'})")
    if finished:
        log(f"{method}: finished earlier ({run_dir / 'report.md'})")
        return False
    return True


def what_trains(cfg: RunConfig) -> dict:
    """The settings that can change what a run learns: all but its output settings, its LLM settings when its
    method asks no LLM, and the options of other methods."""
    d = cfg.to_dict()
    d.pop("output")
    if not uses_llm(cfg.method):
        d.pop("llm")
    d["method_options"] = d["method_options"].get(cfg.method)
    return d


def _session(run_dir: Path, resumed: bool, fused_with: list[str] | None = None) -> None:
    """A line of OUT/<method>/sessions.jsonl: which machine and code trained (part of) this run (process 0's), and
    `fused_with`, the methods whose agents shared its compiled program (a fused group), when there were several."""
    if not is_lead():
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    with open(run_dir / "sessions.jsonl", "a") as f:
        f.write(json.dumps({"action": "resume" if resumed else "start",
                            **{k: env[k] for k in ("date", "device", "jax", "jaxlib", "commit", "dirty", "host")},
                            **({"fused_with": list(fused_with)} if fused_with else {})})
                + "\n")


def run_method(settings: StudySettings, method: str, out: Path, log: Callable[[str], None],
               llm_client: Any = None) -> bool:
    """Train, resume or reuse OUT/<method> (a group of one); returns False when the run had already finished."""
    return run_group(settings, [method], out, log, llm_client)[0]


def method_client(settings: StudySettings, method: str, llm_client: Any, log: Callable[[str], None]) -> Any:
    """The LLM client of `method`'s run: `llm_client` if given, else its replayed designs if the study has them,
    else None (the run's own LLM)."""
    if llm_client is None and method in settings.replay:  # designs recorded elsewhere, no LLM (llm/replay.py)
        log(f"{method}: designs replayed from {settings.replay[method]}, whatever this run's feedback says")
        return replay_client(settings.replay[method], settings.run_config(method).llm)
    return llm_client


def write_comparison(out: Path, settings: StudySettings, errors: dict[str, str] | None = None) -> dict:
    """Write study.json, study.md and the plots; returns study.json's content."""
    study = build_comparison(out, settings, errors)
    (out / "study.json").write_text(json.dumps(study, indent=2))
    (out / "study.md").write_text(markdown(study, plot_study(out, study)))
    return study
