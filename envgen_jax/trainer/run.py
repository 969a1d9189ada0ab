"""PPO alone on the original Crafter (Craftax-Classic), with a report of learning over a random policy.

    python -m envgen_jax.trainer.run --config configs/ppo_smoke.yaml [--out runs/ppo_smoke]

or from Python: `run_ppo(load_run_config("configs/ppo_smoke.yaml"))` (returns the report dict).

The random policy is evaluated by the same compiled evaluator as the trained one (mode="random"), on the same
number of episodes, so the comparison is like for like.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from envgen_jax.trainer.checkpoint import save_checkpoint
from envgen_jax.trainer.evaluate import make_evaluator
from envgen_jax.trainer.metrics import pool_rows, pool_seeds, summarize, timed, to_host
from envgen_jax.trainer.ppo import PPOConfig, make_trainer


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A PPO-only run: `num_chunks` x `updates_per_chunk` updates, then evaluation against a random policy."""

    ppo: PPOConfig = PPOConfig()
    num_chunks: int = 4
    """host iterations; metrics are printed once per chunk"""
    updates_per_chunk: int = 10
    """PPO updates per compiled chunk"""
    observation: str = "symbolic"
    """CrafterEnv observation: symbolic | pixels"""
    eval_num_envs: int = 32
    """evaluation envs per seed"""
    eval_episodes_per_env: int = 1
    """episodes counted per evaluation env"""
    eval_max_steps: int = 2000
    """evaluation step budget (episodes still running then are not counted)"""
    eval_seed: int = 12345
    """key of the evaluation episodes (the same for the random and the trained policy)"""
    eval_mode: str = "sample"
    """trained-policy action choice: sample | greedy"""
    out_dir: str | None = None
    """if set: report.json and the final checkpoint are written here"""

    @property
    def total_updates(self) -> int:
        return self.num_chunks * self.updates_per_chunk


