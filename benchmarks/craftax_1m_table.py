"""The README's Craftax-1M table, read from the study's study.json, so no number in it is copied by hand: per method,
the mean episode return as % of 226 three ways (the scored phase, the table's end-of-training measure, held-out
worlds), the difference from ppo with Welch's p adjusted by Holm over every pair of methods, the LLM calls and the
wall time. `--write` puts it into README.md between its two markers; tests/test_benchmarks.py checks the README
holds what this prints.

    python benchmarks/craftax_1m_table.py            # print the table
    python benchmarks/craftax_1m_table.py --write    # and put it into README.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from envgen_jax.study.markdown import RETURN_MEASURES

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "benchmarks" / "results" / "craftax_1m" / "study.json"
BEGIN, END = "<!-- craftax_1m table: benchmarks/craftax_1m_table.py --write -->", "<!-- end of the craftax_1m table -->"
MEASURES = tuple(RETURN_MEASURES)  # the scored phase, the table's end-of-training measure, held-out worlds


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2f}" if p >= 0.01 else f"{p:.0e}" if p < 0.001 else f"{p:.3f}"


def table(study: dict) -> str:
    """The markdown table, one row per method of the study (finished or not, in the study's order)."""
    ref = study["reference"]
    holm = {key: {frozenset((r["a"], r["b"])): r["p_holm"] for r in study["pairwise"].get(key, [])}
            for key in MEASURES}
    lines = [f"| method | scored phase | per seed | vs {ref} [95% CI] | p (Holm) | end of training | p (Holm) | "
             "held-out worlds | p (Holm) | LLM calls (s) | wall min |", "|---" * 11 + "|"]
    for method, r in study["methods"].items():
        if r["status"] != "finished":  # not "not started": the committed study.json lags the one training
            lines.append(f"| {method} | not yet measured |" + " |" * 9)
            continue
        cells = []
        for key in MEASURES:
            stat = r[key]
            cells.append(f"{stat['mean']:.2f} +/- {stat['std']:.2f}")
            if key == "return_pct":
                cells.append(", ".join(f"{v:.2f}" for v in stat["per_seed"]))
                diff = (r.get(f"vs_{ref}") or {}).get(key)
                cells.append("-" if diff is None else
                             f"{diff['difference']:+.2f} [{diff['ci95'][0]:+.2f}, {diff['ci95'][1]:+.2f}]")
            cells.append("-" if method == ref else _p(holm[key].get(frozenset((method, ref)))))
        llm = f"{r['llm_calls']} ({r['llm_seconds']:,.0f})" if r["llm_calls"] else "0"
        lines.append(f"| {method} | " + " | ".join(cells) + f" | {llm} | {r['wall_seconds'] / 60:.0f} |")
    return "\n".join(lines)


def readme_parts(readme: str) -> tuple[str, str, str]:
    """README.md as (up to the first marker, between the markers, from the second marker on); the error names the
    markers when they are missing."""
    if BEGIN not in readme or END not in readme:
        sys.exit(f"README.md: the markers {BEGIN!r} and {END!r} are missing; put them where the table goes")
    before, rest = readme.split(BEGIN, 1)
    block, after = rest.split(END, 1)
    return before + BEGIN, block, END + after


def readme_block(readme: str) -> str:
    """What README.md holds between the markers."""
    return readme_parts(readme)[1].strip("\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", type=Path, default=STUDY, help="the study's study.json (default: %(default)s)")
    parser.add_argument("--write", action="store_true", help="put the table into README.md between its markers")
    args = parser.parse_args(argv)
    if not args.study.is_file():
        sys.exit(f"{args.study}: no such file (envgen-jax study writes study.json into the study's directory)")
    text = table(json.loads(args.study.read_text()))
    print(text)
    if args.write:
        path = ROOT / "README.md"
        before, _, after = readme_parts(path.read_text())
        path.write_text(f"{before}\n{text}\n{after}")


if __name__ == "__main__":
    main()
