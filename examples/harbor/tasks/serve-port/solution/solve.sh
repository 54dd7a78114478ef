#!/bin/bash
set -e
printf 'ok\n' > site/health
nohup python3 -m http.server 8765 --bind 127.0.0.1 --directory /app/site >/tmp/server.log 2>&1 &
# Wait until it answers, so the verifier never races its start.
for i in $(seq 50); do
  python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:8765/health', timeout=1)" 2>/dev/null && exit 0
  sleep 0.1
done
echo "the server did not start" >&2
exit 1
