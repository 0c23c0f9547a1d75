"""Fixtures of the differential conformance suite: server pairs, started once per session."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.conformance.cases_ensemble import PAIR_MODELS as ENSEMBLE_MODELS
from tests.conformance.cases_metrics import MODELS as METRICS_MODELS
from tests.conformance.pair import Pair, run_pair
from tests.peers import PeerServerError

T = TypeVar("T")

#: Each named pair of servers: the flags both start with, and the models of their repository
#: (None: all of them, bundled and conformance models).
PAIRS: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    # Triton 2.51 dies on this pair's one case (see the allow-list); it gets a server of its own.
    "crash-classification": (("--model-control-mode=none",), ("identity_bytes",)),
    "main": (("--model-control-mode=explicit", "--load-model=*"), None),
    # The client differential suite's servers (the main pair's flags and models).
    "client": (("--model-control-mode=explicit", "--load-model=*"), None),
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
    # Header forwarding as Triton's L0_parameters QA starts it: case-insensitive by default...
    "forward": (
        (
            "--model-control-mode=explicit",
            "--load-model=echo_params",
            "--http-header-forward-pattern=MY_HEADER.*",
            "--grpc-header-forward-pattern=MY_HEADER.*",
        ),
        ("echo_params",),
    ),
    # ... and case-sensitive with RE2's (?-i).
    "forward-case": (
        (
            "--model-control-mode=explicit",
            "--load-model=echo_params",
            "--http-header-forward-pattern=(?-i)MY_HEADER.*",
            "--grpc-header-forward-pattern=(?-i)MY_HEADER.*",
        ),
        ("echo_params",),
    ),
    # Forwarded headers named like a reserved parameter: Triton 2.51 forwards them (2.73
    # refuses them, #8763; tests/test_compat.py).
    "forward-reserved": (
        (
            "--model-control-mode=explicit",
            "--load-model=echo_params",
            "--http-header-forward-pattern=^(sequence_|priority|timeout|headers|binary_|triton_)",
            "--grpc-header-forward-pattern=^(sequence_|priority|timeout|headers|binary_|triton_)",
        ),
        ("echo_params",),
    ),
    # Used only by test_metrics_differential.py, whose scenarios build on one another.
    "metrics": (("--model-control-mode=explicit", "--load-model=*"), METRICS_MODELS),
    # The ensembles of tests/conformance/models with their composing models (cases_ensemble.py).
    "ensemble": (
        ("--model-control-mode=explicit", "--load-model=*"),
        ENSEMBLE_MODELS,
    ),
    # Used only by test_pb_utils_differential.py.
    "pb_utils": (
        ("--model-control-mode=explicit", "--load-model=*"),
        ("pb_utils_probe", "identity_int32"),
    ),
}


#: Where Triton 2.51 aborted on its own during this session (what was running, the last
#: lines of its log); reported in the terminal summary.  Its gRPC server sometimes aborts
#: (``ASSERTION FAILED: !byte_buffer->Valid()`` in proto_buffer_writer.h) under a stream's
#: concurrent writes, a race in Triton, not an answer to a particular request.
TRITON_CRASHES: list[tuple[str, str]] = []


class PairPool:
    """Starts each named pair on first use; all stop when the pool closes.

    A pair whose Triton has died (outside the ``crash-`` pairs, whose one case kills it on
    purpose) is stopped and started afresh on its next use, so that one abort of the peer does
    not fail every case after it; :meth:`run` also repeats, once, the work that saw it die.
    """

    def __init__(self, stack: contextlib.ExitStack, tmp: pytest.TempPathFactory) -> None:
        self._stack = stack
        self._tmp = tmp
        self._pairs: dict[str, tuple[Pair, contextlib.ExitStack]] = {}

    def __getitem__(self, name: str) -> Pair:
        entry = self._pairs.get(name)
        if entry is not None and entry[0].triton_exit() is not None and not _may_crash(name):
            self._drop(name)
            entry = None
        if entry is None:
            path: Path = self._tmp.mktemp(f"pair-{name}")
            args, models = PAIRS[name]
            own = contextlib.ExitStack()
            pair = own.enter_context(
                run_pair(path, args, models=models, triton_may_exit=_may_crash(name))
            )
            self._stack.callback(own.close)
            entry = self._pairs[name] = (pair, own)
        return entry[0]

    def _drop(self, name: str) -> None:
        _, own = self._pairs.pop(name)
        with contextlib.suppress(PeerServerError):  # the exit is what we already know
            own.close()

    def run(self, name: str, what: str, work: Callable[[Pair], T]) -> T:
        """``work(pair)``; if Triton died while it ran, note it and run it once more on a
        fresh pair (a second death fails with Triton's log)."""
        pair = self[name]
        try:
            result = work(pair)
        except Exception:
            # The work may fail with Triton (a client left waiting on connections a dying
            # server still holds): that is the same abort, retried the same way.
            if pair.triton_exit() is None or _may_crash(name):
                raise
        else:
            if pair.triton_exit() is None or _may_crash(name):
                return result
        TRITON_CRASHES.append((what, pair.triton_log()[-2000:]))
        pair = self[name]
        result = work(pair)
        if pair.triton_exit() is not None:
            raise PeerServerError(
                f"Triton 2.51 died twice running {what}; its log:\n{pair.triton_log()[-5000:]}"
            )
        return result


def _may_crash(name: str) -> bool:
    return name.startswith("crash-")


@pytest.fixture(scope="session")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PairPool]:
    with contextlib.ExitStack() as stack:
        yield PairPool(stack, tmp_path_factory)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say where the peer aborted on its own, so that a restart is never silent."""
    for what, log in TRITON_CRASHES:
        terminalreporter.write_sep("=", f"Triton 2.51 aborted while running {what}; restarted")
        terminalreporter.write_line(log)
