"""The lean path of the sync HTTP client: one blocking OS socket per connection.

A sync call made from a plain thread (or from a gevent program's thread whose hub has nothing
else to run) needs none of gevent's machinery: a greenlet switch to the hub for every read, a
timer object per call, geventhttpclient's request builder and header objects cost more client
CPU than the whole exchange on a blocking socket (``benchmarks/bench_hotpath.py``: about 75 of
the 100 us of a small ``infer``).  :class:`Connection` writes the request head and body with
one ``sendall`` and parses the answer with llhttp, the C parser geventhttpclient itself uses
(``geventhttpclient._parser``: no new dependency, and the same reading of a broken answer as
the gevent path).  The answer of a small request is usually one ``recv``; a large body with a
``Content-Length`` is read straight into one buffer (``recv_into``, one copy).

Timeouts are those of the gevent path: ``connection_timeout`` bounds the connect,
``network_timeout`` each read, and the call's limit (their sum, or less) the whole exchange.
Every failure is an ``OSError``, ``EOFError``, ``TimeoutError`` or ``HTTPParseError`` for the
caller to map (:func:`tritonclient._transport.http.transport_error`); the connection is then
closed, never reused.
"""

from __future__ import annotations

import _socket
import select
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

import geventhttpclient

from .http11 import (
    Answer,
    ClosedBeforeAnswer,
    HTTPParseError,
    RequestHead,
    body,
    body_buffer,
    end_of_connection,
    feed,
    idempotent,
    known_answer,
    large_body_length,
    remember_answer,
    start_answer,
)

__all__ = ["USER_AGENT", "ClosedBeforeAnswer", "Connection", "HTTPParseError", "idempotent"]

#: The User-Agent geventhttpclient sends (and so NVIDIA's client): the same requests either way.
USER_AGENT = "python/gevent-http-client-" + geventhttpclient.__version__

#: Bytes asked of the socket per read.
_READ_BLOCK = 64 * 1024

#: A connection idle this long (seconds) is checked for a close by the server before reuse.
_STALE_AFTER = 1.0

#: Whether reads and writes wait in the kernel with SO_RCVTIMEO/SO_SNDTIMEO on a blocking
#: socket (Linux, 64-bit ``struct timeval``): one system call per ``recv`` or ``send``.  A
#: socket with a Python timeout polls before each of them, which costs about 1 us per call.
_KERNEL_TIMEOUTS = sys.platform.startswith("linux") and struct.calcsize("@ll") == 16


def _set_timeout(sock: Any, timeout: float | None) -> None:
    """Bound each later read and write of ``sock`` by ``timeout`` seconds (None: no bound);
    an expired wait raises ``TimeoutError`` (Python's timeout) or ``BlockingIOError`` (the
    kernel's)."""
    if not _KERNEL_TIMEOUTS:
        sock.settimeout(timeout)
        return
    if timeout is None:
        value = struct.pack("@ll", 0, 0)  # 0: no bound
    else:
        micros = max(1, int(timeout * 1_000_000))  # a bound that rounds to 0 would be none
        value = struct.pack("@ll", micros // 1_000_000, micros % 1_000_000)
    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_RCVTIMEO, value)
    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_SNDTIMEO, value)


def _connect(host: str, port: int, timeout: float | None) -> Any:
    """A connected OS socket (the C type: a program that monkey-patched ``socket`` does not
    turn it into a gevent socket), TCP_NODELAY set."""
    error: OSError | None = None
    for family, kind, proto, _, address in _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        return sock
    raise error if error is not None else OSError(f"no address for {host}:{port}")


