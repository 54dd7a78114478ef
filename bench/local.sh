#!/usr/bin/env bash
# bench/local.sh [N] [C] [PAIRS]: what forge's local backend costs over a
# log-keeping `xargs -P C`, with forge's default settings (as root: each job
# runs as a uid of its own). Defaults: 300 jobs, concurrency 2, 7 pairs.
#
# PAIRS alternating pairs (load on the machine hits both alike) of N trivial
# Python candidates at concurrency C: `forge run` against xargs running the
# same script with the same argv, each job's stdout and stderr written to
# files of its own, as forge keeps stdout.log and stderr.log. Reported: the
# medians of the per-pair ratios of wall time and of CPU time (user + system
# of the whole process tree, bench/cputime.py), their range in brackets.
# Target: both <= 1.15 (N=300, C=2, as root).
#
# Then one more run of each forge, with FORGE_LOCAL_STEPS set
# (runner/local/jobsteps.go), splits a job's wall time by step: the mean per
# job of each, and what of forge's wall time per job and slot (wall × C ÷ N)
# is spent outside the jobs.
#
# FORGE= a forge binary to play (default: built from this tree); BEFORE=
# another, played in the same pairs (forge, before, xargs): a change's
# before and after under the same load. PYTHON= the interpreter (default
# /usr/bin/python3 when there is one: a slow interpreter hides forge's cost);
# LOCAL= a local: block for the manifest ('{user: root}'); TIERS= tiers to
# play one after the other ('pidns cgroup pgroup'; default: forge's choice);
# SH=1 also plays N trivial .sh candidates: forge's own CPU per job beside
# bench/launch's (a Go program that only starts the same processes);
# TMPDIR= where it all goes, forge's working directories included.
#
# Every run writes to a directory of its own, all removed only at the end: on
# ext4 without a journal, making a file skips every inode freed in the last
# minutes, so removing one run's files before the next would slow whichever
# makes more files per job. Other work on the machine that frees many files
# in the same place (a build in /tmp) slows every file made there: see
# docs/benchmarks.md.
set -euo pipefail
N=${1:-300} C=${2:-2} PAIRS=${3:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
tmp=$(mktemp -d)
chmod 755 "$tmp" # as root, the jobs' users reach their files through it
trap 'rm -rf "$tmp"' EXIT

if [ -n "${FORGE:-}" ]; then
  cp "$FORGE" "$tmp/forge"
else
  (cd "$root" && go build -o "$tmp/forge" .)
fi
arms=forge
if [ -n "${BEFORE:-}" ]; then
  cp "$BEFORE" "$tmp/before"
  arms="forge before"
fi
kinds=py
if [ "${SH:-0}" = 1 ]; then
  (cd "$root" && go build -o "$tmp/launch" ./bench/launch)
  kinds="py sh"
fi
mkdir -p "$tmp/t/c"
cat > "$tmp/t/c/trivial.py" <<'PY'
import sys
with open(sys.argv[2], "w") as f:
    f.write("# ok\n")
print("done")
PY
printf 'echo "# ok" > "$2"\necho done\n' > "$tmp/t/c/trivial.sh"
chmod -R a+rX "$tmp/t"
# The candidates' PATH starts with the interpreter's directory, so that
# forge runs the same python3 as xargs does.
export PATH="$(dirname "$PYTHON"):$PATH"
for kind in py sh; do
  {
    echo 'objective: "bench"'
    echo "defaults: {concurrency: $C}"
    [ -n "${LOCAL:-}" ] && echo "local: $LOCAL"
    echo "candidates:"
    for i in $(seq 1 "$N"); do echo "  - {id: c$i, script: c/trivial.$kind}"; done
  } > "$tmp/t/$kind.yaml"
done
interp() { [ "$1" = py ] && echo "$PYTHON" || echo bash; } # forge runs .sh with bash

# measure OUT CMD...: runs CMD under cputime.py, appends "wall self children" to OUT.
measure() {
  local out=$1; shift
  "$PYTHON" "$root/bench/cputime.py" "$@" 2> "$tmp/m" >/dev/null || { cat "$tmp/m" >&2; exit 1; }
  tail -1 "$tmp/m" | sed 's/[a-z]*=//g' >> "$out"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# ratios A X wall|cpu: the per-pair ratios of runs A over runs X.
ratios() { paste -d' ' "$1" "$2" | awk -v col="$3" '{ if (col == "wall") print $1/$4; else print ($2+$3)/($5+$6) }'; }
summary() { printf '%.3f (%s)' "$(ratios "$@" | median)" "$(ratios "$@" | sort -g | sed -n '1p;$p' | xargs printf '%.2f–%.2f')"; }
perjob() { # perjob RUNS: wall per job and slot, CPU per job (ms, medians)
  printf '%.2f ms wall, %.2f ms CPU' "$(awk -v n="$N" -v c="$C" '{print 1000*$1*c/n}' "$1" | median)" "$(awk -v n="$N" '{print 1000*($2+$3)/n}' "$1" | median)"
}

printf 'N=%d C=%d pairs=%d python=%s (%s), as uid %d, TMPDIR=%s\n' "$N" "$C" "$PAIRS" "$PYTHON" "$("$PYTHON" -V 2>&1)" "$(id -u)" "${TMPDIR:-/tmp}"
# ext4 without a journal passes over the inodes freed lately wherever it
# makes one: the ratios then move with what the machine freed there.
read -r src fstype < <(findmnt -n -o SOURCE,FSTYPE -T "${TMPDIR:-/tmp}" 2>/dev/null) || true
if [ "${fstype:-}" = ext4 ] && ! ls /proc/fs/jbd2 2>/dev/null | grep -q "^$(basename "$src")-"; then
  echo "note: ${TMPDIR:-/tmp} is on ext4 without a journal ($src): each file made there passes over the inodes freed lately, and forge makes more a job than xargs (docs/benchmarks.md); TMPDIR= plays elsewhere"
fi
for tier in ${TIERS:-default}; do
  flags=()
  [ "$tier" != default ] && flags=(--containment "$tier")
  for kind in $kinds; do
    for a in $arms xargs launch; do : > "$tmp/$a.$kind"; done
    for r in $(seq 1 "$PAIRS"); do
      run=$tier-$kind-$r
      for a in $arms; do
        (cd "$tmp/t" && measure "$tmp/$a.$kind" "$tmp/$a" run -f "$kind.yaml" --quiet "${flags[@]}" --out "$tmp/out-$a" --run-id "$run")
      done
      # Each job's stdout and stderr to files of its own, by a shell that
      # then execs the candidate.
      mkdir -p "$tmp/x/$run"
      (cd "$tmp/t" && seq 1 "$N" | measure "$tmp/xargs.$kind" xargs -P "$C" -I{} \
        sh -c 'exec "$0" "$1" bench "$2/{}.md" >"$2/{}.out" 2>"$2/{}.err"' "$(interp "$kind")" "c/trivial.$kind" "$tmp/x/$run")
      if [ "$kind" = sh ]; then
        mkdir -p "$tmp/g/$run"
        (cd "$tmp/t" && measure "$tmp/launch.$kind" "$tmp/launch" "$N" "$C" c/trivial.sh "$tmp/g/$run")
      fi
    done
  done
  echo
  echo "$tier: ÷ xargs, median of $PAIRS pairs (range)"
  for a in $arms; do
    printf '  %-6s wall %s   CPU %s\n' "$a" "$(summary "$tmp/$a.py" "$tmp/xargs.py" wall)" "$(summary "$tmp/$a.py" "$tmp/xargs.py" cpu)"
  done
  for a in $arms xargs; do printf '  %-6s per job: %s\n' "$a" "$(perjob "$tmp/$a.py")"; done
  if [ "${SH:-0}" = 1 ]; then
    for a in $arms launch; do
      printf '  %-6s .sh jobs: own CPU %.2f ms/job\n' "$a" "$(awk -v n="$N" '{print 1000*$2/n}' "$tmp/$a.sh" | median)"
    done
  fi

  # The split: one more run of each forge, timed step by step.
  for a in $arms; do
    : > "$tmp/steps-$a.jsonl"
    : > "$tmp/s-$a"
    (cd "$tmp/t" && FORGE_LOCAL_STEPS="$tmp/steps-$a.jsonl" measure "$tmp/s-$a" "$tmp/$a" run -f py.yaml --quiet "${flags[@]}" --out "$tmp/out-$a" --run-id "$tier-steps")
  done
  "$PYTHON" - "$N" "$C" $(for a in $arms; do echo "$a" "$tmp/steps-$a.jsonl" "$(cut -d' ' -f1 "$tmp/s-$a")"; done) <<'PY'
import json, sys
n, c, rest = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
cols = []
for name, path, wall in zip(rest[0::3], rest[1::3], rest[2::3]):
    rows = [json.loads(l) for l in open(path)]
    if rows:
        cols.append((name, rows, 1000 * float(wall) * c / n))
if not cols:
    sys.exit(0)
mean = lambda rows, k: 1000 * sum(r.get(k, 0) for r in rows) / len(rows)
steps = [k for k in cols[0][1][0] if k not in ("job", "remove_bg")]
print("  a job's wall time by step, ms, mean of one run's jobs:")
print("    %-10s" % "" + "".join("%10s" % name for name, _, _ in cols))
for k in steps:
    print("    %-10s" % k + "".join("%10.3f" % mean(rows, k) for _, rows, _ in cols))
print("    %-10s" % "other" + "".join("%10.3f" % (mean(rows, "job") - sum(mean(rows, k) for k in steps)) for _, rows, _ in cols) + "   Run's own, between the steps")
print("    %-10s" % "= job" + "".join("%10.3f" % mean(rows, "job") for _, rows, _ in cols))
print("    %-10s" % "outside" + "".join("%10.3f" % (slot - mean(rows, "job")) for _, rows, slot in cols) + "   wall × C ÷ N less the job: forge between jobs")
print("    %-10s" % "remove_bg" + "".join("%10.3f" % mean(rows, "remove_bg") for _, rows, _ in cols) + "   after the job, beside the next")
PY
done
