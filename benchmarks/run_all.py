"""All the speed measurements, side by side in one process, printed as ratio tables and saved per part.

Parts (`--parts envs,training,e2e`, default all three):

  envs      environment stepping: craftax's own Craftax-Classic env (default params, with and without its
            auto-reset) vs ours (original config, a heterogeneous bank of 8 configs, and our config-aware resets),
            at each `--envs` count; random actions, `lax.scan` of `--env-steps` steps, compile timed apart.
  training  the PPO trainer (Craftax-baseline PPO: 64 steps x 4 epochs x 8 minibatches, 3 x 512 MLP) vs env-only
            stepping of the same VecEnv (the limit), homogeneous vs heterogeneous bank, at each `--envs` count,
            AOT compile time apart (bench_training.py).
  e2e       the whole EnvGen run (`envgen_jax.run.loop.EnvGenRun`, timed through its callbacks) of `--config` (default configs/crafter_envgen.yaml:
            4 cycles x (LLM step, 0.12M steps in LLM envs, 0.12M in Crafter, evaluation) + 1M scored steps =
            1.96M steps per seed, rounded up to whole chunks) for each `--seeds` count (vmapped seeds), wall time
            from building the run to its report, compile included (no persistent compilation cache unless
            `--compile-cache`), with the time split into LLM step / training / evaluation / checkpoints / other and
            the compile work inside each, and the run's own record (report.json `phases`: compile, training,
            evaluation, llm, checkpoint, other seconds; `compile`: each program, cache hit or not). While a run
            goes, its row is saved after every section as `unfinished` with the time so far, so a run killed by a
            time limit still says where its time went.
            The LLM is not what is measured: by default a deterministic scripted client answers every request with
            a valid design (`--llm scripted`); `--llm transcript:PATH` answers with the replies recorded in an
            `llm_transcript.jsonl`, in order (prompts may differ from the recorded run's); `--llm config` uses the
            run config's `llm:` as set (e.g. `--set llm.backend=replay --set llm.replay_path=PATH`, which must be
            the transcript of this very run: replay stops at the first prompt that differs).

Each part writes <out-dir>/<part>_<tag>.json (environment: device, jax, commit, ...; settings; rows), replaced
atomically as each row is measured, and a PNG of its table; tag = gpu | cpu | <platform>_tiny. Rows from earlier
invocations with the same code, device and settings are kept (so the parts and seed counts can run as separate
commands within a time limit; `--fresh` starts anew).

    python benchmarks/run_all.py                                  # GPU: every part at the default sizes
    python benchmarks/run_all.py --parts e2e --seeds 16           # one row, merged into e2e_gpu.json
    python benchmarks/run_all.py --cpu-tiny --out-dir /tmp/bench  # CPU smoke run of all the machinery

On a CPU, and with --cpu-tiny, absolute speeds are not for quoting; the results say so.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (CPU_NOTE, ROOT, RESULTS, CompileTimer, designer_client,  # noqa: E402
                               disable_persistent_cache, format_table, platform_tag, result_path, save_merged,
                               write_text_atomic)
from envgen_jax.run.compile_cache import configure_compile_cache  # noqa: E402
from tests.trainer_configs import QUIET, tiny_run  # noqa: E402

PARTS = ("envs", "training", "e2e")
GPU_DEFAULTS = {"envs": [1024, 4096, 16384], "seeds": [1, 8, 16, 32], "env_steps": 128, "repeats": 3,
                "train_steps": 64, "train_updates": 4, "width": 512}
TINY_DEFAULTS = {"envs": [8, 32], "seeds": [1, 2], "env_steps": 8, "repeats": 1, "train_steps": 8,
                 "train_updates": 1, "width": 32}
# The protocol shrunk so that a CPU runs it in seconds (2 cycles, every phase, every output).
TINY_E2E = tiny_run(seeds=None, quiet=())
E2E_QUIET = list(QUIET)
# Issue 44's aims on one GPU: the paper's protocol with 16 seeds cold and with a warm compilation cache, training
# throughput at 16384 envs; and the first GPU round's ratios.
AIMS = {"e2e_wall_s_16_seeds_cold": 120.0, "e2e_wall_s_16_seeds_warm": 60.0, "train_sps_at_16384": 1_000_000.0,
        "train_over_env_only_at_4096": 0.5, "het_over_homo": 0.95}


def _ints(text: str) -> list[int]:
    return [int(x) for x in str(text).replace(" ", "").split(",") if x]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:2000]


# ------------------------------------------------------------------------------------------------------ envs
def envs_header(args) -> dict:
    from benchmarks import bench_envs
    return {"benchmark": "envs", "settings": {"steps": args.env_steps, "repeats": args.repeats,
                                              "hetero_bank_rows": len(bench_envs.HETERO)},
            "variants": bench_envs.VARIANT_DOC}


def envs_rows(args, log):
    from benchmarks import bench_envs
    for n in args.envs:
        try:
            yield from bench_envs.run([n], args.env_steps, args.repeats, log=log)["rows"]
        except Exception as e:  # one size failing (memory, say) must not lose the others
            log(f"envs: {n} envs failed: {_error(e)}")
            yield {"num_envs": n, "error": _error(e), "traceback": traceback.format_exc()[-4000:],
                   "measured_at": _now()}


def envs_table(payload: dict) -> tuple[list[str], list[list]]:
    headers = ["envs", *[f"{v} steps/s" for v in ("craftax", "craftax_auto", "ours_original", "ours_hetero",
                                                  "ours_resets")],
               "ours/craftax", "hetero/homo", "resets/no-resets", "ours_resets/craftax_auto", "world gen (steps)"]
    rows = []
    for r in payload["rows"]:
        if "error" in r:
            rows.append([r["num_envs"], *(["error"] * 10)])
            continue
        res, ra = r["results"], r["ratios"]
        rows.append([r["num_envs"], *[res[v]["steps_per_s"] for v in ("craftax", "craftax_auto", "ours_original",
                                                                       "ours_hetero", "ours_resets")],
                     ra["ours_original_vs_craftax"], ra["hetero_vs_homogeneous"], ra["with_resets_vs_without"],
                     ra["ours_resets_vs_craftax_auto"], ra.get("world_generation_in_steps", "n/a")])
    return headers, rows


# -------------------------------------------------------------------------------------------------- training
def training_header(args) -> dict:
    return {"benchmark": "training",
            "settings": {"num_steps": args.train_steps, "updates_per_chunk": args.train_updates,
                         "repeats": args.repeats, "bank_rows": args.bank_rows, "width": args.width},
            "definition": "sps = env steps per second of the best of `repeats` calls after two warm-ups; env_only "
                          "steps the heterogeneous bank with random actions through the same VecEnv; "
                          "ratio_train_*_over_env = training sps / env-only sps; compile_s = AOT lower+compile"}


def training_rows(args, log):
    from benchmarks import bench_training
    for n in args.envs:
        try:
            yield from bench_training.run([n], args.train_steps, args.train_updates, args.repeats, args.bank_rows,
                                          args.width, 0, log=log, partial=getattr(args, "save_row", None))
        except Exception as e:
            log(f"training: {n} envs failed: {_error(e)}")
            yield {"num_envs": n, "error": _error(e), "traceback": traceback.format_exc()[-4000:],
                   "measured_at": _now()}


def training_aims(rows: list[dict]) -> dict:
    good = [r for r in rows if "error" not in r]
    at = [r for r in good if r["num_envs"] == 4096]
    big = [r for r in good if r["num_envs"] == 16384]
    return {"train_sps_at_16384": {"aim_at_least": AIMS["train_sps_at_16384"],
                                   "measured_het": big[0]["train_heterogeneous"]["sps"] if big else None},
            "train_over_env_only_at_4096": {"aim": AIMS["train_over_env_only_at_4096"],
                                            "measured_het": at[0]["ratio_train_het_over_env"] if at else None,
                                            "measured_homo": at[0]["ratio_train_homo_over_env"] if at else None},
            "het_over_homo": {"aim": AIMS["het_over_homo"],
                              "measured_min": min((r["ratio_het_over_homo"] for r in good), default=None),
                              "measured_max": max((r["ratio_het_over_homo"] for r in good), default=None)}}


def training_table(payload: dict) -> tuple[list[str], list[list]]:
    headers = ["envs", "env-only sps", "train homo sps", "train het sps", "het train/env", "homo train/env",
               "het/homo", "env compile s", "train compile s"]
    rows = []
    for r in payload["rows"]:
        if r.get("unfinished"):  # stopped by a time limit: what it measured before
            env_only = r.get("env_only") or {}
            rows.append([r["num_envs"], env_only.get("sps", "unfinished"), *(["unfinished"] * 5),
                         env_only.get("compile_s"), r.get("train_compile_s")])
            continue
        if "error" in r:
            rows.append([r["num_envs"], *(["error"] * 8)])
            continue
        rows.append([r["num_envs"], r["env_only"]["sps"], r["train_homogeneous"]["sps"],
                     r["train_heterogeneous"]["sps"], r["ratio_train_het_over_env"], r["ratio_train_homo_over_env"],
                     r["ratio_het_over_homo"], r["env_only"]["compile_s"], r["train_homogeneous"]["compile_s"]])
    return headers, rows


# ------------------------------------------------------------------------------------------------------- e2e
E2E_SAVE_EVERY_S = 20.0  # the unfinished row is saved this often too: a phase can outlast a time box (the GPU's 1M)


class _Every:
    """Calls `fn()` every `seconds` in a daemon thread while the `with` block runs; none once the block has ended
    (the exit waits for a call under way). A failing call is skipped, the next one tried."""

    def __init__(self, fn, seconds: float):
        self.fn, self.seconds = fn, seconds
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="e2e-progress")

    def _loop(self):
        while not self.stop.wait(self.seconds):
            try:
                self.fn()
            except Exception:  # e.g. a file half written: the next call, or the section's own save, has it
                pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


class _Clock:
    """Wall time per category with nesting (an inner category pauses the outer one); tells the CompileTimer
    which category is running, so compile work is attributed to it."""

    def __init__(self, compile_timer: CompileTimer):
        self.seconds: dict[str, float] = {}
        self.stack: list[list] = []
        self.timer = compile_timer

    @contextlib.contextmanager
    def __call__(self, category: str):
        now = time.perf_counter()
        if self.stack:
            outer = self.stack[-1]
            self.seconds[outer[0]] = self.seconds.get(outer[0], 0.0) + now - outer[1]
        self.stack.append([category, now])
        self.timer.category = category
        try:
            yield
        finally:
            now = time.perf_counter()
            cat, start = self.stack.pop()
            self.seconds[cat] = self.seconds.get(cat, 0.0) + now - start
            if self.stack:
                self.stack[-1][1] = now
            self.timer.category = self.stack[-1][0] if self.stack else "other"


def timing_callbacks(clock: "_Clock", after_section=None):
    """Loop callbacks that time the run's sections (init, llm, train, evaluate, checkpoint) on `clock`; then
    `after_section(name)`, if given (the e2e part saves its unfinished row there)."""
    from envgen_jax.run.loop import Callbacks

    class Timing(Callbacks):
        @contextlib.contextmanager
        def section(self, name: str):
            with clock(name):
                yield
            if after_section is not None:
                after_section(name)

    return Timing()


def e2e_row(args, seeds: int, runs_dir: Path, log) -> dict:
    from envgen_jax import games
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config
    from envgen_jax.run.log import Prefixed, configure_console

    configure_console()
    overrides = [*(TINY_E2E if args.cpu_tiny else []), *E2E_QUIET, *args.overrides, f"seeds={seeds}"]
    if args.llm != "config":
        overrides += ["llm.backend=openai", "llm.model=scripted"]
    cfg = load_run_config(args.config, overrides)
    client, llm_info = designer_client(args.llm, games.config_class(cfg.env))
    replay_state = llm_info.pop("_state", None)
    out = runs_dir / f"seeds_{seeds}"
    shutil.rmtree(out, ignore_errors=True)
    timer = CompileTimer()
    clock = _Clock(timer)
    s = cfg.schedule
    nominal = s.cycles * (s.llm_env_steps + s.original_env_steps) + s.final_steps
    log(f"e2e: {seeds} seed(s), {cfg.method} on {cfg.env}, {nominal:,} nominal steps per seed, "
        f"{cfg.ppo.num_envs} envs per seed ...")
    save_row = getattr(args, "save_row", None)
    lock = threading.Lock()  # the section ends (this thread) and the periodic saves (`_Every`) write one file
    last = "none"  # the section that ended last

    def unfinished(section: str | None) -> None:
        """The row so far, saved after each section and every E2E_SAVE_EVERY_S (section None): a run killed by a
        time limit still says where its time went and how far it got (replaced by the finished row)."""
        nonlocal last
        if save_row is None:
            return
        with lock:
            last = section or last
            where = f"after its {section} section" if section else f"inside a section (the last ended: {last})"
            phases = _read_json(out / "phases.json")
            save_row({"seeds": seeds, "error": f"unfinished: stopped {where} (killed or out of time); "
                                               "phase_s_so_far says where the time went",
                      "unfinished": True, "wall_s_so_far": time.perf_counter() - start,
                      "phase_s_so_far": dict(clock.seconds), "compile_s_so_far": timer.total_s,
                      "phases_so_far": phases.get("seconds"), "persistent_cache_hits_so_far": timer.cache_hits,
                      "env_steps_per_seed_so_far": _steps_so_far(out / "metrics.jsonl"), "measured_at": _now()})

    with timer:
        start = time.perf_counter()
        with clock("build"):
            run = EnvGenRun(cfg, out, log=Prefixed(f"  [{seeds} seed(s)] "), llm_client=client,
                            callbacks=timing_callbacks(clock, unfinished))
        with _Every(lambda: unfinished(None), E2E_SAVE_EVERY_S):
            report = run.run()
        wall = time.perf_counter() - start
    chunks = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    chunk_s = [c["seconds"] for c in chunks]
    steady = [c["steps_per_second"] for c in chunks[1:]] or [c["steps_per_second"] for c in chunks]
    memory = None
    try:
        memory = (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")
    except Exception:
        pass
    phases = dict(clock.seconds)
    phases["other"] = wall - sum(phases.values())  # run() outside the timed phases: config, report and plots
    compile_by = dict(timer.by_category)
    if replay_state is not None:
        llm_info["fallback_replies"] = replay_state["fallbacks"]
    if llm_info["mode"] == "config":
        llm_info["settings"] = cfg.llm.to_dict()
    row = {
        # No compile event at all means this jax reports them under other names: say unknown, not 0.
        "seeds": seeds, "wall_s": wall, "compile_s": timer.total_s if timer.by_event else None,
        "compile_by_phase_s": compile_by,
        "compile_by_stage_s": timer.by_event, "backend_compiles": timer.backend_compiles,
        "persistent_cache_hits": timer.cache_hits, "phase_s": phases,
        # The run's own record (report.json): compile, training, evaluation, llm, checkpoint, other seconds, and
        # every program it compiled or loaded from the persistent cache.
        "phases": report.get("phases"), "programs": _program_counts(report.get("compile")),
        "env_steps_per_seed": report["env_steps"], "nominal_env_steps_per_seed": nominal,
        "env_steps_total": report["env_steps"] * seeds, "scored_env_steps_per_seed": report["scored_env_steps"],
        "sps_wall": report["env_steps"] * seeds / wall,
        "sps_train_steady_median": statistics.median(steady) if steady else None,
        "chunks": len(chunks), "first_chunk_s": chunk_s[0] if chunk_s else None,
        "median_chunk_s": statistics.median(chunk_s[1:]) if len(chunk_s) > 1 else None,
        "llm_calls": report["llm_calls"], "llm": llm_info,
        "score": report["score"], "score_std": report["score_std"], "reward": report["reward"],
        "reward_std": report["reward_std"], "scored_episodes_per_seed": report["episodes_per_seed"],
        "peak_device_memory_bytes": memory, "measured_at": _now(),
    }
    if not args.keep_runs:
        shutil.rmtree(out, ignore_errors=True)
    else:
        row["run_dir"] = str(out)
    log(f"e2e: {seeds} seed(s): {wall:.1f} s wall ({_fmt(row['compile_s'])} s compiling), "
        f"{row['env_steps_total']:,} env steps, {row['sps_wall']:,.0f} steps/s overall; score "
        f"{_fmt(report['score'])} +/- {_fmt(report['score_std'])}")
    return row


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _steps_so_far(metrics: Path) -> int | None:
    try:
        lines = [line for line in metrics.read_text().splitlines() if line.strip()]
    except OSError:
        return None
    for line in reversed(lines):  # the last line may be half written (read while the run appends)
        try:
            return json.loads(line)["env_steps"]
        except (json.JSONDecodeError, KeyError):
            continue
    return 0


def _program_counts(record: dict | None) -> dict | None:
    """{"compiled", "cache_hits", "seconds", "names"} from a run's compile record."""
    if not record:
        return None
    return {"compiled": record["compiled"], "cache_hits": record["cache_hits"], "seconds": record["seconds"],
            "names": sorted({p["name"] for p in record["programs"]})}


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def e2e_header(args) -> dict:
    from envgen_jax.run_config import load_run_config
    overrides = [*(TINY_E2E if args.cpu_tiny else []), *args.overrides]
    cfg = load_run_config(args.config, [*overrides, *E2E_QUIET])
    s, p = cfg.schedule, cfg.ppo
    config = Path(args.config).resolve()
    protocol = {"config": str(config.relative_to(ROOT)) if config.is_relative_to(ROOT) else str(config),
                "overrides": overrides, "method": cfg.method, "cycles": s.cycles, "llm_env_steps": s.llm_env_steps,
                "original_env_steps": s.original_env_steps, "final_steps": s.final_steps,
                "envs_per_call": s.envs_per_call, "mixing": s.mixing, "feedback": s.feedback,
                "updates_per_chunk": s.updates_per_chunk, "num_envs": p.num_envs, "num_steps": p.num_steps,
                "update_epochs": p.update_epochs, "num_minibatches": p.num_minibatches,
                "network": cfg.network.kind, "width": getattr(cfg.network.encoder, "width", None),
                "depth": getattr(cfg.network.encoder, "depth", None), "eval_num_envs": cfg.eval.envs_per_agent, "eval_max_steps": cfg.eval.max_steps,
                "checkpoint_minutes": cfg.output.checkpoint_minutes, "llm": args.llm}
    return {"benchmark": "e2e", "settings": protocol,
            "definition": "wall_s: from building EnvGenRun to its written report, compile included (persistent "
                          "compilation cache off unless persistent_cache_hits > 0 says otherwise); phase_s splits "
                          "it (build, init, llm, train, evaluate, checkpoint, other = config/report/plots); "
                          "compile_s sums JAX's trace + lowering + backend-compile durations (jax.monitoring); "
                          "sps_wall = env steps of all seeds / wall_s; sps_train_steady_median = the median "
                          "training chunk's steps/s after the first chunk; peak_device_memory_bytes is the "
                          "process's peak so far (rows run in order of --seeds); phases: the run's own seconds "
                          "per phase with compile taken out of each (report.json), programs: what it compiled "
                          "(compiled) or loaded from the persistent cache (cache_hits); a row with unfinished: "
                          "true is a run that was stopped, with its time so far"}


