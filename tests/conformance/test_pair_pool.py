"""The pair pool's handling of a peer that dies on its own (no servers started here)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import conftest
from tests.conformance.pair import Endpoint, Pair
from tests.peers import PeerServerError


class FakeStarts:
    """Stands in for ``run_pair``: each start makes a pair whose Triton can be 'killed'."""

    def __init__(self) -> None:
        self.started = 0
        self.stopped = 0
        self.dead: set[int] = set()

    @contextlib.contextmanager
    def __call__(self, path: Path, args: Any, **kwargs: Any) -> Iterator[Pair]:
        self.started += 1
        number = self.started
        endpoint = Endpoint("triton", f"h{number}", f"g{number}", f"m{number}", number)
        try:
            yield Pair(
                endpoint,
                endpoint,
                path,
                lambda: -6 if number in self.dead else None,
                lambda: f"log of start {number}",
            )
            if number in self.dead and not kwargs.get("triton_may_exit"):
                raise PeerServerError("tritonserver exited with status -6 while in use")
        finally:
            self.stopped += 1


@pytest.fixture
def pool(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[conftest.PairPool, FakeStarts]]:
    starts = FakeStarts()
    monkeypatch.setattr(conftest, "run_pair", starts)
    monkeypatch.setattr(conftest, "TRITON_CRASHES", [])
    with contextlib.ExitStack() as stack:
        yield conftest.PairPool(stack, tmp_path_factory), starts
    assert starts.stopped == starts.started


def test_a_pair_is_started_once_and_reused(pool: tuple[conftest.PairPool, FakeStarts]) -> None:
    pairs, starts = pool
    assert pairs["main"] is pairs["main"]
    assert starts.started == 1


def test_a_dead_triton_is_replaced_on_next_use(pool: tuple[conftest.PairPool, FakeStarts]) -> None:
    pairs, starts = pool
    first = pairs["main"]
    starts.dead.add(1)
    second = pairs["main"]
    assert second is not first and second.triton.http == "h2"
    assert starts.stopped == 1  # the dead one was stopped, its exit error swallowed


def test_run_repeats_work_that_saw_triton_die(pool: tuple[conftest.PairPool, FakeStarts]) -> None:
    pairs, starts = pool
    seen: list[str] = []

    def work(pair: Pair) -> str:
        seen.append(pair.triton.http)
        if len(seen) == 1:
            starts.dead.add(pair.triton.pid)  # dies while the first attempt runs
        return pair.triton.http

    assert pairs.run("main", "case x", work) == "h2"
    assert seen == ["h1", "h2"]
    assert [what for what, _ in conftest.TRITON_CRASHES] == ["case x"]


def test_a_second_death_fails(pool: tuple[conftest.PairPool, FakeStarts]) -> None:
    pairs, starts = pool

    def work(pair: Pair) -> None:
        starts.dead.add(pair.triton.pid)

    with pytest.raises(PeerServerError, match="died twice running case y"):
        pairs.run("main", "case y", work)
    starts.dead.clear()  # the pool's own teardown would report the dead server again


def test_crash_pairs_are_not_restarted(pool: tuple[conftest.PairPool, FakeStarts]) -> None:
    pairs, starts = pool
    first = pairs["crash-classification"]
    starts.dead.add(1)
    assert pairs.run("crash-classification", "case z", lambda pair: pair) is first
    assert starts.started == 1 and conftest.TRITON_CRASHES == []
