#!/usr/bin/env bash
# One prepared GPU run: every stage in a single command that fits one call (at most 10 minutes) on one H100/H200,
# from a bare machine (Python 3.12 and jax 0.11.2 there; craftax, distrax and their small dependencies installed from
# .whl/, made here by benchmarks/gpu_wheels.sh and carried along). The tree travels without .git: give the commit.
#
#   BENCH_COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_session.sh --stages LIST --budget S   # a GPU call (carry [".whl"])
#   bash benchmarks/gpu_session.sh --check                      # every stage's smallest form (seconds each; the suite's test)
#   bash benchmarks/gpu_session.sh --cpu-tiny                   # every stage end to end at tiny sizes (long: background)
#
# BEFORE A LEASE (one command, in a Python 3.12 venv with jax 0.11.2 and the .whl/ wheels, as the GPU image has them;
# docs/devices.md "Before a lease"):
#   PYTHON=/work/venv312/bin/python JAX_PLATFORMS=cpu bash benchmarks/gpu_session.sh --check --stages all
#   PYTHON=/work/venv312/bin/python JAX_PLATFORMS=cpu bash benchmarks/gpu_session.sh --cpu-tiny --stages all
# --check runs each stage's command as far as its first large program (benchmarks/stage_check.py: imports, arguments,
# configurations, building and tracing; then it stops before the compile), --cpu-tiny runs every stage whole at tiny
# sizes (compiles, runs, results, summaries). tests/test_gpu_session.py runs --check in the suite.
#
# THE FIRST LEASE (issue 64 items 1-3), about 14 minutes of calls after a start; two calls, the second sent while the
# machine is still warm (KEEP_RESULTS=1 keeps the first call's results and the compilation cache):
#   A  BENCH_COMMIT=... bash benchmarks/gpu_session.sh --stages check,step_loops,step_loops_cmdbuf,wide_speed --budget 560
#        step_loops        the env step's while loops (scan vs unrolled; compiled HLO and CUDA lowering) and the
#                          rollout's env steps timed side by side at 8 and 128 envs    <= 180 s (6 compiles of ~20 s)
#        step_loops_cmdbuf the same timings under command buffers for WHILE and CONDITIONAL             <= 110 s
#        wide_speed        whole updates of configs/crafter_ppo_paper_agent_wide.yaml (64 envs x 64 steps, dense
#                          seeds, bf16; WIDE_VARIANTS adds float32) at 1, 4, 8, 16 agents: pixel_speed `part: chunk`
#                          rows, one compile (~80 s) and a few updates each; what is left of the call (~230 s: the
#                          smaller agent counts first, each row saved as measured)
#   B  KEEP_RESULTS=1 STEP_LOOPS=auto WIDE_SEEDS=8,16 BENCH_COMMIT=... bash benchmarks/gpu_session.sh \
#          --stages step_loops_unroll,wide_speed,wide_bf16 --budget 280
#        step_loops_unroll the step timings with --xla_gpu_command_buffer_unroll_loops=true too            <= 110 s
#        wide_speed        the agent counts A did not reach
#        wide_bf16         the wide preset's learning, 2 dense seeds over the first 0.5M steps (cycles=0: all
#                          scored), summarised by pixel_agent_1m.py (Crafter score, mean and per-achievement success)
#                          beside the paper shape's 9.7% over its first 0.49M (1 seed, benchmarks/results/gpu_h200/pixel/)
# Item 3 does not fit that lease whole: 2 agents x 0.5M steps is about 65 s of training at the aims' speed (16,000
# env steps/s for 4 agents) plus ~80 s of compile and the evaluation, per dtype, so wide_bf16 gets what B leaves and
# a later call continues it (KEEP_RESULTS=1 WIDE_RESUME=1 ... --stages wide_bf16,wide_f32; a run cut off by its box
# is summarised from its newest checkpoint). STEP_LOOPS=auto takes the step variant A measured faster.
# THE SECOND LEASE (issue 64 items 4-5). `envgen-jax study` trains each study fused (issue 61: methods x seeds on one
# agent axis, `--schedule fused`, which the stages pass; STUDY_SCHEDULE='--schedule sequential' runs the methods one
# after another instead):
#   A  STEP_LOOPS=<A's winner> BENCH_COMMIT=... bash benchmarks/gpu_session.sh --stages check,pixel_study --budget 560
#        pixel_study       ppo, scripted and envgen (designs replayed from the CPU study's transcript:
#                          --replay envgen=benchmarks/results/study_cpu_v2/envgen/llm_transcript.jsonl) with the wide
#                          pixel agent at the paper's protocol (1.96M steps a seed), PIXEL_STUDY_SEEDS (2) seeds each:
#                          one program of 6 agents (`study --dry-run`: about 45 GB at 2 seeds, 90 GB at 4); a study
#                          cut off by its box resumes from its checkpoints when the same stage runs again
#   B  KEEP_RESULTS=1 ... --stages pixel_study,study_fused --budget 300     the pixel study's rest, then
#        study_fused       the whole symbolic study: configs/study_cpu.yaml, 10 methods x 16 seeds, the LLM methods
#                          (envgen, fixed, easy_to_hard, adversarial, envgen_sfl) replayed from their CPU transcripts;
#                          4 programs one after another (`study --dry-run`): the paper loop's 7 methods x 16 seeds
#                          = 112 agents (about 11 GB), then plr, sfl and envgen_sfl with 16 agents each
# At today's speeds (3,195 env steps/s for 4 dense pixel seeds) the pixel study does not fit one lease; it is planned
# on the wide shape's aims (4 agents >= 16,000 env steps/s: 3 methods x 2 seeds x 1.96M = 11.8M steps in ~12 min).
# The symbolic study one method after another is about 10 x 225 s (the 16-seed protocol measured cold on an H200);
# fused it is 314M env steps (10 x 16 x 1.96M), about 7 minutes at the 730,000 env steps/s that 4,096 envs trained
# (the paper loop's program has 7,168 env slots), plus 4 compiles. A study cut off by its box keeps every group it
# finished and resumes the rest from their checkpoints in the next call.
#
# Stages, in the order they run; each is time-boxed (`timeout`) by min(its estimate, the budget left), and saves what
# it measured as it goes (a stage cut off by its box keeps its rows; run_all saves an unfinished row after each phase):
#   check      imports, devices, the environment (device, versions, commit) -> check.json                    ~20 s
#   e2e_cold   the paper's protocol (configs/crafter_envgen.yaml, default agent, scripted designer), 16 vmapped
#              seeds, a fresh persistent compilation cache (run_all --parts e2e --compile-cache)           <= T_E2E_COLD
#   e2e_warm   the same again in a new process: every program from the cache                               <= T_E2E_WARM
#   training   training throughput at 16384, 1024 and 4096 envs (run_all --parts training)                 <= T_TRAINING
#   step_loops, step_loops_cmdbuf, step_loops_unroll   issue 64 item 1, above (benchmarks/step_loops.py)
#   wide_speed issue 64 item 2, above (benchmarks/pixel_speed.py --config configs/crafter_ppo_paper_agent_wide.yaml)
#   wide_bf16, wide_f32   issue 64 item 3, above
#   pixel_seeds  the pixel agent's training chunk, 4 seeds vmapped vs one after another (ppo.seed_axis: grouped vs
#              dense convolutions), side by side (benchmarks/pixel_seed_axis.py)                   <= T_PIXEL_SEEDS
#   pixel_speed1, pixel_speed4, pixel_speed16  issue 57: where the pixel agent's time goes (benchmarks/pixel_speed.py): 1 seed vmap float32 part
#              by part (env steps, rollout, learn, chunk, evaluation), then whole updates at 4 and 16 seeds for the
#              dense seed axis in float32 and bfloat16 (PIXEL_SPEED_4 / PIXEL_SPEED_16: variants), rows saved as
#              measured, one process per seed count                 <= T_PIXEL_SPEED1, 4, 16 (default T_PIXEL_SPEED)
#   pixel_xla  the same 1-seed env and chunk under XLA's command buffers for loops (XLA_FLAGS in PIXEL_XLA_FLAGS), a
#              process of its own, rows labelled 'cmdbuf' in the same pixel_speed.json            <= T_PIXEL_XLA
#   pixel_study, study_fused   issue 64 items 4-5, above
#   pixel      issue 42: plain PPO with the paper's pixel agent (configs/crafter_ppo_paper_agent.yaml), cycles=0 so
#              the first PIXEL_STEPS (1M) steps are the scored phase, PIXEL_SEEDS (4) seeds, vmapped (or one after
#              another with PIXEL_SEED_AXIS=map: set it from pixel_seeds' result, nothing picks it); the Crafter
#              score and mean success beside Dedieu et al.'s rerun (10.7% / 47.4%), or, if cut off, the score so far
#              (newest checkpoint) and the speed, in pixel_agent_1m.json                               the rest
# `--stages all` is every stage; without --stages the default is the older plan's (check ... pixel).
#
# Notes from the earlier leases:
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
# pixel_speed.json, pixel_agent_1m.json, step_loops.json, wide_bf16.json, wide_f32.json and results.tgz (every result
# file: pixel_seed_axis.json, the studies' directories and the pixel runs' small files; no checkpoints). Only the
# files of the stages run come back, so a call of the plans above returns at most 8.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
TINY=0
CHECK=0
ALL_STAGES=check,e2e_cold,e2e_warm,training,step_loops,step_loops_cmdbuf,step_loops_unroll,wide_speed,wide_bf16,wide_f32
ALL_STAGES=$ALL_STAGES,pixel_seeds,pixel_speed1,pixel_speed4,pixel_speed16,pixel_xla,pixel_study,study_fused,pixel
STAGES=check,e2e_cold,e2e_warm,training,pixel_seeds,pixel_speed1,pixel_speed4,pixel_speed16,pixel_xla,pixel
BUDGET=${BUDGET:-}
while [ $# -gt 0 ]; do
  case $1 in
    --cpu-tiny) TINY=1 ;;
    --check) TINY=1; CHECK=1 ;;  # tiny sizes, each command only as far as its first large program
    --stages) STAGES=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    *) echo "unknown argument $1 (--cpu-tiny, --check, --stages LIST|all, --budget SECONDS)" >&2; exit 2 ;;
  esac
  shift
