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
"""

from __future__ import annotations

import dataclasses

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
    fixed = restore_state(trainer, path, _with_env_state(trainer, like, VecState(**fields)))
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
