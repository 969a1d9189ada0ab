"""study_*.png: the scored phase's score and reward per method, the learning curves, and the success per
achievement after each cycle."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from envgen_jax.study.compare import read_lines
from envgen_jax.trainer.metrics import quiet_nan


def _curve(chunks: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Env steps, and mean and std over seeds of the chunks' mean episode return (NaN where no episode ended)."""
    steps = np.array([c["env_steps"] for c in chunks])
    returns = np.array([[np.nan if v is None else v for v in c["return_per_seed"]] for c in chunks], np.float64)
    with quiet_nan():
        return steps, np.nanmean(returns, axis=1), np.nanstd(returns, axis=1)


def _pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display), imported on first use."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_study(out: Path, study: dict) -> list[str]:
    """Write the study's three plots into OUT; returns their file names (none before a method finished)."""
    done = {m: r for m, r in study["methods"].items() if r["status"] == "finished"}
    if not done:
        return []
    s = study["study"]
    cmap = _pyplot().get_cmap("tab10")
    colours = {m: cmap(i) for i, m in enumerate(study["methods"])}
    title = f"{s['env']}, {s['seeds']} seeds per method"
    _plot_scores(out / "study_scores.png", done, colours, title)
    _plot_curves(out, done, colours, title, s["env_steps_per_seed"] - s["scored_env_steps_per_seed"])
    _plot_success_by_cycle(out / "study_success_by_cycle.png", done, colours, title)
    return ["study_scores.png", "study_curves.png", "study_success_by_cycle.png"]


def _plot_scores(path: Path, done: dict, colours: dict, title: str) -> None:
    """Final score and reward: mean (bar), 95% CI (error bar), every seed (dots)."""
    plt = _pyplot()
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
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_curves(out: Path, done: dict, colours: dict, title: str, scored_from: int) -> None:
    """Learning curves: training return per chunk, and the score of each evaluation in the original game."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for m, r in done.items():
        chunks = read_lines(out / m / "metrics.jsonl")
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


def _plot_success_by_cycle(path: Path, done: dict, colours: dict, title: str) -> None:
    """Per-cycle success in the original game, per achievement (the paper's cycle figure, every achievement)."""
    plt = _pyplot()
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
    fig.savefig(path, dpi=100)
    plt.close(fig)
