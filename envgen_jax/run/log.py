"""A run's records: metrics.jsonl (one line per compiled chunk) and TensorBoard scalars, in one place.

Messages go through stdlib logging (logger "envgen_jax"); `configure_console()` shows them on stdout, as the
command line does.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import numpy as np

from envgen_jax.trainer.metrics import nan_to_none  # noqa: F401 -- re-exported for the loop


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and os.replace: a kill mid-write leaves the
    previous file whole (a run's phases and compile record; the resumable benchmarks' results)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)

logger = logging.getLogger("envgen_jax.run")



class _Stdout(logging.StreamHandler):
    """Writes to the sys.stdout of the moment (so a replaced stdout, as under pytest's capsys, is honoured)."""

    def __init__(self):
        super().__init__(sys.stdout)

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value):
        pass


def configure_console(level: int = logging.INFO) -> None:
    """Show envgen_jax's messages on stdout, as plain lines (idempotent)."""
    root = logging.getLogger("envgen_jax")
    if not any(isinstance(h, _Stdout) for h in root.handlers):
        handler = _Stdout()
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
    root.setLevel(level)
    # Shown once: not also through the root logger, which absl (imported by orbax) configures with a stderr handler
    # on its first log call, printing every message a second time as "INFO:envgen_jax.run:...".
    root.propagate = False


class Prefixed(logging.LoggerAdapter):
    """A logger whose messages start with `prefix` (the study's "[method] ...")."""

    def __init__(self, prefix: str, base: logging.Logger = logger):
        super().__init__(base, {})
        self.prefix = prefix

    def process(self, msg, kwargs):
        return f"{self.prefix}{msg}", kwargs


class RunLog:
    """metrics.jsonl and TensorBoard of one run directory."""

    def __init__(self, out: Path, tensorboard: bool):
        self.out, self.tensorboard = Path(out), tensorboard
        self._writer = None

    def truncate(self, keep_lines: int) -> None:
        """Drop the chunks recorded after the checkpoint a run starts from."""
        path = self.out / "metrics.jsonl"
        if path.exists():
            lines = path.read_text().splitlines(keepends=True)
            path.write_text("".join(lines[:keep_lines]))

    def chunk(self, record: dict, returns, lengths, episodes) -> None:
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        writer = self._tb()
        if writer is not None:
            step = record["env_steps"]
            if np.any(episodes > 0):
                writer.add_scalar("train/episode_return", float(np.nanmean(returns)), step)
                writer.add_scalar("train/episode_length", float(np.nanmean(lengths)), step)
            writer.add_scalar("train/steps_per_second", record["steps_per_second"], step)
            for k, v in record["losses"].items():
                writer.add_scalar(f"loss/{k}", v, step)
            buffer = record.get("buffer")  # level replay: means over seeds
            if buffer is not None:
                for name in ("seen", "replay_share", "mean_staleness"):
                    values = [v for v in buffer[f"{name}_per_seed"] if v is not None]
                    if values:
                        writer.add_scalar(f"buffer/{name}", float(np.mean(values)), step)
                quartiles = [q for q in buffer["score_quartiles_per_seed"] if q is not None]
                if quartiles:
                    for i, name in enumerate(("min", "q25", "median", "q75", "max")):
                        writer.add_scalar(f"buffer/score_{name}", float(np.mean([q[i] for q in quartiles])), step)

    def evaluation(self, env_steps: int, report) -> None:
        writer = self._tb()
        if writer is not None:
            for name, value in report.success_mean.items():
                if not np.isnan(value):
                    writer.add_scalar(f"eval_success/{name}", 100 * value, env_steps)
            if not np.isnan(report.score_mean):  # the game's score: eval/crafter_score for Crafter
                writer.add_scalar(f"eval/{report.score_key}", report.score_mean, env_steps)

    def _tb(self):
        if not self.tensorboard:
            return None
        if self._writer is None:
            from tensorboardX import SummaryWriter  # only runs that ask for TensorBoard pay its import
            self._writer = SummaryWriter(str(self.out / "tb"))
        return self._writer

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
