"""The sync HTTP transport: geventhttpclient, without monkey-patching the caller's program.

geventhttpclient objects belong to the thread (gevent hub) that created them, so the transport
keeps one ``HTTPClient`` per thread that uses it and never touches one from another thread.
There are two paths:

Direct path (:meth:`GeventTransport.send` from a plain thread or greenlet)
    The call runs in the calling thread, with that thread's own connections for this transport
    (made there at the thread's first call, kept in a thread-local registry).  No hand-off to
    another thread.  When nothing else could run on the thread meanwhile (no gevent hub, or
    one with nothing to do: :func:`_may_block`), the call goes over a blocking OS socket
    (:mod:`tritonclient._transport.blocking`, the lean path: a fraction of gevent's CPU per
    call); otherwise (a greenlet of a gevent program whose other greenlets wait on I/O, or
    TLS) on that thread's own gevent hub with that thread's own ``HTTPClient``, as NVIDIA's
    client does, and the call only blocks the calling greenlet.
Hub thread (:meth:`GeventTransport.submit`, and :meth:`send` from inside a hub callback)
    Each transport starts one private OS thread with its own gevent hub
    (:mod:`tritonclient._transport.gevent_loop`), which runs these requests as greenlets; the
    caller waits, when it waits, on a plain lock.

Consequences: the transport is thread-safe (each calling thread has up to ``concurrency``
connections of its own, the hub thread another ``concurrency``); :meth:`close` and garbage
collection work from any thread and never raise greenlet errors; the idle keep-alive
connections of *other* threads are closed by those threads at their next call through any
transport of this module, or when they exit.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import gevent  # type: ignore[import-untyped]  # gevent ships no type information
import gevent.monkey  # type: ignore[import-untyped]  # gevent ships no type information
import gevent.socket  # type: ignore[import-untyped]  # gevent ships no type information
import numpy as np
from gevent._hub_local import (  # type: ignore[import-untyped]  # gevent ships no type information
    get_hub_if_exists as _get_hub_if_exists,
)
from gevent.hub import Hub  # type: ignore[import-untyped]  # gevent ships no type information
from geventhttpclient import HTTPClient
from geventhttpclient._parser import HTTPResponseParser
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from tritonclient.utils import InferenceServerException, raise_error

from .blocking import ClosedBeforeAnswer, Connection, idempotent
from .gevent_loop import GeventLoop, Job
from .http import HttpCall, HttpReply, transport_error

__all__ = ["GeventStream", "GeventTransport"]

T = TypeVar("T")

#: Bytes read from the socket at a time.
_READ_BLOCK = 64 * 1024

# Real OS-thread primitives even when the program monkey-patched ``threading``.
_allocate_lock: Callable[[], Any] = gevent.monkey.get_original("_thread", "allocate_lock")
_ThreadLocal: type = gevent.monkey.get_original("_thread", "_local")
_getcurrent: Callable[[], Any] = gevent.getcurrent
_get_ident: Callable[[], int] = gevent.monkey.get_original("_thread", "get_ident")


class _Shared:
    """The state of one client that its per-thread ``HTTPClient`` entries share.

    It never references the client itself, so the client can be garbage collected while other
    threads still hold entries for it.
    """

    __slots__ = ("address", "closed", "idle", "inflight", "lock", "make_conn", "make_stub")

    def __init__(
        self,
        make_stub: Callable[[], HTTPClient],
        make_conn: Callable[[], Connection] | None = None,
        address: tuple[str, int] = ("", 0),
    ) -> None:
        self.make_stub = make_stub
        self.address = address
        #: Opens a connection for the lean path (None: no lean path, e.g. with TLS).
        self.make_conn = make_conn
        self.closed = False
        self.lock = _allocate_lock()
        #: Direct calls in progress, in all threads.
        self.inflight = 0
        #: Held while ``inflight > 0``; ``close()`` acquires it to wait for those calls.
        self.idle = _allocate_lock()


class _ThreadStub:
    """One thread's connections for one client: its lean connection and its ``HTTPClient``
    (made on first use); used and closed only in that thread."""

    __slots__ = ("__weakref__", "_stub", "active", "closed", "conn", "shared", "spare_streams")

    def __init__(self, shared: _Shared) -> None:
        self.shared = shared
        self.closed = False
        self._stub: HTTPClient | None = None
        #: The idle keep-alive connection of the lean path, if any.
        self.conn: Connection | None = None
        #: Calls and open streams of this thread (of its greenlets) using this entry now.
        self.active = 0
        #: Idle ``HTTPClient`` s of finished streams, each keeping its connection alive for the
        #: next stream (a stream holds a connection of its own for as long as it is read, so
        #: that the thread's other calls never wait for it).
        self.spare_streams: list[HTTPClient] = []

    @property
    def stub(self) -> HTTPClient:
        """The thread's ``HTTPClient`` (made here on first use: a thread that only takes the
        lean path never makes one, nor a gevent hub)."""
        if self._stub is None:
            self._stub = self.shared.make_stub()
        return self._stub

    @property
    def has_stub(self) -> bool:
        """Whether the thread made its ``HTTPClient``."""
        return self._stub is not None

    def close(self) -> None:
        self.closed = True
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()
        stub, self._stub = self._stub, None
        spares, self.spare_streams = self.spare_streams, []
        for each in [stub, *spares]:
            if each is not None:
                with contextlib.suppress(Exception):  # closing idle connections must not fail
                    each.close()

    def __del__(self) -> None:  # the thread-local registry is released in its own thread
        self.close()


class _Registry(_ThreadLocal):  # type: ignore[misc]  # the C type has no stub
    """Per OS thread: the thread's ``HTTPClient`` of each client it called."""

    def __init__(self) -> None:
        self.stubs: dict[_Shared, _ThreadStub] = {}
        self.seen = -1


