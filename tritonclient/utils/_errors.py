"""The exception every client raises, and the helper that raises it."""

from __future__ import annotations

import re
import ssl
import sys
from typing import Any, NoReturn, TypeVar

#: What every client package re-exports (``tritonclient.utils``, ``.grpc`` and ``.http`` add it
#: to their own ``__all__``); the helpers below are the clients' own.
__all__ = [
    "InferenceServerAlreadyExistsError",
    "InferenceServerCancelledError",
    "InferenceServerConnectionError",
    "InferenceServerDeadlineExceededError",
    "InferenceServerException",
    "InferenceServerInternalError",
    "InferenceServerInvalidArgumentError",
    "InferenceServerNotFoundError",
    "InferenceServerPermissionDeniedError",
    "InferenceServerProtocolError",
    "InferenceServerResourceExhaustedError",
    "InferenceServerSSLError",
    "InferenceServerUnauthenticatedError",
    "InferenceServerUnavailableError",
    "InferenceServerUnimplementedError",
    "InferenceServerValueError",
    "RetryPolicy",
    "raise_error",
]


class _ExceptionType(type):
    """The metaclass of :class:`InferenceServerException`: the package's subclasses of it
    compare equal to it as types.

    NVIDIA's clients raise only ``InferenceServerException`` itself, and code written for
    them (Triton's own QA tests among it) tells an error from a result with
    ``type(item) == InferenceServerException``.  The subclasses this package raises per
    status (:class:`InferenceServerNotFoundError`, ...) would fail that comparison, so each
    one marked with :func:`same_type_as_base` is equal, as a type, to
    ``InferenceServerException`` (and hashes as it does, as equal objects must); two
    different subclasses are not equal to each other, ``is`` still tells them apart, and
    ``isinstance``, ``issubclass`` and ``except`` clauses never look at equality.  A user's own
    subclass compares as any class does.
    """

    def __eq__(cls, other: object) -> bool:
        if cls is other:
            return True
        if not isinstance(other, _ExceptionType):
            return NotImplemented
        base = InferenceServerException
        return (cls is base and _is_alias(other)) or (other is base and _is_alias(cls))

    def __ne__(cls, other: object) -> bool:
        equal = _ExceptionType.__eq__(cls, other)
        return equal if equal is NotImplemented else not equal

    def __hash__(cls) -> int:
        if cls is InferenceServerException or _is_alias(cls):
            return type.__hash__(InferenceServerException)
        return type.__hash__(cls)


def _is_alias(cls: type) -> bool:
    """Whether ``cls`` itself (not a class derived from it) was marked by
    :func:`same_type_as_base`."""
    return bool(cls.__dict__.get("_same_type_as_base", False))


C = TypeVar("C", bound=type)


def same_type_as_base(cls: C) -> C:
    """Mark a subclass of :class:`InferenceServerException` defined by this package so that
    ``type(error) == InferenceServerException`` holds for its instances, as for the plain
    exceptions NVIDIA's clients raise (see :class:`_ExceptionType`).

    Parameters
    ----------
    cls : type
        A subclass of ``InferenceServerException``.

    Returns
    -------
    type
        ``cls``.
    """
    cls._same_type_as_base = True  # type: ignore[attr-defined]
    return cls


class InferenceServerException(Exception, metaclass=_ExceptionType):
    """Exception indicating a non-success status.

    ``message()``, ``status()``, ``debug_details()`` and ``str()`` are exactly what NVIDIA's
    package gives for the same failure. Where this package knows how to fix the failure, it
    says so in :attr:`hint`, which a traceback also shows (as an exception note), without
    changing any of those.

    Parameters
    ----------
    msg : str
        A brief description of the error.
    status : str, optional
        The error code (for gRPC, the status code name such as ``"StatusCode.NOT_FOUND"``;
        for HTTP, the HTTP status code as a string).
    debug_details : str, optional
        Additional details on the error.

    Attributes
    ----------
    hint : str or None
        How to fix the failure, or None when there is nothing to add (beyond NVIDIA's
        package).
    """

    hint: str | None = None

    def __init__(
        self, msg: str | None, status: str | None = None, debug_details: str | None = None
    ) -> None:
        super().__init__(msg)
        self._msg = msg
        self._status = status
        self._debug_details = debug_details

    def __str__(self) -> str:
        msg = "" if self._msg is None else str(self._msg)
        if self._status is not None:
            msg = "[" + str(self._status) + "] " + msg
        return msg

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep status, details and hint across pickling (multiprocessing, concurrent.futures).
        return (
            type(self),
            (self._msg, self._status, self._debug_details),
            {"hint": self.hint} if self.hint else None,
        )

    def __setstate__(self, state: dict[str, Any] | None) -> None:
        if state and state.get("hint"):
            self.with_hint(state["hint"])

    def with_hint(self, hint: str | None) -> InferenceServerException:
        """Attach ``hint`` (how to fix the failure) and return the exception itself.

        The hint goes to :attr:`hint` and, as an exception note, to tracebacks; the message,
        status, details and ``str()`` stay as they are.

        Parameters
        ----------
        hint : str or None
            The hint; None or ``""`` leaves the exception as it is.

        Returns
        -------
        InferenceServerException
            ``self``.
        """
        if hint:
            self.hint = hint
            note = f"hint: {hint}"
            if note not in getattr(self, "__notes__", ()):
                with_note(self, note)
        return self

    def message(self) -> str | None:
        """Get the exception message.

        Returns
        -------
        str
            The message associated with this exception, or None if no message.
        """
        return self._msg

    def status(self) -> str | None:
        """Get the status of the exception.

        Returns
        -------
        str
            The status of the exception, or None if it has none.
        """
        return self._status

    def debug_details(self) -> str | None:
        """Get the detailed information about the exception for debugging purposes.

        Returns
        -------
        str
            The exception details, or None if there are none.
        """
        return self._debug_details


