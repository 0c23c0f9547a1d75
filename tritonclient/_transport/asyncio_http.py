"""The lean path of the asyncio HTTP client: one :class:`asyncio.Protocol` per connection.

aiohttp's request machinery (its request and response objects, header multidicts, the
connector's bookkeeping and timers, the payload writer) costs the client more CPU per small
request than the exchange itself (``benchmarks/bench_hotpath.py``).  :class:`LeanPool` keeps
up to ``limit`` keep-alive connections per event loop; each is a plain protocol that writes
the request with one ``write`` and parses the answer with the same llhttp parser as the sync
client's blocking sockets (:mod:`.http11`).  The pool serves plain-HTTP requests whose body
is one piece (small requests: the call's ``body``); TLS, large request bodies (written from
their buffers with flow control) and streamed answers stay with aiohttp.

Every failure is an ``OSError``, ``EOFError``, ``TimeoutError`` or ``HTTPParseError`` for the
caller to map; a connection that failed, was cancelled or saw bytes it did not ask for is
closed, never reused.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

from . import http11
from .http11 import Answer, ClosedBeforeAnswer, RequestHead

__all__ = ["LeanPool"]

#: One answer: status, headers (lower-case names), body, whether the connection may be reused.
Reply = tuple[int, dict[str, str], "bytes | memoryview", bool]


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, its answer parsed as it arrives."""

    def __init__(self, head: RequestHead) -> None:
        self.head = head
        self.transport: asyncio.Transport | None = None
        #: The answer being waited for (None between requests).
        self.waiter: asyncio.Future[Reply] | None = None
        self.answer: Answer | None = None
        #: The buffer a large body is read into, and how much of it has come.
        self.large: memoryview | None = None
        self.got = 0
        #: The connection cannot carry another request (closed, or out of step).
        self.broken = False
        #: It carried a request before this one (it may have been closed by the server).
        self.reused = False

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():  # bytes nobody asked for: out of step
            self.close()
            return
        try:
            if self.large is not None:
                self._large_piece(data)
                return
            answer = self.answer
            if answer is None:
                known = http11.known_answer(data)
                if known is not None:  # the usual answer, whole in one read: not parsed again
                    self._finish_known(known)
                    return
                answer = self.answer = http11.start_answer(data)
                if answer.complete:
                    http11.remember_answer(data, answer)
            else:
                http11.feed(answer, data)
            if not answer.headers_done:
                return
            if answer.complete:
                self._finish(http11.body(answer), not answer.extra)
                return
            length = http11.large_body_length(answer)
            if length is not None:
                self._start_large(answer, length)
        except (http11.HTTPParseError, EOFError) as error:
            self._fail(error)

    def eof_received(self) -> bool:
        answer = self.answer
        if self.waiter is not None and not self.waiter.done() and self.large is None:
            if answer is None:
                self._fail(ClosedBeforeAnswer("the connection closed before any response"))
            else:
                http11.end_of_connection(answer)  # the end of a body read until the connection ends
                if answer.complete:
                    self._finish(http11.body(answer), False)
                else:
                    self._fail(EOFError("the connection closed before the end of the response"))
        self.broken = True
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.broken = True
        if self.waiter is not None and not self.waiter.done():
            if exc is not None:
                self._fail(exc)
            elif self.answer is None:
                self._fail(ClosedBeforeAnswer("the connection closed before any response"))
            else:
                self._fail(EOFError("the connection closed before the end of the response"))

    # -- the exchange -------------------------------------------------------------------------

    def request(self, data: bytes) -> asyncio.Future[Reply]:
        """Write a whole request (head and body); the future of its answer."""
        assert self.transport is not None
        waiter: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.waiter = waiter
        self.answer = None
        self.transport.write(data)
        return waiter

    def _start_large(self, answer: Answer, length: int) -> None:
        """Read the rest of a large body straight into one buffer (``body_buffer``): the body
        once in memory, not pieces joined at the end."""
        self.large, self.got = http11.body_buffer(answer, length)
        if self.got == length:
            self._large_piece(b"")

    def _large_piece(self, data: bytes) -> None:
        view = self.large
        assert view is not None
        end = self.got + len(data)
        if end > len(view):
            raise EOFError(f"the response body is longer than its {len(view)} byte Content-Length")
        view[self.got : end] = data
        self.got = end
        if end == len(view):
            assert self.answer is not None
            self.large = None
            self._finish(view.toreadonly(), self.answer.should_keep_alive())

    def _finish(self, result: bytes | memoryview, reusable: bool) -> None:
        answer, waiter = self.answer, self.waiter
        assert answer is not None and waiter is not None
        self.waiter = None
        reusable = reusable and answer.should_keep_alive() and not self.broken
        if not reusable:
            self.close()
        waiter.set_result((answer.get_code(), answer.headers, result, reusable))

    def _finish_known(self, known: Reply) -> None:
        """Hand over an answer read by :func:`http11.known_answer`."""
        waiter = self.waiter
        assert waiter is not None
        self.waiter = None
        status, headers, result, reusable = known
        if not reusable or self.broken:
            self.close()
            known = (status, headers, result, False)
        waiter.set_result(known)

    def _fail(self, error: BaseException) -> None:
        waiter, self.waiter = self.waiter, None
        self.close()
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def close(self) -> None:
        """Close the connection (any number of times)."""
        self.broken = True
        self.large = None
        if self.transport is not None:
            self.transport.close()


