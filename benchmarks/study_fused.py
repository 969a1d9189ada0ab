"""A study fused (methods x seeds on one agent axis, one compiled chunk) against one method after another (issue 61).

    python benchmarks/study_fused.py                 # the same small study both ways: wall time, programs compiled
    python benchmarks/study_fused.py --memory        # the compiled chunk's memory at several agent counts

Speed: each schedule runs the whole `envgen-jax study` command in a subprocess (the LLM a local stand-in whose
designs depend only on the conversation), `--rounds` times, alternating fused and one after another. With
`--cache DIR` (default: the test suite's persistent cache, with its XLA flags; the small study has the golden runs'
shapes, so tests/test_fused.py fills it) the programs load from it and the walls compare the work itself; with
`--cache none` every program compiles (what a first study costs). Wall time is the command's; the programs are
those its session compiled or loaded (compile.json; a fused study's members share one session, so its programs are
counted once). `identical`: every method's metrics (losses included), report and designs equal between the two
schedules. The machine's load is recorded before and after: the CPU is shared.

Memory: the training chunk of `--config` (default configs/study_cpu.yaml: the symbolic study's agent) is lowered and
compiled for several agent counts, and its `memory_analysis()` recorded (arguments, outputs, temporaries), with a
line fitted through them: bytes = fixed + per_agent x agents.

Results: benchmarks/results/study_fused_cpu.json (keys methods, seeds, fused_wall_s, sequential_wall_s,
programs_fused, programs_sequential, identical, environment, ...), merged with the memory results.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, ROOT, environment, write_text_atomic  # noqa: E402
from tests.trainer_configs import tiny_run  # noqa: E402

OUT = RESULTS / "study_fused_cpu.json"
METHODS = ("ppo", "envgen", "random", "scripted")
SEEDS = 2
# Small: the golden runs' shapes (tests/golden.py, tests/test_fused.py), so that with --cache the test suite's
# persistent cache (and its XLA flags, tests/conftest.py) serves the programs.
SETTINGS = [*tiny_run(seeds=None), "llm.backend=openai", "llm.model=fake", "llm.max_retries=0"]
TEST_XLA_FLAGS = "--xla_backend_optimization_level=1"  # tests/conftest.py's


def _respond(request):
    from envgen_jax.envs.crafter import CrafterConfig
    from envgen_jax.llm.testing import asked_count, completion_body, design_json, varied_configs

    turns = sum(m["role"] == "user" for m in request["messages"])
    return 200, completion_body(design_json(varied_configs(CrafterConfig, asked_count(request, 2), offset=turns))), {}


def _study(schedule: str, out: Path, base_url: str, cache: Path | None) -> float:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    if cache is None:
        env["ENVGEN_JAX_COMPILE_CACHE"] = "0"
    else:
        env.update(JAX_COMPILATION_CACHE_DIR=str(cache), XLA_FLAGS=TEST_XLA_FLAGS)
    sets = [*SETTINGS, f"llm.base_url={base_url}"]
    cmd = [sys.executable, "-m", "envgen_jax.cli", "study", "--config", str(ROOT / "configs" / "smoke.yaml"),
           "--methods", ",".join(METHODS), "--seeds", str(SEEDS), "--grouping", schedule, "--out", str(out),
           *sum([["--set", s] for s in sets], [])]
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{schedule} study failed:\n{result.stderr[-3000:]}")
    print(f"{schedule}: {wall:.1f} s", flush=True)
    return wall


def _programs(out: Path, schedule: str) -> dict:
    """Programs of the study's session: compiled, loaded from the cache, and training chunks among them."""
    records = [json.loads((out / m / "compile.json").read_text())["programs"] for m in METHODS]
    programs = records[0] if schedule == "fused" else [p for r in records for p in r]
    return {"compiled": sum(not p["cache_hit"] for p in programs), "loaded": sum(p["cache_hit"] for p in programs),
            "train_chunks": sum(p["name"] == "jit(_train_chunk)" for p in programs)}


def _outputs(run_dir: Path) -> dict:
    times = ("seconds", "steps_per_second", "wall_seconds", "compile", "phases", "llm_seconds")

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in times}
        return [strip(v) for v in x] if isinstance(x, list) else x

    designs = sorted((run_dir / "environments").glob("*.json")) if (run_dir / "environments").exists() else []
    return {"metrics": [strip(json.loads(x)) for x in (run_dir / "metrics.jsonl").read_text().splitlines()],
            "report": strip(json.loads((run_dir / "report.json").read_text())),
            "designs": {p.name: p.read_text() for p in designs}}


