#!/usr/bin/env bash
# bench/scale.sh [chatty|trivial|run|all]: forge at the size of a real
# agent benchmark, beside `xargs -P` running the same processes.
#
# chatty:  2 shell candidates × 2,000 tasks (4,000 jobs, concurrency 4),
#          each printing 20 KB to stdout. Targets: peak RSS <= 100 MB,
#          results.json < 10 MB, every log on disk.
# trivial: 4 shell candidates × TASKS tasks (default 25,000: 100,000 jobs,
#          concurrency 4) that write a one-line artifact, and the same at
#          500 jobs. Targets: peak RSS <= 250 MB, results.json written
#          within 2 s of the last job, forge's own CPU per job no higher
#          than at 500 jobs; then the table, Markdown, HTML, JUnit and CSV
#          reports of the 100,000 trials and `forge compare` of two such
#          runs, each timed.
# run:     4 shell candidates × TASKS tasks (default 25,000: 100,000 jobs,
#          concurrency C, default 8) that write a one-line artifact, as
#          `forge run --quiet`: peak RSS and wall, then the viewer's first
#          open of the run's page (`forge view`, the page fetched once) and
#          the viewer's peak RSS then.
#          BEFORE= another forge binary (a release, or one built from a
#          commit) played alternately with this tree's, PAIRS times
#          (default 1): a change's before and after under the same load.
#          Target: peak RSS <= 250 MB, wall no longer than before.
#
# Peak RSS is /usr/bin/time's maximum resident set size of forge's process
# alone (the candidates are its children, not counted). forge's own CPU
# comes from bench/cputime.py (its process alone, without the candidates).
# XARGS=0 leaves out the trivial suite's xargs run (it takes as long as
# forge's). xargs runs each job as `bash CANDIDATE OBJECTIVE OUTPUT > LOG 2> ERR`, the
# floor of any launcher that keeps the logs.
set -euo pipefail
what=${1:-all}
TASKS=${TASKS:-25000} C=${C:-}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/forge-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/forge" "$root"
export PATH="$tmp:$PATH"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
mb() { awk -v n="$1" 'BEGIN{printf "%.1f", n/1048576}'; }

# suite DIR CANDIDATES TASKS SCRIPT: a manifest of CANDIDATES copies of
# SCRIPT (a.sh, b.sh, ...) over TASKS tasks.
suite() {
  local dir=$1 n=$2 tasks=$3 script=$4
  mkdir -p "$dir"
  local ids=()
  for i in $(seq 1 "$n"); do
    local c; c=$(printf "\\x$(printf %x $((96 + i)))")
    printf '%s\n' "$script" > "$dir/$c.sh"
    ids+=("{id: $c, script: $c.sh}")
  done
  {
    echo 'objective: "Answer with the task number"'
    echo 'tasks_file: tasks.jsonl'
    echo "defaults: {concurrency: $C}"
    echo "candidates: [$(IFS=,; echo "${ids[*]}")]"
    echo 'scoring: [{type: artifact, checks: [{equals_task: expected}]}]'
  } > "$dir/forge.yaml"
  seq 1 "$tasks" | awk '{printf "{\"id\": \"t%d\", \"expected\": \"%d\"}\n", $1, $1}' > "$dir/tasks.jsonl"
}

# xargs_run DIR CANDIDATES TASKS: the same processes under xargs -P C,
# each job's stdout and stderr to files; prints the wall time.
xargs_run() {
  local dir=$1 n=$2 tasks=$3
  mkdir -p "$dir/out"
  for i in $(seq 1 "$n"); do
    local c; c=$(printf "\\x$(printf %x $((96 + i)))")
    seq 1 "$tasks" | sed "s|^|$c |"
  done > "$tmp/jobs"
  local t0; t0=$(now)
  xargs -P "$C" -L 1 sh -c 'FORGE_TASK_ID=t$2 exec bash "$0/$1.sh" obj "$0/out/$1-$2" > "$0/out/$1-$2.log" 2> "$0/out/$1-$2.err"' "$dir" < "$tmp/jobs"
  secs "$t0" "$(now)"
}

