#!/usr/bin/env bash
# Issue 45's measurements with the default offline model (run them when no agent sweep holds the CPU: two heavy jobs
# on 2 cores distort both). Each step resumes (results are tracked files under benchmarks/results/, rewritten after
# every call or chain), so the same command continues after a kill or on a fresh checkout:
#   nohup bash benchmarks/designer_issue45.sh > runs/designer_issue45.log 2>&1 &
# 1. v3_distinct: v3 with the guard (llm.distinct, now on by default), two requests per profile: duplicates and
#    repeats per call against v3's, and the reference of issue 45's ideas.
# 2. Each idea as v3_distinct plus one setting, two requests per profile, in the order issue 45 names them:
#    v3_weak_needs (llm.weak_needs), v3_weak_levers (llm.weak_levers too: Heist's keys lever), v3_targets_where_missing
#    (llm.unserved: targets_first); then v3_focus_weakest (llm.focus: weakest on top of weak_needs, adopted
#    meanwhile, and decided against it: IDEA_REFERENCE), then v3_focus_lagging (llm.focus: lagging, decided against
#    v3_focus_weakest, the default it became), then v3_focus_levers (llm.weak_levers on top of the default, decided
#    against v3_focus_weakest). Verdicts: the "The rule" table of designer_quality_v2.md (IDEAS_45: adopted if
#    the lowest profile rises and the average is not lower with p < 0.05, paired with v3_distinct).
# 3. The bundled designer over whole runs: two 4-cycle chains as configs/crafter_envgen.yaml builds it (the aim:
#    0 duplicates inside a call, 0 repeats of an earlier cycle's environment; a feedback call <= 150 s, idle CPU).
# 4. The tables again from the stored calls (no model call).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE
R=benchmarks/results
Q="$PY benchmarks/designer_quality.py --models qwen2.5-coder-1.5b --repeats 2 --resume"
$Q --variants v3_distinct
$Q --variants v3_weak_needs
$Q --variants v3_weak_levers
$Q --variants v3_targets_where_missing
$Q --variants v3_focus_weakest
$Q --variants v3_focus_lagging
$Q --variants v3_focus_levers
$PY benchmarks/designer_chain.py --seeds 0,1 --resume --config configs/crafter_envgen.yaml \
  --out $R/designer_chain_focus.json
$PY benchmarks/designer_chain.py --seeds 0,1 --resume --config configs/crafter_envgen.yaml \
  --out $R/designer_chain_levers.json   # the default with weak_levers (adopted after v3_focus_levers)
$PY benchmarks/designer_quality.py --report