done
[ "$STAGES" = all ] && STAGES=$ALL_STAGES
for name in ${STAGES//,/ }; do
  case ",$ALL_STAGES,pixel_summary," in *",$name,"*) ;; *)
    echo "unknown stage '$name'; stages: $ALL_STAGES (or all)" >&2; exit 2 ;; esac
done
[ -n "$BUDGET" ] || BUDGET=$([ "$TINY" = 1 ] && echo 5400 || echo 540)  # a 9-minute GPU run; a slow CPU's dry run
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
  T_STEP_LOOPS=${T_STEP_LOOPS:-900}; T_STEP_LOOPS_XLA=${T_STEP_LOOPS_XLA:-400}; STEP_LOOPS_ARGS=(--cpu-tiny --time 2)
  T_WIDE_SPEED=${T_WIDE_SPEED:-600}; WIDE_SEEDS=${WIDE_SEEDS:-1,2}; WIDE_VARIANTS=${WIDE_VARIANTS:-dense:bfloat16}
  T_WIDE_LEARN=${T_WIDE_LEARN:-900}; WIDE_LEARN_SEEDS=${WIDE_LEARN_SEEDS:-2}; WIDE_LEARN_STEPS=${WIDE_LEARN_STEPS:-64}
  WIDE_LEARN_ARGS=("${PIXEL_ARGS[@]}")
  T_PIXEL_STUDY=${T_PIXEL_STUDY:-900}; PIXEL_STUDY_SEEDS=${PIXEL_STUDY_SEEDS:-1}
  STUDY_TINY=(schedule.cycles=1 schedule.llm_env_steps=64 schedule.original_env_steps=64 schedule.final_steps=64
              schedule.llm_episode_length=64 schedule.envs_per_call=4)
  PIXEL_STUDY_ARGS=("${PIXEL_ARGS[@]}" "${STUDY_TINY[@]}")
  T_STUDY_FUSED=${T_STUDY_FUSED:-1500}; STUDY_FUSED_SEEDS=${STUDY_FUSED_SEEDS:-1}
  STUDY_FUSED_ARGS=("${STUDY_TINY[@]}" ppo.num_envs=8 ppo.num_steps=8 ppo.update_epochs=1 ppo.num_minibatches=2
                    network.mlp.width=16 network.mlp.depth=1 schedule.updates_per_chunk=1 eval.num_envs=2
                    eval.max_steps=20 method_options.envgen_sfl.pool=4)
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
  # issue 64: about 20 s a compile of the env step on an H200 (pixel_speed.json's env rows), 76 s a dense chunk
  T_STEP_LOOPS=${T_STEP_LOOPS:-180}; T_STEP_LOOPS_XLA=${T_STEP_LOOPS_XLA:-110}; STEP_LOOPS_ARGS=(--time 8,128)
  T_WIDE_SPEED=${T_WIDE_SPEED:-400}; WIDE_SEEDS=${WIDE_SEEDS:-1,4,8,16}; WIDE_VARIANTS=${WIDE_VARIANTS:-dense:bfloat16}
  T_WIDE_LEARN=${T_WIDE_LEARN:-140}; WIDE_LEARN_SEEDS=${WIDE_LEARN_SEEDS:-2}; WIDE_LEARN_STEPS=${WIDE_LEARN_STEPS:-500000}
  WIDE_LEARN_ARGS=(schedule.updates_per_chunk=8 eval.num_envs=8 eval.max_steps=1000)
  T_PIXEL_STUDY=${T_PIXEL_STUDY:-520}; PIXEL_STUDY_SEEDS=${PIXEL_STUDY_SEEDS:-2}
  PIXEL_STUDY_ARGS=(schedule.updates_per_chunk=8 eval.num_envs=8 eval.max_steps=1000)
  T_STUDY_FUSED=${T_STUDY_FUSED:-540}; STUDY_FUSED_SEEDS=${STUDY_FUSED_SEEDS:-16}; STUDY_FUSED_ARGS=()
