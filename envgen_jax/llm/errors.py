"""Errors of the LLM designer. Each message says what went wrong and what to do about it."""

from __future__ import annotations

from typing import Sequence

from envgen_jax.schema import ConfigError


class LLMError(RuntimeError):
    """The LLM step could not run (endpoint unreachable, request refused, local server failed, bad settings)."""


class TransientLLMError(LLMError):
    """A fault worth retrying: time-out, refused connection, HTTP 429 or 5xx."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RequestRefused(LLMError):
    """The server answered the request with an error that retrying the same request will not fix."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status

    def about_response_format(self) -> bool:
        """True when the refusal is about structured output, so a plainer response_format may succeed."""
        text = str(self).lower()
        return self.status in (400, 422, 500) and any(
            word in text for word in ("response_format", "json_schema", "json_object", "schema"))


class ReplayError(LLMError):
    """A replayed run asked for something its transcript does not hold."""


class LocalModelMissing(LLMError):
    """The offline LLM (the xllamacpp runtime or a model package) is not installed, or its file is damaged."""


class DesignError(ConfigError):
    """The LLM did not produce the asked-for valid configurations within the allowed repairs."""

    def __init__(self, problems: Sequence[str], replies: int, transcript: str | None = None):
        self.replies = replies
        self.transcript = transcript
        where = f"; every reply is in the transcript {transcript}" if transcript else ""
        super().__init__(problems, what=f"LLM environment design after {replies} repl{'y' if replies == 1 else 'ies'} "
                                        f"({max(replies - 1, 0)} repair{'s' * (replies != 2)}){where}")