class Connection:
    """One keep-alive HTTP/1.1 connection on a blocking socket, used by one thread at a time.

    Parameters
    ----------
    host : str
        The server's host name or address.
    port : int
        Its port.
    connect_timeout : float or None
        Bounds the connect (``connection_timeout``).
    read_timeout : float or None
        Bounds each read (``network_timeout``).
    """

    __slots__ = ("_idle_since", "_sock", "_timeout", "head", "host", "port", "read_timeout")

    def __init__(
        self, host: str, port: int, connect_timeout: float | None, read_timeout: float | None
    ) -> None:
        self.host = host
        self.port = port
        self.read_timeout = read_timeout
        #: Writes the request heads (as geventhttpclient does).
        self.head = RequestHead(host, port, {"User-Agent": USER_AGENT})
        self._sock: Any = _connect(host, port, connect_timeout)
        #: The timeout the socket has now (the connect's until the first read or write).
        self._timeout: float | None = -1.0
        if _KERNEL_TIMEOUTS:
            self._sock.settimeout(None)  # blocking: the kernel's timeouts, see _set_timeout
        self._idle_since = time.monotonic()

    def close(self) -> None:
        """Close the socket (any number of times)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    @property
    def closed(self) -> bool:
        """Whether the connection was closed (by :meth:`close` or after a failure)."""
        return self._sock is None

    def is_stale(self) -> bool:
        """Whether the server closed the idle connection (or sent something unasked): then it
        must not carry the next request.  Looked at only after a second of idleness: a poll
        of the socket costs a system call."""
        if time.monotonic() - self._idle_since < _STALE_AFTER:
            return False
        readable, _, _ = select.select([self._sock], [], [], 0)
        return bool(readable)

    def exchange(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes | None,
        chunks: Sequence[Any] | None,
        deadline: float | None,
    ) -> tuple[int, dict[str, str], bytes | memoryview, bool]:
        """Send one request and read its whole answer.

        Parameters
        ----------
        method, path : str
            The request line's.
        headers : dict
            The request's headers (Host, User-Agent and Content-Length are added).
        body : bytes or None
            The body in one piece, or None.
        chunks : sequence of bytes-like, optional
            The body as buffers sent one after the other (when ``body`` is None).
        deadline : float or None
            ``time.monotonic()`` by which the whole answer must have arrived.

        Returns
        -------
        tuple
            The status, the headers (lower-case names), the body, and whether the connection
            may carry the next request.

        Raises
        ------
        TimeoutError, BlockingIOError
            When a read or write waits longer than ``read_timeout`` or past ``deadline``.
        EOFError
            When the server closes the connection before the end of the answer.
        OSError, HTTPParseError, ValueError
            Any other failure.  The connection is closed in every case.
        """
        try:
            sock = self._sock
            if sock is None:
                raise OSError("the connection is closed")
            self._wait(deadline)
            if chunks is None:
                payload = body or b""
                sock.sendall(self.head(method, path, headers, len(payload)) + payload)
            else:
                views = [memoryview(c).cast("B") for c in chunks]
                sock.sendall(self.head(method, path, headers, sum(v.nbytes for v in views)))
                for view in views:
                    if view.nbytes:
                        sock.sendall(view)
            return self._read_answer(deadline)
        except BaseException:
            self.close()
            raise

    def _wait(self, deadline: float | None) -> None:
        """Set the socket's timeout for the next read or write: ``read_timeout``, or less when
        the call's deadline is closer (set only when it changes)."""
        timeout = self.read_timeout
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the call's time limit passed")
            if timeout is None or remaining < timeout:
                timeout = remaining
        if timeout != self._timeout:
            _set_timeout(self._sock, timeout)
            self._timeout = timeout

    def _read_answer(
        self, deadline: float | None
    ) -> tuple[int, dict[str, str], bytes | memoryview, bool]:
        sock = self._sock
        self._wait(deadline)
        data = sock.recv(_READ_BLOCK)
        if not data:
            raise ClosedBeforeAnswer("the connection closed before any response")
        known = known_answer(data)
        if known is not None:  # the usual answer, whole in one read: not parsed again
            self._idle_since = time.monotonic()
            return known
        first = data
        answer = start_answer(data)
        while not answer.headers_done:
            self._wait(deadline)
            data = sock.recv(_READ_BLOCK)
            if not data:
                raise EOFError("the connection closed before the end of the response headers")
            feed(answer, data)
        status = answer.get_code()
        result: bytes | memoryview
        if not answer.complete:
            length = large_body_length(answer)
            if length is not None:
                result = self._read_into_buffer(answer, length, deadline)
                reusable = answer.should_keep_alive()
                self._idle_since = time.monotonic()
                return status, answer.headers, result, reusable
            while not answer.complete:
                self._wait(deadline)
                data = sock.recv(_READ_BLOCK)
                if data:
                    feed(answer, data)
                    continue
                # The end of the connection: the end of a body read until then, or a truncation.
                end_of_connection(answer)
                if not answer.complete:
                    raise EOFError("the connection closed before the end of the response")
        if data is first:
            remember_answer(data, answer)
        result = body(answer)
        reusable = answer.should_keep_alive() and not answer.extra
        self._idle_since = time.monotonic()
        return status, answer.headers, result, reusable

    def _read_into_buffer(self, answer: Answer, length: int, deadline: float | None) -> memoryview:
        """The rest of a large body read straight into one new buffer (``body_buffer``)."""
        view, got = body_buffer(answer, length)
        sock = self._sock
        while got < length:
            self._wait(deadline)
            count = sock.recv_into(view[got:], length - got)
            if not count:
                raise EOFError(
                    f"the connection closed after {got} of the {length} bytes of the response"
                )
            got += count
        return view.toreadonly()
