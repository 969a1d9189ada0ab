"""study.md: the comparison (study.json's content) as tables, one helper per section."""

from __future__ import annotations

import numpy as np

from envgen_jax import games
from envgen_jax.report import PAPER_TABLE1, environment_learning_markdown
from envgen_jax.study.stats import SECOND_REFERENCE, STATISTICS


def _num(x, digits: int = 1, sign: bool = False) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _interval(ci, digits: int = 1) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _seeds(values, digits: int = 1) -> str:
    return ", ".join(_num(v, digits) for v in values)


def _p(p) -> str:
    return "n/a" if p is None else f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _agent(run: dict) -> str:
    ppo = run["ppo"]
    if isinstance(run.get("network"), dict):  # the sectioned settings; older runs hold them flat in `ppo`
        kind = run["network"]["kind"]
        settings = run["network"][kind]
        ppo = {**ppo, "network": kind, "conv_channels": settings.get("channels"), **settings}
    net = (f"MLP {ppo['depth']} x {ppo['width']}" if ppo["network"] == "mlp"
           else f"IMPALA CNN {'/'.join(map(str, ppo['conv_channels']))}" if ppo["network"] == "conv"
           else f"{ppo['network']} network")
    return (f"PPO, {net} on {run['observation']} observations, {ppo['num_envs']} envs x {ppo['num_steps']} steps, "
            f"lr {ppo['lr']:g}")


def markdown(study: dict, plots: list[str]) -> str:
    """study.md's text: the setup, then one section per table (a section with nothing to show is left out)."""
    done = {m: r for m, r in study["methods"].items() if r["status"] == "finished"}
    score_name = games.get(study["study"]["env"]).score_name
    lines = _setup(study) + _scores(study, done, score_name) + _versus_second(done, score_name)
    game = games.get(study["study"]["env"])
    lines += _returns(study, done, game) + _return_parts(study, done, game) + _pairs(study, score_name)
    lines += _long_chain(done, game) + _cost(done)
    if done:
        names = sorted(next(iter(done.values()))["achievements"])
        lines += _achievements(done, names) + _evaluations(study, done, score_name) + _adaptation(done)
        lines += _environment_learning(done, names)
    lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def _setup(study: dict) -> list[str]:
    """The title, what every method shares, and where the comparison was built and the runs trained."""
    s, env, methods = study["study"], study["environment"], study["methods"]
    lines = [f"# Does EnvGen help? {len(methods)} methods on {s['env']}, {s['seeds']} seeds each", "",
             f"Every method: the same agent ({_agent(s['run'])}), {s['env_steps_per_seed']:,} env steps per seed, of "
             f"which {s['scored_env_steps_per_seed']:,} are scored in the original game, seeds {s['first_seed']} to "
             f"{s['first_seed'] + s['seeds'] - 1}{_how_trained(methods)}; only the pretraining environments "
             f"differ. Settings: `{s['config']}`{' with ' + ' '.join(s['overrides']) if s['overrides'] else ''} "
             f"(resolved in study.yaml).", "",
             f"Comparison built {env['date']} on {env['device']} (jax {env['jax']}), commit {str(env['commit'])[:12]}"
             f"{' with uncommitted changes' if env.get('dirty') else ''}."]
    trained = sorted({(x["device"], str(x["commit"])[:12] + ("+dirty" if x.get("dirty") else ""))
                      for r in methods.values() for x in r["sessions"]})
    if trained:
        lines.append("Runs trained on: " + "; ".join(f"{d} at {c}" for d, c in trained)
                     + (" (**more than one machine or code version**)" if len(trained) > 1 else "") + ".")
    return lines


