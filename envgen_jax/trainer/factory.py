"""`make_trainer`: the trainer for an env and a PPO config, a `train.Trainer` or with a level sampler a
`replay.ReplayTrainer`. It sits above both, so the trainers' modules import neither this nor each other's subclass."""

from __future__ import annotations

from envgen_jax.trainer.config import TrainerConfig
from envgen_jax.trainer.replay import ReplayTrainer
from envgen_jax.trainer.reuse import reused
from envgen_jax.trainer.train import Trainer


def make_trainer(env, cfg: TrainerConfig, venv=None, level_sampler=None) -> Trainer:
    """A Trainer for `env` (the project's env protocol) and `cfg`. `venv` overrides the default
    `VecEnv(env, cfg.num_envs[, cfg.resets_per_step])`. With `level_sampler` (robust PLR,
    `trainer.level_sampler.LevelSampler`) a `replay.ReplayTrainer`: where rows are `layouts.REPLAY` every episode's
    row is drawn from the sampler's distribution over the whole bank.

    Without `venv`, the trainer made earlier in this process for an equal (env, cfg, level_sampler) is returned, its
    programs already traced and compiled (`trainer.reuse`; a trainer holds no run's state)."""
    if venv is not None:  # a VecEnv of one's own: a trainer of one's own
        return _build_trainer(env, cfg, venv, level_sampler)
    return reused(("trainer", env, cfg, level_sampler), lambda: _build_trainer(env, cfg, None, level_sampler))


def _build_trainer(env, cfg: TrainerConfig, venv, level_sampler) -> Trainer:
    if level_sampler is None:
        return Trainer(env, cfg, venv)
    return ReplayTrainer(env, cfg, venv, level_sampler)
