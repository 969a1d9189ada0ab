"""`envgen-jax` as a user meets it: --help for every command, exit statuses and messages, `train --dry-run`, and
`render` writing pictures for both games."""

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from envgen_jax.cli import build_parser, main
from envgen_jax.llm.errors import DesignError, LLMError
from envgen_jax.run.loop import EnvGenRun
from envgen_jax.schema import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SMOKE = str(ROOT / "configs" / "smoke.yaml")
COMMANDS = {"train", "study", "validate", "render", "settings", "llm"}


@pytest.mark.parametrize("command", [[], ["validate"], ["render"], ["settings"], ["train"], ["study"], ["llm"],
                                     ["llm", "generate"]])
def test_help_reads_like_documentation(command, capsys):
    assert main([*command, "--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: envgen-jax") and len(text.splitlines()) > 5
    example = f"envgen-jax {' '.join(command) or 'train'}"
    assert re.search(rf"^  {example}\b", text, re.M), f"no example `{example} ...` in the help of {command}"


def test_every_command_the_help_lists_exists(capsys):
    assert main(["--help"]) == 0
    listing = capsys.readouterr().out.split("positional arguments:")[1].split("options:")[0]
    names = {line.split()[0] for line in listing.splitlines() if re.match(r"    \S", line)}  # deeper: wrapped text
    assert names == COMMANDS
    for name in names:
        assert main([name, "--help"]) == 0, name
        assert capsys.readouterr().out.startswith(f"usage: envgen-jax {name}")


def _stderr_message(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err


def test_bad_input_exits_1_with_the_reason(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--config", SMOKE, "--set", "ppo.num_envs=abc", "--out", str(out)]) == 1
    assert "error: invalid run configuration (1 problem):\n  - ppo.num_envs: expected an integer, got 'abc'" in \
        _stderr_message(capsys)
    assert not out.exists()

    assert main(["train", "--config", str(tmp_path / "missing.yaml")]) == 1
    assert "missing.yaml: no such file" in _stderr_message(capsys)
    paper_agent = str(ROOT / "configs" / "crafter_ppo_paper_agent.yaml")  # a conv network on symbolic observations
    assert main(["train", "--config", paper_agent, "--set", "observation=symbolic", "--dry-run"]) == 1
    assert _stderr_message(capsys).rstrip().endswith("  - network.kind: 'conv' cannot read the 'symbolic' observation "
                                            "(observation: symbolic needs network.kind 'mlp' or 'map' or 'trunk' or "
                                            "'grid' or 'drawn')")
    (out / "checkpoints").mkdir(parents=True)  # an earlier run: starting another there would overwrite it
    assert main(["train", "--config", SMOKE, "--out", str(out), "--dry-run"]) == 1
    assert "already holds a run; use --resume" in _stderr_message(capsys)


def test_numbers_as_researchers_write_them_are_numbers(tmp_path, capsys):
    # YAML 1.1 reads an exponent without a dot ('3e-4') as text; a run configuration reads it as a number, in a file
    # and in --set alike, and text that is no number is still refused by name.
    from envgen_jax.config_io import dump_yaml, load_yaml
    from envgen_jax.run_config import load_run_config
    cfg = load_run_config(SMOKE, ["ppo.lr=3e-4", "ppo.adam_eps=1e-5", "sweep.gamma=[0.9, 99e-2]"])
    assert (cfg.ppo.lr, cfg.ppo.adam_eps, cfg.sweep.gamma) == (3e-4, 1e-5, (0.9, 0.99))
    assert isinstance(cfg.ppo.lr, float) and isinstance(cfg.ppo.adam_eps, float)
    path = tmp_path / "run.yaml"
    path.write_text(f"extends: {SMOKE}\nppo:\n  lr: 3e-4\n  adam_eps: 1E-5\nschedule:\n  final_steps: 2e3\n"
                    "sweep:\n  lr: [1e-4, +3e-4]\n")
    cfg = load_run_config(path)
    assert (cfg.ppo.lr, cfg.ppo.adam_eps, cfg.sweep.lr) == (3e-4, 1e-5, (1e-4, 3e-4))
    assert cfg.schedule.final_steps == 2000 and isinstance(cfg.schedule.final_steps, int)
    assert main(["train", "--config", str(path), "--set", "ppo.lr=3e-4x", "--dry-run"]) == 1
    assert "  - ppo.lr: expected a number, got '3e-4x'" in _stderr_message(capsys)
    with pytest.raises(ConfigError, match="ppo.adam_eps: expected a number, got 'tiny'"):
        load_run_config(path, ["ppo.adam_eps=tiny"])
    # Text that reads as a number is written quoted, so a saved setting reads back as the text it was.
    saved = tmp_path / "saved.yaml"
    saved.write_text(dump_yaml({"llm": {"model": "1e5"}, "ppo": {"lr": 3e-4}}))
    assert load_yaml(saved) == {"llm": {"model": "1e5"}, "ppo": {"lr": 3e-4}}


@pytest.mark.parametrize("argv, reason", [
    (["trian"], "argument COMMAND: invalid choice: 'trian'"),
    (["train", "--config", SMOKE, "--bogus"], "unrecognized arguments: --bogus"),
    (["train"], "one of the arguments --config --resume is required"),
    (["llm", "generate", "--num-envs", "0"], "argument --num-envs: expected a positive integer, got '0'"),
    (["render", "x.json", "--seed", "one"], "argument --seed: invalid int value: 'one'"),
])
def test_usage_errors_exit_1_not_argparse_2(argv, reason, capsys):
    assert main(argv) == 1
    err = _stderr_message(capsys)
    assert err.startswith("usage: envgen-jax") and reason in err


def test_a_failed_run_exits_2_with_one_message(tmp_path, capsys, monkeypatch):
    def crash(self):
        self.out.mkdir(parents=True)
        (self.out / "config.yaml").write_text("")  # the run had started: it can be resumed
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(EnvGenRun, "run", crash)
    out = tmp_path / "run"
    assert main(["train", "--config", SMOKE, "--out", str(out)]) == 2
    err = _stderr_message(capsys)
    assert err.startswith("error: RuntimeError: simulated crash\n(rerun with --debug to see the traceback)")
    assert f"envgen-jax train --resume {out}" in err

    with pytest.raises(RuntimeError, match="simulated crash"):  # --debug lets the exception through
        main(["train", "--config", SMOKE, "--out", str(tmp_path / "again"), "--debug"])


@pytest.mark.parametrize("error, status, message", [
    (LLMError("endpoint unreachable"), 2, "error: the LLM step failed: endpoint unreachable"),
    (DesignError(["no JSON object"], replies=3), 2, "error: the LLM step failed: invalid LLM environment design"),
    (ConfigError(["seeds: -1 is below the minimum 1"]), 1, "error: invalid configuration (1 problem)"),
    (FileNotFoundError(2, "No such file or directory", "envs.json"), 1, "error: envs.json: No such file or directory"),
    (ValueError("odd"), 2, "error: ValueError: odd"),
    (KeyboardInterrupt(), 130, "interrupted"),
])
def test_every_command_maps_errors_to_one_exit_status(error, status, message, capsys, monkeypatch):
    def fail(args):
        raise error

    monkeypatch.setattr("envgen_jax.cli.envs.cmd_settings", fail)
    assert main(["settings"]) == status
    assert _stderr_message(capsys).startswith(message)


def test_dry_run_prints_the_plan_and_creates_nothing(tmp_path, capsys):
    from envgen_jax.run.parts import RunParts, checkpoint_bytes
    from envgen_jax.run_config import load_run_config

    overrides = ["seeds=3", "schedule.feedback=per_seed", "schedule.mixing=mixed", "schedule.original_share=0.25",
                 "ppo.num_envs=8", "ppo.num_steps=32", "schedule.updates_per_chunk=2", "network.mlp.width=64",
                 "network.mlp.depth=2", "eval.envs_per_agent=8", "schedule.final_steps=1000"]
    out = tmp_path / "run"
    assert main(["train", "--config", SMOKE, "--set", *overrides, "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert not out.exists() and not any(tmp_path.iterdir())

    # By hand from smoke.yaml and the overrides: an update is 8 envs x 32 steps = 256 env steps, a chunk 2 updates
    # (512 steps). A cycle trains llm_env_steps + original_env_steps = 4096 steps mixed: 8 chunks, 16 updates, in
    # round(8 x 0.25) = 2 original slots and 6 slots over the designer's envs_per_call = 2 environments. The final
    # 1000 steps round up to 2 chunks: 4 updates, 1024 steps. A designer per seed: 3 LLM calls per design step.
    cycle = [["LLM step", "design", "-", "-", "-", "3"],
             ["train: mixed", "train", "4,096", "16", "8", "-", "2 original + 6 in 2 designed envs"],
             ["evaluate", "evaluate", "-", "-", "-", "-", "8 original"]]
    expected = ([[f"cycle 1/2 {row[0]}", *row[1:]] for row in cycle] + [[f"cycle 2/2 {row[0]}", *row[1:]]
                                                                         for row in cycle]
                + [["final train: final", "train", "1,024", "4", "2", "-", "8 original"],
                   ["final evaluate", "evaluate", "-", "-", "-", "-", "8 original"]])
    table = text.split("env slots\n")[1].split("\n\n")[0]
    assert [re.split(r"\s{2,}", line.strip()) for line in table.splitlines()] == expected

    steps = 2 * 4096 + 1024
    assert f"env steps:   {steps:,} per seed (1,024 of them scored), {3 * steps:,} over all seeds" in text
    assert "PPO updates: 36 in 18 compiled chunks of 2; an update is 8 envs x 32 steps = 256 env steps" in text
    assert "LLM calls:   6 (3 designers; each call may add up to 2 repair turns)" in text
    assert "bank:        7 rows" in text  # row 0, then 2 for each of the 3 designers

    size = int(re.search(r"\(([\d,]+) bytes of TrainState\)", text).group(1).replace(",", ""))
    assert f"about {size / 1e6:.1f} MB" in text
    # Every leaf has a leading seed axis; per seed at least the network (separate actor and critic MLPs, 2 x 64,
    # on Crafter's 1345 features and 17 actions) three times (parameters and Adam's two moments) and the
    # observations of the 8 env slots, all float32.
    one_seed = checkpoint_bytes(RunParts.of(load_run_config(SMOKE, [*overrides, "seeds=1"])))
    assert size == 3 * one_seed
    mlp = 1345 * 64 + 64 + 64 * 64 + 64
    network = (mlp + 64 * 17 + 17) + (mlp + 64 + 1)
    assert one_seed > 4 * (3 * network + 8 * 1345)


def test_fixed_asks_the_llm_in_the_first_cycle_only(capsys):
    assert main(["train", "--config", SMOKE, "--set", "method=fixed", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"cycle 1/2 LLM step\s+design(\s+-){3}\s+1\n", text)
    assert re.search(r"cycle 2/2 LLM step\s+design(\s+-){3}\s+0\n", text)
    assert "LLM calls:   1 (1 designer;" in text


def test_render_draws_one_panel_per_config(tmp_path, capsys):
    crafter = tmp_path / "crafter.json"
    crafter.write_text(json.dumps({"environments": [
        {"purpose": "coal", "config": {"environment_settings": {"target_biome": "mountain"}}},
        {"purpose": "start", "config": {}}]}))
    out = tmp_path / "crafter.png"
    assert main(["render", str(crafter), "--out", str(out), "--seed", "2"]) == 0
    assert "2 worlds, seed 2" in capsys.readouterr().out and Image.open(out).size[0] > 300

    heist = tmp_path / "heist.json"
    heist.write_text(json.dumps([{"maze_settings": {"maze_dim": 9, "num_keys": 1}}]))
    out = tmp_path / "heist.png"
    assert main(["render", str(heist), "--env", "heist", "--heist-mode", "easy", "--out", str(out)]) == 0
    assert Image.open(out).size[0] > 100
    heist.write_text(json.dumps([{"maze_settings": {"maze_dim": 13}}]))
    assert main(["render", str(heist), "--env", "heist", "--heist-mode", "easy", "--out", str(out)]) == 1
    assert "does not fit the world of 9x9" in capsys.readouterr().err


def test_build_parser_is_the_parser_main_uses():
    args = build_parser().parse_args(["--debug", "train", "--config", SMOKE, "--dry-run"])
    assert args.debug and args.dry_run and args.config == SMOKE


def test_messages_are_shown_once_even_after_absl_configures_the_root_logger():
    """absl (imported by orbax) gives the root logger a stderr handler on its first log call; the command line's
    messages must not be printed a second time through it."""
    import subprocess
    import sys
    code = ("from envgen_jax.run.log import configure_console, logger; configure_console(); "
            "import absl.logging; absl.logging.warning('from absl'); logger.info('from envgen_jax')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("from envgen_jax") == 1 and "from envgen_jax" not in done.stderr


@pytest.mark.parametrize("flags, reason", [
    (["--coordinator", "nohost:notaport", "--num-processes", "2", "--process-id", "0"],
     "--coordinator: 'nohost:notaport' is not HOST:PORT with a port in 1..65535"),
    (["--coordinator", "localhost:99999", "--num-processes", "2", "--process-id", "1"],
     "--coordinator: 'localhost:99999' is not HOST:PORT with a port in 1..65535"),
    (["--coordinator", "localhost", "--num-processes", "2", "--process-id", "0"],
     "--coordinator: 'localhost' is not HOST:PORT"),
    (["--coordinator", ":8476", "--num-processes", "2", "--process-id", "0"], "--coordinator: ':8476' is not"),
    (["--coordinator", "localhost:8476", "--num-processes", "0", "--process-id", "0"],
     "--num-processes: 0 is not a process count (1 or more)"),
    (["--coordinator", "localhost:8476", "--num-processes", "2", "--process-id", "2"],
     "--process-id: 2 is not in 0..1"),
])
def test_bad_launch_arguments_get_one_line_and_exit_1_before_jax_starts(flags, reason, capsys, monkeypatch):
    import jax

    def never(*args, **kwargs):
        raise AssertionError("JAX's multi-process runtime started on bad arguments")

    monkeypatch.setattr(jax.distributed, "initialize", never)
    assert main(["train", "--config", str(ROOT / "configs" / "smoke.yaml"), *flags]) == 1
    err = capsys.readouterr().err.strip().splitlines()  # the CLI's form of bad input: what, then the one problem
    assert err[0] == "error: invalid arguments (1 problem):" and len(err) == 2 and reason in err[1], err
