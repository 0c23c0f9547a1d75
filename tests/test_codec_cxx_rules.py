"""Numbers and trace settings read as Triton's C++ reads them (tritonclient._codec)."""

from __future__ import annotations

import pytest

from tritonclient._codec.numbers import atoi, stoi, stol
from tritonclient._codec.settings import trace_levels, trace_number


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12", 12),
        ("  +7x", 7),
        ("-3", -3),
        ("abc", 0),
        ("", 0),
        ("1.5", 1),
        ("2147483648", -(2**31)),  # strtol's long wrapped to a 32-bit int
        ("4294967296", 0),
        ("99999999999999999999", -1),  # saturated to LONG_MAX first
    ],
)
def test_atoi(text: str, value: int) -> None:
    assert atoi(text) == value


def test_stoi_and_stol() -> None:
    assert stoi(" 12abc") == 12 and stol("-5") == -5
    with pytest.raises(ValueError):
        stoi("x1")
    with pytest.raises(OverflowError):
        stoi("2147483648")
    assert stol("2147483648") == 2**31
    with pytest.raises(OverflowError):
        stol(str(2**63))


@pytest.mark.parametrize(
    ("values", "levels"),
    [
        (["OFF"], ["OFF"]),
        (["TENSORS", "TIMESTAMPS", "TENSORS"], ["TIMESTAMPS", "TENSORS"]),
        (["LOUD"], None),
        (["LOUD", "TENSORS"], ["TENSORS"]),
    ],
)
def test_trace_levels(values: list[str], levels: list[str] | None) -> None:
    assert trace_levels(values) == levels


def test_trace_level_off_must_be_alone() -> None:
    with pytest.raises(ValueError, match=r"^Expect only one trace level .OFF. is specified$"):
        trace_levels(["OFF", "TENSORS"])


def test_trace_numbers() -> None:
    assert trace_number("trace_rate", "7", None, "[ 0, 4294967295 ]", "got:") == "7"
    assert trace_number("trace_rate", "-1", None, "[ 0, 4294967295 ]", "got:") == "4294967295"
    assert trace_number("trace_count", "-1", -1, "[ -1, 2147483647 ]", "got:") == "-1"
    with pytest.raises(
        ValueError, match=r"^Unable to parse 'trace_count'. Expecting value >= -1, got:-2$"
    ):
        trace_number("trace_count", "-2", -1, "[ -1, 2147483647 ]", "got:")
    with pytest.raises(ValueError, match=r"^Unable to parse 'trace_rate', got: x$"):
        trace_number("trace_rate", "x", None, "[ 0, 4294967295 ]", "got: ")
    with pytest.raises(ValueError, match=r"out of range \[ 0, 4294967295 \], got: 9999999999$"):
        trace_number("trace_rate", "9999999999", None, "[ 0, 4294967295 ]", "got: ")
