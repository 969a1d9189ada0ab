"""A fused study (issue 61): methods x seeds on one agent axis, one compiled chunk. Agent (method m, seed s) of a
fused run equals the run of m alone with seed s: the same metrics, evaluations, designs and final parameters, bit
for bit on CPU; a kill and the same command again gives the uninterrupted result; a method that fails loses no other
method's results."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from envgen_jax.envs.crafter import CrafterConfig
from envgen_jax.llm.testing import ScriptedClient, auto_reply
from envgen_jax.run.loop import EnvGenRun
from envgen_jax.run.member import common_checkpoints
from envgen_jax.study import resolve
from envgen_jax.study.groups import PAPER_LOOP, groups, program_of
from envgen_jax.trainer.checkpoint import newest_checkpoint
from tests import golden

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("ppo", "envgen", "random", "scripted")
# The golden runs' tiny shapes (2 seeds, 2 cycles): the runs alone share their programs with tests/test_loop.py.
SETTINGS = golden.TINY + golden.LLM
TIMES = ("seconds", "steps_per_second", "wall_seconds", "compile", "phases", "llm_seconds", "sessions")


def _settings():
    return resolve(ROOT / "configs" / "smoke.yaml", METHODS, overrides=SETTINGS)


def _client():
    return ScriptedClient(default=auto_reply(CrafterConfig))


def _without_times(x):
    if isinstance(x, dict):
        return {k: _without_times(v) for k, v in x.items() if k not in TIMES}
    if isinstance(x, list):
        return [_without_times(v) for v in x]
    return x


def _outputs(run_dir: Path) -> dict:
    """What a run wrote that must not depend on how it was scheduled (times left out)."""
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    designs = sorted((run_dir / "environments").glob("*.json")) if (run_dir / "environments").exists() else []
    return {"metrics": _without_times(lines), "report": _without_times(json.loads((run_dir / "report.json").read_text())),
            "designs": {p.name: p.read_text() for p in designs}}


def _final_params(run: EnvGenRun, run_dir: Path):
    member = run.members[0]
    bank, rows = member.method.bank_and_rows("final")
    ts = run.trainer.restore(newest_checkpoint(run_dir / "checkpoints"), bank, rows, seeds=member.cfg.agent_seeds)
    return jax.device_get(run.trainer.agent_state(ts).params)


@pytest.fixture(scope="module")
def fused_and_alone(tmp_path_factory):
    root = tmp_path_factory.mktemp("fused")
    settings = _settings()
    fused = EnvGenRun.fused([(settings.run_config(m), root / "fused" / m) for m in METHODS], llm_client=_client())
    reports = fused.run()
    alone = {}
    for m in METHODS:
        run = EnvGenRun(settings.run_config(m), root / "alone" / m, llm_client=_client())
        run.run()
        alone[m] = run
    return root, settings, fused, reports, alone


def test_the_paper_loop_is_one_program_and_level_replay_its_own():
    settings = resolve(ROOT / "configs" / "smoke.yaml", ["ppo", "envgen", "plr", "random", "sfl", "envgen_sfl"],
                       overrides=SETTINGS)
    assert program_of("ppo", settings.run_config("ppo"))[0] == PAPER_LOOP
    assert groups(settings, "fused") == [["ppo", "envgen", "random"], ["plr"], ["sfl"], ["envgen_sfl"]]
    assert groups(settings, "sequential") == [[m] for m in settings.methods]


def test_fused_agents_equal_the_runs_alone_bit_for_bit(fused_and_alone):
    root, settings, fused, reports, alone = fused_and_alone
    assert len(reports) == len(METHODS) and fused.errors == {}
    assert fused.trainer is alone["ppo"].trainer  # one trainer; the fused chunk is its program at 8 agents
    for m in METHODS:
        a, b = _outputs(root / "fused" / m), _outputs(root / "alone" / m)
        assert a["metrics"] == b["metrics"], m
        assert a["report"] == b["report"], m
        assert a["designs"] == b["designs"], m
        assert len(a["report"]["cycle_evaluations"]) == settings.run_config(m).schedule.cycles
        largest = max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
                      for x, y in zip(jax.tree.leaves(_final_params(fused, root / "fused" / m)),
                                      jax.tree.leaves(_final_params(alone[m], root / "alone" / m))))
        assert largest == 0.0, f"{m}: final parameters differ by up to {largest}"
    # The methods did differ (else equal outputs would prove little): random's designs are not envgen's.
    assert _outputs(root / "fused" / "random")["designs"] != _outputs(root / "fused" / "envgen")["designs"]
    assert _outputs(root / "fused" / "ppo")["metrics"] != _outputs(root / "fused" / "random")["metrics"]
