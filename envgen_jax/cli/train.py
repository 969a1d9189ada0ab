"""`envgen-jax train` (the main job) and `envgen-jax study` (every method, same agent, steps and seeds, compared)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from envgen_jax.methods import METHODS
from envgen_jax.run.distributed import JOIN_TIMEOUT_S
from envgen_jax.schema import ConfigError

TRAIN_HELP = """\
Run EnvGen (or one of its baselines) from a YAML run configuration.

  envgen-jax train --config configs/crafter_envgen.yaml
  envgen-jax train --config configs/smoke.yaml --set seeds=4 --set llm.backend=openai --set llm.model=gpt-4o-mini
  envgen-jax train --config configs/crafter_envgen.yaml --set seeds=8 --dry-run   # the plan; trains nothing
  envgen-jax train --resume runs/crafter_envgen          # continue a killed run from its newest checkpoint

--dry-run checks the configuration and prints the plan: each phase with its env steps, PPO updates, compiled chunks,
LLM calls and env slots; the totals; the bank's rows; the size of a checkpoint. It creates nothing.

A configuration may start with `extends: base/crafter.yaml` (a path relative to the file): the base is read first
and the file's settings go over it section by section (the Crafter configs share the protocol and the agent this
way). A `sweep:` section trains every combination of the listed PPO values, times `seeds` agents, in one compiled
run, and the report gives each combination's score:

  envgen-jax train --config configs/crafter_ppo.yaml --set seeds=2 --set 'sweep.lr=[1.0e-4, 3.0e-4, 1.0e-3]'

The run directory gets: config.yaml (resolved), llm_transcript.jsonl, environments/cycle_K.{json,png},
metrics.jsonl, tb/ (TensorBoard), learning_curve.png, success_by_cycle.png, report.md, report.json and
checkpoints/. The settings are described in docs/ (configuration.md, agent.md, designer.md, llm.md) and in the
run configuration's classes (envgen_jax/run_config.py); `envgen-jax settings` lists the environments' settings.

LLM: with no endpoint configured the offline Qwen2.5-Coder-1.5B designer runs locally (llm.model=smollm2-135m
for a fast smoke run). Point at any OpenAI-compatible server with llm.base_url / llm.model or OPENAI_BASE_URL /
OPENAI_API_KEY.

Exit status: 0 finished (or --dry-run: the configuration is valid), 1 bad input (a setting, a file, an argument),
2 the run failed (the LLM step or training; its checkpoints are kept and --resume continues it), 130 interrupted.
"""


def add_commands(commands) -> None:
    """Register `train` and `study` on the top-level subparsers."""
    add_train_command(commands)
    add_study_command(commands)


def add_train_command(commands) -> None:
    p = commands.add_parser("train", help="run EnvGen or a baseline; resume a killed run; --dry-run: the plan",
                            description=TRAIN_HELP)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--config", metavar="FILE.yaml", help="run configuration (see configs/)")
    what.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its newest checkpoint")
    p.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY.PATH=VALUE",
                   help="override settings, e.g. --set seeds=8 schedule.cycles=2 (several per --set, and repeatable)")
    p.add_argument("--out", metavar="DIR", help="run directory (default runs/<config name>)")
    p.add_argument("--dry-run", action="store_true",
                   help="check the configuration and print the plan, then stop: nothing trains, nothing is written")
    add_process_flags(p)
    p.set_defaults(handler=cmd_train)


def add_process_flags(p) -> None:
    """A multi-process run's flags (docs/devices.md); with none, SLURM / Open MPI / Cloud TPU launches are detected."""
    group = p.add_argument_group(
        "several processes (hosts): give all three, on every process, or none under srun / mpirun, where JAX reads "
        "them from the launcher (docs/devices.md)",
        "Each process runs the command in a child process that it watches: when a process is lost (process 0,\n"
        "the coordinator, included), every other one ends with one line saying so and how to resume (exit\n"
        "status 2). Bad flags (a --coordinator that is not HOST:PORT with a port in 1..65535, --num-processes\n"
        "below 1, a --process-id outside 0..N-1) exit 1 with one line each, before JAX starts.")
    group.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0, reachable from every host")
    group.add_argument("--num-processes", type=int, metavar="N", help="processes in the run")
    group.add_argument("--process-id", type=int, metavar="I", help="this process, 0..N-1 (0 writes the files)")
    group.add_argument("--join-timeout", type=int, default=JOIN_TIMEOUT_S, metavar="SECONDS",
                       help=f"how long to wait for every process to join (default {JOIN_TIMEOUT_S})")


