"""The LLM environment designer (EnvGen steps 1 and 4): prompts, OpenAI-compatible client, offline model, replay.

Modules: settings (LLMSettings: Transport, how to reach the model, and Strategy, how to ask it), spec (EnvSpec: a
game as the designer sees it, built by the game in envgen_jax.games), prompts (the shared templates under prompts/,
each game's own in its package), targeting (which settings help which achievement, from the game's map), reply
(parse and validate replies), client (retries, structured-output fallback), transcript (JSONL record and replay), models (the offline GGUFs), local_server
(llama.cpp's server for them), designer (the API the EnvGen loop calls). No module here knows a game by name.
"""

from envgen_jax.llm.designer import Design, Designer
from envgen_jax.llm.errors import DesignError, LLMError, LocalModelMissing, ReplayError
from envgen_jax.llm.settings import LLMSettings, Strategy, Transport
from envgen_jax.llm.spec import EnvSpec

__all__ = ["Design", "Designer", "DesignError", "EnvSpec", "LLMError", "LLMSettings", "LocalModelMissing",
           "ReplayError", "Strategy", "Transport"]
