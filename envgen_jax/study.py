"""`envgen-jax study`: does EnvGen help? Every method trained with the same agent, steps and seeds, then compared.

    envgen-jax study --config configs/study_cpu.yaml --methods ppo,envgen,fixed,random,easy_to_hard,adversarial \\
        --seeds 4 --out runs/study_cpu

OUT holds one ordinary run directory per method (`OUT/<method>/`, as `envgen-jax train` writes it, the seeds vmapped
inside the run); only `method` differs between their configurations. `OUT/study.yaml` keeps the study's resolved
settings, so the same command continues a killed or interrupted study: finished runs (report.json) are reused,
started ones resume from their newest checkpoint, the rest start. A method that fails is reported and the next one
runs; the same command retries it.

The comparison (study.json, study.md and study_*.png) is built from the run directories' files alone (report.json,
metrics.jsonl, sessions.jsonl), never from live run objects, and is rewritten after every method, so it can be read
while a long study runs.

Statistics, per method over its seeds: mean, population std (np.std, as report.json and the paper's feedback), and a
95% percentile-bootstrap confidence interval of the mean; against `ppo`, the difference of means with a 95%
percentile-bootstrap interval (each method's seeds resampled independently: the runs are not paired) and Welch's
two-sided t-test. Where a statistic cannot be computed (one seed, or no spread at all) it is None with the reason.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from scipy.stats import bootstrap, ttest_ind

from envgen_jax.config_io import dump_yaml, from_mapping, parse_yaml
from envgen_jax.methods import get as get_method
from envgen_jax.run.loop import EnvGenRun, latest_checkpoint
from envgen_jax.run.plan import build_plan
from envgen_jax.run.provenance import environment
from envgen_jax.report import PAPER_TABLE1, environment_learning_markdown, evaluation_score
from envgen_jax.run_config import METHODS, RunConfig, load_run_config
from envgen_jax import games
from envgen_jax import methods as methods_registry
from envgen_jax.run.log import Prefixed
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.metrics import quiet_nan

REFERENCE = "ppo"          # the baseline every other method is compared with (the paper's "0.96M PT in Crafter")
CONFIDENCE = 0.95
RESAMPLES = 9999           # scipy's default
RNG_SEED = 0               # fixed, so the intervals are the same every time the comparison is rebuilt
STATISTICS = {
    "std": "population std over seeds (np.std, ddof 0), as in report.json",
    "ci": f"{CONFIDENCE:.0%} percentile bootstrap of the mean over seeds (scipy.stats.bootstrap, method='percentile', "
          f"{RESAMPLES} resamples, rng numpy.random.default_rng({RNG_SEED})); with few seeds it is too narrow (the "
          f"bootstrap undercovers at small n): read it with the t-test",
    "difference": f"mean(method) - mean({REFERENCE}); its {CONFIDENCE:.0%} interval is a percentile bootstrap that "
                  f"resamples each method's seeds independently (the runs are not paired)",
    "test": "Welch's two-sided t-test (scipy.stats.ttest_ind, equal_var=False) of the per-seed values",
    "pairwise": "every pair of finished methods: Welch's p adjusted by Holm's step-down method over all pairs (one "
                "family per metric), and P(a seed of A beats a seed of B), ties counted half",
    "final_evaluation": f"each method's final evaluation in the original game (after all training) against "
                        f"{REFERENCE}'s: difference, interval and Welch's p as above, adjusted by Holm over the "
                        f"family of every method against {REFERENCE}",
}
SECOND_REFERENCE = "envgen"  # each method is also compared with EnvGen
LONG_CHAIN = ("collect_stone", "make_stone_pickaxe", "place_furnace", "collect_iron", "make_iron_pickaxe",
              "make_iron_sword")  # the paper's figure of unlock times


# ------------------------------------------------------------------------------------------------------ statistics
def _values(values: Sequence[float | None]) -> np.ndarray:
    """Per-seed values as floats, leaving out seeds without one (None/NaN: no finished scored episode)."""
    x = np.array([np.nan if v is None else v for v in values], np.float64)
    return x[~np.isnan(x)]


def _bootstrap(samples: tuple, statistic: Callable) -> list[float]:
    res = bootstrap(samples, statistic, n_resamples=RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                    rng=np.random.default_rng(RNG_SEED))
    return [float(res.confidence_interval.low), float(res.confidence_interval.high)]


def mean_ci(values: Sequence[float | None]) -> dict:
    """Mean, population std and the 95% bootstrap interval of the mean over seeds, with every seed's value."""
    x = _values(values)
    out = {"per_seed": list(values), "n": int(x.size), "mean": float(x.mean()) if x.size else None,
           "std": float(x.std()) if x.size else None, "ci95": None, "ci_note": None}
    if x.size < 2:
        out["ci_note"] = f"{x.size} seed(s) with a value: an interval needs 2 or more"
    elif np.all(x == x[0]):
        out["ci_note"] = "every seed has the same value: there is no spread to resample"
    else:
        out["ci95"] = _bootstrap((x,), np.mean)
    return out