def _how_trained(methods: dict) -> str:
    """How the runs were laid out, from their sessions: the fused groups (methods x seeds as the agents of one
    compiled program), the methods trained in a run of their own, and those a fused group began and a run of their
    own finished (a failed member retried alone)."""
    fused, alone, finished_alone = [], [], []
    for m, r in methods.items():
        sessions = r["sessions"]
        group = (sessions[-1].get("fused_with") if sessions else None) or [m]
        if len(group) > 1:
            fused += [group] if group not in fused else []
        else:
            (finished_alone if any(x.get("fused_with") for x in sessions) else alone).append(m)
    if not fused and not finished_alone:
        return " vmapped in one run per method"
    parts = [f"{_and(g)} trained fused (methods x seeds as the agents of one compiled program)" for g in fused]
    if alone:
        parts.append(f"{_and(alone)} {'each ' if len(alone) > 1 else ''}vmapped in a run of its own")
    if finished_alone:
        parts.append(f"{_and(finished_alone)} finished in a run of its own")
    return ": " + "; ".join(parts)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _scores(study: dict, done: dict, score_name: str) -> list[str]:
    """The score and reward of the scored phase per method, against the reference, with the notes on missing
    statistics and, for Crafter, the paper's numbers."""
    ref = study["reference"]
    lines = ["", f"## {score_name} and reward in the scored phase", "",
             f"| method | status | {score_name} % | per seed | 95% CI | vs {ref} [95% CI] | p | reward | per seed "
             f"| 95% CI | vs {ref} [95% CI] | p |", "|---" * 12 + "|"]
    notes = []
    for m, r in study["methods"].items():
        if r["status"] != "finished":
            error = (r["error"] or "")[:120].replace("|", "/").replace("\n", " ")  # one table cell
            lines.append(f"| {m} | {r['status']}{': ' + error if error else ''} |" + " |" * 10)
            continue
        cells = []
        for key in ("score", "reward"):
            cells += _score_cells(m, key, r[key], (r[f"vs_{ref}"] or {}).get(key), ref, notes)
        lines.append(f"| {m} | finished | " + " | ".join(cells) + " |")
    if ref not in done:
        notes.append(f"no finished {ref} run: no differences from it")
    lines += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    lines += [f"Std: {STATISTICS['std']}. CI: {STATISTICS['ci']}. Difference: {STATISTICS['difference']}. "
              f"p: {STATISTICS['test']}.", ""]
    if games.get(study["study"]["env"]).score_is_crafter:
        lines += ["The paper (4M-parameter IMPALA CNN on pixels; Tables 1 and 3): "
                  + "; ".join(f"{m}: {sc} / {rw}" for m, sc, rw in PAPER_TABLE1[1:])
                  + "; Fixed 29.9 +/- 0.9 / 12.6 +/- 0.8; Easy-to-Hard 26.8 +/- 1.5 / 12.7 +/- 0.7; Adversarial "
                    "26.8 +/- 0.8 / 12.2 +/- 0.7 (score % / reward). Our agent differs: compare methods with each "
                    "other.", ""]
    return lines


def _score_cells(method: str, key: str, stat: dict, diff: dict | None, ref: str, notes: list[str],
                 digits: int = 1) -> list[str]:
    """One statistic's five cells of the scores table (mean +/- std, per seed, CI, difference, p); the reasons for
    missing statistics go to `notes`."""
    cells = [f"{_num(stat['mean'], digits)} +/- {_num(stat['std'], digits)}", _seeds(stat["per_seed"], digits),
             _interval(stat["ci95"], digits)]
    if stat["ci_note"]:
        notes.append(f"{method}, {key} interval: {stat['ci_note']}")
    if diff is None:
        return cells + ["-", "-"]
    if diff["note"]:
        notes.append(f"{method} vs {ref}, {key}: {diff['note']}")
    return cells + [f"{_num(diff['difference'], digits, sign=True)} {_interval(diff['ci95'], digits)}",
                    _p(diff["p_value"])]


def _versus_second(done: dict, score_name: str) -> list[str]:
    """One line: each method's score against the second reference (EnvGen)."""
    second = [(m, r[f"vs_{SECOND_REFERENCE}"]["score"]) for m, r in done.items()
              if r.get(f"vs_{SECOND_REFERENCE}")]
    if not second:
        return []
    return [f"Against {SECOND_REFERENCE} ({score_name}): " + "; ".join(
        f"{m} {_num(d['difference'], sign=True)} {_interval(d['ci95'])}, p {_p(d['p_value'])}" for m, d in second)
        + ".", ""]


def _pairs(study: dict, score_name: str) -> list[str]:
    """Every pair of methods: the difference, Welch's p with Holm's adjustment, and P(A > B)."""
    pairs = [r for r in study.get("pairwise", {}).get("score", []) if r["difference"] is not None]
    if not pairs:
        return []
    return [f"## Every pair of methods ({score_name})", "",
            "Welch's p adjusted by Holm over all pairs; P(A > B): the probability that a seed of A beats a seed "
            "of B (ties half).", "",
            "| A | B | A - B [95% CI] | p | p (Holm) | P(A > B) |", "|---|---|---|---|---|---|",
            *(f"| {r['a']} | {r['b']} | {_num(r['difference'], sign=True)} {_interval(r['ci95'])} | "
              f"{_p(r['p_value'])} | {_p(r['p_holm'])} | {_num(r['p_superior'], 2)} |" for r in pairs), ""]


