#!/usr/bin/env bash
# The second CPU study (issue 26), resumable across sessions and fresh checkouts:
#   nohup bash benchmarks/study_cpu_v2.sh > runs/study_cpu_v2.log 2>&1 &
# The code is pinned: a detached worktree at STUDY_COMMIT (made if missing) is what trains, whatever lands on main
# meanwhile. The run directory is runs/study_cpu_v2 (ignored by git); every method that has finished is copied,
# without checkpoints or TensorBoard files, to benchmarks/results/study_cpu_v2/<method>/ (tracked), and copied back
# into a run directory that lacks it, so a fresh checkout loses at most the method that was training.
set -uo pipefail
cd "$(dirname "$0")/.."
MAIN=$PWD
STUDY_COMMIT=${STUDY_COMMIT:-de4877b}
TREE=${TREE:-/work/study_v2}
OUT=$MAIN/runs/study_cpu_v2
KEEP=$MAIN/benchmarks/results/study_cpu_v2
# The headline comparisons first (ppo, envgen, scripted, random), so a study cut short still answers the main question.
METHODS=ppo,envgen,scripted,random,fixed,easy_to_hard,adversarial,plr,sfl,envgen_sfl

[ -d "$TREE" ] || git worktree add --detach "$TREE" "$STUDY_COMMIT" || exit 1
mkdir -p "$OUT" "$KEEP"
[ -f "$OUT/study.yaml" ] || [ ! -f "$KEEP/study.yaml" ] || cp "$KEEP/study.yaml" "$OUT/"
. "$MAIN/benchmarks/study_keep.sh"  # restore_finished, keep_finished
restore_finished

( while sleep 120; do keep_finished study.yaml; done ) &
WATCH=$!
trap 'kill $WATCH 2>/dev/null' EXIT
cd "$TREE"
JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE PYTHONPATH="$TREE" "$MAIN/.venv/bin/python" -m envgen_jax.cli study \
  --config configs/study_cpu.yaml --methods "$METHODS" --seeds 4 --out "$OUT"
rc=$?
keep_finished study.yaml
exit $rc