def speed(cache: Path | None, rounds: int) -> dict:
    """Each schedule's whole study, `rounds` times, alternating (fused, sequential, fused, ...) so that the shared
    machine's drift hits both alike. cache None: cold (no persistent cache, every program compiled); else that
    cache directory, the programs loaded from it (first fill it: the test suite's, or a round not counted)."""
    from envgen_jax.llm.testing import FakeOpenAIServer

    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="study_fused_"))
    result: dict = {"methods": list(METHODS), "seeds": SEEDS, "settings": SETTINGS,
                    "cache": "none (cold)" if cache is None else "the test suite's persistent cache (warm)"}
    walls: dict[str, list[float]] = {"fused": [], "sequential": []}
    try:
        with FakeOpenAIServer(_respond) as server:
            for r in range(rounds):
                for schedule in walls:
                    out = work / f"{schedule}_{r}"
                    walls[schedule].append(_study(schedule, out, server.base_url, cache))
                    result[f"programs_{schedule}_round_{r}"] = _programs(out, schedule)
        for schedule, w in walls.items():
            result[f"{schedule}_wall_s"] = round(sorted(w)[len(w) // 2], 1)  # the median (upper for two)
            result[f"{schedule}_walls_s"] = [round(x, 1) for x in w]
            first = result[f"programs_{schedule}_round_0"]
            result[f"programs_{schedule}"] = first["compiled"] + first["loaded"]
        result["identical"] = all(_outputs(work / "fused_0" / m) == _outputs(work / "sequential_0" / m)
                                  for m in METHODS)
        result["identical_note"] = ("metrics (losses included), report and designs of every method, fused vs one "
                                    "after another; False means they differ, at most in float32 roundoff of the "
                                    "losses (docs/studies.md)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["load_average_before"] = [round(x, 2) for x in load_before]
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    result["note"] = ("2-core CPU shared with 4-5 other jobs (load averages recorded, about 6-9x the cores): read "
                      "the ratio only; wall_s is the whole `envgen-jax study` command (process start, programs "
                      "loaded or compiled, training, evaluations, checkpoints, reports); programs: those the "
                      "study's session compiled or loaded (compile.json; a fused study's members share one session)")
    return result


def memory(config: str, agents: list[int], overrides: list[str]) -> dict:
    import jax
    import numpy as np

    from envgen_jax.run.parts import RunParts, checkpoint_bytes
    from envgen_jax.run_config import load_run_config
    from envgen_jax.study.groups import memory_estimate
    from envgen_jax.trainer.train import _chunk_arguments

    cfg = load_run_config(config, overrides)
    parts = RunParts.of(cfg)
    trainer = parts.make_trainer()
    bank = parts.env.make_params([parts.game.config_cls.original()] * cfg.bank_rows)
    rows = np.zeros(cfg.ppo.num_envs, np.int32)
    points = []
    for n in agents:
        ts = trainer.abstract_state(bank, rows, seeds=list(range(n)))
        start = time.perf_counter()
        compiled = trainer._chunk_jit.lower(*_chunk_arguments(ts, bank, rows),
                                            num_updates=cfg.schedule.updates_per_chunk).compile()
        m = compiled.memory_analysis()
        sizes = {k: int(getattr(m, f"{k}_size_in_bytes")) for k in ("argument", "output", "temp", "alias",
                                                                     "generated_code")}
        # Arguments are donated (the TrainState): what the chip holds at once is arguments + temporaries + outputs
        # not aliased to an argument.
        peak = sizes["argument"] + sizes["temp"] + sizes["output"] - sizes["alias"]
        points.append({"agents": n, **sizes, "peak_bytes": peak, "estimate_bytes": memory_estimate(parts, n)["total"],
                       "compile_s": round(time.perf_counter() - start, 1)})
        print(points[-1], flush=True)
    x = np.array([p["agents"] for p in points], float)
    y = np.array([p["peak_bytes"] for p in points], float)
    per_agent, fixed = np.polyfit(x, y, 1) if len(points) > 1 else (y[0] / x[0], 0.0)
    return {"config": str(config), "overrides": overrides, "observation": cfg.observation,
            "network": cfg.network.kind, "num_envs": cfg.ppo.num_envs, "num_steps": cfg.ppo.num_steps,
            "train_state_bytes_per_agent": checkpoint_bytes(parts) / cfg.num_agents, "points": points,
            "fit": {"fixed_bytes": float(fixed), "per_agent_bytes": float(per_agent)},
            "device": jax.devices()[0].device_kind}


def _merge(update: dict) -> None:
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    old.update(update)
    old["environment"] = environment()
    write_text_atomic(OUT, json.dumps(old, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memory", action="store_true", help="measure the compiled chunk's memory instead")
    p.add_argument("--config", default=str(ROOT / "configs" / "study_cpu.yaml"))
    p.add_argument("--agents", default="2,4,8", help="agent counts for --memory")
    p.add_argument("--label", default="symbolic", help="the memory result's name in the file")
    p.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[])
    p.add_argument("--cache", default=str(ROOT / ".cache" / "jax"),
                   help="persistent compilation cache to load the programs from ('none': cold, compile everything)")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    if args.memory:
        result = memory(args.config, [int(a) for a in args.agents.split(",")], args.overrides)
        old = json.loads(OUT.read_text()).get("memory", {}) if OUT.exists() else {}
        _merge({"memory": {**old, args.label: result}})
    else:
        _merge(speed(None if args.cache == "none" else Path(args.cache), args.rounds))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
