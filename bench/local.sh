#!/usr/bin/env bash
# bench/local.sh [N] [C] [RUNS]: what forge's local backend costs over plain
# `xargs -P C`, per containment tier, in one run.
#
# For each tier (TIERS, default: every tier this machine has), RUNS
# alternating pairs (so that load on the machine hits both alike) of:
#   - N trivial Python candidates (PYTHON, default: the fastest python3 here,
#     /usr/bin/python3 when there is one: a slow interpreter hides forge's
#     cost) at concurrency C: forge run against xargs running the same script
#     with the same argv. Reported: the median of the per-pair ratios of wall
#     time and of CPU time (user + system of the whole process tree).
#     Targets: wall <= 1.10, CPU <= 1.15 (N=500, C=2).
#   - N trivial .sh candidates that only write their output: forge's own CPU
#     per job (its process alone, without the candidates and the tier's
#     init), beside that of bench/launch, a bare Go program that only starts
#     and waits for the same processes with os/exec (the floor of any Go
#     launcher on this machine), and forge's whole tree over xargs's, per job.
#     Target: own <= 1 ms.
# CPU times come from bench/cputime.py. GOMAXPROCS etc. pass through to forge.
# Every run writes its outputs to a directory of its own, all removed only at
# the end: on ext4 without a journal, allocating an inode skips every one
# freed in the last minutes (recently_deleted), so removing one run's files
# right before the next would slow whichever creates more files per job
# (forge: 8, its working directory's and its outputs; xargs: 1) with the
# bench's own cleanup.
set -euo pipefail
N=${1:-500} C=${2:-2} RUNS=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/forge" "$root"
go build -o "$tmp/launch" "$root/bench/launch"
if [ -z "${TIERS:-}" ]; then
  TIERS=
  for t in pidns cgroup pgroup; do
    printf 'objective: probe\ncandidates: [{id: p, command: [true]}]\n' > "$tmp/probe.yaml"
    if "$tmp/forge" run -f "$tmp/probe.yaml" --quiet --containment "$t" --out "$tmp/probe" >/dev/null 2>&1; then
      TIERS="$TIERS $t"
    fi
  done
fi
mkdir -p "$tmp/t/c"
cat > "$tmp/t/c/trivial.py" <<'PY'
import sys
with open(sys.argv[2], "w") as f:
    f.write("# ok\n")
print("done")
PY
printf 'echo "# ok" > "$2"\necho done\n' > "$tmp/t/c/trivial.sh"
chmod +x "$tmp/t/c/trivial.sh"
# The candidates' PATH starts with the chosen interpreter's directory, so that
# forge runs the same python3 as xargs does.
export PATH="$(dirname "$PYTHON"):$PATH"
for kind in py sh; do
  {
    echo 'objective: "bench"'
    echo "defaults: {concurrency: $C}"
    echo "candidates:"
    for i in $(seq 1 "$N"); do echo "  - {id: c$i, script: c/trivial.$kind}"; done
  } > "$tmp/t/$kind.yaml"
done
interp() { [ "$1" = py ] && echo "$PYTHON" || echo bash; }  # forge runs .sh with bash

# measure OUT CMD...: runs CMD under cputime.py, appends "wall self children" to OUT.
measure() {
  local out=$1; shift
  "$PYTHON" "$root/bench/cputime.py" "$@" 2> "$tmp/m" >/dev/null || { cat "$tmp/m" >&2; exit 1; }
  tail -1 "$tmp/m" | sed 's/[a-z]*=//g' >> "$out"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf 'N=%d C=%d runs=%d python=%s (%s)\n' "$N" "$C" "$RUNS" "$PYTHON" "$("$PYTHON" -V 2>&1)"
printf '%-7s %-26s %-26s %-16s %-16s %s\n' tier "python wall forge/xargs" "python CPU forge/xargs" "sh: forge's own" "sh: bare Go own" "sh: forge tree - xargs tree"
for tier in $TIERS; do
  for kind in py sh; do
    : > "$tmp/f.$kind"; : > "$tmp/x.$kind"; : > "$tmp/g.$kind"
    for r in $(seq 1 "$RUNS"); do
      run=$tier-$kind-$r
      mkdir -p "$tmp/x/$run" "$tmp/g/$run"
      (cd "$tmp/t" && measure "$tmp/f.$kind" "$tmp/forge" run -f "$kind.yaml" --quiet --containment "$tier" --out "$tmp/out" --run-id "$run")
      (cd "$tmp/t" && seq 1 "$N" | measure "$tmp/x.$kind" xargs -P "$C" -I{} "$(interp "$kind")" "c/trivial.$kind" bench "$tmp/x/$run/{}.md")
      if [ "$kind" = sh ]; then
        (cd "$tmp/t" && measure "$tmp/g.$kind" "$tmp/launch" "$N" "$C" c/trivial.sh "$tmp/g/$run")
      fi
    done
  done
  ratios() { paste -d' ' "$tmp/f.py" "$tmp/x.py" | awk -v col="$1" '{ if (col == "wall") print $1/$4; else print ($2+$3)/($5+$6) }'; }
  wall=$(ratios wall | median) cpu=$(ratios cpu | median)
  own=$(awk -v n="$N" '{print 1000*$2/n}' "$tmp/f.sh" | median)
  bare=$(awk -v n="$N" '{print 1000*$2/n}' "$tmp/g.sh" | median)
  extra=$(paste -d' ' "$tmp/f.sh" "$tmp/x.sh" | awk -v n="$N" '{print 1000*(($2+$3)-($5+$6))/n}' | median)
  printf '%-7s %-26s %-26s %-16s %-16s %s\n' "$tier" \
    "$(printf '%.3f (%s)' "$wall" "$(ratios wall | awk '{printf "%.2f ", $1}' | sed 's/ $//')")" \
    "$(printf '%.3f (%s)' "$cpu" "$(ratios cpu | awk '{printf "%.2f ", $1}' | sed 's/ $//')")" \
    "$(printf '%.2f ms/job' "$own")" "$(printf '%.2f ms/job' "$bare")" "$(printf '%.2f ms/job' "$extra")"
done
echo "targets: python wall <= 1.10, python CPU <= 1.15, sh forge's own <= 1 ms/job (medians of the pairs)"