def difference(values: Sequence[float | None], reference: Sequence[float | None]) -> dict:
    """mean(values) - mean(reference), its 95% bootstrap interval, and Welch's t-test (two-sided)."""
    x, r = _values(values), _values(reference)
    out = {"difference": float(x.mean() - r.mean()) if x.size and r.size else None, "ci95": None, "t": None,
           "df": None, "p_value": None, "note": None}
    if x.size < 2 or r.size < 2:
        out["note"] = f"{x.size} and {r.size} seeds with a value: the interval and the test need 2 or more each"
    elif np.all(x == x[0]) and np.all(r == r[0]):
        out["note"] = "every seed of both methods has the same value: no spread, so no interval or test"
    else:
        out["ci95"] = _bootstrap((x, r), lambda a, b, axis: a.mean(axis) - b.mean(axis))
        test = ttest_ind(x, r, equal_var=False)
        out.update(t=float(test.statistic), df=float(test.df), p_value=float(test.pvalue))
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None: no test, left out of the family)."""
    known = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (len(known) - rank) * p))
        out[i] = running
    return out


def superiority(values: Sequence[float | None], other: Sequence[float | None]) -> float | None:
    """The probability that a seed of one method beats a seed of the other (ties count half): the share of all
    seed pairs, i.e. the common-language effect size, Mann-Whitney U / (n m)."""
    x, y = _values(values), _values(other)
    if not x.size or not y.size:
        return None
    return float(((x[:, None] > y[None, :]).sum() + 0.5 * (x[:, None] == y[None, :]).sum()) / (x.size * y.size))


def with_holm(rows: list[dict]) -> list[dict]:
    """The rows, each given `p_holm`: the rows' `p_value`s adjusted by Holm as one family."""
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows])):
        row["p_holm"] = adjusted
    return rows


def pairwise(per_seed: dict[str, Sequence[float | None]]) -> list[dict]:
    """Every pair of methods: the difference of means with its interval and Welch's p, the p-value adjusted by
    Holm over all pairs, and the probability that a seed of the first beats a seed of the second."""
    names = list(per_seed)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    return with_holm([{"a": a, "b": b, **difference(per_seed[a], per_seed[b]),
                       "p_superior": superiority(per_seed[a], per_seed[b])} for a, b in pairs])


def stale_restarts(chunks: list[dict]) -> dict:
    """Share of training episodes that restarted in their slot's previous world (metrics.jsonl), overall and per
    phase; None where no episode finished."""
    def share(rows):
        stale = sum(sum(c["stale_resets_per_seed"]) for c in rows)
        episodes = sum(sum(c["episodes_per_seed"]) for c in rows)
        return stale, episodes, (stale / episodes if episodes else None)

    stale, episodes, overall = share(chunks)
    phases = dict.fromkeys(c["phase"] for c in chunks)
    return {"share": overall, "stale": stale, "episodes": episodes,
            "share_per_phase": {p: share([c for c in chunks if c["phase"] == p])[2] for p in phases}}


