"""Agents at the paper's budget: plain PPO in the original Crafter (method `ppo`, no design), one row per recipe.

Each recipe is a full PPO setting (every field written out in the result), on symbolic observations unless it
names an "observation" (CrafterEnv's: "pixels"; recorded in the row). Its seeds, and for a grid recipe every
(value, seed) pair of its traced hyperparameters, train vmapped in one compiled program for `--steps` env steps per
agent (the paper's 1.96M). Every training episode is recorded with the env step at which it finished (to one
chunk), so the Crafter score (pooled over episodes, the paper's definition: S = exp(mean_i ln(1 + 100 s_i)) - 1) is
reported over the windows the issue names:

    first_0.5M    episodes finished in the first 0.5M steps
    first_1M      ... in the first 1M steps (the paper's PPO at 1M: 15.5%)
    scored_1M     ... in the last 1M of the 1.96M protocol (0.96M-1.96M; the paper's PPO: 26.4%)

with reward and per-achievement success, per agent and as mean +/- std over seeds, plus steps/s, wall time and
compile time (measured on whatever else the machine was doing: see `load_note`; the ratios between rows measured
alone are what counts, and no absolute CPU speed is for quoting).

    python benchmarks/agent_sample_efficiency.py --list                           # the recipes
    python benchmarks/agent_sample_efficiency.py --recipes baseline_study,lowsample_map --seeds 2
    python benchmarks/agent_sample_efficiency.py --recipes lowsample_map --seeds 4   # a finalist, 4 seeds
    python benchmarks/agent_sample_efficiency.py --report                          # table + PNG from the JSON

A killed run continues from its last checkpoint (`--work-dir`, default runs/agent_sample_efficiency/<recipe>_s<seeds>):
rerun the same command. The work dir does not depend on `--steps`, so a recipe screened to `--steps 1000000`
continues to the protocol's 1.96M by rerunning without it. Results: benchmarks/results/agent_sample_efficiency_<platform>.{json,md,png}; rows are keyed by
(recipe, seeds) and kept across invocations; each row names the commit and machine it ran on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, ROOT, markdown_table, platform_tag  # noqa: E402
from envgen_jax.envs.crafter.config import CrafterConfig  # noqa: E402
from envgen_jax.envs.crafter.env import CrafterEnv, make_params  # noqa: E402
from envgen_jax.run.provenance import environment  # noqa: E402
from envgen_jax.trainer.checkpoint import Checkpoints, load_metadata, newest_checkpoint  # noqa: E402
from envgen_jax.trainer.metrics import crafter_score, mean_or_nan, to_host  # noqa: E402
from envgen_jax.trainer.config import ExecutionConfig, PPOAlgorithm, TrainerConfig  # noqa: E402
from envgen_jax.trainer.encoders import ConvNet, DrawnNet, MapNet, MLPNet, NetworkConfig  # noqa: E402
from envgen_jax.trainer.factory import make_trainer  # noqa: E402

NAME = "agent_sample_efficiency"
PROTOCOL_STEPS = 1_960_000
WINDOWS = {"first_0.5M": (0, 500_000), "first_1M": (0, 1_000_000), "scored_1M": (960_000, 1_960_000)}
CURVE_BIN = 100_000  # the learning curve: score of the episodes finished in each 0.1M-step bin

# The agent of the first CPU study (configs/study_cpu.yaml before this benchmark): Craftax_Baselines' settings.
STUDY_V1 = TrainerConfig(PPOAlgorithm(num_envs=128, num_steps=64, update_epochs=4, num_minibatches=8, gamma=0.99,
                                      gae_lambda=0.8, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=1.0,
                                      lr=2e-4),
                         NetworkConfig(mlp=MLPNet(width=128, depth=2, activation="tanh")),
                         ExecutionConfig(resets_per_step=2))
# Low-sample PPO: the settings of the paper's agent (Moon et al.'s AD repo) and Dedieu et al.'s model-free baseline
# where they agree (gamma .95 / lambda .65 vs .925 / .625; constant lr 3e-4 vs 4.5e-4; grad clip .5; per-rollout
# advantage normalisation; normalised value targets; LayerNorm; ReLU), with more updates per env step than the
# study's agent (64 envs x 64 steps: 478 updates in 1.96M steps, about Dedieu's 217 per 1M; 4 epochs x 8
# minibatches, Dedieu's).
LOW_MLP = dict(width=256, depth=2, activation="relu", layer_norm=True)  # its MLPs (the map encoder's too)
LOW_SAMPLE = TrainerConfig(PPOAlgorithm(num_envs=64, num_steps=64, update_epochs=4, num_minibatches=8, gamma=0.95,
                                        gae_lambda=0.65, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
                                        lr=3e-4, adv_norm="batch", clip_value=False, value_norm=True),
                           NetworkConfig(mlp=MLPNet(**LOW_MLP)), ExecutionConfig(resets_per_step=1))
GRU = dict(recurrent="gru", memory_size=256)
MAP = NetworkConfig(kind="map", map=MapNet(**LOW_MLP))
RESMAP = dict(kind="map", map=MapNet(**LOW_MLP, channels=(32,), res_blocks=2))  # a residual conv encoder


def changed(base: TrainerConfig, network: NetworkConfig | None = None, execution: dict | None = None,
            **algorithm) -> TrainerConfig:
    """`base` with another network, these execution settings and these settings of its algorithm."""
    return dataclasses.replace(base, ppo=dataclasses.replace(base.ppo, **algorithm), network=network or base.network,
                               execution=dataclasses.replace(base.execution, **(execution or {})))


# The second round's best (lowsample_mlp_gru with 32 envs x 128-step sequences), base of the third round.
SEQ128 = changed(LOW_SAMPLE, NetworkConfig(mlp=MLPNet(**LOW_MLP), **GRU), num_envs=32, num_steps=128)

RECIPES: dict[str, dict] = {
    "baseline_study": {"agent": STUDY_V1, "why": "the first CPU study's agent (Craftax_Baselines' settings, 2 x 128)"},
    "lowsample_mlp": {"agent": LOW_SAMPLE, "why": "low-sample PPO settings, flat MLP (2 x 256, LayerNorm, ReLU)"},
    "lowsample_map": {"agent": changed(LOW_SAMPLE, MAP),
                      "why": "as lowsample_mlp, with a 3x3 conv (32, 32) over the 7 x 9 local map"},
    "lowsample_mlp_gru": {"agent": changed(LOW_SAMPLE, NetworkConfig(mlp=MLPNet(**LOW_MLP), **GRU)),
                          "why": "as lowsample_mlp, with a shared Dense(256) embedding and a GRU (256), trained on "
                                 "whole 64-step sequences"},
    "lowsample_map_gru": {"agent": changed(LOW_SAMPLE, dataclasses.replace(MAP, **GRU)),
                          "why": "as lowsample_map, with a GRU (256) over the encoder, trained on whole 64-step "
                                 "sequences (Dedieu et al.'s model-free agent: conv encoder + GRU)"},
    "lowsample_mlp_32envs": {"agent": changed(LOW_SAMPLE, num_envs=32),
                             "why": "as lowsample_mlp with 32 envs x 64 steps: twice the updates per env step (957 "
                                    "in 1.96M steps), minibatches of 256"},
    "lowsample_mlp_no_vnorm_ln": {
        "agent": changed(LOW_SAMPLE, NetworkConfig(mlp=MLPNet(**{**LOW_MLP, "layer_norm": False})), value_norm=False),
        "why": "ablation: lowsample_mlp without value normalisation and LayerNorm"},
    "lowsample_mlp_gamma": {"agent": LOW_SAMPLE, "grid": {"gamma": [0.95, 0.99], "gae_lambda": [0.65, 0.8]},
                            "why": "traced-hyperparameter grid in one compile: (gamma, lambda) = (.95, .65) and "
                                   "(.99, .8), each with every seed"},
    # Second round (issue 42): structure. The map seen as an image by a residual conv stack at full 7 x 9
    # resolution (patches + Dense convs: fast under vmap on XLA:CPU; 32 channels: at 64 the encoder ran 22x slower
    # than the MLP on this CPU), with and without memory over it; memory over
    # longer sequences; then the step size on the finalists.
    "lowsample_resmap": {"agent": changed(LOW_SAMPLE, NetworkConfig(**RESMAP)),
                         "why": "as lowsample_mlp, with a residual conv encoder over the 7 x 9 map: 3x3 conv (32), "
                                "two pre-activation residual blocks (LayerNorm, ReLU, 3x3 conv x 2), flattened "
                                "with the inventory into Dense(256)"},
    "lowsample_resmap_gru": {"agent": changed(LOW_SAMPLE, NetworkConfig(**RESMAP, **GRU)),
                             "why": "as lowsample_resmap, with a GRU (256) over the encoder (heads see [features, "
                                    "GRU]), trained on whole 64-step sequences from the stored state"},
    "lowsample_mlp_gru_seq128": {"agent": SEQ128,
                                 "why": "as lowsample_mlp_gru with 32 envs x 128 steps: the same batch, sequences "
                                        "twice as long for backpropagation through time"},
    "lowsample_resmap_lr": {"agent": changed(LOW_SAMPLE, NetworkConfig(**RESMAP)),
                            "grid": {"lr": [1.5e-4, 6e-4]},
                            "why": "lowsample_resmap's step size: lr 1.5e-4 and 6e-4 in one compile (3e-4 is "
                                   "lowsample_resmap itself)"},
    "lowsample_resmap_epochs2": {"agent": changed(LOW_SAMPLE, NetworkConfig(**RESMAP), update_epochs=2),
                                 "why": "as lowsample_resmap with 2 epochs per rollout (a smaller step per update)"},
    # Third round (issue 42): the step size of the second round's best (lowsample_mlp_gru_seq128, 12.4 scored; it
    # ran at approximate KL 0.06-0.07 per minibatch late in training): learning rate and clip range in one traced
    # grid, then a KL limit per update (ppo.target_kl: static, one program each).
    "seq128_step": {"agent": SEQ128, "grid": {"lr": [1.5e-4, 6e-4, 3e-4, 3e-4], "clip_eps": [0.2, 0.2, 0.1, 0.3]},
                    "why": "lowsample_mlp_gru_seq128's step size in one compile: lr 1.5e-4 and 6e-4 (clip .2), "
                           "clip .1 and .3 (lr 3e-4)"},
    "seq128_kl01": {"agent": changed(SEQ128, target_kl=0.01),
                    "why": "lowsample_mlp_gru_seq128 with a KL limit per update: target_kl .01 (stop at 0.015)"},
    "seq128_kl03": {"agent": changed(SEQ128, target_kl=0.03),
                    "why": "lowsample_mlp_gru_seq128 with a KL limit per update: target_kl .03 (stop at 0.045)"},
    "seq128_epochs8_kl02": {"agent": changed(SEQ128, update_epochs=8, target_kl=0.02),
                            "why": "lowsample_mlp_gru_seq128 with twice the epochs per rollout (8), held by a KL "
                                   "limit (target_kl .02, stop at 0.03): more reuse of each sample, a bounded step"},
    # Issue 56's ladder: one difference at a time from the symbolic default (lowsample_mlp) toward the paper's pixel
    # agent (configs/crafter_ppo_paper_agent.yaml); docs/agent.md has the table.
    "ladder_rollout": {"agent": changed(LOW_SAMPLE, num_envs=8, num_steps=512, update_epochs=3),
                       "why": "ladder rung 1: lowsample_mlp with the paper's rollout shape and epochs (8 envs x 512 "
                              "steps, 3 epochs x 8 minibatches)"},
    # The other rungs keep LOW_SAMPLE's PPO and change the network (and, last, the observation). The conv rungs run
    # their 3x3 convolutions as patches x kernel (execution.conv_as_matmul): vmapped over seeds, XLA:CPU makes
    # grouped convolutions of nn.Conv, many times slower than these batched matrix products.
    "ladder_trunk": {"agent": changed(LOW_SAMPLE, NetworkConfig(kind="trunk")),
                     "why": "ladder rung 2: lowsample_mlp with the paper's trunk and shared heads on the flat vector "
                            "(LayerNorm -> Dense 256 -> ReLU -> LayerNorm -> Dense 1024 -> ReLU -> policy and value "
                            "heads, network.kind trunk; 629,396 parameters)"},
    "ladder_grid": {"agent": changed(LOW_SAMPLE, NetworkConfig(kind="grid"), {"conv_as_matmul": True}),
                    "why": "ladder rung 3: the paper's encoder on the symbolic grid: the 7 x 9 x 21 map through "
                           "IMPALA stacks with GroupNorm (32, 64, 64; 2 residual blocks each; SAME pools 7x9 -> 4x5 "
                           "-> 2x3 -> 1x2), the rest of the vector joined before rung 2's trunk (network.kind grid; "
                           "716,606 parameters); conv_as_matmul: the convolutions as batched matrix products"},
    # Drawn at 3 x 3 pixels a cell (21 x 27): at the 49 x 63 of cell 7 (the pixel view's scale) a CPU trained 16 env
    # steps/s, about 17 hours for the rung's 2 x 0.5M; at cell 3 the convolutions cost about a quarter.
    "ladder_drawn": {"agent": changed(LOW_SAMPLE, NetworkConfig(kind="drawn", drawn=DrawnNet(cell=3)),
                                     {"conv_as_matmul": True}),
                     "why": "ladder rung 4: the symbolic map drawn as a 21 x 27 x 3 image (each cell a 3 x 3 patch of "
                            "a fixed colour per block and mob) through the pixel network's structure at (16, 32, 32) "
                            "channels (GroupNorm, 2 residual blocks a stack), the rest of the vector joined before "
                            "the trunk (network.kind drawn, network.drawn.cell 3; 485,534 parameters); "
                            "conv_as_matmul: the convolutions as batched matrix products"},
    "ladder_pixels_narrow": {"agent": changed(LOW_SAMPLE, NetworkConfig(kind="conv", conv=ConvNet(
                                 channels=(16, 32, 32), norm=True, width=256, head_width=1024)),
                                 {"conv_as_matmul": True}),
                             "observation": "pixels",
                             "why": "ladder rung 5: pixel observations (63 x 63 x 3) through a narrower copy of the "
                                    "paper's network: IMPALA (16, 32, 32) with GroupNorm, LayerNorm -> Dense 256 -> "
                                    "LayerNorm -> Dense 1024, shared heads (909,170 parameters; the paper's: "
                                    "3,950,738); conv_as_matmul: the convolutions as batched matrix products"},
}


# ---------------------------------------------------------------------------------------------------- running
def recipe_config(name: str, seeds: int) -> tuple[TrainerConfig, list[int], dict[str, list[float]]]:
    """(the TrainerConfig, one seed per agent, the traced hyperparameters per agent) of a recipe."""
    recipe = RECIPES[name]
    cfg = recipe["agent"]
    grid = recipe.get("grid", {})
    points = max((len(v) for v in grid.values()), default=1)
    agent_seeds = [s for _ in range(points) for s in range(seeds)]
    hparams = {k: [v[i] for i in range(points) for _ in range(seeds)] for k, v in grid.items()}
    return dataclasses.replace(cfg, num_agents=len(agent_seeds)), agent_seeds, hparams


def observation(name: str) -> str:
    """The recipe's CrafterEnv observation: its optional "observation" key ("symbolic" or "pixels"), else symbolic."""
    return RECIPES[name].get("observation", "symbolic")


