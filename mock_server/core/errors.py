"""Error kinds of the server core; frontends map them to HTTP and gRPC status codes."""

from __future__ import annotations

import enum

__all__ = ["ErrorKind", "ServerError"]


class ErrorKind(enum.Enum):
    """The kind of a core error, mirroring Triton's ``TRITONSERVER_Error_Code``."""

    UNKNOWN = "UNKNOWN"
    INTERNAL = "INTERNAL"
    NOT_FOUND = "NOT_FOUND"
    INVALID_ARG = "INVALID_ARG"
    UNAVAILABLE = "UNAVAILABLE"
    UNSUPPORTED = "UNSUPPORTED"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    CANCELLED = "CANCELLED"


#: Triton's ``Status::CodeString`` of each kind.
_KIND_TEXT = {
    ErrorKind.UNKNOWN: "Unknown",
    ErrorKind.INTERNAL: "Internal",
    ErrorKind.NOT_FOUND: "Not found",
    ErrorKind.INVALID_ARG: "Invalid argument",
    ErrorKind.UNAVAILABLE: "Unavailable",
    ErrorKind.UNSUPPORTED: "Unsupported",
    ErrorKind.ALREADY_EXISTS: "Already exists",
    ErrorKind.CANCELLED: "Cancelled",
}


class ServerError(Exception):
    """An error raised or reported by the server core.

    Parameters
    ----------
    kind : ErrorKind
        What went wrong, in the categories the frontends map to status codes.
    message : str
        A message in the spirit of Triton's, naming what was wrong.
    """

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __repr__(self) -> str:
        return f"ServerError({self.kind.name}, {self.message!r})"

    def __reduce__(self) -> tuple[type[ServerError], tuple[ErrorKind, str]]:
        # Pickled with both arguments (Exception's default keeps only the message), so that
        # errors cross to and from Python-backend stub processes.
        return (type(self), (self.kind, self.message))

    def status_text(self) -> str:
        """Triton's ``Status::AsString()``: the kind in words, then the message
        (``Internal: ...``); how Triton quotes the reason a model version failed to load."""
        return f"{_KIND_TEXT[self.kind]}: {self.message}"

    @classmethod
    def invalid_arg(cls, message: str) -> ServerError:
        return cls(ErrorKind.INVALID_ARG, message)

    @classmethod
    def not_found(cls, message: str) -> ServerError:
        return cls(ErrorKind.NOT_FOUND, message)

    @classmethod
    def unavailable(cls, message: str) -> ServerError:
        return cls(ErrorKind.UNAVAILABLE, message)

    @classmethod
    def internal(cls, message: str) -> ServerError:
        return cls(ErrorKind.INTERNAL, message)

    @classmethod
    def unsupported(cls, message: str) -> ServerError:
        return cls(ErrorKind.UNSUPPORTED, message)