fi
if [ "$CHECK" = 1 ]; then  # each stage stops before its first large compile: seconds, whatever the estimates
  for t in T_CHECK T_E2E_COLD T_E2E_WARM T_TRAINING T_PIXEL_SEEDS T_PIXEL_SPEED T_PIXEL_XLA T_STEP_LOOPS \
           T_STEP_LOOPS_XLA T_WIDE_SPEED T_WIDE_LEARN T_PIXEL_STUDY T_STUDY_FUSED; do
    printf -v "$t" '%s' "${T_CHECK_STAGE:-240}"
  done
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
  for f in step_loops wide_bf16 wide_f32; do [ -f "$RESULTS/$f.json" ] && cp "$RESULTS/$f.json" "$OUT/$f.json"; done
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
  if [ "$CHECK" = 1 ]; then  # queued: benchmarks/stage_check.py runs them all in one process at the end
    printf '%s\x1f' "$name" "$@" >> "$RESULTS/check_queue"
    printf '\x1e' >> "$RESULTS/check_queue"  # a stage's words may hold newlines (check's -c code)
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
  [ "$CHECK" = 1 ] || summarize  # --check: once, at the end
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
# issue 64 item 1: Craftax's short loops as scans vs unrolled (benchmarks/unrolled_loops.py), counted and timed, then
# under XLA's loop options: command buffers for WHILE and CONDITIONAL, and with their loops unrolled too (flag names
# as jax 0.11.2's XLA accepts them: an unknown XLA flag is fatal, so --check and --cpu-tiny try them on a CPU)
STEP_LOOPS_CMDBUF_FLAGS=${STEP_LOOPS_CMDBUF_FLAGS:---xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL --xla_gpu_graph_min_graph_size=1}
STEP_LOOPS_UNROLL_FLAGS=${STEP_LOOPS_UNROLL_FLAGS:-$STEP_LOOPS_CMDBUF_FLAGS --xla_gpu_command_buffer_unroll_loops=true}
stage step_loops "$T_STEP_LOOPS" "$PY" benchmarks/step_loops.py --out "$RESULTS/step_loops.json" --count step \
  "${STEP_LOOPS_ARGS[@]}"