def e2e_rows(args, log):
    from envgen_jax.cli import GC_THRESHOLDS
    gc.set_threshold(*GC_THRESHOLDS)  # each row is a run as the CLI makes it
    runs_root = Path(args.runs_dir) if args.runs_dir else None
    if runs_root:
        runs_root.mkdir(parents=True, exist_ok=True)
    runs_dir = Path(tempfile.mkdtemp(prefix="bench_e2e_", dir=runs_root))
    try:
        for seeds in args.seeds:
            jax.clear_caches()  # each row traces as a lone run does (see main)
            try:
                yield e2e_row(args, seeds, runs_dir, log)
            except Exception as e:
                log(f"e2e: {seeds} seed(s) failed: {_error(e)}")
                yield {"seeds": seeds, "error": _error(e), "traceback": traceback.format_exc()[-4000:],
                       "measured_at": _now()}
    finally:
        if not args.keep_runs:
            shutil.rmtree(runs_dir, ignore_errors=True)


def e2e_aims(rows: list[dict]) -> dict:
    """16 seeds' wall time against the cold aim, or the warm one where every program came from the cache."""
    row16 = next((r for r in rows if r.get("seeds") == 16 and "error" not in r), None)
    warm = bool(row16 and row16.get("persistent_cache_hits") and not (row16.get("programs") or {}).get("compiled"))
    key = "e2e_wall_s_16_seeds_warm" if warm else "e2e_wall_s_16_seeds_cold"
    return {key: {"aim_at_most": AIMS[key], "measured": row16["wall_s"] if row16 else None}}


