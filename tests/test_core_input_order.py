"""The order Triton visits a request's inputs in (libstdc++'s unordered_map, reproduced)."""

from __future__ import annotations

import pytest

from mock_server.core._input_order import _hash_bytes, triton_input_order

# Each row: the request's input names, and the order Triton 2.51 listed them in its
# "Got input(s) [...]" message for the same request (captured from the real server).
OBSERVED = [
    (["INPUT0", "INPUT1", "BOGUS"], ["BOGUS", "INPUT1", "INPUT0"]),
    (["z", "INPUT1", "a", "INPUT0", "mm"], ["mm", "INPUT0", "a", "INPUT1", "z"]),
    (  # 16 names: the table grows from 13 to 29 buckets on the 14th
        [f"IN{i}" for i in range(16)],
        [
            "IN15", "IN14", "IN13", "IN0", "IN8", "IN1", "IN2", "IN7",
            "IN4", "IN5", "IN6", "IN3", "IN9", "IN11", "IN10", "IN12",
        ],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("names", "triton"), OBSERVED)
def test_same_order_as_triton(names: list[str], triton: list[str]) -> None:
    assert list(triton_input_order(names)) == triton


def test_hash_is_libstdcxx_hash_bytes() -> None:
    # std::hash<std::string>{}("") and ("a"), printed by a g++ 12 program on x86_64.
    assert _hash_bytes(b"") == 6142509188972423790
    assert _hash_bytes(b"a") == 4993892634952068459


def test_repeated_names_count_once_and_few_names_keep_reverse_order() -> None:
    assert triton_input_order(["A", "A"]) == ("A",)
    assert triton_input_order(["ONLY"]) == ("ONLY",)