# -------------------------------------------------------------------------------------------------------- settings
@dataclasses.dataclass(frozen=True)
class StudySettings:
    """What a study runs: the methods, and the one resolved run configuration they all share (`method` left out)."""

    methods: tuple[str, ...]
    run: dict
    config: str = ""                   # where `run` came from (for the reader; `run` is what counts)
    overrides: tuple[str, ...] = ()

    def run_config(self, method: str) -> RunConfig:
        return from_mapping(RunConfig, {**self.run, "method": method})

    def to_dict(self) -> dict:
        return {"config": self.config, "overrides": list(self.overrides), "methods": list(self.methods),
                "run": self.run}


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
    run = games.upgrade_run_settings(data["run"])  # a study saved before games had options: heist_mode
    problems: list[str] = []
    run, moved = methods_registry.upgrade_run_settings(run, problems)  # ... or methods their settings: ued
    if problems:
        raise ConfigError(methods_registry.renamed(problems, moved), what=f"study settings in {path}")
    cfg = from_mapping(RunConfig, {**run, "method": data["methods"][0]})
    return StudySettings(tuple(data["methods"]), _shared(cfg), data.get("config", ""),
                         tuple(data.get("overrides", ())))


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
    dropped = [m for m in saved.methods if m not in settings.methods]
    if dropped:
        problems.append(f"--methods: the study in {out} also runs {', '.join(dropped)}; a rerun may only add methods "
                        f"(give at least {','.join(saved.methods)})")
    if problems:
        raise ConfigError(problems + [f"to study other settings, give another --out than {out}"],
                          what="rerun of an existing study")
    return dataclasses.replace(saved, methods=saved.methods + tuple(m for m in settings.methods
                                                                    if m not in saved.methods))


# ------------------------------------------------------------------------------------------------------------- runs
def run_study(settings: StudySettings, out: str | Path, log: Callable[[str], None] = print,
              llm_client: Any = None) -> int:
    """Run (resume, reuse) every method's run, then write the comparison. Returns 0, or 2 if a method failed."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = reconcile(settings, out)
    save_settings(settings, out / "study.yaml")
    errors: dict[str, str] = {}
    for method in settings.methods:
        try:
            trained = run_method(settings, method, out, log, llm_client)
        except Exception as e:  # noqa: BLE001 -- one failed method must not lose the others
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
    env = environment()  # which machine and code trained (part of) this run
    with open(run_dir / "sessions.jsonl", "a") as f:
        f.write(json.dumps({"action": "resume" if resumed else "start",
                            **{k: env[k] for k in ("date", "device", "jax", "jaxlib", "commit", "dirty", "host")}})
                + "\n")
    run.run()
    return True


# ------------------------------------------------------------------------------------------------------ comparison
def final_versus_reference(methods: dict[str, dict]) -> list[dict]:
    """Each finished method's last evaluation in the original game (the `final` one, after all training) against
    the reference's: the difference of means with its interval and Welch's p, adjusted by Holm over this family
    (every method against the reference), as `pairwise` does over all pairs of the scored phase."""
    finals = {m: r["evaluations"][-1]["score_per_seed"] for m, r in methods.items()
              if r.get("status") == "finished" and r["evaluations"] and r["evaluations"][-1]["after"] == "final"}
    if REFERENCE not in finals:
        return []
    rows = []
    for m, v in finals.items():
        if m != REFERENCE:  # the method's values, mean and spread; `ci95` is the difference's interval
            stats = mean_ci(v)
            rows.append({"method": m, **{k: stats[k] for k in ("per_seed", "n", "mean", "std")},
                         **difference(v, finals[REFERENCE])})
    return with_holm(rows)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def _read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def method_summary(run_dir: Path, report: dict | None, reference: dict | None, error: str | None = None,
                   second: dict | None = None) -> dict:
    """One method's row of the comparison, from its run directory; `reference` is ppo's report.json (or None),
    `second` envgen's (or None)."""
    status = ("finished" if report is not None else "failed" if error
              else "started" if latest_checkpoint(run_dir) is not None else "not started")
    entry: dict = {"status": status, "error": error, "sessions": _read_lines(run_dir / "sessions.jsonl")}
    if report is None:
        return entry
    chunks, game = _read_lines(run_dir / "metrics.jsonl"), games.get(report["env"])
    evals = [*report["cycle_evaluations"], *([report["final_evaluation"]] if report["final_evaluation"] else [])]
    entry.update({
        "seeds": report["seeds"], "env_steps": report["env_steps"], "scored_env_steps": report["scored_env_steps"],
        "scored_episodes_per_seed": report["episodes_per_seed"],
        "score": mean_ci(report["score_per_seed"]), "reward": mean_ci(report["reward_per_seed"]),
        f"vs_{REFERENCE}": None if reference is None else {
            k: difference(report[f"{k}_per_seed"], reference[f"{k}_per_seed"]) for k in ("score", "reward")},
        f"vs_{SECOND_REFERENCE}": None if second is None else {
            k: difference(report[f"{k}_per_seed"], second[f"{k}_per_seed"]) for k in ("score", "reward")},
        "first_unlock_steps": {a: report.get("first_unlock_steps", {}).get(a) for a in LONG_CHAIN},
        "llm_tokens": llm_tokens(run_dir / "llm_transcript.jsonl"),
        "steps_per_second": _steps_per_second(chunks),
        "achievements": report["achievements"], "achievements_std": report["achievements_std"],
        "evaluations": [{"after": "final" if e.get("final") else f"cycle {e['cycle'] + 1}",
                         "env_steps": e["env_steps"], "episodes_per_seed": e["episodes_per_seed"],
                         **{f"score_{k}": v for k, v in evaluation_score(e, game).items()},
                         "success_mean": e["success_mean"]} for e in evals],
        "environment_learning": report.get("environment_learning", []),
        "adaptation": adaptation_summary(report.get("adaptation")),
        "llm_calls": report["llm_calls"], "llm_seconds": report.get("llm_seconds"),
        "train_seconds": sum(c["seconds"] for c in chunks), "wall_seconds": report["wall_seconds"],
        "stale_restarts": stale_restarts(chunks),
    })
    return entry


