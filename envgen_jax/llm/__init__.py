"""The LLM environment designer (EnvGen steps 1 and 4): prompts, OpenAI-compatible client, offline model, replay.

Modules: settings (LLMSettings), spec (EnvSpec per environment), prompts (templates under prompts/), reply (parse and
validate replies), client (retries, structured-output fallback), transcript (JSONL record and replay),
models (the offline GGUFs), local_server (llama.cpp's server for them), designer (the API the EnvGen loop calls), cli (`llm generate`).
"""

from envgen_jax.llm.designer import Design, Designer
from envgen_jax.llm.errors import DesignError, LLMError, LocalModelMissing, ReplayError
from envgen_jax.llm.settings import LLMSettings
from envgen_jax.llm.spec import EnvSpec, get_env_spec, register_env_spec

__all__ = ["Design", "Designer", "DesignError", "EnvSpec", "LLMError", "LLMSettings", "LocalModelMissing",
           "ReplayError", "get_env_spec", "register_env_spec"]