def _long_chain(done: dict, game) -> list[str]:
    """The game's chain of skills (`Game.chain`: Crafter's long chain, Craftax's deep skills): per skill and method,
    success in the scored phase and the env step of the first unlock."""
    if not (done and game.chain and any(r.get("first_unlock_steps") for r in done.values())):
        return []
    lines = [f"## {game.chain_name}: success in the scored phase and the first unlock", "",
             "Success: % of scored episodes (mean over seeds). First unlock: the env step (per seed, at the end "
             "of the chunk) by which some training episode, in any environment, first unlocked it; median over "
             "the seeds that did, and how many did.", "",
             "| skill | " + " | ".join(done) + " |", "|---" * (len(done) + 1) + "|"]
    for a in game.chain:
        cells = []
        for r in done.values():
            steps = [x for x in (r["first_unlock_steps"].get(a) or []) if x is not None]
            seeds = len(r["first_unlock_steps"].get(a) or [])
            unlock = f"{np.median(steps) / 1e6:.2f}M ({len(steps)}/{seeds})" if steps else f"never (0/{seeds})"
            cells.append(f"{_num(r['achievements'].get(a), 2)}%, {unlock}")
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return lines + [""]


# The mean return's three measures (report.json's keys): each one's column title and its short name.
RETURN_MEASURES = {"return_pct": ("scored phase", "scored phase"),
                   "return_pct_end": ("end of training (the table's measure)", "end of training"),
                   "eval_return_pct": ("held-out worlds", "held-out")}


def _returns(study: dict, done: dict, game) -> list[str]:
    """A game with a most-an-episode-can-earn (Craftax: 226): the mean episode return as % of it per method, three
    ways (the scored phase's episodes, those near the end of training as Craftax's table, held-out worlds), against
    the reference and every pair (Holm), and the published numbers beside them. Two decimals: the returns are near
    2%, where one decimal hides the differences the tests find."""
    if not game.max_return or not any(r.get("return_pct") for r in done.values()):
        return []
    ref, notes = study["reference"], []
    pairwise = {key: {frozenset((r["a"], r["b"])): r for r in study.get("pairwise", {}).get(key, [])}
                for key in RETURN_MEASURES}
    lines = [f"## Mean episode return, % of {game.max_return:g}", "",
             "Scored phase: every episode that ended in the scored phase (the protocol's headline). End of training: "
             "the episodes that ended in the last 12 updates (how Craftax's table scores a run). Held-out worlds: "
             "the final evaluation in new worlds of the original game. Mean +/- std over seeds, the 95% CI, and the "
             f"difference from {ref} with Welch's p, and that p adjusted by Holm over every pair of methods "
             "(the table below).", ""]
    for key, (title, _) in RETURN_MEASURES.items():
        rows = {m: r for m, r in done.items() if r.get(key)}
        if not rows:
            continue
        lines += [f"| method | {title} | per seed | 95% CI | vs {ref} [95% CI] | p | p (Holm) |", "|---" * 7 + "|"]
        for m, r in rows.items():
            cells = _score_cells(m, key, r[key], (r[f"vs_{ref}"] or {}).get(key), ref, notes, digits=2)
            pair = pairwise[key].get(frozenset((m, ref)))
            cells.append("-" if pair is None else _p(pair["p_holm"]))
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [f"- {n}" for n in notes] + ([""] if notes else []) + _return_pairs(pairwise)
    if game.published_return_pct:
        lines += [f"Published (% of {game.max_return:g}, Craftax-1M, symbolic; their agents and measures, not "
                  "ours): " + "; ".join(f"{m} {v}" for m, v in game.published_return_pct) + ".", ""]
    return lines


def _return_pairs(pairwise: dict[str, dict]) -> list[str]:
    """Every pair of methods on each return measure: A - B and Welch's p adjusted by Holm over all pairs (the
    family is the pairs of one measure)."""
    pairs = [r for r in pairwise["return_pct"].values() if r["difference"] is not None]
    if not pairs:
        return []
    keys = [k for k in RETURN_MEASURES if pairwise[k]]
    lines = ["Every pair of methods (A - B in points of the % of the maximum return; p: Welch's, adjusted by Holm "
             f"over the {len(pairs)} pairs of each measure):", "",
             "| A | B | " + " | ".join(f"{RETURN_MEASURES[k][1]}: A - B | p (Holm)" for k in keys) + " |",
             "|---" * (2 + 2 * len(keys)) + "|"]
    for r in pairs:
        cells = []
        for k in keys:
            other = pairwise[k].get(frozenset((r["a"], r["b"])))
            if other is None or other["difference"] is None:
                cells += ["n/a", "n/a"]
                continue
            sign = 1 if other["a"] == r["a"] else -1  # the same A - B in every column
            cells += [_num(sign * other["difference"], 2, sign=True), _p(other["p_holm"])]
        lines.append(f"| {r['a']} | {r['b']} | " + " | ".join(cells) + " |")
    return lines + [""]


