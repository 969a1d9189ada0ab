"""A deterministic stand-in for an OpenAI-compatible client, for tests of the designer and of the EnvGen loop.

    client = ScriptedClient([reply_text, TimeoutError("slow"), ...])     # answers in order
    client = ScriptedClient(default=auto_reply(CrafterConfig))          # always a valid design of the asked size
    Designer(games.get("crafter").designer_spec(), LLMSettings(backend="openai", model="fake"), path, client=client)

It has the `client.chat.completions.create(**kwargs)` shape and records every call's kwargs in `calls`.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, Callable, Iterable

Reply = Any  # str | BaseException | Callable[[dict], str | BaseException]


def completion(text: str, finish_reason: str = "stop", prompt_tokens: int = 100, completion_tokens: int = 50):
    """An object shaped like openai's ChatCompletion."""
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=text, role="assistant"), finish_reason=finish_reason)],
        usage=SimpleNamespace(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                              total_tokens=prompt_tokens + completion_tokens))


class ScriptedClient:
    def __init__(self, replies: Iterable[Reply] = (), default: Callable[[dict], str] | None = None):
        self.replies = list(replies)
        self.default = default
        self.calls: list[dict] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs):
        self.calls.append(kwargs)
        if self.replies:
            reply = self.replies.pop(0)
        elif self.default is not None:
            reply = self.default
        else:
            raise AssertionError(f"ScriptedClient ran out of replies at call #{len(self.calls)}")
        if callable(reply) and not isinstance(reply, BaseException):
            reply = reply(kwargs)
        if isinstance(reply, BaseException):
            raise reply
        return completion(reply)


def asked_count(kwargs: dict, fallback: int = 4) -> int:
    """How many environments a request asks for, read from its response_format schema."""
    fmt = kwargs.get("response_format") or {}
    schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema") or {}
    return schema.get("properties", {}).get("environments", {}).get("minItems", fallback)


def design_json(configs: list[dict], purposes: list[str] | None = None, targets: list | None = None) -> str:
    """A reply holding these environments; `targets`: per environment, the value of its "targets" key (any value,
    so that tests can send bad ones too)."""
    purposes = purposes or [f"Environment {i + 1}." for i in range(len(configs))]
    envs = [{"purpose": p, "config": c} for p, c in zip(purposes, configs)]
    for env, aims in zip(envs, targets or []):
        env["targets"] = aims
    return json.dumps({"environments": envs})


def varied_configs(config_cls, n: int, offset: int = 0) -> list[dict]:
    """n valid, different configs: environment i changes two settings to values other than their defaults."""
    settings = config_cls.schema()
    out = []
    for i in range(n):
        config: dict = {}
        for k in (offset + 2 * i, offset + 2 * i + 1):
            s = settings[k % len(settings)]
            allowed = [v for v in s.json_schema().get("enum", [True, False]) if v != s.default]
            config.setdefault(s.section, {})[s.name] = allowed[(offset + i) % len(allowed)]
        out.append(config)
    return out


def auto_reply(config_cls) -> Callable[[dict], str]:
    """A responder that always returns a valid design of the asked-for size, varying from call to call."""
    counter = {"calls": 0}

    def respond(kwargs: dict) -> str:
        counter["calls"] += 1
        return design_json(varied_configs(config_cls, asked_count(kwargs), offset=counter["calls"]))

    return respond


class FakeOpenAIServer:
    """A tiny OpenAI-compatible HTTP server on 127.0.0.1 for tests that go through the real openai client.

    `respond(request_json) -> (status, body, headers)` decides each /v1/chat/completions answer; `requests` keeps
    every request body and `headers` its HTTP headers. Use as a context manager; `base_url` is ready for
    `--base-url` / `LLMSettings.base_url`.
    """

    def __init__(self, respond: Callable[[dict], tuple[int, Any, dict]]):
        import http.server
        import threading

        outer = self
        self.respond = respond
        self.requests: list[dict] = []
        self.headers: list[dict] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, body: Any, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append(request)
                outer.headers.append(dict(self.headers))
                status, body, headers = outer.respond(request)
                self._send(status, body, headers)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAIServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion_body(text: str, model: str = "fake") -> dict:
    """A /v1/chat/completions JSON answer holding `text`."""
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}