def e2e_table(payload: dict) -> tuple[list[str], list[list]]:
    headers = ["seeds", "wall s", "compile s", "LLM s", "train s", "eval s", "ckpt s", "steps/seed", "total steps",
               "steps/s (wall)", "steady train steps/s", "wall / 1-seed wall", "throughput / 1-seed", "score",
               "compile-cache hits", "programs compiled"]
    good = [r for r in payload["rows"] if "error" not in r]
    base = next((r for r in good if r["seeds"] == 1), None)
    rows = []
    for r in payload["rows"]:
        if "error" in r:
            rows.append([r["seeds"], *(["unfinished" if r.get("unfinished") else "error"] * 15)])
            continue
        ph, own = r["phase_s"], r.get("phases")  # own: the run's phases, compile taken out of each
        phase_cells = ([own["compile"], own["llm"], own["training"], own["evaluation"], own["checkpoint"]] if own
                       else [r["compile_s"], ph.get("llm", 0.0), ph.get("train", 0.0), ph.get("evaluate", 0.0),
                             ph.get("checkpoint", 0.0)])
        rows.append([r["seeds"], r["wall_s"], *phase_cells, r["env_steps_per_seed"],
                     r["env_steps_total"], r["sps_wall"], r["sps_train_steady_median"],
                     r["wall_s"] / base["wall_s"] if base else None,
                     r["sps_wall"] / base["sps_wall"] if base else None,
                     None if r["score"] is None else f"{r['score']:.1f}+/-{r['score_std']:.1f}",
                     r["persistent_cache_hits"], (r.get("programs") or {}).get("compiled")])
    return headers, rows


