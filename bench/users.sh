#!/usr/bin/env bash
# bench/users.sh [N] [C] [RUNS]: what a user of its own per job costs, as
# root: N trivial .sh candidates (they only write their output) at
# concurrency C, in RUNS alternating pairs (load on the machine hits both
# alike) of forge's default (each job as a uid of its own) and the same
# manifest with local: {user: root}. Reported: the medians of wall time and
# of forge's own CPU (its process alone, bench/cputime.py) per job, and of
# the per-pair differences. Must run as root (elsewhere both are the same).
set -euo pipefail
N=${1:-500} C=${2:-2} RUNS=${3:-5}
[ "$(id -u)" = 0 ] || { echo "bench/users.sh: run it as root: only then do jobs get users of their own" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
tmp=$(mktemp -d)
chmod 755 "$tmp" # the jobs' users reach their working directories in it
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/forge" "$root"
mkdir -p "$tmp/t/c" "$tmp/work"
chmod 755 "$tmp/work"
printf 'echo "# ok" > "$2"\necho done\n' > "$tmp/t/c/trivial.sh"
for mode in users root; do
  {
    echo 'objective: "bench"'
    echo "defaults: {concurrency: $C}"
    [ "$mode" = root ] && echo "local: {user: root}"
    echo "candidates:"
    for i in $(seq 1 "$N"); do echo "  - {id: c$i, script: c/trivial.sh}"; done
  } > "$tmp/t/$mode.yaml"
done
measure() {
  local out=$1; shift
  TMPDIR="$tmp/work" "$PYTHON" "$root/bench/cputime.py" "$@" 2> "$tmp/m" >/dev/null || { cat "$tmp/m" >&2; exit 1; }
  tail -1 "$tmp/m" | sed 's/[a-z]*=//g' >> "$out"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: > "$tmp/users"; : > "$tmp/root"
for r in $(seq 1 "$RUNS"); do
  for mode in users root; do
    (cd "$tmp/t" && measure "$tmp/$mode" "$tmp/forge" run -f "$mode.yaml" --quiet --out "$tmp/out" --run-id "$mode-$r")
  done
done
printf 'N=%d C=%d runs=%d, %d entries in /tmp\n' "$N" "$C" "$RUNS" "$(ls -A /tmp | wc -l)"
printf '%-22s %-14s %s\n' "jobs run as" "wall per job" "forge's own CPU per job"
for mode in users root; do
  printf '%-22s %-14s %s\n' "$([ $mode = users ] && echo 'a uid of its own' || echo 'root (user: root)')" \
    "$(awk -v n="$N" '{print 1000*$1/n}' "$tmp/$mode" | median | xargs printf '%.2f ms')" \
    "$(awk -v n="$N" '{print 1000*$2/n}' "$tmp/$mode" | median | xargs printf '%.2f ms')"
done
printf 'difference per pair (median): wall %s, own CPU %s\n' \
  "$(paste -d' ' "$tmp/users" "$tmp/root" | awk -v n="$N" '{print 1000*($1-$4)/n}' | median | xargs printf '%+.2f ms/job')" \
  "$(paste -d' ' "$tmp/users" "$tmp/root" | awk -v n="$N" '{print 1000*($2-$5)/n}' | median | xargs printf '%+.2f ms/job')"
