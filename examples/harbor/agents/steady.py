#!/usr/bin/env python3
"""steady: a scripted agent that solves all six example Harbor tasks.

Started as `python3 steady.py "<instruction>" "<output_path>"` with its working
directory the task image's WORKDIR (/app). It tells the task from words in the
instruction, does the work under /app, and writes a short note of what it did
to the output path. Standard library only, deterministic.
"""

import csv
import os
import subprocess
import sys
import time
import urllib.request
from decimal import Decimal

APP = "/app"


def create_file():
    with open(os.path.join(APP, "hello.txt"), "w") as f:
        f.write("Hello from forge, 6 tasks to go!\n")
    return "wrote /app/hello.txt"


def fix_bug():
    path = os.path.join(APP, "sliding.py")
    with open(path) as f:
        src = f.read()
    # The last window starts at len(values) - size: the range must include it.
    bad = "range(len(values) - size)"
    if bad not in src:
        return "sliding.py: the buggy range is not there, left it alone"
    with open(path, "w") as f:
        f.write(src.replace(bad, "range(len(values) - size + 1)"))
    return "sliding.py: the window range now includes the last window"


def csv_transform():
    total, count = {}, {}
    with open(os.path.join(APP, "orders.csv"), newline="") as f:
        for row in csv.DictReader(f):
            region = row["region"].strip()
            total[region] = total.get(region, Decimal("0")) + Decimal(row["amount"])
            count[region] = count.get(region, 0) + 1
    with open(os.path.join(APP, "totals.csv"), "w") as f:
        f.write("region,orders,total\n")
        for region in sorted(total, key=lambda r: (-total[r], r)):
            f.write("%s,%d,%s\n" % (region, count[region], total[region].quantize(Decimal("0.01"))))
    return "wrote /app/totals.csv (%d regions)" % len(total)


def git(*args):
    subprocess.run(["git", "-C", os.path.join(APP, "repo"), *args], check=True,
                   stdout=subprocess.DEVNULL)


def git_state():
    git("checkout", "-q", "-b", "feature/greeting", "main")
    with open(os.path.join(APP, "repo", "greeting.txt"), "w") as f:
        f.write("Hello, Harbor!\n")
    git("add", "greeting.txt")
    git("-c", "user.name=steady", "-c", "user.email=steady@example.com",
        "commit", "-q", "-m", "Greet Harbor")
    return "committed greeting.txt on the new branch feature/greeting"


def serve_port():
    site = os.path.join(APP, "site")
    with open(os.path.join(site, "health"), "w") as f:
        f.write("ok\n")
    # Detached: its own session, no inherited pipes, so it outlives this agent.
    log = open("/tmp/steady-server.log", "ab")
    subprocess.Popen([sys.executable, "-m", "http.server", "8765", "--bind", "127.0.0.1",
                      "--directory", site], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                     start_new_session=True)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for _ in range(50):
        try:
            opener.open("http://127.0.0.1:8765/health", timeout=1).read()
            return "serving /app/site on 127.0.0.1:8765 in the background"
        except OSError:
            time.sleep(0.1)
    return "started a server on 127.0.0.1:8765, but it did not answer yet"


LIB = '''"""Four small helpers."""


def slugify(title):
    out, dash = [], False
    for c in title.lower():
        if "a" <= c <= "z" or "0" <= c <= "9":
            if dash and out:
                out.append("-")
            out.append(c)
            dash = False
        else:
            dash = True
    return "".join(out)


def is_palindrome(text):
    kept = [c.lower() for c in text if c.isalnum()]
    return kept == kept[::-1]


def chunk(items, size):
    if size < 1:
        raise ValueError("size must be at least 1")
    items = list(items)
    return [items[i:i + size] for i in range(0, len(items), size)]


def to_roman(n):
    if not 1 <= n <= 3999:
        raise ValueError("out of range: %r" % (n,))
    pairs = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = ""
    for value, letters in pairs:
        while n >= value:
            out += letters
            n -= value
    return out
'''


def partial_credit():
    with open(os.path.join(APP, "lib.py"), "w") as f:
        f.write(LIB)
    return "implemented all four functions in /app/lib.py"


# Which task, by words only its instruction has; the first match wins.
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
        f.write("steady: " + note + "\n")


if __name__ == "__main__":
    main()