def raise_error(msg: str, hint: str | None = None) -> NoReturn:
    """Raise an :class:`InferenceServerException` with the provided message.

    Parameters
    ----------
    msg : str
        The error message (NVIDIA's text, where NVIDIA's package raises the same error).
    hint : str, optional
        How to fix it, kept in the exception's ``hint`` (see
        :meth:`InferenceServerException.with_hint`), not in the message.

    Raises
    ------
    InferenceServerException
        Always.
    """
    raise InferenceServerException(msg=msg).with_hint(hint) from None


E = TypeVar("E", bound=BaseException)


def with_note(error: E, detail: str | None) -> E:
    """``error`` with ``detail`` added as an exception note (shown in tracebacks; ``str()`` and
    the message stay as they are, e.g. NVIDIA's text); ``error`` itself is returned."""
    if detail:
        if sys.version_info >= (3, 11):
            error.add_note(detail)
        else:  # pragma: no cover - Python 3.10 keeps the note without showing it
            error.__notes__ = [*getattr(error, "__notes__", []), detail]  # type: ignore[attr-defined]
    return error


# ---------------------------------------------------------------------------------------------
# Subclasses per status (beyond NVIDIA's package).  Each is an InferenceServerException with
# the same message / status() / debug_details() as the plain one NVIDIA's client raises, so
# ``except InferenceServerException`` and ``e.status()`` checks keep working.
# ---------------------------------------------------------------------------------------------


@same_type_as_base
class InferenceServerInvalidArgumentError(InferenceServerException):
    """The server refused the request as invalid (gRPC INVALID_ARGUMENT, HTTP 400)."""


@same_type_as_base
class InferenceServerNotFoundError(InferenceServerException):
    """A model, version or shared-memory region does not exist (gRPC NOT_FOUND, HTTP 404)."""


@same_type_as_base
class InferenceServerAlreadyExistsError(InferenceServerException):
    """The object already exists (gRPC ALREADY_EXISTS, HTTP 409)."""


@same_type_as_base
class InferenceServerPermissionDeniedError(InferenceServerException):
    """The request is not allowed (gRPC PERMISSION_DENIED, HTTP 403)."""


@same_type_as_base
class InferenceServerUnauthenticatedError(InferenceServerException):
    """Missing or wrong credentials (gRPC UNAUTHENTICATED, HTTP 401)."""


@same_type_as_base
class InferenceServerResourceExhaustedError(InferenceServerException):
    """The server is out of a resource: queue full, message too large (gRPC
    RESOURCE_EXHAUSTED, HTTP 429)."""


@same_type_as_base
class InferenceServerInternalError(InferenceServerException):
    """The server failed (gRPC INTERNAL, HTTP 500)."""


@same_type_as_base
class InferenceServerUnimplementedError(InferenceServerException):
    """The server does not support the request (gRPC UNIMPLEMENTED, HTTP 501)."""


@same_type_as_base
class InferenceServerUnavailableError(InferenceServerException):
    """The server cannot be reached or is not serving (gRPC UNAVAILABLE, HTTP 502/503)."""


@same_type_as_base
class InferenceServerConnectionError(InferenceServerUnavailableError, ConnectionError):
    """The connection to the server failed: refused, reset, or closed mid-response.

    Also a :class:`ConnectionError` (an ``OSError``), so code written for NVIDIA's HTTP
    client, which lets the socket exception through, still catches it.
    """