def adaptation_summary(entries: list[dict] | None) -> dict | None:
    """A method's report.json "adaptation" in brief: per cycle after the first, the share of the feedback's weakest
    quarter some environment targets, the share of environments repeated from earlier cycles and the changed
    settings the design has that the previous one had not (new) and the reverse (dropped), summed over designers;
    and the shares' means."""
    if not entries:
        return None
    return {"per_cycle": [{"cycle": e["cycle"], "targeted_share": e["targeted_share"],
                           "repeated_share": e["repeated_share"],
                           "new_settings": sum(d["new_settings"] for d in e["designers"]),
                           "dropped_settings": sum(d["dropped_settings"] for d in e["designers"]),
                           "same_design": all(d["same_design"] for d in e["designers"])} for e in entries],
            "targeted_share": float(np.mean([e["targeted_share"] for e in entries])),
            "repeated_share": float(np.mean([e["repeated_share"] for e in entries]))}


def llm_tokens(transcript: Path) -> dict | None:
    """Prompt and completion tokens over every LLM exchange of a run (repairs included), from its transcript."""
    exchanges = [r for r in _read_lines(transcript) if r.get("event") == "exchange"]
    if not exchanges:
        return None
    usage = [r.get("usage") or {} for r in exchanges]
    return {k: sum(u.get(k) or 0 for u in usage) for k in ("prompt_tokens", "completion_tokens")} | {
        "replies": len(exchanges)}


def _steps_per_second(chunks: list[dict]) -> float | None:
    """Env steps per second over all agents, from the chunks' own timings (compilation included)."""
    seconds = sum(c["seconds"] for c in chunks)
    steps = sum(c["steps_per_second"] * c["seconds"] for c in chunks)
    return steps / seconds if seconds else None


def build_comparison(out: Path, settings: StudySettings, errors: dict[str, str] | None = None) -> dict:
    """study.json's content, from the run directories in OUT."""
    errors = errors or {}
    reports = {m: _read_json(out / m / "report.json") for m in settings.methods}
    reference = reports.get(REFERENCE)
    cfg = settings.run_config(settings.methods[0])
    plan = build_plan(cfg, get_method(cfg.method))
    methods = {m: method_summary(out / m, reports[m], reference if m != REFERENCE else None, errors.get(m),
                                 reports.get(SECOND_REFERENCE) if m != SECOND_REFERENCE else None)
               for m in settings.methods}
    return {
        "study": {**settings.to_dict(), "env": cfg.env, "seeds": cfg.seeds, "first_seed": cfg.seed,
                  "env_steps_per_seed": sum(p.updates for p in plan if p.kind == "train") * cfg.steps_per_update,
                  "scored_env_steps_per_seed": sum(p.updates for p in plan if p.where == "final")
                  * cfg.steps_per_update},
        "environment": environment(),
        "reference": REFERENCE,
        "statistics": STATISTICS,
        "methods": methods,
        "pairwise": {k: pairwise({m: r[f"{k}_per_seed"] for m, r in reports.items() if r is not None})
                     for k in ("score", "reward")},
        f"final_evaluation_vs_{REFERENCE}": final_versus_reference(methods),
    }


