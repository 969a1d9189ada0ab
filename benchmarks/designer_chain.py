r"""Does the designer keep writing new environments over a whole run? Four cycles in one conversation.

    python benchmarks/designer_chain.py                               # the study's designer, 2 chains on Crafter
    python benchmarks/designer_chain.py --seeds 0,1,2 --resume        # add a chain to an earlier file
    python benchmarks/designer_chain.py --config configs/crafter_envgen.yaml \
        --out benchmarks/results/designer_chain_default.json           # the designer the bundled configs run
    python benchmarks/designer_chain.py --set llm.strategy.targets=false --set llm.strategy.needs=false \
        --set llm.strategy.history=json --set llm.strategy.only_changes=false \
        --set llm.strategy.envs_per_reply=null --out benchmarks/results/designer_chain_v1.json
    python benchmarks/designer_chain.py --set llm.strategy.conversation=fresh \
        --out benchmarks/results/designer_chain_fresh.json
    python benchmarks/designer_chain.py --base-url http://localhost:8000/v1 --model Qwen2.5-7B-Instruct
    python benchmarks/designer_chain.py --report --out benchmarks/results/designer_chain_default.json  # no model

`designer_quality.py` asks each profile once, on a conversation that holds one earlier design (a run's second
cycle). A run goes on: in its third and fourth cycles the conversation holds two or three earlier designs, which a
small model can copy (`llm.conversation: fresh` keeps them out of it). Here one designer per chain (the `llm:`
section of --config, as a run builds it, with the chain's seed as `llm.seed`) writes cycle 1 (`generate`), then
answers feedback that changes every cycle (CHAIN: one group of skills weak in turn, `designer_quality.PROFILES`),
each time about its own previous design, as a run's designer does; no agent trains, so the feedback carries no
per-environment success (`inside`).

Per cycle after the first: the share of its environments equal to one of an earlier cycle (repeated), the distinct
environments among its own (a within-cycle duplicate wastes a slot), whether the whole design equals an earlier
cycle's, the share targeting that cycle's weak skills (`TargetMap.helps`), latency and tokens (repairs included).
Per call over all cycles (`per_call`): duplicates inside a call, repeats of an earlier cycle's environment, and the
re-asks the designer made for them (llm.distinct).

Results: benchmarks/results/designer_chain.{json,md} (--out); rewritten after every chain; --resume keeps the chains
already there (same settings) and runs the missing seeds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.designer_quality import PROFILES, base_spec, success_rates  # noqa: E402
from envgen_jax import games  # noqa: E402
from envgen_jax.llm.designer import Designer  # noqa: E402
from envgen_jax.llm.errors import DesignError, LLMError  # noqa: E402
from envgen_jax.llm.settings import LLMSettings  # noqa: E402
from envgen_jax.llm.transcript import read_transcript  # noqa: E402
from envgen_jax.run_config import load_run_config  # noqa: E402
from envgen_jax.schema import ConfigError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CHAIN = {  # the weak group of cycles 2, 3, 4 (feedback that changes every cycle)
    "crafter": ("weak_stone_tools", "weak_iron_diamond", "weak_combat"),
    "heist": ("weak_keys", "weak_locks", "weak_gem"),
}


def run_chain(env: str, settings: LLMSettings, n: int, transcript: Path, client: Any = None) -> dict:
    """One conversation of 1 + len(CHAIN[env]) cycles; per cycle the accepted design and its cost."""
    spec = base_spec(env)
    cycles, error, seen, seen_designs = [], None, 0, 0
    designer = Designer(spec, settings, transcript, client=client)
    try:
        for cycle, profile in enumerate((None, *CHAIN[env])):
            start = time.monotonic()
            if profile is None:
                design = designer.generate(n)
            else:
                design = designer.feedback(success_rates(env, PROFILES[env][profile]), n)
            records = read_transcript(transcript)
            exchanges = [r for r in records if r["event"] == "exchange"]
            mine, seen = exchanges[seen:], len(exchanges)  # this cycle's replies, repairs included
            outcomes = [r for r in records if r["event"] == "design"]
            done, seen_designs = outcomes[seen_designs:], len(outcomes)  # one per reply a design was asked in
            usage = [r.get("usage") or {} for r in mine]
            cycles.append({"cycle": cycle + 1, "profile": profile, "wall_s": round(time.monotonic() - start, 3),
                           "configs": [c.to_dict(only_changed=True) for c in design.configs],
                           "targets": [list(t) for t in designer.targets],
                           "replies": len(mine), "latency_s": round(sum(r["latency_s"] for r in mine), 3),
                           # llm.distinct: replies asked again for a repeat, and what the design still repeats
                           "reasks": sum(r.get("reasks", 0) for r in done),
                           "repeats_left": [x for r in done for x in r.get("repeats_left", [])],
                           "prompt_tokens": sum(u.get("prompt_tokens") or 0 for u in usage),
                           "completion_tokens": sum(u.get("completion_tokens") or 0 for u in usage)})
    except (DesignError, LLMError) as e:
        error = f"{type(e).__name__}: {e}"[:2000]
    finally:
        designer.close()
    return {"env": env, "seed": settings.transport.seed, "ok": error is None, "error": error, "cycles": cycles}


def score(chain: dict) -> list[dict]:
    """Per cycle after the first: repeated, distinct, same design, targeting (see the module's docstring)."""
    cls = base_spec(chain["env"]).config_cls
    target_map = games.get(chain["env"]).targeting
    designs = [[cls.from_dict(c) for c in cycle["configs"]] for cycle in chain["cycles"]]
    out = []
    for i, cycle in enumerate(chain["cycles"][1:], start=1):
        configs, earlier = designs[i], [c for d in designs[:i] for c in d]
        weak = PROFILES[chain["env"]][cycle["profile"]].weak
        out.append({"cycle": cycle["cycle"], "profile": cycle["profile"],
                    "repeated": sum(c in earlier for c in configs), "environments": len(configs),
                    "distinct": len(set(configs)),
                    "same_design": any(Counter(configs) == Counter(d) for d in designs[:i]),
                    "duplicates": len(configs) - len(set(configs)),
                    "targeting": sum(bool(target_map.helps(c, weak)) for c in configs),
                    "latency_s": cycle["latency_s"], "replies": cycle["replies"], "reasks": cycle.get("reasks")})
    return out


def per_call(chains: list[dict]) -> dict:
    """Over the chains' calls (issue 45): duplicates inside a call (every cycle's, the first included), repeats of an
    earlier cycle's environment (cycles 2-4), and re-asks for them (llm.distinct; None where chains were made before
    they were recorded), each per call."""
    dup, rep, reasks = [], [], []
    for chain in (c for c in chains if c["ok"]):
        cls = base_spec(chain["env"]).config_cls
        seen = []
        for cycle in chain["cycles"]:
            configs = [cls.from_dict(c) for c in cycle["configs"]]
            dup.append(len(configs) - len(set(configs)))
            if seen:
                rep.append(sum(c in seen for c in configs))
            seen += configs
            reasks.append(cycle.get("reasks"))
    mean = lambda xs: statistics.fmean(xs) if xs and None not in xs else None  # noqa: E731
    return {"calls": len(dup), "duplicates": sum(dup), "duplicates_per_call": mean(dup),
            "feedback_calls": len(rep), "repeats": sum(rep), "repeats_per_call": mean(rep),
            "reasks_per_call": mean(reasks)}


def summary(scored: list[list[dict]]) -> list[dict]:
    """Per cycle (2, 3, 4) over the chains' `score`s: repeated and targeting environments, distinct per cycle."""
    rows = []
    for i in range(max((len(s) for s in scored), default=0)):
        at = [s[i] for s in scored if len(s) > i]
        envs = sum(r["environments"] for r in at)
        rows.append({"cycle": at[0]["cycle"], "chains": len(at), "environments": envs,
                     "repeated": sum(r["repeated"] for r in at), "targeting": sum(r["targeting"] for r in at),
                     "distinct_share": sum(r["distinct"] for r in at) / envs,
                     "same_design": sum(r["same_design"] for r in at),
                     "duplicates": sum(r["environments"] - r["distinct"] for r in at),
                     "latency_s": statistics.fmean(r["latency_s"] for r in at)})
    return rows


def markdown(result: dict) -> str:
    s = result["settings"]
    where = " ".join([Path(s["config"]).name, *(f"--set {o}" for o in s.get("overrides", []))])
    lines = [f"Designer over a 4-cycle conversation ({s['model']} as {where}; {s['env']}, {s['num_envs']} "
             f"environments a cycle, "
             f"chains with seeds {', '.join(str(c['seed']) for c in result['chains'])}; failed chains: "
             f"{sum(not c['ok'] for c in result['chains'])})", "",
             "| cycle | weak group | chains | repeats an earlier cycle | distinct within the cycle | duplicates "
             "| whole design repeated | targets the weak group | latency s/call |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row, profile in zip(result["summary"], CHAIN[s["env"]]):
        envs = row["environments"]
        duplicates = row.get("duplicates", round(envs * (1 - row["distinct_share"])))
        lines.append(f"| {row['cycle']} | {profile} | {row['chains']} | {row['repeated'] / envs:.0%} "
                     f"({row['repeated']}/{envs}) | {row['distinct_share']:.0%} | {duplicates} | {row['same_design']} "
                     f"| {row['targeting'] / envs:.0%} ({row['targeting']}/{envs}) | {row['latency_s']:.0f} |")
    calls = per_call(result["chains"])
    if calls["calls"]:
        num = lambda x: "n/a" if x is None else f"{x:.2f}"  # noqa: E731
        lines += ["", f"Per call: {num(calls['duplicates_per_call'])} duplicates inside a call ({calls['duplicates']} "
                      f"in {calls['calls']} calls, the first cycle's included), {num(calls['repeats_per_call'])} "
                      f"repeats of an earlier cycle's environment ({calls['repeats']} in {calls['feedback_calls']} "
                      f"feedback calls), {num(calls['reasks_per_call'])} re-asks for them (llm.distinct; n/a: "
                      f"chains made before re-asks were recorded)."]
    return "\n".join(lines) + "\n"


# LLM settings added after chain files were first written (or, `unserved`, since moved out of the settings), with
# the value that asks as the code did without each (its default when added; a later default may differ, so today's
# LLMSettings() cannot tell).
BEFORE_ADDED = {"analysis": "each_reply", "distinct": False, "weak_needs": False, "weak_levers": False,
                "unserved": "accept", "focus": "none"}
ABSENT = object()


def differing(old: dict, new: dict) -> list[str]:
    """The settings that make an earlier file's chains incomparable with new ones: any that differ, except an LLM
    setting absent from one file (added since, or moved out) at the value that asks as before (BEFORE_ADDED).
    The `llm:` mappings compare by setting, flat or in their sections (files before the split are flat)."""
    out = [k for k in {**old, **new} if k != "llm" and old.get(k) != new.get(k)]
    was, now = (flat_llm(d.get("llm") or {}) for d in (old, new))
    out += [f"llm.{k}" for k in {**was, **now}
            if was.get(k, BEFORE_ADDED.get(k, ABSENT)) != now.get(k, BEFORE_ADDED.get(k, ABSENT))]
    return out


def flat_llm(llm: dict) -> dict:
    """An `llm:` mapping as one level (a section's keys beside the flat ones)."""
    sections = {k: v for k, v in llm.items() if isinstance(v, dict)}
    return {**{k: v for k, v in llm.items() if k not in sections},
            **{k: v for section in sections.values() for k, v in section.items()}}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", type=Path, default=ROOT / "configs" / "study_cpu.yaml",
                    help="run configuration whose llm: section builds the designer (default configs/study_cpu.yaml)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                    help="override a setting of --config, repeatable, e.g. --set llm.strategy.envs_per_reply=null")
    ap.add_argument("--env", default="crafter", choices=sorted(CHAIN), help="game (default crafter)")
    ap.add_argument("--seeds", default="0,1", help="one chain per seed, comma list (default 0,1)")
    ap.add_argument("--num-envs", type=int, default=4, help="environments per cycle (default 4, as the study)")
    ap.add_argument("--base-url", help="an OpenAI-compatible endpoint instead of the config's (key: OPENAI_API_KEY)")
    ap.add_argument("--model", help="the endpoint's model name (with --base-url)")
    ap.add_argument("--out", type=Path, default=RESULTS / "designer_chain.json", help="results JSON (.md beside it)")
    ap.add_argument("--resume", action="store_true", help="keep the chains already in --out, run the missing seeds")
    ap.add_argument("--report", action="store_true", help="only rebuild --out's summary and table (.md) from the "
                    "chains it holds, scored by today's code; no model is asked")
    args = ap.parse_args(argv)
    if bool(args.base_url) != bool(args.model):
        ap.error("--base-url and --model go together")
    try:
        args.seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        ap.error(f"--seeds: expected comma-separated integers, got {args.seeds!r}")
    if args.num_envs < 1:
        ap.error(f"--num-envs: expected a positive integer, got {args.num_envs}")
    return args


def result_of(chains: list[dict], settings: dict, env_info: dict) -> dict:
    done = sorted(chains, key=lambda c: c["seed"])
    scores = {c["seed"]: score(c) for c in done if c["ok"]}
    return {"benchmark": "designer_chain", "environment": env_info, "settings": settings, "chain": CHAIN,
            "chains": done, "summary": summary(list(scores.values())), "per_call": per_call(done), "scores": scores}


def report(out: Path) -> dict:
    """--report: --out's summary, scores and table rebuilt from its chains (settings and environment kept)."""
    from benchmarks.common import write_text_atomic
    if not out.exists():
        raise SystemExit(f"--report: {out} does not exist")
    old = json.loads(out.read_text())
    result = result_of(old["chains"], old["settings"], old["environment"])
    write_text_atomic(out, json.dumps(result, indent=1))
    write_text_atomic(out.with_suffix(".md"), markdown(result))
    print(markdown(result))
    return result


def main(argv=None, client: Any = None) -> dict:
    """Run the chains; `client` (tests): an injected chat client used for --base-url's model."""
    args = parse_args(argv)
    if args.report:
        return report(args.out)
    try:
        llm = load_run_config(args.config, args.overrides).llm
    except ConfigError as e:
        raise SystemExit(f"error: {e}") from None
    if args.base_url:
        llm = llm.replace(backend="openai", base_url=args.base_url, model=args.model)
    model = llm.transport.model_name
    config = args.config.resolve()  # relative to the checkout, so that another checkout can resume the file
    settings = {"config": str(config.relative_to(ROOT)) if config.is_relative_to(ROOT) else str(config),
                "overrides": args.overrides, "env": args.env, "num_envs": args.num_envs, "model": model,
                "llm": llm.to_dict()}
    chains, old = [], None
    if args.resume and args.out.exists():
        old = json.loads(args.out.read_text())
        differ = differing(old["settings"], settings)
        if differ:
            raise SystemExit(f"--resume: {args.out} was made with other settings ({', '.join(differ)}); use "
                             f"another --out")
        chains = [c for c in old["chains"] if c["ok"] or not (c["error"] or "").startswith("LLMError")]
    from benchmarks.common import code_version, environment, write_text_atomic
    env_info = environment()
    measured = code_version()

    def write() -> dict:
        result = result_of(chains, settings, env_info)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out, json.dumps(result, indent=1))
        write_text_atomic(args.out.with_suffix(".md"), markdown(result))
        return result

    todo = [seed for seed in args.seeds if not any(c["seed"] == seed for c in chains)]
    if old is not None and not todo:  # nothing to add: the file keeps the environment its chains were made in
        print(markdown(old))
        return old
    result = write()
    with tempfile.TemporaryDirectory(prefix="designer-chain-") as tmp:
        for seed in todo:
            started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            chain = run_chain(args.env, llm.replace(seed=seed), args.num_envs,
                              Path(tmp) / f"chain_{seed}.jsonl", client)
            chain["measured"] = {**measured, "started": started}  # each chain's own code (the file's is the last)
            print(f"chain seed {seed}: {'ok' if chain['ok'] else chain['error']}, "
                  f"{sum(c['latency_s'] for c in chain['cycles']):.0f} s of LLM time", flush=True)
            chains.append(chain)
            result = write()
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
