#!/usr/bin/env bash
# One prepared GPU run (issue 44): every stage in a single command that fits one 9-minute run on one H100/H200,
# from a bare machine (Python 3.12 and jax 0.11.2 there; craftax, distrax and their small dependencies installed from
# .whl/, made here by benchmarks/gpu_wheels.sh and carried along). The tree travels without .git: give the commit.
#
#   BENCH_COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_session.sh               # the GPU run (carry [".whl"])
#   bash benchmarks/gpu_session.sh --cpu-tiny                                       # a CPU dry run, tiny sizes
#   bash benchmarks/gpu_session.sh --stages pixel --budget 540                      # one stage with the whole budget
#
# Stages, in order of value; each is time-boxed (`timeout`) by min(its estimate, the budget left), and saves what it
# measured as it goes (a stage cut off by its box keeps its rows; run_all saves an unfinished row after each phase):
#   check      imports, devices, the environment (device, versions, commit) -> check.json                    ~20 s
#   e2e_cold   the paper's protocol (configs/crafter_envgen.yaml, default agent, scripted designer), 16 vmapped
#              seeds, a fresh persistent compilation cache (run_all --parts e2e --compile-cache)           <= T_E2E_COLD
#   e2e_warm   the same again in a new process: every program from the cache                               <= T_E2E_WARM
#   training   training throughput at 16384, 1024 and 4096 envs (run_all --parts training)                 <= T_TRAINING
#   pixel_seeds  the pixel agent's training chunk, 4 seeds vmapped vs one after another (ppo.seed_axis: grouped vs
#              dense convolutions), side by side (benchmarks/pixel_seed_axis.py)                   <= T_PIXEL_SEEDS
#   pixel_speed1, pixel_speed4, pixel_speed16  issue 57: where the pixel agent's time goes (benchmarks/pixel_speed.py): 1 seed vmap float32 part
#              by part (env steps, rollout, learn, chunk, evaluation), then whole updates at 4 and 16 seeds for the
#              dense seed axis in float32 and bfloat16 (PIXEL_SPEED_4 / PIXEL_SPEED_16: variants), rows saved as
#              measured, one process per seed count                 <= T_PIXEL_SPEED1, 4, 16 (default T_PIXEL_SPEED)
#   pixel_xla  the same 1-seed env and chunk under XLA's command buffers for loops (XLA_FLAGS in PIXEL_XLA_FLAGS), a
#              process of its own, rows labelled 'cmdbuf' in the same pixel_speed.json            <= T_PIXEL_XLA
#   pixel      issue 42: plain PPO with the paper's pixel agent (configs/crafter_ppo_paper_agent.yaml), cycles=0 so
#              the first PIXEL_STEPS (1M) steps are the scored phase, PIXEL_SEEDS (4) seeds, vmapped (or one after
#              another with PIXEL_SEED_AXIS=map: set it from pixel_seeds' result, nothing picks it); the Crafter
#              score and mean success beside Dedieu et al.'s rerun (10.7% / 47.4%), or, if cut off, the score so far
#              (newest checkpoint) and the speed, in pixel_agent_1m.json                               the rest
# The boxes come from the two H200 sessions so far (benchmarks/results/gpu_h200/README.md). The 16-seed protocol
# finished its 4 cycles (983,040 of 1,986,560 steps a seed) in 160 s cold and 111 s warm, then did not finish the
# final 1M in the rest of a 220 s / 160 s box (projected whole: about 235 s cold, 185 s warm). 16384-env training
# (three compiles) did not finish in 110 s. The pixel chunk's vmapped compile took 88 s, and nothing more was timed
# in 270 s; its training ran about 2,400 steps/s for 4 seeds, so 1M steps x 4 seeds (about 28 min) fit no call.
# The pixel agent's work is about 35 PFLOP for 4 seeds x 1M steps (XLA's cost analysis: 0.87 GFLOP a frame forward,
# 2.6 with the gradient), so 2,400 steps/s is about 21 TFLOP/s, a few percent of the chip's TF32 rate: dense
# convolutions (seed axis map) may fit the run in one call, which is what the next session should try first.
# A session's 15 device minutes hold about 14 minutes of calls after a start: two back-to-back calls, the second
# sent within the machine's 30 s idle window, e.g.
#   PIXEL_SEED_AXIS=dense PIXEL_CMDBUF=1 bash benchmarks/gpu_session.sh --stages check,pixel --budget 540
#   KEEP_RESULTS=1 PIXEL_RESUME=1 PIXEL_CMDBUF=1 bash benchmarks/gpu_session.sh --stages pixel --budget 280
# The 2026-11-27 lease measured (docs/devices.md, "Where the pixel agent's time goes"): an update of one seed is
# mostly its 512 sequential env steps (about 3.4 ms each, plus 2.8 ms of forward pass), command buffers made that
# rollout 1.6x as fast, and 4 dense seeds trained 3,195 env steps/s. PIXEL_CMDBUF=1 runs the pixel stage with them.
#
# Results: at most 8 files in $OUT (default runs/gpu_session/out): session.json (stage times and the headline
# figures, rewritten after every stage), session.log, e2e_cold.json, e2e_warm.json, training.json,
# pixel_speed.json, pixel_agent_1m.json and results.tgz (pixel_seed_axis.json travels inside it) (every result file and the pixel run's small files; no
# checkpoints).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
TINY=0
STAGES=check,e2e_cold,e2e_warm,training,pixel_seeds,pixel_speed1,pixel_speed4,pixel_speed16,pixel_xla,pixel
BUDGET=${BUDGET:-}
while [ $# -gt 0 ]; do
  case $1 in
    --cpu-tiny) TINY=1 ;;
    --stages) STAGES=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    *) echo "unknown argument $1 (--cpu-tiny, --stages LIST, --budget SECONDS)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$BUDGET" ] || BUDGET=$([ "$TINY" = 1 ] && echo 1800 || echo 540)  # a 9-minute GPU run; a slow CPU's dry run
