"""Two studies side by side (e.g. the first CPU study, with its weak agent, and the second): per method, each study's
score and difference from ppo, and the later study's difference from envgen, with Holm-adjusted p-values, read from
the studies' `study.json` (written by `envgen-jax study`), so no number is copied by hand.

    python benchmarks/compare_studies.py benchmarks/results/study_cpu benchmarks/results/study_cpu_v2 \\
        --labels "first study" "second study" [--out table.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from envgen_jax.study import pairwise


def load(study_dir: Path) -> dict:
    path = study_dir / "study.json"
    if not path.is_file():
        sys.exit(f"{path}: no such file (a study directory holds study.json)")
    study = json.loads(path.read_text())
    if not (study.get("pairwise") or {}).get("score"):  # written before the study compared every pair
        per_seed = {m: ((e or {}).get("score") or {}).get("per_seed") for m, e in study["methods"].items()}
        study["pairwise"] = {"score": pairwise({m: v for m, v in per_seed.items() if v})}
    return study


def _score(entry: dict | None) -> str:
    score = (entry or {}).get("score") or {}
    if score.get("mean") is None:
        return "-"
    ci = score.get("ci95")
    interval = f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""
    return f"{score['mean']:.1f} +/- {score['std']:.1f}{interval}"


def _holm(study: dict, a: str, b: str) -> tuple[float | None, float | None]:
    """(Holm-adjusted p, P(a seed of a beats a seed of b)) of the score's pair (a, b), in either order."""
    for row in (study.get("pairwise") or {}).get("score", []):
        if (row["a"], row["b"]) == (a, b):
            return row.get("p_holm"), row.get("p_superior")
        if (row["a"], row["b"]) == (b, a):
            sup = row.get("p_superior")
            return row.get("p_holm"), None if sup is None else 1.0 - sup
    return None, None


def _versus(study: dict, method: str, reference: str) -> str:
    entry = study["methods"].get(method) or {}
    diff = (entry.get(f"vs_{reference}") or {}).get("score") or {}
    if method == reference or diff.get("difference") is None:
        return "-"
    ci = diff.get("ci95")
    p_holm, superior = _holm(study, method, reference)
    parts = [f"{diff['difference']:+.1f}"]
    if ci:
        parts.append(f"[{ci[0]:+.1f}, {ci[1]:+.1f}]")
    if p_holm is not None:
        parts.append(f"p_Holm = {p_holm:.2f}")
    if superior is not None:
        parts.append(f"P(beats) = {superior:.2f}")
    return " ".join(parts)


def table(first: dict, second: dict, labels: tuple[str, str]) -> str:
    methods = list(second["methods"]) + [m for m in first["methods"] if m not in second["methods"]]
    lines = [f"| method | {labels[0]}: score % [95% CI] | {labels[0]}: vs ppo | {labels[1]}: score % [95% CI] | "
             f"{labels[1]}: vs ppo | {labels[1]}: vs envgen |", "|---|---|---|---|---|---|"]
    for m in methods:
        lines.append(f"| {m} | {_score(first['methods'].get(m))} | {_versus(first, m, 'ppo')} | "
                     f"{_score(second['methods'].get(m))} | {_versus(second, m, 'ppo')} | "
                     f"{_versus(second, m, 'envgen')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("first", type=Path, help="the earlier study's directory")
    ap.add_argument("second", type=Path, help="the later study's directory")
    ap.add_argument("--labels", nargs=2, default=("first", "second"), metavar=("FIRST", "SECOND"))
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)
    text = table(load(args.first), load(args.second), tuple(args.labels))
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
