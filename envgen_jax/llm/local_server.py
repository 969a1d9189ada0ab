"""The offline designer's server: llama.cpp's own OpenAI-compatible HTTP server (prebuilt, from `xllamacpp`).

The server runs in a child process (`python -m envgen_jax.llm.local_server serve ...`) bound to 127.0.0.1 on a port
the OS picks, so the designer talks to it through the same openai client as to any endpoint, its log goes to a file
and not the training terminal, and its memory is freed when it stops: by `stop()`, by leaving the `with` block, or at
interpreter exit. It keeps one slot, whose KV cache holds the conversation so far: a later cycle's prompt, which
starts with the whole earlier conversation, only has its new tokens read (`cache_prompt`, see `LLMSettings`).
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from envgen_jax.llm.errors import LLMError, LocalModelMissing
from envgen_jax.llm.models import INSTALL_HINT, get_model, model_path

RUNTIME = "xllamacpp"
READY = "envgen-llm-server listening on "  # the child's one line on stdout once the model is loaded


def runtime_missing() -> bool:
    return importlib.util.find_spec(RUNTIME) is None  # located, not imported: importing loads the C++ library


def find_gguf(explicit: str | Path | None = None, model: str | None = None) -> Path:
    """The GGUF to serve: an explicit path, or offline model `model` (default the 1.5B designer)."""
    return model_path(model, explicit)


class LocalServer:
    """llama.cpp's server for one GGUF on 127.0.0.1, started on demand in a child process."""

    def __init__(self, gguf: str | Path | None = None, *, model: str | None = None, n_ctx: int | None = None,
                 n_threads: int = 2, startup_timeout_s: float = 120.0, alias: str = "local",
                 python: str = sys.executable):
        self.gguf, self.model = gguf, model
        self.n_ctx = n_ctx or (get_model(model).n_ctx if not gguf else 8192)
        self.n_threads, self.startup_timeout_s, self.alias, self.python = n_threads, startup_timeout_s, alias, python
        self.process: subprocess.Popen | None = None
        self.url: str | None = None
        self.log_path: Path | None = None
        self.startup_s: float | None = None

    @property
    def base_url(self) -> str:
        if self.url is None:
            raise LLMError("the local LLM server is not running")
        return f"{self.url}/v1"

    def command(self, gguf: Path) -> list[str]:
        return [self.python, "-m", "envgen_jax.llm.local_server", "serve", "--gguf", str(gguf),
                "--n-ctx", str(self.n_ctx), "--threads", str(self.n_threads), "--alias", self.alias,
                "--parent", str(os.getpid())]

    def start(self) -> "LocalServer":
        if self.process is not None and self.process.poll() is None:
            return self
        gguf = find_gguf(self.gguf, self.model)
        if runtime_missing():
            raise LocalModelMissing(f"the offline LLM runtime ({RUNTIME}) is not installed; {INSTALL_HINT}")
        # Spin-waiting OpenMP threads slow decoding up to 40x when another process (JAX) holds a core.
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        fd, log = tempfile.mkstemp(prefix="envgen-llm-server-", suffix=".log")
        self.log_path = Path(log)
        start = time.monotonic()
        with os.fdopen(fd, "wb") as log_file:
            self.process = subprocess.Popen(self.command(gguf), env=env, stdout=subprocess.PIPE, stderr=log_file,
                                            stdin=subprocess.DEVNULL, start_new_session=True, text=True)
        atexit.register(self.stop)
        try:
            self.url = self._wait_for_address()
            self._wait_until_up()
        except LLMError:
            self.stop(keep_log=True)
            raise
        self.startup_s = time.monotonic() - start
        return self

    def _wait_for_address(self) -> str:
        found: list[str] = []

        def read():  # the child prints its address once the model is loaded; readline blocks, hence the thread
            for line in self.process.stdout:
                if line.startswith(READY):
                    found.append(line[len(READY):].strip())
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(self.startup_timeout_s)
        if found:
            return found[0]
        code = self.process.poll()
        if code is not None:
            raise LLMError(f"the local LLM server exited with code {code} while starting; its log "
                           f"({self.log_path}) ends with:\n{self.log_tail()}")
        raise LLMError(f"the local LLM server did not load its model within {self.startup_timeout_s:.0f} s (raise "
                       f"llm.startup_timeout_s on a busy machine); its log ({self.log_path}) ends with:\n"
                       f"{self.log_tail()}")

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise LLMError(f"the local LLM server at {self.url} does not answer; its log ({self.log_path}) "
                               f"ends with:\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AttributeError):
            return "(no log)"

    def stop(self, keep_log: bool = False) -> None:
        process, self.process = self.process, None
        atexit.unregister(self.stop)
        if process is not None and process.poll() is None:
            # Its own session: signal the server's process group only, never anything else.
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=10)
            except (ProcessLookupError, PermissionError):
                pass
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        if process is not None and process.stdout is not None:
            process.stdout.close()
        self.url = None
        if self.log_path and not keep_log:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(gguf: str, n_ctx: int, threads: int, alias: str, parent: int | None = None) -> None:
    """The child: load the model, serve on a loopback port the OS picks, print the address, wait for a signal.
    It also stops once `parent` is gone: a parent killed with SIGKILL (or by `timeout`) runs no atexit hook, and
    an orphaned server would hold the CPU's cores and its memory for good."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = gguf
    params.model_alias = {alias}
    params.n_ctx = n_ctx
    params.n_parallel = 1            # one conversation at a time: one slot, whose cache the next cycle reuses
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]  # loopback only, never reachable from elsewhere
    params.port = 0                   # the OS picks a free port: no race between choosing and binding
    server = xllamacpp.Server(params)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(READY + server.listening_address, flush=True)
    while not stop.wait(1.0):
        if parent is not None and os.getppid() != parent:
            break
    del server  # joins the server's threads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envgen_jax.llm.local_server")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="serve one GGUF on 127.0.0.1 (used by LocalServer)")
    p.add_argument("--gguf", required=True)
    p.add_argument("--n-ctx", type=int, default=8192)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--alias", default="local")
    p.add_argument("--parent", type=int, help="stop when this process is gone (LocalServer passes its own pid)")
    args = parser.parse_args(argv)
    serve(args.gguf, args.n_ctx, args.threads, args.alias, args.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
