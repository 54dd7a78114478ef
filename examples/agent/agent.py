#!/usr/bin/env python3
"""A small agent for forge: asks an OpenAI-compatible chat endpoint.

Run by forge as `python3 agent.py <objective> <output_path>`. It sends the
objective (and, in a suite, the task from FORGE_TASK) to
$OPENAI_BASE_URL/chat/completions with $OPENAI_API_KEY, model $MODEL and
the system prompt $STYLE, and writes the model's answer to the output path.
Standard library only. The key is read from the environment forge gives
it (forge.yaml's secrets:) and never printed.

With AGENT_TOOLS=shell it acts instead of only answering: it offers the
model one tool, `run`, a shell command run with /bin/sh -c in its working
directory (a Harbor task's /app), and loops — the model's tool calls run,
their exit status and output go back to it — until the model answers
without a tool call or $AGENT_MAX_STEPS model calls (default 20) are made.
Each command gets $AGENT_COMMAND_TIMEOUT seconds (default 60), stdin
/dev/null, and its output (stdout and stderr together) is cut to 8 KiB.
The model gets the objective alone (a Harbor task's instruction), not the
task's JSON: that stays in $FORGE_TASK, for the commands. The commands
run without the key in their environment, and it is masked (***) in what
they print.

It keeps a transcript in $FORGE_TRANSCRIPT (JSON lines, docs/protocol.md):
each message it sends, the model's reply with its usage, each tool call and
its result, and what went wrong, each with its time. forge stores it beside
the trial's logs.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from datetime import datetime, timezone

# The one tool offered with AGENT_TOOLS=shell, in OpenAI's function format.
RUN_TOOL = {
    "type": "function",
    "function": {
        "name": "run",
        "description": "run a shell command in the task's working directory; returns its exit status and output",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command, run with /bin/sh -c"}},
            "required": ["command"],
        },
    },
}
TOOLS_STYLE = (
    "You are an agent working in a Linux shell. Do the task by calling the run tool: inspect the "
    "working directory, change what the task asks, check your work. Commands get no input and "
    "time out; start long-running servers in the background. When the task is done, answer with "
    "a short summary of what you did, without calling a tool."
)
MAX_OUTPUT = 8 << 10  # bytes of a command's output the model sees


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


def first_messages(style, with_task=True):
    """The system prompt and the objective (with the task, in a suite,
    unless with_task is false)."""
    task = ""
    if with_task and os.environ.get("FORGE_TASK"):
        with open(os.environ["FORGE_TASK"]) as f:
            task = "\n\nThe task, as JSON:\n" + f.read()
    messages = [
        {"role": "system", "content": os.environ.get("STYLE", style)},
        {"role": "user", "content": sys.argv[1] + task},
    ]
    for m in messages:
        step(role=m["role"], type="message", content=m["content"])
    return messages


def call(body):
    """Sends one chat completion request and returns the decoded reply."""
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    req = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
    )
    try:
        with urllib.request.urlopen(req, timeout=float(os.environ.get("AGENT_TIMEOUT", "60"))) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        fail("the model endpoint answered %d: %s" % (e.code, e.read()[:300].decode(errors="replace")))
    except urllib.error.URLError as e:
        fail("cannot reach the model endpoint %s: %s" % (base, e.reason))


def ask():
    """One question, one answer: the agent without tools."""
    body = {"model": os.environ.get("MODEL", "gpt-4o-mini"), "messages": first_messages("You are a helpful assistant.")}
    reply = call(body)
    answer, usage = reply["choices"][0]["message"]["content"], reply.get("usage") or {}
    model = reply.get("model") or body["model"]
    step(role="assistant", type="message", content=answer, usage=usage, model=model)
    return answer, usage, model


def mask(text):
    """text without the key, should a command have found it."""
    key = os.environ.get("OPENAI_API_KEY", "")
    return text.replace(key, "***") if len(key) >= 6 else text


def run(command):
    """Runs command with /bin/sh -c in the working directory: "exit N\\n<output>".

    The output goes to a temporary file, not a pipe, so that a server the
    command leaves running in the background does not hold the agent up.
    """
    timeout = float(os.environ.get("AGENT_COMMAND_TIMEOUT", "60"))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    note = ""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            code, note = 124, "[timed out after %g s: killed]\n" % timeout
        if code < 0:  # killed by a signal, as a shell reports it
            code = 128 - code
        size = out.seek(0, os.SEEK_END)
        out.seek(0)
        if size <= MAX_OUTPUT:
            output = out.read(size)
        else:
            half = MAX_OUTPUT // 2
            head = out.read(half)
            out.seek(size - half)
            output = head + b"\n[... output cut: %d of %d bytes left out ...]\n" % (size - MAX_OUTPUT, size) + out.read(half)
    return mask("exit %d\n%s%s" % (code, note, output.decode(errors="replace")))


def use_tool(tc):
    """Runs the tool call tc (a `run` call, or an error for the model) and
    returns what goes back to the model; both are in the transcript."""
    fn = tc.get("function") or {}
    name, raw = fn.get("name"), fn.get("arguments") or "{}"
    try:
        args = json.loads(raw)
    except ValueError as e:
        args, result = raw, "error: the arguments are not JSON (%s)" % e
    else:
        if name != "run":
            result = "error: no tool %r; the only tool is run" % name
        elif not isinstance(args, dict) or not isinstance(args.get("command"), str):
            result = 'error: run takes {"command": "<shell command>"}'
        else:
            result = None
    step(role="assistant", type="tool_call", tool={"name": name, "arguments": args}, tool_call_id=tc.get("id"))
    if result is None:
        result = run(args["command"])
        print("run: %s: %s" % (result.split("\n", 1)[0], mask(args["command"]).split("\n", 1)[0][:120]), flush=True)
    step(role="tool", type="tool_result", tool_call_id=tc.get("id"), content=result)
    return result


def act(usages):
    """The agent with the `run` tool: calls the model until it answers
    without a tool call, or AGENT_MAX_STEPS calls. Appends each call's
    usage to usages; returns the answer, the model and how many calls."""
    body = {
        "model": os.environ.get("MODEL", "gpt-4o-mini"),
        # The objective alone: a Harbor task's instruction, all Harbor's
        # agents get. The task's other fields are in $FORGE_TASK, which
        # the commands can read.
        "messages": first_messages(TOOLS_STYLE, with_task=False),
        "tools": [RUN_TOOL],
    }
    model, answer = body["model"], ""
    max_steps = int(os.environ.get("AGENT_MAX_STEPS", "20"))
    for n in range(1, max_steps + 1):
        reply = call(body)
        msg, usage = reply["choices"][0]["message"], reply.get("usage") or {}
        model = reply.get("model") or model
        if usage:
            usages.append(usage)
        calls = msg.get("tool_calls") or []
        answer = msg.get("content") or ""
        step(role="assistant", type="message", content=msg.get("content"), usage=usage, model=model)
        if not calls:
            return answer, model, n
        body["messages"].append({"role": "assistant", "content": msg.get("content"), "tool_calls": calls})
        for tc in calls:
            body["messages"].append({"role": "tool", "tool_call_id": tc.get("id"), "content": use_tool(tc)})
    note = "stopped without a final answer: AGENT_MAX_STEPS=%d model calls made" % max_steps
    step(role="system", type="event", content=note)
    return (answer + "\n\n" if answer else "") + "(" + note + ")", model, max_steps


def write_result(usage, total, model):
    """The agent's own metric (total_tokens, for forge's submitted scorer)
    and its model usage as the API reported it, for tokens and cost."""
    if os.environ.get("FORGE_RESULT") and usage:
        with open(os.environ["FORGE_RESULT"], "w") as f:
            json.dump({"total_tokens": total, "usage": usage, "model": model}, f)


def main():
    out = sys.argv[2]
    if os.environ.get("AGENT_TOOLS") == "shell":
        usages, model = [], os.environ.get("MODEL", "gpt-4o-mini")
        try:
            answer, model, calls = act(usages)
        finally:  # the calls made count, even when a later one failed
            write_result(usages, sum(u.get("total_tokens", 0) for u in usages), model)
        with open(out, "w") as f:
            f.write(answer.strip() + "\n")
        print("answered in %d words after %d model call%s" % (len(answer.split()), calls, "s"[:calls != 1]))
        return
    answer, usage, model = ask()
    with open(out, "w") as f:
        f.write(answer.strip() + "\n")
    write_result(usage, usage.get("total_tokens", 0), model)
    print("answered in %d words" % len(answer.split()))


if __name__ == "__main__":
    main()
