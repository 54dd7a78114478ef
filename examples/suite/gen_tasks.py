#!/usr/bin/env python3
"""Generate the example suite: tasks.jsonl and data/sales-*.csv beside this file.

Deterministic (fixed seed, stdlib only, no network): running it again rewrites
the same bytes. 30 tasks: 8 arithmetic word problems, 8 unit conversions,
8 string transformations and 6 CSV aggregations. Every task carries its
expected answer as a canonical string (integers without decimals, other
numbers with exactly 2 decimals) and the parameters a solver needs.

    python3 examples/suite/gen_tasks.py
"""

import json
import os
import random
import re
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal

SEED = 20240611
HERE = os.path.dirname(os.path.abspath(__file__))

TWO = Decimal("0.01")
ONE = Decimal("0.1")


def dec2(x):
    return x.quantize(TWO, rounding=ROUND_HALF_UP)


def near_half(x, places):
    """True when x is close to a rounding boundary at `places` decimals, where
    a float-based solver might round the other way."""
    scaled = x * (Decimal(10) ** places)
    frac = scaled - scaled.to_integral_value(rounding=ROUND_FLOOR)
    return abs(frac - Decimal("0.5")) < Decimal("0.000001")


# ---------------------------------------------------------------- arithmetic

ARITH = {
    "mul": "A crate holds {a} rows of {b} bottles. How many bottles are in the crate?",
    "add": "A library has {a} books and receives a delivery of {b} more. How many books does it have now?",
    "sub": "A tank holds {a} litres of water and {b} litres are drained. How many litres remain?",
    "div": "{a} apples are shared equally among {b} baskets. How many apples go in each basket?",
}


def arithmetic(rng, n, op):
    if op == "mul":
        a, b = rng.randint(11, 49), rng.randint(11, 49)
        ans = a * b
    elif op == "add":
        a, b = rng.randint(100, 999), rng.randint(100, 999)
        ans = a + b
    elif op == "sub":
        a = rng.randint(500, 2000)
        b = rng.randint(50, a - 1)
        ans = a - b
    else:  # div: exact
        b = rng.randint(3, 19)
        ans = rng.randint(7, 60)
        a = b * ans
    return {
        "id": "arithmetic-%d" % n,
        "objective": ARITH[op].format(a=a, b=b),
        "expected": str(ans),
        "kind": "arithmetic",
        "a": a,
        "b": b,
        "op": op,
    }


# ---------------------------------------------------------------- conversion

UNITS = {"km": "kilometres", "mi": "miles", "kg": "kilograms", "lb": "pounds",
         "m": "metres", "ft": "feet", "C": "degrees Celsius", "F": "degrees Fahrenheit"}

MILE = Decimal("1.609344")   # km per mile (exact)
POUND = Decimal("0.45359237")  # kg per pound (exact)
FOOT = Decimal("0.3048")     # m per foot (exact)


def convert(value, frm, to):
    """The exact converted value as a Decimal (solvers use the same factors)."""
    v = Decimal(str(value))
    if (frm, to) == ("km", "mi"):
        return v / MILE
    if (frm, to) == ("mi", "km"):
        return v * MILE
    if (frm, to) == ("kg", "lb"):
        return v / POUND
    if (frm, to) == ("lb", "kg"):
        return v * POUND
    if (frm, to) == ("m", "ft"):
        return v / FOOT
    if (frm, to) == ("ft", "m"):
        return v * FOOT
    if (frm, to) == ("C", "F"):
        return v * 9 / 5 + 32
    if (frm, to) == ("F", "C"):
        return (v - 32) * 5 / 9
    raise ValueError((frm, to))


def conversion(rng, n, frm, to):
    while True:
        if (frm, to) == ("C", "F"):
            # A whole number of degrees Celsius: the answer has at most one
            # significant decimal, so even a 1-decimal solver gets it right.
            value = rng.randint(-10, 40)
        else:
            value = rng.randint(20, 2500) / 10
        exact = convert(value, frm, to)
        if (frm, to) == ("C", "F"):
            break
        # Keep values that are clear of rounding boundaries and whose
        # 1-decimal rounding differs from the 2-decimal one.
        if near_half(exact, 2) or near_half(exact, 1):
            continue
        if exact.quantize(ONE, rounding=ROUND_HALF_UP) != dec2(exact):
            break
    ans = dec2(exact)
    if ans == 0:
        ans = abs(ans)
    return {
        "id": "conversion-%d" % n,
        "objective": "Convert %s %s to %s, rounded to 2 decimal places." % (value, UNITS[frm], UNITS[to]),
        "expected": "%s" % ans,
        "kind": "conversion",
        "value": value,
        "from": frm,
        "to": to,
        "decimals": 2,
    }


# ---------------------------------------------------------------- strings

WORDS = ["forge", "tournament", "candidate", "artifact", "benchmark", "scoreboard",
         "objective", "manifest", "runtime", "judgement", "pipeline", "telemetry"]
PHRASES = ["maxOutputBytes", "task matrix report", "headToHead", "setup-timeout value",
           "passAtK", "run id prefix"]

