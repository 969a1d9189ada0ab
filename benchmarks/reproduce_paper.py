"""The paper's Crafter comparisons (EnvGen, Zala et al. 2024, Table 1 and Table 3), reproduced on one machine.

Runs each method of configs/crafter_<method>.yaml (ppo, envgen, fixed, easy_to_hard, adversarial: the same agent,
steps and seeds; only the environments of the pretraining phases differ) with 8 vmapped seeds by default, then
writes the table (Crafter score and reward, mean +/- population std over seeds, from each run's report.json) beside
the paper's numbers as JSON + markdown, and a bar plot with error bars:

    benchmarks/results/reproduce_paper_<tag>.{json,md,png}      (tag: gpu | cpu | smoke_<platform>)

    python benchmarks/reproduce_paper.py                                   # everything (one GPU)
    python benchmarks/reproduce_paper.py --methods ppo,envgen              # some methods now, the rest later
    python benchmarks/reproduce_paper.py --table-only                      # rebuild the table from the runs
    python benchmarks/reproduce_paper.py --llm-set base_url=http://localhost:8000/v1 --llm-set model=Qwen2.5-7B
    python benchmarks/reproduce_paper.py --cpu-tiny --out-dir /tmp/smoke   # smoke test: tiny, scripted LLM

Runs live in --runs-dir (default runs/reproduce_paper/<method>): a finished run (report.json) is reused, not rerun
(`--force` reruns); an interrupted one is resumed from its newest checkpoint. So the methods can be spread over
several commands, each within a time limit.

The LLM (`--llm`, default auto): the configured endpoint (llm.base_url / OPENAI_BASE_URL, `--llm-set key=value`
sets any `llm.` setting), else the offline local model (SmolLM2-135M via llama-cpp-python, which exercises the loop
but is no GPT-4). `--llm scripted` answers with a deterministic scripted client (valid designs, no LLM, no feedback
use: for smoke tests only); `--llm transcript:PATH` answers with the replies of a recorded llm_transcript.jsonl in
order, whatever this run's prompts (PATH a folder: <method>/llm_transcript.jsonl or <method>.jsonl in it, one per
method; the designs are an LLM's, but for envgen/adversarial they answer another run's feedback). What was used is recorded per method. A run's JAX programs are cached on disk (.cache/jax; `--no-cache`
turns it off), so methods after the first skip most compiling; this script measures results, not speed.

Our agent is Craftax-baseline PPO on symbolic observations (3 x 512 MLP, 1024 envs); the paper's is a 4M-parameter
IMPALA CNN on pixels at 8 envs, so absolute numbers are not expected to match: compare methods with each other.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, RESULTS, markdown_table  # noqa: E402
from envgen_jax.trainer.metrics import nan_to_none  # noqa: E402
from tests.trainer_configs import tiny_run  # noqa: E402

METHODS = ("ppo", "envgen", "fixed", "easy_to_hard", "adversarial")
# The paper's numbers (Crafter, 1M scored steps after 0.96M steps of pretraining; mean +/- std over seeds).
PAPER = {
    "ppo": {"name": "PPO (0.96M pretraining in Crafter, 1.96M in all)", "table": "Table 1",
            "score": 26.4, "score_std": 2.1, "reward": 12.1, "reward_std": 1.0},
    "envgen": {"name": "PPO+EnvGen", "table": "Tables 1 and 3",
               "score": 32.2, "score_std": 0.6, "reward": 12.6, "reward_std": 0.6},
    "fixed": {"name": "Fixed (LLM environments, no feedback)", "table": "Table 3",
              "score": 29.9, "score_std": 0.9, "reward": 12.6, "reward_std": 0.8},
    "easy_to_hard": {"name": "Easy-to-Hard curriculum", "table": "Table 3",
                     "score": 26.8, "score_std": 1.5, "reward": 12.7, "reward_std": 0.7},
    "adversarial": {"name": "Adversarial curriculum", "table": "Table 3",
                    "score": 26.8, "score_std": 0.8, "reward": 12.2, "reward_std": 0.7},
}
SMOKE_NOTE = ("SMOKE TEST (--cpu-tiny): tiny sizes and a scripted stand-in for the LLM; it checks that the "
              "machinery runs. These numbers are not results and say nothing about the paper.")
# Each method's whole protocol, shrunk for a CPU smoke test (every phase and output still runs).
TINY = tiny_run(quiet=())
QUIET = ["output.progress=false", "output.tensorboard=false"]
META = "reproduce_meta.json"


# ----------------------------------------------------------------------------------------------------- runs
def run_overrides(args) -> list[str]:
    llm = [s if s.startswith("llm.") else f"llm.{s}" for s in args.llm_set]
    if args.llm != "auto":  # a client is injected; keep the config from ever starting a server
        llm += ["llm.backend=openai", f"llm.model={args.llm.split(':', 1)[0]}"]
    return [*(TINY if args.cpu_tiny else ["seeds=8"]), *QUIET, *args.overrides, *llm]


def check_llm(cfg, method: str) -> dict:
    """Fail before training when the configured LLM cannot work; describe what will answer."""
    from envgen_jax.llm.local_server import find_gguf, missing_server_modules
    llm = cfg.llm.transport
    backend = llm.resolved_backend()
    info = {"mode": "config", "backend": backend, "model": llm.model,
            "base_url": llm.base_url or os.environ.get("OPENAI_BASE_URL")}
    if not cfg.uses_llm:
        return {"mode": "none", "what": f"{method} uses no LLM"}
    if backend == "local":
        missing = missing_server_modules()
        if missing:
            raise SystemExit(f"{method}: the offline LLM needs {', '.join(missing)} (not installed here); configure "
                             f"an endpoint (--llm-set base_url=... --llm-set model=...), install it (make install), "
                             f"or use --llm scripted (no LLM: a smoke test, not the paper's method)")
        gguf = find_gguf(llm.gguf_path)
        info.update(model="SmolLM2-135M-Instruct (local, llama-cpp-python)", gguf=gguf.name)
    elif backend == "openai" and not llm.model:
        raise SystemExit(f"{method}: an OpenAI-compatible endpoint needs a model: --llm-set model=NAME")
    elif backend == "replay":
        info["replay_path"] = llm.replay_path
    return info


def run_method(args, method: str, runs_dir: Path, log) -> dict:
    """Run (or reuse, or resume) one method; returns its report.json content."""
    from envgen_jax import games
    from envgen_jax.run.loop import EnvGenRun, latest_checkpoint
    from envgen_jax.run_config import load_run_config

    cfg = load_run_config(ROOT / "configs" / f"crafter_{method}.yaml", run_overrides(args))
    out = runs_dir / method
    wanted = json.loads(json.dumps(cfg.to_dict()))
    if out.exists() and not args.force:
        saved = _saved_config(out)
        if saved is not None and saved != wanted:
            raise SystemExit(f"{out} holds a {method} run with other settings; use --force to rerun it, or another "
                             f"--runs-dir")
        if (out / "report.json").exists():
            log(f"{method}: reusing the finished run in {out}")
            return json.loads((out / "report.json").read_text())
    if args.force and out.exists():
        shutil.rmtree(out)
    if args.llm in ("auto", "config"):
        client, llm = None, check_llm(cfg, method)
    elif cfg.uses_llm:
        from benchmarks.common import designer_client
        mode = args.llm
        if mode.startswith("transcript:") and Path(mode.split(":", 1)[1]).is_dir():  # one transcript per method
            folder = Path(mode.split(":", 1)[1])
            path = next((p for p in (folder / method / "llm_transcript.jsonl", folder / f"{method}.jsonl")
                         if p.is_file()), None)
            if path is None:
                raise SystemExit(f"{method}: no {folder}/{method}/llm_transcript.jsonl or {folder}/{method}.jsonl")
            mode = f"transcript:{path}"
        client, llm = designer_client(mode, games.config_class(cfg.env))
        llm.pop("_state", None)
    else:
        client, llm = None, {"mode": "none", "what": f"{method} uses no LLM"}
    out.mkdir(parents=True, exist_ok=True)
    from benchmarks.common import environment
    (out / META).write_text(json.dumps({"method": method, "llm": llm, "overrides": run_overrides(args),
                                        "cpu_tiny": args.cpu_tiny, "environment": environment()}, indent=2))
    from envgen_jax.run.log import Prefixed, configure_console
    configure_console()
    prefix = Prefixed(f"  [{method}] ")
    if latest_checkpoint(out) is not None:
        run = EnvGenRun.resume(out, log=prefix, llm_client=client)
    else:
        run = EnvGenRun(cfg, out, log=prefix, llm_client=client)
    start = time.perf_counter()
    report = run.run()
    log(f"{method}: finished in {time.perf_counter() - start:.0f} s")
    return report


def _saved_config(out: Path) -> dict | None:
    path = out / "config.yaml"
    if not path.exists():
        return None
    import yaml
    from envgen_jax.run_config import load_run_config
    try:
        return json.loads(json.dumps(load_run_config(path).to_dict()))
    except Exception:
        return yaml.safe_load(path.read_text())


# ---------------------------------------------------------------------------------------------------- table
def collect(runs_dir: Path, methods) -> dict:
    """{method: {"report": report.json or None, "meta": reproduce_meta.json or {}}} for the methods asked."""
    out = {}
    for m in methods:
        d = runs_dir / m
        report = json.loads((d / "report.json").read_text()) if (d / "report.json").exists() else None
        meta = json.loads((d / META).read_text()) if (d / META).exists() else {}
        out[m] = {"report": report, "meta": meta}
    return out


_num = nan_to_none


def build_table(runs: dict, smoke: bool = False, environment: dict | None = None, settings: dict | None = None) -> dict:
    """The comparison as data: one row per method (ours beside the paper's), and EnvGen vs PPO."""
    rows = []
    for method in [m for m in METHODS if m in runs] + [m for m in runs if m not in METHODS]:
        report, meta = runs[method]["report"], runs[method].get("meta") or {}
        paper = PAPER.get(method)
        row = {"method": method, "paper_name": paper["name"] if paper else None,
               "paper_table": paper["table"] if paper else None,
               "paper": {k: paper[k] for k in ("score", "score_std", "reward", "reward_std")} if paper else None,
               "ours": None, "llm": meta.get("llm"),
               "measured_on": (meta.get("environment") or {}).get("device"),
               "commit": (meta.get("environment") or {}).get("commit")}
        if runs[method].get("error"):
            row["error"] = runs[method]["error"]
        if report is not None:
            row["ours"] = {
                "score": _num(report.get("crafter_score", report.get("score"))),
                "score_std": _num(report.get("crafter_score_std", report.get("score_std"))),
                "reward": _num(report.get("reward")), "reward_std": _num(report.get("reward_std")),
                "seeds": report.get("seeds"), "score_per_seed": report.get("score_per_seed"),
                "reward_per_seed": report.get("reward_per_seed"),
                "scored_episodes_per_seed": report.get("episodes_per_seed"),
                "env_steps_per_seed": report.get("env_steps"), "scored_env_steps": report.get("scored_env_steps"),
                "llm_calls": report.get("llm_calls"), "wall_seconds": report.get("wall_seconds"),
            }
        rows.append(row)
    by = {r["method"]: r["ours"] for r in rows}
    comparison = None
    if by.get("envgen") and by.get("ppo") and by["envgen"]["score"] is not None and by["ppo"]["score"] is not None:
        e, p = by["envgen"], by["ppo"]
        diff = e["score"] - p["score"]
        spread = max(e["score_std"] or 0.0, p["score_std"] or 0.0)
        se = math.sqrt((e["score_std"] or 0) ** 2 / max(e["seeds"] or 1, 1)
                       + (p["score_std"] or 0) ** 2 / max(p["seeds"] or 1, 1))
        comparison = {"envgen_minus_ppo_score": diff, "seed_spread": spread,
                      "spread_definition": "the larger of the two methods' std over seeds",
                      "margin_larger_than_spread": diff > spread, "standard_error_of_difference": se,
                      "paper_envgen_minus_ppo_score": PAPER["envgen"]["score"] - PAPER["ppo"]["score"]}
    return {"benchmark": "reproduce_paper", "smoke_test": smoke, "note": SMOKE_NOTE if smoke else None,
            "environment": environment, "settings": settings,
            "score_definition": "Crafter score: per seed, success rates pooled over the scored phase's finished "
                                "episodes, S = exp(mean_i ln(1 + s_i)) - 1; mean +/- population std over seeds. "
                                "Reward: the mean return of those episodes.",
            "agent_note": "ours: Craftax-baseline PPO on symbolic observations (3 x 512 MLP, 1024 envs x 64 steps); "
                          "the paper: a 4M-parameter IMPALA CNN PPO agent on pixels. Compare methods with each "
                          "other; absolute numbers are not expected to match the paper's.",
            "rows": rows, "envgen_vs_ppo": comparison}


def _pm(m, s, missing: str = "missing") -> str:
    return missing if m is None else f"{m:.1f} +/- {s:.1f}" if s is not None else f"{m:.1f}"


def _llm_text(llm: dict | None) -> str:
    if not llm:
        return "?"
    mode = llm.get("mode")
    if mode == "none":
        return "none"
    if mode in ("scripted", "transcript"):
        return f"{mode} (no LLM)" if mode == "scripted" else f"replayed transcript {Path(llm['path']).name}"
    return f"{llm.get('backend')}: {llm.get('model') or '?'}"


def markdown(table: dict) -> str:
    env = table.get("environment") or {}
    lines = [f"# EnvGen paper reproduction on Crafter{' (SMOKE TEST)' if table['smoke_test'] else ''}", ""]
    if table["smoke_test"]:
        lines += [f"**{SMOKE_NOTE}**", ""]
    if env:
        commits = sorted({str(r.get("commit"))[:12] for r in table["rows"] if r.get("ours") and r.get("commit")})
        lines += [f"Runs on {env.get('device')}, from commit(s) {', '.join(commits) or '?'}; table built "
                  f"{env.get('date')} (jax {env.get('jax')}, commit {str(env.get('commit'))[:12]}"
                  f"{' with uncommitted changes' if env.get('dirty') else ''}).", ""]
    headers = ["method", "paper table", "ours: score %", "ours: reward", "seeds", "env steps/seed", "LLM",
               "paper: score %", "paper: reward"]
    rows = []
    for r in table["rows"]:
        o, p = r["ours"] or {}, r["paper"] or {}
        missing = "failed" if r.get("error") and not o else "missing"
        rows.append([r["paper_name"] or r["method"], r["paper_table"] or "",
                     _pm(o.get("score"), o.get("score_std"), missing),
                     _pm(o.get("reward"), o.get("reward_std"), missing),
                     o.get("seeds", ""), f"{o['env_steps_per_seed']:,}" if o.get("env_steps_per_seed") else "",
                     _llm_text(r.get("llm")), _pm(p.get("score"), p.get("score_std")),
                     _pm(p.get("reward"), p.get("reward_std"))])
    lines += [markdown_table(headers, rows), ""]
    c = table.get("envgen_vs_ppo")
    if c:
        lines += [f"EnvGen - PPO: {c['envgen_minus_ppo_score']:+.1f} score points (seed spread "
                  f"{c['seed_spread']:.1f}, the larger std; standard error of the difference "
                  f"{c['standard_error_of_difference']:.1f}); the paper: "
                  f"{c['paper_envgen_minus_ppo_score']:+.1f}.", ""]
    lines += [table["score_definition"], "", table["agent_note"], ""]
    return "\n".join(lines)


def plot(table: dict, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table["rows"]
    names = [r["method"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, key, label in ((axes[0], "score", "Crafter score (%)"), (axes[1], "reward", "reward")):
        x = range(len(rows))
        ours = [(r["ours"] or {}).get(key) for r in rows]
        ours_s = [(r["ours"] or {}).get(f"{key}_std") or 0.0 for r in rows]
        paper = [(r["paper"] or {}).get(key) for r in rows]
        paper_s = [(r["paper"] or {}).get(f"{key}_std") or 0.0 for r in rows]
        nan = float("nan")
        ax.bar([i - 0.2 for i in x], [nan if v is None else v for v in ours], 0.4, yerr=ours_s, capsize=4,
               label="ours" + (" (SMOKE TEST)" if table["smoke_test"] else ""))
        ax.bar([i + 0.2 for i in x], [nan if v is None else v for v in paper], 0.4, yerr=paper_s, capsize=4,
               label="paper", alpha=0.6)
        ax.set_xticks(list(x), names, rotation=15)
        ax.set(ylabel=label + ", mean +/- std over seeds")
        ax.legend(fontsize=8)
    env = table.get("environment") or {}
    seeds = sorted({(r["ours"] or {}).get("seeds") for r in rows if r["ours"]} - {None})
    title = (f"EnvGen on Crafter: ours ({env.get('device', '?')}, {','.join(map(str, seeds))} seeds) vs the paper")
    if table["smoke_test"]:
        title += "\nSMOKE TEST: tiny sizes, scripted LLM; not results"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_outputs(table: dict, out_dir: Path, tag: str) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    base = out_dir / f"reproduce_paper_{tag}"
    paths = {"json": base.with_suffix(".json"), "md": base.with_suffix(".md"), "png": base.with_suffix(".png")}
    paths["json"].write_text(json.dumps(table, indent=2))
    paths["md"].write_text(markdown(table))
    try:
        plot(table, paths["png"])
    except Exception as e:  # the table matters more than its picture
        print(f"plot failed: {type(e).__name__}: {e}", file=sys.stderr)
        paths.pop("png")
    return {k: str(v) for k, v in paths.items()}


# ----------------------------------------------------------------------------------------------------- main
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default=",".join(METHODS), help="comma list (default all five)")
    ap.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY.PATH=VALUE",
                    help="run config override for every method (default seeds=8; repeatable)")
    ap.add_argument("--llm", default=None, help="auto (default: endpoint if configured, else the local model) | "
                    "scripted | transcript:PATH (default with --cpu-tiny: scripted)")
    ap.add_argument("--llm-set", action="append", default=[], metavar="KEY=VALUE",
                    help="an llm setting for every method, e.g. base_url=..., model=..., n_threads=8 (repeatable)")
    ap.add_argument("--cpu-tiny", action="store_true", help="smoke test: tiny protocol, scripted LLM, 2 seeds")
    ap.add_argument("--runs-dir", help="run directories (default runs/reproduce_paper, or "
                                       "runs/reproduce_paper_smoke with --cpu-tiny)")
    ap.add_argument("--out-dir", default=str(RESULTS), help="where the table goes (default benchmarks/results)")
    ap.add_argument("--tag", help="file tag (default: the platform, smoke_<platform> with --cpu-tiny)")
    ap.add_argument("--force", action="store_true", help="rerun methods that already have a run")
    ap.add_argument("--table-only", action="store_true", help="only rebuild the table from the run directories")
    ap.add_argument("--no-cache", action="store_true", help="no persistent compilation cache")
    args = ap.parse_args(argv)
    args.methods = [m for m in args.methods.split(",") if m]
    bad = sorted(set(args.methods) - set(METHODS))
    if bad:
        ap.error(f"--methods: unknown {', '.join(bad)}; choose from {', '.join(METHODS)}")
    if args.llm is None:
        args.llm = "scripted" if args.cpu_tiny else "auto"
    if args.llm != "auto" and args.llm != "scripted" and not args.llm.startswith("transcript:"):
        ap.error("--llm: auto | scripted | transcript:PATH")
    args.runs_dir = Path(args.runs_dir or ROOT / "runs" / ("reproduce_paper_smoke" if args.cpu_tiny
                                                           else "reproduce_paper"))
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    import jax

    from benchmarks.common import environment, platform_tag
    if not args.no_cache and not args.table_only and not jax.config.jax_compilation_cache_dir:
        jax.config.update("jax_compilation_cache_dir", str(ROOT / ".cache" / "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)

    def log(m):
        print(m, flush=True)

    errors = {}
    if not args.table_only:
        for method in args.methods:
            log(f"== {method}")
            try:
                run_method(args, method, args.runs_dir, log)
            except Exception as e:  # one method failing (its LLM, say) must not lose the others
                import traceback
                errors[method] = f"{type(e).__name__}: {e}"[:2000]
                log(f"{method}: FAILED: {errors[method]}\n{traceback.format_exc()[-3000:]}")
    # The table: the methods asked for, and every other method already run in --runs-dir (several commands, one
    # table).
    shown = [m for m in METHODS if m in args.methods or (args.runs_dir / m / "report.json").exists()]
    runs = collect(args.runs_dir, shown)
    smoke = args.cpu_tiny or any((r["meta"] or {}).get("cpu_tiny") for r in runs.values())
    env = environment()
    ran_on = sorted({((r["meta"] or {}).get("environment") or {}).get("device") for r in runs.values()
                     if r["report"] is not None} - {None})
    env["table_built_on"] = env["device"]
    env["device"] = ", ".join(ran_on) if ran_on else env["device"]  # where the runs ran (each run's meta)
    for method, error in errors.items():
        runs[method]["error"] = error
    table = build_table(runs, smoke=smoke, environment=env,
                        settings={"methods": shown, "run_now": [] if args.table_only else args.methods,
                                  "overrides": run_overrides(args), "llm": args.llm,
                                  "runs_dir": str(args.runs_dir), "cpu_tiny": args.cpu_tiny})
    tag = args.tag or (f"smoke_{platform_tag()}" if smoke else platform_tag())
    paths = write_outputs(table, Path(args.out_dir), tag)
    log(markdown(table))
    log(f"wrote {', '.join(paths.values())}")
    if errors:
        log(f"FAILED: {', '.join(errors)} (rerun to resume them from their checkpoints)")
    return {"table": table, "paths": paths, "errors": errors}


if __name__ == "__main__":
    sys.exit(1 if main()["errors"] else 0)
