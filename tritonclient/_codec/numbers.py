"""Numbers read from text the way Triton's C++ reads them (``atoi``, ``std::stoi``, ``std::stol``).

Triton parses some numbers in headers, trace settings and model versions with the C library;
their rules differ from Python's ``int()`` (leading whitespace and a sign are allowed, parsing
stops at the first non-digit, ``atoi`` never fails), and the messages Triton builds on them
depend on which of the rules applied.
"""

from __future__ import annotations

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "INT64_MIN",
    "UINT64_MAX",
    "as_int64",
    "atoi",
    "stoi",
    "stol",
]

#: The integer ranges the protocol's numbers live in.
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1

_INT32 = (-(2**31), INT32_MAX)
_INT64 = (INT64_MIN, INT64_MAX)
_SPACE = " \t\n\v\f\r"


def as_int64(value: int) -> int:
    """A number read as ``uint64`` and kept in an ``int64`` (two's complement), as Triton keeps
    an HTTP request's shape (``IndexAsUInt`` into a ``std::vector<int64_t>``):
    ``2**64 - 1`` is ``-1``."""
    return value - 2**64 if value > INT64_MAX else value


def _leading_integer(text: str) -> int | None:
    """The integer at the start of ``text`` (after whitespace and a sign), or None."""
    stripped = text.lstrip(_SPACE)
    sign = 1
    if stripped[:1] in ("+", "-"):
        sign = -1 if stripped[0] == "-" else 1
        stripped = stripped[1:]
    digits = len(stripped) - len(stripped.lstrip("0123456789"))
    if digits == 0:
        return None
    return sign * int(stripped[:digits])


def atoi(text: str) -> int:
    """glibc ``atoi``: 0 when ``text`` starts with no number; otherwise ``(int) strtol(...)``,
    i.e. the number saturated to 64 bits, then wrapped to 32 bits."""
    value = _leading_integer(text)
    if value is None:
        return 0
    value = max(min(value, _INT64[1]), _INT64[0]) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _checked(text: str, low: int, high: int) -> int:
    value = _leading_integer(text)
    if value is None:
        raise ValueError(text)
    if not low <= value <= high:
        raise OverflowError(text)
    return value


def stoi(text: str) -> int:
    """``std::stoi``: ``ValueError`` (``invalid_argument``) when no number starts ``text``,
    ``OverflowError`` (``out_of_range``) outside a 32-bit ``int``."""
    return _checked(text, *_INT32)


def stol(text: str) -> int:
    """``std::stol`` (a 64-bit ``long``), with :func:`stoi`'s errors."""
    return _checked(text, *_INT64)
