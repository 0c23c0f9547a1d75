"""The codec's errors: one hierarchy for both protocols.

A server-side decoder that finds a request it must refuse raises a :class:`CodecError`, an
:class:`~tritonclient.utils.InferenceServerException` carrying Triton's message, the server
error kind (``INVALID_ARG``, ``INTERNAL``, ...) and the HTTP status Triton answers with.  The
HTTP codec raises :class:`HttpCodecError` (made from a status), the gRPC codec
:class:`GrpcCodecError` (made from a kind); a frontend renders either.  Client-side decoding
faults are :class:`~tritonclient.utils.InferenceServerProtocolError` (no status), raised by
:mod:`tritonclient._codec.checks`.
"""

from __future__ import annotations

from tritonclient.utils import InferenceServerException
from tritonclient.utils._errors import InferenceServerProtocolError, same_type_as_base

__all__ = ["CodecError", "GrpcCodecError", "HttpCodecError", "not_utf8", "request_prefix"]

#: The HTTP status Triton answers each error kind with (section 8).
_KIND_TO_HTTP = {
    "INVALID_ARG": 400,
    "NOT_FOUND": 404,
    "INTERNAL": 500,
    "UNSUPPORTED": 501,
    "UNAVAILABLE": 503,
    "ALREADY_EXISTS": 409,
}
_HTTP_TO_KIND = {status: kind for kind, status in _KIND_TO_HTTP.items()}


@same_type_as_base
class CodecError(InferenceServerException):
    """A message that does not follow the protocol, found while decoding it.

    Parameters
    ----------
    msg : str
        What was wrong, in Triton's words where it has them.
    kind : str
        The server error kind name (``"INVALID_ARG"``, ``"INTERNAL"``, ...).
    http_status : int
        The HTTP status Triton answers with; the exception's :meth:`status` is it as a string.
    in_response : bool, optional
        True for a fault Triton reports in the inference response rather than when the
        request arrives (the server then answers as for a failed response).
    """

    def __init__(self, msg: str, kind: str, http_status: int, in_response: bool = False) -> None:
        super().__init__(msg, status=str(http_status))
        self.kind = kind
        self.http_status = http_status
        self.in_response = in_response

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (CodecError, (self.message(), self.kind, self.http_status, self.in_response))


@same_type_as_base
class HttpCodecError(CodecError):
    """A :class:`CodecError` of the HTTP codec, made from the status Triton answers with.

    Parameters
    ----------
    msg : str
        What was wrong.
    http_status : int, optional
        The HTTP status for the error response.  Default 400.
    in_response : bool, optional
        As for :class:`CodecError`.
    """

    def __init__(self, msg: str, http_status: int = 400, in_response: bool = False) -> None:
        super().__init__(msg, _HTTP_TO_KIND.get(http_status, "INTERNAL"), http_status, in_response)

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (HttpCodecError, (self.message(), self.http_status, self.in_response))


@same_type_as_base
class GrpcCodecError(CodecError):
    """A :class:`CodecError` of the gRPC codec, made from the server error kind.

    Parameters
    ----------
    kind : str
        The server error kind name (see ``grpc_common.ERROR_KIND_TO_STATUS``).
    message : str
        Triton's message for the problem.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message, kind, _KIND_TO_HTTP.get(kind, 500))

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (GrpcCodecError, (self.kind, self.message()))

    def __repr__(self) -> str:
        return f"GrpcCodecError({self.kind}, {self.message()!r})"


def request_prefix(request_id: str) -> str:
    """Triton's ``[request id: <id>] `` message prefix."""
    return f"[request id: {request_id or '<id_unknown>'}] "


# -- the HTTP codec's errors, in Triton's words ----------------------------------------------
def http_bad(msg: str) -> HttpCodecError:
    """A validation error (400)."""
    return HttpCodecError(msg, 400)


def http_internal(msg: str) -> HttpCodecError:
    """A JSON parsing/typing error (Triton reports these as INTERNAL, 500)."""
    return HttpCodecError(msg, 500)


def json_type_text(expected: str) -> str:
    """TritonJson's text for a value of the wrong type, e.g. ``non-string as string``."""
    return f"attempt to access JSON non-{expected} as {expected}"


def json_type_error(field_name: str, expected: str, verb: str = "parse") -> HttpCodecError:
    """TritonJson's error for member ``field_name`` of the wrong type (500)."""
    return http_internal(f"Unable to {verb} '{field_name}': {json_type_text(expected)}")


def json_missing(field_name: str) -> HttpCodecError:
    """TritonJson's error for a missing member ``field_name`` (500)."""
    return http_internal(
        f"Unable to parse '{field_name}': attempt to access non-existing object member "
        f"'{field_name}'"
    )


# -- the gRPC codec's errors ------------------------------------------------------------------
def grpc_invalid(message: str) -> GrpcCodecError:
    """An ``INVALID_ARG`` refusal."""
    return GrpcCodecError("INVALID_ARG", message)


def grpc_wrong_type(key: str, expected: str, tensor: str | None = None) -> GrpcCodecError:
    """Triton's refusal of parameter ``key`` (of ``tensor``) with a value of the wrong type."""
    where = f" for tensor '{tensor}'" if tensor is not None else ""
    return grpc_invalid(f"invalid value type for '{key}' parameter{where}, expected {expected}.")


def not_utf8(
    what: str, raw: bytes, error: UnicodeDecodeError, hint: str
) -> InferenceServerException:
    """The error of an answer's text that is not UTF-8: ``what``, then the first bad byte, its
    offset and the bytes around it, with ``hint``.

    Parameters
    ----------
    what : str
        What is wrong, e.g. "the response body is not valid UTF-8".
    raw : bytes
        The bytes ``error`` came from.
    error : UnicodeDecodeError
        What decoding them raised.
    hint : str
        How the user avoids it.
    """
    start = max(error.start - 20, 0)
    return InferenceServerProtocolError(
        f"{what}: byte 0x{raw[error.start]:02x} at offset {error.start} "
        f"({raw[start : error.start + 20]!r})"
    ).with_hint(hint)