_registry = _Registry()
_closings = itertools.count()
#: Changes whenever a client is closed: threads then close their entries for closed clients.
_generation = next(_closings)


def _client_closed() -> None:
    global _generation  # one counter for the whole module
    _generation = next(_closings)


def _sweep(registry: _Registry) -> None:
    """Close the calling thread's idle entries for closed clients."""
    registry.seen = _generation
    for shared, entry in list(registry.stubs.items()):
        if shared.closed and entry.active == 0:
            registry.stubs.pop(shared, None)
            entry.close()


def _thread_entry(shared: _Shared) -> _ThreadStub:
    """The calling thread's entry for ``shared``'s client, made on the thread's first call
    (and again after it was closed)."""
    registry = _registry
    if registry.seen != _generation:
        _sweep(registry)
    entry = registry.stubs.get(shared)
    if entry is None or entry.closed:
        entry = registry.stubs[shared] = _ThreadStub(shared)
    return entry


def _in_hub() -> bool:
    """Whether the caller runs in a gevent hub greenlet (where it must not block on I/O)."""
    return isinstance(_getcurrent(), Hub)


def _may_block(hub: Any) -> bool:
    """Whether a call may block the calling thread in the OS: the thread has no gevent hub
    (``hub`` None), or one that nothing else could run on meanwhile (see
    :func:`_thread_is_idle`)."""
    if hub is None:
        return True
    loop = hub.loop
    return bool(loop.activecnt == 0 and loop.pendingcnt == 0 and len(loop._callbacks) == 0)


#: Failures of a reused connection before any answer: the server had closed it.
_STALE_ERRNOS = frozenset({errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED})