# forge_run DIR RUN [ARGS...]: plays DIR's manifest as run RUN (with the
# binary $bin, default this tree's) under /usr/bin/time and cputime.py; sets rss (MB), wall, self (forge's own CPU
# seconds), lag (seconds from the last job's end to results.json) and tail
# (from the last job's end to forge's exit: results.json, the table and
# every --report written).
forge_run() {
  local dir=$1 run=$2; shift 2
  local t0; t0=$(now)
  /usr/bin/time -f %M -o "$tmp/rss" python3 "$root/bench/cputime.py" \
    "${bin:-$tmp/forge}" run -f "$dir/forge.yaml" --quiet --out "$tmp/out" --run-id "$run" "$@" > "$tmp/$run.table" 2> "$tmp/cpu" || true
  local t1; t1=$(now)
  wall=$(secs "$t0" "$t1")
  rss=$(( $(tail -1 "$tmp/rss") / 1024 ))
  self=$(tail -1 "$tmp/cpu" | sed 's/.*self=\([0-9.]*\).*/\1/')
  read -r lag tail < <(python3 - "$tmp/out/$run/results.json" "$t1" <<'PY'
import json, sys, os, datetime
last = None
with open(os.path.join(os.path.dirname(sys.argv[1]), "trials.jsonl")) as f:
    for line in f:
        r = json.loads(line)
        t = datetime.datetime.fromisoformat(r["finished_at"].replace("Z", "+00:00"))
        last = t if last is None or t > last else last
written = datetime.datetime.fromtimestamp(os.path.getmtime(sys.argv[1]), datetime.timezone.utc)
ended = datetime.datetime.fromtimestamp(float(sys.argv[2]), datetime.timezone.utc)
print("%.2f %.2f" % ((written - last).total_seconds(), (ended - last).total_seconds()))
PY
)
}

chatty() {
  local script='head -c 20480 /dev/zero | tr "\0" "x"; echo "${FORGE_TASK_ID#t}" > "$2"'
  suite "$tmp/chatty" 2 2000 "$script"
  forge_run "$tmp/chatty" chatty
  local size; size=$(cat "$tmp/out/chatty/results.json" "$tmp/out/chatty/trials.jsonl" | wc -c)
  local logs; logs=$(find "$tmp/out/chatty" -name stdout.log -size 20k | wc -l)
  local xw; xw=$(xargs_run "$tmp/chatty" 2 2000)
  echo "chatty: 2 candidates × 2,000 tasks, 20 KB of stdout each, concurrency $C"
  printf '  forge: peak RSS %d MB, wall %s s, record (results.json + trials.jsonl) %s MB, %d of 4000 stdout logs of 20 KB on disk\n' \
    "$rss" "$wall" "$(mb "$size")" "$logs"
  printf '  xargs -P %d: wall %s s\n' "$C" "$xw"
}

