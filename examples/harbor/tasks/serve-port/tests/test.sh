#!/bin/bash
# Queries the agent's server on 127.0.0.1:$SERVICE_PORT; reward 1 if / and /health answer right.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
echo 0 > /logs/verifier/reward.txt

cd /tmp && timeout 30 python3 -I /tests/check.py
exit 0
