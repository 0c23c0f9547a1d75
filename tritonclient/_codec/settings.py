"""How Triton reads the values of trace settings, the same over HTTP and gRPC (server side).

The protocol codecs read the settings out of their messages and hand the values here; the
rules and messages below are Triton 2.51's, written once for both frontends.
"""

from __future__ import annotations

from collections.abc import Sequence

from .numbers import stoi

__all__ = ["TRACE_NUMBERS", "trace_levels", "trace_number"]

#: Numeric trace settings: (name, lowest value or None for unsigned, the range in messages).
TRACE_NUMBERS = (
    ("trace_rate", None, "[ 0, 4294967295 ]"),
    ("trace_count", -1, "[ -1, 2147483647 ]"),
    ("log_frequency", None, "[ 0, 4294967295 ]"),
)
_LEVEL_ORDER = ("OFF", "TIMESTAMPS", "TENSORS")


def trace_levels(values: Sequence[str]) -> list[str] | None:
    """The trace levels Triton sets for ``values``.

    ``OFF`` must be alone; ``TIMESTAMPS`` and ``TENSORS`` combine; anything else is ignored.

    Returns
    -------
    list of str or None
        The levels in Triton's order, or None when no value names a level (the setting is
        left as it is then).

    Raises
    ------
    ValueError
        ``Expect only one trace level 'OFF' is specified``.
    """
    chosen: set[str] = set()
    for level in values:
        if level == "OFF":
            if len(values) != 1:
                raise ValueError("Expect only one trace level 'OFF' is specified")
            chosen = {"OFF"}
        elif level in _LEVEL_ORDER:
            chosen.add(level)
    return [level for level in _LEVEL_ORDER if level in chosen] or None


def trace_number(key: str, value: str, lowest: int | None, bounds: str, got: str) -> str:
    """Read a numeric trace setting with ``std::stoi``, as Triton does.

    Parameters
    ----------
    key, value : str
        The setting and its text.
    lowest : int or None
        The least value (``trace_count``: -1); None for the unsigned settings, whose negative
        values wrap to unsigned as in Triton.
    bounds : str
        The range quoted when the value is out of range.
    got : str
        What precedes the value in the "Expecting value >=" message (``"got:"`` over HTTP,
        ``"got: "`` over gRPC: Triton's two frontends write it differently).

    Returns
    -------
    str
        The value as a decimal string.

    Raises
    ------
    ValueError
        With Triton's message for a value that does not parse, is out of range or too low.
    """
    try:
        number = stoi(value)
    except OverflowError:
        raise ValueError(
            f"Unable to parse '{key}', value is out of range {bounds}, got: {value}"
        ) from None
    except ValueError:
        raise ValueError(f"Unable to parse '{key}', got: {value}") from None
    if lowest is None:
        return str(number & 0xFFFFFFFF)
    if number < lowest:
        raise ValueError(f"Unable to parse '{key}'. Expecting value >= {lowest}, {got}{value}")
    return str(number)
