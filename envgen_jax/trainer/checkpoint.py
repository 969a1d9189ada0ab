"""Orbax checkpoints of the whole TrainState (params, optimiser, vector-env states, keys, counters) + a JSON dict.

A checkpoint is one orbax composite checkpoint, a directory holding two items: `state/` (the TrainState,
StandardSave) and `metadata/` (the JSON dict, JsonSave). Orbax writes it into a temporary directory and renames it
once complete, so a killed save leaves no half checkpoint. A restored TrainState continues exactly as the
uninterrupted run would (same keys, same env states, same optimiser moments).

    with Checkpoints(run / "checkpoints", keep=2) as checkpoints:   # a run's numbered checkpoints (CheckpointManager)
        checkpoints.save(step, ts, metadata={"loop": {...}})         # the oldest beyond `keep` are deleted
    path = newest_checkpoint(run / "checkpoints")                    # its newest complete one, or None
    ts = restore_checkpoint(path, like=trainer.abstract_state(bank, rows))   # or like=<a concrete TrainState>
    ts = trainer.restore(path, bank, rows)      # the same, and also reads checkpoints older than the agent's fields
    meta = load_metadata(path)

    save_checkpoint(path, ts, metadata)                              # one checkpoint in a directory of its own

Paths are made absolute. Run directories written before the manager still read (see "legacy layout" below).

Several processes (`run.distributed`): every process calls `save` with the same step; each writes the shards of its
own devices and process 0 the metadata (orbax's multi-process save, into a directory every process sees), and a
restore reads the whole state on every process, whose `trainer.sharding.shard_train_state` keeps its pieces.
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

STATE, METADATA = "state", "metadata"  # the items of a checkpoint


class Checkpoints:
    """Numbered checkpoints in `directory` through orbax's CheckpointManager: the newest `keep` are kept (None: all).

    Steps must increase from save to save. Close it (or use `with`) when the run ends."""

    def __init__(self, directory: str | os.PathLike, keep: int | None = None):
        self.directory = Path(directory).absolute()
        self._manager = ocp.CheckpointManager(self.directory, options=ocp.CheckpointManagerOptions(
            preservation_policy=ocp.checkpoint_managers.LatestN(keep),
            enable_async_checkpointing=False,  # save() returns once the checkpoint is complete on disk
            cleanup_tmp_directories=True,      # the remains of a save that a kill interrupted
            create=False))                     # the directory appears with the first checkpoint (a run's mark)

    def save(self, step: int, train_state: Any, metadata: dict | None = None) -> Path:
        self._manager.save(step, args=_save_args(train_state, metadata))
        return self.directory / str(step)  # orbax's default step names: the bare number

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def close(self) -> None:
        self._manager.close()

    def __enter__(self) -> "Checkpoints":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def saved_steps(directory: str | os.PathLike) -> list[int]:
    """The steps of the complete checkpoints `Checkpoints(directory)` saved, read from the folder alone: no orbax
    manager, whose making is a collective over several processes, so one process may ask (`run.distributed`). A step
    folder without both items is left out: the rest of an old checkpoint whose deletion (the rotation) a kill cut
    short (a save cut short leaves only orbax's temporary folder, never a step)."""
    directory = Path(directory).absolute()
    return sorted(s for s in ocp.path.step.checkpoint_steps(directory)
                  if all((directory / str(s) / item).exists() for item in (STATE, METADATA)))


def newest_checkpoint(directory: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint that `Checkpoints(directory)` saved, else the legacy layout's, else None."""
    directory = Path(directory).absolute()
    if not directory.is_dir():
        return None
    newest = ocp.path.step.latest_step_metadata(directory, ocp.path.step.standard_name_format())
    return Path(newest.path) if newest is not None else _legacy_newest(directory)


def save_checkpoint(path: str | os.PathLike, train_state: Any, metadata: dict | None = None,
                    overwrite: bool = False) -> Path:
    """One checkpoint at `path`; an existing one is replaced only with overwrite=True."""
    path = Path(path).absolute()
    if path.exists():
        if not overwrite:
            raise FileExistsError(f"checkpoint exists: {path} (pass overwrite=True)")
        shutil.rmtree(path)
    with ocp.AsyncCheckpointer(ocp.CompositeCheckpointHandler()) as checkpointer:  # closed: no thread left behind
        checkpointer.save(path, args=_save_args(train_state, metadata))
        checkpointer.wait_until_finished()
    return path


def restore_checkpoint(path: str | os.PathLike, like: Any) -> Any:
    """The saved TrainState, with the structure, shapes and dtypes of `like` (abstract or concrete)."""
    path = Path(path).absolute()
    # Several processes: each reads the whole state onto its own first device (the same on every process), and
    # `trainer.sharding.shard_train_state` keeps its pieces.
    local = jax.sharding.SingleDeviceSharding(jax.local_devices()[0]) if jax.process_count() > 1 else None
    abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=local), like)
    if _is_legacy(path):
        return _legacy_restore(path, abstract)
    return _restore(path, **{STATE: ocp.args.StandardRestore(abstract)})[STATE]


