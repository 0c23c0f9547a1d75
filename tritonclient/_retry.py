"""Retries of idempotent calls, written once for the four clients (sync and asyncio, gRPC and
HTTP), in the style of :mod:`tritonclient._ready`.

The policy lives in :func:`_steps`, a generator that knows nothing of I/O: it asks for an
attempt, is told how the attempt failed (or that it succeeded), and answers with a pause or
gives up by raising the failure.  :func:`retry_sync` and :func:`retry_async` only run those
steps with a client's own transport call.  Which failures are worth another attempt is the
protocol's to say (``retryable``): gRPC retries UNAVAILABLE, HTTP a failed connection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

from tritonclient.utils import InferenceServerException, RetryPolicy, raise_error

__all__ = ["check_retry_policy", "retry_async", "retry_sync"]

T = TypeVar("T")

#: Whether a failed attempt may be repeated.
Retryable = Callable[[InferenceServerException], bool]

_ATTEMPT = None


def check_retry_policy(retry_policy: RetryPolicy | None) -> RetryPolicy | None:
    """``retry_policy`` checked to be a :class:`RetryPolicy` or None (a client's argument)."""
    if retry_policy is not None and not isinstance(retry_policy, RetryPolicy):
        raise_error("retry_policy must be a tritonclient.utils.RetryPolicy or None")
    return retry_policy


def _steps(
    policy: RetryPolicy | None, retryable: Retryable
) -> Generator[float | None, InferenceServerException | None, None]:
    """Yield None for each attempt and, after a failed one, the pause before the next.

    Each attempt is answered with the exception it failed with, or None when it succeeded
    (the generator then ends).  A failure that is not retryable, or the last attempt's,
    is raised.
    """
    attempt = 1
    while True:
        error = yield _ATTEMPT
        if error is None:
            return
        if policy is None or attempt >= policy.max_attempts or not retryable(error):
            raise error
        yield policy.backoff(attempt)
        attempt += 1


def retry_sync(perform: Callable[[], T], policy: RetryPolicy | None, retryable: Retryable) -> T:
    """``perform()``, repeated as ``policy`` allows when it fails in a ``retryable`` way."""
    if policy is None:  # one attempt: no schedule to run (the common case, on every call)
        return perform()
    steps = _steps(policy, retryable)
    step = next(steps)
    while True:
        if step is not _ATTEMPT:
            time.sleep(step)
            step = next(steps)
            continue
        try:
            result = perform()
        except InferenceServerException as error:
            step = steps.send(error)
            continue
        steps.close()
        return result


async def retry_async(
    perform: Callable[[], Awaitable[T]], policy: RetryPolicy | None, retryable: Retryable
) -> T:
    """``await perform()``, repeated as ``policy`` allows when it fails in a ``retryable``
    way."""
    if policy is None:  # one attempt: no schedule to run (the common case, on every call)
        return await perform()
    steps = _steps(policy, retryable)
    step = next(steps)
    while True:
        if step is not _ATTEMPT:
            await asyncio.sleep(step)
            step = next(steps)
            continue
        try:
            result = await perform()
        except InferenceServerException as error:
            step = steps.send(error)
            continue
        steps.close()
        return result
