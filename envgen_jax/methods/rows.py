"""Which bank row each env slot runs: a pure function of the slot counts and the phase.

Bank layout: row 0 is the original game, then each designer's `envs_per_call` LLM configurations in order.
"""

from __future__ import annotations

import numpy as np

ORIGINAL_ROW = 0


def assign_rows(where: str, num_envs: int, seeds: int, num_designers: int, envs_per_call: int,
                original_share: float, has_llm_configs: bool) -> np.ndarray:
    """[num_envs] rows (one designer), or [seeds, num_envs] (a designer per seed, each seed on its own rows; in every
    phase, the original game's too, so that all phases run one compiled chunk).

    'llm': slots spread evenly over the LLM configurations; 'mixed': the first round(num_envs * original_share) slots
    in the original game, the rest spread over the LLM configurations; anything else (or no LLM configuration yet):
    every slot in the original game."""
    if where not in ("llm", "mixed") or not has_llm_configs:
        return np.zeros(num_envs if num_designers == 1 else (seeds, num_envs), np.int32)
    first_llm = round(num_envs * original_share) if where == "mixed" else 0
    slot = np.arange(num_envs)
    llm_rows = 1 + (slot - first_llm) % envs_per_call
    if num_designers == 1:
        return np.where(slot < first_llm, ORIGINAL_ROW, llm_rows).astype(np.int32)
    rows = [np.where(slot < first_llm, ORIGINAL_ROW, llm_rows + i * envs_per_call) for i in range(seeds)]
    return np.stack(rows).astype(np.int32)
