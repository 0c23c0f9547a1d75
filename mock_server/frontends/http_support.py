"""What the HTTP frontend's handlers share: core error kinds as HTTP statuses, error and JSON
responses (with Triton's Content-Type rules), body buffers and aiohttp compatibility."""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from aiohttp import web, web_log

from tritonclient._codec import errors, http_body, http_server, jsontext

from ..core.errors import ErrorKind, ServerError

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


def status_of(error: ServerError) -> int:
    return STATUS_OF_KIND.get(error.kind, 400)


def from_server_error(error: ServerError, content_type: str = JSON) -> HttpError:
    return HttpError(status_of(error), error.message, content_type=content_type)


def from_codec_error(error: errors.HttpCodecError, content_type: str = JSON) -> HttpError:
    headers = {}
    if error.http_status == 501 and error.message() == "Unsupported compression type":
        headers[http_body.HEADER_ACCEPT_ENCODING] = "gzip, deflate"
    return HttpError(error.http_status, str(error.message()), headers, content_type)


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
