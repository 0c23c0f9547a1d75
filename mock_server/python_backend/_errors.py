"""The exception type models see (``pb_utils.TritonModelException``)."""

from __future__ import annotations

__all__ = ["TritonModelException"]


class TritonModelException(Exception):
    """Raised by ``pb_utils`` when an operation fails, and raised by models to report errors.

    Parameters
    ----------
    msg : str
        A description of what went wrong.
    """

    def __init__(self, msg: str = "") -> None:
        super().__init__(msg)
        self._msg = str(msg)

    def message(self) -> str:
        """Return the exception's message."""
        return self._msg

    def __str__(self) -> str:
        return self._msg
