"""How Triton reads the values of trace settings, the same over HTTP and gRPC (server side).

The protocol codecs read the settings out of their messages and hand the values here; the
rules and messages below are Triton 2.51's, written once for both frontends.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import Any

from .numbers import stoi

__all__ = ["TRACE_NUMBERS", "trace_changes", "trace_levels", "trace_number"]

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


def trace_changes(present: Container[str], read: Callable[[str], Any], got: str) -> dict[str, Any]:
    """The changes of a trace-setting request, as Triton reads them over either protocol.

    Parameters
    ----------
    present : container of str
        The settings the request names (any others are ignored).
    read : callable
        ``read(key)``: the value of a setting the request names, out of its message (a list of
        str for ``trace_level``, a str for the others; None clears the setting); called in
        Triton's order, so that a protocol's own refusals come where Triton's do.
    got : str
        As for :func:`trace_number`.

    Returns
    -------
    dict
        The settings to change, each to its new value or None (what the protocol codecs'
        ``parse_trace_setting_request`` return).

    Raises
    ------
    ValueError
        With Triton's message for ``OFF`` with another level, or a number that does not parse
        or is out of range (each protocol answers it with its own status).
    """
    changes: dict[str, Any] = {}
    if "trace_file" in present:
        changes["trace_file"] = read("trace_file")
    if "trace_level" in present:
        levels = read("trace_level")
        if levels is None:
            changes["trace_level"] = None
        elif (chosen := trace_levels(levels)) is not None:
            changes["trace_level"] = chosen
    for key, lowest, bounds in TRACE_NUMBERS:
        if key in present:
            value = read(key)
            changes[key] = None if value is None else trace_number(key, value, lowest, bounds, got)
    return changes
