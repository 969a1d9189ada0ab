"""`envgen-jax llm generate`: the designer on its own, against a fake OpenAI-compatible server."""

import itertools
import json

import pytest

from envgen_jax.cli import main as run
from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.envs.crafter.game import CRAFTER_ACHIEVEMENTS
from envgen_jax.llm.testing import FakeOpenAIServer, completion_body, design_json, varied_configs

# `llm generate` asks as a run does by default: one environment per reply (llm.strategy.envs_per_reply).
GOOD = [design_json([c], [f"purpose {i}"]) for i, c in enumerate(varied_configs(CrafterConfig, 4))]
GOOD_2 = [design_json([c]) for c in varied_configs(CrafterConfig, 2, offset=7)]


@pytest.fixture
def server():
    replies = [*GOOD, *GOOD_2]
    with FakeOpenAIServer(lambda request: (200, completion_body(replies.pop(0) if replies else "junk"), {})) as s:
        yield s


def test_generate_feedback_and_replay(tmp_path, server, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "envs.json"
    common = ["--base-url", server.base_url, "--model", "fake"]
    assert run(["llm", "generate", "--env", "crafter", "--out", str(out), *common]) == 0
    written = json.loads(out.read_text())
    assert written["env"] == "crafter" and len(written["environments"]) == 4
    assert [e["purpose"] for e in written["environments"]] == [f"purpose {i}" for i in range(4)]
    assert [CrafterConfig.from_dict(e["config"]).to_dict(only_changed=True) for e in written["environments"]] == \
        varied_configs(CrafterConfig, 4)
    assert (tmp_path / "envs.transcript.jsonl").is_file()
    assert "wrote 4 configurations" in capsys.readouterr().out
    assert len(server.requests) == 4  # the adopted designer's way: one environment per reply

    feedback = tmp_path / "success.json"
    feedback.write_text(json.dumps({name: [10.0, 2.0] for name in CRAFTER_ACHIEVEMENTS}))
    out2 = tmp_path / "envs2.json"
    transcript = tmp_path / "fb.jsonl"
    assert run(["llm", "generate", "--feedback", str(feedback), "--previous", str(out), "--num-envs", "2",
                "--out", str(out2), "--transcript", str(transcript), *common]) == 0
    assert len(json.loads(out2.read_text())["environments"]) == 2
    prompt = server.requests[4]["messages"][0]["content"]  # a fresh conversation: the generation prompt first
    assert "collect_coal: 10% +/- 2%" in prompt and "Environment 4: {" in prompt  # llm.history "json"

    out3 = tmp_path / "envs3.json"
    assert run(["llm", "generate", "--feedback", str(feedback), "--previous", str(out), "--num-envs", "2",
                "--backend", "replay", "--transcript", str(transcript), "--out", str(out3)]) == 0
    assert json.loads(out3.read_text())["environments"] == json.loads(out2.read_text())["environments"]
    assert len(server.requests) == 6  # the replay never touched the server


def _fails(argv, capsys, status, *fragments):
    assert run(argv) == status
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
    return err


def test_bad_input_exits_1_with_a_message(tmp_path, capsys):
    out = str(tmp_path / "envs.json")
    _fails(["llm", "generate", "--feedback", str(tmp_path / "missing.json"), "--out", out], capsys, 1,
           "invalid --feedback file", "cannot read", "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"collect_coal": 250}))
    _fails(["llm", "generate", "--feedback", str(bad), "--backend", "openai", "--model", "m", "--base-url",
            "http://127.0.0.1:9/v1", "--out", out], capsys, 1, "collect_coal", "wake_up: missing")
    bad.write_text("{not json")
    _fails(["llm", "generate", "--feedback", str(bad), "--out", out], capsys, 1, "bad.json is not JSON")
    _fails(["llm", "generate", "--backend", "replay", "--out", out], capsys, 1, "needs --transcript")
    config = tmp_path / "llm.yaml"
    config.write_text("llm:\n  colour: red\n")
    _fails(["llm", "generate", "--llm-config", str(config), "--out", out], capsys, 1, "llm.colour: unknown setting")
    _fails(["llm", "generate", "--llm-config", str(tmp_path / "absent.yaml"), "--out", out], capsys, 1,
           "absent.yaml: no such file")
    config.write_text("llm: [unclosed\n")
    _fails(["llm", "generate", "--llm-config", str(config), "--out", out], capsys, 1, "llm.yaml: not valid YAML")


def test_a_failed_llm_step_exits_2(tmp_path, capsys):
    out = str(tmp_path / "envs.json")
    config = tmp_path / "llm.yaml"
    config.write_text(f"llm:\n  gguf_path: {tmp_path / 'none.gguf'}\n")
    _fails(["llm", "generate", "--backend", "local", "--llm-config", str(config), "--out", out], capsys, 2,
           "the LLM step failed", "none.gguf does not exist")
    with FakeOpenAIServer(lambda request: (200, completion_body("I refuse to answer in JSON."), {})) as s:
        _fails(["llm", "generate", "--base-url", s.base_url, "--model", "fake", "--max-repairs", "1",
                "--out", out], capsys, 2, "after 2 replies (1 repair)", "no JSON object")
    assert not (tmp_path / "envs.json").exists()


def test_generate_writes_the_targets_each_environment_names(tmp_path, capsys):
    """The output file holds an environment as a run's environments/cycle_<c>.json does: targets, purpose, config."""
    iron = {"environment_settings": {"target_biome": "mountain", "iron_rarity": "very common"},
            "inventory_settings": {"stone_pickaxe": 1}}
    zombies = {"creature_settings": {"zombies": "very common"}, "inventory_settings": {"wood_sword": 1}}
    replies = [design_json([iron], ["iron"], targets=[["collect_iron"]]),
               design_json([zombies], ["zombies"], targets=[["defeat_zombie"]])]
    answers = itertools.cycle(replies)  # one environment per reply, in this order
    out = tmp_path / "envs.json"
    config = tmp_path / "llm.yaml"  # the designer that asks for targets and shows them back in words
    config.write_text("llm:\n  targets: true\n  history: summary\n")
    with FakeOpenAIServer(lambda request: (200, completion_body(next(answers)), {})) as s:
        assert run(["llm", "generate", "--num-envs", "2", "--base-url", s.base_url, "--model", "fake",
                    "--llm-config", str(config), "--out", str(out)]) == 0
    written = json.loads(out.read_text())["environments"]
    assert [list(e) for e in written] == [["targets", "purpose", "config"]] * 2
    assert [e["targets"] for e in written] == [["collect_iron"], ["defeat_zombie"]]
    assert written[0]["config"]["inventory_settings"]["stone_pickaxe"] == 1
    # Read back with --previous, the targets are shown to the designer as a run's second cycle shows them.
    feedback = tmp_path / "success.json"
    feedback.write_text(json.dumps({name: 20.0 for name in CRAFTER_ACHIEVEMENTS}))
    with FakeOpenAIServer(lambda request: (200, completion_body(next(answers)), {})) as s:
        assert run(["llm", "generate", "--feedback", str(feedback), "--previous", str(out), "--num-envs", "2",
                    "--base-url", s.base_url, "--model", "fake", "--llm-config", str(config),
                    "--out", str(tmp_path / "envs2.json")]) == 0
        prompt = s.requests[0]["messages"][-1]["content"]
    assert "It was meant to train collect_iron." in prompt and "It was meant to train defeat_zombie." in prompt
    bad = json.loads(out.read_text())
    bad["environments"][1]["targets"] = ["mine_iron"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    _fails(["llm", "generate", "--feedback", str(feedback), "--previous", str(tmp_path / "bad.json"), "--base-url",
            "http://127.0.0.1:1/v1", "--model", "fake", "--out", str(tmp_path / "envs3.json")], capsys, 1,
           "bad.json: environments[1].targets: expected a list of Crafter achievements (collect_coal, ",
           "got ['mine_iron']")
