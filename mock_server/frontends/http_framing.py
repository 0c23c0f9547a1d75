"""Request framing as Triton's HTTP server reads it: ``Content-Length`` beside
``Transfer-Encoding: chunked``.

Triton (libevhtp) accepts a request that carries both headers and reads its body by the chunked
framing, as RFC 9112 section 6.3 says (Transfer-Encoding overrides Content-Length); the
connection stays open for the next request.  Triton 2.51 then takes the request's JSON as the
first ``Content-Length`` bytes of the de-chunked body, which is the whole body when a client
sends the length of what it chunks (what was seen on the real server: 200; a smaller
``Content-Length`` fails the JSON's parsing, a larger one is refused as too short).  This
server reads a body the same way (:class:`~.http_support.RequestBodies` takes
``Content-Length`` bytes of what the parser delivers), so only the framing needs this module.

aiohttp's C parser (llhttp) refuses such a request with 400 ("Transfer-Encoding can't be
present with Content-Length") unless the parser's *lenient chunked length* flag is set, and
aiohttp neither sets it on request parsers nor offers a way to.  :class:`LenientServer` sets it
on every connection's parser: llhttp's ``llhttp_set_lenient_chunked_length`` is exported by
aiohttp's extension module, and the parser object holds its ``llhttp_t`` pointer in a field
that Python cannot name.  Where that field lies is found once per process on a probe parser,
by reading memory through ``/proc/self/mem`` (a failed read is an error, never a crash) and
checking the one thing llhttp's struct is known to hold there: its ``data`` member points back
at the parser object, as aiohttp sets it.  The probe must then parse such a request into one
chunked message.  When any of that fails (another aiohttp, no C parser, no ``/proc``), nothing
is set and aiohttp answers 400 as before.  Each connection costs one pointer read and one C
call; requests cost nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import sys
from collections.abc import Callable
from typing import Any

from aiohttp import web

__all__ = ["LenientServer", "lenient_setter"]

log = logging.getLogger("mock_server.http")

#: ``offsetof(llhttp_t, data)`` in llhttp 6 to 9 (``_index``, ``_span_pos0``, ``_span_cb0``,
#: ``error``, ``reason``, ``error_pos``, then ``data``), on a 64-bit machine.
_LLHTTP_DATA_OFFSET = 48

#: What the probe parser must accept (the body "abc", chunked, with a Content-Length beside).
_PROBE = (
    b"POST / HTTP/1.1\r\nHost: probe\r\nContent-Length: 3\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
)

_searched = False
_setter: Callable[[Any], None] | None = None


class _ProbeProtocol:
    """The least a parser's payload stream needs of a connection."""

    transport = None
    _reading_paused = False

    def pause_reading(self, *args: Any, **kwargs: Any) -> None:
        pass

    def resume_reading(self, *args: Any, **kwargs: Any) -> None:
        pass


def _read_word(mem: Any, address: int) -> int | None:
    """The pointer-sized word at ``address`` of this process, or None where it cannot be read."""
    try:
        mem.seek(address)
        raw = mem.read(ctypes.sizeof(ctypes.c_void_p))
    except (OSError, ValueError, OverflowError):
        return None
    if len(raw) != ctypes.sizeof(ctypes.c_void_p):
        return None
    return int.from_bytes(raw, sys.byteorder)


def _find(loop: asyncio.AbstractEventLoop) -> Callable[[Any], None] | None:
    """The function that makes a request parser lenient, or None (see the module's text)."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    try:
        from aiohttp import _http_parser
        from aiohttp.http_parser import HttpRequestParserC
    except ImportError:
        return None
    parser_type: Any = HttpRequestParserC
    path = getattr(_http_parser, "__file__", None)
    if not path:
        return None
    library = ctypes.CDLL(path)  # the loaded extension itself (dlopen gives its handle)
    set_lenient = getattr(library, "llhttp_set_lenient_chunked_length", None)
    if set_lenient is None:
        return None
    set_lenient.argtypes = [ctypes.c_void_p, ctypes.c_int]
    set_lenient.restype = None
    probe = parser_type(_ProbeProtocol(), loop, 1 << 16)
    found = []
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        # The fields of the parser object after its header (reference count, type): each is
        # inside the object, so reading it directly is safe; what it points to is read
        # through /proc/self/mem.
        for offset in range(16, parser_type.__basicsize__ - 7, 8):
            candidate = ctypes.c_void_p.from_address(id(probe) + offset).value
            if candidate and _read_word(mem, candidate + _LLHTTP_DATA_OFFSET) == id(probe):
                found.append(offset)
    if len(found) != 1:
        return None
    offset = found[0]

    def make_lenient(parser: Any) -> None:
        if type(parser) is parser_type:
            set_lenient(ctypes.c_void_p.from_address(id(parser) + offset).value, 1)

    make_lenient(probe)
    messages, _, _ = probe.feed_data(_PROBE)
    if len(messages) != 1 or not messages[0][0].chunked or messages[0][1].total_bytes != 3:
        return None
    return make_lenient


def lenient_setter(loop: asyncio.AbstractEventLoop) -> Callable[[Any], None] | None:
    """The function that lets a request parser read ``Content-Length`` plus chunked requests
    by their chunked framing (found once per process), or None where it cannot be had."""
    global _searched, _setter
    if not _searched:
        _searched = True
        try:
            _setter = _find(loop)
        except Exception:  # an aiohttp unlike the one this was written for: aiohttp's 400
            log.debug("no lenient chunked-length parsing", exc_info=True)
            _setter = None
        if _setter is None:
            log.debug(
                "aiohttp's parser answers 400 to requests with Content-Length and "
                "Transfer-Encoding: chunked"
            )
    return _setter


class LenientServer(web.Server):
    """``aiohttp.web.Server`` whose connections read a request with ``Content-Length`` and
    ``Transfer-Encoding: chunked`` by its chunked framing, as Triton does."""

    def __call__(self) -> Any:
        handler = super().__call__()
        make_lenient = lenient_setter(self._loop)
        parser = getattr(handler, "_parser", None)
        if make_lenient is not None and parser is not None:
            make_lenient(parser)
        return handler