def _return_parts(study: dict, done: dict, game) -> list[str]:
    """Where each method's mean return (scored phase) differs from the reference's, achievement by achievement. A
    Craftax return is the rewards of the achievements unlocked plus a health term, so per seed the mean return is
    sum_a reward_a x success_a + the mean health term, and (success_a - the reference's) x reward_a splits the
    difference exactly; what is left is the health term's difference."""
    rewards, ref = game.achievement_rewards(), study["reference"]
    if not rewards or ref not in done or len(done) < 2:
        return []
    base = done[ref]["achievements"]
    lines = [f"## Where the mean return differs from {ref}'s, per achievement", "",
             f"Mean episode return in the scored phase (mean over seeds) minus {ref}'s, split by achievement: "
             f"(success % - {ref}'s) / 100 x the achievement's reward; the four largest parts, then the health "
             "term's difference (the return less its achievements).", "",
             f"| method | return - {ref}'s | from achievements | the largest parts: achievement (success %, "
             f"{ref}'s; reward) points | health term |", "|---" * 5 + "|"]
    for m, r in done.items():
        if m == ref:
            continue
        mine = r["achievements"]
        parts = {a: ((mine.get(a) or 0.0) - (base.get(a) or 0.0)) / 100 * w for a, w in rewards.items()}
        total, from_achievements = r["reward"]["mean"] - done[ref]["reward"]["mean"], sum(parts.values())
        top = sorted(parts, key=lambda a: -abs(parts[a]))[:4]
        cells = "; ".join(f"{a} ({_num(mine.get(a))}, {_num(base.get(a))}; {rewards[a]:g}) "
                          f"{_num(parts[a], 2, sign=True)}" for a in top)
        lines.append(f"| {m} | {_num(total, 2, sign=True)} | {_num(from_achievements, 2, sign=True)} | {cells} | "
                     f"{_num(total - from_achievements, 2, sign=True)} |")
    return lines + [""]


def _cost(done: dict) -> list[str]:
    """The LLM's and the training's cost per method, and the share of stale restarts."""
    lines = ["## Cost, and checks on the training", "",
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
    return lines + ["", "Training s: the compiled training chunks (compilation included); wall s: the run's whole "
                    "loop. Stale restarts: training episodes that restarted in their slot's previous world because no "
                    "fresh one was ready (raise ppo.resets_per_step if this is more than a few percent).", ""]


def _achievements(done: dict, names: list[str]) -> list[str]:
    """Success per achievement in the scored phase, the methods side by side."""
    return ["## Success per achievement in the scored phase (%, mean over seeds)", "",
            "| achievement | " + " | ".join(done) + " |", "|---" * (len(done) + 1) + "|",
            *(f"| {n} | " + " | ".join(_num(r["achievements"].get(n), 2) for r in done.values()) + " |"
              for n in names)]


def _evaluations(study: dict, done: dict, score_name: str) -> list[str]:
    """The score of each evaluation in the original game per method, and the final one against the reference."""
    ref = study["reference"]
    evals = [e["after"] for e in next(iter(done.values()))["evaluations"]]
    lines = ["", f"## Evaluations in the original game ({score_name} %, mean +/- std over seeds)", "",
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
    return lines


def _adaptation(done: dict) -> list[str]:
    """How each method's designs answered the feedback, per cycle (report.json's "adaptation" in brief)."""
    adapted = {m: r["adaptation"] for m, r in done.items() if r.get("adaptation")}
    if not adapted:
        return []
    return ["", "## How each method's designs answered the feedback", "",
            "Per cycle after the first (report.json \"adaptation\"): the share of the weakest quarter of the "
            "achievements in the feedback that some new environment targets (llm/targeting.py's map), the "
            "share of environments repeated from an earlier cycle, and the changed settings (setting, value) "
            "the design has that the previous cycle's had not, and the reverse (new / dropped, over all "
            "designers).", "",
            "| method | weakest targeted (mean) | repeated envs (mean) | per cycle: targeted / repeated "
            "(settings new / dropped) |", "|---|---|---|---|",
            *(f"| {m} | {100 * a['targeted_share']:.0f}% | {100 * a['repeated_share']:.0f}% | "
              + ", ".join(f"c{c['cycle'] + 1}: {100 * c['targeted_share']:.0f}% / {100 * c['repeated_share']:.0f}%"
                          + f" ({c['new_settings']} / {c['dropped_settings']})"
                          + (" (same design)" if c["same_design"] else "")
                          for c in a["per_cycle"]) + " |" for m, a in adapted.items())]


def _environment_learning(done: dict, names: list[str]) -> list[str]:
    """The agent's success inside each LLM environment of each cycle, per method (report.md's section)."""
    learned = {m: r["environment_learning"] for m, r in done.items() if r["environment_learning"]}
    if not learned:
        return []
    lines = ["", "## Learning inside each LLM environment", ""]
    for m, entries in learned.items():
        lines += environment_learning_markdown(entries, names, f"### {m}")
    return lines
