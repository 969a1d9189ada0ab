#!/usr/bin/env bash
# The GPU measurements, one stage per command (`all` runs every one). The times are guesses, never measured: split a
# stage (--seeds / --methods / --envs) where a command has a time limit; rows are saved as soon as measured.
#
#   bash benchmarks/gpu_session.sh STAGE [extra arguments for the Python script]
#
#   check       nvidia-smi, jax devices, imports, one tiny e2e run on the GPU (to $RESULTS/check)       ~1-2 min
#   envs        run_all --parts envs      (1024, 4096, 16384 envs)                                       ~3-7 min
#   training    run_all --parts training  (1024, 4096, 16384 envs)                                       ~3-7 min
#   e2e         run_all --parts e2e       (1, 8, 16, 32 seeds; e.g. --seeds 1,8,16 then --seeds 32)     ~8-15 min
#   reproduce   reproduce_paper.py        (5 methods x 8 seeds; e.g. --methods ppo,envgen,fixed)        ~6-12 min
#               (its LLM: the default needs an endpoint or the local model, neither on the device image;
#                --llm scripted runs without one and is labelled: not an LLM)
#   all         every stage above, in order
#
# Results go to $RESULTS (default runs/bench_results, git-ignored, so a warm device machine keeps them between
# commands; carry it back in to merge more rows into it) and are packed, with the reproduction runs' small files
# (reports, transcripts, metrics; no checkpoints), into $OUT/results.tgz with a log per stage when $OUT is set.
# Missing Python packages are installed from .whl/ (made here by benchmarks/gpu_wheels.sh) into /tmp/site.
# Where the tree has no .git, give the commit: BENCH_COMMIT=$(git rev-parse HEAD) [BENCH_DIRTY=1] bash ... (the
# results record it; without it they say the commit is unknown).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
RESULTS=${RESULTS:-runs/bench_results}
export PYTHONUNBUFFERED=1
mkdir -p "$RESULTS"

if ! "$PY" -c "import craftax, distrax" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      || exit 1
    export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
  else
    echo "craftax/distrax missing and no .whl/: run benchmarks/gpu_wheels.sh where pip works, carry .whl" >&2
    exit 1
  fi
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

stage=${1:-all}
shift || true

pack() {
  [ -n "${OUT:-}" ] || return 0
  local extra=()
  for f in runs/reproduce_paper/*/{report.json,report.md,reproduce_meta.json,config.yaml,metrics.jsonl,llm_transcript.jsonl}; do
    [ -f "$f" ] && extra+=("$f")
  done
  tar czf "$OUT/results.tgz" "$RESULTS" "${extra[@]}" 2>/dev/null
}

run_stage() {
  local s=$1
  shift
  local log=${OUT:-$RESULTS}/$s.log
  echo "=== stage $s ($(date -u +%FT%TZ))" | tee -a "$log"
  case $s in
    check)
      (nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
       "$PY" -c "import jax, craftax, distrax, envgen_jax; print(jax.__version__, jax.devices())"
       "$PY" benchmarks/run_all.py --cpu-tiny --parts e2e --seeds 1 --out-dir "$RESULTS/check" --fresh "$@"
      ) 2>&1 | tee -a "$log" ;;
    envs|training|e2e)
      "$PY" benchmarks/run_all.py --parts "$s" --out-dir "$RESULTS" "$@" 2>&1 | tee -a "$log" ;;
    reproduce)
      "$PY" benchmarks/reproduce_paper.py --out-dir "$RESULTS" "$@" 2>&1 | tee -a "$log" ;;
    *)
      echo "unknown stage $s (check | envs | training | e2e | reproduce | all)" >&2
      return 2 ;;
  esac
}

status=0
if [ "$stage" = all ]; then
  for s in check envs training e2e reproduce; do
    run_stage "$s" || status=$?
    pack
  done
else
  run_stage "$stage" "$@" || status=$?
fi
pack
exit $status
