"""envgen_jax: EnvGen (Zala et al., COLM 2024) as a JAX end-to-end accelerated trainer.

Layout, in layer order (lowest first; a module imports only from its own layer or below: docs/package.md, "Layers"):
  schema.py        declarative settings: validation, docs, LLM prompt text and JSON Schema from one description
  config_io.py     the one parser of configuration files: `extends:` chains, `--set`, every problem with its path
  llm/             the LLM environment designer, generic over games: prompts, OpenAI-compatible client, offline
                   model, record/replay, the targeting vocabulary
  envs/            the games (Crafter on Craftax-Classic, Heist, full Craftax), each with its `game.py`; the bank,
                   the batched vector env and the games' scores
  games/           the registry: one line per game
  trainer/         PPO in one jit-compiled training chunk, level replay, networks, metrics, evaluation, checkpoints
  methods/         the methods compared, one `Method` subclass each, behind one registry; the contract they share
                   (base.py, view.py, rows.py); what the agent learned inside each LLM environment (learning.py)
  report.py        report.json / report.md / plots of a run
  run_config.py    the typed run configuration behind every file in configs/
  run/             one run on the host: the EnvGen loop (design step between compiled chunks), plan, logs, resume
  study/           `envgen-jax study`: every method trained alike, compared with statistics over seeds
  cli/             the `envgen-jax` command line (train, study, validate, render, settings, llm)
"""

from envgen_jax.schema import ConfigError

__all__ = ["ConfigError"]
__version__ = "0.1.0"
