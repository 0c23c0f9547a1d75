"""HTTP/1.1 as the lean transports speak it, sans-I/O: the request head, the answer's parser.

The sync client's blocking sockets (:mod:`.blocking`) and the asyncio client's protocol
(:mod:`.asyncio_http`) write requests and read answers the same way: :class:`RequestHead`
writes the request line and headers (kept while method, path and headers stay the same, as
they do call after call), :func:`start_answer` and :func:`feed` parse an answer with llhttp,
the C parser geventhttpclient itself uses (``geventhttpclient._parser``: no new dependency,
and the same reading of a broken answer as the gevent path).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from geventhttpclient._parser import HTTPParseError, HTTPResponseParser

__all__ = [
    "LARGE_BODY",
    "Answer",
    "ClosedBeforeAnswer",
    "HTTPParseError",
    "RequestHead",
    "body",
    "body_buffer",
    "end_of_connection",
    "feed",
    "idempotent",
    "known_answer",
    "large_body_length",
    "remember_answer",
    "start_answer",
]

#: Bodies from this size on, with a Content-Length, are read straight into one buffer.
LARGE_BODY = 1 << 20

_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


def idempotent(method: str) -> bool:
    """Whether a request of ``method`` may be sent again after the connection broke before
    any answer (RFC 9110 section 9.2.2, as geventhttpclient)."""
    return method in _IDEMPOTENT


#: Characters that would split a request (header injection): refused, as geventhttpclient does.
_FORBIDDEN = frozenset("\r\n\0")
_FORBIDDEN_IN_PATH = frozenset("\r\n\0 ")


class RequestHead:
    """Writes the request line and headers of one connection's requests.

    Parameters
    ----------
    host : str
        The server's host name or address.
    port : int
        Its port.
    defaults : dict of str to str
        Headers every request carries unless the caller gives them (the User-Agent of the
        HTTP library the transport stands in for).
    """

    __slots__ = ("_defaults", "_host", "_last")

    def __init__(self, host: str, port: int, defaults: dict[str, str]) -> None:
        host_header = f"[{host}]" if ":" in host and not host.startswith("[") else host
        if port not in (80, 443):
            host_header += f":{port}"
        self._host = host_header
        self._defaults = defaults
        #: The last request's method, path, headers, and its head but for Content-Length.
        self._last: tuple[str, str, dict[str, str], bytes, bool] = ("", "", {}, b"", False)

    def __call__(self, method: str, path: str, headers: dict[str, str], length: int) -> bytes:
        """The head of a request with a body of ``length`` bytes, ending with its blank line.

        Raises
        ------
        ValueError
            For a header name or value holding CR, LF or NUL, or a path holding those or a
            space (which would split the request).
        """
        last_method, last_path, last_headers, prefix, with_length = self._last
        if method != last_method or path != last_path or headers != last_headers:
            fields = "".join(headers) + "".join(headers.values())
            if not _FORBIDDEN.isdisjoint(fields) or not _FORBIDDEN_IN_PATH.isdisjoint(path):
                raise ValueError(f"invalid request {method} {path!r} with headers {headers!r}")
            given = {name.lower() for name in headers}
            lines = [f"{method} {path} HTTP/1.1\r\n"]
            # A header of the caller's replaces the default of the same name.
            lines += [f"{k}: {v}\r\n" for k, v in self._defaults.items() if k.lower() not in given]
            lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
            if "host" not in given:
                lines.append(f"Host: {self._host}\r\n")
            prefix = "".join(lines).encode("latin-1")
            with_length = "content-length" not in given
            self._last = (method, path, dict(headers), prefix, with_length)
        if with_length and (length or method == "POST" or method == "PUT"):
            return prefix + b"Content-Length: %d\r\n\r\n" % length
        return prefix + b"\r\n"


class ClosedBeforeAnswer(EOFError):
    """The server closed the connection before any byte of the answer (a kept-alive
    connection it had closed meanwhile, or a server that went away)."""


_NO_HEADERS: dict[str, str] = {}


class Answer(HTTPResponseParser):
    """One response as llhttp parses it: status, lower-case headers, body pieces.

    llhttp calls a method per piece it finds.  When the whole head of the answer comes in one
    read (``fast``, nearly always), every header name and value arrives whole and in order, so
    they go straight into two lists (bound ``list.append``: no Python frame per header) and
    are paired once the head is complete; otherwise (a head split over reads, or a header
    llhttp reports without a value) the answer is parsed again with the careful callbacks,
    which join the pieces of a name or value split between reads.
    """

    #: The reason phrase is not kept: discarding it from an empty set is a C call that
    #: returns None (what llhttp's binding wants) and keeps nothing.
    _on_status = staticmethod(set().discard)

    def __init__(self, fast: bool) -> None:
        super().__init__()
        self.fast = fast
        self.headers: dict[str, str] = _NO_HEADERS
        self.pieces: list[Any] = []
        self._on_body = self.pieces.append
        self.fields: list[str] = []
        self.values: list[str] = []
        if fast:
            self._on_header_field = self.fields.append
            self._on_header_value = self.values.append
        else:
            self._on_header_field = self._field_piece
            self._on_header_value = self._value_piece

    # Flags, set on the instance when they change.
    headers_done = False
    #: The head must be parsed again with the careful callbacks (see the class docstring).
    misread = False
    complete = False
    #: Bytes came after the complete answer: the connection is out of step, not reused.
    extra = False

    def _on_message_begin(self) -> None:
        if self.complete:
            self.extra = True

    def _field_piece(self, text: str) -> None:
        if len(self.values) == len(self.fields):
            self.fields.append(text)
        else:  # the rest of a name split between two reads
            self.fields[-1] += text

    def _value_piece(self, text: str) -> None:
        if len(self.values) < len(self.fields):
            self.values.append(text)
        else:
            self.values[-1] += text

    def _on_headers_complete(self) -> bool:
        fields, values = self.fields, self.values
        if len(fields) != len(values):
            if self.fast:
                self.misread = True
                return False
            values += [""] * (len(fields) - len(values))  # names without a value
        headers = dict(zip(map(str.lower, fields), values, strict=True))
        if len(headers) != len(fields):
            # A repeated header reads as one, its values joined (RFC 9110 section 5.3).
            headers = {}
            for field, value in zip(fields, values, strict=True):
                name = field.lower()
                known = headers.get(name)
                headers[name] = value if known is None else f"{known}, {value}"
        self.headers = headers
        self.headers_done = True
        return False

    def _on_message_complete(self) -> None:
        if self.get_code() < 200:  # an interim answer (100 Continue): the real one follows
            self.fields.clear()
            self.values.clear()
            self.pieces.clear()
            self.headers_done = False
            return
        self.complete = True


def feed(answer: Answer, data: bytes) -> None:
    """Parse ``data``; bytes that do not parse after a complete answer only mean that the
    connection is out of step (a server that sent more than its Content-Length), so the
    answer stands and the connection is not reused."""
    try:
        answer.feed(data)
    except HTTPParseError:
        if not answer.complete:
            raise
        answer.extra = True


def start_answer(data: bytes) -> Answer:
    """The parser of an answer whose first bytes are ``data``, fed with them: the fast one
    when they hold the whole head, else one that reads the head as it comes (see
    :class:`Answer`); feed it what follows with :func:`feed`."""
    answer = Answer(fast=True)
    feed(answer, data)
    if not answer.headers_done or answer.misread:
        answer = Answer(fast=False)
        feed(answer, data)
    return answer


#: The heads of whole answers llhttp parsed before -> what it read in them: status, headers,
#: Content-Length, keep-alive.  A server answers call after call with the same head (the
#: same model, the same output sizes), and a head's bytes decide everything llhttp reads of
#: an answer with a Content-Length (the body is not looked into), so an answer whose head is
#: one of these and whose body has exactly that length reads the same without being parsed
#: again: llhttp, with its callbacks into Python, costs about 4 us per answer, the lookup
#: well under 1.  Bounded: cleared when full (a head with a Date changes every second).
_KNOWN_HEADS: dict[bytes, tuple[int, dict[str, str], int, bool]] = {}
_KNOWN_HEADS_MAX = 64
#: Heads longer than this are not kept (they are not the usual small answer's).
_KNOWN_HEAD_MAX = 1024


def known_answer(data: bytes) -> tuple[int, dict[str, str], bytes, bool] | None:
    """The whole answer in ``data`` when its head is one :func:`remember_answer` kept and its
    body has the head's Content-Length, exactly (nothing missing, nothing after it): status,
    headers (lower-case names, a dict of its own), body, keep-alive; else None (parse it)."""
    end = data.find(b"\r\n\r\n", 0, _KNOWN_HEAD_MAX)
    if end < 0:
        return None
    known = _KNOWN_HEADS.get(data[:end])
    if known is None:
        return None
    status, headers, length, keep_alive = known
    start = end + 4
    if len(data) - start != length:
        return None
    return status, dict(headers), data[start:], keep_alive


def remember_answer(data: bytes, answer: Answer) -> None:
    """Keep the head of ``answer`` for :func:`known_answer` when ``data`` held all of it, as
    llhttp parsed it: a 200 answer with a Content-Length, neither chunked nor followed by
    anything (answers read any other way are parsed every time)."""
    if not answer.complete or answer.extra or answer.get_code() != 200:
        return
    headers = answer.headers
    announced = headers.get("content-length", "")
    if not announced.isdigit() or "transfer-encoding" in headers:
        return
    end = data.find(b"\r\n\r\n", 0, _KNOWN_HEAD_MAX)
    length = int(announced)
    if end < 0 or len(data) - end - 4 != length or b"".join(answer.pieces) != data[end + 4 :]:
        return  # (the body checked byte for byte: the head is exactly what precedes it)
    if len(_KNOWN_HEADS) >= _KNOWN_HEADS_MAX:
        _KNOWN_HEADS.clear()
    _KNOWN_HEADS[data[:end]] = (200, dict(headers), length, bool(answer.should_keep_alive()))


def end_of_connection(answer: Answer) -> None:
    """Tell the parser the connection ended: that ends a body read until then, and leaves
    any other answer incomplete (``answer.complete`` stays False)."""
    with contextlib.suppress(HTTPParseError):
        answer.feed(b"")


def large_body_length(answer: Answer) -> int | None:
    """The Content-Length of an answer whose head is parsed, when its body is large enough
    to be read straight into one buffer (:data:`LARGE_BODY`), else None."""
    announced = answer.headers.get("content-length", "")
    if announced.isdigit() and int(announced) >= LARGE_BODY:
        return int(announced)
    return None


def body_buffer(answer: Answer, length: int) -> tuple[memoryview, int]:
    """A new buffer for a large body of ``length`` bytes (numpy allocates it without
    zero-filling, with huge pages), holding the pieces parsed so far, and how many bytes
    those were: the rest is read straight into it (one copy, the body once in memory).

    Raises
    ------
    EOFError
        If the pieces already hold more than ``length`` bytes.
    """
    view = memoryview(np.empty(length, dtype=np.uint8).data).cast("B")
    got = 0
    for piece in answer.pieces:
        if got + len(piece) > length:
            raise EOFError(f"the response body is longer than its {length} byte Content-Length")
        view[got : got + len(piece)] = piece
        got += len(piece)
    answer.pieces.clear()
    return view, got


def body(answer: Answer) -> bytes:
    """The body of a complete answer in one ``bytes``."""
    pieces = answer.pieces
    return bytes(pieces[0]) if len(pieces) == 1 else b"".join(pieces)
