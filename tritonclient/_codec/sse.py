"""Server-Sent Events (the ``text/event-stream`` format), parsed without I/O.

:class:`SseParser` follows the WHATWG HTML "event stream interpretation" rules: lines end with
CR LF, LF or CR (a CR LF pair may be split between two reads); a line starting with ``:`` is a
comment (servers send them as keep-alives); ``field: value`` with one optional space after the
colon; several ``data`` lines join with LF; a blank line dispatches the event, unless it has no
data; a leading UTF-8 BOM is dropped; ``id`` and ``retry`` are kept as the standard says.

Both HTTP clients feed it whatever their transport read (any split of the bytes gives the same
events), so the sync (gevent) and asyncio (aiohttp) clients share one parser.  Why not a
library: the maintained SSE parsers on PyPI are bound to one transport (``sseclient-py`` pulls
from a blocking iterator, ``httpx-sse`` needs httpx, ``aiohttp-sse-client`` owns the aiohttp
request), none can be fed by both of ours, and the benchmark (``benchmarks/bench_generate.py``)
shows this parser costing less CPU per event than ``sseclient-py`` on the same bytes.

Unlike a browser's EventSource, :meth:`SseParser.close` refuses an event left without its
blank line: the generate extension never sends one, so it is a stream cut short.
"""

from __future__ import annotations

from typing import NamedTuple

from tritonclient.utils._errors import InferenceServerProtocolError

from .errors import not_utf8

__all__ = ["SseEvent", "SseParser"]

_BOM = b"\xef\xbb\xbf"


class SseEvent(NamedTuple):
    """One dispatched event."""

    #: The ``data`` lines joined with LF (UTF-8 text).
    data: str
    #: The ``event`` field (``"message"`` when the event named none).
    event: str = "message"
    #: The last event id seen so far in the stream ("" when none).
    id: str = ""


class SseParser:
    """Incremental parser: :meth:`feed` bytes as they arrive, get the complete events back.

    Attributes
    ----------
    retry : int or None
        The last valid ``retry`` field (milliseconds), as the standard keeps it.
    """

    __slots__ = ("_cr", "_data", "_event", "_id", "_last_id", "_partial", "_start", "retry")

    def __init__(self) -> None:
        self._partial = b""  # the start of a line whose end has not arrived
        self._cr = False  # the last read ended with CR: a LF that starts the next is its pair
        self._start = True  # before the first bytes (a BOM may come)
        self._data: list[bytes] = []
        self._event = b""
        self._id: bytes | None = None  # set by this event's fields, not yet dispatched
        self._last_id = ""
        self.retry: int | None = None

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SseEvent]:
        """Parse the next bytes of the stream.

        Parameters
        ----------
        chunk : bytes-like
            What the transport read, split anywhere.

        Returns
        -------
        list of SseEvent
            The events that these bytes completed, in order (often none or one).

        Raises
        ------
        InferenceServerProtocolError
            If an event's data is not UTF-8.
        """
        data = bytes(chunk)
        if not data:
            return []
        if self._start:
            if len(self._partial) + len(data) < 3 and _BOM.startswith(self._partial + data):
                self._partial += data  # maybe a BOM arriving a byte at a time
                return []
            data = self._partial + data
            self._partial = b""
            self._start = False
            if data.startswith(_BOM):
                data = data[3:]
        if self._cr:
            self._cr = False
            if data[:1] == b"\n":
                data = data[1:]
        if self._partial:
            data = self._partial + data
        if b"\r" in data:
            self._cr = data.endswith(b"\r")
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        self._partial = lines.pop()
        events: list[SseEvent] = []
        for line in lines:
            if line[:6] == b"data: ":
                self._data.append(line[6:])  # the usual line first
                continue
            if not line:
                if self._data:
                    events.append(self._dispatch())
                else:  # nothing to dispatch: the event's type is forgotten, its id is kept
                    self._event = b""
                    self._commit_id()
                continue
            if line[0] == 0x3A:  # ":" a comment, e.g. a keep-alive
                continue
            name, colon, value = line.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._data.append(value)
            elif name == b"event":
                self._event = value
            elif name == b"id":
                if b"\0" not in value:
                    self._id = value
            elif name == b"retry" and value.isdigit():
                self.retry = int(value)
            # any other field is ignored, as the standard says
        return events

    def _commit_id(self) -> None:
        if self._id is not None:
            self._last_id = _text(self._id, "an event id")
            self._id = None

    def _dispatch(self) -> SseEvent:
        pieces, self._data = self._data, []
        raw = pieces[0] if len(pieces) == 1 else b"\n".join(pieces)
        try:
            data = raw.decode("utf-8")
        except UnicodeDecodeError:
            data = _text(raw, "an event's data")  # raises with the details
        if self._id is not None:
            self._commit_id()
        if self._event:
            event = _text(self._event, "an event type")
            self._event = b""
            return SseEvent(data, event, self._last_id)
        return SseEvent(data, "message", self._last_id)

    @property
    def pending(self) -> bool:
        """Whether part of an event has arrived without the blank line that ends it."""
        return bool(self._partial or self._data or self._event or self._id is not None)

    def close(self) -> None:
        """The stream has ended: check that it ended between events.

        Raises
        ------
        InferenceServerProtocolError
            If part of an event was left without its blank line.
        """
        if self._start and self._partial:  # only the start of a BOM, or a short line
            self._start = False
        if self.pending:
            left = self._partial[:80] or b"\n".join(self._data)[:80]
            raise InferenceServerProtocolError(
                f"the event stream ended inside an event (no blank line after it): {left!r}"
            )


def _text(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        hint = (
            "a BYTES output holding bytes that are not UTF-8 cannot travel in the generate "
            "extension's JSON; use infer() and request the output as binary data"
        )
        raise not_utf8(f"{what} in the event stream is not UTF-8", raw, exc, hint) from None
