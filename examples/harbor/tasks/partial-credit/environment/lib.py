"""Four small helpers. Each one is still to be written."""


def slugify(title):
    raise NotImplementedError


def is_palindrome(text):
    raise NotImplementedError


def chunk(items, size):
    raise NotImplementedError


def to_roman(n):
    raise NotImplementedError
