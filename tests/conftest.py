"""Shared, session-scoped compiled functions: Craftax compiles take 10-30 s on CI's CPUs, so compile each once."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# One persistent compilation cache per run, made fresh: the controller (or a lone process) makes an empty folder
# before any worker starts, and the pytest-xdist workers and the subprocesses the tests start (the CLI and kill/resume
# runs) inherit it through the environment, so a program one of them compiled the others load. Every run starts cold,
# as a clean clone does, so no outcome can depend on what an earlier run left behind; the controller removes it at the
# end. ENVGEN_TEST_CACHE_DIR=path keeps the cache in `path` across runs instead (opt-in, for the edit-test loop).
RUN_DIR_VARIABLE = "ENVGEN_TEST_RUN_DIR"  # the run's scratch folder: the cache, and the folders tests share in a run
_made_run_dir = None
if "PYTEST_XDIST_WORKER" not in os.environ or RUN_DIR_VARIABLE not in os.environ:
    import tempfile

    if os.environ.get("ENVGEN_TEST_CACHE_DIR"):
        _run_dir = os.path.abspath(os.environ["ENVGEN_TEST_CACHE_DIR"])
        os.makedirs(_run_dir, exist_ok=True)
    else:
        _run_dir = _made_run_dir = tempfile.mkdtemp(prefix="envgen-jax-tests-")
    os.environ[RUN_DIR_VARIABLE] = _run_dir
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(_run_dir, "jax")
# Every program is written, however fast it compiled: each test file traces from cleared caches (below), so the small
# helpers (conversions, broadcasts, PRNG splits) a file compiled would otherwise be compiled again in every file.
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
# LLVM at -O1 rather than XLA's default -O3: the Crafter programs compile in about 0.79x the time and run as fast
# (benchmarks/compile_levels.py, side by side in one process: the tiny PPO chunk, 13.0-15.1 s against 17.5-18.4 s),
# with the same results (the golden runs pass); the whole suite took 14 min 59 s against 17 min 18 s at the default.
# Set before JAX starts; subprocesses inherit it. A level already in XLA_FLAGS is kept.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=1").strip()

# Python's cyclic garbage collector at the CLI's larger thresholds (envgen_jax.cli.GC_THRESHOLDS; CPython's are
# 700, 10, 10): tracing allocates objects by the million, and a worker's heap (every traced program's jaxpr, the run
# folders' records) is large, so the default thresholds spend a tenth of a file's time in thousands of collections
# (test_golden, test_study and test_trainer_crafter in one process: 10.7 s of 79 s collecting, 2.4 s of 72 s at
# these; 11% more memory at peak).
import gc  # noqa: E402

from envgen_jax.cli import GC_THRESHOLDS  # noqa: E402

gc.set_threshold(*GC_THRESHOLDS)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402

from envgen_jax.envs.crafter import CrafterEnv  # noqa: E402
from envgen_jax.trainer import reuse  # noqa: E402
from tests.fast_compile import COMPILER_LOGGER, compile_lock_problem, compile_once_across_processes  # noqa: E402

compile_once_across_processes()  # a program both workers need at once is compiled by one of them

_traced_module = [None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Every test file traces as a fresh process does (before any of its fixtures, session-scoped ones included). A
    program's persistent-cache key hashes its lowered module, and that module depends on what the process traced
    before (JAX's tracing caches decide which helpers, such as `jnp.where`, become shared private functions): the
    same run traced after other tests' programs missed the entry another worker (or a subprocess) had written. What it
    costs is tracing again, in each file, the programs several files share (tracing and lowering seconds are in the
    compile log); what it buys is one key per program in every file, worker and subprocess (2026-11-27: the Heist
    run's three programs compiled in test_loop.py were loaded by test_study.py, the tiny Crafter run's by
    test_study.py and test_golden.py, none compiled again)."""
    module = getattr(item, "module", None)
    if module is not _traced_module[0]:
        _traced_module[0] = module
        jax.clear_caches()
        # ... and builds its own trainers: one kept from another file (trainer.reuse) would retrace anyway after the
        # clear, and its trace counts would hold that file's traces too
        reuse.forget()


