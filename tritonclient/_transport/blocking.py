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
import contextlib
import select
import time
from collections.abc import Sequence
from typing import Any

import geventhttpclient
import numpy as np
from geventhttpclient._parser import HTTPParseError, HTTPResponseParser

__all__ = ["USER_AGENT", "ClosedBeforeAnswer", "Connection", "HTTPParseError"]

#: The User-Agent geventhttpclient sends (and so NVIDIA's client): the same requests either way.
USER_AGENT = "python/gevent-http-client-" + geventhttpclient.__version__

#: Bytes asked of the socket per read.
_READ_BLOCK = 64 * 1024

#: Bodies from this size on, with a Content-Length, are read straight into one buffer.
_LARGE_BODY = 1 << 20

#: A connection idle this long (seconds) is checked for a close by the server before reuse.
_STALE_AFTER = 1.0

_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})

#: Characters that would split a request (header injection): refused, as geventhttpclient does.
_FORBIDDEN = frozenset("\r\n\0")
_FORBIDDEN_IN_PATH = frozenset("\r\n\0 ")


class ClosedBeforeAnswer(EOFError):
    """The server closed the connection before any byte of the answer (a kept-alive
    connection it had closed meanwhile, or a server that went away)."""


class _Answer(HTTPResponseParser):
    """One response as llhttp parses it: status, lower-case headers, body pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: dict[str, str] = {}
        self.field = ""
        self.value: str | None = None
        self.pieces: list[Any] = []
        self.headers_done = False
        self.complete = False
        #: Bytes came after the complete answer: the connection is out of step, not reused.
        self.extra = False

    def _on_message_begin(self) -> None:
        if self.complete:
            self.extra = True

    def _on_status(self, message: str) -> None:
        pass

    def _on_header_field(self, text: str) -> None:
        if self.value is not None:
            self._flush()
        self.field += text

    def _on_header_value(self, text: str) -> None:
        self.value = text if self.value is None else self.value + text

    def _flush(self) -> None:
        name = self.field.lower()
        value = self.value or ""
        known = self.headers.get(name)
        # A repeated header reads as one, its values joined (RFC 9110 section 5.3).
        self.headers[name] = value if known is None else f"{known}, {value}"
        self.field = ""
        self.value = None

    def _on_headers_complete(self) -> bool:
        if self.field:
            self._flush()
        self.headers_done = True
        return False

    def _on_body(self, piece: bytearray) -> None:
        self.pieces.append(piece)

    def _on_message_complete(self) -> None:
        if self.get_code() < 200:  # an interim answer (100 Continue): the real one follows
            self.headers = {}
            self.pieces = []
            self.headers_done = False
            return
        self.complete = True


def _feed(answer: _Answer, data: bytes) -> None:
    """Parse ``data``; bytes that do not parse after a complete answer only mean that the
    connection is out of step (a server that sent more than its Content-Length), so the
    answer stands and the connection is not reused."""
    try:
        answer.feed(data)
    except HTTPParseError:
        if not answer.complete:
            raise
        answer.extra = True


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

    __slots__ = ("_host_header", "_idle_since", "_sock", "host", "port", "read_timeout")

    def __init__(
        self, host: str, port: int, connect_timeout: float | None, read_timeout: float | None
    ) -> None:
        self.host = host
        self.port = port
        self.read_timeout = read_timeout
        host_header = f"[{host}]" if ":" in host and not host.startswith("[") else host
        if port not in (80, 443):
            host_header += f":{port}"
        self._host_header = host_header
        self._sock: Any = _connect(host, port, connect_timeout)
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

    def head(self, method: str, path: str, headers: dict[str, str], length: int) -> bytes:
        """The request line and headers, as geventhttpclient writes them.

        Raises
        ------
        ValueError
            For a header name or value holding CR, LF or NUL (which would split the request).
        """
        fields = "".join(headers) + "".join(headers.values())
        if not _FORBIDDEN.isdisjoint(fields) or not _FORBIDDEN_IN_PATH.isdisjoint(path):
            raise ValueError(f"invalid request {method} {path!r} with headers {headers!r}")
        lines = [f"{method} {path} HTTP/1.1\r\nUser-Agent: {USER_AGENT}\r\n"]
        has_host = False
        for name, value in headers.items():
            lines.append(f"{name}: {value}\r\n")
            if not has_host and name.lower() == "host":
                has_host = True
        if not has_host:
            lines.append(f"Host: {self._host_header}\r\n")
        if length or method == "POST" or method == "PUT":
            lines.append(f"Content-Length: {length}\r\n")
        lines.append("\r\n")
        return "".join(lines).encode("latin-1")

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
        TimeoutError
            When a read waits longer than ``read_timeout`` or past ``deadline``.
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
        timeout = self.read_timeout
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the call's time limit passed")
            if timeout is None or remaining < timeout:
                timeout = remaining
        self._sock.settimeout(timeout)

    def _read_answer(
        self, deadline: float | None
    ) -> tuple[int, dict[str, str], bytes | memoryview, bool]:
        sock = self._sock
        answer = _Answer()
        received = 0
        while not answer.headers_done:
            self._wait(deadline)
            data = sock.recv(_READ_BLOCK)
            if not data:
                if received:
                    raise EOFError("the connection closed before the end of the response headers")
                raise ClosedBeforeAnswer("the connection closed before any response")
            received += len(data)
            _feed(answer, data)
        status = answer.get_code()
        result: bytes | memoryview
        if not answer.complete:
            announced = answer.headers.get("content-length", "")
            if announced.isdigit() and int(announced) >= _LARGE_BODY:
                result = self._read_into_buffer(answer, int(announced), deadline)
                reusable = answer.should_keep_alive()
                self._idle_since = time.monotonic()
                return status, answer.headers, result, reusable
            while not answer.complete:
                self._wait(deadline)
                data = sock.recv(_READ_BLOCK)
                if data:
                    _feed(answer, data)
                    continue
                # The end of the connection: the end of a body read until then, or a truncation.
                with contextlib.suppress(HTTPParseError):
                    answer.feed(b"")
                if not answer.complete:
                    raise EOFError("the connection closed before the end of the response")
        pieces = answer.pieces
        result = bytes(pieces[0]) if len(pieces) == 1 else b"".join(pieces)
        reusable = answer.should_keep_alive() and not answer.extra
        self._idle_since = time.monotonic()
        return status, answer.headers, result, reusable

    def _read_into_buffer(self, answer: _Answer, length: int, deadline: float | None) -> memoryview:
        """The rest of a large body read straight into one new buffer (numpy allocates it
        without zero-filling, with huge pages): one copy, and the body once in memory."""
        out = np.empty(length, dtype=np.uint8)
        view = memoryview(out.data).cast("B")
        got = 0
        for piece in answer.pieces:
            if got + len(piece) > length:
                raise EOFError(f"the response body is longer than its {length} byte Content-Length")
            view[got : got + len(piece)] = piece
            got += len(piece)
        answer.pieces = []
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

    def idempotent(self, method: str) -> bool:
        """Whether a request of ``method`` may be sent again after the connection broke before
        any answer (RFC 9110 section 9.2.2, as geventhttpclient)."""
        return method in _IDEMPOTENT
