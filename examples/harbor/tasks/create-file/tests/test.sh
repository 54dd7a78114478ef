#!/bin/bash
# Reward 1 when /app/hello.txt holds exactly the expected line, else 0.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.txt /logs/verifier/reward.json

reward=0
if [ -f /app/hello.txt ] && printf 'Hello from forge, 6 tasks to go!\n' | cmp -s - /app/hello.txt; then
  reward=1
fi
echo "hello.txt: reward $reward"
echo "$reward" > /logs/verifier/reward.txt
exit 0
