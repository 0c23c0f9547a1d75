"""Trace and log settings (Triton's trace and logging extensions), independent of the wire.

Values are kept in the HTTP form of the protocol: trace settings as strings (``trace_level`` a
list of strings), log settings as bool/int/str.  Frontends convert to and from their wire
types; errors are :class:`ServerError` with Triton's messages.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .errors import ServerError

__all__ = ["LogSettings", "TraceSettings"]

TRACE_LEVELS = ("OFF", "TIMESTAMPS", "TENSORS")
_TRACE_KEYS = (
    "trace_level",
    "trace_rate",
    "trace_count",
    "log_frequency",
    "trace_file",
    "trace_mode",
)


class TraceSettings:
    """Global trace settings plus per-model overrides.

    Parameters
    ----------
    trace_file : str
        Where traces would be written (read-only over the network).
    """

    def __init__(self, trace_file: str = "") -> None:
        self._lock = threading.Lock()
        self._global: dict[str, Any] = {
            "trace_level": ["OFF"],
            "trace_rate": "1000",
            "trace_count": "-1",
            "log_frequency": "0",
            "trace_file": trace_file,
            "trace_mode": "triton",
        }
        self._models: dict[str, dict[str, Any]] = {}

    def get(self, model: str | None = None) -> dict[str, Any]:
        """The effective settings, globally or for ``model``."""
        with self._lock:
            merged = dict(self._global)
            if model:
                merged.update(self._models.get(model, {}))
            return {k: list(v) if isinstance(v, list) else v for k, v in merged.items()}

    @staticmethod
    def _check(key: str, value: Any) -> Any:
        if key == "trace_file":
            raise ServerError.unsupported(
                "trace file location can not be updated through network protocol"
            )
        if key == "trace_mode":
            raise ServerError.invalid_arg("trace mode can not be updated through network protocol")
        if key == "trace_level":
            levels = [value] if isinstance(value, str) else value
            if not isinstance(levels, list) or not all(isinstance(v, str) for v in levels):
                raise ServerError.invalid_arg("trace_level must be a list of strings")
            for level in levels:
                if level not in TRACE_LEVELS:
                    raise ServerError.invalid_arg(
                        f"Unable to set trace level '{level}'; expected one of "
                        f"{', '.join(TRACE_LEVELS)}"
                    )
            if "OFF" in levels and len(levels) > 1:
                raise ServerError.invalid_arg("Expect only one trace level 'OFF' is specified")
            return list(levels)
        if key not in _TRACE_KEYS:
            raise ServerError.invalid_arg(f"Unknown trace setting '{key}'")
        if not isinstance(value, str):
            raise ServerError.invalid_arg(f"trace setting '{key}' must be given as a string")
        try:
            number = int(value)
        except ValueError:
            raise ServerError.invalid_arg(f"Unable to parse '{key}', got: {value}") from None
        lowest = -1 if key == "trace_count" else 0
        if number < lowest:
            raise ServerError.invalid_arg(f"invalid value for '{key}': {value}")
        return str(number)

    def update(self, changes: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        """Apply ``changes`` (None clears a per-model override) and return the new settings."""
        checked = {k: (None if v is None else self._check(k, v)) for k, v in changes.items()}
        with self._lock:
            new_global = dict(self._global)
            new_model = dict(self._models.get(model, {})) if model else {}
            for key, value in checked.items():
                if model and value is None:
                    new_model.pop(key, None)
                elif model:
                    new_model[key] = value
                elif value is not None:
                    new_global[key] = value
            effective = {**new_global, **new_model}
            # Validate the result before keeping any of it.
            if effective["trace_level"] != ["OFF"] and not effective["trace_file"]:
                raise ServerError.invalid_arg(
                    "Attempting to set invalid trace setting :trace file name is not given"
                )
            self._global = new_global
            if model:
                self._models[model] = new_model
        return self.get(model)


class LogSettings:
    """The server's log settings, applied to the ``mock_server`` loggers."""

    _BOOLS = ("log_info", "log_warning", "log_error")

    def __init__(self, log_file: str = "") -> None:
        self._lock = threading.Lock()
        self._values: dict[str, Any] = {
            "log_file": log_file,
            "log_info": True,
            "log_warning": True,
            "log_error": True,
            "log_verbose_level": 0,
            "log_format": "default",
        }
        self._apply()

    def get(self) -> dict[str, Any]:
        """All six settings."""
        with self._lock:
            return dict(self._values)

    def update(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Validate and apply ``changes``; return all six settings."""
        checked: dict[str, Any] = {}
        for key, value in changes.items():
            if key == "log_file":
                if value is None:
                    continue
                raise ServerError.unsupported(
                    "log file location can not be updated through network protocol"
                )
            if key in self._BOOLS:
                if not isinstance(value, bool):
                    raise ServerError.invalid_arg(f"expect boolean for '{key}'")
            elif key == "log_verbose_level":
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ServerError.invalid_arg(f"expect unsigned integer for '{key}'")
            elif key == "log_format":
                if value not in ("default", "ISO8601"):
                    raise ServerError.invalid_arg(f"invalid argument for log_format, got: {value}")
            else:
                raise ServerError.invalid_arg(f"Unknown logging setting '{key}'")
            checked[key] = value
        with self._lock:
            self._values.update(checked)
        self._apply()
        return self.get()

    def _apply(self) -> None:
        values = self.get()
        if values["log_verbose_level"] > 0:
            level = logging.DEBUG
        elif values["log_info"]:
            level = logging.INFO
        elif values["log_warning"]:
            level = logging.WARNING
        elif values["log_error"]:
            level = logging.ERROR
        else:
            level = logging.CRITICAL + 1
        logging.getLogger("mock_server").setLevel(level)
