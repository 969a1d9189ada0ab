"""The headline figures of one `benchmarks/gpu_session.sh` run, in one JSON beside its stage times: rewritten after
every stage (from whatever files the stages left), so a run cut short still says what it measured.

    python benchmarks/gpu_session_summary.py RESULTS_DIR --out session.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import load_json, write_text_atomic  # noqa: E402

AIMS = {"e2e_16_seeds_cold_s": 120, "e2e_16_seeds_warm_s": 60, "training_sps_at_16384": 1_000_000,
        "pixel_crafter_score_within_2_points_of": 10.7}


def _e2e(path: Path) -> list[dict] | None:
    data = load_json(path)
    if data is None:
        return None
    keep = ("seeds", "wall_s", "phases", "programs", "sps_wall", "sps_train_steady_median", "score", "error",
            "unfinished", "wall_s_so_far", "phase_s_so_far", "phases_so_far", "env_steps_per_seed_so_far")
    return [{k: r[k] for k in keep if k in r} for r in data.get("rows", [])]


def _training(path: Path) -> list[dict] | None:
    data = load_json(path)
    if data is None:
        return None
    out = []
    for r in data.get("rows", []):
        if "error" in r:  # an unfinished row keeps what it measured before its box ran out
            out.append({"num_envs": r["num_envs"], "error": r["error"][:300],
                        "env_only_sps": (r.get("env_only") or {}).get("sps"),
                        "train_compile_s": r.get("train_compile_s")})
            continue
        out.append({"num_envs": r["num_envs"], "env_only_sps": r["env_only"]["sps"],
                    "train_homogeneous_sps": r["train_homogeneous"]["sps"],
                    "train_heterogeneous_sps": r["train_heterogeneous"]["sps"],
                    "compile_s": r["train_homogeneous"].get("compile_s")})
    return out


def summarize(results: Path) -> dict:
    stages = []
    for line in (results / "stages.tsv").read_text().splitlines() if (results / "stages.tsv").exists() else []:
        name, limit, seconds, status = line.split("\t")
        stages.append({"stage": name, "limit_s": float(limit), "seconds": float(seconds), "status": status})
    check = load_json(results / "check.json") or {}
    pixel = load_json(results / "pixel_agent_1m.json")
    seed_axis = load_json(results / "pixel_seed_axis.json")
    return {
        "benchmark": "gpu_session", "device": check.get("device"), "environment": check or None,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "stages": stages, "aims": AIMS,
        "e2e_cold": _e2e(next(iter(sorted((results / "e2e_cold").glob("e2e_*.json"))), Path("-"))),
        "e2e_warm": _e2e(next(iter(sorted((results / "e2e_warm").glob("e2e_*.json"))), Path("-"))),
        "training": _training(next(iter(sorted((results / "training").glob("training_*.json"))), Path("-"))),
        "pixel_seed_axis": None if seed_axis is None else {k: v for k, v in seed_axis.items() if k != "environment"},
        "pixel_agent_1m": None if pixel is None else {k: v for k, v in pixel.items() if k != "environment"},
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    summary = summarize(args.results)
    write_text_atomic(args.out, json.dumps(summary, indent=2, default=str))
    return summary


if __name__ == "__main__":
    main()
