"""The real offline model end to end: start llama-cpp-python's server, ask for 4 Crafter configs, stop it."""

import json
import os
import time

import pytest

from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.llm import Designer, LLMSettings, LocalModelMissing
from envgen_jax.llm.local_server import find_gguf

pytestmark = pytest.mark.llm


def _gguf():
    pytest.importorskip("llama_cpp")
    try:
        return find_gguf()
    except LocalModelMissing as e:
        pytest.skip(str(e))


def test_local_server_generates_valid_crafter_configs(tmp_path):
    _gguf()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # the server gets it anyway; keep this process calm too
    start = time.monotonic()
    with Designer("crafter", LLMSettings(backend="local"), tmp_path / "t.jsonl") as designer:
        configs, purposes = designer.generate(4)
        server = designer.server
        pid = server.process.pid
        assert server.base_url.startswith("http://127.0.0.1:")
    elapsed = time.monotonic() - start
    assert len(configs) == 4 and all(isinstance(c, CrafterConfig) for c in configs)
    assert all(isinstance(p, str) and p for p in purposes)
    assert designer.server is None and server.process is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    exchange = next(r for r in records if r["event"] == "exchange" and r["accepted"])
    assert exchange["mode"] == "json_object"  # llama-cpp-python refuses json_schema with HTTP 500
    assert exchange["usage"]["completion_tokens"] > 0
    print(f"\nlocal model: {elapsed:.1f} s in all, server up in {server.startup_s:.1f} s, reply "
          f"{exchange['latency_s']:.1f} s, usage {exchange['usage']}")


def test_missing_gguf_names_the_fix(tmp_path):
    pytest.importorskip("llama_cpp")
    settings = LLMSettings(backend="local", gguf_path=str(tmp_path / "absent.gguf"))
    with pytest.raises(LocalModelMissing, match="absent.gguf does not exist"):
        Designer("crafter", settings).generate(4)