def recipe_trainer(name: str, seeds: int):
    """(config, agent seeds, traced hyperparameters, env, bank, rows, trainer): a recipe's trainer in the original
    game (one bank row, every env slot on it)."""
    cfg, agent_seeds, hparams = recipe_config(name, seeds)
    env = CrafterEnv(observation=observation(name))
    bank = make_params([CrafterConfig.original()])
    rows = jnp.zeros(cfg.ppo.num_envs, jnp.int32)
    return cfg, agent_seeds, hparams, env, bank, rows, make_trainer(env, cfg)


def train_recipe(name: str, seeds: int, steps: int, work: Path, updates_per_chunk: int, checkpoint_minutes: float,
                 log=print) -> dict:
    """Train one recipe to `steps` env steps per agent (resuming from `work` if a checkpoint is there); returns
    the row: the recipe, every chunk's episode sums per agent, and the timings."""
    cfg, agent_seeds, hparams, env, bank, rows, trainer = recipe_trainer(name, seeds)
    total_updates = -(-steps // cfg.steps_per_update)
    work.mkdir(parents=True, exist_ok=True)
    newest = newest_checkpoint(work)
    if newest is not None:
        meta = load_metadata(newest)
        ts = trainer.restore(newest, bank, rows, seeds=agent_seeds)
        chunks, timing = meta["chunks"], meta["timing"]
        log(f"{name}: resumed at update {chunks[-1]['update']} of {total_updates} ({newest})")
    else:
        ts = trainer.init(bank, rows, seeds=agent_seeds, hparams=hparams)
        chunks, timing = [], {"compile_s": [], "train_s": 0.0, "train_steps": 0, "sessions": []}
    env_now = environment()  # runs git: once per session
    timing["sessions"].append({"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               **{k: env_now[k] for k in ("commit", "dirty", "cpu", "host")}})
    t0 = time.perf_counter()
    compiled = trainer.compile_train_chunk(ts, bank, rows, num_updates=updates_per_chunk)
    timing["compile_s"].append(time.perf_counter() - t0)
    done_updates = chunks[-1]["update"] if chunks else 0
    last_save = time.monotonic()
    with Checkpoints(work, keep=1) as checkpoints:
        while done_updates < total_updates:
            t0 = time.perf_counter()
            ts, metrics = compiled(ts, bank, rows)
            m = to_host(metrics)
            dt = time.perf_counter() - t0
            done_updates += updates_per_chunk
            timing["train_s"] += dt
            timing["train_steps"] += updates_per_chunk * cfg.steps_per_update * len(agent_seeds)
            r = m.rows
            chunks.append({"update": done_updates, "env_steps": int(m.env_steps[0]),
                           "episodes": r.episodes[:, 0].tolist(), "return_sum": r.return_sum[:, 0].tolist(),
                           "length_sum": r.length_sum[:, 0].tolist(),
                           "achievements": r.achievement_counts[:, 0].tolist(),
                           "entropy": m.losses.entropy.mean(axis=1).tolist(),
                           "approx_kl": m.losses.approx_kl.mean(axis=1).tolist(),
                           "kl_stopped": m.losses.kl_stopped.mean(axis=1).tolist()})
            if len(chunks) % 10 == 0 or done_updates >= total_updates:
                score = crafter_score(_pool(chunks[-10:])["success"])
                log(f"{name}: {chunks[-1]['env_steps']:,} steps/agent, score of the last chunks "
                    f"{np.round(score, 1).tolist()}, {timing['train_steps'] / timing['train_s']:,.0f} steps/s "
                    f"(all agents)")
            if time.monotonic() - last_save > checkpoint_minutes * 60 or done_updates >= total_updates:
                checkpoints.save(done_updates, ts, {"chunks": chunks, "timing": timing})
                last_save = time.monotonic()
    return {"recipe": name, "seeds": seeds, "why": RECIPES[name]["why"], "observation": observation(name),
            "ppo": _jsonable(dataclasses.asdict(cfg)),
            "agent_seeds": agent_seeds, "hparams": hparams, "grid": RECIPES[name].get("grid", {}),
            "updates_per_chunk": updates_per_chunk, "steps_per_update": cfg.steps_per_update,
            "achievement_names": list(env.achievement_names), "chunks": chunks, "timing": timing}


def _jsonable(d: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


# ---------------------------------------------------------------------------------------------------- summaries
def _pool(chunks: list[dict]) -> dict:
    """Episode sums over `chunks`, per agent: episodes [G], success [G, A], mean return [G], mean length [G]."""
    eps = np.sum([c["episodes"] for c in chunks], axis=0).astype(np.float64)
    ach = np.sum([c["achievements"] for c in chunks], axis=0).astype(np.float64)
    ret = np.sum([c["return_sum"] for c in chunks], axis=0)
    length = np.sum([c["length_sum"] for c in chunks], axis=0)
    return {"episodes": eps, "success": mean_or_nan(ach, eps[:, None]), "reward": mean_or_nan(ret, eps),
            "length": mean_or_nan(length, eps)}


def _groups(row: dict) -> list[tuple[str, list[int]]]:
    """(label, agent indices) per grid point: the agents that differ only in their seed."""
    hp = row["hparams"]
    labels = [", ".join(f"{k} {hp[k][i]:g}" for k in sorted(hp)) for i in range(len(row["agent_seeds"]))]
    out: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        out.setdefault(label, []).append(i)
    return list(out.items())


def summarise(row: dict) -> list[dict]:
    """One summary per grid point (one for a recipe without a grid): every window's score, reward and success per
    seed and as mean +/- std over seeds, the learning curve, and the cost."""
    names = row["achievement_names"]
    chunks = row["chunks"]
    steps_at = np.array([c["env_steps"] for c in chunks])
    out = []
    for label, agents in _groups(row):
        s = {"recipe": row["recipe"] + (f" [{label}]" if label else ""), "seeds": len(agents),
             "env_steps": int(steps_at[-1]) if len(steps_at) else 0, "windows": {}, "curve": []}
        for window, (lo, hi) in WINDOWS.items():
            sel = [c for c, t in zip(chunks, steps_at) if lo < t <= hi]
            if not sel or steps_at[-1] < hi:
                continue
            p = _pool(sel)
            score = crafter_score(p["success"][agents])
            s["windows"][window] = {
                "from_step": int(min(t for t in steps_at if t > lo) - row["steps_per_update"] * row["updates_per_chunk"]),
                "to_step": int(max(t for t in steps_at if t <= hi)),
                "score_per_seed": score.tolist(), "score_mean": float(np.mean(score)),
                "score_std": float(np.std(score)), "reward_mean": float(np.nanmean(p["reward"][agents])),
                "reward_std": float(np.nanstd(p["reward"][agents])),
                "episodes_per_seed": p["episodes"][agents].astype(int).tolist(),
                "success_mean": {n: float(v) for n, v in zip(names, np.nanmean(p["success"][agents], axis=0))}}
        for b in range(int(np.ceil(steps_at[-1] / CURVE_BIN)) if len(steps_at) else 0):
            sel = [c for c, t in zip(chunks, steps_at) if b * CURVE_BIN < t <= (b + 1) * CURVE_BIN]
            if sel:
                score = crafter_score(_pool(sel)["success"][agents])
                s["curve"].append({"to_step": int(max(t for t in steps_at if t <= (b + 1) * CURVE_BIN)),
                                   "score_per_seed": [None if np.isnan(x) else float(x) for x in score]})
        t = row["timing"]
        s["cost"] = {"steps_per_s_all_agents": t["train_steps"] / max(t["train_s"], 1e-9),
                     "agents_in_program": len(row["agent_seeds"]), "train_s": t["train_s"],
                     "compile_s": t["compile_s"], "sessions": t["sessions"]}
        out.append(s)
    return out


# ---------------------------------------------------------------------------------------------------- outputs
def results_path(out_dir: Path, suffix: str) -> Path:
    return out_dir / f"{NAME}_{platform_tag()}{suffix}"


def load_rows(out_dir: Path) -> list[dict]:
    path = results_path(out_dir, ".json")
    return json.loads(path.read_text())["rows"] if path.exists() else []


def save(out_dir: Path, rows: list[dict], note: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: (list(RECIPES).index(r["recipe"]) if r["recipe"] in RECIPES else 99,
                                       r["seeds"]))
    summaries = [s for r in rows for s in summarise(r)]
    payload = {"benchmark": NAME, "environment": environment(), "protocol_steps": PROTOCOL_STEPS,
               "windows": WINDOWS, "load_note": note, "summaries": summaries, "rows": rows}
    results_path(out_dir, ".json").write_text(json.dumps(payload, indent=1))
    results_path(out_dir, ".md").write_text(table(summaries) + "\n")
    plot(summaries, results_path(out_dir, ".png"))


def table(summaries: list[dict]) -> str:
    chain = ("collect_stone", "make_stone_pickaxe", "collect_iron")
    headers = ["recipe", "seeds", "trained to", "score 0-0.5M %", "score 0-1M %", "score 0.96-1.96M %", "reward 0.96-1.96M",
               *[f"{a} 0.96-1.96M" for a in chain], "steps/s (all agents)", "agents", "compile s"]
    body = []
    for s in summaries:
        w = s["windows"]

        def score(k):
            return f"{w[k]['score_mean']:.1f} +/- {w[k]['score_std']:.1f}" if k in w else "n/a"
        scored = w.get("scored_1M")
        body.append([s["recipe"], s["seeds"], f"{s['env_steps'] / 1e6:.2f}M", score("first_0.5M"), score("first_1M"), score("scored_1M"),
                     f"{scored['reward_mean']:.2f}" if scored else "n/a",
                     *[f"{100 * scored['success_mean'][a]:.1f}%" if scored else "n/a" for a in chain],
                     f"{s['cost']['steps_per_s_all_agents']:,.0f}", s["cost"]["agents_in_program"],
                     f"{np.mean(s['cost']['compile_s']):.0f}"])
    return markdown_table(headers, body)


def plot(summaries: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for s in summaries:
        if not s["curve"]:
            continue
        x = np.array([c["to_step"] for c in s["curve"]]) / 1e6
        y = np.array([[np.nan if v is None else v for v in c["score_per_seed"]] for c in s["curve"]])
        mean = np.nanmean(y, axis=1)
        line, = ax.plot(x, mean, label=f"{s['recipe']} ({s['seeds']} seeds)")
        ax.fill_between(x, np.nanmin(y, axis=1), np.nanmax(y, axis=1), color=line.get_color(), alpha=0.2)
    ax.axvline(0.96, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("env steps (millions); the scored 1M of the 1.96M protocol starts at the dashed line")
    ax.set_ylabel("Crafter score % of episodes finished in each 0.1M steps")
    ax.set_title("Plain PPO in Craftax-Classic (symbolic unless a recipe names pixels): mean over seeds, band min-max")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipes", default="", help="comma-separated recipe names (see --list)")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per recipe (per grid point)")
    ap.add_argument("--steps", type=int, default=PROTOCOL_STEPS, help="env steps per agent (the protocol's 1.96M)")
    ap.add_argument("--updates-per-chunk", type=int, default=8, help="PPO updates per compiled chunk")
    ap.add_argument("--checkpoint-minutes", type=float, default=10.0)
    ap.add_argument("--work-dir", default=str(ROOT / "runs" / NAME), help="checkpoints of unfinished recipes")
    ap.add_argument("--out-dir", default=str(RESULTS))
    ap.add_argument("--load-note", default="", help="what else ran on the machine (recorded with the rows)")
    ap.add_argument("--list", action="store_true", help="print the recipes and exit")
    ap.add_argument("--report", action="store_true", help="rewrite the table and PNG from the JSON and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, r in RECIPES.items():
            print(f"{name}: {r['why']}\n    ppo: {r['ppo']}" + (f"\n    grid: {r['grid']}" if r.get("grid") else "")
                  + (f"\n    observation: {r['observation']}" if "observation" in r else ""))
        return 0
    out_dir = Path(args.out_dir)
    rows = load_rows(out_dir)
    if args.report:
        save(out_dir, rows, args.load_note)
        print(table([s for r in rows for s in summarise(r)]))
        return 0
    names = [n for n in args.recipes.split(",") if n]
    unknown = [n for n in names if n not in RECIPES]
    if unknown or not names:
        ap.error(f"--recipes: {', '.join(unknown) or '(none given)'}; choose from {', '.join(RECIPES)}")
    if args.steps < 1 or args.seeds < 1:
        ap.error("--steps and --seeds must be at least 1")
    for name in names:
        if any(r["recipe"] == name and r["seeds"] == args.seeds and r["chunks"][-1]["env_steps"] >= args.steps
               for r in rows):
            print(f"{name} ({args.seeds} seeds): done already", flush=True)
            continue
        # One work dir per (recipe, seeds), whatever --steps: a row screened to 1M continues to 1.96M by resume.
        work = Path(args.work_dir) / f"{name}_s{args.seeds}"
        row = train_recipe(name, args.seeds, args.steps, work, args.updates_per_chunk, args.checkpoint_minutes,
                           log=lambda m: print(m, flush=True))
        row["load_note"] = args.load_note
        rows = [r for r in load_rows(out_dir) if not (r["recipe"] == name and r["seeds"] == args.seeds)] + [row]
        save(out_dir, rows, args.load_note)
        for s in summarise(row):
            print(json.dumps({k: s[k] for k in ("recipe", "seeds", "env_steps")} |
                             {w: round(v["score_mean"], 2) for w, v in s["windows"].items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
