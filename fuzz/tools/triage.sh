#!/usr/bin/env bash
# Groups the findings of a fuzz run by cause: replays each input in build-fuzz/findings/<target>/ and prints how
# many share the same first line of diagnosis (an uncaught exception's what(), a sanitizer's SUMMARY), with one
# example input each. Usage: fuzz/tools/triage.sh TARGET
set -uo pipefail
target=${1:?usage: fuzz/tools/triage.sh TARGET}
cd "$(dirname "$0")/../.."
export UBSAN_OPTIONS=halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 TMPDIR=${TMPDIR:-/dev/shm}
for input in build-fuzz/findings/"$target"/*; do
  [ -f "$input" ] || continue
  cause=$(timeout 30 build-fuzz/bin/fuzz_"$target" -rss_limit_mb=2048 -timeout=10 "$input" 2>&1 |
          grep -m1 -E "what\(\):|SUMMARY:|runtime error:|out-of-memory|timeout" | cut -c1-160 |
          sed -E "s/'[^']{0,200}'/'…'/g; s/[0-9]{3,}/N/g")
  printf '%s\t%s\n' "${cause:-no failure on replay}" "$input"
done | sort | awk -F'\t' '{n[$1]++; if (!($1 in ex)) ex[$1]=$2} END {for (c in n) printf "%5d  %s\n       e.g. %s\n", n[c], c, ex[c]}'