# Seconds per test file in a full run, for the order only (the slowest files start first and pytest-xdist's own
# reordering by test count is off, so the two workers end together). Estimated on 2026-11-28 from the measured runs
# (`after_round_2`, `after_round_3` in benchmarks/results/test_suite_cpu.json) and what round 4 took out of each file
# (test_fused and test_vector: what moving their Crafter programs to the toy game saved; test_llm_local,
# test_benchmarks and test_trainer_crafter: measured alone before and after); the figures of the next whole run are in
# that file (`benchmarks/test_suite.py --file-seconds LABEL` prints them). Files not named take under 10 s.
FILE_SECONDS = {
    "test_loop": 250, "test_benchmarks": 160, "test_craftax_env": 150, "test_craftax_config": 30, "test_fused": 110, "test_ued": 165, "test_crafter_pixels": 155,
    "test_multiprocess": 148, "test_llm_local": 105, "test_ppo": 95, "test_trainer_crafter": 60, "test_study": 46,
    "test_crafter_loops": 36, "test_ladder": 35, "test_agent": 35, "test_gpu_session": 30, "test_crafter_env": 30,
    "test_golden": 29, "test_compile": 26, "test_trainer_checkpoint": 25, "test_precision": 18,
    "test_fuzz_inputs": 14, "test_sharding": 13, "test_games": 12,
}


# `make check` (pytest -m check): the tests a change most often breaks, for the edit-test loop; a few minutes from a
# clean clone, where the whole suite (`make test`, which CI runs) takes many. Marked here, by node id prefix, so the
# test files stay as they are: config and CLI errors, the run plan, the LLM reply parser, the code's shape, Crafter's
# parity with craftax over a few steps, and the PPO update on a probe environment.
QUICK_CHECK = (
    "tests/test_code_shape.py",
    "tests/test_crafter_config.py",
    "tests/test_heist_config.py",
    "tests/test_cli.py",
    "tests/test_plan.py",
    "tests/test_llm_reply.py",
    "tests/test_loop.py::test_plans_of_every_method",
    "tests/test_loop.py::test_bad_run_config_and_overrides_are_clear",
    "tests/test_loop.py::test_train_cli_rejects_bad_input",
    "tests/test_loop.py::test_every_bundled_run_config_loads_and_plans",
    "tests/test_loop.py::test_configs_extend_a_base_section_by_section",
    "tests/test_crafter_env.py::test_original_config_matches_craftax_step_for_step[0]",
    "tests/test_ppo.py::test_gae_scan_matches_python_loop",
    "tests/test_ppo.py::test_constant_reward_value",
    "tests/test_ppo.py::test_config_validation",
)


def pytest_configure(config):
    config.addinivalue_line("markers", "check: in `make check`, the quick check (tests/conftest.py, QUICK_CHECK)")
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist's --dist loadfile
        config.option.loadscopereorder = False


def pytest_report_header(config):
    """Where this JAX lacks the private names of the suite's compile lock (tests/fast_compile.py), the run says so in
    its header (and tests/test_compile.py fails saying it), rather than running without it unseen."""
    problem = compile_lock_problem()
    return f"compile lock off (tests/fast_compile.py): {problem}" if problem else None


def pytest_unconfigure(config):
    if _made_run_dir:  # the process that made the run's folder (the controller), after every worker has ended
        import shutil

        shutil.rmtree(_made_run_dir, ignore_errors=True)


def pytest_collection_modifyitems(session, config, items):
    """The slowest files first, each file's tests in their own order; the quick check's tests marked."""
    for item in items:
        if item.nodeid.startswith(QUICK_CHECK):
            item.add_marker(pytest.mark.check)
    items.sort(key=lambda item: -FILE_SECONDS.get(item.path.stem, 0))


def _register_toy(packages, monkeypatch):
    from envgen_jax import games
    from tests.toy import write_toy_package
    write_toy_package(packages)
    monkeypatch.syspath_prepend(str(packages))
    monkeypatch.setitem(games.GAMES, "toy", "toy_game.game")  # the one line
    return games.get("toy")


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy game (tests/toy.py): its package written to a folder on the path and its one registry line,
    for this test only. Tests of machinery that does not depend on the game use it: its programs compile in seconds,
    where Crafter's take a minute."""
    return _register_toy(tmp_path / "packages", monkeypatch)


