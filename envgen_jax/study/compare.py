"""The comparison (study.json's content), read from the run directories' files alone (report.json, metrics.jsonl,
sessions.jsonl, llm_transcript.jsonl), never from live run objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from envgen_jax import games
from envgen_jax.methods import get as get_method
from envgen_jax.report import evaluation_score
from envgen_jax.run.loop import latest_checkpoint
from envgen_jax.run.plan import build_plan
from envgen_jax.run.provenance import environment
from envgen_jax.study.settings import StudySettings
from envgen_jax.study.stats import (REFERENCE, SECOND_REFERENCE, STATISTICS, difference, mean_ci, pairwise,
                                    with_holm)

# A game with a most-an-episode-can-earn (Craftax: 226) adds its return as % of it: of the scored phase's episodes
# (the protocol's headline), of the episodes near the end of training (Craftax's table) and in held-out worlds.
RETURN_MEASURES = ("return_pct", "return_pct_end", "eval_return_pct")

LONG_CHAIN = games.get("crafter").chain  # the paper's figure of unlock times (each game names its own: Game.chain)


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


def read_lines(path: Path) -> list[dict]:
    """A JSON-lines file's records (metrics.jsonl, sessions.jsonl, ...); none if it does not exist."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def method_summary(run_dir: Path, report: dict | None, reference: dict | None, error: str | None = None,
                   second: dict | None = None) -> dict:
    """One method's row of the comparison, from its run directory; `reference` is ppo's report.json (or None),
    `second` envgen's (or None)."""
    status = ("finished" if report is not None else "failed" if error
              else "started" if latest_checkpoint(run_dir) is not None else "not started")
    entry: dict = {"status": status, "error": error, "sessions": read_lines(run_dir / "sessions.jsonl")}
    if report is None:
        return entry
    chunks, game = read_lines(run_dir / "metrics.jsonl"), games.get(report["env"])
    measures = measures_of(report)
    evals = [*report["cycle_evaluations"], *([report["final_evaluation"]] if report["final_evaluation"] else [])]
    entry.update({
        "seeds": report["seeds"], "env_steps": report["env_steps"], "scored_env_steps": report["scored_env_steps"],
        "scored_episodes_per_seed": report["episodes_per_seed"],
        **{k: mean_ci(report[f"{k}_per_seed"]) for k in measures},
        f"vs_{REFERENCE}": None if reference is None else {
            k: difference(report[f"{k}_per_seed"], reference[f"{k}_per_seed"]) for k in measures_of(report, reference)},
        f"vs_{SECOND_REFERENCE}": None if second is None else {
            k: difference(report[f"{k}_per_seed"], second[f"{k}_per_seed"]) for k in measures_of(report, second)},
        "first_unlock_steps": {a: report.get("first_unlock_steps", {}).get(a) for a in game.chain},
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


def measures_of(*reports: dict) -> tuple[str, ...]:
    """The statistics every one of these report.json's has per seed: score and reward, and the return measures of
    a game with a most-an-episode-can-earn (`RETURN_MEASURES`)."""
    return ("score", "reward", *(k for k in RETURN_MEASURES if reports
                                 and all(r.get(f"{k}_per_seed") is not None for r in reports)))


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
    exchanges = [r for r in read_lines(transcript) if r.get("event") == "exchange"]
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
    finished = {m: r for m, r in reports.items() if r is not None}
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
        "pairwise": {k: pairwise({m: r[f"{k}_per_seed"] for m, r in finished.items()})
                     for k in measures_of(*finished.values())},
        f"final_evaluation_vs_{REFERENCE}": final_versus_reference(methods),
    }

