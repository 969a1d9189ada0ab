"""Shared benchmark plumbing: honest timing (compile apart, two warm-ups, block_until_ready), the machine and code a
result came from, result files (one JSON per benchmark, merged across invocations of the same code on the same
device), compile-time accounting through `jax.monitoring`, and small table helpers."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Callable, Sequence

import jax

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"

CPU_NOTE = ("measured on a CPU: read the ratios; absolute speeds from a CPU (and from --cpu-tiny sizes) are not for "
            "quoting")


def time_call(fn, *args, repeats: int = 3) -> dict:
    """Compile time, then the median wall time of `repeats` calls after two warm-up calls.

    Two warm-ups, because a second call can retrace when weak types in a carried state change.
    """
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - start
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return {"compile_and_first_call_s": compile_s, "median_s": statistics.median(times), "times_s": times}


def time_interleaved(calls: dict[str, tuple[Callable, tuple]], repeats: int = 3) -> dict[str, dict]:
    """`time_call` for several variants measured side by side: each is compiled and warmed up twice, then the
    timed calls go round-robin (A B C A B C ...), so drift on a shared machine hits every variant alike and the
    ratios of medians stay fair. Returns {name: time_call's dict}."""
    out = {}
    for name, (fn, args) in calls.items():
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        out[name] = {"compile_and_first_call_s": time.perf_counter() - start, "times_s": []}
        jax.block_until_ready(fn(*args))
    for _ in range(repeats):
        for name, (fn, args) in calls.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            out[name]["times_s"].append(time.perf_counter() - start)
    for r in out.values():
        r["median_s"] = statistics.median(r["times_s"])
    return out


from envgen_jax.run.log import write_text_atomic  # noqa: E402,F401 (re-exported)
from envgen_jax.run.provenance import code_version, environment, git_commit  # noqa: E402,F401 (re-exported)


def load_json(path: Path) -> dict | None:
    """A result file's JSON, or None where there is none (never written, unreadable, or not JSON)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def platform_tag(tiny: bool = False) -> str:
    """'gpu', 'cpu', 'tpu'; a tiny (smoke) run on an accelerator is tagged '<platform>_tiny'. A CPU result is
    always tagged 'cpu' and marked not for quoting absolute speeds."""
    p = jax.devices()[0].platform
    p = "gpu" if p in ("cuda", "rocm", "gpu") else p
    return f"{p}_tiny" if tiny and p != "cpu" else p


def result_path(name: str, out_dir: str | Path | None = None, tag: str | None = None, suffix: str = ".json") -> Path:
    return Path(out_dir or RESULTS) / f"{name}_{tag or platform_tag()}{suffix}"


def save(name: str, payload: dict, out_dir: str | Path | None = None, tag: str | None = None) -> Path:
    """Write {environment, **payload} to <out_dir>/<name>_<tag>.json (tag: the platform by default)."""
    path = result_path(name, out_dir, tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps({"environment": environment(), **payload}, indent=2, default=_json_default))
    return path


def _json_default(x):
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return x.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def save_merged(name: str, payload: dict, key: str, out_dir: str | Path | None = None, tag: str | None = None,
                fresh: bool = False, log: Callable[[str], None] = print) -> Path:
    """Like `save`, but keep the rows (payload['rows'], identified by row[key]) of an earlier file measured on the
    same device, from the same commit (and tree state), with the same `payload['settings']`: several invocations
    (say one per seed count, to stay within a time limit) then make one table. Rows measured now replace earlier
    rows with the same key; every row keeps its own `measured_at`. `fresh` starts the file anew."""
    path = result_path(name, out_dir, tag)
    env = environment()
    rows = list(payload["rows"])
    if path.exists() and not fresh:
        try:
            old = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            old = None
        same = (old is not None
                and all(old.get("environment", {}).get(k) == env[k] for k in ("device", "commit", "dirty", "jax"))
                and old.get("settings") == json.loads(json.dumps(payload.get("settings"), default=_json_default)))
        if same:
            new_keys = {r[key] for r in rows}
            kept = [r for r in old.get("rows", []) if r.get(key) not in new_keys]
            if kept:
                log(f"{path.name}: keeping {len(kept)} earlier row(s) ({key} = "
                    f"{', '.join(str(r[key]) for r in kept)}) measured with the same code, device and settings")
            rows = sorted(kept + rows, key=lambda r: r[key])
        elif old is not None:
            log(f"{path.name}: replacing an earlier file from other code, device or settings")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Atomic: a stage killed by its time limit mid-write keeps the rows saved before.
    write_text_atomic(path, json.dumps({"environment": env, **payload, "rows": rows}, indent=2, default=_json_default))
    return path


class CompileTimer:
    """Sums JAX's compile work (jaxpr trace + lowering + backend compile) seen through `jax.monitoring`, split by
    a `category` the caller sets; also counts persistent-cache hits (which make a "compile included" time lie).

        timer = CompileTimer()
        with timer:
            timer.category = "train"; ...
        timer.total_s, timer.by_category, timer.cache_hits
    """

    EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
              "/jax/core/compile/backend_compile_duration")

    def __init__(self):
        self.category = "other"
        self.by_category: dict[str, float] = {}
        self.by_event: dict[str, float] = {}
        self.cache_hits = 0
        self.backend_compiles = 0

    def _duration(self, event: str, duration: float, **_):
        if event in self.EVENTS:
            self.by_category[self.category] = self.by_category.get(self.category, 0.0) + duration
            short = event.rsplit("/", 1)[-1]
            self.by_event[short] = self.by_event.get(short, 0.0) + duration
            if event.endswith("backend_compile_duration"):
                self.backend_compiles += 1

    def _event(self, event: str, **_):
        if event == "/jax/compilation_cache/cache_hits":
            self.cache_hits += 1

    @property
    def total_s(self) -> float:
        return sum(self.by_category.values())

    def __enter__(self):
        jax.monitoring.register_event_duration_secs_listener(self._duration)
        jax.monitoring.register_event_listener(self._event)
        return self

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._duration)
        jax.monitoring.unregister_event_listener(self._event)


def designer_client(mode: str, config_cls):
    """(client or None, description) for a benchmark's --llm: 'scripted' (a deterministic ScriptedClient answering
    every request with a valid design, no LLM), 'transcript:PATH' (the replies recorded in an llm_transcript.jsonl,
    in order, whatever this run's prompts; then the scripted responder) or 'config' (None: the run config's own
    llm settings). A transcript description carries '_state' (fallback count) to read after the run."""
    from envgen_jax.llm.testing import ScriptedClient, auto_reply
    if mode == "scripted":
        client = ScriptedClient(default=auto_reply(config_cls))
        return client, {"mode": "scripted", "what": "envgen_jax.llm.testing.ScriptedClient(default=auto_reply("
                        f"{config_cls.__name__})): every request answered at once with a valid design of the asked "
                        "size (two settings changed per environment); no LLM"}
    if mode.startswith("transcript:"):
        path = Path(mode.split(":", 1)[1])
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        replies = [r["reply"] for r in records if r.get("event") == "exchange" and r.get("reply") is not None]
        fallback = auto_reply(config_cls)
        state = {"fallbacks": 0}

        def after_transcript(kwargs):
            state["fallbacks"] += 1
            return fallback(kwargs)

        client = ScriptedClient(replies, default=after_transcript)
        return client, {"mode": "transcript", "path": str(path), "recorded_replies": len(replies),
                        "what": "the replies recorded in the transcript, in order (the prompts of this run may "
                                "differ), then the scripted responder", "_state": state}
    if mode == "config":
        return None, {"mode": "config", "what": "the run config's llm settings (see `llm` in the row)"}
    raise ValueError(f"--llm: expected scripted | transcript:PATH | config, got {mode!r}")


def disable_persistent_cache() -> None:
    """Compile times are part of what is measured: make sure no earlier run's compiled programs are reused."""
    jax.config.update("jax_enable_compilation_cache", False)


def format_table(headers: Sequence[str], rows: Sequence[Sequence], title: str = "") -> str:
    """A plain fixed-width text table (also valid as the body of a markdown table when `markdown`)."""
    cells = [[_cell(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    out = ([title] if title else []) + [line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells]
    return "\n".join(out)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _cell(c) -> str:
    if c is None:
        return "n/a"
    if isinstance(c, float):
        if c != c:  # NaN
            return "n/a"
        return f"{c:,.0f}" if abs(c) >= 1000 else f"{c:.3g}" if abs(c) < 10 else f"{c:.1f}"
    return str(c)