def load_run_config(path: str | Path, **overrides: Any) -> RunConfig:
    with open(path) as f:
        raw = yaml.safe_load(f) or {}
    raw.update(overrides)
    ppo = dict(raw.pop("ppo", {}) or {})
    if "conv_channels" in ppo:
        ppo["conv_channels"] = tuple(ppo["conv_channels"])
    known = {f.name for f in dataclasses.fields(RunConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"unknown run config keys: {unknown}")
    run = RunConfig(**raw)
    if ppo.get("anneal_lr") and not ppo.get("total_updates"):
        ppo["total_updates"] = run.total_updates
    return dataclasses.replace(run, ppo=PPOConfig(**ppo))


def _fmt(x, spec=".2f"):
    return "  n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)


def run_ppo(cfg: RunConfig, log=print, env=None, bank=None) -> dict:
    """Train, evaluate against a random policy, print and return the report. `env`/`bank` default to CrafterEnv
    and a one-row bank of the original config (tests pass a probe env)."""
    if env is None:
        from envgen_jax.envs.crafter.config import CrafterConfig
        from envgen_jax.envs.crafter.env import CrafterEnv, make_params

        env = CrafterEnv(observation=cfg.observation)
        bank = make_params([CrafterConfig.original()])
    names = env.achievement_names
    shown = [a for a in ("collect_wood", "place_table") if a in names] or list(names[:2])
    p = cfg.ppo
    rows = jnp.zeros(p.num_envs, jnp.int32)
    trainer = make_trainer(env, p)
    log(f"PPO on {type(env).__name__} (bank row 0): {p.num_seeds} seed(s) x {p.num_envs} envs x {p.num_steps} steps, "
        f"{cfg.num_chunks} chunks x {cfg.updates_per_chunk} updates = "
        f"{cfg.total_updates * p.steps_per_update:,} env steps per seed; device {jax.devices()[0].platform}")

    ts, t_init = timed(trainer.init, bank, rows)
    log(f"init (compile + reset): {t_init:.1f}s")
    history = []
    for chunk in range(cfg.num_chunks):
        (ts, metrics), dt = timed(trainer.train_chunk, ts, bank, rows, num_updates=cfg.updates_per_chunk)
        m = to_host(metrics)
        steps = cfg.updates_per_chunk * p.steps_per_update * p.num_seeds
        s = summarize(pool_seeds(pool_rows(m.rows)), names)
        rec = {"chunk": chunk, "seconds": dt, "steps_per_second": steps / dt, "env_steps": int(m.env_steps[0]),
               "episodes": s["episodes"], "mean_return": s["mean_return"], "mean_length": s["mean_length"],
               "crafter_score": s["crafter_score"], "success": s["success"],
               "entropy": float(np.mean(m.losses.entropy)), "value_loss": float(np.mean(m.losses.value_loss))}
        history.append(rec)
        note = " (includes compile)" if chunk == 0 else ""
        log(f"chunk {chunk:3d} steps {rec['env_steps']:>9,}  {dt:6.1f}s {rec['steps_per_second']:8.0f} sps{note}  "
            f"episodes {s['episodes']:4d}  return {_fmt(s['mean_return'])}  length {_fmt(s['mean_length'], '.0f')}  "
            + "  ".join(f"{a} {_fmt(s['success'][a])}" for a in shown) + f"  entropy {rec['entropy']:.2f}")

    evaluator = make_evaluator(trainer, cfg.eval_num_envs, cfg.eval_episodes_per_env, cfg.eval_max_steps)
    eval_rows = jnp.zeros(cfg.eval_num_envs, jnp.int32)
    rand, t_rand = timed(evaluator.evaluate, ts.params, bank, eval_rows, cfg.eval_seed, "random")
    trained, t_tr = timed(evaluator.evaluate, ts.params, bank, eval_rows, cfg.eval_seed, cfg.eval_mode)
    log(f"\nevaluation on bank row 0 ({cfg.eval_num_envs} envs x {cfg.eval_episodes_per_env} episode(s) per "
        f"seed, budget {cfg.eval_max_steps} steps; random {t_rand:.1f}s incl. compile, trained {t_tr:.1f}s)")
    log(f"{'':24s}{'random':>16s}{'PPO (' + cfg.eval_mode + ')':>18s}")
    log(f"{'episodes per seed':24s}{str(rand.episodes.tolist()):>16s}{str(trained.episodes.tolist()):>18s}")
    log(f"{'mean return':24s}{_fmt(rand.return_mean):>16s}{_fmt(trained.return_mean):>18s}")
    log(f"{'mean length':24s}{_fmt(float(np.nanmean(rand.mean_length)), '.0f'):>16s}"
        f"{_fmt(float(np.nanmean(trained.mean_length)), '.0f'):>18s}")
    log(f"{'crafter score %':24s}{_fmt(rand.crafter_score_mean):>16s}{_fmt(trained.crafter_score_mean):>18s}")
    for name in names:
        a, b = rand.success_mean[name], trained.success_mean[name]
        if (a > 0) or (b > 0):
            log(f"  {name:22s}{100 * a:15.1f}%{100 * b:17.1f}%")

    report = {
        "config": dataclasses.asdict(cfg),
        "achievement_names": list(names),
        "train": history,
        "eval_random": rand.to_dict(),
        "eval_trained": trained.to_dict(),
        "learned_over_random": {
            "return": (trained.return_mean or 0) - (rand.return_mean or 0),
            "crafter_score": trained.crafter_score_mean - rand.crafter_score_mean,
        },
        "jax_version": jax.__version__,
        "device": str(jax.devices()[0]),
    }
    log(f"\nlearning over random: return {report['learned_over_random']['return']:+.2f}, "
        f"crafter score {report['learned_over_random']['crafter_score']:+.2f} points")
    if cfg.out_dir:
        out = Path(cfg.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "report.json", "w") as f:
            json.dump(report, f, indent=2, default=float)
        save_checkpoint(out / "checkpoint", ts, {"run_config": dataclasses.asdict(cfg)}, overwrite=True)
        log(f"wrote {out / 'report.json'} and {out / 'checkpoint'}")
    return report


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="YAML file with RunConfig fields and a `ppo:` section")
    ap.add_argument("--out", default=None, help="output directory (overrides out_dir)")
    args = ap.parse_args(argv)
    overrides = {"out_dir": args.out} if args.out else {}
    run_ppo(load_run_config(args.config, **overrides))


if __name__ == "__main__":
    main()
