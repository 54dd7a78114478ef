"""Hidden checks for /app/sliding.py: reward 1 only if every case passes.

Run in isolated mode (python3 -I) with /app appended to sys.path, so that files the
agent leaves in /app cannot shadow the standard library.
"""

import signal
import sys

sys.path.append("/app")

REWARD = "/logs/verifier/reward.txt"


def same(got, want):
    """Equal with exactly the same types all the way down (no clever __eq__)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, list):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    return got == want


def on_alarm(signum, frame):
    raise TimeoutError("took too long")


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.alarm(5)
        import sliding
        signal.alarm(0)
    except BaseException as e:
        print("cannot import sliding: %r" % e)
        return 0
    cases = [
        ("window_sums", ([1, 2, 3, 4], 2), [3, 5, 7]),
        ("window_sums", ([1, 2, 3, 4], 1), [1, 2, 3, 4]),
        ("window_sums", ([1, 2, 3, 4], 3), [6, 9]),
        ("window_sums", ([1, 2, 3, 4], 4), [10]),
        ("window_sums", ([1, 2, 3], 5), []),
        ("window_sums", ([], 1), []),
        ("window_sums", ([5, -2, 7, 0, 3], 2), [3, 5, 7, 3]),
        ("window_sums", ([1, 2], 0), ValueError),
        ("peak_window", ([1, 5, 1, 1], 2), 0),
        ("peak_window", ([1, 1, 1, 9], 2), 2),
        ("peak_window", ([4, 4, 4], 3), 0),
        ("peak_window", ([2, 3], 3), None),
    ]
    passed = 0
    for name, args, want in cases:
        try:
            signal.alarm(2)
            got = getattr(sliding, name)(*args)
            signal.alarm(0)
            ok = want is not ValueError and same(got, want)
        except ValueError as e:
            signal.alarm(0)
            got, ok = e, want is ValueError
        except BaseException as e:
            signal.alarm(0)
            got, ok = e, False
        passed += ok
        print("%s %s%r -> %r" % ("ok  " if ok else "FAIL", name, args, got))
    print("%d of %d cases" % (passed, len(cases)))
    return 1 if passed == len(cases) else 0


if __name__ == "__main__":
    reward = main()
    with open(REWARD, "w") as f:
        f.write("%d\n" % reward)
