"""Where the test suite's time goes: one whole run's junit xml and its per-worker compile logs (tests/conftest.py,
ENVGEN_COMPILE_LOG) turned into seconds per file (compile and the rest), the programs compiled and how many of them
were the same program compiled again, and the slowest tests with what each checks that no cheaper test does.

A run to read (the whole suite, as `make test` runs it, with the log and the xml on):

    date +%s > suite.start
    ENVGEN_COMPILE_LOG=$PWD/suite_compiles.json JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE \\
        .venv/bin/python -m pytest -q tests -n 2 --dist loadfile --durations=0 --junitxml=suite_junit.xml | tee suite.log
    date +%s > suite.end
    .venv/bin/python benchmarks/test_suite.py --label after --junit suite_junit.xml --compile-logs suite_compiles.gw*.json \\
        --start suite.start --end suite.end --log suite.log --checkout . --conditions "2 idle cores, clean clone"

Each --label is a block of benchmarks/results/test_suite_cpu.json (the other blocks are kept), so the "before" and
"after" runs sit side by side. Per file: its tests' seconds (the xml's), the XLA compiles' seconds (summed over
threads: the trainer compiles in background threads, so the sum can exceed the wall), the persistent-cache loads'
(a wait for another worker's compile of the same program included), the seconds during which some compile of the
file ran, and the rest. The programs the CLI tests' subprocesses compile are in their tests' other seconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, environment, load_json, write_text_atomic  # noqa: E402
from envgen_jax.run.provenance import git_commit  # noqa: E402

OUT = RESULTS / "test_suite_cpu.json"
# A program compiled under this many seconds is left out of the "compiled again" list (it is still counted).
LISTED_SECONDS = 1.0

# What each of the suite's costliest tests checks that no cheaper test checks (read from the tests, 932974f). The
# report pairs these with the measured slowest ten; a test not described here is listed with "checks": null.
CHECKS = {
    "tests/test_loop.py::test_run_directory_has_every_output":
        "carries the module's envgen_run: the whole EnvGen loop in process on smoke.yaml at the golden runs' tiny "
        "shapes, a scripted LLM, pictures and TensorBoard on; every output file, the step counts, the metrics rows "
        "(the loop's other tests read the same run)",
    "tests/test_loop.py::test_kill_9_anywhere_then_resume_gives_the_same_report":
        "the CLI in subprocesses against a stand-in OpenAI server: a run killed with SIGKILL mid-training and "
        "again mid-LLM-request, resumed to the report and metrics of the uninterrupted run (since round 3 on the "
        "toy game, the uninterrupted run in-process); the only kill -9 test of train through the real command",
    "tests/test_loop.py::test_heist_runs_through_the_same_loop":
        "the loop on Procgen Heist (another game, its own programs): outputs, achievements, easy mode, the written "
        "config read back",
    "tests/test_loop.py::test_per_seed_designers_and_mixed_slots":
        "feedback=per_seed with mixing=mixed: one designer per seed, each seed training on its own designer's rows "
        "beside the original game's (on the toy game since this round: the loop's machinery, seconds to compile)",
    "tests/test_loop.py::test_a_sweep_section_trains_every_combination_in_one_run":
        "a sweep: section: 8 agents with their own traced learning rates and entropy coefficients in one vmapped "
        "run, reported per combination, restored from the checkpoint; bad sweep values named (on the toy game)",
    "tests/test_loop.py::test_scripted_runs_through_the_loop_on_its_own_feedback":
        "method=scripted through the loop: cycle 2 targets cycle 1's weakest achievements (where a worker runs it "
        "first, it compiles the tiny run's programs the later runs reuse)",
    "tests/test_loop.py::test_smoke_config_with_the_offline_llm":
        "configs/smoke.yaml as a user runs it, through the CLI (its agent and batch the golden runs', so it loads "
        "their programs), with the real offline LLM (SmolLM2 through llama.cpp's server) writing both designs",
    "tests/test_ued.py::test_sfl_run_selects_and_records":
        "carries the module's SFL run (the learnability evaluator, the pool's reset and the sampled-row chunk): "
        "selections at the phase start and after refresh_updates, the kept rows the most learnable, top levels "
        "written",
    "tests/test_ued.py::test_plr_run_records_its_buffer":
        "carries the module's PLR run (the level sampler inside the chunk): buffer metrics per chunk, one chunk "
        "program for every phase, the top levels written",
    "tests/test_ued.py::test_envgen_sfl_picks_from_the_pool_and_tells_the_llm":
        "envgen_sfl against its golden: the LLM's pool filtered by learnability, training only in the chosen rows, "
        "each environment's learnability in the next prompt",
    "tests/test_benchmarks.py::test_run_all_envs_part":
        "carries the module's benchmarks/run_all.py --cpu-tiny subprocesses (env speed against craftax and "
        "training at the fast-compile flags; e2e at the golden runs' agent, shapes and flags, so it shares their "
        "programs) and checks the envs part; the only test of the benchmarks' whole pipeline",
    "tests/test_benchmarks.py::test_a_killed_e2e_benchmark_keeps_its_rows":
        "run_all's e2e part killed with SIGKILL in its second row (1 seed): the first (2 seeds, the golden shape, "
        "loaded from the cache) is whole and the second saved as unfinished with its time so far (killed after its "
        "init section since round 4, before it compiles a 1-seed chunk)",
    "tests/test_llm_local.py::test_default_offline_designer_generates_through_the_cli":
        "envgen-jax llm generate with no endpoint: the default 1.5B offline model makes one real design",
    "tests/test_llm_local.py::test_small_model_serves_valid_configs_and_reuses_its_prompt_cache":
        "SmolLM2 through llama.cpp's server: a valid design with structured output, a feedback turn that reuses "
        "the prompt cache, the server stopped after (the toy game's designs since round 4: a short prompt)",
    "tests/test_multiprocess.py::test_a_study_over_two_processes_killed_twice_resumes_to_exactly_what_one_process"
    "_with_two_devices_trains":
        "a fused study over two processes (JAX's multi-process runtime, gloo) killed twice, process 1 and then "
        "process 0 (the coordinator), resumed by the same command each time, ending bit for bit as the study in one "
        "process with two devices (on the toy game; its module's three reference runs are in its setup)",
    "tests/test_crafter_pixels.py::test_pixels_are_craftax_pixels_as_bytes":
        "our pixel observations against craftax's own pixel env over a reset and 12 steps (two Crafter programs): "
        "equal up to the float-to-byte rounding, as bytes",
    "tests/test_benchmarks.py::test_agent_benchmark_writes_windows_table_and_plot":
        "the agent benchmark (benchmarks/agent_sample_efficiency.py) at its tiny size: two recipes as one 4-agent "
        "program, its windows, table and plot written",
    "tests/test_compile.py::test_a_second_run_compiles_nothing":
        "two CLI runs in fresh processes with the project's own cache folder: the run compiles exactly init, "
        "chunk and evaluation, and the second run loads all three (on the toy game since this round)",
    "tests/test_crafter_pixels.py::test_conv_agent_trains_on_pixels":
        "carries the module's conv_run: the conv agent trained on Crafter's pixels (vmapped), the only training "
        "on them; the execution modes (map, dense, dense with seed 1) train on a pixel probe since this round",
    "tests/test_trainer_crafter.py::test_ppo_learns_over_random_policy":
        "PPO on Crafter learns: 61k steps (2 seeds x 30,720 on the golden runs' trainer since round 4, its "
        "programs loaded), the trained policy beats a random one on return and score (the only learning check on "
        "the real game)",
    "tests/test_fused.py::test_fused_agents_equal_the_runs_alone":
        "carries the module's fused_and_alone: ppo, envgen, random and scripted x 2 seeds as one fused run (8 "
        "agents, one chunk program) against each method alone: every evaluation, design and metric equal, "
        "parameters and losses within the vmapped products' rounding (on the toy game since round 4)",
    "tests/test_fused.py::test_with_the_seeds_mapped_fused_equals_alone_bit_for_bit":
        "the same study with execution.seed_axis: map (its own four programs: fused and alone, chunk and "
        "evaluation): fused equals alone bit for bit, parameters and losses included",
    "tests/test_fused.py::test_kill_9_in_a_fused_study_then_the_same_command_gives_the_same_results":
        "envgen-jax study --schedule fused through the CLI, killed with SIGKILL, then the same command: every "
        "method's outputs equal the uninterrupted fused run's (on the toy game since round 3, a checkpoint after "
        "every chunk)",
    "tests/test_sharding.py::test_two_forced_devices_match_one[2]":
        "a chunk sharded over two forced CPU devices (split by seed) gives one device's results",
    "tests/test_sharding.py::test_two_forced_devices_match_one[1]":
        "a chunk sharded over two forced CPU devices (split by env slot) gives one device's results (a bandit "
        "probe since this round)",
}


def _load_junit(path: Path) -> list[dict]:
    """One row per test case: nodeid (as pytest names it), file, seconds, outcome."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        parts = classname.split(".")
        # "tests.test_loop" or "tests.test_agent.TestX": the module is the longest prefix named test_*.
        cut = max((i for i, p in enumerate(parts) if p.startswith("test_")), default=len(parts) - 1) + 1
        file = "/".join(parts[:cut]) + ".py"
        nodeid = "::".join([file, *parts[cut:], name])
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
        rows.append({"nodeid": nodeid, "file": file, "seconds": float(case.get("time", 0.0)), "outcome": outcome})
    return rows


