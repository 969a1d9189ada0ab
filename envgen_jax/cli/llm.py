"""`envgen-jax llm generate`: run the designer alone and write the validated configurations."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from envgen_jax import games
from envgen_jax.config_io import load_yaml
from envgen_jax.llm.models import DEFAULT_OFFLINE_MODEL, OFFLINE_MODELS
from envgen_jax.llm.settings import BACKENDS, LLMSettings
from envgen_jax.schema import ConfigError

LLM_HELP = """\
Try the LLM environment designer on its own, outside a training run.

  envgen-jax llm generate --env crafter --out envs.json

See `envgen-jax llm generate --help`.
"""

GENERATE_HELP = """\
Ask the LLM for validated environment configurations (EnvGen step 1, or step 4 with --feedback) and write them as
JSON to --out (default envs.json), with every exchange in a JSONL transcript next to it (ENVS.transcript.jsonl, or
--transcript). The configurations are also printed, one line each with its purpose.

  envgen-jax llm generate --env crafter --out envs.json
  envgen-jax llm generate --env crafter --feedback success.json --previous envs.json --out envs2.json
  envgen-jax llm generate --base-url http://localhost:8000/v1 --model Qwen2.5-32B-Instruct --out envs.json
  envgen-jax llm generate --backend replay --transcript envs.transcript.jsonl --out again.json

With no endpoint configured the offline model is served locally. The output is what `envgen-jax validate` and
`envgen-jax render` read.

