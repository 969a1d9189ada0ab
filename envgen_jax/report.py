"""Run outputs a researcher reads: report.json, report.md (a table like the paper's Table 1) and PNG plots, and the
agent's success inside each LLM environment of each cycle.

The score is the Crafter score computed as the paper defines it: per seed, success rates pooled over every episode
that finished in the scored phase (the final training phase in the original environment), then
S = exp(mean_i ln(1 + s_i)) - 1 over the achievements; the report gives mean +/- std (population) over seeds.
The reward is the mean return of those same episodes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from envgen_jax import games
from envgen_jax.methods.learning import environment_learning
from envgen_jax.trainer.metrics import RowStats, mean_or_nan, nan_to_none, nan_to_zero, quiet_nan, success_rates

PAPER_TABLE1 = [  # EnvGen reference section 9 (Crafter, 1M scored steps)
    ("PPO (Moon et al.)", "15.5 +/- 0.6", "10.5 +/- 0.6"),
    ("PPO, 0.96M PT in Crafter", "26.4 +/- 2.1", "12.1 +/- 1.0"),
    ("PPO+EnvGen", "32.2 +/- 0.6", "12.6 +/- 0.6"),
]


def _ms(values) -> tuple[float, float]:
    v = np.asarray(values, np.float64)
    v = v[~np.isnan(v)]
    return (float(v.mean()), float(v.std())) if v.size else (float("nan"), float("nan"))




def evaluation_score(entry: dict, game) -> dict:
    """An evaluation's score under the game's own name, from its JSON (`run.loop_state.Evaluation.to_dict`, as
    report.json holds it): {"mean", "std", "per_seed"}. A Crafter evaluation keeps the paper's name
    (crafter_score_mean, ...), another game's is score_mean, ...; an older run scored every game with the Crafter
    formula, so another game's score is computed again from the evaluation's success rates per seed."""
    key = game.score_key
    if f"{key}_mean" in entry:
        return {"mean": entry[f"{key}_mean"], "std": entry[f"{key}_std"], "per_seed": entry[f"{key}_per_seed"]}
    rates = np.array([[np.nan if r is None else r for r in seed] for seed in entry["success_per_seed"]], np.float64)
    scores = game.score(rates)
    mean, std = _ms(scores)
    return {"mean": nan_to_none(mean), "std": nan_to_none(std), "per_seed": [nan_to_none(s) for s in scores]}


def scored_summary(scored: dict | None, names, env: str = "crafter") -> dict:
    """Per-seed and across-seed numbers from the scored phase's summed RowStats (leaves [S], [S, A])."""
    if scored is None:
        return {"episodes_per_seed": [], "score": None, "score_std": None, "reward": None,
                "reward_std": None, "achievements": {}, "achievements_std": {}}
    stats = RowStats(**{k: None if v is None else np.asarray(v) for k, v in scored.items()})
    rates = success_rates(stats)                      # [S, A], NaN for a seed with no finished episode
    scores = games.get(env).score(rates)  # [S]
    rewards = mean_or_nan(stats.return_sum, stats.episodes)
    score_m, score_s = _ms(scores)
    reward_m, reward_s = _ms(rewards)
    with quiet_nan():  # a subtask no seed ever finished stays NaN (reported as None), not 0
        ach_m = np.nanmean(100 * rates, axis=0) if rates.size else []
        ach_s = np.nanstd(100 * rates, axis=0) if rates.size else []
    return {**_return_pct(rewards, games.get(env).max_return),
        "episodes_per_seed": np.asarray(stats.episodes).tolist(),
        "score": nan_to_none(score_m), "score_std": nan_to_none(score_s), "score_per_seed": [nan_to_none(s) for s in scores],
        "reward": nan_to_none(reward_m), "reward_std": nan_to_none(reward_s), "reward_per_seed": [nan_to_none(r) for r in rewards],
        "achievements": {n: nan_to_none(m) for n, m in zip(names, ach_m)},
        "achievements_std": {n: nan_to_none(s) for n, s in zip(names, ach_s)},
    }


