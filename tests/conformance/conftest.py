"""Fixtures of the differential conformance suite: server pairs, started once per session."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.cases_metrics import MODELS as METRICS_MODELS
from tests.conformance.pair import Pair, run_pair

#: Each named pair of servers: the flags both start with, and the models of their repository
#: (None: all of them, bundled and conformance models).
PAIRS: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    # Triton 2.51 dies on this pair's one case (see the allow-list); it gets a server of its own.
    "crash-classification": (("--model-control-mode=none",), ("identity_bytes",)),
    "main": (("--model-control-mode=explicit", "--load-model=*"), None),
    "none": (("--model-control-mode=none",), ("simple", "identity_int32")),
    "poll": (
        ("--model-control-mode=poll", "--repository-poll-secs=3600"),
        ("simple", "identity_int32"),
    ),
    "restricted": (
        (
            "--model-control-mode=explicit",
            "--load-model=simple",
            "--load-model=echo_params",
            "--http-restricted-api=model-repository,shared-memory:admin-key=secret",
            "--grpc-restricted-protocol=model-repository:admin-key=secret",
            "--http-header-forward-pattern=^(x|X)-(f|F)wd.*",
            "--grpc-header-forward-pattern=^x-fwd.*",
        ),
        ("simple", "echo_params", "identity_int32"),
    ),
    # Used only by test_metrics_differential.py, whose scenarios build on one another.
    "metrics": (("--model-control-mode=explicit", "--load-model=*"), METRICS_MODELS),
    # Used only by test_pb_utils_differential.py.
    "pb_utils": (
        ("--model-control-mode=explicit", "--load-model=*"),
        ("pb_utils_probe", "identity_int32"),
    ),
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
            args, models = PAIRS[name]
            pair = run_pair(path, args, models=models, triton_may_exit=name.startswith("crash-"))
            self._pairs[name] = self._stack.enter_context(pair)
        return self._pairs[name]


@pytest.fixture(scope="session")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PairPool]:
    with contextlib.ExitStack() as stack:
        yield PairPool(stack, tmp_path_factory)