stage step_loops_cmdbuf "$T_STEP_LOOPS_XLA" env XLA_FLAGS="$STEP_LOOPS_CMDBUF_FLAGS ${XLA_FLAGS:-}" "$PY" \
  benchmarks/step_loops.py --out "$RESULTS/step_loops.json" --label cmdbuf --count none "${STEP_LOOPS_ARGS[@]}"
stage step_loops_unroll "$T_STEP_LOOPS_XLA" env XLA_FLAGS="$STEP_LOOPS_UNROLL_FLAGS ${XLA_FLAGS:-}" "$PY" \
  benchmarks/step_loops.py --out "$RESULTS/step_loops.json" --label cmdbuf_unroll --count none "${STEP_LOOPS_ARGS[@]}"
# STEP_LOOPS (scan | unrolled | auto: the faster one in step_loops.json's default-label timings, else scan)
STEP_LOOPS=${STEP_LOOPS:-scan}
if [ "$STEP_LOOPS" = auto ]; then
  STEP_LOOPS=$("$PY" -c '
import json, sys
try:
    rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "time" and r["label"] == "default"]
except (OSError, ValueError, KeyError):
    rows = []
ms = {v: sum(r["ms_per_step"] for r in rows if r["variant"] == v) for v in ("scan", "unrolled")}
same = {r["envs"] for r in rows if r["variant"] == "scan"} == {r["envs"] for r in rows if r["variant"] == "unrolled"}
print("unrolled" if rows and same and ms["unrolled"] < ms["scan"] else "scan")' "$RESULTS/step_loops.json")
  say "STEP_LOOPS=auto: $STEP_LOOPS (from $RESULTS/step_loops.json)"
