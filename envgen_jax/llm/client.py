"""Chat completions with retries, back-off and the structured-output fallback.

A backend sends one request and sorts failures into `TransientLLMError` (retry) and `RequestRefused` (do not).
`LLMClient` retries transient faults with exponential back-off and, when a server refuses a structured-output mode,
steps down json_schema -> json_object + schema (an extension some servers need) -> plain text, remembering the mode
that worked. Every failed attempt is reported to `on_error` so the transcript (and a replay) sees it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Callable, Protocol

from envgen_jax.llm.errors import LLMError, RequestRefused, TransientLLMError
from envgen_jax.llm.settings import Transport

MODES = ("json_schema", "json_object", "text")


@dataclasses.dataclass(frozen=True)
class ChatReply:
    text: str
    finish_reason: str | None = None
    usage: dict | None = None
    latency_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class Sampling:
    """How one request samples (None seed: the server's choice)."""

    temperature: float
    seed: int | None = None


class ChatBackend(Protocol):
    description: str
    replays: bool  # True: answers come from a transcript, so back-off waits are pointless

    def send(self, messages: list[dict], mode: str, schema: dict, sampling: Sampling | None = None) -> ChatReply: ...


def response_format(mode: str, schema: dict, strict: bool = False) -> dict | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "environment_designs", "schema": schema,
                                                       "strict": strict}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def make_openai_client(settings: Transport, base_url: str | None = None, api_key: str | None = None):
    """An `openai.OpenAI` client; our own loop does the retries, so the package's are switched off."""
    import openai

    base_url = base_url or settings.base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = api_key or settings.api_key or os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if not base_url:
            raise LLMError("no LLM endpoint configured for the openai backend: set OPENAI_API_KEY for api.openai.com, "
                           "or point --base-url / OPENAI_BASE_URL at an OpenAI-compatible server "
                           "(or use --backend local for the bundled offline model)")
        api_key = "not-needed"  # keyless servers (vLLM, Ollama, llama.cpp) accept any key
    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=settings.request_timeout_s, max_retries=0)


def _retry_after(exc: Any) -> float | None:
    try:
        return float(exc.response.headers.get("retry-after"))
    except (AttributeError, TypeError, ValueError):
        return None


