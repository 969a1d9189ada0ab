"""Per-call latency of the offline designer over one EnvGen conversation, with and without llama.cpp's prompt cache.

A run's designer keeps one conversation: cycle 1 generates, cycles 2..N send the agent's success rates and ask for
new environments. Each later prompt starts with the whole earlier conversation, so with the cache (the server's one
slot keeps its KV cache, `cache_prompt: true`) only the new turn's tokens are read; without it every call reads the
whole conversation again. Both variants use the same model, prompts, feedback and sampling settings (temperature 0),
each on a freshly started server; the variants run one after the other, cache first.

    .venv/bin/python benchmarks/llm_prompt_cache.py --model qwen2.5-coder-1.5b --calls 4
    .venv/bin/python benchmarks/llm_prompt_cache.py --model smollm2-135m --calls 2 --out /tmp/cache.json   # quick

Writes benchmarks/results/llm_prompt_cache.json (per call: latency, prompt tokens, tokens read anew vs from the
cache as llama.cpp reports them, completion tokens) and prints a table. Latencies are from a shared 2-core CPU: the
ratio between the variants is the result, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, environment, git_commit, markdown_table  # noqa: E402
from envgen_jax import games  # noqa: E402
from envgen_jax.envs.crafter.game import CRAFTER_ACHIEVEMENTS  # noqa: E402
from envgen_jax.llm.designer import Designer  # noqa: E402
from envgen_jax.llm.settings import LLMSettings  # noqa: E402
from envgen_jax.llm.transcript import read_transcript  # noqa: E402

# A fixed feedback profile (percent): weak at the iron and diamond chain, fair at the rest.
WEAK = {"collect_iron", "collect_diamond", "make_iron_pickaxe", "make_iron_sword", "place_furnace",
        "make_stone_pickaxe", "make_stone_sword", "collect_coal"}
FEEDBACK = {name: ((2.0, 1.0) if name in WEAK else (55.0, 10.0)) for name in CRAFTER_ACHIEVEMENTS}


def conversation(model: str, calls: int, cache: bool, n: int, max_tokens: int) -> list[dict]:
    """One designer conversation of `calls` calls; per call what the transcript recorded."""
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / "t.jsonl"
        # the continued conversation (the paper's way) the cache serves, as measured
        settings = LLMSettings.of(backend="local", model=model, prompt_cache=cache, max_tokens=max_tokens,
                                  timeout_s=900.0, conversation="continued", envs_per_reply=None, weak_needs=False,
                                  weak_levers=False, focus="none")
        with Designer(games.get("crafter").designer_spec(), settings, transcript) as designer:
            for call in range(calls):
                start = time.monotonic()
                designer.generate(n) if call == 0 else designer.feedback(FEEDBACK, n)
                print(f"  cache={cache} call {call + 1}/{calls}: {time.monotonic() - start:.1f}s", flush=True)
        out = []
        for r in read_transcript(transcript):
            if r.get("event") != "exchange":
                continue
            usage = r.get("usage") or {}
            timings = usage.get("timings") or {}
            out.append({"request": r["request"], "try": r["try"], "accepted": r["accepted"],
                        "latency_s": r["latency_s"], "prompt_tokens": usage.get("prompt_tokens"),
                        "completion_tokens": usage.get("completion_tokens"), "cache_n": timings.get("cache_n"),
                        "prompt_n": timings.get("prompt_n"), "prompt_ms": timings.get("prompt_ms"),
                        "predicted_ms": timings.get("predicted_ms")})
        return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="qwen2.5-coder-1.5b", help="offline model (default qwen2.5-coder-1.5b)")
    p.add_argument("--calls", type=int, default=4, help="calls in the conversation (default 4, a whole run)")
    p.add_argument("--envs", type=int, default=4, help="environments per call (default 4)")
    p.add_argument("--max-tokens", type=int, default=2048)
    p.add_argument("--out", default=str(RESULTS / "llm_prompt_cache.json"))
    args = p.parse_args(argv)

    variants = {}
    for cache in (True, False):
        variants["cache" if cache else "no_cache"] = conversation(args.model, args.calls, cache, args.envs,
                                                                  args.max_tokens)
    rows = []
    for name, records in variants.items():
        for i, r in enumerate(records):
            rows.append([name, i + 1, r["try"], r["prompt_tokens"], r["cache_n"], r["prompt_n"],
                         r["completion_tokens"], f"{r['latency_s']:.1f}"])
    table = markdown_table(["variant", "exchange", "repair try", "prompt tokens", "from cache", "read anew",
                            "completion tokens", "latency s"], rows)
    later = {name: sum(r["latency_s"] for r in recs if r["request"] > 0) for name, recs in variants.items()}
    summary = {"later_calls_seconds": later,
               "later_calls_ratio_no_cache_over_cache": later["no_cache"] / later["cache"] if later["cache"] else None}
    print(table)
    print(json.dumps(summary, indent=2))
    payload = {"benchmark": "llm_prompt_cache", "model": args.model, "calls": args.calls, "envs_per_call": args.envs,
               "feedback_profile": "weak at the iron and diamond chain (2%), the rest 55%", "variants": variants,
               "summary": summary, "table_markdown": table, "environment": environment(), "git": git_commit()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
