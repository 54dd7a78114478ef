#!/usr/bin/env python3
"""hasty: a scripted agent that rushes, with mixed results on the six tasks.

Started like steady.py, in /app. Right on create-file and csv-transform; fixes
fix-bug only for the example in the instruction (size 2); gets two of the four
partial-credit functions right; edits the git repository without committing or
branching; writes the health file but never starts the server.
"""

import csv
import os
import sys

APP = "/app"


def create_file():
    with open(os.path.join(APP, "hello.txt"), "w") as f:
        f.write("Hello from forge, 6 tasks to go!\n")
    return "wrote /app/hello.txt"


def fix_bug():
    path = os.path.join(APP, "sliding.py")
    with open(path) as f:
        src = f.read()
    # Makes the example pass ([1, 2, 3, 4], 2): right for size 2 only.
    with open(path, "w") as f:
        f.write(src.replace("range(len(values) - size)", "range(len(values) - 1)"))
    return "sliding.py: patched the range"


def csv_transform():
    cents, count = {}, {}
    with open(os.path.join(APP, "orders.csv"), newline="") as f:
        for row in csv.DictReader(f):
            whole, _, frac = row["amount"].partition(".")
            r = row["region"]
            cents[r] = cents.get(r, 0) + int(whole) * 100 + int((frac + "00")[:2])
            count[r] = count.get(r, 0) + 1
    rows = sorted(cents.items(), key=lambda kv: (-kv[1], kv[0]))
    with open(os.path.join(APP, "totals.csv"), "w") as f:
        f.write("region,orders,total\n")
        for r, c in rows:
            f.write("%s,%d,%d.%02d\n" % (r, count[r], c // 100, c % 100))
    return "wrote /app/totals.csv"


def git_state():
    # Edits the file where it stands, on main, and stops there.
    with open(os.path.join(APP, "repo", "greeting.txt"), "w") as f:
        f.write("Hello, Harbor!\n")
    return "changed greeting.txt"


def serve_port():
    with open(os.path.join(APP, "site", "health"), "w") as f:
        f.write("ok\n")
    return "wrote /app/site/health (run python3 -m http.server 8765 to serve it)"


LIB = '''"""Four small helpers, quickly."""


def slugify(title):
    return title.strip().lower().replace(" ", "-")


def is_palindrome(text):
    kept = "".join(c.lower() for c in text if c.isalnum())
    return kept == kept[::-1]


def chunk(items, size):
    if size < 1:
        raise ValueError("size must be at least 1")
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def to_roman(n):
    if not 1 <= n <= 3999:
        raise ValueError(n)
    out = ""
    for value, letter in [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]:
        out += letter * (n // value)
        n %= value
    return out
'''


def partial_credit():
    with open(os.path.join(APP, "lib.py"), "w") as f:
        f.write(LIB)
    return "wrote /app/lib.py"


TASKS = [
    ("hello.txt", create_file),
    ("sliding.py", fix_bug),
    ("orders.csv", csv_transform),
    ("feature/greeting", git_state),
    ("8765", serve_port),
    ("lib.py", partial_credit),
]


def main():
    instruction, out = sys.argv[1], sys.argv[2]
    for word, act in TASKS:
        if word in instruction:
            note = act()
            break
    else:
        note = "did not recognise the task"
    print(note)
    with open(out, "w") as f:
        f.write("hasty: " + note + "\n")


if __name__ == "__main__":
    main()
