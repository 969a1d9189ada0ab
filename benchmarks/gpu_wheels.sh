#!/usr/bin/env bash
# Wheels that the device machine's image (Python 3.12, jax/flax/optax/orbax/chex/matplotlib already there; nothing
# can be fetched there) lacks for the benchmarks, downloaded HERE into .whl/ (git-ignored) to be carried along.
#
#   bash benchmarks/gpu_wheels.sh            # here, once
#   then, on the device machine (carry [".whl"]), start each command with:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
#       .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit;
#
# The benchmarks need craftax and distrax (with tfp-nightly and its small dependencies). tensorboardX is only for
# `output.tensorboard` (the benchmarks turn it off). The openai client and the offline LLM (llama-cpp-python, a
# 94 MB GGUF) are not here: nothing outside the device machine can be reached from it, so benchmarks there use
# `--llm scripted` unless an LLM is brought along some other way.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mkdir -p .whl
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
for pkg in craftax==1.6.1 distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 decorator==5.3.1 gast==0.7.0 \
           dm-tree==0.1.10 tensorboardX==2.6.5; do
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      "${PLATFORMS[@]}" -d .whl "$pkg"
done
ls -la .whl
du -sh .whl
