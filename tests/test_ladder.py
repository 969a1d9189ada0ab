"""Issue 56's ladder: the encoders of its rungs ('trunk', 'grid', 'drawn'), their recipes, and the table writer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.schema import ConfigError
from envgen_jax.trainer.encoders import DrawnNet, GridNet, MLPNet, NetworkConfig, TrunkNet, actor_critic
from envgen_jax.trainer.layers import cell_colours, draw_cells
from envgen_jax.trainer.networks import count_params

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MAP = (3, 4, 5)  # a tiny local map: 3 x 4 cells, 5 one-hot channels, then 6 more features
OBS = (int(np.prod(MAP)) + 6,)
TINY = {"trunk": TrunkNet(width=8, head_width=16),
        "grid": GridNet(channels=(4, 4), res_blocks=1, width=8, head_width=16),
        "drawn": DrawnNet(channels=(4,), res_blocks=1, width=8, head_width=0, cell=3)}


@pytest.mark.parametrize("kind", list(TINY))
def test_each_ladder_encoder_gives_logits_and_values(kind):
    net = actor_critic(num_actions=3, obs_shape=OBS, settings=TINY[kind], map_shape=MAP)
    obs = jax.random.uniform(jax.random.PRNGKey(1), (2, 5) + OBS)
    # jitted: one program each, where op by op every layer's operations compiled one by one
    params = jax.jit(net.init)(jax.random.PRNGKey(0), obs[0, 0])
    logits, value = jax.jit(net.apply)(params, obs)
    assert logits.shape == (2, 5, 3) and value.shape == (2, 5)
    assert np.isfinite(np.asarray(logits)).all() and np.isfinite(np.asarray(value)).all()
    if kind != "trunk":  # conv_as_matmul: the same parameters, the convolutions as patches x kernel
        dense = actor_critic(num_actions=3, obs_shape=OBS, settings=TINY[kind], map_shape=MAP, conv_as_matmul=True)
        np.testing.assert_allclose(jax.jit(dense.apply)(params, obs)[0], logits, rtol=1e-4, atol=1e-5)


def test_a_memory_reads_the_grid_encoders_features():
    from envgen_jax.trainer.networks import Agent
    agent = Agent(actor_critic(num_actions=3, obs_shape=OBS, settings=TINY["grid"], map_shape=MAP, recurrent="gru",
                              memory_size=4))
    params = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jnp.ones((2, 3) + OBS)  # [T, N]
    logits, value = jax.jit(agent.evaluate)(params, agent.initial_memory(3), obs, jnp.zeros((2, 3), bool))
    assert logits.shape == (2, 3, 3) and value.shape == (2, 3)


def test_the_grid_encoders_need_a_map():
    for settings in (GridNet(), DrawnNet()):
        assert settings.input_problems((63, 63, 3), None) == [
            f"network.kind: {settings.PATH.split('.')[1]!r} needs an observation that starts with a local map; "
            "this env with these settings has none (use 'mlp', 'trunk' or 'conv')"]
    with pytest.raises(ConfigError):
        GridNet(channels=())


def test_parameter_counts_are_the_stated_ones():
    """The counts docs/agent.md, the encoders' docstrings and the recipes state, on Craftax-Classic's 1345-vector
    with its 7 x 9 x 21 map and 17 actions (shapes only: nothing is computed)."""
    def count(settings, obs_shape=(1345,)):
        net = actor_critic(num_actions=17, obs_shape=obs_shape, settings=settings, map_shape=(7, 9, 21))
        return count_params(jax.eval_shape(net.init, jax.random.PRNGKey(0), jnp.zeros(obs_shape)))
    assert count(TrunkNet()) == 629_396
    # grid: the stacks end at 1 x 2 cells x 64 channels, joined with the 22 other features
    assert count(GridNet()) == 716_606
    assert count(GridNet()) - count(TrunkNet()) == 716_606 - 629_396
    # drawn: 49 x 63 pixels pool to 7 x 8 x 32
    assert count(DrawnNet()) == 848_798
    # ladder_drawn's cell 3: 21 x 27 pixels pool to 3 x 4 x 32
    assert count(DrawnNet(cell=3)) == 485_534
    from envgen_jax.trainer.encoders import ConvNet
    narrow = ConvNet(channels=(16, 32, 32), norm=True, width=256, head_width=1024)
    assert count(narrow, (63, 63, 3)) == 909_170


def test_the_drawn_map_paints_each_cell_its_colour():
    colours = cell_colours(21)
    assert colours.shape == (21, 3) and len({tuple(c) for c in colours}) == 21
    assert np.array_equal(colours, cell_colours(21))  # fixed
    grid = np.zeros((1, 2, 3, 21), np.float32)
    grid[0, 1, 2, 7] = 1.0
    image = np.asarray(draw_cells(jnp.asarray(grid @ colours), 4))
    assert image.shape == (1, 8, 12, 3)
    assert (image[0, 4:8, 8:12] == colours[7]).all() and not image[0, :4].any() and not image[0, 4:, :8].any()


def test_the_ladder_recipes():
    from benchmarks import agent_sample_efficiency as ase
    from benchmarks.agent_ladder import LADDER
    assert ase.RECIPES["ladder_rollout"]["agent"] == ase.changed(ase.LOW_SAMPLE, num_envs=8, num_steps=512,
                                                                 update_epochs=3)
    for name, _ in LADDER:
        cfg, _, _ = ase.recipe_config(name, 2)
        base = ase.LOW_SAMPLE
        if name not in ("lowsample_mlp", "ladder_rollout"):  # the network rungs keep LOW_SAMPLE's algorithm
            assert cfg.ppo == base.ppo, name
    grid, _, _ = ase.recipe_config("ladder_grid", 1)
    assert grid.network.kind == "grid" and grid.network.grid == GridNet() and grid.execution.conv_as_matmul
    drawn, _, _ = ase.recipe_config("ladder_drawn", 1)
    assert drawn.network.kind == "drawn" and drawn.network.drawn.cell == 3 and drawn.execution.conv_as_matmul
    pixels, _, _ = ase.recipe_config("ladder_pixels_narrow", 1)
    assert ase.observation("ladder_pixels_narrow") == "pixels" and ase.observation("ladder_trunk") == "symbolic"
    assert (pixels.network.kind, pixels.network.conv.channels, pixels.network.conv.norm, pixels.network.conv.width,
            pixels.network.conv.head_width) == ("conv", (16, 32, 32), True, 256, 1024)


def test_the_ladder_table_from_a_tiny_benchmark_json(tmp_path):
    from benchmarks import agent_ladder
    achievements = 22
    chunks = []
    for i in range(1, 7):  # chunks ending at 0.1M ... 0.6M steps; 2 agents
        chunks.append({"update": i, "env_steps": i * 100_000, "episodes": [10, 20],
                       "return_sum": [10.0 * i, 40.0 * i], "length_sum": [1000, 2000],
                       "achievements": [[10 if i == 1 else 5] * achievements, [10] * achievements]})
    row = {"recipe": "ladder_trunk", "seeds": 2, "agent_seeds": [0, 1], "hparams": {}, "steps_per_update": 100_000,
           "updates_per_chunk": 1, "achievement_names": [f"a{i}" for i in range(achievements)], "chunks": chunks,
           "timing": {"train_s": 10.0, "train_steps": 1_200_000, "compile_s": [1.0], "sessions": []},
           "load_note": "test"}
    other = {**row, "recipe": "not_in_the_ladder"}
    fewer = {**row, "seeds": 1, "agent_seeds": [0]}  # the row with most seeds is the rung's
    source = tmp_path / "agent_sample_efficiency_cpu.json"
    source.write_text(json.dumps({"rows": [fewer, row, other]}))
    rows = agent_ladder.write(source, tmp_path / "out")
    assert [r["recipe"] for r in rows] == ["ladder_trunk", agent_ladder.PIXEL_AGENT["recipe"]]
    rung = rows[0]
    assert rung["seeds"] == 2 and rung["trained_to"] == 600_000 and rung["parameters"] == 629_396
    # the episodes of the chunk ending at 0.5M: mean return 50 / 10 and 200 / 20 per seed
    assert rung["return_at_0.5M_per_seed"] == [5.0, 10.0] and rung["return_at_0.5M"] == 7.5
    # every achievement's success, the same for all: S = exp(ln(1 + s)) - 1 = s. Seed 0: all 10 episodes of the first
    # chunk, half of the later ones; seed 1: half throughout. To 0.5M: 30 of 50 and 50 of 100; to 0.2M: 15 of 20, 20
    # of 40
    assert rung["score_0_0.5M"] == pytest.approx(55.0) and rung["score_0_0.5M_std"] == pytest.approx(5.0)
    assert rung["score_0_0.2M"] == pytest.approx(62.5) and rung["score_0_0.2M_std"] == pytest.approx(12.5)
    assert rung["score_0_1M"] is None and rung["env_steps_per_s"] == 120_000
    saved = json.loads((tmp_path / "out" / "agent_ladder_cpu.json").read_text())
    assert saved["rows"] == rows
    md = (tmp_path / "out" / "agent_ladder_cpu.md").read_text()
    assert "| ladder_trunk | 2 | 0.60M | 62.5 +/- 12.5 | 55.0 +/- 5.0 | n/a | 7.5 | 120,000 | 629,396 |" in md
    short = {**row, "chunks": chunks[:1]}  # trained to 0.1M: no score over the first 0.2M yet
    assert agent_ladder.score_first(short) == (None, None)


def test_the_rungs_speed_side_by_side(tmp_path, monkeypatch):
    """--speed: each recipe's chunk timed in one process; env steps a call = updates x steps per update x agents, the
    first recipe the base of the ratios; the chunk's train state is carried from call to call (it is donated)."""
    from benchmarks import agent_ladder
    from benchmarks import agent_sample_efficiency as ase
    from envgen_jax.trainer import probes
    # What is tested is the timing and its table, not the game: the recipes' chunks run on a probe, whose programs
    # compile in seconds (2026-11-28, 2 loaded cores: the init and two chunks 67 s on Crafter, 10 s on the probe).
    monkeypatch.setattr(ase, "CrafterEnv", lambda observation: probes.ConstantRewardEnv())
    monkeypatch.setattr(ase, "make_params", lambda configs: probes.make_bank([1.0]))
    tiny = ase.changed(ase.LOW_SAMPLE, NetworkConfig(mlp=MLPNet(**{**ase.LOW_MLP, "width": 8})), num_envs=2,
                       num_steps=4, update_epochs=1, num_minibatches=1)
    monkeypatch.setattr(ase, "RECIPES", {"tiny_a": {"agent": tiny, "why": "a"},
                                         "tiny_b": {"agent": ase.changed(tiny, num_steps=8), "why": "b"}})
    rows = agent_ladder.speed(("tiny_a", "tiny_b"), seeds=2, updates=2, repeats=1)
    assert [(r["recipe"], r["env_steps_per_call"]) for r in rows] == [("tiny_a", 2 * 8 * 2), ("tiny_b", 2 * 16 * 2)]
    assert rows[0]["speed_vs_tiny_a"] == 1.0
    for r in rows:
        assert r["env_steps_per_s"] == pytest.approx(r["env_steps_per_call"] / r["median_s"])
    md = agent_ladder.write_speed(rows, tmp_path)
    assert "| tiny_b | 2 | 64 |" in md and (tmp_path / "agent_ladder_speed_cpu.md").read_text().startswith(md)

    calls = []

    def chunk(ts, bank, rows):
        calls.append(ts)
        return ts + 1, {"loss": ts}
    call = agent_ladder._carried(chunk, 0, None, None)
    assert [call()["loss"] for _ in range(3)] == [0, 1, 2] and calls == [0, 1, 2]