def _perform_blocking(entry: _ThreadStub, call: HttpCall[Any], limit: float | None) -> HttpReply:
    """One request on the thread's lean connection (see :mod:`.blocking`), with the failures
    of :func:`_perform`."""
    deadline = None if limit is None else time.monotonic() + limit
    conn, entry.conn = entry.conn, None
    make_conn = entry.shared.make_conn
    assert make_conn is not None
    try:
        if conn is not None and conn.is_stale():
            conn.close()
            conn = None
        fresh = conn is None
        if conn is None:
            conn = make_conn()
        try:
            status, headers, body, reusable = conn.exchange(
                call.method, call.path, call.headers, call.body, call.chunks, deadline
            )
        except (EOFError, OSError) as error:
            # A kept-alive connection the server closed meanwhile: once more on a new one,
            # for the methods that may be repeated (as geventhttpclient).
            broke = isinstance(error, ClosedBeforeAnswer)
            broke = broke or getattr(error, "errno", None) in _STALE_ERRNOS
            if fresh or not broke or not idempotent(call.method):
                raise
            conn = make_conn()
            status, headers, body, reusable = conn.exchange(
                call.method, call.path, call.headers, call.body, call.chunks, deadline
            )
    except (TimeoutError, BlockingIOError):  # BlockingIOError: the kernel's timeout expired
        what, server = _what(call, entry)
        if deadline is not None and time.monotonic() >= deadline:
            detail = f"no complete answer within {limit:g} s"
        elif conn is None:
            detail = "could not connect in time"
        elif conn.read_timeout is not None:
            detail = f"no data for {conn.read_timeout:g} s"
        else:
            detail = "timed out"
        raise transport_error(TimeoutError(detail), what, server) from None
    except EOFError as error:
        what, server = _what(call, entry)
        raise transport_error(error, what, server) from None
    except HTTPParseError as error:
        what, server = _what(call, entry)
        raise transport_error(error, what, server) from None
    except (OSError, ValueError) as error:
        what, server = _what(call, entry)
        raise transport_error(error, what, server) from None
    if reusable and not entry.closed:
        entry.conn = conn
    else:
        conn.close()
    return HttpReply(status, headers, body)


def _what(call: HttpCall[Any], entry: _ThreadStub) -> tuple[str, str]:
    """The request and the server, for a failure's message (made only when one happens)."""
    host, port = entry.shared.address
    return f"{call.method} {call.path}", f"{host}:{port}"


class _ChunkedBody:
    """A request body made of several buffers, sent as they are (no join into one copy).

    geventhttpclient sends a ``bytes`` body as ``header + body`` (a copy of the whole body),
    and any other body with a length through ``socket.sendfile``, which reads it like a file:
    so this object has a length (the Content-Length) and a ``read`` that hands over one
    buffer after the other.
    """

    mode = "rb"

    def __init__(self, chunks: tuple[Any, ...]) -> None:
        self._chunks = [memoryview(c).cast("B") for c in chunks]
        self._size = sum(c.nbytes for c in self._chunks)
        self._next = 0
        self._position = 0

    def __len__(self) -> int:
        return self._size

    def read(self, size: int = -1) -> memoryview | bytes:
        """The next buffer whole (``size`` is ignored: a larger piece is fine to send)."""
        while self._next < len(self._chunks):
            chunk = self._chunks[self._next]
            self._next += 1
            if chunk.nbytes:
                self._position += chunk.nbytes
                return chunk
        return b""

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = 0) -> int:
        """Only to where reading stands (what ``sendfile`` does when it is done)."""
        if whence != 0 or offset != self._position:
            raise OSError("a request body of buffers can only be read once, in order")
        return self._position


#: Answers at least this large are read straight into one buffer (see _read_into_buffer).
_LARGE_BODY = 1 << 20


