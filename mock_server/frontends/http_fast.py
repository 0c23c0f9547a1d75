"""The HTTP frontend's fast path: small, plain inference requests answered without aiohttp.

aiohttp's request machinery (its request, stream reader, multidict, URL and response objects,
its writer) is most of what a small inference request costs the frontend beyond the codec and
the core: ``benchmarks/bench_engines.py`` measured the same request through the codec and core
at 996 us of server CPU on aiohttp's low-level server and 787 us on an ``asyncio.Protocol``
over httptools (the llhttp parser aiohttp uses too), and 90 against 19 us for the engines
alone.

Every connection therefore starts on :class:`_Connection`.  It reads each request's header
block with httptools and answers the request itself when it is plain: ``POST
/v2/models/<model>[/versions/<v>]/infer`` over HTTP/1.1, kept alive, a ``Content-Length`` body
of at most :data:`FAST_BODY_BYTES`, no ``Transfer-Encoding``, ``Content-Encoding``, ``Expect``
or ``Upgrade``, printable ASCII headers, a path with nothing to normalize or decode, and a
frontend with no restricted inference API, no header forwarding and no access log (see
:meth:`FastInfer.target`).  Such a request runs through the same endpoint as aiohttp's
(:meth:`~mock_server.frontends.http_infer.InferEndpoint.answer`), so its answers, errors and
statistics are the same; the response's header lines are written as aiohttp writes them.

The first request it does not take hands the connection over to aiohttp's request handler for
good, with the bytes of that request and of whatever followed it: every other endpoint and
every unusual request (malformed, chunked, compressed, pipelined behind one of those, ...) is
served by aiohttp as before, with its own checks and errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import http
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import httptools
from aiohttp.http import SERVER_SOFTWARE
from multidict import CIMultiDict, CIMultiDictProxy

from tritonclient._codec import http_body, http_server

from .http_framing import LenientServer
from .http_infer import HttpInferRequest
from .http_support import HttpError, error_for, expected_error

__all__ = ["FAST_BODY_BYTES", "FastInfer", "FastInferServer"]

log = logging.getLogger("mock_server.http")

#: The largest body the fast path reads (larger ones are read, and decoded off the loop, by
#: aiohttp's path).
FAST_BODY_BYTES = 1 << 20
#: A header block not ended within this many bytes goes to aiohttp (and its limits).
_MAX_HEAD = 8190
#: Bytes a client may send ahead while its previous request is answered before reading pauses.
_MAX_AHEAD = 2 * FAST_BODY_BYTES
#: Headers that make a request aiohttp's to read (framing, encodings, protocol changes).
_UNTAKEN_HEADERS = frozenset(
    {b"transfer-encoding", b"content-encoding", b"expect", b"upgrade", b"connection"}
)
#: Responses up to this size are written as one buffer.
_JOIN_BYTES = 1 << 16
#: Control characters (tab aside): llhttp is lenient with some that aiohttp refuses.
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
#: What a path must avoid to be used as sent: query, fragment, dot segments, empty segments.
_UNPLAIN_PATH = re.compile(rb"[?#]|//|/\.")


@dataclass(frozen=True)
class FastInfer:
    """What the fast path needs from its frontend.

    Attributes
    ----------
    target : callable
        ``target(path)``: the model name and version (-1: the policy's) of a path the fast
        path may answer (the inference route, the frontend's settings allowing), else None.
    answer : callable
        The endpoint's encoded response to an :class:`~.http_infer.HttpInferRequest`, or the
        :class:`HttpError` (or core or codec error) to answer with
        (:meth:`~mock_server.frontends.http_infer.InferEndpoint.answer`).
    """

    target: Callable[[str], tuple[str, int] | None]
    answer: Callable[[HttpInferRequest], Awaitable[http_body.EncodedBody]]


class FastInferServer(LenientServer):
    """aiohttp's low-level server whose connections start on the fast path.

    Parameters
    ----------
    handler : callable
        aiohttp's request handler (for the connections handed over).
    fast : FastInfer
        The fast path's frontend.
    **kwargs
        As ``aiohttp.web.Server``.
    """

    def __init__(self, handler: Any, *, fast: FastInfer, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.fast = fast
        self._fast_connections: set[_Connection] = set()
        #: Requests answered on the fast path, and connections handed over (for tests).
        self.fast_requests = 0
        self.handed_over = 0

    def __call__(self) -> Any:
        return _Connection(self)

    def aiohttp_handler(self) -> Any:
        """A new aiohttp request handler (a protocol) for a connection handed over."""
        return super().__call__()

    def pre_shutdown(self) -> None:
        super().pre_shutdown()
        for connection in list(self._fast_connections):
            connection.close_when_idle()

    async def shutdown(self, timeout: float | None = None) -> None:
        busy = [c.task for c in self._fast_connections if c.task is not None]
        if busy:
            await asyncio.wait(busy, timeout=timeout)
        for connection in list(self._fast_connections):
            connection.abort()
        await super().shutdown(timeout)


class _Head:
    """httptools' callbacks for one header block."""

    __slots__ = ("complete", "raw", "url")

    def __init__(self) -> None:
        self.url = b""
        self.raw: list[tuple[bytes, bytes]] = []
        self.complete = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.raw.append((name, value))

    def on_headers_complete(self) -> None:
        self.complete = True


def _read_head(block: bytes) -> tuple[_Head, int] | None:
    """The parsed header block of a request the fast path takes, and its body's length; None
    for any other request."""
    head = _Head()
    parser = httptools.HttpRequestParser(head)
    try:
        parser.feed_data(block)
    except httptools.HttpParserError:
        return None
    if (
        not head.complete
        or parser.get_method() != b"POST"
        or parser.get_http_version() != "1.1"
        or not parser.should_keep_alive()
        or not head.url.startswith(b"/")
        or not head.url.isascii()
        or _UNPLAIN_PATH.search(head.url)
    ):
        return None
    length = None
    for name, value in head.raw:
        lower = name.lower()
        if lower == b"connection" and value.lower() == b"keep-alive":
            continue  # HTTP/1.1's default
        if lower in _UNTAKEN_HEADERS or not value.isascii() or _CONTROL.search(value):
            return None
        if lower == b"content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
    if length is None or length > FAST_BODY_BYTES:
        return None
    return head, length


class _Date:
    """The ``Date`` header's value, made once a second as aiohttp makes it."""

    second = -1
    text = ""

    @classmethod
    def now(cls) -> str:
        second = int(time.time())
        if second != cls.second:
            cls.second, cls.text = second, email.utils.formatdate(second, usegmt=True)
        return cls.text


def _response_head(status: int, headers: Iterable[tuple[str, str]], length: int) -> bytes:
    """A response's status line and header lines, in the order aiohttp writes them."""
    lines = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"]
    lines.extend(f"{name}: {value}\r\n" for name, value in headers)
    lines.append(
        f"Content-Length: {length}\r\nDate: {_Date.now()}\r\nServer: {SERVER_SOFTWARE}\r\n\r\n"
    )
    return "".join(lines).encode("latin-1")


def _error_bytes(error: HttpError) -> list[bytes]:
    body = http_server.encode_error(error.message)
    headers = [*error.headers.items(), ("Content-Type", error.content_type)]
    return [_response_head(error.status, headers, len(body)), body]


class _Connection(asyncio.Protocol):
    """One client connection, on the fast path until its first request the fast path does not
    take (see the module's docstring); requests are answered one at a time, in order."""

    def __init__(self, server: FastInferServer) -> None:
        self._server = server
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._closing = False
        self._paused_reading = False
        self._writable: asyncio.Future[None] | None = None
        #: The request being answered.
        self.task: asyncio.Task[None] | None = None

    # -- asyncio's protocol ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are no asyncio.Transport subclass, but have its methods.
        self._transport = cast(asyncio.Transport, transport)
        self._server._fast_connections.add(self)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self.task is None:
            self._next()
        elif len(self._buffer) > _MAX_AHEAD and self._transport is not None:
            self._paused_reading = True
            self._transport.pause_reading()

    def eof_received(self) -> bool | None:
        return None  # as aiohttp: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self._server._fast_connections.discard(self)
        self._transport = None
        if self.task is not None:
            self.task.cancel()  # the client went away: so does its request
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    # -- closing ---------------------------------------------------------------------------------
    def close_when_idle(self) -> None:
        """Close after the request being answered (now when there is none)."""
        self._closing = True
        if self.task is None and self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self._transport is not None:
            self._transport.close()

    # -- requests --------------------------------------------------------------------------------
    def _next(self) -> None:
        """Start on the next request in the buffer, once its header block and body are in;
        hand the connection over at the first one the fast path does not take."""
        transport = self._transport
        if transport is None or self._closing:
            return
        buffer = self._buffer
        if not buffer:
            return
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > _MAX_HEAD:
                self._hand_over()
            return
        body_start = end + 4
        read = _read_head(bytes(buffer[:body_start]))
        server = self._server
        target = server.fast.target(read[0].url.decode("ascii")) if read is not None else None
        if read is None or target is None:
            self._hand_over()
            return
        head, length = read
        if len(buffer) < body_start + length:
            return  # the rest of the body is on its way
        body = bytes(buffer[body_start : body_start + length])
        del buffer[: body_start + length]
        server.fast_requests += 1
        self.task = asyncio.get_running_loop().create_task(self._answer(head, body, *target))

    async def _answer(self, head: _Head, body: bytes, name: str, version: int) -> None:
        raw = head.raw
        headers = CIMultiDictProxy(
            CIMultiDict((n.decode("ascii"), v.decode("ascii")) for n, v in raw)
        )

        async def read_body() -> bytes:
            return body

        try:
            request = HttpInferRequest(headers, raw, read_body, name, version)
            encoded = await self._server.fast.answer(request)
            head_bytes = _response_head(200, encoded.headers().items(), encoded.nbytes)
            chunks: list[bytes | memoryview]
            if encoded.nbytes <= _JOIN_BYTES:
                chunks = [head_bytes + encoded.tobytes()]
            else:  # sent from the tensors (the transport copies only what it cannot send)
                chunks = [head_bytes, *(memoryview(c).cast("B") for c in encoded.chunks)]
        except asyncio.CancelledError:
            self.task = None
            raise
        except Exception as exc:
            if not expected_error(exc):
                log.exception("unexpected error handling POST %s", head.url.decode("ascii"))
            chunks = [*_error_bytes(error_for(exc))]
        transport = self._transport
        if transport is None:
            self.task = None
            return
        transport.writelines(chunks)
        if self._writable is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._writable
        self.task = None
        if self._closing:
            transport.close()
            return
        if self._paused_reading:
            self._paused_reading = False
            transport.resume_reading()
        self._next()

    def _hand_over(self) -> None:
        """Give the connection, and the bytes not yet answered, to aiohttp for good."""
        transport = self._transport
        assert transport is not None
        server = self._server
        server._fast_connections.discard(self)
        server.handed_over += 1
        handler = server.aiohttp_handler()
        transport.set_protocol(handler)
        handler.connection_made(transport)
        if self._writable is not None:
            handler.pause_writing()
        if self._paused_reading:
            self._paused_reading = False
            transport.resume_reading()
        data = bytes(self._buffer)
        self._buffer.clear()
        self._transport = None
        if data:
            handler.data_received(data)