T0=$(date +%s)
RESULTS=${RESULTS:-runs/gpu_session/results}
OUT=${OUT:-runs/gpu_session/out}
RESERVE=${RESERVE:-20}          # seconds kept back for the summary and the packing
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# KEEP_RESULTS=1: a second call on the still-warm machine keeps the first's results (PIXEL_RESUME=1 continues its
# pixel run from its newest checkpoint)
[ "${KEEP_RESULTS:-0}" = 1 ] || rm -rf "$RESULTS"
mkdir -p "$RESULTS" "$OUT"
RESULTS=$(cd "$RESULTS" && pwd) OUT=$(cd "$OUT" && pwd)  # absolute: the packing runs from inside RESULTS
LOG=$OUT/session.log
: > "$LOG"
say() { echo "[gpu_session +$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }

if [ "$TINY" = 1 ]; then
  T_CHECK=${T_CHECK:-120}; T_E2E_COLD=${T_E2E_COLD:-400}; T_E2E_WARM=${T_E2E_WARM:-300}
  T_TRAINING=${T_TRAINING:-400}; T_PIXEL_MIN=${T_PIXEL_MIN:-60}; T_SUMMARY=${T_SUMMARY:-120}
  T_PIXEL_SEEDS=${T_PIXEL_SEEDS:-400}; SEED_AXIS_ARGS=(--cpu-tiny --seeds 2)
  T_PIXEL_SPEED=${T_PIXEL_SPEED:-900}; T_PIXEL_XLA=${T_PIXEL_XLA:-300}; SPEED_ARGS=(--cpu-tiny --eval-steps 8)
  SPEED_SEEDS=(1 2 2); PIXEL_SPEED_4=${PIXEL_SPEED_4:-dense:bfloat16}; PIXEL_SPEED_16=${PIXEL_SPEED_16:-dense:bfloat16}
  E2E_ARGS=(--cpu-tiny --seeds 1); TRAIN_ARGS=(--cpu-tiny --envs 8)
  PIXEL_SEEDS=${PIXEL_SEEDS:-2}; PIXEL_STEPS=${PIXEL_STEPS:-64}
  PIXEL_ARGS=(ppo.num_envs=2 ppo.num_steps=16 ppo.update_epochs=1 ppo.num_minibatches=2 "network.conv.channels=[4,8]"
              network.conv.width=16 network.conv.head_width=32 schedule.updates_per_chunk=1 eval.num_envs=2 eval.max_steps=20)
else
  T_CHECK=${T_CHECK:-60}; T_E2E_COLD=${T_E2E_COLD:-260}; T_E2E_WARM=${T_E2E_WARM:-210}
  T_TRAINING=${T_TRAINING:-150}; T_PIXEL_MIN=${T_PIXEL_MIN:-60}; T_SUMMARY=${T_SUMMARY:-45}
  # two compiles (88 s for vmap there) and four calls of one update each (about 7 s each vmapped); map first
  T_PIXEL_SEEDS=${T_PIXEL_SEEDS:-240}; SEED_AXIS_ARGS=(--seeds 4)
  # about 10 programs of 10-60 s each to compile (the chunk took 57 s on an H200), then a few seconds of timing each
  T_PIXEL_SPEED=${T_PIXEL_SPEED:-330}; T_PIXEL_XLA=${T_PIXEL_XLA:-120}; SPEED_ARGS=()
  SPEED_SEEDS=(1 4 16); PIXEL_SPEED_4=${PIXEL_SPEED_4:-dense:float32,dense:bfloat16}
  PIXEL_SPEED_16=${PIXEL_SPEED_16:-dense:bfloat16}
  E2E_ARGS=(--seeds 16); TRAIN_ARGS=(--envs "${TRAIN_ENVS:-16384,4096,1024}" --repeats "${TRAIN_REPEATS:-3}")
  PIXEL_SEEDS=${PIXEL_SEEDS:-4}; PIXEL_STEPS=${PIXEL_STEPS:-1000000}
  # 7 updates a chunk: 245 updates (1,003,520 steps) in 35 chunks of about 40 s each on an H200 (the first session's
  # 35-update chunks took 195 s each, so its cut-off run lost most of a chunk of training)
  PIXEL_ARGS=(schedule.updates_per_chunk=7 eval.num_envs=8 eval.max_steps=1000)
fi

# The commit, without .git on the device machine: BENCH_COMMIT (set from git here when there is one).
if [ -z "${BENCH_COMMIT:-}" ] && git rev-parse HEAD >/dev/null 2>&1; then
  BENCH_COMMIT=$(git rev-parse HEAD)
  git diff --quiet HEAD -- envgen_jax benchmarks configs || BENCH_DIRTY=1
fi
export BENCH_COMMIT=${BENCH_COMMIT:-} BENCH_DIRTY=${BENCH_DIRTY:-0}
[ -n "$BENCH_COMMIT" ] || say "WARNING: no BENCH_COMMIT and no git here: the results cannot name their commit"

# The wheels the image lacks (craftax, distrax, ...), from .whl/ into a folder on PYTHONPATH.
if ! "$PY" -c "import craftax, distrax" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    timeout 90 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/envgen_site .whl/*.whl >>"$LOG" 2>&1 || { say "installing .whl/ failed"; exit 1; }
    export PYTHONPATH=/tmp/envgen_site${PYTHONPATH:+:$PYTHONPATH}
  else
    say "craftax/distrax missing and no .whl/: run benchmarks/gpu_wheels.sh where pip works, carry .whl"; exit 1
  fi
fi
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
# One fresh persistent cache for this session: e2e_cold fills it, e2e_warm and the pixel run read it.
unset JAX_COMPILATION_CACHE_DIR
export XDG_CACHE_HOME=$RESULTS/xdg
say "commit ${BENCH_COMMIT:-unknown}, budget ${BUDGET}s, stages $STAGES$([ "$TINY" = 1 ] && echo ', --cpu-tiny sizes')"

summarize() {
  timeout 60 "$PY" benchmarks/gpu_session_summary.py "$RESULTS" --out "$OUT/session.json" >>"$LOG" 2>&1
  for f in "$RESULTS"/e2e_cold/e2e_*.json; do [ -f "$f" ] && cp "$f" "$OUT/e2e_cold.json"; done
  for f in "$RESULTS"/e2e_warm/e2e_*.json; do [ -f "$f" ] && cp "$f" "$OUT/e2e_warm.json"; done
  for f in "$RESULTS"/training/training_*.json; do [ -f "$f" ] && cp "$f" "$OUT/training.json"; done
  [ -f "$RESULTS/pixel_agent_1m.json" ] && cp "$RESULTS/pixel_agent_1m.json" "$OUT/pixel_agent_1m.json"
  [ -f "$RESULTS/pixel_speed.json" ] && cp "$RESULTS/pixel_speed.json" "$OUT/pixel_speed.json"
  (cd "$RESULTS" && find . -path ./xdg -prune -o -path '*/checkpoints' -prune -o -type f \
      \( -name '*.json' -o -name '*.jsonl' -o -name '*.png' -o -name '*.md' -o -name '*.yaml' -o -name '*.log' \
         -o -name '*.tsv' \) -print | tar czf "$OUT/.results.tgz.partial" -T - 2>/dev/null) \
    && mv "$OUT/.results.tgz.partial" "$OUT/results.tgz"
  return 0
}