def _return_pct(rewards, max_return, name: str = "return_pct") -> dict:
    """A game with a most-an-episode-can-earn (Craftax: 226) reports its mean return as a share of it, per seed."""
    if not max_return:
        return {}
    pct = 100.0 * np.asarray([np.nan if r is None else r for r in rewards], np.float64) / max_return
    mean, std = _ms(pct)
    return {name: nan_to_none(mean), f"{name}_std": nan_to_none(std),
            f"{name}_per_seed": [nan_to_none(p) for p in pct]}


# Craftax's table scores a run by the episodes that end near the end of training (its PPO logs the mean return of
# the episodes each update finishes); ours: those that ended during the last END_UPDATES updates (49,152 env steps
# per seed at 256 x 16, the last 5% of 1M).
END_UPDATES = 12


def end_of_training_returns(curve: list[dict], steps_per_update: int) -> tuple[list, int]:
    """Per seed, the mean return of the training episodes that ended in the chunks covering the last END_UPDATES
    updates (episode-weighted; None for a seed that finished none), and the env steps per seed those chunks span."""
    if not curve:
        return [], 0
    last = curve[-1]["env_steps"]
    first = next(i for i, c in enumerate(curve) if c["env_steps"] > last - END_UPDATES * steps_per_update)
    window = curve[first:]
    n = np.array([c["episodes_per_seed"] for c in window], np.float64)                               # [chunks, S]
    r = np.array([[0.0 if v is None else v for v in c["return_per_seed"]] for c in window], np.float64)
    total, episodes = (n * r).sum(axis=0), n.sum(axis=0)
    start = curve[first - 1]["env_steps"] if first else 0
    return [float(t / e) if e else None for t, e in zip(total, episodes)], last - start


def table_measures(state, cfg, max_return, final_eval) -> dict:
    """Beside the scored phase's return_pct: the table's own measure (return_pct_end, `end_of_training_returns`) and
    `final_eval`'s in held-out worlds of the original game (eval_return_pct)."""
    if not max_return:
        return {}
    end, span = end_of_training_returns(state.curve, cfg.steps_per_update)
    out = {**_return_pct(end, max_return, "return_pct_end"), "return_pct_end_env_steps": span}
    if final_eval is not None and final_eval.mean_return_per_seed is not None:
        out.update(_return_pct(final_eval.mean_return_per_seed, max_return, "eval_return_pct"))
    return out


