"""How the suite compiles each program once: XLA flags for the test subprocesses that only compile tiny programs and
never time them (the benchmarks' tiny runs, the compile tests, the sharding test): LLVM at -O0 without its
expensive passes compiles them in about 0.65x XLA's default time (benchmarks/compile_levels.py); flags are part of
the persistent-cache key, so every such subprocess gets the same string. And `compile_once_across_processes`, which
every test process (tests/conftest.py) and the multi-process runs' children (tests/test_multiprocess.py) call."""

import os

# JAX's private names the compile lock needs (jax 0.10 and 0.11 have them; nothing else in the suite or the package
# touches JAX's internals): the modules under jax._src, the functions in them, and the logger that logs a cache miss
# with its key at DEBUG (tests/conftest.py's compile log). A JAX without them: `compile_lock_problem` says what is
# missing, tests/test_compile.py fails saying so, and the suite runs without the lock.
PRIVATE_MODULES = ("compilation_cache", "compiler", "distributed", "monitoring")
PRIVATE_FUNCTIONS = {"compiler": ("_compile_and_write_cache", "_cache_read", "log_persistent_cache_hit"),
                     "compilation_cache": ("put_executable_and_time",)}
COMPILE_AND_WRITE_PARAMETERS = ["backend", "computation", "executable_devices", "compile_options", "host_callbacks",
                                "module_name", "cache_key"]
COMPILER_LOGGER = "jax._src.compiler"

FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def xla_flags(*extra: str) -> str:
    """The suite's XLA_FLAGS (tests/conftest.py), then `extra`, then FAST_COMPILE (the last level given wins)."""
    return " ".join([os.environ.get("XLA_FLAGS", ""), *extra, FAST_COMPILE]).strip()


def compile_lock_problem() -> str | None:
    """What of JAX's private names (`PRIVATE_FUNCTIONS`) this JAX lacks or has in another form; None: all there."""
    import importlib
    import inspect

    try:
        modules = {m: importlib.import_module(f"jax._src.{m}") for m in PRIVATE_MODULES}
    except ImportError as e:
        return f"this jax lacks the module {e.name}"
    missing = [f"jax._src.{m}.{f}" for m, names in PRIVATE_FUNCTIONS.items() for f in names
               if not callable(getattr(modules[m], f, None))]
    if missing:
        return f"this jax lacks {', '.join(missing)}"
    parameters = list(inspect.signature(modules["compiler"]._compile_and_write_cache).parameters)
    if parameters != COMPILE_AND_WRITE_PARAMETERS:
        return f"jax._src.compiler._compile_and_write_cache takes ({', '.join(parameters)}), not the expected " \
               f"({', '.join(COMPILE_AND_WRITE_PARAMETERS)})"
    return None


def compile_once_across_processes() -> None:
    """A program two processes of the test run need at the same time is compiled by one of them: the compile of a
    persistent-cache key holds a lock named by that key in the run's folder (ENVGEN_TEST_RUN_DIR, made by
    tests/conftest.py), and a process that waited on it reads the entry the other wrote instead of compiling it
    again. (JAX's own cache only looks before compiling, so two workers that start the same program together both
    compile it.) And every process of a multi-process run writes what it compiled, where JAX writes process 0's
    alone (the keys differ by process): the other processes of a resumed run then load their programs too, instead
    of compiling them again while process 0 waits for them at the first collective. Wraps private functions of
    JAX's; where they are not there as expected, or ENVGEN_TEST_COMPILE_LOCK=0 (to measure this), or outside a test
    run, each process compiles what it has not found, as JAX does (where they are missing, tests/test_compile.py
    fails saying what is missing)."""
    import fcntl
    import inspect
    import time

    run_dir = os.environ.get("ENVGEN_TEST_RUN_DIR")
    if run_dir is None or os.environ.get("ENVGEN_TEST_COMPILE_LOCK") == "0" or compile_lock_problem() is not None:
        return
    from jax._src import compilation_cache, compiler, distributed, monitoring  # PRIVATE_MODULES, checked above
    compile_and_write, cache_read = compiler._compile_and_write_cache, compiler._cache_read
    write = compilation_cache.put_executable_and_time
    read_takes_callbacks = "host_callbacks" in inspect.signature(cache_read).parameters  # jax 0.11
    locks = os.path.join(run_dir, "compile_locks")
    os.makedirs(locks, exist_ok=True)

    def compile_and_write_once(backend, computation, executable_devices, compile_options, host_callbacks,
                               module_name, cache_key):
        with open(os.path.join(locks, cache_key.replace(os.sep, "_")), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when its process dies
            callbacks = (host_callbacks,) if read_takes_callbacks else ()
            executable, _ = cache_read(module_name, cache_key, compile_options, backend, executable_devices,
                                       *callbacks)
            if executable is not None:  # written by the process this one waited for: a hit, as JAX records one
                compiler.log_persistent_cache_hit(module_name, cache_key)
                monitoring.record_event("/jax/compilation_cache/cache_hits")
                return executable
            start = time.monotonic()
            executable = compile_and_write(backend, computation, executable_devices, compile_options, host_callbacks,
                                           module_name, cache_key)
            if distributed.global_state.process_id not in (None, 0) and not host_callbacks:  # JAX did not write it
                write(cache_key, module_name, executable, backend, int(time.monotonic() - start))
            return executable

    compiler._compile_and_write_cache = compile_and_write_once