# ----------------------------------------------------------------------------------------------------- plots
def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _title(payload: dict, what: str, note: str) -> str:
    env = payload.get("environment", {})
    t = f"{what}: {env.get('device', '?')}, jax {env.get('jax', '?')}, {str(env.get('commit', ''))[:8]}"
    t += "+dirty" if env.get("dirty") else ""
    return t + (f"\n{note}" if note else "")


def _env_ticks(ax, n) -> None:
    ax.set_xscale("log")
    ax.set_xticks(n, [str(x) for x in n])
    ax.xaxis.set_minor_locator(__import__("matplotlib").ticker.NullLocator())


def _two_panels(payload: dict):
    """(figure, (left, right) axes, the rows measured without error) for a two-panel results plot."""
    fig, axes = _plt().subplots(1, 2, figsize=(12, 4.5))
    return fig, axes, [r for r in payload["rows"] if "error" not in r]


def _save(fig, payload: dict, what: str, note: str, path: Path) -> Path:
    fig.suptitle(_title(payload, what, note), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def _lines_over_envs(ax, n, series) -> None:
    """One line per (label, values) over the env counts `n`, log-scaled env axis, legend."""
    for label, values in series:
        ax.plot(n, values, "o-", label=label)
    _env_ticks(ax, n)
    ax.legend(fontsize=8)


def plot_envs(payload: dict, path: Path, note: str) -> Path:
    fig, (a, b), good = _two_panels(payload)
    n = [r["num_envs"] for r in good]
    a.set(yscale="log", xlabel="parallel environments", ylabel="env steps / s",
          title="environment stepping (random actions)")
    _lines_over_envs(a, n, [(v, [r["results"][v]["steps_per_s"] for r in good])
                            for v in ("craftax", "craftax_auto", "ours_original", "ours_hetero", "ours_resets")])
    b.axhline(1.0, color="grey", lw=0.8, ls=":")
    b.set(yscale="log", xlabel="parallel environments", ylabel="ratio of steps / s (log)", title="ratios")
    _lines_over_envs(b, n, [(k, [r["ratios"][k] for r in good])
                            for k in ("ours_original_vs_craftax", "hetero_vs_homogeneous", "with_resets_vs_without",
                                      "ours_resets_vs_craftax_auto")])
    return _save(fig, payload, "envs", note, path)


def plot_training(payload: dict, path: Path, note: str) -> Path:
    fig, (a, b), good = _two_panels(payload)
    n = [r["num_envs"] for r in good]
    a.set(yscale="log", xlabel="parallel environments", ylabel="env steps / s",
          title="PPO training vs env-only stepping")
    _lines_over_envs(a, n, [(label, [r[key]["sps"] for r in good]) for key, label in (
        ("env_only", "env-only (limit)"), ("train_homogeneous", "train, homogeneous bank"),
        ("train_heterogeneous", "train, heterogeneous bank"))])
    b.axhline(AIMS["train_over_env_only_at_4096"], color="tab:blue", lw=0.8, ls="--", label="aim train/env 0.5")
    b.axhline(AIMS["het_over_homo"], color="tab:green", lw=0.8, ls="--", label="aim het/homo 0.95")
    b.set(ylim=(0, max(1.1, *[r["ratio_het_over_homo"] for r in good], *[r["ratio_train_homo_over_env"]
                                                                          for r in good]) + 0.05),
          xlabel="parallel environments", ylabel="ratio", title="ratios")
    _lines_over_envs(b, n, [(label, [r[key] for r in good]) for key, label in (
        ("ratio_train_het_over_env", "train (het) / env-only"), ("ratio_train_homo_over_env", "train (homo) / env-only"),
        ("ratio_het_over_homo", "het / homo training"))])
    return _save(fig, payload, "training", note, path)


def plot_e2e(payload: dict, path: Path, note: str) -> Path:
    fig, (a, b), good = _two_panels(payload)
    labels = [str(r["seeds"]) for r in good]
    bottom = [0.0] * len(good)
    # The run's own clock (report.json's phases): compile is taken out of the phase that waited for it, so a
    # program compiled in a background thread is not counted twice.
    names = ("compile", "training", "evaluation", "llm", "checkpoint", "other")
    for name in names:
        vals = [(r.get("phases") or {}).get(name, 0.0) for r in good]
        a.bar(labels, vals, bottom=bottom, label=name)
        bottom = [x + y for x, y in zip(bottom, vals)]
    for i, r in enumerate(good):
        cached = " (compile cache used)" if r.get("persistent_cache_hits") else ""
        a.text(i, bottom[i], f"{r['wall_s']:.0f}s{cached}", ha="center", va="bottom", fontsize=8)
    if any(r["seeds"] == 16 for r in good) and not payload.get("cpu_tiny"):
        for key, style in (("e2e_wall_s_16_seeds_cold", "--"), ("e2e_wall_s_16_seeds_warm", ":")):
            a.axhline(AIMS[key], color="red", lw=0.8, ls=style,
                      label=f"aim: 16 seeds <= {AIMS[key]:.0f} s {key.rsplit('_', 1)[1]}")
    s = payload["settings"]
    a.set(xlabel="vmapped seeds", ylabel="wall seconds (compile included)",
          title=f"EnvGen protocol end to end ({s['cycles']} cycles, "
                f"{s['cycles'] * (s['llm_env_steps'] + s['original_env_steps']) + s['final_steps']:,} steps/seed)")
    a.legend(fontsize=7)
    a2 = b
    a2.plot([r["seeds"] for r in good], [r["sps_wall"] for r in good], "o-", label="all seeds, wall (with compile)")
    a2.plot([r["seeds"] for r in good], [r["sps_train_steady_median"] or float("nan") for r in good], "s--",
            label="training chunks, steady state")
    a2.set(xscale="log", yscale="log", xlabel="vmapped seeds", ylabel="env steps / s", title="throughput")
    a2.set_xticks([r["seeds"] for r in good], [str(r["seeds"]) for r in good])
    a2.minorticks_off()
    a2.legend(fontsize=8)
    return _save(fig, payload, "e2e", note, path)


PART_FUNCS = {  # header, rows (a generator: each row is saved as soon as it is measured), aims, table, plot, key
    "envs": (envs_header, envs_rows, None, envs_table, plot_envs, "num_envs"),
    "training": (training_header, training_rows, training_aims, training_table, plot_training, "num_envs"),
    "e2e": (e2e_header, e2e_rows, e2e_aims, e2e_table, plot_e2e, "seeds"),
}


# ------------------------------------------------------------------------------------------------------ main
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default=",".join(PARTS), help="comma list of envs,training,e2e (default all)")
    ap.add_argument("--cpu-tiny", action="store_true",
                    help="tiny sizes for a CPU smoke run of all the machinery (results tagged _cpu / _tiny and "
                         "marked not for quoting absolute speeds)")
    ap.add_argument("--envs", type=_ints, help=f"env counts for envs and training (default "
                    f"{','.join(map(str, GPU_DEFAULTS['envs']))}; tiny {','.join(map(str, TINY_DEFAULTS['envs']))})")
    ap.add_argument("--seeds", type=_ints, help=f"vmapped seed counts for e2e (default "
                    f"{','.join(map(str, GPU_DEFAULTS['seeds']))}; tiny {','.join(map(str, TINY_DEFAULTS['seeds']))})")
    ap.add_argument("--env-steps", type=int, help="envs: steps per timed rollout (default 128; tiny 8)")
    ap.add_argument("--repeats", type=int, help="timed calls after two warm-ups (default 3; tiny 1)")
    ap.add_argument("--train-steps", type=int, help="training: rollout length per PPO update (default 64)")
    ap.add_argument("--train-updates", type=int, help="training: PPO updates per timed chunk (default 4)")
    ap.add_argument("--width", type=int, help="training: MLP width (default 512; tiny 32)")
    ap.add_argument("--bank-rows", type=int, default=16, help="training: config rows in each bank (default 16)")
    ap.add_argument("--config", default=str(ROOT / "configs" / "crafter_envgen.yaml"),
                    help="e2e: run configuration (default configs/crafter_envgen.yaml, the paper's protocol)")
    ap.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY.PATH=VALUE",
                    help="e2e: override a setting of the run configuration (repeatable)")
    ap.add_argument("--llm", default="scripted",
                    help="e2e designer: scripted (default) | transcript:PATH | config (see the module doc)")
    ap.add_argument("--out-dir", default=str(RESULTS), help="where the JSON and PNG files go (default "
                    "benchmarks/results)")
    ap.add_argument("--runs-dir", help="e2e: parent of the temporary run directories (default the system temp)")
    ap.add_argument("--keep-runs", action="store_true", help="e2e: keep the run directories")
    ap.add_argument("--fresh", action="store_true", help="do not keep rows of earlier invocations")
    ap.add_argument("--tag", help="file tag (default: gpu | cpu | <platform>_tiny, from this machine); with "
                                  "--report-only, e.g. --tag gpu redraws GPU results on a CPU machine")
    ap.add_argument("--report-only", action="store_true",
                    help="measure nothing: print the tables and redraw the plots of the saved results")
    ap.add_argument("--compile-cache", action="store_true",
                    help="use JAX's persistent compilation cache as `envgen-jax train` does ($XDG_CACHE_HOME/"
                         "envgen_jax/xla, or JAX_COMPILATION_CACHE_DIR when set); off by default outside --cpu-tiny: "
                         "compile times are measured")
    args = ap.parse_args(argv)
    d = TINY_DEFAULTS if args.cpu_tiny else GPU_DEFAULTS
    for name in ("envs", "seeds", "env_steps", "repeats", "train_steps", "train_updates", "width"):
        if getattr(args, name) is None:
            setattr(args, name, d[name])
    args.parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        ap.error(f"--parts: unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.compile_cache:
        configure_compile_cache(True)  # the project's cache folder, or JAX_COMPILATION_CACHE_DIR when set
    elif not args.cpu_tiny:
        disable_persistent_cache()

    def log(msg: str) -> None:
        print(msg, flush=True)

    tag = args.tag or platform_tag(args.cpu_tiny)
    on_cpu = jax.devices()[0].platform == "cpu"
    note = ("CPU smoke run (--cpu-tiny sizes): " if args.cpu_tiny else "") + CPU_NOTE if on_cpu else (
        "--cpu-tiny sizes: a smoke run, not for quoting" if args.cpu_tiny else "")
    log(f"run_all: parts {', '.join(args.parts)} on {jax.devices()[0]} (jax {jax.__version__}); results -> "
        f"{args.out_dir} (tag {tag})" + (f"\nNOTE: {note}" if note else ""))
    written = {}
    for part in args.parts:
        # Each part traces as a fresh process does: a program's persistent-cache key hashes its lowered module, which
        # can depend on what the process traced before (docs/devices.md), so a part keeps the keys of the same part
        # run alone.
        jax.clear_caches()
        header, rows, aims, table, plot, key = PART_FUNCS[part]
        start = time.perf_counter()
        path = result_path(part, args.out_dir, tag)
        if not args.report_only:
            head = {**header(args), "cpu_tiny": args.cpu_tiny, "note": note or None,
                    "command": ["benchmarks/run_all.py", *(argv if argv is not None else sys.argv[1:])]}
            first = [True]

            def save_row(row: dict) -> Path:
                """Saved row by row, atomically: a run stopped by a time limit keeps what it measured."""
                saved = save_merged(part, {**head, "rows": [row]}, key, args.out_dir, tag,
                                    fresh=args.fresh and first[0], log=log if first[0] else (lambda m: None))
                first[0] = False
                return saved

            args.save_row = save_row
            for row in rows(args, log):
                path = save_row(row)
        if not path.exists():
            log(f"{part}: no results in {path}")
            continue
        merged = json.loads(path.read_text())
        if aims is not None:
            merged["aims"] = aims(merged["rows"])
            write_text_atomic(path, json.dumps(merged, indent=2))
        headers, cells = table(merged)
        log("\n" + format_table(headers, cells, title=f"== {part} ({merged['environment']['device']}"
                                 + (", NOT FOR QUOTING ABSOLUTE SPEEDS" if merged.get("note") else "") + ")"))
        png = None
        try:
            png = plot(merged, result_path(part, args.out_dir, tag, ".png"), merged.get("note") or "")
        except Exception as e:  # a plot must not lose the measurement
            log(f"{part}: plot failed: {_error(e)}")
        written[part] = {"json": str(path), "png": str(png) if png else None}
        log(f"{part}: wrote {path}" + (f" and {png}" if png else "") + f" ({time.perf_counter() - start:.0f} s)\n")
    return written


if __name__ == "__main__":
    main()
