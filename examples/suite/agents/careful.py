#!/usr/bin/env python3
"""careful: solves every task kind exactly, from the task's parameters.

Run by forge as `python3 careful.py <objective> <output_path>`; the task is
the JSON object in the file named by FORGE_TASK. Writes only the answer.
"""

import json
import os
import sys

from solve import solve


def main():
    out = sys.argv[2] if len(sys.argv) > 2 else os.environ["FORGE_OUTPUT"]
    with open(os.environ["FORGE_TASK"]) as f:
        task = json.load(f)
    with open(out, "w") as f:
        f.write(solve(task) + "\n")


if __name__ == "__main__":
    main()
