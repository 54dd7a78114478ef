#!/usr/bin/env python3
"""quick: fast and sloppy.

Right on arithmetic and strings, but rounds unit conversions to 1 decimal
(wrong unless the exact answer needs no more) and aggregates only the first
3 rows of a CSV (wrong unless the file has at most 3 rows).
"""

import csv
import json
import os
import sys

FACTORS = {
    ("km", "mi"): 1 / 1.609344, ("mi", "km"): 1.609344,
    ("kg", "lb"): 1 / 0.45359237, ("lb", "kg"): 0.45359237,
    ("m", "ft"): 1 / 0.3048, ("ft", "m"): 0.3048,
}


def solve(t):
    kind = t["kind"]
    if kind == "arithmetic":
        a, b = t["a"], t["b"]
        return str({"add": a + b, "sub": a - b, "mul": a * b, "div": a // b}[t["op"]])
    if kind == "string":
        s, how = t["text"], t["transform"]
        if how == "reverse":
            return s[::-1]
        if how == "count_vowels":
            return str(sum(ch in "aeiou" for ch in s.lower()))
        words, cur = [], ""
        for ch in s:
            if ch in " -_":
                words.append(cur)
                cur = ""
            elif ch.isupper() and cur and cur[-1].islower():
                words.append(cur)
                cur = ch
            else:
                cur += ch
        words.append(cur)
        return "_".join(w.upper() for w in words if w)
    if kind == "conversion":
        v, pair = float(t["value"]), (t["from"], t["to"])
        if pair == ("C", "F"):
            r = v * 9 / 5 + 32
        elif pair == ("F", "C"):
            r = (v - 32) * 5 / 9
        else:
            r = v * FACTORS[pair]
        return "%.1f" % r  # sloppy: 1 decimal, whatever was asked
    if kind == "csv":
        with open(t["files"][0], newline="") as f:
            rows = list(csv.DictReader(f))[:3]  # sloppy: only the first 3 rows
        values = [float(r[t["column"]]) for r in rows]
        how = t["agg"]
        r = sum(values) if how == "sum" else sum(values) / len(values) if how == "mean" else \
            max(values) if how == "max" else min(values)
        return "%.*f" % (t.get("decimals", 0), r)
    raise ValueError("unknown kind " + kind)


def main():
    with open(os.environ["FORGE_TASK"]) as f:
        task = json.load(f)
    with open(sys.argv[2], "w") as f:
        f.write(solve(task) + "\n")


if __name__ == "__main__":
    main()
