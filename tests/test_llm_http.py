"""Through the real openai client and HTTP: structured-output fallback, 429/5xx retries, time-outs, refused ports."""

import socket
import time

import pytest

from envgen_jax import games
from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.llm import Designer, LLMError, LLMSettings
from envgen_jax.llm.testing import FakeOpenAIServer, completion_body, design_json, varied_configs

CRAFTER = games.get("crafter").designer_spec()
GOOD = design_json(varied_configs(CrafterConfig, 4))
LLAMA_CPP_500 = {"message": "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
                            "'type'), 'msg': \"Input should be 'text' or 'json_object'\"}",
                 "type": "internal_server_error"}


def settings(base_url, **kw):
    base = dict(backend="openai", model="fake", base_url=base_url, api_key="k", backoff_s=0.01, backoff_max_s=0.05,
                max_retries=2, timeout_s=5.0, envs_per_reply=None, conversation="continued", weak_needs=False,
                weak_levers=False, focus="none")  # the paper's way of asking, as these tests were written for
    return LLMSettings.of(**{**base, **kw})


def llama_cpp_like(request):
    """llama-cpp-python 0.3.x: json_schema is a 500, json_object + schema works."""
    fmt = (request.get("response_format") or {}).get("type")
    if fmt == "json_schema":
        return 500, LLAMA_CPP_500, {}
    assert fmt == "json_object" and request["response_format"]["schema"]["properties"]["environments"]
    return 200, completion_body(GOOD), {}


def test_json_schema_refusal_falls_back_to_json_object(tmp_path):
    with FakeOpenAIServer(llama_cpp_like) as server:
        # The fake server answers every call with the same design: with the default advice the feedback reply would
        # go back for repair (or, llm.distinct, be asked again) as a repeat of the trained design; here only the
        # output modes are under test.
        designer = Designer(CRAFTER, settings(server.base_url, advice="duplicates", distinct=False),
                            tmp_path / "t.jsonl")
        configs, _ = designer.generate(4)
        designer.feedback({"collect_coal": 1, **{k: 1 for k in designer.spec.achievements}}, 4)
    assert len(configs) == 4
    # One refused json_schema request (not retried as a 5xx), then json_object for this and later calls.
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object", "json_object"]
    assert server.requests[0]["model"] == "fake" and server.requests[0]["temperature"] == 0


def test_429_and_5xx_are_retried(tmp_path):
    script = [(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
              (503, {"error": {"message": "overloaded"}}, {}), (200, completion_body(GOOD), {})]
    with FakeOpenAIServer(lambda request: script.pop(0)) as server:
        configs, _ = Designer(CRAFTER, settings(server.base_url), tmp_path / "t.jsonl").generate(4)
    assert len(configs) == 4 and len(server.requests) == 3


def test_persistent_5xx_gives_a_clear_error():
    with FakeOpenAIServer(lambda request: (502, {"error": {"message": "bad gateway"}}, {})) as server:
        with pytest.raises(LLMError, match="failed 3 times.*HTTP 502"):
            Designer(CRAFTER, settings(server.base_url)).generate(4)
    assert len(server.requests) == 3


def test_timeout_is_retried():
    calls = []

    def slow_then_fast(request):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(3.0)  # three times the client's timeout
        return 200, completion_body(GOOD), {}

    with FakeOpenAIServer(slow_then_fast) as server:
        configs, _ = Designer(CRAFTER, settings(server.base_url, timeout_s=1.0)).generate(4)
    assert len(configs) == 4 and len(calls) == 2


def test_connection_refused_gives_a_clear_error():
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with pytest.raises(LLMError, match=r"failed 3 times.*connection failed"):
        Designer(CRAFTER, settings(url)).generate(4)


def test_bad_request_is_reported_not_retried():
    with FakeOpenAIServer(lambda request: (404, {"error": {"message": "model 'fake' not found"}}, {})) as server:
        with pytest.raises(LLMError, match="refused the request.*404.*not found"):
            Designer(CRAFTER, settings(server.base_url, output_mode="text")).generate(4)
    assert len(server.requests) == 1


def test_context_overflow_is_not_retried():
    body = {"error": {"message": "Requested tokens (9000) exceed context window of 8192"}}
    with FakeOpenAIServer(lambda request: (500, body, {})) as server:
        with pytest.raises(LLMError, match="context window"):
            Designer(CRAFTER, settings(server.base_url, output_mode="text")).generate(4)
    assert len(server.requests) == 1


def test_environment_variables_are_honoured(monkeypatch):
    with FakeOpenAIServer(lambda request: (200, completion_body(GOOD), {})) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "env-key")
        # backend auto -> openai because a base URL is set; the whole design in one reply, as the server answers
        s = LLMSettings.of(model="fake", max_retries=0, envs_per_reply=None)
        assert len(Designer(CRAFTER, s).generate(4).configs) == 4
    assert len(server.requests) == 1
    assert {k.lower(): v for k, v in server.headers[0].items()}["authorization"] == "Bearer env-key"