def join_processes(args) -> bool:
    """Join a multi-process run when the flags or the launcher say so (before anything touches a device)."""
    from envgen_jax.run.distributed import initialize
    return initialize(args.coordinator, args.num_processes, args.process_id, args.join_timeout)


def devices_line(cfg) -> str:
    """How the run spreads over this machine's (or every process's) devices; ConfigError where it cannot."""
    from envgen_jax.trainer.sharding import devices_line as line
    return line(cfg.num_agents, cfg.ppo.num_envs, cfg.execution.shard)


def cmd_train(args) -> int:
    join_processes(args)
    from envgen_jax.run.compile_cache import configure_compile_cache
    from envgen_jax.run.distributed import lead_decides, set_resume_note
    from envgen_jax.run.loop import EnvGenRun, check_no_run_there
    from envgen_jax.run.parts import RunParts, checkpoint_bytes, parameter_count
    from envgen_jax.run.plan import describe_plan
    from envgen_jax.run_config import load_run_config

    if args.resume:
        out = Path(args.resume)
        if args.overrides or args.out:
            raise ConfigError(["--resume continues a run exactly as configured; --set and --out do not apply"],
                              what="arguments")
        if not (out / "config.yaml").exists():
            raise ConfigError([f"{out} holds no run (no config.yaml)"], what="--resume")
        cfg = load_run_config(out / "config.yaml")
    else:
        cfg = load_run_config(args.config, args.overrides)
        out = Path(args.out or Path("runs") / Path(args.config).stem)
        lead_decides(check_no_run_there, out)  # process 0 looks (the others would see its first files)
    parts = RunParts.of(cfg)
    devices = devices_line(cfg)
    if args.dry_run:
        print(describe_plan(cfg, parts.method, checkpoint_bytes(parts), parameter_count(parts)))
        print(f"devices: {devices}")
        print(f"\ndry run: the configuration is valid; nothing trained, nothing written (run directory: {out})")
        return 0
    print(f"agent: {cfg.network.kind} network on {cfg.observation} observations, {parameter_count(parts):,} "
          f"parameters per agent")
    print(f"compilation cache: {configure_compile_cache(cfg.output.compile_cache) or 'off'}")
    print(f"devices: {devices}")
    run = EnvGenRun.resume(out, parts=parts) if args.resume else EnvGenRun(cfg, out, parts=parts)
    every = "  (on every process, with its flags)" if _several() else ""
    note = f"Nothing checkpointed was lost; continue the run with:\n  envgen-jax train --resume {out}{every}"
    set_resume_note(note)  # for the line a lost process 0 ends the others with
    start = time.monotonic()
    try:
        run.run()
    except (Exception, KeyboardInterrupt) as e:
        if (out / "config.yaml").exists():
            e.add_note(note)
        raise
    print(f"finished in {time.monotonic() - start:.0f}s: {out / 'report.md'}")
    return 0


def _several() -> bool:
    import jax
    return jax.process_count() > 1