# stage NAME ESTIMATE_S COMMAND...: run under min(ESTIMATE_S, budget left), record its time and status.
stage() {
  local name=$1 estimate=$2
  shift 2
  case ",$STAGES," in *",$name,"*) ;; *) return 0 ;; esac
  local left=$(( BUDGET - ($(date +%s) - T0) - RESERVE ))
  local limit=$(( estimate < left ? estimate : left ))
  if [ "$limit" -lt 15 ]; then
    say "stage $name skipped: ${left}s of the budget left"
    printf '%s\t%s\t0\tskipped: no time left\n' "$name" "$limit" >> "$RESULTS/stages.tsv"
    return 0
  fi
  say "stage $name: up to ${limit}s"
  local start status
  start=$(date +%s.%N)
  timeout --kill-after=5 "$limit" "$@" >>"$LOG" 2>&1
  status=$?
  local seconds
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  local what=ok
  [ "$status" = 124 ] || [ "$status" = 137 ] && what="timed out at ${limit}s (what it saved is kept)"
  [ "$status" != 0 ] && [ "$what" = ok ] && what="failed (exit $status; see session.log)"
  printf '%s\t%s\t%s\t%s\n' "$name" "$limit" "$seconds" "$what" >> "$RESULTS/stages.tsv"
  say "stage $name: ${seconds}s, $what"
  summarize
}

