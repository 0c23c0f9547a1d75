"""Moving responses from model threads onto a frontend's event loop: one wake-up per burst.

Responses come from whichever thread produced them (an instance's worker thread, a stub's
reader, a decoupled model's own thread), and the frontends handle them on their asyncio loop.
``loop.call_soon_threadsafe`` per response wakes the loop (a write to its self-pipe, a system
call on the producing thread and one on the loop) every time.  :class:`Delivery` queues the
calls instead and wakes the loop only when its queue was empty, so a burst of responses (eight
clients' answers, a decoupled model's stream) costs one wake-up, and the loop runs the whole
burst in one go, in arrival order.

:class:`Responses` is the per-request inbox the frontends await: what ``asyncio.Queue`` gave
them, without its locks and bookkeeping (one reader, one producer side).

Both HTTP and gRPC frontends of one server share their loop's :class:`Delivery`
(:func:`delivery_for`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Delivery", "Responses", "delivery_for"]

log = logging.getLogger("mock_server.delivery")

_T = TypeVar("_T")


class Delivery:
    """Runs callbacks handed over from any thread on ``loop``, waking it once per burst.

    Parameters
    ----------
    loop : asyncio.AbstractEventLoop
        The loop the callbacks run on.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # The loop's thread, known from its first drain: calls made there (a stub's reply read
        # by the loop itself) need no wake-up.
        self._thread: int | None = None
        self._calls: collections.deque[tuple[Callable[..., None], tuple[Any, ...]]] = (
            collections.deque()
        )
        # True from the moment a drain is scheduled until it starts: while set, producers only
        # append.  The GIL orders a producer's append before its read of the flag, and the
        # drain clears the flag before it reads the queue, so no call is left behind; two
        # producers that both see it clear schedule two drains, which is harmless.
        self._armed = False

    def call(self, callback: Callable[..., None], *args: Any) -> None:
        """Run ``callback(*args)`` on the loop soon; callable from any thread.

        A closed loop drops the call (nobody is waiting for it any more).
        """
        self._calls.append((callback, args))
        if not self._armed:
            self._armed = True
            if threading.get_ident() == self._thread:
                self._loop.call_soon(self._drain)
                return
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed
                self._calls.clear()

    def run(self, callback: Callable[..., None], *args: Any) -> None:
        """Run ``callback(*args)`` at once when called on the loop's thread with no call
        queued before it (a stub's reply the loop read itself), otherwise as :meth:`call`.

        For callbacks that only hand a result over (set a future, fill an inbox), which may
        run inside the producer's stack.  Run at once, the result is there before the
        awaiting coroutine looks (a reply read while the request was being submitted), or
        wakes it one pass of the loop earlier: without it, the loop runs a drain first and
        the coroutine's wake-up on the pass after.
        """
        if not self._calls and threading.get_ident() == self._thread:
            try:
                callback(*args)
            except Exception:  # as in a drain: the producer's stack must not see it
                log.exception("delivering a response failed")
            return
        self.call(callback, *args)

    def _drain(self) -> None:
        self._thread = threading.get_ident()
        self._armed = False
        calls = self._calls
        while calls:
            callback, args = calls.popleft()
            try:
                callback(*args)
            except Exception:  # one failing callback must not strand the others
                log.exception("delivering a response failed")


_deliveries: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Delivery] = (
    weakref.WeakKeyDictionary()
)
_deliveries_lock = threading.Lock()


def delivery_for(loop: asyncio.AbstractEventLoop) -> Delivery:
    """The :class:`Delivery` of ``loop`` (one per loop, shared by the frontends on it).

    Exactly one, whichever threads ask first: a loop's calls run in the order they were made
    only because they go through one queue.  (Made without the lock, two threads asking at
    once, a stub's reader and the loop, say, could each make one; a response handed over
    through the one that lost could then run after the next response of its request.)
    """
    delivery = _deliveries.get(loop)
    if delivery is None:
        with _deliveries_lock:
            delivery = _deliveries.get(loop)
            if delivery is None:
                delivery = _deliveries[loop] = Delivery(loop)
    return delivery


class Responses(Generic[_T]):
    """The responses of one request, put from any thread, awaited in order on the loop.

    Parameters
    ----------
    delivery : Delivery
        The delivery of the loop that awaits them.
    """

    __slots__ = ("_delivery", "_items", "_waiter")

    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery
        self._items: collections.deque[_T] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: _T) -> None:
        """Hand ``item`` over (any thread; the request's response callback)."""
        self._delivery.run(self._arrived, item)

    def _arrived(self, item: _T) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> _T:
        """The next item, waiting for it if none has arrived."""
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()
