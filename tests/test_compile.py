"""Compile once (issue 44): the persistent compilation cache of `envgen-jax train`, the compile record and the
per-phase times in the run directory and report.json (benchmark rows that survive a kill: test_benchmarks.py)."""

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

from envgen_jax.run.compile_cache import ENV_SWITCH, configure_compile_cache, default_cache_dir
from envgen_jax.run.compile_record import PHASES, PhaseTimer
from envgen_jax.schema import ConfigError
from tests import golden
from tests.fast_compile import xla_flags
from tests.toy import CHILD, write_toy_package

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_configured_cache(monkeypatch):
    """This process as `envgen-jax train` starts: no cache folder chosen yet (conftest chose the suite's)."""
    saved = (jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs)
    jax.config.update("jax_compilation_cache_dir", None)
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    yield
    jax.config.update("jax_compilation_cache_dir", saved[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", saved[1])


def test_cache_folder_under_xdg_cache_home_and_switches(no_configured_cache, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "envgen_jax" / "xla"
    assert configure_compile_cache(False) is None and jax.config.jax_compilation_cache_dir is None  # the setting
    monkeypatch.setenv(ENV_SWITCH, "0")
    assert configure_compile_cache(True) is None  # the variable wins over the setting
    monkeypatch.setenv(ENV_SWITCH, "maybe")
    with pytest.raises(ConfigError, match=f"{ENV_SWITCH}: 'maybe' is not one of 1, true, on, yes, 0, false"):
        configure_compile_cache(True)
    monkeypatch.setenv(ENV_SWITCH, "1")
    folder = configure_compile_cache(False)
    assert folder == str(tmp_path / "xdg" / "envgen_jax" / "xla") == jax.config.jax_compilation_cache_dir
    assert Path(folder).is_dir() and not list(Path(folder).iterdir())  # the write probe left nothing behind
    # A folder chosen before (JAX_COMPILATION_CACHE_DIR, the test suite's) is kept.
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "theirs"))
    assert configure_compile_cache(True) == str(tmp_path / "theirs") == jax.config.jax_compilation_cache_dir


def test_a_cache_folder_that_cannot_be_written_is_a_warning(no_configured_cache, monkeypatch, tmp_path, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # as root, a read-only mode would not stop the writes
    with caplog.at_level(logging.WARNING, logger="envgen_jax"):
        assert configure_compile_cache(True) is None
    assert jax.config.jax_compilation_cache_dir is None  # the run goes on uncached
    assert any("cannot be written" in r.getMessage() and str(blocker) in r.getMessage() for r in caplog.records)


def test_phase_times_nest_sum_to_the_wall_and_are_written_as_they_end(tmp_path):
    compiled = [0.0]
    path = tmp_path / "phases.json"
    timer = PhaseTimer(path, lambda: compiled[0], earlier={"training": 5.0}, sessions=2)
    start = time.monotonic()
    with timer.section("train"):
        assert json.loads(path.read_text())["running"] == "training"
        time.sleep(0.02)
        compiled[0] += 0.01  # compile work inside training goes to "compile"
        with timer.section("checkpoint"):
            time.sleep(0.01)
    written = json.loads(path.read_text())
    assert written["running"] is None and written["sessions"] == 2
    with timer.section("init"):  # not one of the named phases: other
        pass
    totals = timer.totals()
    wall = time.monotonic() - start
    assert list(totals) == list(PHASES)
    assert totals["compile"] == pytest.approx(0.01, abs=1e-3)
    assert totals["training"] >= 5.0 + 0.01 - 1e-3 and totals["checkpoint"] >= 0.01 - 1e-3
    assert sum(totals.values()) - 5.0 == pytest.approx(wall, abs=0.01)
    assert not list(tmp_path.glob(".*partial"))


def _env(cache_home: Path) -> dict:
    """A process as a user starts one: no JAX_COMPILATION_CACHE_DIR (conftest's), the project's folder under
    `cache_home`, the suite's fast-compile flags (part of the cache key, so alike in every run)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", ENV_SWITCH)}
    env.update({"JAX_PLATFORMS": "cpu", "XDG_CACHE_HOME": str(cache_home), "OMP_WAIT_POLICY": "PASSIVE",
                "XLA_FLAGS": xla_flags()})
    return env


# A program compiled in a fresh process through the project's cache setup; prints the compile record.
SMALL_PROGRAM = """
import json, jax, jax.numpy as jnp
from envgen_jax.run.compile_cache import configure_compile_cache
from envgen_jax.run.compile_record import CompileRecord
from envgen_jax.trainer.ahead import Program
folder = configure_compile_cache(True)
def small(x):
    return jnp.sin(x) * 2 + x.sum()
with CompileRecord() as record:
    jax.block_until_ready(Program(small)(jnp.ones((3, 5))))
print(json.dumps({"folder": folder, **record.summary()}))
"""


def _small_program(cache_home: Path) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", SMALL_PROGRAM], cwd=ROOT, env=_env(cache_home), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout + proc.stderr


def test_a_corrupt_entry_is_compiled_again_and_an_unwritable_folder_runs_uncached(tmp_path):
    first, _ = _small_program(tmp_path / "xdg")
    assert first["folder"] == str(tmp_path / "xdg" / "envgen_jax" / "xla") == first["cache_dir"]
    assert first["compiled"] == len(first["programs"]) > 0 and first["cache_hits"] == 0
    assert any(p["largest"] == ["float32[3,5]"] for p in first["programs"])  # the input shapes
    second, _ = _small_program(tmp_path / "xdg")  # a fresh process: every (tiny) program from the cache
    assert second["compiled"] == 0 and second["cache_hits"] == len(first["programs"])
    for entry in Path(first["folder"]).glob("*-cache"):
        entry.write_bytes(entry.read_bytes()[:20] + b"garbage")  # truncated, then garbage
    third, output = _small_program(tmp_path / "xdg")
    assert third["compiled"] == len(first["programs"]) and third["cache_hits"] == 0
    assert "Error reading persistent compilation cache entry" in output
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    uncached, output = _small_program(blocker)
    assert uncached["folder"] is None and uncached["cache_dir"] is None and uncached["compiled"] > 0
    assert "cannot be written" in output


def _train(out: Path, cache_home: Path, toy_packages: Path) -> subprocess.CompletedProcess:
    """`envgen-jax train` in a fresh process on the toy game (tests/toy.py): what is checked here is the cache
    and the compile record, whose programs on the toy game compile in seconds where Crafter's take a minute."""
    overrides = [*golden.TINY, "env=toy", "method=ppo"]
    return subprocess.run([sys.executable, "-c", CHILD, str(toy_packages), "train", "--config",
                           str(ROOT / "configs" / "smoke.yaml"), "--out", str(out),
                           *sum([["--set", s] for s in overrides], [])],
                          cwd=ROOT, env=_env(cache_home), capture_output=True, text=True, timeout=900)


def _compile_of(out: Path) -> dict:
    report = json.loads((out / "report.json").read_text())
    assert report["compile"] == json.loads((out / "compile.json").read_text())
    phases = json.loads((out / "phases.json").read_text())
    assert list(report["phases"]) == list(PHASES) and phases["running"] is None
    assert set(phases["seconds"]) == set(PHASES)
    return report["compile"]


@pytest.mark.slow
def test_a_second_run_compiles_nothing(tmp_path):
    toy_packages = tmp_path / "packages"
    write_toy_package(toy_packages)
    # The project's folder inside this run's scratch folder (tests/conftest.py): cold in every run of the suite, as
    # in a clean clone; whatever the first run compiled, the second loads every program.
    cache_home = Path(os.environ["ENVGEN_TEST_RUN_DIR"]) / "xdg"
    folder = cache_home / "envgen_jax" / "xla"
    first_run = _train(tmp_path / "first", cache_home, toy_packages)
    assert first_run.returncode == 0, first_run.stderr[-3000:]
    assert f"compilation cache: {folder}" in first_run.stdout
    first = _compile_of(tmp_path / "first")
    assert first["cache_dir"] == str(folder) and first["compiled"] + first["cache_hits"] == len(first["programs"]) > 0
    chunk = [p for p in first["programs"] if "train_chunk" in p["name"]]
    assert chunk and chunk[0]["inputs"] > 0 and chunk[0]["largest"]  # its input shapes, e.g. "float32[2,8,32]"
    # Only the run's three programs, each once: the init (blank env slots: it makes no world), the training chunk
    # (every phase's, with its resets), the evaluation; nothing compiled on the host (seeds, banks and keys are made
    # without JAX).
    assert sorted(p["name"] for p in first["programs"]) == ["jit(_init_blank)", "jit(_run)", "jit(_train_chunk)"]

    second_run = _train(tmp_path / "second", cache_home, toy_packages)  # a fresh process, the same shapes
    assert second_run.returncode == 0, second_run.stderr[-3000:]
    second = _compile_of(tmp_path / "second")
    assert second["compiled"] == 0 and second["cache_hits"] == len(second["programs"]) == len(first["programs"])
    assert sorted(p["name"] for p in second["programs"]) == sorted(p["name"] for p in first["programs"])


@pytest.mark.parametrize("feedback", ["pooled", "per_seed"])
def test_every_phase_of_every_method_trains_in_one_program(tmp_path, feedback):
    """No method's phase recompiles: the (bank, rows) of every training phase of every method have one type and
    shape (the chunk's cache key beside the TrainState, which a run keeps), with a design in the bank. (plr, sfl
    and envgen_sfl draw the original game's row from a one-hot sampler; several designers give rows per seed in
    every phase.)"""
    import numpy as np

    from envgen_jax.envs.crafter import CrafterConfig
    from envgen_jax.llm.testing import ScriptedClient, auto_reply, varied_configs
    from envgen_jax.run.loop import EnvGenRun
    from envgen_jax.run_config import METHODS, load_run_config
    from envgen_jax.trainer.layouts import layout

    def signature(bank, rows):
        args = (bank, layout(rows))
        return jax.tree.structure(args), tuple((np.shape(x), np.asarray(x).dtype) for x in jax.tree.leaves(args))

    for name in METHODS:
        cfg = load_run_config(ROOT / "configs" / "smoke.yaml", golden.TINY + golden.LLM + [
            f"method={name}", f"schedule.feedback={feedback}", "method_options.plr.capacity=8",
            "method_options.sfl.pool=4", "method_options.sfl.keep=2", "method_options.envgen_sfl.pool=4"])
        run = EnvGenRun(cfg, tmp_path / f"{name}_{feedback}",
                        llm_client=ScriptedClient(default=auto_reply(CrafterConfig)))
        n = (run.cfg.bank_rows - 1) // cfg.num_designers
        run.state.designs.append({"cycle": 0, "designers": [
            {"configs": varied_configs(CrafterConfig, n, offset=d), "purposes": ["p"] * n}
            for d in range(cfg.num_designers)]})
        wheres = sorted({p.where for p in run.plan if p.kind == "train"})
        found = {where: signature(*run.method.bank_and_rows(where)) for where in wheres}
        assert len(set(found.values())) == 1, (name, feedback, {w: s[0] for w, s in found.items()})


def test_the_suites_compile_lock_finds_the_private_jax_names_it_needs(monkeypatch):
    """The one place the suite uses JAX's internals (tests/fast_compile.py): on a JAX without them this fails and
    says what is missing (the suite still runs, without the lock), never skips silently."""
    import jax

    from tests import fast_compile
    problem = fast_compile.compile_lock_problem()
    assert problem is None, (f"tests/fast_compile.py's compile lock is off on jax {jax.__version__}: {problem}; "
                             "programs two test workers need at once are compiled twice: update tests/fast_compile.py")
    # what a newer JAX without them is told (fast_compile's own tables changed, JAX left as it is)
    monkeypatch.setitem(fast_compile.PRIVATE_FUNCTIONS, "compiler", ("_compile_and_write_cache", "_gone"))
    assert fast_compile.compile_lock_problem() == "this jax lacks jax._src.compiler._gone"
    monkeypatch.setattr(fast_compile, "PRIVATE_MODULES", (*fast_compile.PRIVATE_MODULES, "no_such_module"))
    assert fast_compile.compile_lock_problem() == "this jax lacks the module jax._src.no_such_module"
    monkeypatch.setattr(fast_compile, "COMPILE_AND_WRITE_PARAMETERS", ["backend"])
    monkeypatch.setattr(fast_compile, "PRIVATE_MODULES", fast_compile.PRIVATE_MODULES[:-1])
    monkeypatch.setitem(fast_compile.PRIVATE_FUNCTIONS, "compiler", ("_compile_and_write_cache",))
    assert "not the expected (backend)" in fast_compile.compile_lock_problem()
