"""Sliding-window helpers for a sensor log."""


def window_sums(values, size):
    """The sums of every run of `size` consecutive values, in order.

    window_sums([1, 2, 3, 4], 2) == [3, 5, 7]. A size larger than the list gives [];
    a size below 1 raises ValueError.
    """
    if size < 1:
        raise ValueError("size must be at least 1")
    sums = []
    for start in range(len(values) - size):
        sums.append(sum(values[start:start + size]))
    return sums


def peak_window(values, size):
    """The start index of the first window with the largest sum, or None if there is none.

    peak_window([1, 5, 1, 1], 2) == 0 (windows [6, 6, 2]: the first of the two 6s).
    """
    sums = window_sums(values, size)
    if not sums:
        return None
    return sums.index(max(sums))