def write_comparison(out: Path, settings: StudySettings, errors: dict[str, str] | None = None) -> dict:
    """Write study.json, study.md and the plots; returns study.json's content."""
    study = build_comparison(out, settings, errors)
    (out / "study.json").write_text(json.dumps(study, indent=2))
    (out / "study.md").write_text(markdown(study, plot_study(out, study)))
    return study


# -------------------------------------------------------------------------------------------------------- study.md
def _num(x, digits: int = 1, sign: bool = False) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _interval(ci) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.1f}, {ci[1]:.1f}]"


def _seeds(values) -> str:
    return ", ".join(_num(v) for v in values)


def _p(p) -> str:
    return "n/a" if p is None else f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _agent(run: dict) -> str:
    ppo = run["ppo"]
    net = (f"MLP {ppo['depth']} x {ppo['width']}" if ppo["network"] == "mlp"
           else f"IMPALA CNN {'/'.join(map(str, ppo['conv_channels']))}")
    return (f"PPO, {net} on {run['observation']} observations, {ppo['num_envs']} envs x {ppo['num_steps']} steps, "
            f"lr {ppo['lr']:g}")


def markdown(study: dict, plots: list[str]) -> str:
    s, env, ref = study["study"], study["environment"], study["reference"]
    methods = study["methods"]
    done = {m: r for m, r in methods.items() if r["status"] == "finished"}
    score_name = games.get(s["env"]).score_name
    lines = [f"# Does EnvGen help? {len(methods)} methods on {s['env']}, {s['seeds']} seeds each", "",
             f"Every method: the same agent ({_agent(s['run'])}), {s['env_steps_per_seed']:,} env steps per seed, of "
             f"which {s['scored_env_steps_per_seed']:,} are scored in the original game, seeds {s['first_seed']} to "
             f"{s['first_seed'] + s['seeds'] - 1} vmapped in one run per method; only the pretraining environments "
             f"differ. Settings: `{s['config']}`{' with ' + ' '.join(s['overrides']) if s['overrides'] else ''} "
             f"(resolved in study.yaml).", "",
             f"Comparison built {env['date']} on {env['device']} (jax {env['jax']}), commit {str(env['commit'])[:12]}"
             f"{' with uncommitted changes' if env.get('dirty') else ''}."]
    trained = sorted({(x["device"], str(x["commit"])[:12] + ("+dirty" if x.get("dirty") else ""))
                      for r in methods.values() for x in r["sessions"]})
    if trained:
        lines.append("Runs trained on: " + "; ".join(f"{d} at {c}" for d, c in trained)
                     + (" (**more than one machine or code version**)" if len(trained) > 1 else "") + ".")
    lines += ["", f"## {score_name} and reward in the scored phase", "",
              f"| method | status | {score_name} % | per seed | 95% CI | vs {ref} [95% CI] | p | reward | per seed "
              f"| 95% CI | vs {ref} [95% CI] | p |", "|---" * 12 + "|"]
    notes = []
    for m, r in methods.items():
        if r["status"] != "finished":
            error = (r["error"] or "")[:120].replace("|", "/").replace("\n", " ")  # one table cell
            lines.append(f"| {m} | {r['status']}{': ' + error if error else ''} |" + " |" * 10)
            continue
        cells = []
        for key in ("score", "reward"):
            stat, diff = r[key], (r[f"vs_{ref}"] or {}).get(key)
            cells += [f"{_num(stat['mean'])} +/- {_num(stat['std'])}", _seeds(stat["per_seed"]),
                      _interval(stat["ci95"])]
            if stat["ci_note"]:
                notes.append(f"{m}, {key} interval: {stat['ci_note']}")
            if diff is None:
                cells += ["-", "-"]
            else:
                cells += [f"{_num(diff['difference'], sign=True)} {_interval(diff['ci95'])}", _p(diff["p_value"])]
                if diff["note"]:
                    notes.append(f"{m} vs {ref}, {key}: {diff['note']}")
        lines.append(f"| {m} | finished | " + " | ".join(cells) + " |")
    if ref not in done:
        notes.append(f"no finished {ref} run: no differences from it")
    lines += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    lines += [f"Std: {STATISTICS['std']}. CI: {STATISTICS['ci']}. Difference: {STATISTICS['difference']}. "
              f"p: {STATISTICS['test']}.", ""]
    if games.get(s["env"]).score_is_crafter:
        lines += ["The paper (4M-parameter IMPALA CNN on pixels; Tables 1 and 3): "
                  + "; ".join(f"{m}: {sc} / {rw}" for m, sc, rw in PAPER_TABLE1[1:])
                  + "; Fixed 29.9 +/- 0.9 / 12.6 +/- 0.8; Easy-to-Hard 26.8 +/- 1.5 / 12.7 +/- 0.7; Adversarial "
                    "26.8 +/- 0.8 / 12.2 +/- 0.7 (score % / reward). Our agent differs: compare methods with each "
                    "other.", ""]

    second = [(m, r[f"vs_{SECOND_REFERENCE}"]["score"]) for m, r in done.items()
              if r.get(f"vs_{SECOND_REFERENCE}")]
    if second:
        lines += [f"Against {SECOND_REFERENCE} ({score_name}): " + "; ".join(
            f"{m} {_num(d['difference'], sign=True)} {_interval(d['ci95'])}, p {_p(d['p_value'])}" for m, d in second)
            + ".", ""]
    pairs = [r for r in study.get("pairwise", {}).get("score", []) if r["difference"] is not None]
    if pairs:
        lines += [f"## Every pair of methods ({score_name})", "",
                  "Welch's p adjusted by Holm over all pairs; P(A > B): the probability that a seed of A beats a seed "
                  "of B (ties half).", "",
                  "| A | B | A - B [95% CI] | p | p (Holm) | P(A > B) |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['a']} | {r['b']} | {_num(r['difference'], sign=True)} {_interval(r['ci95'])} | "
                  f"{_p(r['p_value'])} | {_p(r['p_holm'])} | {_num(r['p_superior'], 2)} |" for r in pairs]
        lines.append("")
    if done and any(r.get("first_unlock_steps") for r in done.values()):
        lines += ["## The long chain: success in the scored phase and the first unlock", "",
                  "Success: % of scored episodes (mean over seeds). First unlock: the env step (per seed, at the end "
                  "of the chunk) by which some training episode, in any environment, first unlocked it; median over "
                  "the seeds that did, and how many did.", "",
                  "| method | " + " | ".join(LONG_CHAIN) + " |", "|---" * (len(LONG_CHAIN) + 1) + "|"]
        for m, r in done.items():
            cells = []
            for a in LONG_CHAIN:
                steps = [x for x in (r["first_unlock_steps"].get(a) or []) if x is not None]
                seeds = len(r["first_unlock_steps"].get(a) or [])
                unlock = f"{np.median(steps) / 1e6:.2f}M ({len(steps)}/{seeds})" if steps else f"never (0/{seeds})"
                cells.append(f"{_num(r['achievements'].get(a), 2)}%, {unlock}")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines.append("")

    lines += ["## Cost, and checks on the training", "",
              "| method | LLM calls | LLM s | LLM tokens in / out | training s | steps/s (all seeds) | wall s | "
              "env steps per seed | scored episodes per seed | stale restarts |", "|---" * 10 + "|"]
    for m, r in done.items():
        stale = r["stale_restarts"]
        tokens = r.get("llm_tokens")
        token_cell = "-" if not tokens else f"{tokens['prompt_tokens']:,} / {tokens['completion_tokens']:,}"
        lines.append(f"| {m} | {r['llm_calls']} | {_num(r['llm_seconds'], 0)} | {token_cell} | "
                     f"{r['train_seconds']:.0f} | {_num(r.get('steps_per_second'), 0)} | "
                     f"{r['wall_seconds']:.0f} | {r['env_steps']:,} | "
                     f"{', '.join(map(str, r['scored_episodes_per_seed']))} | "
                     f"{_num(None if stale['share'] is None else 100 * stale['share'], 2)} % |")
    lines += ["", "Training s: the compiled training chunks (compilation included); wall s: the run's whole loop. "
              "Stale restarts: training episodes that restarted in their slot's previous world because no fresh one "
              "was ready (raise ppo.resets_per_step if this is more than a few percent).", ""]

    if done:
        names = sorted(next(iter(done.values()))["achievements"])
        lines += ["## Success per achievement in the scored phase (%, mean over seeds)", "",
                  "| achievement | " + " | ".join(done) + " |", "|---" * (len(done) + 1) + "|"]
        lines += [f"| {n} | " + " | ".join(_num(r["achievements"].get(n), 2) for r in done.values()) + " |"
                  for n in names]
        evals = [e["after"] for e in next(iter(done.values()))["evaluations"]]
        lines += ["", f"## Evaluations in the original game ({score_name} %, mean +/- std over seeds)", "",
                  "| method | " + " | ".join(f"after {e}" if e != "final" else "final" for e in evals) + " |",
                  "|---" * (len(evals) + 1) + "|"]
        lines += [f"| {m} | " + " | ".join(f"{_num(e['score_mean'])} +/- {_num(e['score_std'])}"
                                          for e in r["evaluations"]) + " |" for m, r in done.items()]
        finals = [r for r in study.get(f"final_evaluation_vs_{ref}", []) if r["difference"] is not None]
        if finals:
            lines += ["", f"The final evaluation against {ref} (Welch's p, and adjusted by Holm over these "
                      f"{len(finals)} comparisons): " + "; ".join(
                          f"{r['method']} {_num(r['difference'], sign=True)} {_interval(r['ci95'])}, p "
                          f"{_p(r['p_value'])}, Holm {_p(r['p_holm'])}" for r in finals) + "."]
        adapted = {m: r["adaptation"] for m, r in done.items() if r.get("adaptation")}
        if adapted:
            lines += ["", "## How each method's designs answered the feedback", "",
                      "Per cycle after the first (report.json \"adaptation\"): the share of the weakest quarter of the "
                      "achievements in the feedback that some new environment targets (llm/targeting.py's map), the "
                      "share of environments repeated from an earlier cycle, and the changed settings (setting, value) "
                      "the design has that the previous cycle's had not, and the reverse (new / dropped, over all "
                      "designers).", "",
                      "| method | weakest targeted (mean) | repeated envs (mean) | per cycle: targeted / repeated "
                      "(settings new / dropped) |", "|---|---|---|---|"]
            lines += [f"| {m} | {100 * a['targeted_share']:.0f}% | {100 * a['repeated_share']:.0f}% | "
                      + ", ".join(f"c{c['cycle'] + 1}: {100 * c['targeted_share']:.0f}% / "
                                  f"{100 * c['repeated_share']:.0f}%"
                                  + f" ({c['new_settings']} / {c['dropped_settings']})"
                                  + (" (same design)" if c["same_design"] else "")
                                  for c in a["per_cycle"]) + " |" for m, a in adapted.items()]
        learned = {m: r["environment_learning"] for m, r in done.items() if r["environment_learning"]}
        if learned:
            lines += ["", "## Learning inside each LLM environment", ""]
            for m, entries in learned.items():
                lines += environment_learning_markdown(entries, names, f"### {m}")
    lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------------- plots