fi
# The runs below with Crafter's short loops as chosen: the package keeps craftax's scans; unrolled is the experiment
# outside it, the same command through benchmarks/unrolled_loops.py
case "$STEP_LOOPS" in
  scan) LOOPS_CLI=(-m envgen_jax.cli) ;;
  unrolled) LOOPS_CLI=(benchmarks/unrolled_loops.py) ;;
  *) say "STEP_LOOPS: '$STEP_LOOPS' is not one of scan, unrolled, auto"; exit 1 ;;
esac
# PIXEL_CMDBUF=1: the pixel stages under command buffers for loops (1.6x the rollout on the 2026-11-27 lease)
PIXEL_XLA_FLAGS=${PIXEL_XLA_FLAGS:---xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL --xla_gpu_graph_min_graph_size=1}
XENV=(); XLABEL=default
[ "${PIXEL_CMDBUF:-0}" = 1 ] && XENV=(env XLA_FLAGS="$PIXEL_XLA_FLAGS ${XLA_FLAGS:-}") && XLABEL=cmdbuf
WIDE=configs/crafter_ppo_paper_agent_wide.yaml
# issue 64 item 2: the wide preset's whole updates at 1, 4, 8, 16 agents
stage wide_speed "$T_WIDE_SPEED" "${XENV[@]}" "$PY" benchmarks/pixel_speed.py --out "$RESULTS/pixel_speed.json" \
  --label "$XLABEL" --config "$WIDE" --set "game_options.step_loops=$STEP_LOOPS" "${SPEED_ARGS[@]}" \
  --seeds "$WIDE_SEEDS" --variants "$WIDE_VARIANTS" --parts chunk
