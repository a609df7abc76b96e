#!/usr/bin/env bash
# The speed-up staircase on Fashion-MNIST: the same CNN trained with a plain serial pipeline, then with a
# parallel, cached, prefetched one, then in mixed_bfloat16, then on two local ranks (gloo, `--nproc 2`, each rank
# with half the cores) — each run's report, then one HTML page comparing them (speed-ups against the first step).
#
#   examples/staircase/run.sh [RAMJET] [OUT_DIR] [RUN_ARGS...]   (defaults: `ramjet` on PATH, runs/staircase)
#
# RUN_ARGS go to every `ramjet run`, e.g. `--set /data/train/take=6000` for a quick look.
# A step this machine cannot run (mixed_bfloat16 without AVX-512) is skipped with the backend's reason; any other
# failure stops the staircase.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RAMJET=${1:-ramjet}
OUT=${2:-runs/staircase}
shift $(( $# < 2 ? $# : 2 ))
mkdir -p "$OUT"

reports=() labels=()
for manifest in "$HERE"/[0-9]_*.json; do
  step=$(basename "$manifest" .json)
  echo "== $step"
  log="$OUT/$step.log"
  status=0
  ranks=()
  if grep -q '"strategy"' "$manifest"; then ranks=(--nproc 2); fi
  "$RAMJET" run "$manifest" "${ranks[@]}" --report "$OUT/$step.json" "$@" 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    if [ "$status" -eq 2 ] && grep -q "needs a CPU with AVX-512" "$log"; then
      echo "== $step skipped: this CPU cannot run it (see $log)"
      continue
    fi
    echo "== $step failed (exit $status); its output is in $log" >&2
    exit "$status"
  fi
  reports+=("$OUT/$step.json")
  labels+=(--label "${step#*_}")
done

"$RAMJET" report "${reports[@]}" "${labels[@]}" -o "$OUT/staircase.html"
echo "== the staircase: $OUT/staircase.html"