def _read_into_buffer(response: Any, length: int) -> memoryview | None:
    """Read the rest of a ``length``-byte body into one new buffer; None to read it as usual.

    geventhttpclient collects a body in a growing ``bytearray`` and copies it into ``bytes``
    at the end: three times the body in memory at the peak, and two extra copies.  Its parser
    hands each piece of the body to the response's ``_on_body`` callback, so for a large
    answer that callback is pointed at a numpy buffer of the announced length instead (numpy
    allocates it with huge pages, without zero-filling it): one copy, and the body once in
    memory.  Where this geventhttpclient has no such callback, None: the usual read.
    """
    pending = getattr(response, "_body_buffer", None)
    if not isinstance(pending, bytearray) or not callable(getattr(response, "_on_body", None)):
        return None
    out = np.empty(length, dtype=np.uint8)
    view = memoryview(out.data)
    got = len(pending)  # the part read together with the headers
    if got > length:
        return None
    view[:got] = pending
    del pending[:]
    position = [got]

    def on_body(piece: Any) -> None:
        start = position[0]
        end = start + len(piece)
        if end > length:
            raise EOFError(f"the response body is longer than its {length} byte Content-Length")
        view[start:end] = piece
        position[0] = end

    response._on_body = on_body
    if response.read():  # everything went to on_body; anything here was not ours to take
        raise EOFError("the response body arrived outside the reading buffer")
    return view[: position[0]].toreadonly()


def _perform(stub: HTTPClient, call: HttpCall[Any], limit: float | None) -> HttpReply:
    """Send one request and read the whole answer (in the thread that owns ``stub``).

    ``limit`` (seconds) bounds the whole exchange; every failure becomes an
    ``InferenceServerException`` subclass (see :func:`transport_error`).
    """
    bounded = _Bounded(call, stub, limit, "no complete answer")
    what, server = bounded.what, bounded.server
    with bounded:
        body_out: Any = call.body or b""
        if call.chunks is not None:
            body_out = _ChunkedBody(call.chunks)
        response = stub.request(call.method, call.path, body=body_out, headers=call.headers)
        try:
            announced = str(response.get("content-length") or "").strip()
            length = int(announced) if announced.isdigit() else None
            body: Any = None
            if length is not None and length >= _LARGE_BODY:
                body = _read_into_buffer(response, length)
            if body is None:
                body = response.read()
            if length is not None and length > len(body):
                raise transport_error(
                    EOFError(
                        f"the connection closed after {len(body)} of the {length} "
                        "bytes of the response"
                    ),
                    what,
                    server,
                )
        finally:
            response.release()
        headers = {str(k).lower(): str(v) for k, v in response.items()}
        return HttpReply(response.status_code, headers, body)


class _Bounded:
    """One exchange with a server as a context: bounded by ``limit`` seconds (None: no
    bound; the timer starts here and stops at the end), and every failure in it raised as
    the transport's error (see :func:`transport_error`): the timer's own expiry as "``waited``
    within ``limit`` s", others by :func:`_failure`; an ``InferenceServerException`` or
    another gevent timeout goes on as it is.
    """

    __slots__ = ("limit", "server", "timer", "waited", "what")

    def __init__(self, call: HttpCall[Any], stub: Any, limit: float | None, waited: str) -> None:
        self.what = f"{call.method} {call.path}"
        self.server = f"{stub.host}:{stub.port}"
        self.limit, self.waited = limit, waited
        self.timer = gevent.Timeout(limit) if limit is not None else None
        if self.timer is not None:
            self.timer.start()

    def __enter__(self) -> _Bounded:
        return self

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        try:
            if error is None or isinstance(error, InferenceServerException):
                return
            if isinstance(error, gevent.Timeout):
                if error is self.timer:
                    raise transport_error(
                        TimeoutError(f"{self.waited} within {self.limit:g} s"),
                        self.what,
                        self.server,
                    ) from None
            elif isinstance(error, Exception):
                raise _failure(error, self.what, self.server) from None
        finally:
            if self.timer is not None:
                self.timer.close()


def _failure(error: Exception, what: str, server: str) -> InferenceServerException:
    """A failure of geventhttpclient while sending or reading, as the transport's error."""
    if isinstance(error, HTTPParseError) and (
        isinstance(error, HTTPConnectionClosed) or "incomplete" in str(error).lower()
    ):
        # the connection closed before or in the middle of the response
        return transport_error(EOFError(f"truncated response ({error})"), what, server)
    return transport_error(error, what, server)