STUDY_HELP = """\
Does EnvGen help? Train each method with the same agent, steps and seeds (only the pretraining environments
differ), then compare them.

  envgen-jax study --config configs/study_cpu.yaml --seeds 4 --out runs/study_cpu_v2      # every method
  envgen-jax study --config configs/study_cpu.yaml --methods ppo,envgen,fixed,random,easy_to_hard,adversarial

Each method is one ordinary run directory, OUT/<method>/ (see `envgen-jax train --help`), with the seeds vmapped
inside it. The study's resolved settings are kept in OUT/study.yaml. With --grouping fused the methods of the
paper's loop (envgen, ppo, fixed, easy_to_hard, adversarial, random, scripted) train as one run, methods x seeds on
one agent axis in one compiled program, each still writing exactly its own run directory; plr, sfl and envgen_sfl
each need a program of their own and run alone. --dry-run prints the groups, agents, env slots and memory.

  envgen-jax study --compare-only --out runs/study_cpu_v2    # rewrite the comparison; nothing trains

--compare-only rewrites the outputs below from the runs already in OUT with this version's code and its settings
(OUT/study.yaml), training nothing: a study partway (another process may be training it, even from a pinned older
commit), or one compared by an older version.

Resuming: run the same command again, after a kill or in a later session. Finished runs are reused, started runs
resume from their newest checkpoint, the rest start. A rerun must use the same settings (exit 1 naming each
difference), but it may add methods. A finished run put in OUT/<method>/ by hand (plain PPO trained with
`envgen-jax train`, say) counts when only settings that cannot change what it learnt differ: output, the LLM's for
a method that asks none, other methods' options (it says which). If a method fails (an LLM error, say), the
error goes to stderr (its traceback to OUT/errors.log), the next method runs, and the command exits 2; the same
command then retries the failed method. Long studies can run in the background (nohup ... &) and be continued this
way.

Outputs, rewritten after every method from the run directories' files (report.json, metrics.jsonl):
  study.md, study.json       per method: the score and reward (mean +/- std over seeds, every seed's value, a 95%
                             percentile-bootstrap CI), the difference from ppo (and from envgen) with its bootstrap
                             CI and Welch's t-test p-value; every pair of methods with Holm-adjusted p and the
                             probability that a seed of one beats a seed of the other; the game's chain of skills
                             (success and first unlock; Crafter: stone, stone pickaxe, furnace, iron, iron tools;
                             Craftax: a floor entered, iron tools, diamonds, each floor's first mob defeated); on
                             Craftax the mean return as % of 226 three ways (every pair, Holm), the published
                             Craftax-1M table beside it, and each method's difference in return from ppo split by
                             achievement; how each design answered its feedback; per-achievement success;
                             evaluations after each cycle; success inside each LLM environment; LLM calls, seconds
                             and tokens, training seconds, steps/s; the share of stale restarts; the device, jax
                             version and git commit
  study_scores.png           final score and reward per method: mean, 95% CI, each seed
  study_curves.png           training return and evaluation score vs env steps, a band of +/- std over seeds
  study_success_by_cycle.png per achievement, success in the original game after each cycle, per method

Exit status: 0 all methods finished, 1 bad input or settings, 2 some method failed (rerun to retry it).
"""


def add_study_command(commands) -> None:
    p = commands.add_parser("study", help="train several methods alike and compare them (resumable)",
                            description=STUDY_HELP)
    p.add_argument("--config", metavar="FILE.yaml",
                   help="run configuration every method shares (its `method` is replaced), e.g. configs/study_cpu.yaml "
                        "(required unless --compare-only)")
    p.add_argument("--methods", metavar="M1,M2,...",
                   help=f"comma-separated, from {', '.join(METHODS)} (default: all of them); ppo is the reference "
                        "the others are compared with; the paper's comparison is ppo,envgen,fixed,random,"
                        "easy_to_hard,adversarial; plr, sfl and envgen_sfl go beyond it; scripted is a no-LLM "
                        "control that follows the feedback by targeting.py's map")
    p.add_argument("--seeds", type=int, metavar="N", help="seeds per method (default: the config's `seeds`)")
    p.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY.PATH=VALUE",
                   help="override settings of the shared configuration, as for `train`")
    p.add_argument("--replay", action="extend", nargs="+", default=[], metavar="METHOD=TRANSCRIPT",
                   help="an LLM method replays the designs of a recorded run (its llm_transcript.jsonl) instead of "
                        "asking an LLM, e.g. envgen=benchmarks/results/study_cpu_v2/envgen/llm_transcript.jsonl: "
                        "request r gets the recorded run's accepted reply r, whatever the feedback says "
                        "(docs/studies.md, Replayed designers)")
    p.add_argument("--out", metavar="DIR", help="study directory (default runs/<config name>)")
    p.add_argument("--grouping", "--schedule", dest="grouping", choices=("auto", "fused", "sequential"),
                   default="auto",
                   help="fused: the methods of one program (the paper's loop) train as one run, methods x seeds on "
                        "one agent axis; sequential: one method after another; auto (default): fused on a GPU or "
                        "TPU, on a CPU whichever benchmarks/study_fused.py measured faster (docs/studies.md); "
                        "--schedule is its older name (a run's `schedule` is its phases)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the groups, the agents of each program, the env slots, the bank and the estimated "
                        "memory, then stop: nothing trains, nothing is written")
    p.add_argument("--compare-only", action="store_true",
                   help="rewrite study.json, study.md and the plots of the study in --out from its runs, with its own "
                        "settings (OUT/study.yaml) and this version's code; nothing trains")
    add_process_flags(p)
    p.set_defaults(handler=cmd_study)


