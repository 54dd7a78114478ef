#!/usr/bin/env python3
"""flaky: solves like careful, but crashes on about a quarter of the tasks.

Which tasks is deterministic: those where SHA-256 of "flaky-" + the task id,
as a number, is a multiple of 4 (6 of the 30 example tasks). On those it
raises before writing anything (exit 1).
"""

import hashlib
import json
import os
import sys

from solve import solve


def main():
    out = sys.argv[2] if len(sys.argv) > 2 else os.environ["FORGE_OUTPUT"]
    with open(os.environ["FORGE_TASK"]) as f:
        task = json.load(f)
    task_id = os.environ.get("FORGE_TASK_ID", task["id"])
    if int(hashlib.sha256(("flaky-" + task_id).encode()).hexdigest(), 16) % 4 == 0:
        raise RuntimeError("flaky: lost my train of thought on task " + task_id)
    with open(out, "w") as f:
        f.write(solve(task) + "\n")


if __name__ == "__main__":
    main()