CHECK_PY='
import json, sys
import craftax, distrax, jax  # noqa: F401  (the imports are the check)
from envgen_jax.run.provenance import environment
env = environment()
print(json.dumps(env, indent=1), "\ndevices:", jax.devices())
open(sys.argv[1], "w").write(json.dumps(env, indent=1))
'
command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv \
  >>"$LOG" 2>&1
stage check "$T_CHECK" "$PY" -c "$CHECK_PY" "$RESULTS/check.json"
stage e2e_cold "$T_E2E_COLD" "$PY" benchmarks/run_all.py --parts e2e --compile-cache --fresh \
  --out-dir "$RESULTS/e2e_cold" "${E2E_ARGS[@]}"
stage e2e_warm "$T_E2E_WARM" "$PY" benchmarks/run_all.py --parts e2e --compile-cache --fresh \
  --out-dir "$RESULTS/e2e_warm" "${E2E_ARGS[@]}"
stage training "$T_TRAINING" "$PY" benchmarks/run_all.py --parts training --fresh --out-dir "$RESULTS/training" \
  "${TRAIN_ARGS[@]}"
stage pixel_seeds "$T_PIXEL_SEEDS" "$PY" benchmarks/pixel_seed_axis.py --out "$RESULTS/pixel_seed_axis.json" \
  "${SEED_AXIS_ARGS[@]}"