def write_report(out: Path, cfg, state, names, *, scored_env_steps: int, wall_seconds: float,
                 method_entries: dict, timing: dict | None = None) -> dict:
    """Write report.json, report.md and the plots of a finished run from its data: the run configuration, the loop
    state (`envgen_jax.run.loop.LoopState`), the achievement names, the steps of the scored phase, the wall time,
    the method's own entries (its `report_entries`, e.g. sfl's selections) and `timing`: the `compile` record and
    `phases` seconds (`envgen_jax.run.compile_record.RunTiming.report_fields`). Returns the report dict."""
    out, names, game = Path(out), list(names), games.get(cfg.env)
    summary = scored_summary(state.scored, names, cfg.env)
    final_eval = next((e for e in reversed(state.evals) if e.final), None)
    report = {
        "method": cfg.method, "env": cfg.env, "seeds": cfg.seeds, "first_seed": cfg.seed,
        **summary, **table_measures(state, cfg, game.max_return, final_eval),
        # The Crafter score under its own name, as the paper reports it (None for other games).
        "crafter_score": summary["score"] if game.score_is_crafter else None,
        "crafter_score_std": summary["score_std"] if game.score_is_crafter else None,
        "score_definition": game.score_definition,
        "llm_calls": state.llm_calls,
        "llm_seconds": state.llm_seconds,
        "env_steps": state.env_steps,
        "scored_env_steps": scored_env_steps,
        "wall_seconds": wall_seconds,
        "final_evaluation": final_eval and final_eval.to_dict(),
        "cycle_evaluations": [e.to_dict() for e in state.evals if not e.final],
        "environments": state.designs,
        "environment_learning": environment_learning(state, names),
    }
    report.update(timing or {})
    if getattr(state, "first_unlock", None):  # the paper's unlock times: per achievement, per seed (None: never)
        report["first_unlock_steps"] = {n: [row[a] for row in state.first_unlock] for a, n in enumerate(names)}
    if cfg.sweep.active:
        report["sweep"] = sweep_summary(cfg, summary)
    if len(state.designs) > 1:
        report["adaptation"] = adaptation(state, names, game.config_cls, cfg.num_designers)
    report.update(method_entries)
    plots = plot_run(out, state, names, cfg.schedule.cycles)
    (out / "report.md").write_text(_markdown(report, names, plots))
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def adaptation(state, names, config_cls, num_designers: int = 1) -> list[dict]:
    """Per cycle after the first, per designer: how the design answered the feedback it was given.

    weakest: the bottom quarter of the achievements in that feedback (the evaluation after the previous cycle; a
    designer per seed reads its seed's); targeted_weakest: those that some environment of the new design helps
    (the game's targeting map, llm/targeting.py: the setting's own levers and its direct prerequisites');
    repeated_environments: environments equal to one of any earlier cycle's design; duplicate_environments: those
    equal to another of the same design (both as the designer left them: llm.distinct asks such a reply again, within
    its repair budget, and what still repeats counts here); new_settings / dropped_settings:
    the changed (setting, value) pairs the design has and the previous one had not, and the reverse; same_design:
    the same environments as the previous cycle's (in any order)."""
    target_map = games.get(config_cls.ENV_NAME).targeting
    out = []
    designs = {d["cycle"]: d for d in state.designs}
    evals = {e.cycle: e for e in state.evals if not e.final}
    quarter = max(1, -(-len(names) // 4))
    original = config_cls.original()
    for cycle in sorted(designs):
        if cycle == 0 or cycle - 1 not in designs or cycle - 1 not in evals:
            continue
        feedback = evals[cycle - 1]
        rows = []
        for d, designer in enumerate(designs[cycle]["designers"]):
            rates = ([nan_to_zero(feedback.success_mean[n]) for n in names] if num_designers == 1
                     else [nan_to_zero(v) for v in feedback.success_per_seed[d]])
            weakest = [names[i] for i in np.argsort(rates, kind="stable")[:quarter]]
            configs = [config_cls.from_dict(c) for c in designer["configs"]]
            before = [config_cls.from_dict(c) for c in designs[cycle - 1]["designers"][d]["configs"]]
            earlier = [config_cls.from_dict(c) for k in range(cycle) for c in designs[k]["designers"][d]["configs"]]
            pairs = lambda cs: {(s.path, repr(getattr(c, s.name))) for c in cs for s in config_cls.schema()  # noqa: E731
                                if getattr(c, s.name) != getattr(original, s.name)}
            targeted = [w for w in weakest if any(target_map.helps(c, [w]) for c in configs)]
            rows.append({"weakest": weakest, "targeted_weakest": targeted,
                         "targeted_share": len(targeted) / len(weakest),
                         "repeated_environments": sum(c in earlier for c in configs), "environments": len(configs),
                         "duplicate_environments": sum(c in configs[:i] for i, c in enumerate(configs)),
                         "new_settings": len(pairs(configs) - pairs(before)),
                         "dropped_settings": len(pairs(before) - pairs(configs)),
                         "same_design": sorted(map(repr, configs)) == sorted(map(repr, before))})
        out.append({"cycle": cycle, "designers": rows,
                    "targeted_share": float(np.mean([r["targeted_share"] for r in rows])),
                    "repeated_share": sum(r["repeated_environments"] for r in rows) / max(
                        1, sum(r["environments"] for r in rows)),
                    "duplicate_environments": sum(r["duplicate_environments"] for r in rows)})
    return out


def sweep_summary(cfg, summary: dict) -> list[dict]:
    """Per sweep combination: its settings, its agents' labels, and score and reward mean +/- std over its seeds
    (the agents are ordered combination-major: `RunConfig.agent_seeds`)."""
    out = []
    for i, point in enumerate(cfg.sweep.points()):
        agents = slice(i * cfg.seeds, (i + 1) * cfg.seeds)
        per = {k: [np.nan if v is None else v for v in summary.get(f"{k}_per_seed", [])][agents]
               for k in ("score", "reward")}
        (score, score_std), (reward, reward_std) = _ms(per["score"]), _ms(per["reward"])
        out.append({"settings": point, "agents": cfg.agent_labels[agents],
                    "score": nan_to_none(score), "score_std": nan_to_none(score_std),
                    "score_per_seed": [nan_to_none(v) for v in per["score"]],
                    "reward": nan_to_none(reward), "reward_std": nan_to_none(reward_std)})
    return out


def _pm(m, s, digits=1) -> str:
    if m is None:
        return "n/a"
    return f"{m:.{digits}f} +/- {s:.{digits}f}" if s is not None else f"{m:.{digits}f}"


def _time_line(r: dict) -> list[str]:
    """Where the wall time went (runs that recorded it), as one line."""
    if not r.get("phases") or not r.get("compile"):
        return []
    c = r["compile"]
    phases = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in r["phases"].items())
    return ["", f"Time per phase: {phases}; {len(c['programs'])} programs compiled or loaded, "
                f"{c['cache_hits']} from the persistent compilation cache (compile.json, phases.json)."]


def _markdown(r: dict, names, plots: list[str]) -> str:
    lines = [f"# {r['method']} on {r['env']}", "",
             f"{r['seeds']} seed(s) from {r['first_seed']}; {r['env_steps']:,} env steps per seed, of which "
             f"{r['scored_env_steps']:,} scored; {r['llm_calls']} LLM calls ({r['llm_seconds']:.0f} s); "
             f"{r['wall_seconds']:.0f} s wall time.", *_time_line(r), "",
             "| model | LLM calls | score % | reward | scored episodes per seed |", "|---|---|---|---|---|",
             f"| this run: {r['method']} | {r['llm_calls']} | {_pm(r['score'], r['score_std'])} | "
             f"{_pm(r['reward'], r['reward_std'])} | {', '.join(str(e) for e in r['episodes_per_seed'])} |"]
    if r.get("sweep"):
        lines += ["", f"The {len(r['sweep'])} sweep combinations, each over its {r['seeds']} seed(s) (the row above "
                  "pools every agent):", "", "| settings | score % | reward | score per seed |", "|---|---|---|---|"]
        lines += [f"| {', '.join(f'{k} {v:g}' for k, v in p['settings'].items())} | {_pm(p['score'], p['score_std'])} "
                  f"| {_pm(p['reward'], p['reward_std'], 2)} | "
                  f"{', '.join('n/a' if v is None else f'{v:.1f}' for v in p['score_per_seed'])} |" for p in r["sweep"]]
    if r.get("return_pct") is not None:
        lines += ["", f"Mean episode return: {_pm(r['return_pct'], r['return_pct_std'], 2)} % of the most an episode "
                  f"can earn ({games.get(r['env']).max_return}), per seed "
                  f"{', '.join('n/a' if v is None else f'{v:.2f}' for v in r['return_pct_per_seed'])}."]
        if r.get("return_pct_end") is not None:
            lines.append(f"Of the episodes that ended in the last {r['return_pct_end_env_steps']:,} env steps per seed "
                         f"(as Craftax's table scores a run): {_pm(r['return_pct_end'], r['return_pct_end_std'], 2)} %.")
        if r.get("eval_return_pct") is not None:
            lines.append(f"In the final evaluation (held-out worlds of the original game): "
                         f"{_pm(r['eval_return_pct'], r['eval_return_pct_std'], 2)} %.")
    if games.get(r["env"]).score_is_crafter:
        lines += ["", "For reference, the paper's Table 1 (PPO agent, 4M params, pixels, 1M scored steps):", "",
                  "| model | score % | reward |", "|---|---|---|"]
        lines += [f"| {m} | {s} | {w} |" for m, s, w in PAPER_TABLE1]
    lines += ["", r["score_definition"] + ".", "", "## Success per achievement in the scored phase (%)", "",
              "| achievement | mean +/- std over seeds |", "|---|---|"]
    for n in sorted(names):
        lines.append(f"| {n} | {_pm(r['achievements'].get(n), r['achievements_std'].get(n), 2)} |")
    if r["cycle_evaluations"]:
        lines += ["", "## Evaluations in the original environment (the LLM's feedback)", "",
                  "| after cycle | env steps | episodes per seed | score % |", "|---|---|---|---|"]
        for e in r["cycle_evaluations"]:
            score = evaluation_score(e, games.get(r["env"]))
            lines.append(f"| {e['cycle'] + 1} | {e['env_steps']:,} | {', '.join(map(str, e['episodes_per_seed']))} | "
                         f"{_pm(score['mean'], score['std'])} |")
    if r.get("adaptation"):
        lines += ["", "## How each design answered its feedback", "",
                  "Per cycle after the first: the bottom quarter of the achievements in the feedback, those some new "
                  "environment helps (llm/targeting.py's map), environments that repeat an earlier cycle's and those "
                  "that duplicate another of the same design (what the designer's re-asks, llm.distinct, left), and "
                  "the (setting, value) pairs added and dropped against the previous design.", "",
                  "| cycle | designer | weakest in the feedback | targeted | repeated envs | duplicates | "
                  "settings added / dropped |", "|---|---|---|---|---|---|---|"]
        for a in r["adaptation"]:
            for d, row in enumerate(a["designers"]):
                lines.append(f"| {a['cycle'] + 1} | {d} | {', '.join(row['weakest'])} | "
                             f"{len(row['targeted_weakest'])}/{len(row['weakest'])} | "
                             f"{row['repeated_environments']}/{row['environments']} | "
                             f"{row.get('duplicate_environments', 0)} | "
                             f"{row['new_settings']} / {row['dropped_settings']} |")
    if r["environments"]:
        lines += ["", "## Environments per cycle", ""]
        for d in r["environments"]:
            lines.append(f"Cycle {d['cycle'] + 1}{' (reused)' if d.get('reused') else ''}:")
            for designer in d["designers"]:
                for p, c in zip(designer["purposes"], designer["configs"]):
                    changed = {k: v for sec in c.values() for k, v in sec.items()}
                    lines.append(f"- `{json.dumps(changed)}`: {p[:200]}")
            lines.append("")
    if r["environment_learning"]:
        lines += ["", *environment_learning_markdown(r["environment_learning"], names,
                                                     "## Learning inside each LLM environment")]
    if r.get("learnability_selections"):
        lines += ["", "## Learnability selections (sfl, envgen_sfl)", "",
                  "Each selection measured every candidate with the current policy: p is its success rate on the "
                  "achievements not yet mastered, learnability p (1 - p). Means over seeds; rows and weights of "
                  "seed 0.", "",
                  "| cycle | env steps | candidates measured | mean p % | median learnability | seed 0 trains in "
                  "(row: weight) |", "|---|---|---|---|---|---|"]
        for sel in r["learnability_selections"]:
            p = [x for x in sel["mean_p_per_seed"] if x is not None]
            med = [q[2] for q in sel["learnability_quartiles_per_seed"] if q is not None]
            trained = [f"original: {sel['original_weight_per_seed'][0]:.2f}"] + [
                f"{row}: {w:.2f}" for row, w in zip(sel["trained_rows_per_seed"][0],
                                                    sel["trained_weights_per_seed"][0])]
            measured = ", ".join(map(str, sel["measured_per_seed"]))
            lines.append(f"| {sel['cycle'] + 1} | {sel['env_steps']:,} | {measured} | "
                         f"{f'{100 * np.mean(p):.1f}' if p else 'n/a'} | {f'{np.mean(med):.3f}' if med else 'n/a'} | "
                         f"{', '.join(trained)} |")
    lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def environment_learning_markdown(entries: list[dict], names, title: str) -> list[str]:
    """report.md's (and study.md's) section: per cycle, each LLM environment and the agent's success inside it."""
    lines = [title, "",
             "Success (%) in each LLM environment itself, from the training episodes that finished in it during the "
             "cycle: per seed pooled over those episodes, then the mean over seeds. Episodes still running when the "
             "phase ended are not counted, so few episodes (long ones cut off) make a rate noisy and favour short "
             "episodes.", ""]
    for entry in entries:
        lines.append(f"Cycle {entry['cycle'] + 1} ({entry['phase']} phase):")
        lines.append("")
        for i, env in enumerate(entry["environments"], start=1):
            changed = {k: v for sec in env["config"].values() for k, v in sec.items()}
            reward = "n/a" if env["reward"] is None else f"{env['reward']:.1f}"
            lines.append(f"{i}. `{json.dumps(changed)}`, episodes per seed "
                         f"{', '.join(map(str, env['episodes_per_seed']))}, reward {reward}: {env['purpose'][:160]}")
        envs = entry["environments"]
        lines += ["", "| achievement | " + " | ".join(f"env {i}" for i in range(1, len(envs) + 1)) + " |",
                  "|---" * (len(envs) + 1) + "|"]
        for n in sorted(names):
            cells = ["n/a" if e["success"].get(n) is None else f"{e['success'][n]:.1f}" for e in envs]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def plot_run(out: Path, state, names, cycles: int) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    if state.curve:
        steps = np.array([c["env_steps"] for c in state.curve])
        returns = np.array([[np.nan if v is None else v for v in c["return_per_seed"]] for c in state.curve])
        with np.errstate(invalid="ignore"), quiet_nan():
            mean, std = np.nanmean(returns, axis=1), np.nanstd(returns, axis=1)
        fig, ax = plt.subplots(figsize=(8, 4))
        colours = {"llm": "tab:orange", "mixed": "tab:purple", "original": "tab:blue", "final": "tab:green"}
        for phase, colour in colours.items():
            mask = np.array([c["phase"] == phase for c in state.curve])
            if mask.any():
                ax.scatter(steps[mask], mean[mask], s=8, color=colour, label=f"{phase} envs", zorder=3)
        ax.plot(steps, mean, color="black", linewidth=1)
        ax.fill_between(steps, mean - std, mean + std, color="grey", alpha=0.3, label="+/- std over seeds")
        ax.set_xlabel("env steps per seed")
        ax.set_ylabel("mean episode return (episodes ended in the chunk)")
        ax.legend(fontsize=8)
        ax.set_title("Learning curve")
        fig.tight_layout()
        fig.savefig(out / "learning_curve.png", dpi=110)
        plt.close(fig)
        written.append("learning_curve.png")
    if state.evals:
        order = sorted(names)
        fig, ax = plt.subplots(figsize=(12, 4.5))
        width = 0.8 / len(state.evals)
        for i, e in enumerate(state.evals):
            vals = [100 * (e.success_mean.get(n) or 0.0) for n in order]
            errs = [100 * (e.success_std.get(n) or 0.0) for n in order]
            label = "final" if e.final else f"after cycle {e.cycle + 1}"
            ax.bar(np.arange(len(order)) + i * width, vals, width, yerr=errs, label=label, capsize=1.5)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(0, 100)
        ax.set_xticks(np.arange(len(order)) + 0.4 - width / 2, order, rotation=60, ha="right", fontsize=8)
        ax.set_ylabel("success rate in the original env (%)")
        ax.set_title("Per-achievement success by cycle (mean +/- std over seeds)")
        ax.legend(fontsize=8, ncol=2)
        fig.tight_layout()
        fig.savefig(out / "success_by_cycle.png", dpi=110)
        plt.close(fig)
        written.append("success_by_cycle.png")
    return written