def _curve(chunks: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Env steps, and mean and std over seeds of the chunks' mean episode return (NaN where no episode ended)."""
    steps = np.array([c["env_steps"] for c in chunks])
    returns = np.array([[np.nan if v is None else v for v in c["return_per_seed"]] for c in chunks], np.float64)
    with quiet_nan():
        return steps, np.nanmean(returns, axis=1), np.nanstd(returns, axis=1)


def plot_study(out: Path, study: dict) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = {m: r for m, r in study["methods"].items() if r["status"] == "finished"}
    if not done:
        return []
    s = study["study"]
    colours = {m: plt.get_cmap("tab10")(i) for i, m in enumerate(study["methods"])}
    scored_from = s["env_steps_per_seed"] - s["scored_env_steps_per_seed"]
    title = f"{s['env']}, {s['seeds']} seeds per method"

    # Final score and reward: mean (bar), 95% CI (error bar), every seed (dots).
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, key, label in ((axes[0], "score", "score (%)"), (axes[1], "reward", "reward")):
        for i, (m, r) in enumerate(done.items()):
            stat = r[key]
            ax.bar(i, np.nan if stat["mean"] is None else stat["mean"], 0.6, color=colours[m], alpha=0.7)
            if stat["ci95"] is not None:
                ax.errorbar(i, stat["mean"], yerr=[[stat["mean"] - stat["ci95"][0]], [stat["ci95"][1] - stat["mean"]]],
                            color="black", capsize=5)
            seeds = [v for v in stat["per_seed"] if v is not None]
            ax.scatter(i + np.linspace(-0.15, 0.15, len(seeds)), seeds, color="black", s=12, zorder=3)
        ax.set_xticks(range(len(done)), list(done), rotation=15)
        ax.set_ylabel(f"{label}: mean, 95% CI, each seed")
    fig.suptitle(f"Scored phase ({title})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "study_scores.png", dpi=110)
    plt.close(fig)

    # Learning curves: training return per chunk, and the score of each evaluation in the original game.
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for m, r in done.items():
        chunks = _read_lines(out / m / "metrics.jsonl")
        if chunks:
            steps, mean, std = _curve(chunks)
            axes[0].plot(steps, mean, color=colours[m], linewidth=1, label=m)
            axes[0].fill_between(steps, mean - std, mean + std, color=colours[m], alpha=0.2)
        ev = r["evaluations"]
        steps = np.array([e["env_steps"] for e in ev])
        mean = np.array([np.nan if e["score_mean"] is None else e["score_mean"] for e in ev])
        std = np.array([np.nan if e["score_std"] is None else e["score_std"] for e in ev])
        axes[1].plot(steps, mean, "o-", color=colours[m], label=m)
        axes[1].fill_between(steps, mean - std, mean + std, color=colours[m], alpha=0.2)
    for ax, label in ((axes[0], "training episode return (mean +/- std over seeds)"),
                      (axes[1], "score % in the original game (mean +/- std over seeds)")):
        ax.axvline(scored_from, color="grey", linestyle="--", linewidth=1, label="scored phase starts")
        ax.set(xlabel="env steps per seed", ylabel=label)
        ax.legend(fontsize=8)
    fig.suptitle(f"Learning curves ({title}); the return is over all training environments of each chunk",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "study_curves.png", dpi=110)
    plt.close(fig)

    # Per-cycle success in the original game, per achievement (the paper's cycle figure, every achievement).
    names = sorted(next(iter(done.values()))["achievements"])
    cols = 6
    fig, axes = plt.subplots(-(-len(names) // cols), cols, figsize=(2.6 * cols, 2.1 * -(-len(names) // cols)),
                             squeeze=False)
    for ax, name in zip(axes.flat, names):
        for m, r in done.items():
            vals = [100 * (e["success_mean"].get(name) or 0.0) for e in r["evaluations"]]
            ax.plot(range(1, len(vals) + 1), vals, "o-", color=colours[m], markersize=3, label=m)
        ax.set_ylim(0, max(1.0, ax.get_ylim()[1]))  # never a negative axis for rates that stayed at 0
        ax.set_title(name, fontsize=8)
        ax.tick_params(labelsize=7)
        labels = [e["after"].replace("cycle ", "c") for e in next(iter(done.values()))["evaluations"]]
        ax.set_xticks(range(1, len(labels) + 1), labels)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6)
    fig.suptitle(f"Success % in the original game after each cycle (c1, c2, ...) and at the end, mean over seeds "
                 f"({title})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "study_success_by_cycle.png", dpi=100)
    plt.close(fig)
    return ["study_scores.png", "study_curves.png", "study_success_by_cycle.png"]