# one process per seed count, each adding its rows to the same file as it measures them
stage pixel_speed1 "${T_PIXEL_SPEED1:-$T_PIXEL_SPEED}" "$PY" benchmarks/pixel_speed.py --out "$RESULTS/pixel_speed.json" \
  "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[0]}" --variants vmap:float32 --parts env,rollout,learn,chunk,eval
stage pixel_speed4 "${T_PIXEL_SPEED4:-$T_PIXEL_SPEED}" "$PY" benchmarks/pixel_speed.py --out "$RESULTS/pixel_speed.json" \
  "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[1]}" --variants "$PIXEL_SPEED_4" --parts env,chunk
stage pixel_speed16 "${T_PIXEL_SPEED16:-$T_PIXEL_SPEED}" "$PY" benchmarks/pixel_speed.py --out "$RESULTS/pixel_speed.json" \
  "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[2]}" --variants "$PIXEL_SPEED_16" --parts env,chunk
# Command buffers (CUDA graphs) for while loops and conditionals too: an 8-env rollout's steps are small kernels
PIXEL_XLA_FLAGS=${PIXEL_XLA_FLAGS:---xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL --xla_gpu_graph_min_graph_size=1}
stage pixel_xla "$T_PIXEL_XLA" env XLA_FLAGS="$PIXEL_XLA_FLAGS ${XLA_FLAGS:-}" "$PY" benchmarks/pixel_speed.py \
  --out "$RESULTS/pixel_speed.json" --label cmdbuf "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[0]}" \
  --variants vmap:float32 --parts env,chunk
# The pixel run gets what is left, less the time its summary needs (which reads the newest checkpoint of a run
# cut off by its box).
PIXEL_LEFT=$(( BUDGET - ($(date +%s) - T0) - RESERVE - T_SUMMARY ))
case ",$STAGES," in
  *,pixel,*)
    if [ "$PIXEL_LEFT" -ge "$T_PIXEL_MIN" ]; then
      PIXEL_ENV=()
      [ "${PIXEL_CMDBUF:-0}" = 1 ] && PIXEL_ENV=(env XLA_FLAGS="$PIXEL_XLA_FLAGS ${XLA_FLAGS:-}")
      if [ "${PIXEL_RESUME:-0}" = 1 ] && [ -d "$RESULTS/pixel_run" ]; then
        stage pixel "$PIXEL_LEFT" "${PIXEL_ENV[@]}" "$PY" -m envgen_jax.cli train --resume "$RESULTS/pixel_run"
      else
        stage pixel "$PIXEL_LEFT" "${PIXEL_ENV[@]}" "$PY" -m envgen_jax.cli train --config configs/crafter_ppo_paper_agent.yaml \
        --out "$RESULTS/pixel_run" --set seeds="$PIXEL_SEEDS" schedule.cycles=0 schedule.final_steps="$PIXEL_STEPS" \
        output.progress=false output.tensorboard=false output.pictures=false output.checkpoint_minutes=1 \
        execution.seed_axis="${PIXEL_SEED_AXIS:-vmap}" execution.compute_dtype="${PIXEL_DTYPE:-float32}" "${PIXEL_ARGS[@]}"
      fi
      STAGES=$STAGES,pixel_summary
      stage pixel_summary "$T_SUMMARY" "$PY" benchmarks/pixel_agent_1m.py "$RESULTS/pixel_run" \
        --out "$RESULTS/pixel_agent_1m.json"
    else
      say "stage pixel skipped: ${PIXEL_LEFT}s left for it (needs ${T_PIXEL_MIN}s)"
      printf 'pixel\t%s\t0\tskipped: no time left\n' "$PIXEL_LEFT" >> "$RESULTS/stages.tsv"
    fi ;;
esac
summarize
say "done in $(( $(date +%s) - T0 ))s; $(ls "$OUT" | wc -l) files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
column -t -s $'\t' "$RESULTS/stages.tsv" 2>/dev/null | tee -a "$LOG"
exit 0
