"""What the agent learned inside each LLM environment of each cycle, from the loop state's per-row training stats
(`LoopState.env_learning`, summed by the loop as it trains): the design step tells the next cycle's designers
(`DesignContext.inside`) and the report shows it (report.json's `environment_learning`)."""

from __future__ import annotations

import numpy as np

from envgen_jax.trainer.metrics import RowStats, mean_or_nan, nan_to_none, quiet_nan, success_rates


def environment_learning(state, names) -> list[dict]:
    """Per cycle and LLM environment: what the agent did inside that environment while training in it.

    From the cycle's LLM-environment phase (bank row 1 + i is the i-th LLM environment, designers in order): per seed,
    success rates pooled over the episodes that finished in that row; then the mean over the seeds that finished any
    (with one designer per seed, a row is only run by its own seed)."""
    out = []
    for entry in state.env_learning:
        design = next(d for d in state.designs if d["cycle"] == entry["cycle"])
        stats = RowStats(**{k: np.asarray(v) for k, v in entry["stats"].items()})
        rates = 100 * success_rates(stats)                              # [S, K, A]
        returns = mean_or_nan(stats.return_sum, stats.episodes)         # [S, K]
        envs = [{"purpose": p, "config": c} for d in design["designers"] for p, c in zip(d["purposes"], d["configs"])]
        for row, env in enumerate(envs, start=1):
            with quiet_nan():  # a row no seed finished an episode in stays None
                success, reward = np.nanmean(rates[:, row], axis=0), np.nanmean(returns[:, row])
            env.update(row=row, episodes_per_seed=np.asarray(stats.episodes)[:, row].tolist(), reward=nan_to_none(reward),
                       success={n: nan_to_none(v) for n, v in zip(names, success)})
        out.append({"cycle": entry["cycle"], "phase": entry["phase"], "environments": envs})
    return out
