"""What the HTTP frontend's handlers share: core error kinds as HTTP statuses, error and JSON
responses (with Triton's Content-Type rules), request bodies (:class:`RequestBodies`) and
aiohttp compatibility."""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import numpy as np
from aiohttp import web, web_log

from tritonclient._codec import errors, http_body, http_server, jsontext, types

from ..core.dataplane import Dataplane
from ..core.errors import ErrorKind, ServerError

if TYPE_CHECKING:
    from ..core.server import CoreServer
    from ..core.validation import HeaderForward

_T = TypeVar("_T")

STATUS_OF_KIND = {
    ErrorKind.UNKNOWN: 400,
    ErrorKind.INTERNAL: 500,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.INVALID_ARG: 400,
    ErrorKind.UNAVAILABLE: 503,
    ErrorKind.UNSUPPORTED: 501,
    ErrorKind.ALREADY_EXISTS: 400,
    ErrorKind.CANCELLED: 400,
}


class Frontend(Protocol):
    """What the HTTP endpoints (``/infer``, ``/generate``) use of the frontend."""

    _core: CoreServer
    _dataplane: Dataplane
    _forward: HeaderForward | None
    _bodies: RequestBodies
    _metrics: Callable[[], bytes] | None

    async def _blocking(self, fn: Callable[..., _T], *args: Any) -> _T: ...
    async def _maybe_blocking(self, size: int, fn: Callable[..., _T], *args: Any) -> _T: ...


#: Request bodies at least this large are read into a numpy buffer (huge pages, no zero-fill).
LARGE_BODY = 4 << 20


class VerboseAccessLogger(web_log.AccessLogger):
    """aiohttp's access log, written only when verbose (DEBUG) logging is on."""

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.DEBUG)


def large_buffer(size: int) -> Any:
    """A writable buffer of ``size`` bytes for a large body, not zero-filled.

    A numpy array: numpy asks the kernel for transparent huge pages for large allocations,
    so filling it takes a few page faults instead of one per 4 KiB (a ``bytearray`` or a
    plain anonymous mapping of 64 MiB costs about 5x more to fill here).
    """
    if size < LARGE_BODY:
        return bytearray(size)
    return np.empty(size, dtype=np.uint8)


#: The Content-Type of errors Triton answers before a handler has set one (its HTTP library
#: labels a body without a type ``text/plain``): unknown routes, wrong methods on the health,
#: model-ready and infer endpoints, infer errors before the request body is read and errors
#: an inference response carries.  Every other error is ``application/json``.
PLAIN = "text/plain"
JSON = "application/json"


