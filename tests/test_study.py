"""`envgen-jax study` end to end at tiny size: two methods x two seeds, a failure then a resume, the statistics
against plain numpy, and bad input."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.special import stdtr

from envgen_jax.cli import main
from envgen_jax.config_io import dump_yaml, load_yaml
from envgen_jax.run.loop import EnvGenRun
from envgen_jax.study import RESAMPLES, RNG_SEED, difference, holm, mean_ci, pairwise, reconcile, resolve, superiority
from tests.trainer_configs import tiny_run

ROOT = Path(__file__).resolve().parent.parent
TINY = tiny_run(seeds=None, cycles=1, llm_env_steps=512, final_steps=2048, llm_episode_length=32)
# One method after another (a fused study: tests/test_fused.py).
ARGS = ["study", "--config", str(ROOT / "configs" / "smoke.yaml"), "--methods", "ppo,random", "--seeds", "2",
        "--grouping", "sequential",
        *sum([["--set", s] for s in TINY], [])]
# What may differ between two builds of the same study: time taken, and which sessions ran where.
VARYING = ("llm_seconds", "train_seconds", "wall_seconds", "sessions", "steps_per_second")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("study") / "s"
    assert main([*ARGS, "--out", str(out)]) == 0
    return out, json.loads((out / "study.json").read_text())


def _comparable(study: dict) -> dict:
    study = {k: v for k, v in study.items() if k != "environment"}
    study["methods"] = {m: {k: v for k, v in r.items() if k not in VARYING} for m, r in study["methods"].items()}
    return study


def test_study_runs_every_method_alike_and_compares_them(study):
    out, data = study
    for name in ["study.yaml", "study.json", "study.md", "study_scores.png", "study_curves.png",
                 "study_success_by_cycle.png", "ppo/report.json", "random/report.json", "random/sessions.jsonl"]:
        assert (out / name).is_file(), name
    assert list(data["methods"]) == ["ppo", "random"] and data["study"]["seeds"] == 2
    for method, r in data["methods"].items():
        report = json.loads((out / method / "report.json").read_text())
        assert r["status"] == "finished" and report["method"] == method and report["seeds"] == 2
        assert r["env_steps"] == data["study"]["env_steps_per_seed"] == 512 + 256 + 2048  # same steps everywhere
        assert r["score"]["per_seed"] == report["score_per_seed"] and len(r["score"]["per_seed"]) == 2
        assert r["reward"]["per_seed"] == report["reward_per_seed"]
        assert 0.0 <= r["stale_restarts"]["share"] <= 1.0 and r["train_seconds"] > 0
        assert [e["after"] for e in r["evaluations"]] == ["cycle 1", "final"]
    assert data["methods"]["ppo"]["vs_ppo"] is None and data["methods"]["random"]["vs_ppo"]["score"]["difference"] \
        == pytest.approx(data["methods"]["random"]["score"]["mean"] - data["methods"]["ppo"]["score"]["mean"])
    # Per-environment learning: random's two environments of cycle 1, their episodes from its LLM phase.
    learning = data["methods"]["random"]["environment_learning"]
    assert len(learning) == 1 and len(learning[0]["environments"]) == 2
    chunks = [json.loads(x) for x in (out / "random" / "metrics.jsonl").read_text().splitlines()]
    in_llm_envs = np.sum([c["episodes_per_seed"] for c in chunks if c["phase"] == "llm"], axis=0)
    assert np.sum([e["episodes_per_seed"] for e in learning[0]["environments"]], axis=0).tolist() == \
        in_llm_envs.tolist()
    assert data["methods"]["ppo"]["environment_learning"] == []
    # The second method trains and evaluates with the first one's trainer and evaluator (one process; the same
    # agent, bank size and evaluation): none of their programs traced, compiled or loaded again (trainer.reuse).
    compile_record = json.loads((out / "random" / "report.json").read_text())["compile"]
    names = {p["name"] for p in compile_record["programs"]}
    assert not names & {"jit(_init_blank)", "jit(_train_chunk)", "jit(_run)"}, names
    md = (out / "study.md").read_text()
    for text in ["| ppo | finished |", "| random | finished |", "Welch's two-sided t-test", "### random",
                 "## Success per achievement", "stale restarts", data["environment"]["commit"][:12]]:
        assert text in md, text


def test_evaluations_keep_each_seeds_mean_return(study):
    out, _ = study
    for m in ("ppo", "random"):
        final = json.loads((out / m / "report.json").read_text())["final_evaluation"]
        per_seed = final["mean_return_per_seed"]
        assert len(per_seed) == 2 and np.mean(per_seed) == pytest.approx(final["return_mean"], rel=1e-6)


def _numpy_stats(x, r):
    """The study's statistics, recomputed with plain numpy (scipy only for the t distribution's tail)."""
    x, r = np.asarray(x, float), np.asarray(r, float)
    rng = np.random.default_rng(RNG_SEED)
    ci_x = np.quantile(x[rng.integers(0, len(x), (RESAMPLES, len(x)))].mean(axis=1), [0.025, 0.975])
    rng = np.random.default_rng(RNG_SEED)
    boot = (x[rng.integers(0, len(x), (RESAMPLES, len(x)))].mean(axis=1)
            - r[rng.integers(0, len(r), (RESAMPLES, len(r)))].mean(axis=1))
    vx, vr = x.var(ddof=1) / len(x), r.var(ddof=1) / len(r)
    t = (x.mean() - r.mean()) / np.sqrt(vx + vr)
    df = (vx + vr) ** 2 / (vx ** 2 / (len(x) - 1) + vr ** 2 / (len(r) - 1))
    return {"mean": x.mean(), "std": x.std(), "ci95": ci_x, "difference": x.mean() - r.mean(),
            "diff_ci95": np.quantile(boot, [0.025, 0.975]), "t": t, "df": df, "p": 2 * stdtr(df, -abs(t))}


def _check(x, r):
    expected, got, diff = _numpy_stats(x, r), mean_ci(x), difference(x, r)
    assert got["mean"] == pytest.approx(expected["mean"]) and got["std"] == pytest.approx(expected["std"])
    assert got["ci95"] == pytest.approx(expected["ci95"])
    assert diff["difference"] == pytest.approx(expected["difference"])
    assert diff["ci95"] == pytest.approx(expected["diff_ci95"])
    assert (diff["t"], diff["df"], diff["p_value"]) == pytest.approx((expected["t"], expected["df"], expected["p"]))


def test_statistics_equal_plain_numpy(study):
    _check([10.0, 12.5, 11.0, 14.0], [9.0, 9.5, 11.0, 8.0])
    _check([3.0, 5.0, 4.0], [1.0, 2.0, 2.5, 2.0, 0.5])
    _, data = study  # and the study's own numbers, from its per-seed scores
    for key in ("score", "reward"):
        x, r = (data["methods"][m][key]["per_seed"] for m in ("random", "ppo"))
        expected = _numpy_stats(x, r)
        assert data["methods"]["random"][key]["ci95"] == pytest.approx(expected["ci95"])
        assert data["methods"]["random"]["vs_ppo"][key]["p_value"] == pytest.approx(expected["p"])


def test_holm_and_the_probability_that_a_seed_beats_another(study):
    # Holm by hand: sorted 0.01, 0.02, 0.04 times 3, 2, 1 -> 0.03, 0.04, 0.04 (kept monotone), in input order; a
    # missing test stays out of the family.
    assert holm([0.04, 0.01, None, 0.02]) == pytest.approx([0.04, 0.03, None, 0.04], abs=1e-12)
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    # P(a seed of A beats a seed of B), ties half: [1, 2, 3] vs [2, 3, 4] wins 3 > 2 and ties 2 = 2, 3 = 3 -> 2/9.
    assert superiority([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]) == pytest.approx(2 / 9)
    assert superiority([2.0, 2.0], [2.0, 1.0]) == 0.75 and superiority([None], [1.0]) is None
    rows = pairwise({"a": [1.0, 2.0, 3.0], "b": [2.0, 3.0, 4.0], "c": [5.0, 6.0, 7.5]})
    assert [(r["a"], r["b"]) for r in rows] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert rows[0]["p_superior"] == pytest.approx(2 / 9) and rows[1]["p_superior"] == 0.0
    assert [r["p_holm"] for r in rows] == pytest.approx(holm([r["p_value"] for r in rows]))
    assert rows[1]["p_holm"] > rows[1]["p_value"]  # three tests: the smallest p is tripled
    # The study's pairs: ppo vs random, a family of one.
    _, data = study
    (pair,) = data["pairwise"]["score"]
    assert (pair["a"], pair["b"]) == ("ppo", "random") and pair["p_holm"] == pytest.approx(pair["p_value"])
    assert "## Every pair of methods" in (study[0] / "study.md").read_text()
    # The final evaluation against ppo: random's last evaluation per seed against ppo's, a family of one.
    (final,) = data["final_evaluation_vs_ppo"]
    x, r = (data["methods"][m]["evaluations"][-1]["score_per_seed"] for m in ("random", "ppo"))
    assert final["method"] == "random" and final["per_seed"] == x
    assert final["difference"] == pytest.approx(np.mean(x) - np.mean(r))
    assert final["p_value"] == difference(x, r)["p_value"] and final["p_holm"] == final["p_value"]
    assert "The final evaluation against ppo" in (study[0] / "study.md").read_text()


def test_statistics_say_why_they_are_missing():
    one = mean_ci([12.0, None])  # a seed without a finished scored episode is left out, not counted as 0
    assert one["n"] == 1 and one["mean"] == 12.0 and one["ci95"] is None and "2 or more" in one["ci_note"]
    same = mean_ci([5.0, 5.0, 5.0])
    assert same["ci95"] is None and same["std"] == 0.0 and "same value" in same["ci_note"]
    d = difference([5.0, 5.0], [3.0, 3.0])
    assert d["difference"] == 2.0 and d["p_value"] is None and d["ci95"] is None and "no spread" in d["note"]
    d = difference([5.0], [3.0, 4.0])
    assert d["p_value"] is None and "need 2 or more" in d["note"]


def test_a_failed_method_does_not_stop_the_study_and_the_rerun_resumes_it(study, tmp_path, monkeypatch, capsys):
    out, data = study
    rerun = tmp_path / "s"
    shutil.copytree(out, rerun, ignore=shutil.ignore_patterns("ppo"))  # ppo has to train again; random is done

    original = EnvGenRun._evaluate

    def crash_at_the_end(self, ts, members, cycle):  # after the cycle-boundary checkpoint, during the final phase
        if cycle == self.cfg.schedule.cycles:
            raise RuntimeError("simulated crash")
        return original(self, ts, members, cycle)

    monkeypatch.setattr(EnvGenRun, "_evaluate", crash_at_the_end)
    assert main([*ARGS, "--out", str(rerun)]) == 2
    captured = capsys.readouterr()
    assert "error: ppo failed (RuntimeError: simulated crash)" in captured.err and "Traceback" not in captured.err
    assert "RuntimeError: simulated crash" in (rerun / "errors.log").read_text()  # the traceback went here
    assert "random: finished earlier" in captured.out  # the next method still ran
    failed = json.loads((rerun / "study.json").read_text())
    assert failed["methods"]["ppo"]["status"] == "failed" and failed["methods"]["random"]["status"] == "finished"

    monkeypatch.setattr(EnvGenRun, "_evaluate", original)
    assert main([*ARGS, "--out", str(rerun)]) == 0
    assert "[ppo] resuming" in capsys.readouterr().out
    assert _comparable(json.loads((rerun / "study.json").read_text())) == _comparable(data)
    def chunks(run):  # metrics.jsonl without its timings: the resumed run dropped what followed its checkpoint
        return [{k: v for k, v in json.loads(line).items() if k not in ("steps_per_second", "seconds")}
                for line in (run / "ppo" / "metrics.jsonl").read_text().splitlines()]

    assert chunks(rerun) == chunks(out)
    assert [s["action"] for s in map(json.loads, (rerun / "ppo" / "sessions.jsonl").read_text().splitlines())] == \
        ["start", "resume"]


def test_bad_input_and_changed_settings_are_clear_errors(study, tmp_path, capsys):
    out, _ = study
    before = (out / "study.json").read_text()
    assert main([*ARGS[:3], "--methods", "ppo,magic", "--out", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert ("'magic' is not a method; allowed: envgen, ppo, fixed, easy_to_hard, adversarial, random, plr, sfl, "
            "envgen_sfl, scripted") in err
    assert not (tmp_path / "x").exists()
    assert main([*ARGS, "--seeds", "3", "--out", str(out)]) == 1
    assert f"seeds: the study in {out} has 2, this command gives 3" in capsys.readouterr().err
    dropped = [a if a != "ppo,random" else "ppo" for a in ARGS]
    assert main([*dropped, "--out", str(out)]) == 1
    assert "a rerun may only add methods" in capsys.readouterr().err
    assert (out / "study.json").read_text() == before  # nothing was touched
    # Adding a method keeps the study's own settings and order.
    settings = resolve(ROOT / "configs" / "smoke.yaml", ["random", "fixed", "ppo"], 2, TINY)
    assert reconcile(settings, out).methods == ("ppo", "random", "fixed")


def test_compare_only_rewrites_the_comparison_from_the_runs_and_trains_nothing(study, tmp_path, capsys):
    """--compare-only rebuilds study.json/md from the run directories with the study's saved settings: a finished
    method as the study compared it, one not finished as not started (not trained); flags that would set anything
    else are errors, not ignored."""
    out, data = study
    again = tmp_path / "s"
    shutil.copytree(out, again)
    for name in ("study.json", "study.md"):
        (again / name).unlink()
    shutil.rmtree(again / "random")
    assert main(["study", "--compare-only", "--out", str(again)]) == 0
    assert "compared the 1 finished of 2 methods (ppo); nothing trained" in capsys.readouterr().out
    rebuilt = json.loads((again / "study.json").read_text())
    assert _comparable(rebuilt)["methods"]["ppo"] == _comparable(data)["methods"]["ppo"]
    assert rebuilt["methods"]["random"]["status"] == "not started" and not (again / "random").exists()
    assert "## Cost, and checks on the training" in (again / "study.md").read_text()
    assert main(["study", "--compare-only", "--out", str(again), "--seeds", "3", "--methods", "ppo"]) == 1
    err = capsys.readouterr().err
    assert "--seeds: not with --compare-only" in err and "--methods: not with --compare-only" in err
    assert main(["study", "--compare-only", "--out", str(tmp_path / "none")]) == 1
    assert "no study.yaml there" in capsys.readouterr().err
    assert main(["study", "--compare-only"]) == 1
    assert "--out DIR: required with --compare-only" in capsys.readouterr().err
    assert main(["study", "--methods", "ppo"]) == 1
    assert "--config FILE.yaml: required" in capsys.readouterr().err


def test_the_keeper_copies_finished_runs_and_rewrites_the_comparison_once(study, tmp_path):
    """benchmarks/study_keep.sh, which the resumable studies source: keep_finished copies each finished run without
    its checkpoints into KEEP, with the study's files rewritten by main's code (once per new study.json, after it
    is a minute old)."""
    import os
    import subprocess
    import time

    out, _ = study
    run, keep = tmp_path / "run", tmp_path / "keep"
    shutil.copytree(out, run)
    keep.mkdir()
    (run / "study.md").write_text("written by a pinned older commit\n")
    old = time.time() - 300
    os.utime(run / "study.json", (old, old))
    env = {**os.environ, "MAIN": str(ROOT), "OUT": str(run), "KEEP": str(keep)}
    keeper = f". {ROOT / 'benchmarks' / 'study_keep.sh'}; keep_finished study.md study.json"
    subprocess.run(["bash", "-c", keeper], env=env, check=True, cwd=tmp_path)
    assert "written by a pinned older commit" not in (keep / "study.md").read_text()
    assert "## Cost, and checks on the training" in (keep / "study.md").read_text()
    assert (keep / "ppo" / "report.json").is_file() and not (keep / "ppo" / "checkpoints").exists()
    assert (run / "ppo" / "checkpoints").is_dir()
    compared = (run / "study.json").stat().st_mtime
    subprocess.run(["bash", "-c", keeper], env=env, check=True, cwd=tmp_path)
    assert (run / "study.json").stat().st_mtime == compared  # nothing new to compare: not rewritten again


def test_a_finished_run_made_with_other_output_or_llm_settings_is_reused(study, tmp_path, capsys):
    """Plain PPO trained outside the study (its own output and LLM settings) counts as the study's ppo run; a
    setting that changes what it learns is still an error."""
    out, data = study
    rerun = tmp_path / "s"
    shutil.copytree(out, rerun)
    saved = load_yaml(rerun / "ppo" / "config.yaml")
    saved["output"]["checkpoint_minutes"] += 7  # never read by training
    saved["llm"]["temperature"] = 0.1  # ppo asks no LLM
    (rerun / "ppo" / "config.yaml").write_text(dump_yaml(saved))
    assert main([*ARGS, "--out", str(rerun)]) == 0
    said = capsys.readouterr().out
    assert "ppo: reusing a run made with other llm, output settings, none of which changes what it learns" in said
    assert "ppo: finished earlier" in said and "random: finished earlier" in said
    assert _comparable(json.loads((rerun / "study.json").read_text())) == _comparable(data)
    saved["ppo"]["lr"] /= 2
    (rerun / "ppo" / "config.yaml").write_text(dump_yaml(saved))
    assert main([*ARGS, "--out", str(rerun)]) == 1
    assert "config.yaml: differs from the study's settings" in capsys.readouterr().err


def test_the_study_config_reruns_the_designer_the_second_study_ran():
    """configs/study_cpu.yaml reruns the second study: every LLM setting its envgen run saved is the file's too, so
    a later change of LLMSettings' defaults (the designer's ideas decided after the study) cannot change what the
    file asks; `analysis`, added after the study, asks as the study did (each reply writes its analysis)."""
    import yaml

    from envgen_jax.run_config import load_run_config
    saved = yaml.safe_load((ROOT / "benchmarks/results/study_cpu_v2/envgen/config.yaml").read_text())["llm"]
    now = load_run_config(ROOT / "configs" / "study_cpu.yaml").llm.flat()  # saved before the sections: flat
    assert {key: now[key] for key in saved} == saved
    assert now["analysis"] == "each_reply"


def test_a_heist_study_reports_heists_score(tmp_path):
    # Evaluations and the comparison score Heist with Heist's own score (subtasks never offered left out), never the
    # Crafter formula, which is undefined (None) whenever a level offers no lock of some colour.
    from envgen_jax import games
    from envgen_jax.trainer.metrics import subtask_score
    out = tmp_path / "heist"
    heist = ["game_options.mode=easy", "observation=symbolic", "ppo.network=mlp", "schedule.original_env_steps=0"]
    assert main(["study", "--config", str(ROOT / "configs" / "heist_envgen.yaml"), "--methods", "ppo", "--seeds", "2",
                 "--out", str(out), *sum([["--set", s] for s in TINY + heist], [])]) == 0
    report = json.loads((out / "ppo" / "report.json").read_text())
    evals = [*report["cycle_evaluations"], report["final_evaluation"]]
    summary = json.loads((out / "study.json").read_text())["methods"]["ppo"]["evaluations"]
    for e, row in zip(evals, summary, strict=True):
        assert "crafter_score_mean" not in e
        rates = np.array([[np.nan if r is None else r for r in seed] for seed in e["success_per_seed"]])
        expected = subtask_score(rates)
        assert row["score_per_seed"] == e["score_per_seed"]
        assert [np.nan if v is None else v for v in e["score_per_seed"]] == pytest.approx(expected, nan_ok=True)
        assert row["score_mean"] == e["score_mean"]
    md = (out / "study.md").read_text()
    assert f"## Evaluations in the original game ({games.get('heist').score_name} %" in md
    assert "Heist score (ours" in (out / "ppo" / "report.md").read_text()


def _rebuilt_and_committed(study_dir: Path) -> tuple[list[str], list[str]]:
    """A committed study's study.md as today's code rebuilds it from the committed runs, and as committed: their
    lines but the one saying when and where it was built, and the status rows of methods still training (their
    status is "started" where their run directory is, "not started" among the kept finished runs)."""
    from envgen_jax.study import build_comparison, load_settings, markdown

    study = build_comparison(study_dir, load_settings(study_dir / "study.yaml"))
    rebuilt = markdown(study, ["study_scores.png", "study_curves.png", "study_success_by_cycle.png"])
    training = tuple(f"| {m} | " for m, r in study["methods"].items() if r["status"] != "finished")

    def kept_lines(text: str) -> list[str]:
        return [line for line in text.splitlines()
                if not line.startswith("Comparison built ") and not (training and line.startswith(training))]

    return kept_lines(rebuilt), kept_lines((study_dir / "study.md").read_text())


def test_the_second_studys_comparison_rebuilds_to_its_committed_study_md():
    """study.md is a pure function of the run directories: rebuilt by today's code from the committed second study,
    it is the committed file but for the line saying when and where it was built."""
    rebuilt, committed = _rebuilt_and_committed(ROOT / "benchmarks" / "results" / "study_cpu_v2")
    assert rebuilt == committed


def test_the_craftax_1m_comparison_rebuilds_to_its_committed_study_md():
    """The same for the Craftax-1M study (issue 73), which trains from a commit pinned before today's study code:
    after each method it finishes, its comparison is rewritten with today's code, so the committed study.md is
    today's rendering of its committed runs."""
    rebuilt, committed = _rebuilt_and_committed(ROOT / "benchmarks" / "results" / "craftax_1m")
    assert rebuilt == committed, \
        "rewrite it: envgen-jax study --compare-only --out runs/craftax_1m (the study's run directory; its keeper " \
        "copies it), or --out benchmarks/results/craftax_1m in a checkout without the runs"


def test_the_study_package_keeps_each_concern_short():
    """Issue 55: one module per concern, no module over 500 lines, no function over 80."""
    import ast

    package = ROOT / "envgen_jax" / "study"
    assert {p.stem for p in package.glob("*.py")} >= {"stats", "settings", "runner", "compare", "markdown", "plots"}
    for path in package.glob("*.py"):
        source = path.read_text()
        assert len(source.splitlines()) <= 500, path
        long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(source))
                if isinstance(n, ast.FunctionDef) and n.end_lineno - n.lineno + 1 > 80]
        assert long == [], (path, long)
