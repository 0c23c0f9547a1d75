"""``pb_utils.Logger``: records on the server's logger ``"mock_server.model"``.

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

import enum
import logging
from typing import Any, ClassVar

from . import _context, _pybind
from ._pb_types import _LOG


class LogLevel(enum.IntEnum):
    """Log levels of :class:`Logger`."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


_PY_LEVELS = {
    LogLevel.INFO: logging.INFO,
    LogLevel.WARNING: logging.WARNING,
    LogLevel.ERROR: logging.ERROR,
    LogLevel.VERBOSE: logging.DEBUG,
}


_Level = LogLevel  # Logger.LogLevel shadows the name inside the class


def _emit(message: Any, level: LogLevel) -> None:
    context = _context.current()
    extra = {
        "model_name": context.model_name if context is not None else "",
        "model_version": context.model_version if context is not None else -1,
    }
    # stacklevel 3: the record names the model's line, not Logger's.
    _LOG.log(_PY_LEVELS[level], "%s", message, stacklevel=3, extra=extra)


class Logger:
    """Write to the server log (Python logger ``"mock_server.model"``).

    ``log_verbose`` logs at ``logging.DEBUG``; records carry ``model_name`` and
    ``model_version`` attributes.
    """

    INFO: ClassVar[_Level] = LogLevel.INFO
    WARNING: ClassVar[_Level] = LogLevel.WARNING
    ERROR: ClassVar[_Level] = LogLevel.ERROR
    VERBOSE: ClassVar[_Level] = LogLevel.VERBOSE
    LogLevel: ClassVar[type[_Level]] = LogLevel

    @staticmethod
    def log(message: str, level: _Level = _Level.INFO) -> None:
        """Log ``message`` at ``level`` (a ``Logger.LogLevel``; INFO by default)."""
        text = _pybind.text_arg(message)
        if text is None or not isinstance(level, LogLevel):
            raise _pybind.incompatible(
                "log",
                "(message: str, level: Logger.LogLevel = <LogLevel.INFO: 0>) -> None",
                (message, level),
            )
        _emit(text, level)

    @staticmethod
    def log_info(message: str) -> None:
        """Log ``message`` at INFO level."""
        _emit(_log_text("log_info", message), LogLevel.INFO)

    @staticmethod
    def log_warn(message: str) -> None:
        """Log ``message`` at WARNING level."""
        _emit(_log_text("log_warn", message), LogLevel.WARNING)

    @staticmethod
    def log_error(message: str) -> None:
        """Log ``message`` at ERROR level."""
        _emit(_log_text("log_error", message), LogLevel.ERROR)

    @staticmethod
    def log_verbose(message: str) -> None:
        """Log ``message`` at VERBOSE level (``logging.DEBUG``)."""
        _emit(_log_text("log_verbose", message), LogLevel.VERBOSE)


def _log_text(function: str, message: Any) -> str:
    text = _pybind.text_arg(message)
    if text is None:
        raise _pybind.incompatible(function, "(message: str) -> None", (message,))
    return text
