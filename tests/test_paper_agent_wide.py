"""configs/crafter_ppo_paper_agent_wide.yaml: the paper's pixel agent and PPO with a rollout a GPU can feed (issue 64
item 2), beside configs/crafter_ppo_paper_agent.yaml, which keeps the paper's shape."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from envgen_jax.run.parts import RunParts, parameter_count
from envgen_jax.run_config import load_run_config

ROOT = Path(__file__).resolve().parent.parent


def test_wide_preset_is_the_paper_agent_with_a_wide_rollout():
    paper = load_run_config(ROOT / "configs" / "crafter_ppo_paper_agent.yaml", [])
    wide = load_run_config(ROOT / "configs" / "crafter_ppo_paper_agent_wide.yaml", [])
    assert (paper.ppo.num_envs, paper.ppo.num_steps) == (8, 512)  # the paper's shape stays the paper's
    assert (wide.ppo.num_envs, wide.ppo.num_steps) == (64, 64)
    assert wide.steps_per_update == paper.steps_per_update == 4096
    assert wide.trainer_ppo.ppo.minibatch_size == paper.trainer_ppo.ppo.minibatch_size == 512
    # everything else of PPO, the network and the protocol is the paper agent's
    assert dataclasses.replace(wide.ppo, num_envs=8, num_steps=512) == paper.ppo
    assert wide.network == paper.network and wide.observation == "pixels"
    assert (wide.method, wide.schedule) == (paper.method, paper.schedule)
    assert (wide.execution.seed_axis, wide.execution.conv_as_matmul, wide.execution.compute_dtype) == (
        "vmap", True, "bfloat16")
    assert (paper.execution.seed_axis, paper.execution.compute_dtype) == ("vmap", "float32")
    assert parameter_count(RunParts.of(wide)) == parameter_count(RunParts.of(paper)) == 3_950_738
