"""What each method's tiny run compiles: the programs and compile seconds of one run per method, in a fresh process
with the persistent compilation cache off, so every program is compiled. Run it for two versions of the code, side
by side in one script, to see a change in the number of programs (issue 44: every phase of a run in one chunk):

    JAX_PLATFORMS=cpu python benchmarks/compile_per_method.py --methods sfl,plr,envgen_sfl --out results.json
    PYTHONPATH=/path/to/other/checkout JAX_PLATFORMS=cpu python benchmarks/compile_per_method.py ...   # that code

The runs are tests/golden.py's tiny shapes (2 seeds, 2 cycles, 8 envs) with the level-replay methods' small pools,
scripted LLM replies; each method runs in a process of its own (`--one METHOD`, started by the main process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL_POOLS = ["method_options.plr.capacity=4", "method_options.sfl.pool=4", "method_options.sfl.keep=2",
               "method_options.sfl.refresh_updates=2", "method_options.sfl.rollouts_per_level=1",
               "method_options.sfl.rollout_steps=64", "method_options.envgen_sfl.pool=4",
               "method_options.envgen_sfl.rollouts_per_level=1", "method_options.envgen_sfl.rollout_steps=64"]


def one_run(method: str, out: Path) -> dict:
    """One tiny run of `method` in this process: its compile record, phases and wall seconds."""
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    from envgen_jax.envs.crafter import CrafterConfig
    from envgen_jax.llm.testing import ScriptedClient, auto_reply
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import load_run_config
    from tests import golden

    cfg = load_run_config(ROOT / "configs" / "smoke.yaml", golden.TINY + golden.LLM + SMALL_POOLS + [
        f"method={method}", "output.compile_cache=false"])
    start = time.monotonic()
    report = EnvGenRun(cfg, out, llm_client=ScriptedClient(default=auto_reply(CrafterConfig))).run()
    record = report.get("compile", {})
    programs = record.get("programs", [])
    names = [p["name"] for p in programs]
    return {"method": method, "wall_s": round(time.monotonic() - start, 1), "programs": len(names),
            "compile_s": record.get("seconds"), "chunks": sum("_train_chunk" in n for n in names),
            "resets": sum("_reset_envs" in n for n in names), "phases": report.get("phases"),
            "programs_by_seconds": sorted(([p["name"], p.get("seconds")] for p in programs),
                                          key=lambda p: -(p[1] or 0))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="ppo,envgen,sfl,plr,envgen_sfl")
    parser.add_argument("--out", type=Path, required=True, help="JSON file of the rows (written after each run)")
    parser.add_argument("--label", default="", help="what code this is (a commit), kept in each row")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(one_run(args.one, Path(tmp) / "run")))
        return
    rows = json.loads(args.out.read_text()) if args.out.is_file() else []
    for method in args.methods.split(","):
        done = subprocess.run([sys.executable, __file__, "--one", method, "--out", str(args.out)], env=os.environ,
                              capture_output=True, text=True, check=True)
        row = {"label": args.label, **json.loads(done.stdout.strip().splitlines()[-1])}
        rows.append(row)
        args.out.write_text(json.dumps(rows, indent=1))
        print(f"{args.label} {method}: {row['programs']} programs ({row['chunks']} chunks, {row['resets']} resets), "
              f"{row['compile_s']:.1f} s compiling, {row['wall_s']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
