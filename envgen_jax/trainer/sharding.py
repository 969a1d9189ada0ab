"""Spread a TrainState over every device of the run (the local ones, or every process's after
`jax.distributed.initialize()`, `run.distributed`) with `jax.sharding`.

The compiled chunk is unchanged: jit follows the shardings of its inputs ("computation follows data"), so sharding
the TrainState once, after `init` or a restore, is all it takes; the chunk's donated outputs keep the layout (an
env reset's are put back in it: `trainer.train.in_its_layout`).

  * agents: when the agents (a run's seeds, and whatever else shares the TrainState's leading axis) divide evenly
    over the devices, every leaf is split on that leading axis: each device trains whole agents, and no gradient
    or activation crosses devices (the host gathers the metrics after each chunk);
  * envs: otherwise (one large agent, say) the environment slots of each agent are split (axis 1 of the env
    states, observations and a recurrent agent's memory) and the network parameters and optimiser state are
    replicated; PPO's minibatches then gather across devices.

`execution.shard` (auto | agents | envs) picks one; auto takes agents when they divide evenly, else envs.
With several processes every process holds the whole state on the host first (init and restore are the same on
every process) and `jax.device_put` keeps only its own devices' pieces.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from envgen_jax.schema import ConfigError

AXIS = "devices"
CHOICES = ("auto", "agents", "envs")  # execution.shard


def device_mesh(devices=None) -> Mesh:
    return Mesh(np.asarray(devices if devices is not None else jax.devices()), (AXIS,))


def layout(num_agents: int, num_envs: int, num_devices: int, shard: str = "auto") -> str:
    """'agents', 'envs' or 'replicated' (one device) for `shard` in CHOICES; ValueError when it cannot split."""
    if shard not in CHOICES:
        raise ValueError(f"execution.shard: {shard!r} is not one of {', '.join(CHOICES)}")
    if num_devices == 1:
        return "replicated"
    fits = {"agents": num_agents % num_devices == 0, "envs": num_envs % num_devices == 0}
    if shard != "auto":
        if not fits[shard]:
            count = f"{num_agents} agent(s)" if shard == "agents" else f"{num_envs} env slots (ppo.num_envs)"
            raise ValueError(f"execution.shard={shard}: cannot split {count} evenly over {num_devices} devices; "
                             f"use a multiple of {num_devices}, or execution.shard=auto")
        return shard
    if fits["agents"]:
        return "agents"
    if fits["envs"]:
        return "envs"
    raise ValueError(f"cannot spread {num_agents} agent(s) x {num_envs} envs over {num_devices} devices: the number "
                     f"of agents (seeds) or of envs (ppo.num_envs) must be a multiple of the device count")


def describe(num_agents: int, num_envs: int, num_devices: int, shard: str = "auto") -> str:
    """One line for the dry run and the start of a run: which layout applies and what each device holds."""
    how = layout(num_agents, num_envs, num_devices, shard)
    if how == "replicated":
        return f"one device: all {num_agents} agent(s) x {num_envs} env slots on it"
    if how == "agents":
        return (f"agents over {num_devices} devices: {num_agents // num_devices} whole agent(s) per device "
                f"({num_envs} env slots each), no gradient crosses devices")
    return (f"envs over {num_devices} devices: {num_envs // num_devices} of each agent's {num_envs} env slots per "
            f"device, for all {num_agents} agent(s); parameters replicated, minibatches gathered across devices")


def devices_line(num_agents: int, num_envs: int, shard: str = "auto", label: str = "") -> str:
    """`describe` over every device of the run (every process's), for the dry run and the start of a run; a
    ConfigError (its problem prefixed with `label`) where the layout cannot split."""
    try:
        return describe(num_agents, num_envs, jax.device_count(), shard)
    except ValueError as e:
        raise ConfigError([f"{label}{e}"], what="devices") from None


def placement(ts, num_envs: int, mesh: Mesh, shard: str = "auto"):
    """The NamedSharding of every leaf of `ts` (a TrainState or a replay.ReplayState, leading agent axis on every
    leaf; concrete or abstract) in the layout `layout` picks."""
    num_agents = int(jax.tree.leaves(ts)[0].shape[0])
    how = layout(num_agents, num_envs, mesh.size, shard)
    replicated = NamedSharding(mesh, P())
    if how == "replicated":
        return jax.tree.map(lambda _: replicated, ts)
    if how == "agents":
        return jax.tree.map(lambda _: NamedSharding(mesh, P(AXIS)), ts)

    def env_split(x):
        return NamedSharding(mesh, P(None, AXIS)) if len(x.shape) >= 2 and x.shape[1] == num_envs else replicated

    def agent_placement(agent):  # the env slots' own state: env states, observations and a recurrent memory
        by_env = dict(env_state=jax.tree.map(env_split, agent.env_state), obs=env_split(agent.obs),
                      memory=jax.tree.map(env_split, agent.memory))
        return jax.tree.map(lambda _: replicated, agent).replace(**by_env)

    from envgen_jax.trainer.replay import ReplayState
    if isinstance(ts, ReplayState):  # the level sampler's state (per agent, per bank row) is replicated
        return ts.replace(agent=agent_placement(ts.agent), sampler=jax.tree.map(lambda _: replicated, ts.sampler))
    return agent_placement(ts)


def shard_train_state(ts, num_envs: int, mesh: Mesh | None = None, shard: str = "auto"):
    """Place `ts` on the mesh (default: every device of every process) in the layout `layout` picks.

    With several processes `ts` must be the same on each (it is: init and restore are deterministic); it goes
    through the host, and each process keeps its own devices' pieces."""
    mesh = mesh or device_mesh()
    where = placement(ts, num_envs, mesh, shard)
    if jax.process_count() > 1:
        ts = jax.device_get(ts)  # process-local arrays -> numpy: device_put then takes this process's shards
    return jax.device_put(ts, where)

