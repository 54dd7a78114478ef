#!/usr/bin/env bash
# bench/suite.sh [TASKS] [C]: forge at the scale of a benchmark suite.
#
# Plays 3 candidates × TASKS tasks (default 1000) × 1 trial of a trivial
# shell task on the local backend at concurrency C (default 8), twice, and
# reports what a user of large suites feels:
#   - forge's peak RSS (target < 150 MB),
#   - how long after the last job ended results.json was written (< 1 s),
#   - forge compare of the two runs (< 1 s),
#   - the size of the HTML report (< 5 MB).
set -euo pipefail
TASKS=${1:-1000} C=${2:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/forge" "$root"
mkdir -p "$tmp/s"
for c in a b c; do
  # Reads its task's id and answers it; b gets every third task wrong.
  cat > "$tmp/s/$c.sh" <<SH
id=\$FORGE_TASK_ID
n=\${id#t}
if [ "$c" = b ] && [ \$((n % 3)) -eq 0 ]; then echo wrong > "\$2"; else echo "\$n" > "\$2"; fi
SH
done
{
  echo 'objective: "Answer with the task number"'
  echo 'tasks_file: tasks.jsonl'
  echo "defaults: {concurrency: $C}"
  echo 'candidates: [{id: a, script: a.sh}, {id: b, script: b.sh}, {id: c, script: c.sh}]'
  echo 'scoring: [{type: artifact, checks: [{equals_task: expected}]}]'
} > "$tmp/s/forge.yaml"
for i in $(seq 1 "$TASKS"); do echo "{\"id\": \"t$i\", \"expected\": \"$i\"}"; done > "$tmp/s/tasks.jsonl"

now() { date +%s.%N; }
w0=$(now)
for r in 1 2; do
  /usr/bin/time -f "%M" -o "$tmp/rss$r" "$tmp/forge" run -f "$tmp/s/forge.yaml" --quiet --out "$tmp/out" \
    --run-id "r$r" --report "$tmp/r$r.html" >/dev/null || true
done
w1=$(now)
python3 - "$tmp/out/r2/results.json" <<'PY' > "$tmp/lag"
import json, sys, os, datetime
trials = open(os.path.join(os.path.dirname(sys.argv[1]), "trials.jsonl"))
last = max(datetime.datetime.fromisoformat(json.loads(r)["finished_at"].replace("Z", "+00:00")) for r in trials)
written = datetime.datetime.fromtimestamp(os.path.getmtime(sys.argv[1]), datetime.timezone.utc)
print("%.3f" % (written - last).total_seconds())
PY
t0=$(now)
"$tmp/forge" compare --out "$tmp/out" r1 r2 >/dev/null || true
t1=$(now)

printf 'jobs:                 %d (3 candidates × %d tasks, concurrency %d)\n' $((3 * TASKS)) "$TASKS" "$C"
printf 'wall per run:         %.1f s\n' "$(awk -v a="$w0" -v b="$w1" 'BEGIN{print (b-a)/2}')"
printf 'peak RSS:             %d MB, %d MB\n' $(($(cat "$tmp/rss1") / 1024)) $(($(cat "$tmp/rss2") / 1024))
printf 'results.json after the last job: %s s\n' "$(cat "$tmp/lag")"
printf 'forge compare:        %.3f s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')"
printf 'HTML report:          %.1f MB\n' "$(awk -v n="$(stat -c %s "$tmp/r2.html")" 'BEGIN{print n/1048576}')"
