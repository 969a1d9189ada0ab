"""Checkpoints that older versions wrote, read into today's train states. Every layout change of a saved state is
handled here, and only here (`Trainer.restore` calls `restore_state`). Whether a state is a `replay.ReplayState`
(the agent's beside the sampler's) is asked of the trainer (`agent_state`): this module, below both trainers, imports
neither.

1. Before the agent carried `hparams`, `value_norm` and `memory` (AGENT_FIELDS): the checkpoint restores with the
   config's hparams and no value_norm or memory, exactly what that code trained with; so the config must enable
   neither value_norm nor recurrent.
2. Before level replay moved out of the PPO update, a trainer with a level sampler saved one flat TrainState with
   the sampler's state as a field beside the agent's (`PLRTrainState`); today it is a `replay.ReplayState` with the
   agent's TrainState and the sampler's state side by side.
3. Before all phases of a run shared one compiled chunk, plr, sfl and envgen_sfl ran their original-game phases on
   fixed rows (the env state a `VecState`); those phases now draw their one row from a one-hot sampler (a
   `SampledVecState`, `RowSampler.one_row`, `Replay.held`). A checkpoint from such a phase restores with every
   slot's row, and its spare world's, set to that row: the row it ran.
4. Before the encoders were modules of their own (issue 63), the 'map' encoder's layers sat in a submodule named
   "encoder", its 3x3 convolutions Dense layers over the cells' patches (kernel [9C, F]) and its blocks
   `MapResidualBlock`s; today they are the agent's own layers, `Conv`s (kernel [3, 3, C, F], the same numbers) and
   `ResidualBlock`s (`networks.MapEncoder`). Every copy of the parameters (the optimiser's moments too) is renamed.
   Every other kind's parameter names are unchanged (the first release's: `networks`, "Parameter names").
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from envgen_jax.envs.vector import SampledVecState, VecState
from envgen_jax.schema import ConfigError
from envgen_jax.trainer.checkpoint import restore_checkpoint, saved_tree
from envgen_jax.trainer.layouts import drawn_probs
from envgen_jax.trainer.ppo import TrainState

AGENT_FIELDS = ("hparams", "value_norm", "memory")  # added after the first release
FLAT_SAMPLER = "sampler"  # the level sampler's field of the flat PLRTrainState


def restore_state(trainer, path, like, rows=None):
    """The state saved at `path` as `like` (abstract, made for the layout `rows`) has it: a TrainState, or a
    ReplayState for a trainer with a level sampler."""
    if _holds(saved_tree(path), _map_before_modules):  # migration 4
        saved = _restore_layout(trainer, path, _each_params(like, _map_today, _map_as_before), rows)
        return _each_params(saved, _map_before_modules, _map_as_today)
    return _restore_layout(trainer, path, like, rows)


def _restore_layout(trainer, path, like, rows):
    """Migrations 1 to 3: the state saved at `path`, with `like`'s parameter names."""
    agent_like = trainer.agent_state(like)
    tree = saved_tree(path)  # read once: the metadata of what was saved
    if isinstance(agent_like.env_state, SampledVecState) and not _saved_sampled(tree):
        return _sampled_from_fixed(trainer, path, like, rows)
    saved = set(tree)
    replay = _holds_agent(trainer, like)
    missing = [f for f in AGENT_FIELDS if f not in saved and "agent" not in saved]
    if not missing and not (replay and FLAT_SAMPLER in saved and "agent" not in saved):
        return restore_checkpoint(path, like)  # today's layout
    if missing and (trainer.cfg.ppo.value_norm or trainer.recurrent):
        raise ConfigError([f"ppo: the checkpoint {path} was written by an agent without value_norm and "
                           f"recurrent; resume it with the settings it was started with"], what="PPO settings")
    tree = {f.name: getattr(agent_like, f.name) for f in dataclasses.fields(agent_like) if f.name not in missing}
    if replay:
        tree[FLAT_SAMPLER] = like.sampler
    out = restore_checkpoint(path, tree)
    sampler = out.pop(FLAT_SAMPLER, None)
    fresh = dict(hparams=trainer.hparams(count=agent_like.update_step.shape[0]), value_norm=None, memory=None)
    agent = TrainState(**out, **{name: fresh[name] for name in missing})
    return like.replace(agent=agent, sampler=sampler) if replay else agent


def _saved_sampled(tree: dict) -> bool:
    """Whether the saved env state is a sampled layout's (it has each slot's row)."""
    agent = tree.get("agent", tree)
    return "row" in agent.get("env_state", {})


