#!/bin/bash
# Compares /app/totals.csv with the expected totals, cell by cell; reward 1 or 0.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
echo 0 > /logs/verifier/reward.txt

timeout 20 python3 -I - <<'PY'
import csv

def rows(path):
    # Cells stripped; a trailing newline, \r\n line ends and blank lines are forgiven.
    with open(path, newline="", encoding="utf-8") as f:
        return [[c.strip() for c in r] for r in csv.reader(f) if r]

want = rows("/tests/expected.csv")
try:
    got = rows("/app/totals.csv")
except Exception as e:  # missing, a directory, not UTF-8...
    got = "unreadable: %r" % e
ok = got == want
print("totals.csv matches" if ok else "totals.csv differs:\n  got  %r\n  want %r" % (got, want))
with open("/logs/verifier/reward.txt", "w") as f:
    f.write("1\n" if ok else "0\n")
PY
exit 0