@pytest.fixture(scope="module")
def toy_module(tmp_path_factory):
    """The toy game as `toy` gives it, for a module's fixtures (one compiled program shared by its tests)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _register_toy(tmp_path_factory.mktemp("toy") / "packages", monkeypatch)


@pytest.fixture(scope="session")
def crafter_env():
    return CrafterEnv()


@pytest.fixture(scope="session")
def crafter_reset_many(crafter_env):
    """jit(vmap(reset)) over (keys[K], bank[K]): one compile serves every world-generation test."""
    return jax.jit(jax.vmap(crafter_env.reset))


@pytest.fixture(scope="session")
def crafter_rollout(crafter_env):
    """jit: reset one env, then run a fixed action sequence; returns per-step obs, reward, done and final state."""

    def rollout(key, params, actions):
        reset_key, step_key = jax.random.split(key)
        obs0, state = crafter_env.reset(reset_key, params)

        def body(state, inputs):
            key, action = inputs
            obs, state, reward, done, info = crafter_env.step(key, state, action, params)
            return state, (obs, reward, done, state.map, state.inventory.wood)

        keys = jax.random.split(step_key, actions.shape[0])
        final, trace = jax.lax.scan(body, state, (keys, actions))
        return obs0, trace, final

    return jax.jit(rollout)


def random_actions(seed: int, n: int):
    return jax.random.randint(jax.random.PRNGKey(seed), (n,), 0, 17)


def tree_equal(a, b) -> bool:
    return all(bool(jnp.all(x == y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


# ------------------------------------------------------------------------------------------------ compile log
# ENVGEN_COMPILE_LOG=path.json: per test, the seconds XLA spent compiling (persistent-cache loads included), each
# program as [name, seconds, persistent-cache key, "hit" or "miss", when it ended (epoch seconds)] (the key hashes the
# lowered module, the compile options and the XLA flags: the same key twice is the same program compiled or loaded
# again), the cache hits, and the seconds spent tracing and lowering to MLIR. Off by default; with pytest-xdist each worker writes
# path.<worker>.json. benchmarks/test_suite.py reads these beside the junit xml.
_COMPILE_LOG = os.environ.get("ENVGEN_COMPILE_LOG")
if _COMPILE_LOG:
    import json
    import logging
    import re

    _compiles: dict = {}
    _current = ["(collection)"]
    _finished = re.compile(r"Finished (XLA compilation of|tracing|jaxpr to MLIR module conversion) (.*?) "
                           r"(?:for jit )?in ([0-9.e+-]+) sec")
    _cache_lookup = re.compile(r"(Persistent compilation cache hit|PERSISTENT COMPILATION CACHE MISS) for '(.*)' "
                               r"with key '(.*)'")
    _pending_key: dict = {}  # thread -> (key, "hit" | "miss"): the lookup is logged inside the compile it belongs to

    class _CompileHandler(logging.Handler):
        def emit(self, record):
            entry = _compiles.setdefault(_current[0], {"seconds": 0.0, "programs": [], "cache_hits": 0,
                                                       "trace_seconds": 0.0, "lower_seconds": 0.0})
            message = record.getMessage()
            lookup = _cache_lookup.search(message)
            if lookup:
                hit = lookup.group(1).startswith("Persistent")
                _pending_key[record.thread] = (lookup.group(3), "hit" if hit else "miss")
                entry["cache_hits"] += hit
                return
            found = _finished.search(message)
            if not found:
                return
            kind, name, seconds = found.group(1), found.group(2), float(found.group(3))
            if kind == "tracing":
                entry["trace_seconds"] += seconds
            elif kind.startswith("jaxpr"):
                entry["lower_seconds"] += seconds
            else:
                key, status = _pending_key.pop(record.thread, (None, None))
                entry["seconds"] += seconds
                entry["programs"].append([name, round(seconds, 2), key, status, round(record.created, 2)])

    jax.config.update("jax_log_compiles", True)  # compile, trace and cache-hit messages at WARNING, logger "jax"
    logging.getLogger("jax").addHandler(_CompileHandler())
    # A miss and its key are logged at DEBUG: let that one logger's DEBUG records through (to this handler).
    logging.getLogger(COMPILER_LOGGER).setLevel(logging.DEBUG)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        _current[0] = item.nodeid
        _compiles.setdefault(item.nodeid, {"seconds": 0.0, "programs": [], "cache_hits": 0, "trace_seconds": 0.0,
                                           "lower_seconds": 0.0})  # every test, so the log says which worker ran it
        yield

    def pytest_sessionfinish(session):
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        path = _COMPILE_LOG if not worker else _COMPILE_LOG.replace(".json", f".{worker}.json")
        with open(path, "w") as f:
            json.dump(_compiles, f, indent=1)