# issue 64 item 3: the wide preset's learning over its first WIDE_LEARN_STEPS steps, bf16 and float32
QUIET=(output.progress=false output.tensorboard=false output.pictures=false output.checkpoint_minutes=1)
wide_learn() {  # wide_learn bfloat16|float32 NAME
  local dtype=$1 name=$2
  if [ "${WIDE_RESUME:-0}" = 1 ] && [ -d "$RESULTS/$name" ]; then
    stage "$name" "$T_WIDE_LEARN" "${XENV[@]}" "$PY" "${LOOPS_CLI[@]}" train --resume "$RESULTS/$name"
  else
    stage "$name" "$T_WIDE_LEARN" "${XENV[@]}" "$PY" "${LOOPS_CLI[@]}" train --config "$WIDE" --out "$RESULTS/$name" \
      --set seeds="$WIDE_LEARN_SEEDS" schedule.cycles=0 schedule.final_steps="$WIDE_LEARN_STEPS" "${QUIET[@]}" \
      execution.compute_dtype="$dtype" "${WIDE_LEARN_ARGS[@]}"
  fi
  case ",$STAGES," in *",$name,"*)
    if [ "$CHECK" = 1 ]; then
      say "stage ${name}_summary skipped under --check (it reads what the run saved; --cpu-tiny runs it)"
    else
      STAGES=$STAGES,${name}_summary
      stage "${name}_summary" "$T_SUMMARY" "$PY" benchmarks/pixel_agent_1m.py "$RESULTS/$name" --config "$WIDE" \
        --out "$RESULTS/$name.json"
    fi ;;
  esac
}
wide_learn bfloat16 wide_bf16
wide_learn float32 wide_f32
stage pixel_seeds "$T_PIXEL_SEEDS" "$PY" benchmarks/pixel_seed_axis.py --out "$RESULTS/pixel_seed_axis.json" \
  "${SEED_AXIS_ARGS[@]}"
# one process per seed count, each adding its rows to the same file as it measures them
stage pixel_speed1 "${T_PIXEL_SPEED1:-$T_PIXEL_SPEED}" "$PY" benchmarks/pixel_speed.py --out "$RESULTS/pixel_speed.json" \
  "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[0]}" --variants vmap:float32 --parts env,rollout,learn,chunk,eval
stage pixel_speed4 "${T_PIXEL_SPEED4:-$T_PIXEL_SPEED}" "$PY" benchmarks/pixel_speed.py --out "$RESULTS/pixel_speed.json" \
  "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[1]}" --variants "$PIXEL_SPEED_4" --parts env,chunk
stage pixel_speed16 "${T_PIXEL_SPEED16:-$T_PIXEL_SPEED}" "$PY" benchmarks/pixel_speed.py --out "$RESULTS/pixel_speed.json" \
  "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[2]}" --variants "$PIXEL_SPEED_16" --parts env,chunk
# Command buffers (CUDA graphs) for while loops and conditionals too (PIXEL_XLA_FLAGS, above): an 8-env rollout's
# steps are small kernels
stage pixel_xla "$T_PIXEL_XLA" env XLA_FLAGS="$PIXEL_XLA_FLAGS ${XLA_FLAGS:-}" "$PY" benchmarks/pixel_speed.py \
  --out "$RESULTS/pixel_speed.json" --label cmdbuf "${SPEED_ARGS[@]}" --seeds "${SPEED_SEEDS[0]}" \
  --variants vmap:float32 --parts env,chunk
