"""Issue 42's GPU figure: plain PPO with the paper's pixel agent (configs/crafter_ppo_paper_agent.yaml), the
Crafter score and mean success over the first 1M steps, beside Dedieu et al.'s rerun of that agent on
Craftax-Classic (10.7% score, 47.4% mean success at 1M).

    python benchmarks/pixel_agent_1m.py RUN_DIR --out pixel_agent_1m_gpu.json

RUN_DIR is an `envgen-jax train` run of that config with `schedule.cycles=0` (so the scored phase is the first
`schedule.final_steps` steps; benchmarks/gpu_session.sh starts it). A finished run is read from its report.json; a
run stopped by its time limit from its newest checkpoint (the scored episodes so far), marked unfinished, with the
steps done and the training speed, so the time 1M steps would take can be read off. Mean success: the mean over the
22 achievements of each one's success rate (%) in the scored episodes, mean over seeds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import environment, load_json, write_text_atomic  # noqa: E402

REFERENCE = {"source": "Dedieu et al. 2025, Table 1: their rerun of Moon et al.'s PPO (the EnvGen paper's agent) on "
                       "Craftax-Classic pixels at 1M steps", "crafter_score": 10.7, "mean_success": 47.4}


def summarize(run: Path, config: str = "configs/crafter_ppo_paper_agent.yaml") -> dict:
    from envgen_jax.run.loop import latest_checkpoint, load_loop_state
    from envgen_jax.report import scored_summary
    from envgen_jax.run_config import load_run_config
    from envgen_jax import games

    cfg = load_run_config(run / "config.yaml")
    chunks = _chunks(run / "metrics.jsonl")
    steady = [c["steps_per_second"] for c in chunks[1:]]
    out = {"benchmark": "pixel_agent_1m", "run_dir": str(run), "config": config,
           "seeds": cfg.seeds, "target_steps_per_seed": cfg.schedule.final_steps, "num_envs_per_seed": cfg.ppo.num_envs,
           "env_steps_per_seed": chunks[-1]["env_steps"] if chunks else 0,
           "steady_steps_per_s_all_seeds": statistics.median(steady) if steady else None,
           "first_chunk_s": chunks[0]["seconds"] if chunks else None, "reference": REFERENCE}
    # The run's own clock (phases.json, rewritten as it goes): its training seconds exclude compiling, so the steps
    # of the finished chunks over them is a speed even from one chunk; a lower bound while a chunk was under way.
    phases = load_json(run / "phases.json")
    if phases:
        out["phases_s_so_far"] = phases["seconds"]
        training_s = phases["seconds"].get("training") or 0.0
        if training_s > 0 and out["env_steps_per_seed"]:
            out["training_steps_per_s_all_seeds"] = out["env_steps_per_seed"] * cfg.seeds / training_s
    speed = out["steady_steps_per_s_all_seeds"] or out.get("training_steps_per_s_all_seeds")
    if speed:
        out["projected_s_for_target"] = cfg.schedule.final_steps * cfg.seeds / speed
    report_path = run / "report.json"
    if report_path.exists():
        report = json.loads(report_path.read_text())
        summary = {k: report[k] for k in ("score", "score_std", "achievements", "episodes_per_seed")}
        summary["score_per_seed"] = report.get("score_per_seed")
        out.update(finished=True, scored_env_steps_per_seed=report["scored_env_steps"],
                   phases=report.get("phases"), compile=_compile_brief(report.get("compile")))
    else:
        checkpoint = latest_checkpoint(run)
        if checkpoint is None:
            out.update(finished=False, note="stopped before its first checkpoint: no scored episodes to read")
            return out
        state = load_loop_state(checkpoint)
        names = list(games.get(cfg.env).make_env(cfg.observation, cfg.game_options).achievement_names)
        summary = scored_summary(state.scored, names, cfg.env)
        out.update(finished=False, scored_env_steps_per_seed=state.env_steps,
                   note=f"stopped by its time limit: the score of the episodes up to its newest checkpoint "
                        f"({state.env_steps:,} steps per seed), not of 1M steps")
    rates = [v for v in summary["achievements"].values() if v is not None]
    out.update(crafter_score=summary["score"], crafter_score_std=summary["score_std"],
               score_per_seed=summary.get("score_per_seed"),
               mean_success=sum(rates) / len(rates) if rates else None,
               scored_episodes_per_seed=summary["episodes_per_seed"], achievements=summary["achievements"])
    return out


def _chunks(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return []


def _compile_brief(record: dict | None) -> dict | None:
    if not record:
        return None
    return {k: record[k] for k in ("seconds", "cache_hits", "compiled")}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="the JSON to write (replaced atomically)")
    ap.add_argument("--config", default="configs/crafter_ppo_paper_agent.yaml",
                    help="the configuration the run was started from, for the record (the run keeps its settings)")
    args = ap.parse_args(argv)
    result = {"environment": environment(), **summarize(args.run_dir, args.config),
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_text_atomic(args.out, json.dumps(result, indent=2, default=str))
    score, success = result.get("crafter_score"), result.get("mean_success")
    print(f"pixel agent, {result['seeds']} seed(s), {result['env_steps_per_seed']:,} steps per seed"
          f"{'' if result.get('finished') else ' (unfinished)'}: Crafter score "
          f"{'n/a' if score is None else f'{score:.1f}%'}, mean success "
          f"{'n/a' if success is None else f'{success:.1f}%'} (Dedieu et al.'s rerun: 10.7% / 47.4%) on "
          f"{result['environment']['device']} -> {args.out}")
    return result


if __name__ == "__main__":
    main()