class LeanPool:
    """Up to ``limit`` keep-alive connections to one server, for one event loop.

    Parameters
    ----------
    host : str
        The server's host name or address.
    port : int
        Its port.
    limit : int
        Connections at once (aiohttp's connector limit); a request waits for a free one.
    timeout : float or None
        Bound of each whole request: the wait for a connection, connecting, sending and
        receiving (seconds).
    defaults : dict of str to str
        Headers every request carries unless the caller gives them.
    """

    def __init__(
        self, host: str, port: int, limit: int, timeout: float | None, defaults: dict[str, str]
    ) -> None:
        self._host = host
        self._port = port
        self._limit = max(1, limit)
        self._timeout = timeout
        self._defaults = defaults
        self._idle: collections.deque[_Connection] = collections.deque()
        self._open = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False

    def close(self) -> None:
        """Close the idle connections; those in use close when their request ends."""
        self._closed = True
        while self._idle:
            self._idle.popleft().close()

    async def send(self, method: str, path: str, headers: dict[str, str], data: bytes) -> Any:
        """One request with a body of one piece; its answer as ``(status, headers, body)``.

        A kept-alive connection the server closed meanwhile is replaced once for the methods
        that may be repeated (as the sync client does).

        Raises
        ------
        TimeoutError
            When the whole request took longer than the pool's timeout.
        OSError, EOFError, HTTPParseError, ValueError
            Any other failure.
        """
        loop = asyncio.get_running_loop()
        deadline = None if self._timeout is None else loop.time() + self._timeout
        conn = await self._acquire(loop, deadline)
        try:
            reply = await self._exchange(loop, conn, method, path, headers, data, deadline)
        except ClosedBeforeAnswer:
            if not conn.reused or not http11.idempotent(method):
                raise
            conn = await self._acquire(loop, deadline, fresh=True)
            reply = await self._exchange(loop, conn, method, path, headers, data, deadline)
        return reply

    async def _exchange(
        self,
        loop: asyncio.AbstractEventLoop,
        conn: _Connection,
        method: str,
        path: str,
        headers: dict[str, str],
        data: bytes,
        deadline: float | None,
    ) -> tuple[int, dict[str, str], bytes | memoryview]:
        timer = None
        try:
            waiter = conn.request(conn.head(method, path, headers, len(data)) + data)
            if deadline is not None:
                timer = loop.call_at(deadline, _expire, waiter)
            status, reply_headers, result, reusable = await waiter
        except BaseException:  # failed, timed out or cancelled: the connection is done
            conn.close()
            self._release(None)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        self._release(conn if reusable else None)
        return status, reply_headers, result

    async def _acquire(
        self, loop: asyncio.AbstractEventLoop, deadline: float | None, fresh: bool = False
    ) -> _Connection:
        """An idle connection (``fresh``: a new one), waiting for a free slot if need be."""
        while True:
            if self._closed:
                raise OSError("the client is closed")
            while self._idle and not fresh:
                conn = self._idle.pop()
                if not conn.broken:
                    conn.reused = True
                    return conn
                self._open -= 1
            if self._open < self._limit:
                break
            slot: asyncio.Future[None] = loop.create_future()
            self._waiting.append(slot)
            timer = None if deadline is None else loop.call_at(deadline, _expire, slot)
            try:
                await slot
            except BaseException:
                if slot.done() and not slot.cancelled() and slot.exception() is None:
                    self._wake()  # woken, then cancelled: the free slot goes to the next one
                raise
            finally:
                if timer is not None:
                    timer.cancel()
        self._open += 1
        try:
            remaining = None if deadline is None else max(deadline - loop.time(), 0.0)
            head = RequestHead(self._host, self._port, self._defaults)
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(head), self._host, self._port),
                remaining,
            )
        except BaseException:
            self._release(None)
            raise
        conn.reused = False
        return conn

    def _release(self, conn: _Connection | None) -> None:
        """Give a connection back (None: it is closed), and wake one request waiting for it."""
        if conn is not None and not conn.broken and not self._closed:
            self._idle.append(conn)
        else:
            if conn is not None:
                conn.close()
            self._open -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            slot = self._waiting.popleft()
            if not slot.done():
                slot.set_result(None)
                break


def _expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError("the request's time limit passed"))
