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