_parser_feed: Callable[[Any, bytes], None] = HTTPResponseParser.feed

#: gevent's plain (not TLS) socket class, whose OS socket a stream may wait on directly.
_PlainSocket: type = gevent.socket.socket


def _thread_is_idle() -> bool:
    """Whether nothing but the caller could run on this thread's gevent hub: no active
    watcher (no other greenlet waits on I/O or a timer) and no callback queued.  Then blocking
    the thread in the OS for a read is the same as waiting in the hub (other greenlets, if
    any, wait on something only the caller can set)."""
    loop = gevent.get_hub().loop
    return loop.activecnt == 0 and loop.pendingcnt == 0 and len(loop._callbacks) == 0


def _drop_connection(response: Any) -> None:
    """Close the connection of a response that is not read to its end (not back to the pool):
    the server sees the client go away and stops working on the request."""
    sock, pool = getattr(response, "_sock", None), getattr(response, "_pool", None)
    response._sock = None
    response._pool = None
    if pool is not None and sock is not None:
        with contextlib.suppress(Exception):  # closing must not fail
            pool.release_socket(sock)  # closes the socket and frees the pool's slot
    elif sock is not None:
        with contextlib.suppress(Exception):
            sock.close()


class GeventStream:
    """A response whose body is read piece by piece as it arrives (an event stream).

    Made by :meth:`GeventTransport.open_stream` once the headers have arrived; read and closed
    only in the thread that opened it (its connection belongs to that thread's gevent hub).

    Attributes
    ----------
    status : int
        The HTTP status.
    headers : dict of str to str
        The headers (lower-case names).
    """

    def __init__(
        self,
        transport_entry: _ThreadStub,
        stub: HTTPClient,
        response: Any,
        limit: float | None,
        what: str,
        server: str,
    ) -> None:
        self._entry: _ThreadStub | None = transport_entry
        self._stub: HTTPClient | None = stub
        self._response: Any = response
        self._limit = limit
        self._what = what
        self._server = server
        self._thread = _get_ident()
        #: The OS socket while it is read blocking (see _recv_in_thread), else None.
        self._raw: Any = None
        # The body's pieces go straight to a list (the parser calls its append, no Python
        # frame per piece), starting with what arrived together with the headers.
        self._pieces: list[Any] = []
        pending = response._body_buffer
        if pending:
            self._pieces.append(bytes(pending))
            del pending[:]
        response._on_body = self._pieces.append
        self.status: int = response.status_code
        self.headers: dict[str, str] = {str(k).lower(): str(v) for k, v in response.items()}

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), or None."""
        return self.headers.get(name.lower())

    def _check_thread(self) -> None:
        if _get_ident() != self._thread:
            raise_error(
                "a streamed response is read in the thread that started it (its connection "
                "belongs to that thread); start the stream in the thread that reads it"
            )

    def read(self) -> bytes:
        """The next bytes of the body as they arrive; ``b""`` once it has ended completely.

        ``limit`` seconds (the client's network timeout) bound each wait for more bytes, not
        the whole body.

        Raises
        ------
        InferenceServerConnectionError
            If the connection closed before the end of the body (a stream cut short).
        InferenceServerDeadlineExceededError
            If no bytes came within the limit.
        """
        response = self._response
        if response is None:
            return b""
        self._check_thread()
        pieces = self._pieces
        while True:
            if pieces:
                chunk = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                pieces.clear()
                return bytes(chunk)
            if response.message_complete:
                self._finish(reuse=True)
                return b""
            sock = response._sock
            try:
                if sock is None:
                    raise EOFError("the connection closed before the end of the response")
                if sock.__class__ is _PlainSocket and _thread_is_idle():
                    data = self._recv_in_thread(sock)
                else:
                    self._restore_socket()
                    # The socket's own timeout (the client's network_timeout, set by the
                    # connection pool) bounds this wait: no timer object per read.
                    data = sock.recv(_READ_BLOCK)
                # The C parser's own feed (HTTPResponse.feed only adds a HEAD special case).
                _parser_feed(response, data)  # b"": the end of the connection, for it too
                if not data and not response.message_complete:
                    raise EOFError("the connection closed before the end of the response")
            except TimeoutError:  # socket.timeout
                self.close()
                raise transport_error(
                    TimeoutError(f"no more of the response within {self._limit:g} s"),
                    self._what,
                    self._server,
                ) from None
            except HTTPParseError as error:
                self.close()
                raise transport_error(
                    EOFError(f"truncated response ({error})"), self._what, self._server
                ) from None
            except BaseException as error:
                self.close()
                if isinstance(error, Exception):
                    raise transport_error(error, self._what, self._server) from None
                raise

    def _recv_in_thread(self, sock: Any) -> bytes:
        """Wait for the next bytes blocking this thread in the OS, not in the gevent hub.

        Only when nothing else of this thread's hub could run meanwhile (see
        :func:`_thread_is_idle`): then the wait means the same, and it costs the OS socket's
        own wait (``poll`` and ``recv`` inside CPython) instead of a round trip through the
        hub per read; a stream of small events is mostly such waits.  The OS socket under
        gevent's is non-blocking; it is given the read limit as its timeout while the stream
        reads it this way, and made non-blocking again before gevent uses it (:meth:`_finish`).
        """
        raw = sock._sock
        if self._raw is None:
            raw.settimeout(self._limit)
            self._raw = raw
        return raw.recv(_READ_BLOCK)  # type: ignore[no-any-return]

    def _restore_socket(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            with contextlib.suppress(OSError):  # a closed socket needs nothing
                raw.settimeout(0.0)

    def read_all(self) -> bytes:
        """The rest of the body (an error answer's JSON)."""
        pieces: list[bytes] = []
        while True:
            chunk = self.read()
            if not chunk:
                return b"".join(pieces)
            pieces.append(chunk)

    def _finish(self, reuse: bool) -> None:
        self._restore_socket()  # before the connection goes back to gevent's pool
        response, self._response = self._response, None
        stub, self._stub = self._stub, None
        entry, self._entry = self._entry, None
        if response is not None and not reuse:
            _drop_connection(response)
        if entry is None or stub is None:
            return
        entry.active -= 1
        if reuse and not entry.shared.closed and not entry.closed:
            entry.spare_streams.append(stub)
        else:
            with contextlib.suppress(Exception):  # closing must not fail
                stub.close()
        if entry.shared.closed and entry.active == 0:
            if _registry.stubs.get(entry.shared) is entry:
                del _registry.stubs[entry.shared]
            entry.close()

    def close(self) -> None:
        """Stop reading: the connection is closed (the server sees the client go away), unless
        the body had already ended.  Any number of times; from another thread (garbage
        collection there) it only lets go, and the connection closes when collected."""
        if self._response is None:
            return
        if _get_ident() != self._thread:
            self._response = self._stub = self._entry = None
            return
        self._finish(reuse=bool(self._response.message_complete))

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # never raise from a finalizer
            self.close()


class GeventTransport:
    """Sends :class:`HttpCall` s to one server with geventhttpclient (see the module docstring).

    Parameters
    ----------
    host : str
        The server's host name or address.
    port : int
        Its port.
    concurrency : int
        Connections per calling thread (and for the hub thread).
    timeouts : (float, float)
        geventhttpclient's ``connection_timeout`` and ``network_timeout``; their sum also
        bounds each whole call.
    max_greenlets : int or None
        Requests in progress at once on the hub thread (None: no limit).
    tls : (bool, dict or None, callable or None, bool)
        ``ssl`` (use https), then geventhttpclient's ``ssl_options``, ``ssl_context_factory``
        (both ignored without ``ssl``) and ``insecure``: the sync client's arguments.
    """

    def __init__(
        self,
        host: str,
        port: int,
        concurrency: int,
        timeouts: tuple[float, float],
        max_greenlets: int | None,
        tls: tuple[bool, dict[str, Any] | None, Callable[..., Any] | None, bool],
    ) -> None:
        connection_timeout, network_timeout = timeouts
        ssl, ssl_options, ssl_context_factory, insecure = tls
        self._loop: GeventLoop | None = None
        self._shared: _Shared | None = None
        self._call_limit: float | None = None
        if connection_timeout is not None and network_timeout is not None:
            self._call_limit = float(connection_timeout) + float(network_timeout)
        #: Bounds each wait for more of a streamed body (between events).
        self._read_limit = float(network_timeout) if network_timeout is not None else None

        def make_stub() -> HTTPClient:
            return HTTPClient(
                host,
                port=port,
                concurrency=concurrency,
                # 64 KiB reads instead of geventhttpclient's 4 KiB: a 64 MiB answer takes
                # 1,000 reads rather than 16,000 (about 25% less client CPU), and the buffer
                # stays under malloc's mmap threshold for small answers.
                block_size=_READ_BLOCK,
                connection_timeout=connection_timeout,
                network_timeout=network_timeout,
                ssl=ssl,
                ssl_options=ssl_options if ssl else None,
                ssl_context_factory=ssl_context_factory if ssl else None,
                insecure=insecure,
            )

        def setup() -> tuple[HTTPClient, Callable[[], None]]:
            stub = make_stub()
            return stub, stub.close

        def make_conn() -> Connection:
            return Connection(host, port, connection_timeout, network_timeout)

        self._loop = GeventLoop(setup, max_greenlets)
        self._shared = _Shared(make_stub, None if ssl else make_conn, (host, port))

    def __del__(self) -> None:
        # No call is in progress (it would hold a reference), so nothing to wait for; only
        # this thread's own entry is closed here, other threads close theirs.
        self.abandon()

    def abandon(self) -> None:
        """Stop without waiting (garbage collection of the client): never raises."""
        shared = getattr(self, "_shared", None)
        if shared is not None:
            shared.closed = True
            _client_closed()
            with contextlib.suppress(Exception):  # never raise from a finalizer
                entry = _registry.stubs.get(shared)
                if entry is not None and entry.active == 0:
                    _registry.stubs.pop(shared, None)
                    entry.close()
        loop = getattr(self, "_loop", None)
        if loop is not None:
            with contextlib.suppress(Exception):  # never raise from a finalizer
                loop.close(wait=False)

    def close(self) -> None:
        """Wait for requests in progress, then close the connections (any thread, any
        number of times); every later call raises "the client is closed"."""
        shared = self._shared
        if shared is not None:
            with shared.lock:
                closing = not shared.closed
                shared.closed = True
            if closing:
                _client_closed()
            entry = _registry.stubs.get(shared)
            if entry is not None and entry.active > 0 and not _in_hub():
                # other greenlets of this thread are in calls: let them finish
                while not shared.idle.acquire(False):
                    gevent.sleep(0.005)
            else:
                shared.idle.acquire()
            shared.idle.release()
            entry = _registry.stubs.get(shared)
            if entry is not None and entry.active == 0:
                _registry.stubs.pop(shared, None)
                entry.close()
        if self._loop is not None:
            self._loop.close(wait=True)

    def submit(
        self,
        call: HttpCall[Any],
        finish: Callable[[HttpReply], T],
        failed: Callable[[InferenceServerException], InferenceServerException] | None = None,
        timeout: float | None = None,
    ) -> Job[T]:
        """Start ``call`` on the hub thread and return at once; the job's result is
        ``finish(reply)`` (run on the hub thread).  ``failed``, when given, is told of a
        request that failed below HTTP and returns the exception the job raises (a client
        over several replicas counts the failure and names the replica); ``timeout``
        shortens the transport's own bound of the call (readiness probes)."""
        if self._loop is None:  # pragma: no cover - only if __init__ failed
            raise_error("the client is closed")
        loop = self._loop
        limit = self._call_limit
        if timeout is not None:
            limit = timeout if limit is None else min(limit, timeout)

        def work() -> T:
            if failed is None:
                return finish(_perform(loop.resource, call, limit))
            try:
                reply = _perform(loop.resource, call, limit)
            except InferenceServerException as error:
                raise failed(error) from None
            return finish(reply)

        return loop.submit(work)

    def send(self, call: HttpCall[Any], timeout: float | None = None) -> HttpReply:
        """One attempt of ``call``, waiting at most ``timeout`` seconds (and the transport's
        own limit): in the calling thread, or on the hub thread when called from a hub."""
        hub = _get_hub_if_exists()
        if hub is not None and _getcurrent() is hub:
            job = self.submit(call, lambda reply: reply)
            if not job.wait(timeout):
                raise transport_error(
                    TimeoutError(f"no answer within {timeout:g} s"),
                    f"{call.method} {call.path}",
                )
            return job.result()
        return self._direct(call, timeout, hub)

    def open_stream(self, call: HttpCall[Any]) -> GeventStream:
        """Send ``call`` and return once the answer's headers have arrived, with its body to
        read as it comes (:class:`GeventStream`), in the calling thread.

        The stream has a connection of its own (kept for the thread's next stream when read to
        its end), so the thread's other calls go on while it is open; the client's whole-call
        limit bounds the wait for the headers, ``network_timeout`` each wait for more of the body.

        Raises
        ------
        InferenceServerException
            If the client is closed, when called inside a gevent hub callback (where it must
            not block), or for every failure of :meth:`send`.
        """
        shared = self._shared
        if shared is None or shared.closed:
            raise_error("the client is closed")
        if _in_hub():
            raise_error("a streamed response cannot be read inside a gevent hub callback")
        entry = _thread_entry(shared)
        stub = entry.spare_streams.pop() if entry.spare_streams else shared.make_stub()
        bounded = _Bounded(call, stub, self._call_limit, "no answer")
        entry.active += 1
        opened = False
        try:
            with bounded:
                response = stub.request(
                    call.method, call.path, body=call.payload() or b"", headers=call.headers
                )
                opened = True
                return GeventStream(
                    entry, stub, response, self._read_limit, bounded.what, bounded.server
                )
        finally:
            if not opened:
                entry.active -= 1
                with contextlib.suppress(Exception):  # closing must not fail
                    stub.close()

    def _direct(self, call: HttpCall[Any], timeout: float | None, hub: Any) -> HttpReply:
        """One attempt in the calling thread (whose gevent hub is ``hub``, or None), on the
        thread's lean connection or with its ``HTTPClient``."""
        shared = self._shared
        if shared is None or shared.closed:
            raise_error("the client is closed")
        entry = _thread_entry(shared)
        limit = self._call_limit
        if timeout is not None:
            limit = timeout if limit is None else min(limit, timeout)
        entry.active += 1
        try:
            with shared.lock:
                if shared.closed:
                    raise_error("the client is closed")
                shared.inflight += 1
                if shared.inflight == 1:
                    shared.idle.acquire()
            try:
                if shared.make_conn is not None and _may_block(hub):
                    return _perform_blocking(entry, call, limit)
                return _perform(entry.stub, call, limit)
            finally:
                with shared.lock:
                    shared.inflight -= 1
                    if shared.inflight == 0:
                        shared.idle.release()
        finally:
            entry.active -= 1
            if shared.closed and entry.active == 0:
                if _registry.stubs.get(shared) is entry:
                    del _registry.stubs[shared]
                entry.close()
