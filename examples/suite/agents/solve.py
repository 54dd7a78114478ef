"""solve: the exact solver careful and flaky share.

solve(task) answers one task of examples/suite from its parameters.
"""

import csv
import re
from decimal import ROUND_HALF_UP, Decimal

# Exact conversion factors (km per mile, kg per pound, m per foot).
MILE, POUND, FOOT = Decimal("1.609344"), Decimal("0.45359237"), Decimal("0.3048")


def fmt(x, decimals):
    q = x.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return str(abs(q) if q == 0 else q)


def arithmetic(t):
    a, b = t["a"], t["b"]
    return str({"add": a + b, "sub": a - b, "mul": a * b, "div": a // b}[t["op"]])


def conversion(t):
    v = Decimal(str(t["value"]))
    r = {
        ("km", "mi"): lambda: v / MILE, ("mi", "km"): lambda: v * MILE,
        ("kg", "lb"): lambda: v / POUND, ("lb", "kg"): lambda: v * POUND,
        ("m", "ft"): lambda: v / FOOT, ("ft", "m"): lambda: v * FOOT,
        ("C", "F"): lambda: v * 9 / 5 + 32, ("F", "C"): lambda: (v - 32) * 5 / 9,
    }[(t["from"], t["to"])]()
    return fmt(r, t.get("decimals", 2))


def string(t):
    s, how = t["text"], t["transform"]
    if how == "reverse":
        return s[::-1]
    if how == "count_vowels":
        return str(sum(ch in "aeiou" for ch in s.lower()))
    if how == "upper_snake":
        s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", s)
        return "_".join(p.upper() for p in re.split(r"[\s\-_]+", s) if p)
    raise ValueError("unknown transform " + how)


def csv_agg(t):
    with open(t["files"][0], newline="") as f:
        values = [Decimal(row[t["column"]]) for row in csv.DictReader(f)]
    r = {
        "sum": lambda: sum(values, Decimal(0)),
        "mean": lambda: sum(values, Decimal(0)) / len(values),
        "max": lambda: max(values),
        "min": lambda: min(values),
    }[t["agg"]]()
    return fmt(r, t.get("decimals", 0))


SOLVERS = {"arithmetic": arithmetic, "conversion": conversion, "string": string, "csv": csv_agg}



def solve(task):
    """The answer to task, as text."""
    return SOLVERS[task["kind"]](task)
