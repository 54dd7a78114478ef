#!/bin/bash
# Partial credit: check.py writes reward.json with the fraction of functions that pass.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.txt
zero='{"reward": 0, "passed": 0, "total": 4, "cases_passed": 0, "cases_total": 27}'
echo "$zero" > /logs/verifier/reward.json   # stays if the check crashes or hangs

cd /tmp && timeout 60 python3 -I /tests/check.py

# Whatever happened, leave a JSON object with a numeric reward in 0..1.
python3 -I -c '
import json, sys
r = json.load(open("/logs/verifier/reward.json"))
assert isinstance(r, dict) and type(r["reward"]) in (int, float) and 0 <= r["reward"] <= 1
' 2>/dev/null || echo "$zero" > /logs/verifier/reward.json
exit 0
