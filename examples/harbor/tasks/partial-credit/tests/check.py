"""Hidden checks for /app/lib.py, one group of cases per function.

A function earns its point when every one of its cases passes. Writes
/logs/verifier/reward.json: reward = functions passed / 4, beside the counts.
Run in isolated mode (python3 -I) with /app appended to sys.path.
"""

import json
import signal
import sys

sys.path.append("/app")

RESULT = "/logs/verifier/reward.json"

CASES = {
    "slugify": [
        (("Hello, World!",), "hello-world"),
        (("  Forge -- Harbor 2.0  ",), "forge-harbor-2-0"),
        (("already-a-slug",), "already-a-slug"),
        (("  ",), ""),
        (("C3PO & R2D2",), "c3po-r2d2"),
    ],
    "is_palindrome": [
        (("Never odd or even",), True),
        (("A man, a plan, a canal: Panama",), True),
        (("forge",), False),
        (("",), True),
        (("No 'x' in Nixon",), True),
        (("ab1ba2",), False),
    ],
    "chunk": [
        (([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]),
        (([], 3), []),
        ((["a", "b", "c"], 3), [["a", "b", "c"]]),
        (([1, 2, 3], 1), [[1], [2], [3]]),
        (([1, 2], 5), [[1, 2]]),
        (([1, 2], 0), ValueError),
    ],
    "to_roman": [
        ((1,), "I"),
        ((4,), "IV"),
        ((9,), "IX"),
        ((14,), "XIV"),
        ((40,), "XL"),
        ((1994,), "MCMXCIV"),
        ((2024,), "MMXXIV"),
        ((3999,), "MMMCMXCIX"),
        ((0,), ValueError),
        ((4000,), ValueError),
    ],
}


def same(got, want):
    """Equal with exactly the same types all the way down (no clever __eq__)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, list):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    return got == want


def on_alarm(signum, frame):
    raise TimeoutError("took too long")


def run_case(fn, args, want):
    try:
        signal.alarm(2)
        got = fn(*args)
        signal.alarm(0)
        return want is not ValueError and same(got, want), got
    except ValueError as e:
        signal.alarm(0)
        return want is ValueError, e
    except BaseException as e:
        signal.alarm(0)
        return False, e


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.alarm(5)
        import lib
        signal.alarm(0)
    except BaseException as e:
        signal.alarm(0)
        print("cannot import lib: %r" % e)
        lib = None
    passed = cases_passed = cases_total = 0
    for name, cases in CASES.items():
        fn = getattr(lib, name, None)
        ok_here = 0
        for args, want in cases:
            ok, got = run_case(fn, args, want) if callable(fn) else (False, "missing")
            ok_here += ok
            if not ok:
                print("FAIL %s%r -> %r (want %r)" % (name, args, got, want))
        cases_passed += ok_here
        cases_total += len(cases)
        passed += ok_here == len(cases)
        print("%-14s %d of %d cases" % (name, ok_here, len(cases)))
    total = len(CASES)
    return {"reward": round(passed / total, 4), "passed": passed, "total": total,
            "cases_passed": cases_passed, "cases_total": cases_total}


if __name__ == "__main__":
    result = main()
    print(json.dumps(result))
    with open(RESULT, "w") as f:
        json.dump(result, f)
        f.write("\n")
