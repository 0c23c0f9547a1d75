"""Fixtures of the differential conformance suite: server pairs, started once per session."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.pair import Pair, run_pair

#: The flags each named pair of servers starts with (both servers get the same ones).
PAIRS: dict[str, tuple[str, ...]] = {
    "main": ("--model-control-mode=explicit", "--load-model=*"),
}


class PairPool:
    """Starts each named pair on first use; all stop when the pool closes."""

    def __init__(self, stack: contextlib.ExitStack, tmp: pytest.TempPathFactory) -> None:
        self._stack = stack
        self._tmp = tmp
        self._pairs: dict[str, Pair] = {}

    def __getitem__(self, name: str) -> Pair:
        if name not in self._pairs:
            path: Path = self._tmp.mktemp(f"pair-{name}")
            self._pairs[name] = self._stack.enter_context(run_pair(path, PAIRS[name]))
        return self._pairs[name]


@pytest.fixture(scope="session")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PairPool]:
    with contextlib.ExitStack() as stack:
        yield PairPool(stack, tmp_path_factory)
