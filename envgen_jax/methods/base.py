"""What the methods share: the paper's cycle of phases and the design step's context."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, Callable

from envgen_jax.plan import Phase

logger = logging.getLogger("envgen_jax.run")


def llm_cycle(cfg, c: int) -> list[Phase]:
    """Design, then train in the LLM environments and in the original game (or both at once, `mixing: mixed`)."""
    s = cfg.schedule
    if s.mixing == "mixed":
        return [Phase("design", c), Phase("train", c, "mixed", cfg.cycle_updates())]
    return [Phase("design", c), Phase("train", c, "llm", cfg.updates_for(s.llm_env_steps)),
            Phase("train", c, "original", cfg.updates_for(s.original_env_steps))]


@dataclasses.dataclass
class DesignContext:
    """One cycle's design step as a method sees it.

    cycle: 0-based; cycles: how many; n: environments per designer; num_designers: 1 (pooled) or one per seed;
    feedback: per designer, achievement -> (mean %, std %) from the previous evaluation (None in cycle 1);
    previous: the design records of earlier cycles; designers(): the LLM designers (made on first use);
    on_llm_call(seconds, n): the driver's bookkeeping after each LLM call that wrote n environments; status(text):
    progress line; learnability_notes: per designer, a note per environment of its previous design (envgen_sfl),
    or None; inside: per designer, per environment of its previous design, the agent's success (%) per achievement
    inside that environment while it trained there (None in cycle 1 or when not measured)."""

    cfg: Any
    cycle: int
    cycles: int
    n: int
    num_designers: int
    feedback: list | None
    previous: list
    config_cls: type
    designers: Callable[[], list]
    on_llm_call: Callable[[float, int], None]
    status: Callable[[str], None] = lambda text: None
    learnability_notes: list | None = None
    inside: list | None = None

    def ask_each(self, request: Callable[[Any, Any], Any], n: int | None = None) -> list[dict]:
        """`request(designer, feedback_or_None) -> Design` for each designer in order, timed and counted; `n`:
        the environments each request asks for (default `self.n`), for the progress line."""
        out = []
        feedback = self.feedback
        for i, designer in enumerate(self.designers()):
            self.status(f"LLM step: asking for {n or self.n} environments ({self.cfg.method}, cycle {self.cycle + 1})")
            start = time.monotonic()
            design = request(designer, feedback[i] if feedback else None)
            self.on_llm_call(time.monotonic() - start, len(design.configs))
            record = {"configs": [c.to_dict() for c in design.configs], "purposes": list(design.purposes)}
            if any(getattr(designer, "targets", None) or ()):  # llm.targets: what each environment says it trains
                record["targets"] = [list(t) for t in designer.targets]
            out.append(record)
        return out