@same_type_as_base
class InferenceServerSSLError(InferenceServerConnectionError, ssl.SSLError):
    """The TLS handshake failed (bad certificate, wrong host name...); also an
    :class:`ssl.SSLError`, as NVIDIA's HTTP client raises."""


@same_type_as_base
class InferenceServerDeadlineExceededError(InferenceServerException, TimeoutError):
    """The call did not finish in time (gRPC DEADLINE_EXCEEDED, HTTP 504, client timeouts).

    Also a :class:`TimeoutError` (``socket.timeout``), as NVIDIA's HTTP client raises.
    """


@same_type_as_base
class InferenceServerCancelledError(InferenceServerException):
    """The call was cancelled (gRPC CANCELLED, HTTP 499)."""


@same_type_as_base
class InferenceServerProtocolError(InferenceServerException):
    """The server's answer could not be decoded: truncated, not JSON, sizes that do not match
    the body, unknown datatypes, corrupt compression."""


@same_type_as_base
class InferenceServerValueError(InferenceServerException, ValueError):
    """An argument the client refuses before sending: a value out of the range its wire field
    holds.  Also a :class:`ValueError` with the same text, as NVIDIA's gRPC client raises for
    an integer beyond int64 (protobuf's ``Value out of range: N``); its :attr:`hint` names the
    argument."""


_BY_NAME: dict[str, type[InferenceServerException]] = {
    "INVALID_ARGUMENT": InferenceServerInvalidArgumentError,
    "NOT_FOUND": InferenceServerNotFoundError,
    "ALREADY_EXISTS": InferenceServerAlreadyExistsError,
    "PERMISSION_DENIED": InferenceServerPermissionDeniedError,
    "UNAUTHENTICATED": InferenceServerUnauthenticatedError,
    "RESOURCE_EXHAUSTED": InferenceServerResourceExhaustedError,
    "INTERNAL": InferenceServerInternalError,
    "UNIMPLEMENTED": InferenceServerUnimplementedError,
    "UNAVAILABLE": InferenceServerUnavailableError,
    "DEADLINE_EXCEEDED": InferenceServerDeadlineExceededError,
    "CANCELLED": InferenceServerCancelledError,
}

_BY_HTTP: dict[str, type[InferenceServerException]] = {
    "400": InferenceServerInvalidArgumentError,
    "401": InferenceServerUnauthenticatedError,
    "403": InferenceServerPermissionDeniedError,
    "404": InferenceServerNotFoundError,
    "408": InferenceServerDeadlineExceededError,
    "409": InferenceServerAlreadyExistsError,
    "413": InferenceServerResourceExhaustedError,
    "429": InferenceServerResourceExhaustedError,
    "499": InferenceServerCancelledError,
    "500": InferenceServerInternalError,
    "501": InferenceServerUnimplementedError,
    "502": InferenceServerUnavailableError,
    "503": InferenceServerUnavailableError,
    "504": InferenceServerDeadlineExceededError,
}


def exception_for_status(status: str | None) -> type[InferenceServerException]:
    """The exception class for a status.

    Parameters
    ----------
    status : str or None
        ``"StatusCode.NOT_FOUND"`` (gRPC, also the bare ``"NOT_FOUND"``) or ``"404"`` (HTTP).

    Returns
    -------
    type
        The subclass of :class:`InferenceServerException` for that status, or
        :class:`InferenceServerException` itself for other statuses and None.
    """
    if status is None:
        return InferenceServerException
    text = str(status)
    if text.isdigit():
        return _BY_HTTP.get(text, InferenceServerException)
    return _BY_NAME.get(text.rpartition(".")[2].upper(), InferenceServerException)


def specialize_exception(error: InferenceServerException) -> InferenceServerException:
    """``error`` as an instance of the subclass for its status (same message, status and
    details); ``error`` itself when it already is one or no subclass applies."""
    cls = exception_for_status(error.status())
    if cls is InferenceServerException or isinstance(error, cls):
        return error
    return cls(error.message(), error.status(), error.debug_details()).with_hint(error.hint)


