"""envgen_jax: EnvGen (Zala et al., COLM 2024) as a JAX end-to-end accelerated trainer.

Layout:
  schema.py        declarative settings: validation, docs, LLM prompt text and JSON Schema from one description
  envs/            configurable environments (Crafter on Craftax-Classic, Heist) and the batched vector env
  trainer/         PPO in one jit-compiled training chunk, metrics (Crafter score), evaluation, checkpoints
  llm/             the LLM environment designer: prompts, OpenAI-compatible client, offline model, replay
  loop.py          the EnvGen host loop: LLM step between compiled training chunks
  methods/         the methods compared, one `Method` subclass each, behind one registry
  study/           `envgen-jax study`: every method trained alike, compared with statistics over seeds
  cli/             the `envgen-jax` command line (train, study, validate, render, settings, llm)
"""

from envgen_jax.schema import ConfigError

__all__ = ["ConfigError"]
__version__ = "0.1.0"
