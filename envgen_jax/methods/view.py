"""What the loop and a method both see of a run: its configuration, game and loop state, and the helpers both use
(the bank builder, the current LLM configurations, the picture writer).

Part of the method contract: the run's driver (`envgen_jax.run.loop`) builds one view per run and hands it to the
method (`envgen_jax.methods.base.Method`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable


def _no_status(text: str) -> None:
    pass


@dataclasses.dataclass
class RunView:
    """cfg: the RunConfig; out: the run directory; game: `games.get(cfg.env)`; env: its environment; state: the
    loop's LoopState, live (designs, evals, env_steps, phase_updates); status(text): the progress line (the loop
    points it at its bar once the bar exists)."""

    cfg: Any
    out: Path
    game: Any
    env: Any
    state: Any
    status: Callable[[str], None] = _no_status

    @property
    def config_cls(self) -> type:
        return self.game.config_cls

    def make_params(self, configs: list, **kwargs):
        """The bank of `configs` (`env.make_params`; `capacity=` pads it to a fixed number of rows)."""
        return self.env.make_params(configs, **kwargs)

    def generated(self, dicts: list) -> list:
        """Configurations of generated environments: those that keep the original episode length get the LLM
        environments' (`schedule.llm_episode_length`; Crafter only)."""
        default_length = getattr(self.config_cls.original(), "episode_length", None)
        out = []
        for c in dicts:
            cfg = self.config_cls.from_dict(c)
            if default_length is not None and cfg.episode_length == default_length:
                cfg = dataclasses.replace(cfg, episode_length=self.cfg.schedule.llm_episode_length)
            out.append(cfg)
        return out

    def llm_configs(self, record: dict | None = None) -> list:
        """The configurations of a design record (default: the latest), all designers in order, with the LLM
        episode length applied."""
        record = record or (self.state.designs[-1] if self.state.designs else None)
        if record is None:
            return []
        return self.generated([c for d in record["designers"] for c in d["configs"]])

    def render(self, configs: list, path: Path) -> None:
        """A picture of a world of each configuration, through the game's renderer."""
        self.game.render(configs, path, seed=self.cfg.seed, options=self.cfg.game_options)

    def picture_levels(self, cycle: int, rows: list, configs: list, extra: dict | None = None) -> None:
        """environments/cycle_<c>_top_levels.{json,png}: seed 0's highest-scored rows, through the game's renderer."""
        folder = self.out / "environments"
        folder.mkdir(exist_ok=True)
        (folder / f"cycle_{cycle + 1}_top_levels.json").write_text(json.dumps(
            {"rows": rows, "configs": [c.to_dict() for c in configs],
             **{k: [float(x) for x in v] for k, v in (extra or {}).items()}}, indent=2))
        self.render(configs, folder / f"cycle_{cycle + 1}_top_levels.png")
