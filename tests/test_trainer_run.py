"""The PPO-only runner: YAML config loading and the report (on a probe env, so no Craftax compile here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from envgen_jax.trainer import probes
from envgen_jax.trainer.checkpoint import load_metadata
from envgen_jax.trainer.run import load_run_config, main, run_ppo

REPO = Path(__file__).resolve().parents[1]


def test_smoke_yaml_loads():
    cfg = load_run_config(REPO / "configs" / "ppo_smoke.yaml")
    assert cfg.ppo.num_envs * cfg.ppo.num_steps * cfg.total_updates <= 300_000  # a few CPU minutes
    assert cfg.eval_num_envs > 0 and cfg.ppo.batch_size % cfg.ppo.num_minibatches == 0


def test_unknown_keys_are_rejected(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"num_chunks": 1, "typo_key": 3}))
    with pytest.raises(ValueError, match="typo_key"):
        load_run_config(path)
    path.write_text(yaml.safe_dump({"ppo": {"num_envs": 4, "not_a_field": 1}}))
    with pytest.raises(TypeError):
        load_run_config(path)


def test_run_report_shows_learning_on_a_bandit(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "num_chunks": 2, "updates_per_chunk": 40, "eval_num_envs": 16, "eval_episodes_per_env": 4,
        "eval_max_steps": 10, "out_dir": str(tmp_path / "out"),
        "ppo": {"num_envs": 16, "num_steps": 8, "num_minibatches": 2, "update_epochs": 2, "width": 32, "depth": 1,
                "lr": 0.01, "ent_coef": 0.0, "num_seeds": 2, "anneal_lr": True, "resets_per_step": 16},
    }))
    cfg = load_run_config(path)
    assert cfg.ppo.total_updates == 80  # anneal over the whole run unless given
    lines = []
    report = run_ppo(cfg, log=lines.append, env=probes.BanditEnv(), bank=probes.make_bank([1.0], shifts=[1]))
    text = "\n".join(lines)
    assert "learning over random" in text and "correct" in text
    assert report["eval_random"]["episodes_per_seed"] == [64, 64]
    assert report["eval_trained"]["success_mean"]["correct"] > 0.9
    assert report["eval_random"]["success_mean"]["correct"] < 0.5
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["learned_over_random"]["return"] > 0.4
    assert "run_config" in load_metadata(tmp_path / "out" / "checkpoint")


def test_cli_requires_config():
    with pytest.raises(SystemExit):
        main([])
