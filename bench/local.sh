#!/usr/bin/env bash
# bench/local.sh [N] [C] [RUNS]: how much forge costs over plain xargs.
#
# Times forge playing N trivial Python candidates at concurrency C on the
# local backend against `xargs -P C` running the same script with the same
# argv, RUNS times each (interleaved, so load on the machine hits both alike),
# and prints the medians and the median of the per-pair ratios.
# Target: ratio <= 1.10 for N=500, C=2.
set -euo pipefail
N=${1:-500} C=${2:-2} RUNS=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/forge" "$root"
mkdir -p "$tmp/t/c" "$tmp/x"
cat > "$tmp/t/c/trivial.py" <<'PY'
import sys
with open(sys.argv[2], "w") as f:
    f.write("# ok\n")
print("done")
PY
{
  echo 'objective: "bench"'
  echo "defaults: {concurrency: $C}"
  echo "candidates:"
  for i in $(seq 1 "$N"); do echo "  - {id: c$i, script: c/trivial.py}"; done
} > "$tmp/t/forge.yaml"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

fx=() xx=() rx=()
for r in $(seq 1 "$RUNS"); do
  t0=$(now)
  (cd "$tmp/t" && "$tmp/forge" run --quiet --out "$tmp/out" --run-id "r$r" >/dev/null)
  t1=$(now)
  seq 1 "$N" | (cd "$tmp/t" && xargs -P "$C" -I{} python3 c/trivial.py bench "$tmp/x/{}.md" >/dev/null)
  t2=$(now)
  fx+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')") xx+=("$(awk -v a="$t1" -v b="$t2" 'BEGIN{print b-a}')")
  rx+=("$(awk -v f="${fx[-1]}" -v x="${xx[-1]}" 'BEGIN{print f/x}')")
  rm -rf "$tmp/out" "$tmp/x"/*
done
f=$(printf '%s\n' "${fx[@]}" | median)
x=$(printf '%s\n' "${xx[@]}" | median)
printf 'N=%d C=%d runs=%d\n' "$N" "$C" "$RUNS"
printf 'forge run : %.2fs (median of: %s)\n' "$f" "${fx[*]}"
printf 'xargs -P  : %.2fs (median of: %s)\n' "$x" "${xx[*]}"
printf 'ratio     : %.3f median of per-pair ratios (%s); target <= 1.10\n' "$(printf '%s\n' "${rx[@]}" | median)" "${rx[*]}"
