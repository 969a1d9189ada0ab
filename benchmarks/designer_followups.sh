#!/usr/bin/env bash
# Issue 24's measurements that wait for the CPU the second study holds, in order of what they decide. Each step
# resumes (its results are tracked files under benchmarks/results/, rewritten after every call or chain), so the
# same command continues after a kill or on a fresh checkout:
#   nohup bash benchmarks/designer_followups.sh > runs/designer_followups.log 2>&1 &
# 1. The designer over a whole run (4 cycles, feedback that changes), seed 0: the default conversation (continued)
#    and `llm.conversation: fresh`, which decides that setting's default.
# 2. A second chain (seed 1) of each conversation, which confirms or refutes seed 0's answer.
# 3. The first study's designer (v1) on the new profiles, then the single-idea ablations, into the v2 table.
# 4. A second request per profile for v2 and each single-idea ablation (the rule decides each idea on two), then
#    v2 with one analysis a design.
# 5. v2 without repair turns for advice.
# 6. v3, the designer the verdicts leave (the bundled configs' llm settings), two requests per profile: the aims.
# 7. v3 over whole runs: two 4-cycle chains with the bundled Crafter config (repeats across cycles; latency).
# Each idea's verdict: the "The rule" table of benchmarks/results/designer_quality_v2.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE
R=benchmarks/results
chain() {  # seeds, out, overrides...
  local seeds=$1 out=$2; shift 2
  $PY benchmarks/designer_chain.py --seeds "$seeds" --out "$out" --resume "$@"
}
chain 0 $R/designer_chain.json
chain 0 $R/designer_chain_fresh.json --set llm.conversation=fresh
chain 0,1 $R/designer_chain.json
chain 0,1 $R/designer_chain_fresh.json --set llm.conversation=fresh
$PY benchmarks/designer_quality.py --models qwen2.5-coder-1.5b --repeats 1 --resume \
  --variants v2,v2_greedy,v2_all_at_once,v1,v2_no_targets,v2_no_needs,v2_json_history,v2_with_defaults
# 4. A second request per profile (seed 1) for v2 and for each single-idea ablation, which decides each idea on two
#    requests per profile (kept if removing it lowers targeting or raises repeats with p < 0.05, paired
#    with v2), then v2 with one analysis a design (fewer tokens a call; seeds 0 and 1).
$PY benchmarks/designer_quality.py --models qwen2.5-coder-1.5b --repeats 2 --resume \
  --variants v2,v2_no_needs,v2_json_history,v2_with_defaults,v2_no_targets,v2_analysis_once
# 5. v2 without repair turns for advice (runs/notes: 68 of v2's 72 repair turns mended nothing), seeds 0 and 1,
#    decided by the same rule (the advice repairs stay if removing them lowers targeting, or raises repeats or
#    tokens written, with p < 0.05).
$PY benchmarks/designer_quality.py --models qwen2.5-coder-1.5b --repeats 2 --resume --variants v2,v2_no_advice
# 6. The designer left by the verdicts (v3: the bundled configs' designer), seeds 0 and 1, into the v2 table.
$PY benchmarks/designer_quality.py --models qwen2.5-coder-1.5b --repeats 2 --resume --variants v3
# 7. The same designer over whole runs (4 cycles, feedback that changes; seeds 0 and 1) as configs/crafter_envgen.yaml
#    builds it, on the otherwise idle CPU for the latency aim.
chain 0,1 $R/designer_chain_default.json --config configs/crafter_envgen.yaml
