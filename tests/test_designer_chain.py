"""benchmarks/designer_chain.py over a scripted client (no LLM): one conversation of 4 cycles, the repeats across
cycles and inside a cycle counted as worked out by hand, and --resume runs only the missing chains."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import designer_chain as chain  # noqa: E402
from envgen_jax import games  # noqa: E402
from envgen_jax.envs.crafter.config import CrafterConfig  # noqa: E402
from envgen_jax.llm.testing import ScriptedClient, design_json, varied_configs  # noqa: E402
from envgen_jax.llm.settings import LLMSettings  # noqa: E402

# The paper's way of asking (one reply a cycle, in one conversation), pinned in the old flat keys, which still read.
PAPER = "  envs_per_reply: null\n  conversation: continued\n  weak_needs: false\n  weak_levers: false\n  focus: none\n"

A = varied_configs(CrafterConfig, 4)
B = varied_configs(CrafterConfig, 4, offset=9)
ZOMBIES = {"creature_settings": {"zombies": "very common"}, "inventory_settings": {"wood_sword": 1}}
# cycle 1: A; cycle 2: B (new); cycle 3: B again (every environment repeated, the whole design too); cycle 4: one of
# A, the zombie environment twice (a duplicate inside the cycle) and one of B.
SCRIPT = [design_json(A), design_json(B), design_json(B), design_json([A[2], ZOMBIES, ZOMBIES, B[0]])]


def _config(tmp_path):
    path = tmp_path / "run.yaml"  # one reply per cycle, taken as it comes: exactly the script above
    path.write_text("env: crafter\nllm:\n  temperature: 0.7\n  targets: false\n  advice: none\n  max_repairs: 0\n"
                    + PAPER)
    return path


def test_a_chain_counts_repeats_across_and_inside_cycles(tmp_path):
    out = tmp_path / "chain.json"
    args = ["--config", str(_config(tmp_path)), "--base-url", "http://scripted.invalid/v1", "--model", "fake",
            "--seeds", "3", "--out", str(out)]
    client = ScriptedClient(list(SCRIPT))
    result = chain.main(args, client=client)
    assert len(client.calls) == 4
    [record] = result["chains"]
    assert record["ok"] and record["seed"] == 3 and [c["profile"] for c in record["cycles"]] == \
        [None, "weak_stone_tools", "weak_iron_diamond", "weak_combat"]
    assert all(c["replies"] == 1 for c in record["cycles"])
    # the later cycles' feedback is about the designer's own previous design, in one conversation
    assert [len(call["messages"]) for call in client.calls] == [1, 3, 5, 7]
    rows = chain.score(record)
    assert [(r["repeated"], r["distinct"], r["same_design"]) for r in rows] == [(0, 4, False), (4, 4, True),
                                                                                 (2, 3, False)]
    helps = games.get("crafter").targeting.helps
    weak = chain.PROFILES["crafter"]["weak_combat"].weak
    assert rows[2]["targeting"] == sum(bool(helps(CrafterConfig.from_dict(c), weak))
                                       for c in [A[2], ZOMBIES, ZOMBIES, B[0]]) >= 2  # the zombie pair serves it
    assert [(s["repeated"], s["environments"]) for s in result["summary"]] == [(0, 4), (4, 4), (2, 4)]
    md = out.with_suffix(".md").read_text()
    assert "| 3 | weak_iron_diamond | 1 | 100% (4/4) | 100% | 0 | 1 |" in md
    assert "| 4 | weak_combat | 1 | 50% (2/4) | 75% | 1 | 0 |" in md  # the zombie environment twice
    # per call: 1 duplicate in 4 calls; 6 repeats in 3 feedback calls; no re-ask (max_repairs 0)
    assert result["per_call"] == {"calls": 4, "duplicates": 1, "duplicates_per_call": 0.25, "feedback_calls": 3,
                                  "repeats": 6, "repeats_per_call": 2.0, "reasks_per_call": 0.0}
    assert "Per call: 0.25 duplicates inside a call (1 in 4 calls, the first cycle's included), 2.00 repeats" in md
    assert json.loads(out.read_text())["chains"][0]["cycles"][3]["configs"][1] == ZOMBIES
    # --resume: the finished chain is kept, only the new seed asks
    client2 = ScriptedClient(list(SCRIPT))
    chain.main([*args[:-4], "--seeds", "3,4", "--out", str(out), "--resume"], client=client2)
    assert len(client2.calls) == 4 and [c["seed"] for c in json.loads(out.read_text())["chains"]] == [3, 4]
    saved = json.loads(out.read_text())
    assert all(c["measured"]["commit"] is not None and "started" in c["measured"] for c in saved["chains"])
    # --resume with nothing to run leaves the file as it was (the environment its chains were made in)
    before = out.read_bytes()
    chain.main([*args[:-4], "--seeds", "3", "--out", str(out), "--resume"], client=ScriptedClient([]))
    assert out.read_bytes() == before


def test_resume_refuses_other_settings_but_not_a_setting_added_since_at_its_earlier_value():
    settings = {"config": "c.yaml", "num_envs": 4, "llm": {"temperature": 0.7, "needs": True}}
    # a field the file predates, at the value that asks as the code did before it (not today's default)
    added = {**settings, "llm": {**settings["llm"], "analysis": "each_reply"}}
    assert chain.differing(settings, added) == [] and LLMSettings().strategy.analysis == "first_reply"
    assert chain.differing(settings, {**added, "llm": {**added["llm"], "analysis": "first_reply"}}) == \
        ["llm.analysis"]
    assert chain.differing(settings, {**settings, "llm": {**settings["llm"], "advice": "all"}}) == ["llm.advice"]
    # chains made before llm.distinct asked without it: resumable with it off, not with today's default (on)
    assert chain.differing(settings, {**added, "llm": {**added["llm"], "distinct": False}}) == []
    assert chain.differing(settings, {**added, "llm": {**added["llm"], "distinct": True}}) == ["llm.distinct"]
    assert chain.differing(settings, {**settings, "num_envs": 2, "llm": {"temperature": 0.0, "needs": True}}) == \
        ["num_envs", "llm.temperature"]
    # files written since the split hold the strategy in its section; `unserved` left the settings at "accept"
    split = {**settings, "llm": {"temperature": 0.7, "strategy": {"needs": True, "analysis": "each_reply"}}}
    assert chain.differing({**settings, "llm": {**settings["llm"], "unserved": "accept"}}, split) == []
    assert chain.differing({**settings, "llm": {**settings["llm"], "unserved": "targets_first"}}, split) == \
        ["llm.unserved"]


def test_a_guarded_chain_asks_repeats_again_and_report_rebuilds_without_a_model(tmp_path):
    """llm.distinct (on by default) with its repair budget: cycle 3 repeats cycle 2's design and is asked again once;
    the chain counts the re-ask, and --report rebuilds the table from the stored chains alone."""
    path = tmp_path / "run.yaml"
    path.write_text("env: crafter\nllm:\n  temperature: 0.7\n  advice: none\n  max_repairs: 1\n" + PAPER)
    C = varied_configs(CrafterConfig, 4, offset=3)
    script = [design_json(A), design_json(B), design_json(B), design_json(C), design_json([ZOMBIES, *A[:1], *B[:2]]),
              design_json([ZOMBIES, ZOMBIES, *varied_configs(CrafterConfig, 2, offset=17)])]
    out = tmp_path / "chain.json"
    args = ["--config", str(path), "--base-url", "http://scripted.invalid/v1", "--model", "fake", "--seeds", "0",
            "--out", str(out)]
    client = ScriptedClient(script)
    result = chain.main(args, client=client)
    assert len(client.calls) == 6 and result["chains"][0]["ok"]
    assert [c["reasks"] for c in result["chains"][0]["cycles"]] == [0, 0, 1, 1]
    # cycle 4's second try still holds a duplicate: used, and left in the record
    assert result["chains"][0]["cycles"][3]["repeats_left"] == ["written twice in one answer (environments 1 and 2)"]
    assert result["per_call"]["reasks_per_call"] == 0.5 and result["per_call"]["repeats"] == 0
    assert result["per_call"]["duplicates"] == 1
    table = out.with_suffix(".md").read_text()
    saved = json.loads(out.read_text())
    out.write_text(json.dumps({**saved, "summary": [], "per_call": None}))
    rebuilt = chain.main(["--report", "--out", str(out)])  # no --config, no client: nothing is asked
    assert rebuilt["summary"] == saved["summary"] and out.with_suffix(".md").read_text() == table