def _sampled_from_fixed(trainer, path, like, rows):
    """Migration 3: a fixed layout's env state, read into the sampled one `like` has, each seed's slots on the one
    row its layout draws."""
    probs = drawn_probs(rows)
    if probs is None or not ((probs > 0).sum(-1) == 1).all():  # each seed draws one row
        raise ConfigError([f"checkpoint {path}: its env slots ran fixed rows, and this phase draws its rows from "
                           f"several; resume it with the code that wrote it"], what="checkpoint")
    env_like = trainer.agent_state(like).env_state
    fields = {f.name: getattr(env_like, f.name) for f in dataclasses.fields(VecState)}
    fixed = _restore_layout(trainer, path, _with_env_state(trainer, like, VecState(**fields)), None)
    slots = env_like.row.shape  # [S, N]
    row = np.broadcast_to(np.argmax(probs, axis=-1).astype(np.int32).reshape(-1, 1), slots)
    env = trainer.agent_state(fixed).env_state
    sampled = SampledVecState(**{f.name: getattr(env, f.name) for f in dataclasses.fields(VecState)},
                              row=jnp.asarray(row), spare_row=jnp.asarray(row))
    return _with_env_state(trainer, fixed, sampled)


def _with_env_state(trainer, state, env_state):
    agent = trainer.agent_state(state).replace(env_state=env_state)
    return state.replace(agent=agent) if _holds_agent(trainer, state) else agent


def _holds_agent(trainer, state) -> bool:
    """Whether `state` holds the agent's TrainState beside other state (a ReplayTrainer's ReplayState)."""
    return trainer.agent_state(state) is not state


# -- migration 4: the 'map' encoder's parameter names ---------------------------------------------------------------
MAP_RENAMES = {"Dense": "Conv", "MapResidualBlock": "ResidualBlock"}  # in the old "encoder" -> the agent's own
MAP_LAYERS = ("Conv", "LayerNorm", "ResidualBlock")  # today's map-encoder layers among the agent's


def _map_before_modules(node) -> bool:
    return isinstance(node, dict) and "encoder" in node and "embed" in node


def _map_today(node) -> bool:
    return isinstance(node, dict) and "Conv_0" in node and "embed" in node


def _map_as_today(params: dict) -> dict:
    """A first-release 'map' agent's parameters (or a copy: the optimiser's moments) with today's names."""
    rest = {k: v for k, v in params.items() if k != "encoder"}
    return {**rest, **_renamed(params["encoder"], MAP_RENAMES, _conv_kernel)}


def _map_as_before(params: dict) -> dict:
    """The inverse of `_map_as_today` (what an old checkpoint is read as)."""
    layers = {k: v for k, v in params.items() if k.rpartition("_")[0] in MAP_LAYERS}
    rest = {k: v for k, v in params.items() if k not in layers}
    back = {new: old for old, new in MAP_RENAMES.items()}
    return {**rest, "encoder": _renamed(layers, back, _dense_kernel)}


def _renamed(node, names: dict, kernel):
    """Nested layers with each `<kind>_<i>` named `<names[kind]>_<i>`, and each kernel as `kernel` gives it."""
    if not isinstance(node, dict):
        return node
    out = {}
    for name, child in node.items():
        kind, _, index = name.rpartition("_")
        out[f"{names.get(kind, kind)}_{index}" if kind else name] = _renamed(child, names, kernel)
    return {**out, "kernel": kernel(node["kernel"])} if "kernel" in node else out


def _conv_kernel(x):
    """[..., 9C, F] -> [..., 3, 3, C, F] (any leading seed axis kept)."""
    return _reshaped(x, x.shape[:-2] + (3, 3, x.shape[-2] // 9, x.shape[-1]))


def _dense_kernel(x):
    return _reshaped(x, x.shape[:-4] + (int(np.prod(x.shape[-4:-1])), x.shape[-1]))


def _reshaped(x, shape):
    return jax.ShapeDtypeStruct(shape, x.dtype) if isinstance(x, jax.ShapeDtypeStruct) else x.reshape(shape)


def _each_params(tree, is_params, change):
    """`tree` with `change` applied to each of its parameter trees (`is_params` tells them)."""
    return jax.tree.map(lambda node: change(node) if is_params(node) else node, tree, is_leaf=is_params)


def _holds(tree, is_params) -> bool:
    if is_params(tree):
        return True
    return isinstance(tree, dict) and any(_holds(child, is_params) for child in tree.values())
