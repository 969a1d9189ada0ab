"""Checkpoints that older versions wrote, read into today's train states. Every layout change of a saved state is
handled here, and only here (`Trainer.restore` calls `restore_state`):

1. Before the agent carried `hparams`, `value_norm` and `memory` (AGENT_FIELDS): the checkpoint restores with the
   config's hparams and no value_norm or memory, exactly what that code trained with; so the config must enable
   neither value_norm nor recurrent.
2. Before level replay moved out of the PPO update, a trainer with a level sampler saved one flat TrainState with
   the sampler's state as a field beside the agent's (`PLRTrainState`); today it is a `replay.ReplayState` with the
   agent's TrainState and the sampler's state side by side.
"""

from __future__ import annotations

import dataclasses

from envgen_jax.schema import ConfigError
from envgen_jax.trainer.checkpoint import restore_checkpoint, saved_fields
from envgen_jax.trainer.ppo import TrainState
from envgen_jax.trainer.replay import ReplayState

AGENT_FIELDS = ("hparams", "value_norm", "memory")  # added after the first release
FLAT_SAMPLER = "sampler"  # the level sampler's field of the flat PLRTrainState


def restore_state(trainer, path, like, num_agents: int):
    """The state saved at `path` as `like` (abstract) has it: a TrainState, or a ReplayState for a trainer with a
    level sampler."""
    saved = saved_fields(path)
    replay = isinstance(like, ReplayState)
    agent_like = trainer.agent_state(like)
    missing = [f for f in AGENT_FIELDS if f not in saved and "agent" not in saved]
    if not missing and not (replay and FLAT_SAMPLER in saved and "agent" not in saved):
        return restore_checkpoint(path, like)  # today's layout
    if missing and (trainer.cfg.value_norm or trainer.recurrent):
        raise ConfigError([f"ppo: the checkpoint {path} was written by an agent without value_norm and "
                           f"recurrent; resume it with the settings it was started with"], what="PPO settings")
    tree = {f.name: getattr(agent_like, f.name) for f in dataclasses.fields(agent_like) if f.name not in missing}
    if replay:
        tree[FLAT_SAMPLER] = like.sampler
    out = restore_checkpoint(path, tree)
    sampler = out.pop(FLAT_SAMPLER, None)
    fresh = dict(hparams=trainer.hparams(count=num_agents), value_norm=None, memory=None)
    agent = TrainState(**out, **{name: fresh[name] for name in missing})
    return like.replace(agent=agent, sampler=sampler) if replay else agent
