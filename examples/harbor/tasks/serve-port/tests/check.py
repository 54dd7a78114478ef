"""Asks the agent's server for / and /health, retrying for a few seconds.

Writes reward 1 to /logs/verifier/reward.txt when both answer right within
SERVICE_WAIT_SEC seconds (default 5), else 0.
"""

import os
import time
import urllib.request

PORT = int(os.environ.get("SERVICE_PORT", "8765"))
WAIT = float(os.environ.get("SERVICE_WAIT_SEC", "5"))
BASE = "http://127.0.0.1:%d" % PORT

with open("/tests/index.html", "rb") as f:
    INDEX = f.read()

# No proxy: a proxy from the environment must not answer for the agent.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(path):
    with opener.open(BASE + path, timeout=2) as resp:
        return resp.status, resp.read(1 << 20)


def attempt():
    """None if both answers are right, else what was wrong."""
    try:
        status, body = get("/")
        if status != 200 or body != INDEX:
            return "GET / answered %d with %r" % (status, body[:80])
        status, body = get("/health")
        if status != 200 or body not in (b"ok", b"ok\n"):
            return "GET /health answered %d with %r" % (status, body[:80])
    except Exception as e:
        return "%s: %r" % (BASE, e)
    return None


deadline = time.monotonic() + WAIT
while True:
    problem = attempt()
    if problem is None or time.monotonic() >= deadline:
        break
    time.sleep(0.5)
print(problem or "both answers right")
with open("/logs/verifier/reward.txt", "w") as f:
    f.write("0\n" if problem else "1\n")