def saved_tree(path: str | os.PathLike) -> dict:
    """The TrainState saved at `path` as nested dicts of field names (orbax's metadata; nothing is loaded)."""
    path = Path(path).absolute()
    with ocp.StandardCheckpointer() as checkpointer:
        meta = checkpointer.metadata(path / STATE)
    return meta.item_metadata.tree if hasattr(meta, "item_metadata") else meta


def load_metadata(path: str | os.PathLike) -> dict:
    path = Path(path).absolute()
    if _is_legacy(path):
        return json.loads((path / LEGACY_METADATA_FILE).read_text())
    return _restore(path, **{METADATA: ocp.args.JsonRestore()})[METADATA]


def _save_args(train_state, metadata) -> ocp.args.Composite:
    # One process: a host copy first (orbax handed arrays whose computation was still in flight has deadlocked on
    # CPU). Several: the arrays themselves, finished first; each process writes its own shards and process 0 the
    # rest (orbax's multi-process save; every process calls save).
    # The JSON round trip turns numpy scalars and arrays into plain JSON (orbax's JsonSave takes only plain values).
    state = (jax.block_until_ready(train_state) if jax.process_count() > 1 else jax.device_get(train_state))
    return ocp.args.Composite(**{
        STATE: ocp.args.StandardSave(state),
        METADATA: ocp.args.JsonSave(json.loads(json.dumps(metadata or {}, default=_json_default)))})


def _restore(path: Path, **items) -> ocp.args.Composite:
    with ocp.Checkpointer(ocp.CompositeCheckpointHandler()) as checkpointer:
        return checkpointer.restore(path, args=ocp.args.Composite(**items))


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


# ---------------------------------------------------------------------------------------------- legacy layout
# Written before the CheckpointManager, and only read now, so that such run directories still resume: a checkpoint
# was `<name>/state/` (StandardCheckpointer) + `<name>/metadata.json`, and the file `latest` in the run's
# checkpoints/ named the newest. The manager ignores these entries; a resumed run's new checkpoints sit beside them.
LEGACY_METADATA_FILE = "metadata.json"
LEGACY_MARKER = "latest"


def _is_legacy(path: Path) -> bool:
    return (path / LEGACY_METADATA_FILE).is_file()


def _legacy_newest(directory: Path) -> Path | None:
    marker = directory / LEGACY_MARKER
    if not marker.is_file():
        return None
    path = directory / marker.read_text().strip()
    return path if _is_legacy(path) else None  # the marker was written last: its checkpoint is complete


def _legacy_restore(path: Path, abstract: Any) -> Any:
    with ocp.StandardCheckpointer() as checkpointer:
        return checkpointer.restore(path / STATE, abstract)