def cmd_study(args) -> int:
    join_processes(args)
    from envgen_jax.run.compile_cache import configure_compile_cache
    from envgen_jax.run.distributed import joined, set_resume_note
    from envgen_jax.study import resolve, run_study

    if args.compare_only:
        return compare_only(args)
    if not args.config:
        raise ConfigError(["--config FILE.yaml: required (the run configuration every method shares), unless "
                           "--compare-only rewrites an existing study's comparison"], what="study")
    methods = ([m.strip() for m in args.methods.split(",") if m.strip()] if args.methods
               else ["ppo", *(m for m in METHODS if m != "ppo")])
    settings = resolve(args.config, methods, args.seeds, args.overrides)
    settings = dataclasses.replace(settings, replay=replay_settings(args.replay, settings.methods))
    out = Path(args.out or Path("runs") / Path(args.config).stem)
    if args.dry_run:
        from envgen_jax.study.groups import describe_groups
        print(describe_groups(settings, args.grouping))
        print(f"\ndry run: the settings are valid; nothing trained, nothing written (study directory: {out})")
        return 0
    configure_compile_cache(settings.run_config(settings.methods[0]).output.compile_cache)
    note = "Nothing checkpointed was lost: the same command, on every process, resumes the study."
    set_resume_note(note)  # for the line a lost process 0 ends the others with
    try:
        return run_study(settings, out, grouping=args.grouping)
    except Exception as e:
        if joined():  # a process of the study is gone (the study keeps going past its methods' own errors)
            e.add_note(note)
        raise


def compare_only(args) -> int:
    """--compare-only: the study in --out compared again from its run directories, with its saved settings; every
    flag that would set something else is an error, not ignored."""
    from envgen_jax.study import load_settings
    from envgen_jax.study.runner import write_comparison

    given = {"--config": args.config, "--methods": args.methods, "--seeds": args.seeds, "--set": args.overrides,
             "--replay": args.replay, "--dry-run": args.dry_run, "--grouping": args.grouping != "auto"}
    problems = [f"{flag}: not with --compare-only, which compares the study with its own settings (OUT/study.yaml)"
                for flag, value in given.items() if value]
    if not args.out:
        problems.append("--out DIR: required with --compare-only (the study directory to compare)")
    elif not (Path(args.out) / "study.yaml").is_file():
        problems.append(f"--out {args.out}: no study.yaml there (`envgen-jax study` writes it into a study's "
                        "directory)")
    if problems:
        raise ConfigError(problems, what="study")
    out = Path(args.out)
    study = write_comparison(out, load_settings(out / "study.yaml"))
    done = [m for m, r in study["methods"].items() if r["status"] == "finished"]
    print(f"study: compared the {len(done)} finished of {len(study['methods'])} methods "
          f"({', '.join(done) or 'none yet'}); nothing trained; {out / 'study.md'}")
    return 0


def replay_settings(items: list[str], methods) -> dict[str, str]:
    """--replay METHOD=TRANSCRIPT items as {method: path}, each checked: a method of this study that asks an LLM, a
    transcript that holds accepted designs; every problem named at once."""
    from envgen_jax import methods as registry
    from envgen_jax.llm.errors import ReplayError
    from envgen_jax.llm.replay import recorded_designs

    replay, problems = {}, []
    for item in items:
        method, sep, path = item.partition("=")
        method = method.strip()
        if not sep or not method or not path:
            problems.append(f"--replay {item!r}: expected METHOD=TRANSCRIPT")
        elif method not in methods:
            problems.append(f"--replay {method}: not a method of this study ({', '.join(methods)})")
        elif not registry.get(method).USES_LLM:
            problems.append(f"--replay {method}: {method} asks no LLM; methods that do: "
                            f"{', '.join(m for m in methods if registry.get(m).USES_LLM) or 'none in this study'}")
        elif method in replay:
            problems.append(f"--replay {method}: given twice")
        else:
            try:
                recorded_designs(path)
            except ReplayError as e:
                problems.append(f"--replay {method}: {e}")
            replay[method] = path
    if problems:
        raise ConfigError(problems, what="study")
    return replay
