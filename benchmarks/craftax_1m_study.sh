#!/usr/bin/env bash
# The Craftax-1M study (issue 73), resumable across sessions and fresh checkouts:
#   nohup bash benchmarks/craftax_1m_study.sh > runs/craftax_1m.log 2>&1 &
# The code is pinned: the commit the study first ran at (kept in benchmarks/results/craftax_1m/commit; STUDY_COMMIT
# overrides it before the first start) is checked out in a detached worktree, and that is what trains, whatever lands
# on main meanwhile. Methods train one after another (--grouping sequential: 4 agents a run, so one method fits a
# session on a 2-core CPU; a fused group of 20 agents would not, and its checkpoints, ~1 GB, cannot be committed).
# The run directory is runs/craftax_1m (ignored by git); every finished method is copied, without checkpoints or
# TensorBoard files, to benchmarks/results/craftax_1m/<method>/ (tracked) with study.md/json, and copied back into a
# run directory that lacks it, so a fresh checkout loses at most the method that was training.
# It starts only after the agent screen (benchmarks/craftax_agent_screen.py) has a winner that is
# configs/base/craftax.yaml's agent, and takes the winner's run as its ppo (reused: same agent, seeds, steps).
set -uo pipefail
cd "$(dirname "$0")/.."
MAIN=$PWD
KEEP=$MAIN/benchmarks/results/craftax_1m
OUT=$MAIN/runs/craftax_1m
CONFIG=configs/craftax_study.yaml SEEDS=4
# ppo is the agent screen's winning run (plain PPO, same agent, seeds and schedule: the study reuses it and says so).
SCREENED=$("$MAIN/.venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("winner_files") or "")' \
  "$MAIN/benchmarks/results/craftax_agent_screen_cpu.json" 2>/dev/null)
if [ -z "$SCREENED" ]; then  # the study's agent is the screen's winner (issue 73): not before the screen ends
  echo "error: the agent screen has no winner yet (benchmarks/results/craftax_agent_screen_cpu.json); finish it first:" \
    "python benchmarks/craftax_agent_screen.py --seeds 4" >&2
  exit 1
fi
SCREENED=$MAIN/$SCREENED
if [ ! -f "$KEEP/commit" ]; then  # before pinning the code: its default agent must be the winner's
  JAX_PLATFORMS=cpu "$MAIN/.venv/bin/python" - "$SCREENED/config.yaml" "$CONFIG" "$SEEDS" <<'PY' || exit 1
import sys
from envgen_jax.run_config import load_run_config
from envgen_jax.study.runner import what_trains
from envgen_jax.study.settings import resolve
screened, config, seeds = load_run_config(sys.argv[1]), sys.argv[2], int(sys.argv[3])
if what_trains(screened) != what_trains(resolve(config, ["ppo"], seeds).run_config("ppo")):
    sys.exit(f"error: configs/base/craftax.yaml's agent is not the screen's winner ({sys.argv[1]}): make it so, "
             "commit, then start the study")
PY
fi
mkdir -p "$OUT" "$KEEP"
[ -f "$KEEP/commit" ] || git rev-parse "${STUDY_COMMIT:-HEAD}" > "$KEEP/commit"
STUDY_COMMIT=$(cat "$KEEP/commit")
TREE=${TREE:-$MAIN/../craftax_1m_tree}
# The headline comparisons first, so a study cut short still answers the main question.
METHODS=${METHODS:-ppo,envgen,scripted,random,sfl,plr,envgen_sfl,easy_to_hard}

[ -d "$TREE" ] || git worktree add --detach "$TREE" "$STUDY_COMMIT" || exit 1
for f in study.yaml; do [ -f "$OUT/$f" ] || [ ! -f "$KEEP/$f" ] || cp "$KEEP/$f" "$OUT/"; done
. "$MAIN/benchmarks/study_keep.sh"  # restore_finished, keep_finished
restore_finished
if [ ! -e "$OUT/ppo" ] && [ -f "$SCREENED/report.json" ]; then
  cp -r "$SCREENED" "$OUT/ppo" && echo "ppo: the agent screen's winner, from $SCREENED"
fi

# The study's own files, kept beside its finished methods.
STUDY_FILES="study.yaml study.md study.json study_scores.png study_curves.png study_success_by_cycle.png"
( while sleep 120; do keep_finished $STUDY_FILES; done ) &
WATCH=$!
trap 'kill $WATCH 2>/dev/null' EXIT
cd "$TREE"
JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE PYTHONPATH="$TREE" "$MAIN/.venv/bin/python" -m envgen_jax.cli study \
  --config "$CONFIG" --methods "$METHODS" --seeds "$SEEDS" --grouping sequential --out "$OUT"
rc=$?
keep_finished $STUDY_FILES
exit $rc
