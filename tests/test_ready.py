"""The shared wait_until_ready policy (tritonclient._ready), with scripted health answers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tritonclient._ready import steps, wait_async, wait_sync
from tritonclient.utils import InferenceServerException


class Scripted:
    """Answers checks from a script: bools, or exceptions to raise."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, what: str, remaining: float) -> bool:
        assert remaining > 0
        self.asked.append(what)
        answer = self.answers.pop(0) if self.answers else False
        if isinstance(answer, BaseException):
            raise answer
        return bool(answer)

    async def coroutine(self, what: str, remaining: float) -> bool:
        return self(what, remaining)


def not_ready(what: str, timeout: float, last: BaseException | None) -> Exception:
    return TimeoutError(f"{what} not ready after {timeout} s; last error: {last}")


def test_ready_at_once_without_model() -> None:
    check = Scripted(True)
    wait_sync(check, steps(None, 5, 0.01, not_ready))
    assert check.asked == ["server"]


def test_errors_and_not_ready_are_retried_until_ready() -> None:
    refused = InferenceServerException("connection refused")
    check = Scripted(refused, False, True, False, True, True)
    wait_sync(check, steps("m", 5, 0, not_ready))
    assert check.asked == ["server", "server", "server", "model", "server", "model"]


def test_timeout_blames_what_was_last_seen_not_ready() -> None:
    with pytest.raises(TimeoutError, match="model 'm' not ready") as info:
        wait_sync(Scripted(*([True, False] * 1000)), steps("m", 0.05, 1, not_ready))
    assert "last error: None" in str(info.value)
    refused = InferenceServerException("refused")
    with pytest.raises(TimeoutError, match=r"server not ready.*refused"):
        wait_sync(Scripted(*([refused] * 1000)), steps(None, 0.05, 0.01, not_ready))


def test_async_driver_and_integer_interval() -> None:
    check = Scripted(False, True, True)
    asyncio.run(wait_async(check.coroutine, steps("m", 5, 0, not_ready)))
    assert check.asked == ["server", "server", "model"]
    with pytest.raises(TimeoutError):
        asyncio.run(wait_async(Scripted().coroutine, steps(None, 0.05, 1, not_ready)))
