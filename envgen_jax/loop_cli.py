"""`envgen-jax train`: the main job."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

TRAIN_HELP = """\
Run EnvGen (or one of its baselines) from a YAML run configuration.

  envgen-jax train --config configs/crafter_envgen.yaml
  envgen-jax train --config configs/smoke.yaml --set seeds=4 --set llm.backend=openai --set llm.model=gpt-4o-mini
  envgen-jax train --resume runs/crafter_envgen          # continue a killed run from its newest checkpoint

The run directory gets: config.yaml (resolved), llm_transcript.jsonl, environments/cycle_K.{json,png},
metrics.jsonl, tb/ (TensorBoard), learning_curve.png, success_by_cycle.png, report.md, report.json and
checkpoints/. Every setting is listed, with its meaning, in README.md ("Run configuration").

LLM: with no endpoint configured the offline Qwen2.5-Coder-1.5B designer runs locally (llm.model=smollm2-135m
for a fast smoke run). Point at any OpenAI-compatible
server with llm.base_url / llm.model or OPENAI_BASE_URL / OPENAI_API_KEY.
"""


def add_train_commands(sub) -> None:
    p = sub.add_parser("train", help="run EnvGen or a baseline; resume a killed run", description=TRAIN_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--config", metavar="FILE.yaml", help="run configuration (see configs/)")
    what.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its newest checkpoint")
    p.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY.PATH=VALUE",
                   help="override settings, e.g. --set seeds=8 schedule.cycles=2 (several per --set, and repeatable)")
    p.add_argument("--out", metavar="DIR", help="run directory (default runs/<config name>)")
    p.set_defaults(handler=cmd_train)


def cmd_train(args) -> int:
    from envgen_jax.llm.errors import DesignError, LLMError
    from envgen_jax.loop import EnvGenRun, check_no_run_there
    from envgen_jax.run_config import load_run_config

    if args.resume:
        if args.overrides or args.out:
            print("error: --resume continues a run exactly as configured; --set and --out do not apply",
                  file=sys.stderr)
            return 1
        out = Path(args.resume)
        if not (out / "config.yaml").exists():
            print(f"error: {out} holds no run (no config.yaml)", file=sys.stderr)
            return 1
        run = EnvGenRun.resume(out)
    else:
        cfg = load_run_config(args.config, args.overrides)
        out = Path(args.out or Path("runs") / Path(args.config).stem)
        check_no_run_there(out)
        run = EnvGenRun(cfg, out)
    start = time.monotonic()
    try:
        run.run()
    except (LLMError, DesignError) as e:
        print(f"error: the LLM step failed: {e}\nNothing checkpointed was lost; fix the endpoint and continue with:"
              f"\n  envgen-jax train --resume {out}", file=sys.stderr)
        return 2
    print(f"finished in {time.monotonic() - start:.0f}s: {out / 'report.md'}")
    return 0
