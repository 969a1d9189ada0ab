"""Spread a TrainState over every local device (or every device of a multi-host job) with `jax.sharding`.

The compiled chunk is unchanged: jit follows the shardings of its inputs ("computation follows data"), so sharding
the TrainState once, after `init` or a restore, is all it takes; the donated outputs keep the layout.

  * seeds axis: when the number of seeds divides over the devices, every leaf is split on its leading seed axis
    (independent agents, no communication);
  * env axis: otherwise the environment slots of each seed are split (axis 1 of the env states, observations and a
    recurrent agent's memory) and the network parameters and optimiser state are replicated; PPO's minibatches then
    gather across devices.

Multi-host: call `jax.distributed.initialize()` in every process before building the run; `jax.devices()` is then
the global device list and the same mesh spans the hosts (one process per host, each seeing its local devices).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

AXIS = "devices"


def device_mesh(devices=None) -> Mesh:
    return Mesh(np.asarray(devices if devices is not None else jax.devices()), (AXIS,))


def layout(num_seeds: int, num_envs: int, num_devices: int) -> str:
    """'seeds', 'envs' or 'replicated' (one device)."""
    if num_devices == 1:
        return "replicated"
    if num_seeds % num_devices == 0:
        return "seeds"
    if num_envs % num_devices == 0:
        return "envs"
    raise ValueError(f"cannot spread {num_seeds} seed(s) x {num_envs} envs over {num_devices} devices: the number "
                     f"of seeds or of envs (ppo.num_envs) must be a multiple of the device count")


def shard_train_state(ts, num_envs: int, mesh: Mesh | None = None):
    """Place `ts` (a TrainState or a replay.ReplayState, leading seed axis on every leaf) on the mesh; see the
    module docstring for the layout."""
    mesh = mesh or device_mesh()
    num_seeds = int(jax.tree.leaves(ts)[0].shape[0])
    how = layout(num_seeds, num_envs, mesh.size)
    replicated = NamedSharding(mesh, P())
    if how == "replicated":
        return jax.device_put(ts, replicated)
    if how == "seeds":
        return jax.device_put(ts, NamedSharding(mesh, P(AXIS)))

    def env_split(x):
        return NamedSharding(mesh, P(None, AXIS)) if x.ndim >= 2 and x.shape[1] == num_envs else replicated

    def agent_placement(agent):  # the env slots' own state: env states, observations and a recurrent memory
        by_env = dict(env_state=jax.tree.map(env_split, agent.env_state), obs=env_split(agent.obs),
                      memory=jax.tree.map(env_split, agent.memory))
        return jax.tree.map(lambda _: replicated, agent).replace(**by_env)

    from envgen_jax.trainer.replay import ReplayState
    if isinstance(ts, ReplayState):  # the level sampler's state (per seed, per bank row) is replicated
        placement = ts.replace(agent=agent_placement(ts.agent), sampler=jax.tree.map(lambda _: replicated, ts.sampler))
    else:
        placement = agent_placement(ts)
    return jax.device_put(ts, placement)