STRING_OBJ = {
    "reverse": "Reverse the word '{t}'. Answer with the reversed word only.",
    "count_vowels": "How many vowels (a, e, i, o, u) are in the word '{t}'?",
    "upper_snake": "Convert '{t}' to UPPER_SNAKE_CASE (split on spaces, hyphens and lower-to-upper case changes).",
}


def upper_snake(text):
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return "_".join(p.upper() for p in re.split(r"[\s\-_]+", text) if p)


def string_task(rng, n, transform, pool):
    text = pool.pop(rng.randrange(len(pool)))
    if transform == "reverse":
        ans = text[::-1]
    elif transform == "count_vowels":
        ans = str(sum(ch in "aeiou" for ch in text.lower()))
    else:
        ans = upper_snake(text)
    return {
        "id": "string-%d" % n,
        "objective": STRING_OBJ[transform].format(t=text),
        "expected": ans,
        "kind": "string",
        "text": text,
        "transform": transform,
    }


# ---------------------------------------------------------------- CSV

REGIONS = ["north", "south", "east", "west"]
ITEMS = ["widget", "gadget", "sprocket", "gizmo", "bolt"]


def agg(values, how, decimals):
    if how == "sum":
        r = sum(values, Decimal(0))
    elif how == "mean":
        r = sum(values, Decimal(0)) / len(values)
    elif how == "max":
        r = max(values)
    else:
        r = min(values)
    return dec2(r) if decimals == 2 else r.quantize(Decimal(1), rounding=ROUND_HALF_UP)


CSV_OBJ = {
    "sum": "What is the total of the {c} column in {f}?",
    "mean": "What is the average of the {c} column in {f}, rounded to 2 decimal places?",
    "max": "What is the largest value in the {c} column of {f}?",
    "min": "What is the smallest value in the {c} column of {f}?",
}


def csv_task(rng, n, rows, column, how):
    decimals = 2 if column == "amount" or how == "mean" else 0
    while True:
        data = []
        for _ in range(rows):
            data.append({
                "region": rng.choice(REGIONS),
                "item": rng.choice(ITEMS),
                "units": rng.randint(1, 40),
                "amount": dec2(Decimal(rng.randint(500, 50000)) / 100),
            })
        values = [Decimal(d[column]) if column == "units" else d[column] for d in data]
        ans = agg(values, how, decimals)
        # With more than 3 rows, the first 3 alone must give another answer.
        if rows <= 3 or agg(values[:3], how, decimals) != ans:
            break
    path = "data/sales-%d.csv" % n
    with open(os.path.join(HERE, path), "w", newline="") as f:
        f.write("region,item,units,amount\n")
        for d in data:
            f.write("%s,%s,%d,%s\n" % (d["region"], d["item"], d["units"], d["amount"]))
    return {
        "id": "csv-%d" % n,
        "objective": CSV_OBJ[how].format(c=column, f=path),
        "expected": str(ans),
        "kind": "csv",
        "files": [path],
        "column": column,
        "agg": how,
        "decimals": decimals,
    }


def main():
    rng = random.Random(SEED)
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    tasks = []
    for i, op in enumerate(["mul", "add", "sub", "div", "mul", "div", "add", "sub"], 1):
        tasks.append(arithmetic(rng, i, op))
    pairs = [("km", "mi"), ("C", "F"), ("kg", "lb"), ("mi", "km"),
             ("F", "C"), ("lb", "kg"), ("m", "ft"), ("ft", "m")]
    for i, (frm, to) in enumerate(pairs, 1):
        tasks.append(conversion(rng, i, frm, to))
    words, phrases = list(WORDS), list(PHRASES)
    transforms = ["reverse", "count_vowels", "upper_snake", "reverse",
                  "count_vowels", "upper_snake", "reverse", "count_vowels"]
    for i, tr in enumerate(transforms, 1):
        tasks.append(string_task(rng, i, tr, phrases if tr == "upper_snake" else words))
    # (rows, column, aggregation): two files of 3 rows, four larger ones.
    specs = [(3, "amount", "sum"), (7, "units", "sum"), (5, "amount", "mean"),
             (3, "units", "max"), (8, "amount", "sum"), (6, "units", "min")]
    for i, (rows, column, how) in enumerate(specs, 1):
        tasks.append(csv_task(rng, i, rows, column, how))
    # Interleave the kinds so that a --sample or a prefix of the file mixes them.
    by_kind = [tasks[0:8], tasks[8:16], tasks[16:24], tasks[24:30]]
    ordered = []
    for i in range(8):
        for group in by_kind:
            if i < len(group):
                ordered.append(group[i])
    assert len(ordered) == 30 and len({t["id"] for t in ordered}) == 30
    with open(os.path.join(HERE, "tasks.jsonl"), "w") as f:
        for t in ordered:
            f.write(json.dumps(t) + "\n")
    print("wrote %d tasks to %s" % (len(ordered), os.path.join(HERE, "tasks.jsonl")))


if __name__ == "__main__":
    main()
