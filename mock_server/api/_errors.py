"""Typed errors of the in-process API, translated from the core's :class:`ServerError` kinds.

Mirrors ``tritonserver``'s exception classes: :class:`TritonError` is the base, and there is one
subclass per ``TRITONSERVER_Error_Code``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..core.errors import ErrorKind, ServerError

__all__ = [
    "AlreadyExistsError",
    "CancelledError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "TritonError",
    "UnavailableError",
    "UnknownError",
    "UnsupportedError",
    "to_triton_error",
    "translate_errors",
]


class TritonError(Exception):
    """Base class of every error raised or reported by the in-process API."""


class UnknownError(TritonError):
    """An error of unknown cause (``TRITONSERVER_ERROR_UNKNOWN``)."""


class InternalError(TritonError):
    """An internal server error (``TRITONSERVER_ERROR_INTERNAL``)."""


class NotFoundError(TritonError):
    """A model, version or resource does not exist (``TRITONSERVER_ERROR_NOT_FOUND``)."""


class InvalidArgumentError(TritonError):
    """An argument or request is invalid (``TRITONSERVER_ERROR_INVALID_ARG``)."""


class UnavailableError(TritonError):
    """The server or model cannot serve the call now (``TRITONSERVER_ERROR_UNAVAILABLE``)."""


class UnsupportedError(TritonError):
    """The call is not supported (``TRITONSERVER_ERROR_UNSUPPORTED``)."""


class AlreadyExistsError(TritonError):
    """The resource already exists (``TRITONSERVER_ERROR_ALREADY_EXISTS``)."""


class CancelledError(TritonError):
    """The request was cancelled (``TRITONSERVER_ERROR_CANCELLED``).

    Not to be confused with :class:`asyncio.CancelledError`.
    """


_BY_KIND: dict[ErrorKind, type[TritonError]] = {
    ErrorKind.UNKNOWN: UnknownError,
    ErrorKind.INTERNAL: InternalError,
    ErrorKind.NOT_FOUND: NotFoundError,
    ErrorKind.INVALID_ARG: InvalidArgumentError,
    ErrorKind.UNAVAILABLE: UnavailableError,
    ErrorKind.UNSUPPORTED: UnsupportedError,
    ErrorKind.ALREADY_EXISTS: AlreadyExistsError,
    ErrorKind.CANCELLED: CancelledError,
}


def to_triton_error(error: ServerError) -> TritonError:
    """Translate a core error into the typed error of its kind.

    Parameters
    ----------
    error : ServerError
        The core's error.

    Returns
    -------
    TritonError
        An instance of the subclass matching ``error.kind``, with the same message.
    """
    return _BY_KIND.get(error.kind, UnknownError)(error.message)


@contextmanager
def translate_errors() -> Iterator[None]:
    """Re-raise any :class:`ServerError` raised inside the block as its :class:`TritonError`.

    Raises
    ------
    TritonError
        The translated error (the core error is not chained, to keep tracebacks short).
    """
    try:
        yield
    except ServerError as exc:
        raise to_triton_error(exc) from None
