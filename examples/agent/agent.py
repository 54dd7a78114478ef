#!/usr/bin/env python3
"""A small agent for forge: asks an OpenAI-compatible chat endpoint.

Run by forge as `python3 agent.py <objective> <output_path>`. It sends the
objective (and, in a suite, the task from FORGE_TASK) to
$OPENAI_BASE_URL/chat/completions with $OPENAI_API_KEY, model $MODEL and
the system prompt $STYLE, and writes the model's answer to the output path.
Standard library only. The key is read from the environment forge gives
it (forge.yaml's secrets:) and never printed.

It keeps a transcript in $FORGE_TRANSCRIPT (JSON lines, docs/protocol.md):
each message it sends, the model's reply with its usage, and what went
wrong, each with its time. forge stores it beside the trial's logs.
"""

import json
import os
import sys
import urllib.error
import urllib.request
from datetime import datetime, timezone


def step(**fields):
    """Appends one step to the transcript, when forge asks for one."""
    path = os.environ.get("FORGE_TRANSCRIPT")
    if not path:
        return
    fields["time"] = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    with open(path, "a") as f:
        f.write(json.dumps(fields) + "\n")


def fail(message):
    step(role="system", type="event", content=message)
    sys.exit(message)


def ask(objective):
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    task = ""
    if os.environ.get("FORGE_TASK"):
        with open(os.environ["FORGE_TASK"]) as f:
            task = "\n\nThe task, as JSON:\n" + f.read()
    body = {
        "model": os.environ.get("MODEL", "gpt-4o-mini"),
        "messages": [
            {"role": "system", "content": os.environ.get("STYLE", "You are a helpful assistant.")},
            {"role": "user", "content": objective + task},
        ],
    }
    for m in body["messages"]:
        step(role=m["role"], type="message", content=m["content"])
    req = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
    )
    try:
        with urllib.request.urlopen(req, timeout=float(os.environ.get("AGENT_TIMEOUT", "60"))) as resp:
            reply = json.load(resp)
    except urllib.error.HTTPError as e:
        fail("the model endpoint answered %d: %s" % (e.code, e.read()[:300].decode(errors="replace")))
    except urllib.error.URLError as e:
        fail("cannot reach the model endpoint %s: %s" % (base, e.reason))
    answer, usage = reply["choices"][0]["message"]["content"], reply.get("usage") or {}
    model = reply.get("model") or body["model"]
    step(role="assistant", type="message", content=answer, usage=usage, model=model)
    return answer, usage, model


def main():
    objective, out = sys.argv[1], sys.argv[2]
    answer, usage, model = ask(objective)
    with open(out, "w") as f:
        f.write(answer.strip() + "\n")
    # The agent's own metric (total_tokens, for forge's submitted scorer)
    # and its model usage as the API reported it, for tokens and cost.
    if os.environ.get("FORGE_RESULT") and usage:
        with open(os.environ["FORGE_RESULT"], "w") as f:
            json.dump({"total_tokens": usage.get("total_tokens", 0), "usage": usage, "model": model}, f)
    print("answered in %d words" % len(answer.split()))


if __name__ == "__main__":
    main()
