#!/bin/bash
set -e
cat > lib.py <<'PY'
"""Four small helpers."""

import re


def slugify(title):
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def is_palindrome(text):
    kept = [c.lower() for c in text if c.isalnum()]
    return kept == kept[::-1]


def chunk(items, size):
    if size < 1:
        raise ValueError("size must be at least 1")
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


NUMERALS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
            (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n):
    if not 1 <= n <= 3999:
        raise ValueError("out of range: %r" % n)
    out = []
    for value, letters in NUMERALS:
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)
PY
