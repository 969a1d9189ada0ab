"""PPO trainer: one jit-compiled training chunk over a bank of env configs, seeds vmapped.

  config.py      TrainerConfig (static): the algorithm (PPOAlgorithm: sizes, switches, the
                 per-agent hyperparameters' defaults), the network, the execution (ExecutionConfig: seed axis,
                 convolutions as matrix products, dtype, resets) and the agents' seeds
  encoders.py    NetworkConfig: each encoder kind's settings (fields, checks, one method building its modules)
  ppo.py         one PPO update (rollout, GAE, minibatch epochs) of one agent's TrainState; compute_gae
  train.py       Trainer: init, train_chunk (the update scanned, seeds vmapped, jit), reset_envs
  replay.py      ReplayTrainer: level replay around the update (the level sampler's state beside the agent's)
  factory.py     make_trainer: a Trainer, or with a level sampler a ReplayTrainer
  layouts.py     which rows each env slot trains in (fixed i32[N] / [S, N], RowSampler, Replay), told apart there
  level_sampler.py  robust PLR's sampler, pure functions of a pytree; learnability.py: SFL's measurement
  networks.py    ActorCritic (encoder -> [memory] -> torso -> heads), each kind's encoder module, Agent (one
                 interface for feed-forward and recurrent), categorical policy
  layers.py      the layers the encoders share: one 3x3 Conv, one ResidualBlock, the IMPALA ResNet, the MLP
  minibatch.py   an epoch's minibatches: single steps, or whole sequences for a recurrent agent
  migrations.py  checkpoints older versions wrote, read into today's states
  metrics.py     RowStats / ChunkMetrics on device; host helpers (means over finished episodes, Crafter score)
  evaluate.py    Evaluator / make_evaluator: N episodes per env in any bank/rows, EvalReport across seeds
  checkpoint.py  orbax checkpoints of the whole TrainState + JSON metadata; a run's rotate (CheckpointManager)
  probes.py      probe environments for tests
"""

from envgen_jax.trainer.checkpoint import (Checkpoints, load_metadata, newest_checkpoint, restore_checkpoint,
                                           save_checkpoint)
from envgen_jax.trainer.evaluate import EvalReport, Evaluator, make_evaluator, report_from_stats
from envgen_jax.trainer.metrics import (ChunkMetrics, LossStats, RowStats, crafter_score, pool_rows, pool_seeds,
                                        success_rates, summarize, summarize_rows, timed, to_host)
from envgen_jax.trainer.ppo import TrainerConfig, TrainState, compute_gae
from envgen_jax.trainer.factory import make_trainer
from envgen_jax.trainer.train import Trainer, select_seeds

__all__ = [
    "TrainerConfig", "Trainer", "TrainState", "make_trainer", "compute_gae", "select_seeds",
    "ChunkMetrics", "LossStats", "RowStats", "crafter_score", "success_rates", "summarize", "summarize_rows",
    "pool_rows", "pool_seeds", "timed", "to_host",
    "Evaluator", "EvalReport", "make_evaluator", "report_from_stats",
    "Checkpoints", "newest_checkpoint", "save_checkpoint", "restore_checkpoint", "load_metadata",
]
