"""``wait_until_ready``, written once for the four clients (sync and asyncio, gRPC and HTTP).

The policy lives in :func:`steps`, a generator that knows nothing of I/O: it asks for a
server check or a model check (with the time left), or for a pause, and decides from the
answers when to stop and whom to blame.  :func:`wait_sync` and :func:`wait_async` only run
those steps with a client's own health calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator

from tritonclient.utils import InferenceServerException

__all__ = ["steps", "wait_async", "wait_sync"]

#: ``check(what, timeout)``: ``what`` is ``"server"`` or ``"model"``; returns readiness.
Check = Callable[[str, float], bool]
AsyncCheck = Callable[[str, float], Awaitable[bool]]
#: ``not_ready_error(what, timeout, last_error)``: the exception for a wait that timed out.
NotReady = Callable[[str, float, BaseException | None], Exception]

_Step = tuple[str, float] | float
_Answer = bool | InferenceServerException | None
Steps = Generator[_Step, _Answer, None]


def steps(
    model_name: str | None, timeout: float, interval: float, not_ready_error: NotReady
) -> Steps:
    """Yield ``(what, time_left)`` checks and pause lengths until the server (and model) is
    ready; raise ``not_ready_error`` once ``timeout`` has passed.

    A check is answered with a bool or with the ``InferenceServerException`` it raised (which
    counts as not ready).  The error blames what was last seen not ready: a timeout on the
    final, very short attempt must not hide that the server itself was already ready.
    """
    deadline = time.monotonic() + timeout
    blamed = "server"
    last: BaseException | None = None
    while True:
        answer = yield ("server", max(deadline - time.monotonic(), 0.001))
        if isinstance(answer, BaseException):
            last = answer
        elif answer:
            if model_name is None:
                return
            blamed = f"model '{model_name}'"
            answer = yield ("model", max(deadline - time.monotonic(), 0.001))
            if isinstance(answer, BaseException):
                last = answer
            elif answer:
                return
        else:
            blamed = "server"
        now = time.monotonic()
        if now >= deadline:
            raise not_ready_error(blamed, timeout, last)
        yield min(interval, deadline - now)


def _next(steps: Steps, answer: _Answer) -> _Step | None:
    """The step after ``answer``, or None once the wait is over."""
    try:
        return steps.send(answer)
    except StopIteration:
        return None


def wait_sync(check: Check, steps: Steps) -> None:
    """Run the wait with a blocking ``check``; returns once ready."""
    answer: _Answer = None
    while (step := _next(steps, answer)) is not None:
        answer = None
        if not isinstance(step, tuple):
            time.sleep(step)
            continue
        try:
            answer = check(*step)
        except InferenceServerException as error:
            answer = error


async def wait_async(check: AsyncCheck, steps: Steps) -> None:
    """Run the wait with a coroutine ``check``; returns once ready."""
    answer: _Answer = None
    while (step := _next(steps, answer)) is not None:
        answer = None
        if isinstance(step, tuple):
            try:
                answer = await check(*step)
            except InferenceServerException as error:
                answer = error
        else:
            await asyncio.sleep(step)