class HttpError(Exception):
    """A response to send as ``{"error": message}`` with ``status`` and ``content_type``."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        content_type: str = JSON,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.content_type = content_type


class ChunkedBodyTooLong(HttpError):
    """A chunked request body with more non-empty chunks than allowed: 400 with Triton's JSON
    error (``application/json`` whatever the endpoint), and the connection closes without
    reading the rest (src/http_server.cc of 2.73.0, ``HTTPServer::ChunkCountIncrement``)."""

    def __init__(self, max_chunks: int) -> None:
        super().__init__(
            400,
            f"Chunked request body exceeds maximum of {max_chunks} non-empty chunks. Send "
            "fewer or larger HTTP chunks.",
        )


def status_of(error: ServerError) -> int:
    return STATUS_OF_KIND.get(error.kind, 400)


def from_server_error(error: ServerError, content_type: str = JSON) -> HttpError:
    return HttpError(status_of(error), error.message, content_type=content_type)


def from_codec_error(error: errors.HttpCodecError, content_type: str = JSON) -> HttpError:
    headers = {}
    if error.http_status == 501 and error.message() == "Unsupported compression type":
        headers[http_body.HEADER_ACCEPT_ENCODING] = "gzip, deflate"
    return HttpError(error.http_status, str(error.message()), headers, content_type)


def error_for(exc: Exception) -> HttpError:
    """The response to an exception a handler raised: an :class:`HttpError` as it is, a core
    or codec error by its kind, anything else a 500 (a bug: the caller logs it)."""
    if isinstance(exc, HttpError):
        return exc
    if isinstance(exc, ServerError):
        return from_server_error(exc)
    if isinstance(exc, errors.HttpCodecError):
        return from_codec_error(exc)
    return HttpError(500, f"unexpected server error: {exc}")


def expected_error(exc: Exception) -> bool:
    """Whether ``exc`` is an answer (:func:`error_for` maps it), not a bug to log."""
    return isinstance(exc, HttpError | ServerError | errors.HttpCodecError)


@contextlib.contextmanager
def plain_errors() -> Iterator[None]:
    """Errors raised inside are sent as ``text/plain``, as Triton sends them there."""
    try:
        yield
    except ServerError as exc:
        raise from_server_error(exc, PLAIN) from None
    except errors.HttpCodecError as exc:
        raise from_codec_error(exc, PLAIN) from None
    except HttpError as exc:
        if not isinstance(exc, ChunkedBodyTooLong):
            exc.content_type = PLAIN
        raise


def error_response(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    content_type: str = JSON,
) -> web.Response:
    return web.Response(
        status=status,
        body=http_server.encode_error(message),
        content_type=content_type,
        headers=headers,
    )


def json_response(obj: Any) -> web.Response:
    return web.Response(body=jsontext.dumps(obj, raw_strings=True), content_type="application/json")


def empty(status: int = 200, content_type: str = "application/json") -> web.Response:
    return web.Response(status=status, body=b"", content_type=content_type)


def filter_kwargs(target: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    """The keyword arguments ``target`` accepts (older aiohttp lacks some)."""
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return {}
    return {k: v for k, v in kwargs.items() if k in parameters}


#: The largest body buffer kept for the next request.
_MAX_SPARE = 1 << 30


class RequestBodies:
    """Reads request bodies for the HTTP frontend: into one buffer, size-checked against
    ``--http-max-input-size``, inflated with Triton's errors.

    Parameters
    ----------
    max_input_size : int or None
        The largest JSON request part / raw binary input / other JSON body accepted, after
        decompression (None: no limit, as Triton 2.51).
    max_chunks : int, optional
        How many non-empty chunks a chunked body may have (None: any number, as Triton 2.51).
    """

    def __init__(self, max_input_size: int | None, max_chunks: int | None = None) -> None:
        self._max_input_size = max_input_size
        self._max_chunks = max_chunks
        self._spare: np.ndarray[Any, Any] | None = None

    @property
    def max_input_size(self) -> int | None:
        """``--http-max-input-size`` (None: no limit)."""
        return self._max_input_size

    async def read(self, request: web.BaseRequest) -> types.Buffer:
        """The whole request body, read into one buffer (one copy from the socket).

        The buffer is read-only whichever way it was assembled, so input arrays decoded from it
        are consistently read-only.
        """
        length = request.content_length
        if length is None:
            return await self._read_unsized(request)
        if length == 0:
            return b""
        first = await request.content.readany()
        if len(first) >= length:
            return first[:length]
        view = memoryview(self._buffer(length))
        view[: len(first)] = first
        position = len(first)
        while position < length:
            piece = await request.content.readany()
            if not piece:
                raise HttpError(400, "the request body is shorter than its Content-Length")
            end = min(position + len(piece), length)
            view[position:end] = piece[: end - position]
            position = end
        return view.toreadonly()

    async def _read_unsized(self, request: web.BaseRequest) -> bytes:
        """A body without ``Content-Length`` (chunked), its non-empty chunks counted."""
        pieces = []
        if self._max_chunks is None:
            while piece := await request.content.readany():
                pieces.append(piece)
            return b"".join(pieces)
        chunks = 0
        while True:
            piece, chunk_end = await request.content.readchunk()
            if piece:
                pieces.append(piece)
            elif not chunk_end:
                return b"".join(pieces)  # the end of the body
            if chunk_end:  # aiohttp marks only the ends of non-empty chunks
                chunks += 1
                if chunks > self._max_chunks:
                    raise ChunkedBodyTooLong(self._max_chunks)

    def _buffer(self, length: int) -> Any:
        """A buffer for a request body of ``length`` bytes.

        The last large buffer is used again once nothing refers to it any more (its request
        was answered and no array made from it survives, as the reference count shows): its
        pages are already in memory, while a new 64 MiB buffer costs thousands of page faults.
        """
        if length < LARGE_BODY:
            return bytearray(length)
        spare = self._spare
        # References: the attribute, the local name and getrefcount's argument.
        if spare is not None and spare.nbytes >= length and sys.getrefcount(spare) <= 3:
            return spare[:length]
        fresh = large_buffer(length)
        self._spare = fresh if length <= _MAX_SPARE else None
        return fresh

    def decompressed(self, encoding: str | None, body: types.Buffer, limit: bool) -> types.Buffer:
        """``body`` inflated by its ``Content-Encoding`` (``limit``: to at most
        ``--http-max-input-size``), with Triton's errors."""
        try:
            return http_body.decompress(
                body,
                encoding,
                max_size=self._max_input_size if limit else None,
                lenient=True,
            )
        except errors.HttpCodecError as exc:
            raise from_codec_error(exc) from None

    async def json(self, request: web.BaseRequest) -> types.Buffer:
        """The body of a JSON-only endpoint, size-checked (Triton decompresses only inference
        bodies: a compressed one here is parsed as it is, and fails as JSON)."""
        body = await self.read(request)
        self.check_size(len(body), "JSON")
        return body

    def check_size(self, size: int, what: Literal["JSON", "raw input"]) -> None:
        """Refuse a JSON request part or a raw binary body over ``--http-max-input-size``
        with Triton's words (src/http_server.cc of 2.73.0: ``EVBufferToJson``,
        ``EVBufferToRawInput``)."""
        limit = self._max_input_size
        if limit is None or size <= limit:
            return
        if what == "JSON":
            text = (
                f"request JSON size of {size} bytes exceeds the maximum allowed input size of "
                f"{limit} bytes"
            )
        else:
            text = (
                f"Raw input has a byte_size ({size} bytes) that exceeds the maximum allowed "
                f"value of {limit} bytes"
            )
        raise HttpError(400, f"{text}. Use --http-max-input-size to increase the limit.")
