"""The benchmark machinery, on CPU at tiny sizes, with no timing thresholds: `benchmarks/run_all.py --cpu-tiny`
writes one well-formed JSON (and a PNG) per part, rows merge across invocations and survive a kill, and the
paper-reproduction table builder writes well-formed JSON and markdown. Everything goes to tmp dirs, never to
benchmarks/results/."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from envgen_jax.run.compile_record import PHASES
from tests import golden
from tests.fast_compile import xla_flags

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TINY_NOMINAL_STEPS = 2 * (256 + 256) + 512  # run_all.TINY_E2E: 2 cycles x (LLM + original) + final, per seed
# The e2e part on configs/smoke.yaml, whose agent is the golden runs' (tests/golden.py): with run_all's TINY_E2E (the
# golden TINY), 2 seeds and the suite's XLA flags it runs exactly their programs, so it loads what the suite's
# golden-shape runs compiled, or compiles it for them.
SMOKE = ["--config", "configs/smoke.yaml"]


def _run_all(*args: str, out: Path, fast_compile: bool) -> dict:
    """The subprocess arguments of `run_all.py --cpu-tiny *args` on CPU writing to `out`, with conftest's persistent
    compilation cache (inherited); at the fast-compile flags where its programs are this file's own (compiling is all
    these tiny runs spend time on), else at the suite's own (flags are part of a program's cache key)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "OMP_WAIT_POLICY": "PASSIVE"}
    if fast_compile:
        env["XLA_FLAGS"] = xla_flags()
    return dict(args=[sys.executable, "benchmarks/run_all.py", "--cpu-tiny", *args, "--out-dir", str(out),
                      "--runs-dir", str(out / "runs")], cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def run_all_tiny(tmp_path_factory):
    """Every part, into one folder: envs and training in one subprocess, e2e in another (the suite's flags)."""
    out = tmp_path_factory.mktemp("bench_results")
    stdout = ""
    for args, fast_compile in ((["--parts", "envs,training", "--envs", "8"], True),
                               (["--parts", "e2e", *SMOKE, "--seeds", "2"], False)):
        proc = subprocess.run(**_run_all(*args, out=out, fast_compile=fast_compile), capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stdout[-4000:] + "\n" + proc.stderr[-4000:]
        stdout += proc.stdout
    return out, stdout


def _load(out: Path, part: str) -> dict:
    path = out / f"{part}_cpu.json"
    assert path.is_file(), sorted(p.name for p in out.iterdir())
    data = json.loads(path.read_text())
    png = out / f"{part}_cpu.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    env = data["environment"]
    for key in ("device", "platform", "jax", "jaxlib", "craftax", "commit", "dirty", "date", "device_count"):
        assert key in env, key
    assert env["platform"] == "cpu"
    assert data["benchmark"] == part and data["cpu_tiny"] is True
    assert "not for quoting" in data["note"]
    assert data["rows"] and not [r for r in data["rows"] if "error" in r], data["rows"]
    return data


def test_run_all_envs_part(run_all_tiny):
    out, stdout = run_all_tiny
    data = _load(out, "envs")
    (row,) = data["rows"]
    assert row["num_envs"] == 8
    for variant in ("craftax", "craftax_auto", "ours_original", "ours_hetero", "ours_resets"):
        r = row["results"][variant]
        assert r["steps_per_s"] > 0 and r["median_s"] > 0 and r["compile_and_first_call_s"] >= 0
    assert set(row["ratios"]) >= {"ours_original_vs_craftax", "hetero_vs_homogeneous", "with_resets_vs_without",
                                  "world_generation_in_steps"}
    assert all(v > 0 for v in row["ratios"].values())
    for who in ("ours", "craftax"):  # world generation is timed apart from stepping
        w = row["world_generation"][who]
        assert w["s_per_world"] == w["median_s"] / 8 > 0
    assert "== envs" in stdout and "ours/craftax" in stdout


def test_run_all_training_part(run_all_tiny):
    out, stdout = run_all_tiny
    data = _load(out, "training")
    (row,) = data["rows"]
    assert row["num_envs"] == 8
    for key in ("env_only", "train_homogeneous", "train_heterogeneous"):
        assert row[key]["sps"] > 0 and len(row[key]["times_s"]) == data["settings"]["repeats"]
    assert row["env_only"]["compile_s"] > 0 and row["train_homogeneous"]["compile_s"] > 0
    for key in ("ratio_train_homo_over_env", "ratio_train_het_over_env", "ratio_het_over_homo"):
        assert row[key] > 0
    assert data["aims"]["het_over_homo"]["aim"] == 0.95
    assert data["aims"]["train_sps_at_16384"] == {"aim_at_least": 1_000_000.0, "measured_het": None}  # 8 envs only
    assert "== training" in stdout and "het/homo" in stdout


def test_run_all_e2e_part(run_all_tiny):
    from benchmarks.run_all import E2E_QUIET, TINY_E2E
    out, stdout = run_all_tiny
    data = _load(out, "e2e")
    s = data["settings"]
    assert s["config"] == "configs/smoke.yaml" and s["method"] == "envgen" and s["llm"] == "scripted"
    assert sorted([*TINY_E2E, *E2E_QUIET, "seeds=2"]) == sorted(golden.TINY)  # so its programs are the golden runs'
    (row,) = data["rows"]
    assert row["seeds"] == 2 and row["llm_calls"] == s["cycles"] == 2
    assert row["llm"]["mode"] == "scripted"
    assert row["env_steps_per_seed"] == row["nominal_env_steps_per_seed"] == TINY_NOMINAL_STEPS
    assert row["env_steps_total"] == 2 * TINY_NOMINAL_STEPS
    assert row["wall_s"] > 0 and row["sps_wall"] > 0
    assert row["compile_s"] is None or row["compile_s"] >= 0  # None: this jax names its compile events otherwise
    phases = row["phase_s"]
    assert {"llm", "train", "evaluate", "checkpoint", "init"} <= set(phases)
    assert sum(phases.values()) == pytest.approx(row["wall_s"], rel=1e-6)
    own = row["phases"]  # the run's own clock: compile taken out of the phase that waited for it, never negative
    assert set(own) == {"compile", "training", "evaluation", "llm", "checkpoint", "other"}
    assert min(own.values()) >= 0 and own["compile"] > 0
    assert data["aims"] == {"e2e_wall_s_16_seeds_cold": {"aim_at_most": 120.0, "measured": None}}  # no 16-seed row
    assert row["chunks"] == TINY_NOMINAL_STEPS // (8 * 16)  # one update of 8 envs x 16 steps per chunk
    assert row["score"] is None or 0 <= row["score"] <= 100
    assert "== e2e" in stdout and "wall / 1-seed wall" in stdout
    assert not (out / "runs").exists() or not any((out / "runs").iterdir())  # run dirs cleaned up


@pytest.mark.slow
def test_a_killed_e2e_benchmark_keeps_its_rows(run_all_tiny, tmp_path):
    """Rows are saved as measured, and a row being measured is saved after each section with its time so far: a
    kill -9 in the second seed count's run leaves the first row whole and the second as `unfinished`. The first row
    is the tiny run's above, so it loads its programs from the suite's cache; the second is killed once its first
    section (init) is saved, before it compiles a 1-seed chunk no other test needs."""
    proc = subprocess.Popen(**_run_all("--parts", "e2e", *SMOKE, "--seeds", "2,1", out=tmp_path, fast_compile=False),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = tmp_path / "e2e_cpu.json"

    def rows():
        try:
            return {r["seeds"]: r for r in json.loads(path.read_text())["rows"]}
        except (OSError, ValueError):  # not written yet (a partial file is never seen: writes are atomic)
            return {}

    deadline = time.monotonic() + 900
    try:
        while not (1 in rows() and rows()[1].get("phase_s_so_far", {}).get("init")):
            assert proc.poll() is None, "run_all ended before the kill point"
            assert time.monotonic() < deadline, "timed out waiting for the kill point"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    saved = rows()
    assert "error" not in saved[2] and saved[2]["wall_s"] > 0
    assert set(saved[2]["phases"]) == set(PHASES) and saved[2]["programs"]["cache_hits"] >= 2
    assert saved[2]["programs"]["compiled"] == 0  # init, chunk and evaluation: the tiny run's, loaded
    assert saved[1]["unfinished"] is True and "unfinished" in saved[1]["error"]
    assert saved[1]["wall_s_so_far"] > 0 and saved[1]["phase_s_so_far"]["init"] > 0


def test_training_row_keeps_what_a_time_limit_cut_off(monkeypatch):
    """The training part saves an unfinished row after the env-only timing and after the chunk's compile (the GPU's
    16384-env row was cut off twice by its box and kept nothing): here the timed training calls "are killed"."""
    from benchmarks import bench_training

    def killed_in_timing(env, cfg, updates, banks, rows, repeats, on_compiled=None):
        on_compiled(12.5)
        raise KeyboardInterrupt  # what a time limit's signal does to the timed calls
    monkeypatch.setattr(bench_training, "bench_env_only", lambda *a: (3.0, [0.5, 0.25], 1000))
    monkeypatch.setattr(bench_training, "bench_train", killed_in_timing)
    saved = []
    with pytest.raises(KeyboardInterrupt):
        bench_training.run([64], repeats=2, log=lambda m: None, partial=saved.append)
    assert [r["num_envs"] for r in saved] == [64, 64] and all(r["unfinished"] and "error" in r for r in saved)
    assert saved[0]["env_only"] == {"compile_s": 3.0, "times_s": [0.5, 0.25], "sps": 4000.0, "steps_per_call": 1000}
    assert "train_compile_s" not in saved[0] and saved[1]["train_compile_s"] == 12.5
    from benchmarks.run_all import training_aims, training_table
    _, cells = training_table({"rows": saved[1:]})
    assert cells == [[64, 4000.0, *["unfinished"] * 5, 3.0, 12.5]]
    assert training_aims(saved)["train_sps_at_16384"]["measured_het"] is None


def test_e2e_progress_is_saved_inside_a_long_section_and_never_after_it(tmp_path):
    """The e2e row is saved every E2E_SAVE_EVERY_S too (the GPU's final 1M-step phase outlasted its box between two
    section ends): `_Every` calls while its block runs, survives a failing call, and calls nothing after the block."""
    import threading
    import time
    from benchmarks.run_all import _Every, _steps_so_far
    calls, failed = [], threading.Event()

    def save():
        calls.append(time.perf_counter())
        if len(calls) == 2 and not failed.is_set():
            failed.set()
            raise OSError("a file half written")
    with _Every(save, 0.01):
        while len(calls) < 4:
            time.sleep(0.005)
    ended = len(calls)
    time.sleep(0.05)
    assert failed.is_set() and len(calls) == ended >= 4
    metrics = tmp_path / "metrics.jsonl"  # read while the run appends: a half-written last line is skipped
    metrics.write_text('{"env_steps": 128}\n{"env_steps": 256}\n{"env_st')
    assert _steps_so_far(metrics) == 256 and _steps_so_far(tmp_path / "none.jsonl") is None


def test_resumable_results_survive_a_kill_mid_write(tmp_path, monkeypatch):
    """The resumable benchmarks rewrite their results after every measurement: a write stopped half way (here the
    disk "fills" after some bytes) must leave the previous file whole, not a truncated JSON that --resume rejects."""
    from benchmarks.common import write_text_atomic
    path = tmp_path / "designer.json"
    write_text_atomic(path, json.dumps({"calls": [1, 2]}))
    real_write = Path.write_text

    def half_write(self, text, *args, **kwargs):
        real_write(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError("No space left on device")
    monkeypatch.setattr(Path, "write_text", half_write)
    with pytest.raises(OSError):
        write_text_atomic(path, json.dumps({"calls": [1, 2, 3]}))
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"calls": [1, 2]}
    write_text_atomic(path, json.dumps({"calls": [1, 2, 3]}))
    assert json.loads(path.read_text()) == {"calls": [1, 2, 3]}


def test_rows_merge_across_invocations(tmp_path):
    from benchmarks.common import save_merged

    settings = {"steps": 4}
    logs = []
    save_merged("e2e", {"settings": settings, "rows": [{"seeds": 1, "wall_s": 1.0}, {"seeds": 8, "wall_s": 2.0}]},
                "seeds", tmp_path, "cpu", log=logs.append)
    path = save_merged("e2e", {"settings": settings, "rows": [{"seeds": 8, "wall_s": 3.0}, {"seeds": 32,
                                                                                           "wall_s": 4.0}]},
                       "seeds", tmp_path, "cpu", log=logs.append)
    rows = json.loads(path.read_text())["rows"]
    assert [(r["seeds"], r["wall_s"]) for r in rows] == [(1, 1.0), (8, 3.0), (32, 4.0)]  # 8 replaced, 1 kept
    assert any("keeping 1 earlier row" in m for m in logs)
    # Other settings, or --fresh: the earlier rows go.
    path = save_merged("e2e", {"settings": {"steps": 5}, "rows": [{"seeds": 2, "wall_s": 5.0}]}, "seeds", tmp_path,
                       "cpu", log=logs.append)
    assert [r["seeds"] for r in json.loads(path.read_text())["rows"]] == [2]
    path = save_merged("e2e", {"settings": {"steps": 5}, "rows": [{"seeds": 4, "wall_s": 5.0}]}, "seeds", tmp_path,
                       "cpu", fresh=True)
    assert [r["seeds"] for r in json.loads(path.read_text())["rows"]] == [4]


def _fake_report(method: str, scores, rewards) -> dict:
    import numpy as np
    return {"method": method, "env": "crafter", "seeds": len(scores), "first_seed": 0,
            "score": float(np.mean(scores)), "score_std": float(np.std(scores)),
            "crafter_score": float(np.mean(scores)), "crafter_score_std": float(np.std(scores)),
            "score_per_seed": list(scores), "reward": float(np.mean(rewards)), "reward_std": float(np.std(rewards)),
            "reward_per_seed": list(rewards), "episodes_per_seed": [10] * len(scores), "llm_calls": 4,
            "env_steps": 2_097_152, "scored_env_steps": 1_048_576, "wall_seconds": 12.5}


def test_reproduce_table_json_markdown_plot(tmp_path):
    from benchmarks import reproduce_paper as rp

    runs, out = tmp_path / "runs", tmp_path / "out"
    fake = {"ppo": ([20.0, 22.0], [10.0, 11.0]), "envgen": ([30.0, 31.0, 32.0], [12.0, 12.5, 13.0])}
    for method, (scores, rewards) in fake.items():
        (runs / method).mkdir(parents=True)
        (runs / method / "report.json").write_text(json.dumps(_fake_report(method, scores, rewards)))
        llm = {"mode": "none"} if method == "ppo" else {"mode": "config", "backend": "openai", "model": "m"}
        (runs / method / rp.META).write_text(json.dumps({"method": method, "llm": llm, "cpu_tiny": False,
                                                          "environment": {"device": "gpu:Fake", "commit": "abc"}}))
    result = rp.main(["--table-only", "--runs-dir", str(runs), "--out-dir", str(out), "--tag", "test"])
    paths = result["paths"]
    assert set(paths) == {"json", "md", "png"} and all(Path(p).parent == out for p in paths.values())
    table = json.loads(Path(paths["json"]).read_text())
    assert [r["method"] for r in table["rows"]] == list(rp.METHODS)
    assert table["smoke_test"] is False and table["environment"]["device"] == "gpu:Fake"
    by = {r["method"]: r for r in table["rows"]}
    assert by["envgen"]["ours"]["score"] == pytest.approx(31.0)
    assert by["envgen"]["ours"]["score_std"] == pytest.approx(0.8165, abs=1e-4)
    assert by["ppo"]["ours"]["reward"] == pytest.approx(10.5) and by["ppo"]["ours"]["seeds"] == 2
    assert by["fixed"]["ours"] is None and by["fixed"]["paper"]["score"] == 29.9
    for method, paper in rp.PAPER.items():
        assert by[method]["paper"] == {k: paper[k] for k in ("score", "score_std", "reward", "reward_std")}
    cmp = table["envgen_vs_ppo"]
    assert cmp["envgen_minus_ppo_score"] == pytest.approx(10.0) and cmp["margin_larger_than_spread"] is True
    assert cmp["paper_envgen_minus_ppo_score"] == pytest.approx(5.8)

    md = Path(paths["md"]).read_text()
    table_lines = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table_lines) == 2 + len(rp.METHODS)
    assert all(line.count("|") == table_lines[0].count("|") for line in table_lines)
    assert "| PPO+EnvGen | Tables 1 and 3 | 31.0 +/- 0.8 | 12.5 +/- 0.4 | 3 | 2,097,152 | openai: m | 32.2 +/- 0.6 " \
           "| 12.6 +/- 0.6 |" in md
    assert "missing" in md and "SMOKE" not in md
    assert Path(paths["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # A smoke run anywhere in the table labels the whole table as a smoke test.
    meta = json.loads((runs / "ppo" / rp.META).read_text())
    (runs / "ppo" / rp.META).write_text(json.dumps({**meta, "cpu_tiny": True}))
    result = rp.main(["--table-only", "--runs-dir", str(runs), "--out-dir", str(out), "--tag", "test"])
    assert result["table"]["smoke_test"] is True
    assert "SMOKE TEST" in Path(result["paths"]["md"]).read_text()


def test_reproduce_arguments():
    from benchmarks import reproduce_paper as rp

    args = rp.parse_args([])
    assert args.llm == "auto" and args.methods == list(rp.METHODS)
    assert rp.run_overrides(args)[0] == "seeds=8"
    args = rp.parse_args(["--cpu-tiny", "--llm-set", "n_threads=8", "--set", "seeds=3"])
    o = rp.run_overrides(args)
    assert args.llm == "scripted" and "seeds=2" in o and o.index("seeds=3") > o.index("seeds=2")
    assert "llm.n_threads=8" in o and "llm.backend=openai" in o
    with pytest.raises(SystemExit):
        rp.parse_args(["--methods", "ppo,nope"])


# ------------------------------------------------------------------------------------------------------------------
# agent_sample_efficiency: tiny recipes in-process. Both recipes train one agent (layer norm, value normalisation) in
# 4-agent programs, "tiny" with 4 seeds and "tiny_grid" with 2 learning rates x 2 seeds: the traced hyperparameters
# are part of every agent's state, so one compiled init and train chunk serve every call below.


@pytest.fixture
def tiny_agent_benchmark(monkeypatch):
    from benchmarks import agent_sample_efficiency as ase
    from envgen_jax.trainer.config import ExecutionConfig, PPOAlgorithm, TrainerConfig
    from envgen_jax.trainer.encoders import MLPNet, NetworkConfig
    tiny = TrainerConfig(PPOAlgorithm(num_envs=4, num_steps=8, update_epochs=1, num_minibatches=2, value_norm=True),
                         NetworkConfig(mlp=MLPNet(width=16, depth=1, layer_norm=True)),
                         ExecutionConfig(resets_per_step=1))
    monkeypatch.setattr(ase, "RECIPES", {"tiny": {"agent": tiny, "why": "test"},
                                         "tiny_grid": {"agent": tiny, "grid": {"lr": [1e-3, 3e-4]},
                                                       "why": "test grid"}})
    monkeypatch.setattr(ase, "WINDOWS", {"first": (0, 64), "last": (64, 128)})
    monkeypatch.setattr(ase, "CURVE_BIN", 32)
    return ase


def _agent_benchmark(ase, tmp_path, recipes: str, seeds: int) -> int:
    return ase.main(["--recipes", recipes, "--seeds", str(seeds), "--steps", "128", "--updates-per-chunk", "1",
                     "--out-dir", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")])


def test_agent_benchmark_writes_windows_table_and_plot(tiny_agent_benchmark, tmp_path, capsys):
    ase = tiny_agent_benchmark
    assert _agent_benchmark(ase, tmp_path, "tiny_grid", 2) == 0
    assert _agent_benchmark(ase, tmp_path, "tiny", 4) == 0  # its row joins the saved one
    data = json.loads((tmp_path / "out" / "agent_sample_efficiency_cpu.json").read_text())
    assert [s["recipe"] for s in data["summaries"]] == ["tiny", "tiny_grid [lr 0.001]", "tiny_grid [lr 0.0003]"]
    tiny = data["summaries"][0]
    assert set(tiny["windows"]) == {"first", "last"} and len(tiny["windows"]["last"]["score_per_seed"]) == 4
    row = data["rows"][0]
    assert row["ppo"]["ppo"]["value_norm"] is True and row["ppo"]["num_agents"] == 4  # written out in full
    # the windows pool exactly the episodes of their chunks (32 steps per chunk and agent)
    eps = np.sum([c["episodes"] for c in row["chunks"][2:4]], axis=0)
    assert tiny["windows"]["last"]["episodes_per_seed"] == eps.tolist()
    assert data["rows"][1]["agent_seeds"] == [0, 1, 0, 1] and data["rows"][1]["hparams"]["lr"] == [1e-3, 1e-3,
                                                                                                  3e-4, 3e-4]
    assert [s["seeds"] for s in data["summaries"][1:]] == [2, 2]
    assert (tmp_path / "out" / "agent_sample_efficiency_cpu.png").read_bytes()[:4] == b"\x89PNG"
    assert "| tiny | 4 |" in (tmp_path / "out" / "agent_sample_efficiency_cpu.md").read_text()
    # finished recipes are not trained again; a list naming an unknown recipe trains none
    capsys.readouterr()
    for recipe, seeds in (("tiny", 4), ("tiny_grid", 2)):
        assert _agent_benchmark(ase, tmp_path, recipe, seeds) == 0
        assert f"{recipe} ({seeds} seeds): done already" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        _agent_benchmark(ase, tmp_path, "tiny,nope", 4)
    assert "--recipes: nope; choose from tiny, tiny_grid" in capsys.readouterr().err


def test_agent_benchmark_resumes_exactly(tiny_agent_benchmark, tmp_path):
    ase = tiny_agent_benchmark
    straight = ase.train_recipe("tiny", 4, 128, tmp_path / "a", 1, checkpoint_minutes=0, log=lambda m: None)
    ase.train_recipe("tiny", 4, 64, tmp_path / "b", 1, checkpoint_minutes=0, log=lambda m: None)  # "killed" at 64
    resumed = ase.train_recipe("tiny", 4, 128, tmp_path / "b", 1, checkpoint_minutes=0, log=lambda m: None)
    assert len(resumed["timing"]["sessions"]) == 2
    assert resumed["chunks"] == straight["chunks"]


def test_two_studies_side_by_side_read_from_their_json(tmp_path):
    from benchmarks import compare_studies
    from envgen_jax.study import difference, mean_ci, pairwise

    def study(scores: dict) -> dict:
        methods = {m: {"score": mean_ci(v), "vs_ppo": {"score": difference(v, scores["ppo"])},
                       "vs_envgen": {"score": difference(v, scores["envgen"])} if "envgen" in scores else None}
                   for m, v in scores.items()}
        return {"methods": methods, "pairwise": {"score": pairwise(scores)}}

    first = study({"ppo": [5.0, 6.0], "envgen": [7.0, 7.5]})
    first_pairs = first.pop("pairwise")  # an older study.json, from before every pair was compared
    second = study({"ppo": [12.0, 13.0, 12.5], "envgen": [14.0, 15.0, 14.5], "scripted": [16.0, 16.5, 17.0]})
    for name, data in (("a", first), ("b", second)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "study.json").write_text(json.dumps(data))
    out = tmp_path / "table.md"
    assert compare_studies.main([str(tmp_path / "a"), str(tmp_path / "b"), "--labels", "one", "two",
                                 "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].split(" | ")[1:3] == ["one: score % [95% CI]", "one: vs ppo"]
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in lines[2:]}
    assert list(rows) == ["ppo", "envgen", "scripted"]
    assert rows["ppo"][1].startswith("5.5 +/- 0.5") and rows["ppo"][3].startswith("12.5 +/- 0.4")
    assert rows["scripted"][1] == "-" and rows["scripted"][2] == "-" and rows["ppo"][4] == "-"
    # the first study's pairs, missing from its json, are computed from its per-seed scores
    first_p_holm = first_pairs["score"][0]["p_holm"]
    assert rows["envgen"][2].startswith("+1.8 [") and f"p_Holm = {first_p_holm:.2f}" in rows["envgen"][2]
    # envgen - ppo = +2.0; its pair is listed as (ppo, envgen), so the seed-beats probability is turned around
    assert rows["envgen"][4].startswith("+2.0 [") and "P(beats) = 1.00" in rows["envgen"][4]
    p_holm = next(r["p_holm"] for r in second["pairwise"]["score"] if {r["a"], r["b"]} == {"ppo", "envgen"})
    assert f"p_Holm = {p_holm:.2f}" in rows["envgen"][4]
    assert rows["scripted"][5].startswith("+2.0 [")  # vs envgen
    with pytest.raises(SystemExit, match="study.json: no such file"):
        compare_studies.main([str(tmp_path / "a"), str(tmp_path / "missing")])


def test_dirty_means_the_measured_code_differs_from_the_commit(tmp_path, monkeypatch):
    """A change to code, a benchmark or a config is dirty; a change to a saved result or a doc is not. (Until
    2026-11-27 git was asked from inside envgen_jax/, where these paths name nothing: every result said clean.)"""
    from envgen_jax.run.provenance import REPO, git_commit
    assert (REPO / "pyproject.toml").is_file() and (REPO / "benchmarks").is_dir()  # git_commit()'s default
    monkeypatch.delenv("BENCH_COMMIT", raising=False)

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    files = ["envgen_jax/a.py", "benchmarks/b.py", "benchmarks/results/r.json", "configs/c.yaml", "docs/d.md"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("0\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "x")
    assert git_commit(tmp_path)["dirty"] is False
    for name, dirty in zip(files, [True, True, False, True, False]):
        (tmp_path / name).write_text("1\n")
        assert git_commit(tmp_path)["dirty"] is dirty, name
        git("checkout", "--", name)


def test_bench_commit_names_a_copied_tree_even_where_git_answers(monkeypatch):
    """Where git answers with another commit (a device machine's copy once did), the commit the session script was
    given wins."""
    from envgen_jax.run.provenance import git_commit
    monkeypatch.delenv("BENCH_COMMIT", raising=False)
    assert git_commit()["commit_source"] in ("git", "unknown: no git here and no BENCH_COMMIT")
    monkeypatch.setenv("BENCH_COMMIT", "0" * 40)
    monkeypatch.setenv("BENCH_DIRTY", "1")
    assert git_commit() == {"commit": "0" * 40, "dirty": True, "commit_source": "BENCH_COMMIT"}


def test_gpu_session_summary_reads_what_each_stage_left(tmp_path):
    """The session's summary holds every stage's line and each result a stage saved, also from a stage cut off."""
    from benchmarks import gpu_session_summary
    (tmp_path / "stages.tsv").write_text("check\t60\t3.2\tok\npixel_seeds\t200\t200.4\ttimed out at 200s\n")
    (tmp_path / "check.json").write_text(json.dumps({"device": "gpu:NVIDIA H200"}))
    seed_axis = {"benchmark": "pixel_seed_axis", "environment": {"device": "gpu:NVIDIA H200"},
                 "variants": {"vmap": {"compile_s": 60.0, "times_s": [5.5]}}}
    (tmp_path / "pixel_seed_axis.json").write_text(json.dumps(seed_axis))
    out = gpu_session_summary.main([str(tmp_path), "--out", str(tmp_path / "session.json")])
    assert out == json.loads((tmp_path / "session.json").read_text())
    assert [s["stage"] for s in out["stages"]] == ["check", "pixel_seeds"]
    assert out["stages"][1]["status"].startswith("timed out") and out["device"] == "gpu:NVIDIA H200"
    assert out["pixel_seed_axis"] == {k: v for k, v in seed_axis.items() if k != "environment"}
    assert out["pixel_agent_1m"] is None and out["e2e_cold"] is None


def test_craftax_agent_screen_reads_finished_runs_and_applies_its_stated_rule(tmp_path):
    from benchmarks import craftax_agent_screen as screen

    def run(name, end_per_seed):
        out = tmp_path / name
        out.mkdir()
        report = {"seeds": len(end_per_seed), "first_seed": 0, "env_steps": 999_424, "wall_seconds": 10.0,
                  "return_pct_end_per_seed": end_per_seed, "return_pct_end": float(np.mean(end_per_seed)),
                  "return_pct_end_std": float(np.std(end_per_seed)), "return_pct_per_seed": [1.0] * len(end_per_seed),
                  "score_per_seed": [0.5] * len(end_per_seed), "achievements": {"enter_dungeon": 2.0}}
        (out / "report.json").write_text(json.dumps(report))
        (out / "metrics.jsonl").write_text(json.dumps({"seconds": 4.0}) + "\n" + json.dumps({"seconds": 6.0}) + "\n")
        return screen.row(name, out)

    paper, close, better = run("paper", [2.0, 2.2]), run("mlp_ln_vn", [2.1, 2.2]), run("map", [2.5, 3.1])
    assert close["return_pct_end"]["mean"] == pytest.approx(2.15) and close["train_seconds"] == 10.0
    assert close["eval_return_pct"]["mean"] is None and close["deep_skills"]["enter_dungeon"] == 2.0
    assert screen.choose([paper, close]) == "paper"       # within 0.1 points: the paper's agent stays
    assert screen.choose([paper, close, better]) == "map"
    assert screen.choose([close]) == "mlp_ln_vn" and screen.choose([]) is None
    assert screen.row("lowsample", tmp_path / "absent") is None  # not finished: no row
    screen.write([paper, better], tmp_path / "screen")  # two candidates not run yet: a leader, no winner
    written = json.loads((tmp_path / "screen.json").read_text())
    assert written["winner"] is None and written["leader"] == "map" and written["rule"] == screen.RULE
    assert written["not_yet_run"] == ["mlp_ln_vn", "lowsample"] and written["winner_files"] is None
    assert "Not finished (mlp_ln_vn, lowsample still to run): leading by the rule so far, **map**" in \
        (tmp_path / "screen.md").read_text()
    screen.write([paper, close, better, {**close, "candidate": "lowsample"}], tmp_path / "screen")
    written = json.loads((tmp_path / "screen.json").read_text())
    assert written["winner"] == "map" and written["winner_files"] == "benchmarks/results/craftax_agent_screen/map"
    assert screen.kept_dir("paper") == screen.ROOT / "benchmarks" / "results" / "craftax_ppo_paper_shape"
    assert "Winner by the rule: **map**" in (tmp_path / "screen.md").read_text()
    # A finished run is kept without its checkpoints; once its directory is gone, the kept copy is read.
    (tmp_path / "map" / "checkpoints").mkdir()
    assert screen.keep(tmp_path / "map", tmp_path / "kept" / "map") == tmp_path / "map"
    assert sorted(p.name for p in (tmp_path / "kept" / "map").iterdir()) == ["metrics.jsonl", "report.json"]
    assert screen.keep(tmp_path / "gone", tmp_path / "kept" / "map") == tmp_path / "kept" / "map"
    assert screen.row("map", tmp_path / "kept" / "map")["return_pct_end"]["mean"] == pytest.approx(2.8)
    shape = screen.write_paper_shape(paper, tmp_path / "paper.json")
    assert shape["return_pct"]["per_seed"] == [2.0, 2.2] and shape["return_pct"]["mean"] == pytest.approx(2.1)
    assert shape["within_published_spread"] is True and shape["published_ppo"]["mean"] == 2.2
    assert screen.write_paper_shape(better, tmp_path / "paper.json")["within_published_spread"] is False


def test_craftax_agents_in_configs_are_the_ones_the_screen_measured():
    """configs/craftax_ppo_paper.yaml trains what item 1's run of the paper's agent trained, and the game's default
    agent (configs/craftax_ppo.yaml, base/craftax.yaml's) is the screen's winner (the kept runs' config.yaml; all but
    the seeds, which the screen sets)."""
    from benchmarks import craftax_agent_screen as screen
    from envgen_jax.run_config import load_run_config
    from envgen_jax.study.runner import what_trains

    def trains(path: Path) -> dict:
        return {k: v for k, v in what_trains(load_run_config(path)).items() if k != "seeds"}

    assert screen.CONFIG == ROOT / "configs" / "craftax_ppo_paper.yaml"
    assert trains(screen.CONFIG) == trains(screen.kept_dir("paper") / "config.yaml")
    result = json.loads((ROOT / "benchmarks" / "results" / "craftax_agent_screen_cpu.json").read_text())
    winner = result["winner"]
    assert winner in screen.CANDIDATES and result["winner_files"] == str(screen.kept_dir(winner).relative_to(ROOT))
    assert trains(ROOT / "configs" / "craftax_ppo.yaml") == trains(screen.kept_dir(winner) / "config.yaml")


def test_craftax_1m_study_is_its_runs():
    """The committed Craftax-1M study (issue 73) is what its kept runs measured: each finished method's return %
    (the three measures) per seed is its report.json's, every run trained what the kept study.yaml says for its
    method (the rule by which the study reuses a run: `what_trains`), 4+ seeds x 1M steps, and every session of it
    ran the pinned commit, clean."""
    from envgen_jax.run_config import load_run_config
    from envgen_jax.study.compare import read_lines
    from envgen_jax.study.runner import what_trains
    from envgen_jax.study.settings import load_settings

    kept = ROOT / "benchmarks" / "results" / "craftax_1m"
    study = json.loads((kept / "study.json").read_text())
    settings = load_settings(kept / "study.yaml")
    commit = (kept / "commit").read_text().strip()
    finished = {m: r for m, r in study["methods"].items() if r["status"] == "finished"}
    assert set(finished) == {"ppo", "envgen", "scripted", "random", "sfl", "plr", "envgen_sfl", "easy_to_hard"}
    assert settings.run["seeds"] >= 4 and settings.run["env"] == "craftax"
    for method, row in finished.items():
        report = json.loads((kept / method / "report.json").read_text())
        assert report["method"] == method and report["env_steps"] == 999_424
        for measure in ("return_pct", "return_pct_end", "eval_return_pct"):
            assert row[measure]["per_seed"] == report[f"{measure}_per_seed"], (method, measure)
            assert len(row[measure]["per_seed"]) == settings.run["seeds"]
        assert what_trains(load_run_config(kept / method / "config.yaml")) == what_trains(settings.run_config(method))
        sessions = read_lines(kept / method / "sessions.jsonl")
        assert sessions or method == "ppo", method  # ppo: the agent screen's winning run, trained before the pin
        assert all(s["commit"] == commit and not s["dirty"] for s in sessions), method


def test_the_readme_craftax_1m_table_is_the_committed_study():
    """README's Craftax-1M table is what benchmarks/craftax_1m_table.py reads from the committed study.json, so no
    number in it was copied by hand or left behind when a method finished; a method still training is a row saying
    so, not a blank."""
    from benchmarks import craftax_1m_table as t

    study = json.loads(t.STUDY.read_text())
    assert t.readme_block((ROOT / "README.md").read_text()) == t.table(study), \
        "README.md's Craftax-1M table is stale: python benchmarks/craftax_1m_table.py --write"
    rows = t.table(study).splitlines()[2:]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == list(study["methods"])
    for row, (method, entry) in zip(rows, study["methods"].items()):
        assert (f"{entry['return_pct']['mean']:.2f} +/- " in row) if entry["status"] == "finished" \
            else ("not yet measured" in row), method


def test_the_readme_second_study_table_is_its_study_json():
    """README's table of the second CPU study (written by hand) holds study_cpu_v2/study.json's numbers: each
    method's score, its seeds, the difference from ppo with its CI, the Holm-adjusted p and P(> ppo)."""
    study = json.loads((ROOT / "benchmarks" / "results" / "study_cpu_v2" / "study.json").read_text())
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## The second CPU study in full"):readme.index("Score: the Crafter score over")]
    rows = [r for r in section.splitlines() if r.startswith("| ") and not r.startswith("| method")]
    pairs = {frozenset((r["a"], r["b"])): r for r in study["pairwise"]["score"]}
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == list(study["methods"])
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        method, entry = cells[0], study["methods"][cells[0]]["score"]
        assert cells[1:3] == [f"{entry['mean']:.1f} +/- {entry['std']:.1f}",
                              ", ".join(f"{v:.1f}" for v in entry["per_seed"])], method
        if method == "ppo":
            continue
        diff, pair = study["methods"][method]["vs_ppo"]["score"], pairs[frozenset((method, "ppo"))]
        beats = pair["p_superior"] if pair["a"] == method else 1 - pair["p_superior"]
        assert cells[3:6] == [f"{diff['difference']:+.1f} [{diff['ci95'][0]:+.1f}, {diff['ci95'][1]:+.1f}]",
                              f"{pair['p_holm']:.2f}", f"{beats:.2f}"], method