def _load_compile_logs(paths: list[Path]) -> dict[str, dict]:
    """nodeid -> {worker, seconds, programs, cache_hits, ...}; a worker is named by its log file (x.gw0.json)."""
    merged = {}
    for path in paths:
        worker = re.search(r"\.(gw\d+)\.json$", path.name)
        for nodeid, entry in json.loads(path.read_text()).items():
            merged[f"{nodeid}@{worker.group(1)}" if nodeid == "(collection)" and worker else nodeid] = {
                "worker": worker.group(1) if worker else "main", **entry}
    return merged


def _covered(spans: list[tuple[float, float]]) -> float:
    """The seconds covered by the union of (start, end) spans: compiles in background threads overlap each other
    and the test's own work, so their summed seconds can exceed the test's."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _program_identity(program: list, keyed: bool) -> str:
    """The persistent-cache key where the log recorded one (the lowered module, options and flags hashed), else the
    name alone (an upper bound on repeats: one name can be many programs)."""
    return program[2] if keyed and len(program) > 2 and program[2] else program[0]


def _programs(logs: dict[str, dict]) -> dict:
    keyed = any(len(p) > 2 and p[2] for e in logs.values() for p in e["programs"])
    seen = collections.defaultdict(list)  # identity -> [(file, worker, seconds, status)]
    for nodeid, entry in logs.items():
        file = nodeid.split("::")[0]
        for program in entry["programs"]:
            status = program[3] if len(program) > 3 else None
            seen[_program_identity(program, keyed)].append((file, entry["worker"], program[1], status, program[0]))
    compiled = [(ident, [o for o in uses if o[3] != "hit"]) for ident, uses in seen.items()]
    again = sorted(((ident, uses) for ident, uses in compiled if len(uses) > 1),
                   key=lambda x: -sum(o[2] for o in x[1][1:]))
    hits = sum(o[3] == "hit" for uses in seen.values() for o in uses)
    listed = [{"name": uses[0][4], "key": ident if keyed else None, "times": len(uses),
               "seconds": [o[2] for o in uses], "files": sorted({o[0] for o in uses}),
               "workers": sorted({o[1] for o in uses})}
              for ident, uses in again if max(o[2] for o in uses) >= LISTED_SECONDS]
    if not keyed:  # a name is not a program (a jit of one function at two shapes is two): no count of repeats
        return {"identity": "program name only: this log recorded no cache keys, so which compiles were the same "
                            "program again is not known, and persistent-cache loads are counted with the compiles",
                "programs_compiled": sum(len(uses) for _, uses in compiled),
                "distinct_names": len(seen),
                "compile_seconds": round(sum(o[2] for _, uses in compiled for o in uses), 1),
                f"names_compiled_more_than_once_over_{LISTED_SECONDS:g}s": listed}
    return {
        "identity": ("persistent-cache key (the lowered module, compile options and XLA flags hashed)" if keyed else
                     "program name only (this log recorded no cache keys): 'compiled again' is an upper bound, "
                     "and persistent-cache loads are counted with the compiles"),
        "programs_compiled": sum(len(uses) for _, uses in compiled),
        "distinct_programs": sum(1 for _, uses in compiled if uses),
        "loaded_from_persistent_cache": hits,
        "compile_seconds": round(sum(o[2] for _, uses in compiled for o in uses), 1),
        "compiled_again": sum(len(uses) - 1 for _, uses in again),
        "compiled_again_seconds": round(sum(o[2] for _, uses in again for o in uses[1:]), 1),
        "compiled_again_in_another_file": sum(len({o[0] for o in uses}) > 1 for _, uses in again),
        "compiled_again_in_both_workers": sum(len({o[1] for o in uses}) > 1 for _, uses in again),
        f"compiled_again_over_{LISTED_SECONDS:g}s": listed,
    }


def summarize(junit: Path | None, compile_logs: list[Path], start: float | None, end: float | None,
              log_text: str | None) -> dict:
    logs = _load_compile_logs(compile_logs)
    if junit is not None:
        tests = _load_junit(junit)
    else:  # a run cut short writes no xml: its tests are those the compile logs name, their seconds unknown
        tests = [{"nodeid": n, "file": n.split("::")[0], "seconds": 0.0, "outcome": "unknown"}
                 for n in logs if "::" in n]
    by_file = collections.defaultdict(lambda: {"tests": 0, "seconds": 0.0, "compile_seconds": 0.0,
                                               "load_seconds": 0.0, "spans": [], "trace_seconds": 0.0,
                                               "lower_seconds": 0.0, "workers": set()})
    for t in tests:
        row = by_file[t["file"]]
        row["tests"] += 1
        row["seconds"] += t["seconds"]
    for nodeid, entry in logs.items():
        file = nodeid.split("::")[0].split("@")[0]
        if file not in by_file:
            continue  # "(collection)": before any test
        row = by_file[file]
        for program in entry["programs"]:
            hit = len(program) > 3 and program[3] == "hit"
            row["load_seconds" if hit else "compile_seconds"] += program[1]
            if len(program) > 4:  # its end time: the span it ran, for the wall seconds with a compile going
                row["spans"].append((program[4] - program[1], program[4]))
        row["trace_seconds"] += entry.get("trace_seconds", 0.0)
        row["lower_seconds"] += entry.get("lower_seconds", 0.0)
        row["workers"].add(entry["worker"])
    timed = junit is not None
    files = [{"file": f, "tests": r["tests"], "seconds": round(r["seconds"], 1) if timed else None,
              "compile_seconds": round(r["compile_seconds"], 1),
              "cache_load_seconds": round(r["load_seconds"], 1),
              "seconds_while_compiling": round(_covered(r["spans"]), 1) if r["spans"] else None,
              "other_seconds": (round(r["seconds"] - _covered(r["spans"]), 1) if timed and r["spans"] else None),
              "trace_and_lower_seconds": round(r["trace_seconds"] + r["lower_seconds"], 1),
              "worker": ",".join(sorted(r["workers"])) or None}
             for f, r in sorted(by_file.items(), key=lambda x: -(x[1]["seconds"] or x[1]["compile_seconds"]))]
    # The slowest by their seconds; without an xml, by their compile seconds.
    slowest = sorted(tests, key=lambda t: -(t["seconds"] or logs.get(t["nodeid"], {}).get("seconds", 0.0)))[:10]
    outcomes = collections.Counter(t["outcome"] for t in tests)
    worker_seconds = collections.Counter()
    for f in files:
        if timed and f["worker"] and "," not in f["worker"]:
            worker_seconds[f["worker"]] += f["seconds"]
    summary_line = None
    if log_text:
        lines = [line for line in log_text.splitlines() if re.search(r"\d+ passed", line)]
        summary_line = lines[-1].strip("= ") if lines else None
    total = sum(t["seconds"] for t in tests)
    return {
        "wall_seconds": round(end - start, 1) if start and end else None,
        "test_summary": (f"{sum(f['seconds'] for f in files):.0f} worker-seconds in {len(tests)} tests" if timed
                         else f"{len(tests)} tests named by the compile logs (no xml: their seconds unknown)"),
        "pytest_summary": summary_line,
        "tests": len(tests), "outcomes": dict(outcomes),
        "worker_seconds": round(total, 1) if timed else None,
        "seconds_per_worker": {w: round(s, 1) for w, s in sorted(worker_seconds.items())},
        "compile_seconds_in_workers": round(sum(p[1] for e in logs.values() for p in e["programs"]
                                                if not (len(p) > 3 and p[3] == "hit")), 1),
        "cache_load_seconds_in_workers": round(sum(p[1] for e in logs.values() for p in e["programs"]
                                                   if len(p) > 3 and p[3] == "hit"), 1),
        "trace_and_lower_seconds_in_workers": round(sum(e.get("trace_seconds", 0.0) + e.get("lower_seconds", 0.0)
                                                        for e in logs.values()), 1),
        "programs": _programs(logs),
        "files": files,
        "slowest_tests": [{"test": t["nodeid"], "seconds": round(t["seconds"], 1) if timed else None,
                           "compile_seconds": round(logs.get(t["nodeid"], {}).get("seconds", 0.0), 1),
                           "checks": CHECKS.get(t["nodeid"])} for t in slowest],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", help="the block to write, e.g. before or after")
    parser.add_argument("--junit", type=Path, help="the run's junit xml (pytest --junitxml); without it, the "
                        "compile logs alone (a run cut short)")
    parser.add_argument("--compile-logs", type=Path, nargs="*", default=[])
    parser.add_argument("--start", type=Path, help="a file holding the run's start, epoch seconds")
    parser.add_argument("--end", type=Path, help="a file holding the run's end, epoch seconds")
    parser.add_argument("--log", type=Path, help="the run's pytest output (its last line is the summary)")
    parser.add_argument("--checkout", type=Path, help="the checkout the suite ran in (its commit is recorded)")
    parser.add_argument("--command", default="make test (pytest -q tests -n 2 --dist loadfile)")
    parser.add_argument("--conditions", default="", help="the machine's state during the run, in words")
    parser.add_argument("--note", action="append", default=[], help="a line kept with the block (repeatable)")
    parser.add_argument("--earlier-file-seconds", type=json.loads, metavar="JSON",
                        help="seconds per file of an earlier whole run, kept with the block as they are given")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--file-seconds", metavar="LABEL",
                        help="print a block's seconds per file as tests/conftest.py's FILE_SECONDS, and stop")
    args = parser.parse_args(argv)
    if args.file_seconds:
        files = (load_json(args.out) or {})[args.file_seconds]["files"]
        print({Path(f["file"]).stem: round(f["seconds"]) for f in files if (f["seconds"] or 0) >= 10})
        return 0
    if not args.label:
        parser.error("give --label (the block to write) or --file-seconds LABEL")
    if not args.compile_logs and args.junit is None:
        parser.error("give --junit, --compile-logs or both")

    read_time = (lambda p: float(p.read_text().split()[0]) if p else None)  # noqa: E731
    block = summarize(args.junit, args.compile_logs, read_time(args.start), read_time(args.end),
                      args.log.read_text(errors="replace") if args.log else None)
    code = git_commit(args.checkout.resolve()) if args.checkout else git_commit()
    block = {"code": {k: code[k] for k in ("commit", "dirty")}, "command": args.command,
             "conditions": args.conditions, "notes": args.note, **block}
    if args.earlier_file_seconds:
        block["earlier_file_seconds"] = args.earlier_file_seconds
    result = load_json(args.out) or {}
    result.setdefault("benchmark", "test_suite")
    result["environment"] = environment()  # the machine this file was last written on
    result[args.label] = block
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out, json.dumps(result, indent=1) + "\n")
    print(f"{args.label}: {block['pytest_summary']}, wall {block['wall_seconds']} s, {block['test_summary']}, "
          f"{block['compile_seconds_in_workers']} s compiling; programs compiled again: "
          f"{block['programs'].get('compiled_again', 'unknown (no keys)')} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