trivial() {
  local script='echo "${FORGE_TASK_ID#t}" > "$2"'
  # forge's own CPU at 500 jobs varies by a third from one run to the
  # next on a shared machine: the median of five.
  suite "$tmp/small" 4 125 "$script"
  local smalls=()
  for i in 1 2 3 4 5; do
    forge_run "$tmp/small" "small$i"
    smalls+=("$self")
  done
  local small_wall=$wall small_self small_range
  small_self=$(printf '%s\n' "${smalls[@]}" | sort -g | sed -n 3p)
  small_range=$(printf '%s\n' "${smalls[@]}" | sort -g | awk 'NR==1{lo=$1} {hi=$1} END{printf "%.2f-%.2f", 1000*lo/500, 1000*hi/500}')
  suite "$tmp/big" 4 "$TASKS" "$script"
  local jobs=$((4 * TASKS))
  forge_run "$tmp/big" big --report "$tmp/big.html" --report "$tmp/big.md" --report "$tmp/big.xml" --report "$tmp/big.csv"
  local big_rss=$rss big_wall=$wall big_self=$self big_lag=$lag big_tail=$tail
  local xw=skipped
  [ "${XARGS:-1}" = 0 ] || xw=$(xargs_run "$tmp/big" 4 "$TASKS")
  echo "trivial: 4 candidates × $TASKS tasks ($jobs jobs), concurrency $C"
  printf '  forge: peak RSS %d MB, wall %s s, results.json %s MB + trials.jsonl %s MB, results.json written %s s after the last job\n' \
    "$big_rss" "$big_wall" "$(mb "$(stat -c %s "$tmp/out/big/results.json")")" "$(mb "$(stat -c %s "$tmp/out/big/trials.jsonl")")" "$big_lag"
  printf '  table and 4 reports (HTML, Markdown, JUnit, CSV) written: exit %s s after the last job\n' "$big_tail"
  printf '  forge own CPU per job: %.2f ms at %d jobs, %.2f ms at 500 jobs (median of 5: %s; wall %s s)\n' \
    "$(awk -v s="$big_self" -v n="$jobs" 'BEGIN{print 1000*s/n}')" "$jobs" \
    "$(awk -v s="$small_self" 'BEGIN{print 1000*s/500}')" "$small_range" "$small_wall"
  printf '  xargs -P %d: wall %s s\n' "$C" "$xw"
  printf '  reports: HTML %s MB, Markdown %s MB, JUnit %s MB, CSV %s MB\n' \
    "$(mb "$(stat -c %s "$tmp/big.html")")" "$(mb "$(stat -c %s "$tmp/big.md")")" \
    "$(mb "$(stat -c %s "$tmp/big.xml")")" "$(mb "$(stat -c %s "$tmp/big.csv")")"
  mkdir -p "$tmp/out/big2"
  cp "$tmp/out/big/results.json" "$tmp/out/big/trials.jsonl" "$tmp/out/big2/"
  local t0; t0=$(now)
  "$tmp/forge" compare --out "$tmp/out" big big2 > /dev/null || true
  printf '  forge compare of two %d-trial runs: %s s\n' "$jobs" "$(secs "$t0" "$(now)")"
  t0=$(now)
  "$tmp/forge" history --out "$tmp/out" > /dev/null || true
  printf '  forge history over them: %s s\n' "$(secs "$t0" "$(now)")"
}

# first_open BIN RUN: seconds from `forge view`'s start to the run page of
# RUN served (the run's trials.index read, or made on that first request),
# and the viewer's peak RSS then (VmHWM).
first_open() {
  local bin=$1 run=$2 port=$((20000 + RANDOM % 20000))
  local t0; t0=$(now)
  "$bin" view --no-open --no-token --addr "127.0.0.1:$port" --out "$tmp/out" > "$tmp/view.log" 2>&1 &
  local pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/run/$run"; do
    kill -0 "$pid" 2> /dev/null || { echo failed; return; }
    sleep 0.05
  done
  printf '%s s, its peak RSS %d MB' "$(secs "$t0" "$(now)")" \
    "$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$pid/status")"
  kill "$pid"
  wait "$pid" 2> /dev/null || true
}

run() {
  C=${C:-8}
  local script='echo "${FORGE_TASK_ID#t}" > "$2"'
  suite "$tmp/run" 4 "$TASKS" "$script"
  local arms=forge
  if [ -n "${BEFORE:-}" ]; then
    cp "$BEFORE" "$tmp/before"
    arms="forge before"
  fi
  echo "run: 4 candidates × $TASKS tasks ($((4 * TASKS)) jobs), concurrency $C, forge run --quiet"
  for p in $(seq 1 "${PAIRS:-1}"); do
    for arm in $arms; do
      bin=$tmp/$arm forge_run "$tmp/run" "$arm$p"
      printf '  %-6s peak RSS %d MB, wall %s s, forge own CPU %s s; viewer first open %s\n' \
        "$arm" "$rss" "$wall" "$self" "$(first_open "$tmp/$arm" "$arm$p")"
      rm -rf "${tmp:?}/out/$arm$p"
    done
  done
}

case $what in
chatty) C=${C:-4}; chatty ;;
trivial) C=${C:-4}; trivial ;;
run) run ;;
all) C=${C:-4}; chatty; trivial ;;
*) echo "usage: bench/scale.sh [chatty|trivial|run|all]" >&2; exit 2 ;;
esac
