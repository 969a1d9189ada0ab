"""Trainer configurations for the tests, built from their sections as the package builds them
(`trainer.config.TrainerConfig`: the algorithm, the network, the execution and the seeds)."""

import dataclasses

from envgen_jax.trainer.config import TrainerConfig
from envgen_jax.trainer.encoders import MLPNet, NetworkConfig


def mlp(width: int, depth: int, **network) -> NetworkConfig:
    """The MLP network of `depth` hidden layers of `width` (`network`: NetworkConfig's other fields, e.g. the
    memory)."""
    return NetworkConfig(mlp=MLPNet(width=width, depth=depth), **network)


def with_ppo(cfg: TrainerConfig, **algorithm) -> TrainerConfig:
    """`cfg` with these settings of its algorithm (its `ppo` section) changed."""
    return dataclasses.replace(cfg, ppo=dataclasses.replace(cfg.ppo, **algorithm))


def with_encoder(cfg: TrainerConfig, **settings) -> TrainerConfig:
    """`cfg` with these settings of its network's chosen encoder changed."""
    network = cfg.network
    encoder = dataclasses.replace(network.encoder, **settings)
    return dataclasses.replace(cfg, network=dataclasses.replace(network, **{network.kind: encoder}))


# ------------------------------------------------------------------------------------------------------ the tiny run
# configs/smoke.yaml's whole protocol shrunk so that a CPU trains it in seconds (every phase and output still runs),
# in today's keys: the tests', the goldens' (tests/golden.py) and the benchmarks' CPU smoke runs. Runs of these shapes
# compile the same programs, so the persistent cache serves each to all of them.
TINY_AGENT = ("ppo.num_envs=8", "ppo.num_steps=16", "ppo.update_epochs=1", "ppo.num_minibatches=2",
              "network.mlp.width=32", "network.mlp.depth=1", "eval.envs_per_agent=4", "eval.max_steps=120")
QUIET = ("output.progress=false", "output.pictures=false", "output.tensorboard=false")


def tiny_run(seeds: int | None = 2, cycles: int = 2, llm_env_steps: int = 256, original_env_steps: int = 256,
             final_steps: int = 512, envs_per_call: int | None = 2, llm_episode_length: int | None = 64,
             quiet=QUIET) -> list[str]:
    """`--set` overrides of configs/smoke.yaml for a tiny run, by default the golden runs' (2 seeds, 2 cycles of 256 +
    256 steps, 512 scored); a setting given None keeps the configuration's (a study's `--seeds`, say). `quiet`: the
    outputs turned off."""
    schedule = {"cycles": cycles, "llm_env_steps": llm_env_steps, "original_env_steps": original_env_steps,
                "final_steps": final_steps, "envs_per_call": envs_per_call, "llm_episode_length": llm_episode_length,
                "updates_per_chunk": 1}
    return [*([f"seeds={seeds}"] if seeds is not None else []),
            *(f"schedule.{key}={value}" for key, value in schedule.items() if value is not None), *TINY_AGENT, *quiet]