class RetryPolicy:
    """Opt-in retries of idempotent calls (health, metadata, config, statistics, repository
    index, settings and shared-memory status); load/unload and registration are never
    retried, inference only with ``retry_infer``.  With a client over several replicas, a
    retried call goes to another replica.

    gRPC clients retry on UNAVAILABLE; HTTP clients on connection failures
    (:class:`InferenceServerConnectionError`).  Waits ``initial_backoff`` seconds after the
    first failure, then multiplies by ``backoff_multiplier`` up to ``max_backoff``.

    Parameters
    ----------
    max_attempts : int
        Attempts in all, the first included (>= 1). Default 3.
    initial_backoff : float
        Seconds to wait before the second attempt. Default 0.1.
    max_backoff : float
        Longest wait between attempts, in seconds. Default 1.0.
    backoff_multiplier : float
        Growth of the wait from one attempt to the next. Default 2.0.
    retry_infer : bool, keyword-only
        Also retry ``infer`` calls outside sequences (HTTP: that failed to connect or whose
        connection broke; gRPC: UNAVAILABLE). Set it only when running an inference twice
        is harmless (the models have no side effects): a request whose connection broke
        may have run already. With a client over several replicas, the retry goes to
        another replica. ``async_infer``, streams and calls of a sequence are never
        retried. Default False.
    """

    def __init__(
        self,
        max_attempts: int = 3,
        initial_backoff: float = 0.1,
        max_backoff: float = 1.0,
        backoff_multiplier: float = 2.0,
        *,
        retry_infer: bool = False,
    ) -> None:
        if int(max_attempts) < 1:
            raise_error("RetryPolicy: max_attempts must be at least 1")
        if initial_backoff < 0 or max_backoff < 0 or backoff_multiplier < 1:
            raise_error("RetryPolicy: backoffs must be >= 0 and backoff_multiplier must be >= 1")
        self.max_attempts = int(max_attempts)
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.backoff_multiplier = float(backoff_multiplier)
        self.retry_infer = bool(retry_infer)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        delay = self.initial_backoff * self.backoff_multiplier ** max(0, attempt - 1)
        return float(min(delay, self.max_backoff))

    def __repr__(self) -> str:
        return (
            f"RetryPolicy(max_attempts={self.max_attempts}, "
            f"initial_backoff={self.initial_backoff}, max_backoff={self.max_backoff}, "
            f"backoff_multiplier={self.backoff_multiplier}"
            + (", retry_infer=True)" if self.retry_infer else ")")
        )


#: Default ports of a Triton server and display names, by client protocol.
_DEFAULT_PORTS = {"grpc": 8001, "http": 8000}
_NAMES = {"grpc": "gRPC", "http": "HTTP"}


def connection_hint(detail: str, protocol: str, server: str = "") -> str:
    """A sentence that tells how to fix a failed connection, or ``""`` if none applies.

    Parameters
    ----------
    detail : str
        What the transport reported (the gRPC status details, the socket or parser error).
    protocol : str
        ``"grpc"`` or ``"http"``: the client that failed.
    server : str, optional
        ``host:port`` the client tried, named in the hint when given.

    Returns
    -------
    str
        The hint (see :meth:`InferenceServerException.with_hint`), or ``""``.
    """
    where = f" at {server}" if server else " at that address"
    other = "http" if protocol == "grpc" else "grpc"
    name, other_name = _NAMES[protocol], _NAMES[other]
    lowered = detail.lower()
    refused = ("connection refused", "connect call failed", "cannot connect to host")
    if any(text in lowered for text in refused):
        return (
            f"no server is listening{where}: start one (for a local test server, "
            "'python -m mock_server' serves HTTP on port 8000 and gRPC on port 8001) or "
            f"check the URL (Triton's {name} port is {_DEFAULT_PORTS[protocol]} by default)"
        )
    wrong_port = (
        "http1.x server" in lowered  # grpc reached an HTTP/1 server
        if protocol == "grpc"
        else "expected http/" in lowered or "prior knowledge" in lowered
    )
    if wrong_port:
        return (
            f"the server{where} does not speak {name}: is this its {other_name} port? "
            f"Point tritonclient.{protocol} at the {name} port ({_DEFAULT_PORTS[protocol]} by "
            f"default) or use tritonclient.{other} for this one"
        )
    return ""


_DATATYPE_MISMATCH = re.compile(r"data-type is '([^']*)', but model '([^']*)' expects '([^']*)'")


def _server_hint(message: str) -> str:
    if "unknown model" in message:
        return (
            "the server has no such model ready: get_model_repository_index() lists the "
            "models it knows and their state, and load_model() loads one (on a server "
            "started with --model-control-mode=explicit)"
        )
    found = _DATATYPE_MISMATCH.search(message)
    if found:
        return (
            f"create the InferInput with datatype '{found.group(3)}' and pass a numpy "
            f"array of that type (get_model_metadata('{found.group(2)}') lists each input's "
            "datatype and shape)"
        )
    if "unexpected shape for input" in message or "batch-size must be" in message:
        return "get_model_metadata() gives each input's shape (-1: any size)"
    return ""


def server_error_with_hint(error: InferenceServerException) -> InferenceServerException:
    """An error the server reported, as its status subclass and, when the message is one a
    newcomer meets (unknown model, datatype or shape against the model's metadata), with a
    hint that says how to fix it (:meth:`InferenceServerException.with_hint`: the message
    stays the server's)."""
    return specialize_exception(error).with_hint(_server_hint(error.message() or ""))
