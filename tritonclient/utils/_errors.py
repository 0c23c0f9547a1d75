"""The exception every client raises, and the helper that raises it."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["InferenceServerException", "raise_error"]


class InferenceServerException(Exception):
    """Exception indicating a non-success status.

    Parameters
    ----------
    msg : str
        A brief description of the error.
    status : str, optional
        The error code (for gRPC, the status code name such as ``"StatusCode.NOT_FOUND"``;
        for HTTP, the HTTP status code as a string).
    debug_details : str, optional
        Additional details on the error.
    """

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

    def __reduce__(self) -> tuple[type[InferenceServerException], tuple[object, ...]]:
        # Keep status and details across pickling (multiprocessing, concurrent.futures).
        return (type(self), (self._msg, self._status, self._debug_details))

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


def raise_error(msg: str) -> NoReturn:
    """Raise an :class:`InferenceServerException` with the provided message.

    Parameters
    ----------
    msg : str
        The error message.

    Raises
    ------
    InferenceServerException
        Always.
    """
    raise InferenceServerException(msg=msg) from None
