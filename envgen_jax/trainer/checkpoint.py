"""Orbax checkpoints of the whole TrainState (params, optimiser, vector-env states, keys, counters) + JSON metadata.

    save_checkpoint(path, ts, metadata={"cycle": 3, "config": {...}})
    ts = restore_checkpoint(path, like=trainer.abstract_state(bank, rows))   # or like=<a concrete TrainState>
    meta = load_metadata(path)

Layout: `<path>/state/` (orbax StandardCheckpointer) and `<path>/metadata.json`. A restored TrainState continues
exactly as the uninterrupted run would (same keys, same env states, same optimiser moments).
`path` is made absolute; an existing checkpoint at `path` is replaced only with overwrite=True.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

STATE_DIR = "state"
METADATA_FILE = "metadata.json"


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def save_checkpoint(path: str | os.PathLike, train_state: Any, metadata: dict | None = None,
                    overwrite: bool = False) -> Path:
    path = Path(path).absolute()
    if path.exists():
        if not overwrite:
            raise FileExistsError(f"checkpoint exists: {path} (pass overwrite=True)")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    # Host copy first: orbax handed arrays whose computation was still in flight has deadlocked on CPU.
    train_state = jax.device_get(train_state)
    ckptr = ocp.StandardCheckpointer()
    ckptr.save(path / STATE_DIR, train_state)
    ckptr.wait_until_finished()
    ckptr.close()
    with open(path / METADATA_FILE, "w") as f:
        json.dump(metadata or {}, f, indent=2, default=_json_default)
    return path


def restore_checkpoint(path: str | os.PathLike, like: Any) -> Any:
    """The saved pytree, with the structure, shapes and dtypes of `like` (abstract or concrete)."""
    path = Path(path).absolute()
    abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), like)
    ckptr = ocp.StandardCheckpointer()
    try:
        return ckptr.restore(path / STATE_DIR, abstract)
    finally:
        ckptr.close()


def load_metadata(path: str | os.PathLike) -> dict:
    with open(Path(path).absolute() / METADATA_FILE) as f:
        return json.load(f)
