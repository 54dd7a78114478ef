#!/usr/bin/env python3
"""An offline, OpenAI-compatible chat endpoint for trying the sample agent.

    python3 examples/agent/fake_model.py [--port 8765] [--key KEY]

serves POST /v1/chat/completions (and GET /v1/models) on 127.0.0.1 and
answers like a model would, without a network: a short answer when the
system prompt asks for few sentences, a longer one otherwise, and a
`usage` object counted the way OpenAI counts it (prompt_tokens,
completion_tokens, total_tokens, prompt_tokens_details.cached_tokens: the
system prompt is "cached" from the second request on). Tokens are words
times 4/3, a fair approximation. With --key (or FAKE_MODEL_KEY) it refuses
any other bearer token with a 401, as the real API does.

When the request offers tools (a function named `run`, as agent.py does
with AGENT_TOOLS=shell) it acts like a tool-using model, always the same
way: until the conversation holds a tool result it calls `run` once —
with the command that solves examples/harbor's create-file task when the
user's message names hello.txt, else `ls -la` — and then answers with a
short summary of what it ran.

It prints one line, `fake model: http://127.0.0.1:PORT/v1`, once it
listens (--port 0 picks a free port), then serves until Ctrl-C. Standard
library only.
"""

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHORT = "One trial is one noisy draw from the agent; several trials per task separate skill from luck."
LONG = (
    "Each trial of a task is one draw from a noisy process: the model samples its tokens, tools time out, "
    "and the same agent can pass a task once and fail it the next time. A single trial cannot tell skill "
    "from luck, so an evaluation runs several trials per task, estimates each agent's mean and its "
    "variance, and only calls a winner when the difference is larger than the noise."
)
# examples/harbor/tasks/create-file: /app/hello.txt holds exactly this line.
HELLO = "printf 'Hello from forge, 6 tasks to go!\\n' > hello.txt"


def tokens(text):
    return max(1, round(len(text.split()) * 4 / 3))


def offers_run(body):
    """Whether the request offers a function tool named run."""
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("name") == "run" for t in tools)


def act(messages):
    """A tool-using model's reply: (message, finish_reason, what it says)."""
    results = [m for m in messages if m.get("role") == "tool"]
    if not results:
        user = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
        command = HELLO if "hello.txt" in user else "ls -la"
        arguments = json.dumps({"command": command})
        call = {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": arguments}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls", arguments
    command = "a command"
    for m in messages:
        for c in m.get("tool_calls") or []:
            try:
                command = json.loads(c["function"]["arguments"])["command"]
            except (ValueError, KeyError, TypeError):
                pass
    status = str(results[-1].get("content") or "").split("\n", 1)[0]
    answer = "I ran `%s` in the working directory (%s); that should do the task." % (command, status or "no status")
    return {"role": "assistant", "content": answer}, "stop", answer


class Handler(BaseHTTPRequestHandler):
    server_version = "fake-model/1"
    seen_systems = set()
    lock = threading.Lock()

    def log_message(self, fmt, *args):  # quiet: one line per request on stderr is noise here
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def authorised(self):
        key = self.server.key
        if key and self.headers.get("Authorization") != "Bearer " + key:
            self.reply(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
            return False
        return True

    def do_GET(self):
        if self.path.rstrip("/") != "/v1/models":
            return self.reply(404, {"error": {"message": "not found"}})
        if self.authorised():
            self.reply(200, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})

    def do_POST(self):
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self.reply(404, {"error": {"message": "not found"}})
        if not self.authorised():
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(min(length, 1 << 20)))
            messages = body["messages"]
            model = str(body.get("model") or "gpt-4o-mini")
        except (ValueError, KeyError, TypeError):
            return self.reply(400, {"error": {"message": "want a JSON body with model and messages"}})
        system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
        if offers_run(body):
            message, finish, said = act(messages)
        else:
            answer = SHORT if "three sentences" in system or "short" in system.lower() else LONG
            message, finish, said = {"role": "assistant", "content": answer}, "stop", answer
        prompt = sum(tokens(str(m.get("content") or "")) for m in messages)
        with self.lock:
            cached = tokens(system) if system in self.seen_systems else 0
            self.seen_systems.add(system)
        completion = tokens(said)
        self.reply(200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": min(cached, prompt)},
            },
        })


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free one)")
    ap.add_argument("--key", default=os.environ.get("FAKE_MODEL_KEY", ""), help="the only bearer token accepted (default: any)")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.key = args.key
    print("fake model: http://127.0.0.1:%d/v1" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
