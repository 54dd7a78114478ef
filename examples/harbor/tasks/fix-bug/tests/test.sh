#!/bin/bash
# Runs the hidden cases of check.py against /app/sliding.py; reward 1 if all pass.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
echo 0 > /logs/verifier/reward.txt   # stays 0 if the check crashes or hangs

cd /tmp && timeout 60 python3 -I /tests/check.py
exit 0
