# Sourced by the resumable CPU studies (study_cpu_v2.sh, craftax_1m_study.sh): keep a study's finished methods in a
# tracked directory across sessions and fresh checkouts. Needs OUT (the run directory) and KEEP (the tracked one).

restore_finished() {  # a finished method kept in KEEP but missing from OUT (a fresh checkout) goes back into OUT
  for done in "$KEEP"/*/report.json; do
    [ -f "$done" ] || continue
    m=$(basename "$(dirname "$done")")
    [ -f "$OUT/$m/report.json" ] || { rm -rf "${OUT:?}/$m"; cp -r "$KEEP/$m" "$OUT/$m"; }
  done
}

compare_with_main() {  # the runs train from a pinned commit; their comparison (study.json, .md, plots) is rewritten
  # by main's code (`envgen-jax study --compare-only`) each time the pinned study rewrites it, once study.json is a
  # minute old (written whole), so the kept study.md is today's rendering (tests/test_study.py checks it)
  local json=$OUT/study.json stamp=$OUT/.compared_by_main
  [ -f "$json" ] && [ -f "$OUT/study.yaml" ] || return 0
  [ -f "$stamp" ] && [ ! "$json" -nt "$stamp" ] && return 0
  [ $(( $(date +%s) - $(stat -c %Y "$json") )) -ge 60 ] || return 0
  # from MAIN, through the console script: never the pinned tree's package (a cwd on sys.path, PYTHONPATH)
  ( cd "$MAIN" && env -u PYTHONPATH JAX_PLATFORMS=cpu nice .venv/bin/envgen-jax study --compare-only --out "$OUT" \
      > /dev/null ) && touch "$stamp"
}

keep_finished() {  # keep_finished FILE...: copy finished methods (no checkpoints, no TensorBoard) into KEEP, and the
  # study's own FILEs (compared by main's code first); again on every pass: a run writes report.json before
  # report.md and its plots, so one pass may catch it half-written
  compare_with_main
  for report in "$OUT"/*/report.json; do
    [ -f "$report" ] || continue
    m=$(basename "$(dirname "$report")")
    mkdir -p "$KEEP/$m"
    tar -C "$OUT/$m" --exclude=./checkpoints --exclude=./tb -cf - . | tar -C "$KEEP/$m" -xf -
  done
  for f in "$@"; do
    [ -f "$OUT/$f" ] && cp "$OUT/$f" "$KEEP/"
  done
  return 0
}