# issue 64 items 4-5: the studies, fused (STUDY_SCHEDULE), LLM methods replayed from the CPU study's transcripts
read -r -a SCHEDULE_ARGS <<< "${STUDY_SCHEDULE:---schedule fused}"
RECORDED=benchmarks/results/study_cpu_v2
# A replayed reply must parse under this run's llm.strategy: the strategy the CPU study recorded them with
# (configs/study_cpu.yaml pins it; the wide preset has base/crafter.yaml's, whose replies hold no `targets`)
RECORDED_STRATEGY=(llm.strategy.repair_temperature=0.7 llm.strategy.envs_per_reply=1 llm.strategy.conversation=continued
                   llm.strategy.targets=true llm.strategy.needs=true llm.strategy.history=summary
                   llm.strategy.only_changes=true llm.strategy.advice=all llm.strategy.analysis=each_reply
                   llm.strategy.distinct=false llm.strategy.weak_needs=false llm.strategy.focus=none
                   llm.strategy.weak_levers=false)
stage pixel_study "$T_PIXEL_STUDY" "${XENV[@]}" "$PY" "${LOOPS_CLI[@]}" study --config "$WIDE" \
  --methods ppo,scripted,envgen --seeds "$PIXEL_STUDY_SEEDS" --out "$RESULTS/pixel_study" \
  --replay "envgen=$RECORDED/envgen/llm_transcript.jsonl" "${SCHEDULE_ARGS[@]}" \
  --set "${QUIET[@]}" "${RECORDED_STRATEGY[@]}" "${PIXEL_STUDY_ARGS[@]}"
stage study_fused "$T_STUDY_FUSED" "$PY" -m envgen_jax.cli study --config configs/study_cpu.yaml \
  --methods ppo,random,envgen,fixed,easy_to_hard,adversarial,plr,sfl,envgen_sfl,scripted \
  --seeds "$STUDY_FUSED_SEEDS" --out "$RESULTS/study_fused" "${SCHEDULE_ARGS[@]}" \
  --replay "envgen=$RECORDED/envgen/llm_transcript.jsonl" "fixed=$RECORDED/fixed/llm_transcript.jsonl" \
    "easy_to_hard=$RECORDED/easy_to_hard/llm_transcript.jsonl" "adversarial=$RECORDED/adversarial/llm_transcript.jsonl" \
    "envgen_sfl=$RECORDED/envgen_sfl/llm_transcript.jsonl" \
  --set "${QUIET[@]}" "${STUDY_FUSED_ARGS[@]}"
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
      if [ "$CHECK" = 1 ]; then
        say "stage pixel_summary skipped under --check (it reads what the run saved; --cpu-tiny runs it)"
      else
        STAGES=$STAGES,pixel_summary
        stage pixel_summary "$T_SUMMARY" "$PY" benchmarks/pixel_agent_1m.py "$RESULTS/pixel_run" \
          --out "$RESULTS/pixel_agent_1m.json"
      fi
    else
      say "stage pixel skipped: ${PIXEL_LEFT}s left for it (needs ${T_PIXEL_MIN}s)"
      printf 'pixel\t%s\t0\tskipped: no time left\n' "$PIXEL_LEFT" >> "$RESULTS/stages.tsv"
    fi ;;
esac
if [ "$CHECK" = 1 ] && [ -f "$RESULTS/check_queue" ]; then
  say "--check: $(tr -cd '\036' < "$RESULTS/check_queue" | wc -c) stages, each as far as its first large program, in one process"
  timeout --kill-after=5 "${T_CHECK_ALL:-1500}" "$PY" benchmarks/stage_check.py --batch "$RESULTS/check_queue" \
    --tsv "$RESULTS/stages.tsv" 2>&1 | tee -a "$LOG" | grep --line-buffered -E '^stage_check: [a-z0-9_]+: (ok|failed)'
fi
summarize
say "done in $(( $(date +%s) - T0 ))s; $(ls "$OUT" | wc -l) files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
column -t -s $'\t' "$RESULTS/stages.tsv" 2>/dev/null | tee -a "$LOG"
exit 0