def classify(exc: BaseException, timeout_s: float | None = None) -> LLMError:
    """Map an exception from a chat client to TransientLLMError or RequestRefused (or pass ours through)."""
    if isinstance(exc, LLMError):
        return exc
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a hard dependency
        openai = None
    if openai is not None:
        if isinstance(exc, openai.APITimeoutError):
            return TransientLLMError(f"request timed out after {timeout_s} s" if timeout_s else "request timed out")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            return TransientLLMError(f"connection failed: {cause or exc}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            message = f"HTTP {status}: {_body_text(exc)}"
            refused = RequestRefused(message, status)
            if _about_context(message):  # the conversation outgrew the model: the same request fails again
                return RequestRefused(f"{message} (the conversation exceeds the model's context window; raise llm.n_ctx "
                                      f"or use a model with a longer context)", status)
            if status == 429 or status == 408 or (status >= 500 and not refused.about_response_format()):
                return TransientLLMError(message, status, _retry_after(exc))
            return refused
    if isinstance(exc, TimeoutError):
        return TransientLLMError(f"request timed out: {exc}")
    if isinstance(exc, (ConnectionError, OSError)):
        return TransientLLMError(f"connection failed: {exc}")
    return RequestRefused(f"{type(exc).__name__}: {exc}")


def _about_context(message: str) -> bool:
    text = message.lower()
    return "context" in text and any(w in text for w in ("exceed", "maximum", "too long", "window"))


def _body_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    text = str(body) if body is not None else getattr(exc, "message", str(exc))
    return text if len(text) <= 2000 else text[:2000] + "...(truncated)"


def _usage(response: Any) -> dict | None:
    usage = getattr(response, "usage", None)
    if usage is not None and not isinstance(usage, dict):
        usage = {k: getattr(usage, k, None) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    # llama.cpp's server adds `timings`: prompt tokens read anew (prompt_n) vs taken from its cache (cache_n)
    timings = (getattr(response, "model_extra", None) or {}).get("timings")
    if isinstance(timings, dict):
        usage = dict(usage or {}, timings={k: timings.get(k) for k in
                                           ("cache_n", "prompt_n", "prompt_ms", "predicted_n", "predicted_ms")})
    return usage


class OpenAIBackend:
    """Anything with the `client.chat.completions.create(**kwargs)` shape: the openai package or a test double."""

    replays = False

    def __init__(self, client: Any, model: str, settings: Transport, description: str,
                 extra_body: dict | None = None):
        self.client, self.model, self.settings, self.description = client, model, settings, description
        self.extra_body = extra_body  # server-specific request fields (sent only to servers that know them)

    def send(self, messages: list[dict], mode: str, schema: dict, sampling: Sampling | None = None) -> ChatReply:
        sampling = sampling or Sampling(self.settings.temperature, self.settings.seed)
        kwargs: dict = dict(model=self.model, messages=messages, temperature=sampling.temperature,
                            max_tokens=self.settings.max_tokens)
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        fmt = response_format(mode, schema, self.settings.strict_schema)
        if fmt is not None:
            kwargs["response_format"] = fmt
        start = time.monotonic()
        try:
            response = self.client.chat.completions.create(**kwargs)
        except Exception as exc:  # sorted into retry / refuse below; nothing is swallowed
            raise classify(exc, self.settings.request_timeout_s) from exc
        latency = time.monotonic() - start
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
            finish = getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError) as exc:
            raise RequestRefused(f"the server's answer has no message: {str(response)[:300]}") from exc
        return ChatReply(text=text, finish_reason=finish, usage=_usage(response), latency_s=latency)


class LLMClient:
    """Retries and structured-output fallback over one backend."""

    def __init__(self, backend: ChatBackend, settings: Transport, mode: str | None = None,
                 sleep: Callable[[float], None] = time.sleep, on_error: Callable[[dict], None] | None = None,
                 calls: int = 0):
        start = settings.output_mode if settings.output_mode != "auto" else "json_schema"
        self.backend, self.settings = backend, settings
        self.mode = mode or start
        self.sleep = (lambda _s: None) if backend.replays else sleep
        self.on_error = on_error or (lambda _record: None)
        self.calls = calls  # backend calls so far, kept in checkpoints so a replay resumes at the right record

    def complete(self, messages: list[dict], schema: dict, sampling: Sampling | None = None) -> ChatReply:
        """One reply; `sampling` overrides the settings' temperature and seed for this request."""
        while True:
            try:
                return self._with_retries(messages, schema, sampling)
            except RequestRefused as e:
                if e.about_response_format() and self.mode != "text":
                    self.mode = MODES[MODES.index(self.mode) + 1]
                    continue
                raise LLMError(f"{self.backend.description} refused the request ({e}); not retried") from e

    def _with_retries(self, messages: list[dict], schema: dict, sampling: Sampling | None) -> ChatReply:
        tries = self.settings.max_retries + 1
        for attempt in range(tries):
            self.calls += 1
            start = time.monotonic()
            try:
                return self.backend.send(messages, self.mode, schema, sampling)
            except (TransientLLMError, RequestRefused) as e:
                self._report(messages, attempt, e, time.monotonic() - start)
                if isinstance(e, RequestRefused):
                    raise
                if attempt + 1 == tries:
                    raise LLMError(
                        f"{self.backend.description} failed {tries} time{'s' * (tries != 1)} (time-outs, refused "
                        f"connections, HTTP 429/5xx are retried with back-off); last error: {e}. Nothing was "
                        f"changed, so a run can resume from its last checkpoint once the endpoint is back") from e
                delay = min(self.settings.backoff_max_s, self.settings.backoff_s * 2 ** attempt)
                if e.retry_after is not None:
                    delay = min(self.settings.backoff_max_s, max(delay, e.retry_after))
                self.sleep(delay)
        raise AssertionError("unreachable")

    def _report(self, messages: list[dict], attempt: int, error: LLMError, latency: float) -> None:
        self.on_error({
            "event": "error", "call": self.calls - 1, "attempt": attempt, "mode": self.mode, "messages": messages,
            "error": {"kind": "transient" if isinstance(error, TransientLLMError) else "refused",
                      "status": getattr(error, "status", None), "message": str(error)},
            "latency_s": round(latency, 4)})
