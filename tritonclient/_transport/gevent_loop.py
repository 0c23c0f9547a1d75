"""A private gevent hub on a thread of its own, which runs a client's handed-over requests.

geventhttpclient objects belong to the hub (thread) that created them: touching them from
another thread raises greenlet errors ("cannot switch to a different thread").  Plain calls of
the HTTP client run in the calling thread with that thread's own ``HTTPClient`` (see
:mod:`tritonclient.http._client`); the requests that must not run there, ``async_infer``
(which returns at once) and calls made from inside a gevent hub callback, are handed to this
loop.  :class:`GeventLoop` starts one real OS thread with its own hub, creates an
``HTTPClient`` there, and runs each request in a greenlet of that hub.  Callers hand work over
with a thread-safe async watcher and wait on a plain lock, so any thread may submit, ``close()``
and garbage collection work from any thread, and the caller's program needs no monkey-patching
(nor is it disturbed if it does monkey-patch).
"""

from __future__ import annotations

import collections
import contextlib
import sys
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import gevent  # type: ignore[import-untyped]  # gevent ships no type information
import gevent.event  # type: ignore[import-untyped]  # gevent ships no type information
import gevent.monkey  # type: ignore[import-untyped]  # gevent ships no type information
import gevent.pool  # type: ignore[import-untyped]  # gevent ships no type information

__all__ = ["GeventLoop", "Job"]

T = TypeVar("T")
R = TypeVar("R")

# Real OS threads and locks even when the program monkey-patched ``threading``.
_start_new_thread: Callable[..., int] = gevent.monkey.get_original("_thread", "start_new_thread")
_allocate_lock: Callable[[], Any] = gevent.monkey.get_original("_thread", "allocate_lock")


def _released(lock: Any) -> bool:
    """Whether ``lock``, held from the start until an event, has been released (the look
    leaves it released)."""
    if lock.acquire(False):
        lock.release()
        return True
    return False


class Job(Generic[T]):
    """The outcome of one piece of work handed to a :class:`GeventLoop`."""

    __slots__ = ("_done", "_error", "_fn", "_result")

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn: Callable[[], T] | None = fn
        self._done = _allocate_lock()
        self._done.acquire()
        self._result: T | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        fn, self._fn = self._fn, None
        try:
            if fn is None:
                raise RuntimeError("job already run")
            self._result = fn()
        except BaseException as exc:  # handed to the waiting thread
            self._error = exc
        finally:
            self._done.release()

    @staticmethod
    def run_now(fn: Callable[[], R]) -> Job[R]:
        """A job of ``fn``, run at once in the calling thread."""
        job: Job[R] = Job(fn)
        job._run()
        return job

    def _fail(self, error: BaseException) -> None:
        self._fn = None
        self._error = error
        self._done.release()

    def done(self) -> bool:
        """Whether the work has finished (successfully or not)."""
        return _released(self._done)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the work has finished; False if ``timeout`` seconds passed first."""
        if timeout is None:
            got = self._done.acquire()
        else:
            got = self._done.acquire(True, max(0.0, timeout))
        if got:
            self._done.release()
        return bool(got)

    def result(self) -> T:
        """The return value of the work, or raise its exception (call after :meth:`wait`)."""
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]


_STOP = object()


class GeventLoop:
    """One OS thread running a gevent hub, on which all the given work runs as greenlets.

    Parameters
    ----------
    setup : callable
        Called once in the loop's thread; returns the object the work uses (the
        ``HTTPClient``) and a function closing it.
    max_greenlets : int or None
        At most this many pieces of work at once (None: no limit).
    """

    def __init__(
        self, setup: Callable[[], tuple[Any, Callable[[], None]]], max_greenlets: int | None
    ) -> None:
        self._queue: collections.deque[Any] = collections.deque()
        self._started = _allocate_lock()
        self._started.acquire()
        self._finished = _allocate_lock()
        self._finished.acquire()
        self._setup_error: BaseException | None = None
        self._watcher: Any = None
        self._closed = False
        self._lock = _allocate_lock()
        self._thread_id = _start_new_thread(self._main, (setup, max_greenlets))
        self._started.acquire()
        self._started.release()
        if self._setup_error is not None:
            self._finished.acquire()
            raise self._setup_error

    # -- in the loop's thread -----------------------------------------------------------------

    def _main(self, setup: Callable[[], tuple[Any, Callable[[], None]]], limit: int | None) -> None:
        hub = gevent.get_hub()
        try:
            try:
                self.resource, close = setup()
            except BaseException as exc:  # re-raised by the constructor
                self._setup_error = exc
                self._started.release()
                return
            wakeup = gevent.event.Event()
            self._watcher = hub.loop.async_()
            self._watcher.start(wakeup.set)
            self._started.release()
            pool = gevent.pool.Pool(limit)
            stopping = False
            while not stopping:
                wakeup.wait()
                wakeup.clear()
                while self._queue:
                    job = self._queue.popleft()
                    if job is _STOP:
                        stopping = True
                        continue
                    pool.spawn(job._run)
            pool.join()
            with self._lock:
                while self._queue:  # pragma: no cover - submit refuses once closed
                    job = self._queue.popleft()
                    if job is not _STOP:
                        job._fail(_closed_error())
                self._watcher.close()
            with contextlib.suppress(Exception):  # closing must not fail the thread
                close()
        except BaseException:  # pragma: no cover - print rather than lose it
            sys.excepthook(*sys.exc_info())
        finally:
            try:
                hub.destroy(destroy_loop=True)
            finally:
                self._finished.release()

    # -- from any thread ------------------------------------------------------------------------

    def submit(self, fn: Callable[[], T]) -> Job[T]:
        """Run ``fn()`` in a greenlet of the loop; returns at once.

        Raises
        ------
        InferenceServerException
            If the loop is closed.
        """
        job = Job(fn)
        with self._lock:
            if self._closed:
                raise _closed_error()
            self._queue.append(job)
            self._watcher.send()
        return job

    def close(self, wait: bool = True, timeout: float | None = None) -> None:
        """Finish the submitted work, close the resource and end the thread.

        Parameters
        ----------
        wait : bool
            Wait for the thread to end (not when called from the loop's own thread).
        timeout : float, optional
            Wait at most this long.
        """
        if self._closed:
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.append(_STOP)
            self._watcher.send()
        if wait and _get_ident() != self._thread_id:
            got = self._finished.acquire(True, -1 if timeout is None else timeout)
            if got:
                self._finished.release()

    def is_alive(self) -> bool:
        """Whether the loop's thread is still running."""
        return not _released(self._finished)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed


_get_ident: Callable[[], int] = gevent.monkey.get_original("_thread", "get_ident")


def _closed_error() -> BaseException:
    from tritonclient.utils import InferenceServerException

    return InferenceServerException(msg="the client is closed")
