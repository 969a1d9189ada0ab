"""Replayed designers (envgen_jax/llm/replay.py, a study's --replay): request r gets the recorded run's accepted
design r, whatever the feedback says; a request beyond the recording is an error; the study keeps the setting."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from envgen_jax import games
from envgen_jax.cli.train import replay_settings
from envgen_jax.envs.crafter.game import CRAFTER_ACHIEVEMENTS
from envgen_jax.llm import Designer, ReplayError
from envgen_jax.llm.replay import DesignReplay, recorded_designs, replay_client
from envgen_jax.llm.transcript import read_transcript
from envgen_jax.run_config import load_run_config
from envgen_jax.schema import ConfigError
from envgen_jax.study.runner import method_client
from envgen_jax.study.settings import load_settings, reconcile, resolve, save_settings

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "benchmarks" / "results" / "study_cpu_v2"


def _accepted_configs(path: Path) -> dict[int, list[dict]]:
    return {r["request"]: r["configs"] for r in read_transcript(path)
            if r.get("event") == "exchange" and r.get("accepted")}


def test_a_replayed_designer_writes_the_recorded_designs_whatever_its_feedback(tmp_path):
    path = RECORDED / "envgen" / "llm_transcript.jsonl"
    llm = load_run_config(ROOT / "configs" / "study_cpu.yaml").llm  # the settings the designs were recorded with
    client = replay_client(path, llm)
    designer = Designer(games.get("crafter").designer_spec(), llm, tmp_path / "t.jsonl", client=client)
    designs = [designer.generate(4)]
    # feedback the recorded run never saw (this agent has learnt nothing, then everything)
    for rate in (0.0, 100.0, 37.5):
        designs.append(designer.feedback({name: rate for name in CRAFTER_ACHIEVEMENTS}, 4))
    recorded = _accepted_configs(path)
    got = [c.to_dict(only_changed=True) for design in designs for c in design.configs]
    want = [dict(c) for request in range(16) for c in recorded[request]]
    assert [games.get("crafter").config_cls.from_dict(c) for c in want] == \
           [games.get("crafter").config_cls.from_dict(c) for c in got]
    assert sorted({request for request, _ in client.answered}) == list(range(16))  # one design per request
    with pytest.raises(ReplayError, match="holds 16 accepted designs .* asks for request 16"):
        client.chat.completions.create(seed=16_000, messages=[])


def test_recorded_designs_reads_every_cpu_study_transcript():
    counts = {m: len(recorded_designs(RECORDED / m / "llm_transcript.jsonl"))
              for m in ("envgen", "fixed", "easy_to_hard", "adversarial", "envgen_sfl")}
    assert counts == {"envgen": 16, "fixed": 4, "easy_to_hard": 16, "adversarial": 16, "envgen_sfl": 32}


def test_recorded_designs_names_what_cannot_be_replayed(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"event": "design", "request": 1, "ok": True}) + "\n"
                   + json.dumps({"event": "exchange", "request": 1, "accepted": True, "reply": "{}"}) + "\n")
    with pytest.raises(ReplayError, match=r"successful design requests are \[1\], not 0..0"):
        recorded_designs(bad)
    bad.write_text(json.dumps({"event": "design", "request": 0, "ok": False}) + "\n")
    with pytest.raises(ReplayError, match="records no accepted design"):
        recorded_designs(bad)
    with pytest.raises(ReplayError, match="needs each request's sampling seed"):
        DesignReplay(RECORDED / "fixed" / "llm_transcript.jsonl").chat.completions.create(messages=[])


def test_a_study_says_which_methods_replay_and_keeps_it(tmp_path):
    path = str(RECORDED / "envgen" / "llm_transcript.jsonl")
    assert replay_settings([f"envgen={path}"], ("ppo", "envgen")) == {"envgen": path}
    with pytest.raises(ConfigError) as err:
        replay_settings(["ppo=x", "random=y", "envgen", f"envgen={tmp_path / 'none.jsonl'}"], ("ppo", "envgen"))
    assert err.value.problems == [
        "--replay ppo: ppo asks no LLM; methods that do: envgen",
        "--replay random: not a method of this study (ppo, envgen)",
        "--replay 'envgen': expected METHOD=TRANSCRIPT",
        f"--replay envgen: transcript {tmp_path / 'none.jsonl'} does not exist"]
    settings = dataclasses.replace(resolve(ROOT / "configs" / "study_cpu.yaml", ["ppo", "envgen"]),
                                   replay={"envgen": path})
    save_settings(settings, tmp_path / "study.yaml")
    assert load_settings(tmp_path / "study.yaml").replay == {"envgen": path}
    assert reconcile(settings, tmp_path).replay == {"envgen": path}  # a rerun gives the same, as any setting
    for other in ({}, {"envgen": "other.jsonl"}):
        with pytest.raises(ConfigError, match="--replay envgen: the study in .* has .*, this command gives"):
            reconcile(dataclasses.replace(settings, replay=other), tmp_path)
    # the runner gives the replaying method its replay client (a run alone or a member of a fused group), the
    # others none (their own LLM), and a client given to the study to every method
    said = []
    assert isinstance(method_client(settings, "envgen", None, said.append), DesignReplay) and "envgen" in said[0]
    assert method_client(settings, "ppo", None, said.append) is None and len(said) == 1
    given = object()
    assert method_client(settings, "envgen", given, said.append) is given
