"""PPO trainer: one jit-compiled training chunk over a bank of env configs, seeds vmapped.

  ppo.py         PPOConfig, TrainState, Trainer / make_trainer (init, train_chunk), compute_gae
  networks.py    ActorCritic (MLP for symbolic obs, IMPALA-style conv for pixels), categorical policy
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
from envgen_jax.trainer.ppo import PPOConfig, Trainer, TrainState, compute_gae, make_trainer, select_seeds

__all__ = [
    "PPOConfig", "Trainer", "TrainState", "make_trainer", "compute_gae", "select_seeds",
    "ChunkMetrics", "LossStats", "RowStats", "crafter_score", "success_rates", "summarize", "summarize_rows",
    "pool_rows", "pool_seeds", "timed", "to_host",
    "Evaluator", "EvalReport", "make_evaluator", "report_from_stats",
    "Checkpoints", "newest_checkpoint", "save_checkpoint", "restore_checkpoint", "load_metadata",
]