Exit status: 0 written, 1 bad input (an argument, a settings or --feedback file), 2 the LLM step failed (the
endpoint, or no valid design within the repair turns: the transcript holds every reply).
"""


def add_commands(commands) -> None:
    """Register `llm generate` on the top-level subparsers."""
    llm = commands.add_parser("llm", help="the LLM environment designer on its own", description=LLM_HELP)
    llm_commands = llm.add_subparsers(dest="llm_command", metavar="COMMAND", required=True)
    gen = llm_commands.add_parser("generate", help="ask the LLM for environment configurations and write them",
                                  description=GENERATE_HELP)
    gen.add_argument("--env", default="crafter", choices=games.NAMES, help="environment (default crafter)")
    gen.add_argument("--num-envs", type=_positive_int, default=4, metavar="N",
                     help="configurations to ask for (default 4)")
    gen.add_argument("--feedback", type=Path, metavar="FILE.json",
                     help="success rates in %%: {achievement: [mean, std]} or {achievement: mean}")
    gen.add_argument("--previous", type=Path, metavar="ENVS.json",
                     help="the configurations the agent trained in, with the targets each names (an earlier "
                          "--out file, or a run's environments/cycle_<c>.json), for --feedback")
    gen.add_argument("--out", type=Path, default=Path("envs.json"), help="output file (default envs.json)")
    gen.add_argument("--backend", choices=BACKENDS, default=None,
                     help="auto (default): openai if a base URL is set or --model names no offline model, else "
                          "the offline model served locally")
    gen.add_argument("--model", help=f"an offline model ({', '.join(OFFLINE_MODELS)}; default "
                                     f"{DEFAULT_OFFLINE_MODEL}), or the model name on the endpoint")
    gen.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 "
                                        "(default: OPENAI_BASE_URL); the key comes from OPENAI_API_KEY")
    gen.add_argument("--transcript", type=Path, metavar="FILE.jsonl",
                     help="JSONL transcript to append to (default: next to --out); with --backend replay, the "
                          "transcript to replay")
    gen.add_argument("--llm-config", type=Path, metavar="FILE.yaml",
                     help="LLM settings (YAML, the keys of LLMSettings, or a run config with an llm: section)")
    gen.add_argument("--temperature", type=float, help="sampling temperature (default 0)")
    gen.add_argument("--seed", type=int, help="sampling seed sent with each request")
    gen.add_argument("--max-tokens", type=int)
    gen.add_argument("--timeout", type=float, help="seconds per request (default 120 for an endpoint, 900 for the "
                     "offline model)")
    gen.add_argument("--max-repairs", type=int, help="repair turns after an invalid reply (default 2)")
    gen.set_defaults(handler=cmd_generate)


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _settings(args) -> LLMSettings:
    settings = LLMSettings()  # the adopted designer, as a run asks unless its config says otherwise
    if args.llm_config:  # read here, so that a missing or malformed file is bad input with its path
        data = load_yaml(args.llm_config)
        settings = LLMSettings.from_dict(data.get("llm", data))
    overrides = {"backend": args.backend, "model": args.model, "base_url": args.base_url,
                 "temperature": args.temperature, "seed": args.seed, "max_tokens": args.max_tokens,
                 "timeout_s": args.timeout, "max_repairs": args.max_repairs}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if (overrides.get("backend") or settings.transport.backend) == "replay":
        if not args.transcript:
            raise ConfigError(["--backend replay needs --transcript FILE.jsonl (the transcript to replay)"],
                              what="arguments")
        overrides["replay_path"] = str(args.transcript)
    return settings.replace(**overrides)


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError([f"cannot read {path}: {e.strerror or e}"], what=f"{what} file") from None
    except json.JSONDecodeError as e:
        raise ConfigError([f"{path} is not JSON: {e}"], what=f"{what} file") from None


def _success(path: Path, spec) -> dict:
    """The --feedback file, checked here so that bad numbers are bad input rather than a failed LLM step."""
    from envgen_jax.llm.errors import LLMError
    from envgen_jax.llm.prompts import normalise_success
    success = _read_json(path, "--feedback")
    try:
        normalise_success(spec, success)
    except LLMError as e:
        raise ConfigError([f"{path}: {e}"], what="--feedback file") from None
    return success


def _previous(path: Path, spec) -> tuple[list, list]:
    """The --previous file's configurations, and the targets each names (shown to the designer as a run shows them)."""
    data = _read_json(path, "--previous")
    envs = data.get("environments") if isinstance(data, dict) else None
    if not isinstance(envs, list):
        raise ConfigError([f"{path}: expected an `llm generate` output with an \"environments\" list"],
                          what="--previous file")
    configs = [spec.config_cls.from_dict(e.get("config") if isinstance(e, dict) else e,
                                         where=f"{path}: environments[{i}].config") for i, e in enumerate(envs)]
    targets = [e.get("targets", []) if isinstance(e, dict) else [] for e in envs]
    bad = [f"{path}: environments[{i}].targets: expected a list of {spec.title} {spec.skills} "
           f"({', '.join(spec.achievements)}), got {t!r}" for i, t in enumerate(targets)
           if not (isinstance(t, list) and all(name in spec.achievements for name in t))]
    if bad:
        raise ConfigError(bad, what="--previous file")
    return configs, targets


def cmd_generate(args) -> int:
    from envgen_jax.llm.designer import Designer
    from envgen_jax.llm.reply import environment_entry

    spec = games.get(args.env).designer_spec()
    settings = _settings(args)
    replaying = settings.transport.resolved_backend() == "replay"
    transcript = None if replaying else (args.transcript or args.out.with_suffix(".transcript.jsonl"))
    success = _success(args.feedback, spec) if args.feedback else None
    previous, previous_targets = _previous(args.previous, spec) if args.previous else (None, None)
    with Designer(spec, settings, transcript) as designer:
        if success is None:
            configs, purposes = designer.generate(args.num_envs)
        else:
            configs, purposes = designer.feedback(success, args.num_envs, previous=previous,
                                                     previous_targets=previous_targets)
    backend, model = settings.transport.resolved_backend(), settings.transport.model_name
    targets = designer.targets or [()] * len(configs)  # what each environment says it trains (none: llm.targets off)
    out = {"env": spec.name, "backend": backend, "model": model,
           "environments": [environment_entry(p, c.to_dict(), t)
                            for c, p, t in zip(configs, purposes, targets)]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    for i, (c, p) in enumerate(zip(configs, purposes), 1):
        print(f"{i}. {c.summary()}\n   purpose: {p}")
    print(f"wrote {len(configs)} configurations to {args.out}" + (f"; transcript {transcript}" if transcript else ""))
    return 0
