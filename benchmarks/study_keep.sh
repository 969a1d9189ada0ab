# Sourced by the resumable CPU studies (study_cpu_v2.sh, craftax_1m_study.sh): keep a study's finished methods in a
# tracked directory across sessions and fresh checkouts. Needs OUT (the run directory) and KEEP (the tracked one).

restore_finished() {  # a finished method kept in KEEP but missing from OUT (a fresh checkout) goes back into OUT
  for done in "$KEEP"/*/report.json; do
    [ -f "$done" ] || continue
    m=$(basename "$(dirname "$done")")
    [ -f "$OUT/$m/report.json" ] || { rm -rf "${OUT:?}/$m"; cp -r "$KEEP/$m" "$OUT/$m"; }
  done
}

keep_finished() {  # keep_finished FILE...: copy finished methods (no checkpoints, no TensorBoard) into KEEP, and the
  # study's own FILEs; again on every pass: a run writes report.json before report.md and its plots, so one pass may
  # catch it half-written
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
