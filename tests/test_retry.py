"""The retry policy of the four clients, without a server (tritonclient._retry)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tritonclient import _retry
from tritonclient.utils import InferenceServerException, RetryPolicy
from tritonclient.utils._errors import InferenceServerUnavailableError


def unavailable(error: InferenceServerException) -> bool:
    return isinstance(error, InferenceServerUnavailableError)


class Flaky:
    """Fails with the given errors in turn, then answers "ok"."""

    def __init__(self, *errors: InferenceServerException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(_retry.time, "sleep", slept.append)

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(_retry.asyncio, "sleep", fake_sleep)
    return slept


def run_both(perform: Flaky, policy: RetryPolicy | None) -> list[Any]:
    """The outcome of the sync and the async driver on fresh copies of ``perform``."""
    outcomes: list[Any] = []
    for driver in ("sync", "async"):
        attempt = Flaky(*perform.errors)
        try:
            if driver == "sync":
                outcomes.append((_retry.retry_sync(attempt, policy, unavailable), attempt.calls))
            else:

                async def call(attempt: Flaky = attempt) -> str:
                    return attempt()

                result = asyncio.run(_retry.retry_async(call, policy, unavailable))
                outcomes.append((result, attempt.calls))
        except InferenceServerException as error:
            outcomes.append((type(error).__name__, attempt.calls))
    return outcomes


def test_retryable_failures_are_retried_with_backoff(pauses: list[float]) -> None:
    flaky = Flaky(InferenceServerUnavailableError("down"), InferenceServerUnavailableError("down"))
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.1, backoff_multiplier=2.0)
    assert run_both(flaky, policy) == [("ok", 3), ("ok", 3)]
    assert pauses == [0.1, 0.2, 0.1, 0.2]


def test_the_last_failure_is_raised_once_attempts_run_out(pauses: list[float]) -> None:
    flaky = Flaky(*[InferenceServerUnavailableError("down")] * 5)
    outcome = run_both(flaky, RetryPolicy(max_attempts=2, initial_backoff=0))
    assert outcome == [("InferenceServerUnavailableError", 2)] * 2
    assert pauses == [0.0, 0.0]


def test_other_failures_and_no_policy_are_not_retried(pauses: list[float]) -> None:
    flaky = Flaky(InferenceServerException("bad request"))
    assert run_both(flaky, RetryPolicy()) == [("InferenceServerException", 1)] * 2
    down = Flaky(InferenceServerUnavailableError("down"))
    assert run_both(down, None) == [("InferenceServerUnavailableError", 1)] * 2
    assert pauses == []


def test_a_policy_must_be_a_retry_policy() -> None:
    assert _retry.check_retry_policy(None) is None
    policy = RetryPolicy()
    assert _retry.check_retry_policy(policy) is policy
    with pytest.raises(InferenceServerException, match=r"must be a tritonclient\.utils\.Retry"):
        _retry.check_retry_policy(3)  # type: ignore[arg-type]
