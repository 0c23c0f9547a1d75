"""What every HTTP transport sends and receives: one :class:`HttpCall` in, one
:class:`HttpReply` out, and the exception for a request that failed below HTTP.

The clients describe each endpoint as an :class:`HttpCall` (:mod:`tritonclient.http._common`);
a transport (:mod:`~tritonclient._transport.gevent`, :mod:`~tritonclient._transport.aiohttp`)
only moves its bytes and hands back the reply.  Every failure of a transport is an
:class:`~tritonclient.utils.InferenceServerException` subclass (:func:`transport_error`).
"""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from tritonclient._codec.types import Buffer
from tritonclient.utils import InferenceServerException
from tritonclient.utils._errors import (
    InferenceServerConnectionError,
    InferenceServerDeadlineExceededError,
    InferenceServerProtocolError,
    InferenceServerSSLError,
    connection_hint,
)

__all__ = ["HttpCall", "HttpReply", "transport_error"]

T = TypeVar("T")


@dataclass
class HttpReply:
    """A response as received: status, headers (lower-case names) and the whole body (a
    read-only ``memoryview`` of one buffer when a large body was read in place).

    It also reads as the geventhttpclient response NVIDIA's sync client hands to its module
    functions (``status_code``, ``get(name)``, ``read()``), for code that patches them (see
    :mod:`tritonclient.http._seams`).
    """

    status: int
    headers: dict[str, str]
    body: bytes | memoryview

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), or None."""
        return self.headers.get(name.lower())

    @property
    def status_code(self) -> int:
        """The status (geventhttpclient's name)."""
        return self.status

    def get(self, name: str, default: str | None = None) -> str | None:
        """The value of header ``name`` (any case), or ``default`` (geventhttpclient's
        ``response.get``)."""
        return self.headers.get(name.lower(), default)

    def read(self) -> bytes:
        """The whole body as ``bytes`` (geventhttpclient's ``response.read()``)."""
        return bytes(self.body)


@dataclass
class HttpCall(Generic[T]):
    """One request to send and the function that turns its reply into the method's result."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None
    parse: Callable[[HttpReply], T]
    #: Whether a retry policy may repeat the call (GETs and the repository index).
    idempotent: bool = False
    #: When set (``body`` is None), the body is these pieces in order: the JSON header, then
    #: the inputs' binary data as views of their buffers, for a transport that can send them
    #: as they are instead of joining them first.
    chunks: tuple[Buffer, ...] | None = None
    #: ``(sequence_id, sequence_start, sequence_end)`` of an inference in a sequence: a
    #: client over several replicas keeps the calls of a sequence on one replica.
    sequence: tuple[int | str, bool, bool] | None = None
    #: Whether the call changes state that lives on one server (shared-memory
    #: registrations), which a client over several replicas refuses.
    per_server: bool = False
    #: ``"infer"`` for an inference, whose answer NVIDIA's client reads with ``InferResult``
    #: (see :mod:`tritonclient.http._seams`); ``""`` for the other calls.
    kind: str = ""

    def payload(self) -> bytes | None:
        """The whole body as one ``bytes`` (joining :attr:`chunks`), or None."""
        if self.chunks is not None:
            return b"".join(self.chunks)
        return self.body


def transport_error(error: BaseException, what: str, server: str = "") -> InferenceServerException:
    """The exception for a request that failed below HTTP (socket, parser, timeout).

    Parameters
    ----------
    error : BaseException
        What the HTTP library raised.
    what : str
        The request, e.g. ``"GET /v2/health/ready"``, for the message.
    server : str, optional
        ``host:port`` of the server, named in the exception's ``hint`` when nothing listens
        there or it does not speak HTTP/1.1.

    Returns
    -------
    InferenceServerException
        :class:`InferenceServerDeadlineExceededError` for timeouts,
        :class:`InferenceServerConnectionError` for refused, reset or closed connections,
        :class:`InferenceServerProtocolError` for answers that cannot be parsed; the error
        itself when it already is an ``InferenceServerException``.
    """
    if isinstance(error, InferenceServerException):
        return error
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if isinstance(error, _ssl.SSLError):
        return InferenceServerSSLError(f"{what}: TLS failed ({detail})")
    if isinstance(error, TimeoutError):
        return InferenceServerDeadlineExceededError(f"{what}: timed out ({detail})")
    hint = connection_hint(detail, "http", server)
    if isinstance(error, OSError | EOFError):
        return InferenceServerConnectionError(f"{what}: connection failed ({detail})").with_hint(
            hint
        )
    return InferenceServerProtocolError(
        f"{what}: invalid response from the server ({detail})"
    ).with_hint(hint)
