"""Trace and log settings (Triton's trace and logging extensions), independent of the wire.

Values are kept in the HTTP form of the protocol: trace settings as strings (``trace_level`` a
list of strings), log settings as bool/int/str.  Frontends convert to and from their wire
types; errors are :class:`ServerError` with Triton's messages.

Traces are written as Triton writes them in ``triton`` trace mode: a JSON array in
``trace_file``, per traced request one object naming the model (``id``, ``model_name``,
``model_version``, ``request_id``, ``parent_id``) and, with ``TIMESTAMPS``, one with its
``timestamps`` (``REQUEST_START``, ``QUEUE_START``, ``COMPUTE_START``,
``COMPUTE_INPUT_END``, ``COMPUTE_OUTPUT_START``, ``COMPUTE_END``, ``REQUEST_END``; steady
clock nanoseconds); with ``TENSORS``, one object per input (``TENSOR_QUEUE_INPUT``) and output
(``TENSOR_BACKEND_OUTPUT``) with its name, datatype, shape and values.  ``trace_rate`` N
traces the first of every N requests, ``trace_count`` limits how many are traced (-1: no
limit), ``log_frequency`` 0 writes everything to ``trace_file`` at shutdown and N writes
every N traces to ``<trace_file>.<index>`` (the rest at shutdown).  The core has no separate
input and output stages, so ``COMPUTE_INPUT_END`` equals ``COMPUTE_START`` and
``COMPUTE_OUTPUT_START`` equals ``COMPUTE_END``.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

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
    initial : dict, optional
        The start-up settings (``--trace-config``): what clearing a global setting restores.
    """

    def __init__(self, trace_file: str = "", initial: dict[str, Any] | None = None) -> None:
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
        self._enabled = False  # some scope has a level other than OFF (checked lock-free)
        self._seen: dict[str, int] = {}  # requests seen per scope, for trace_rate
        self._ids = itertools.count(1)
        self._pending: list[dict[str, Any]] = []
        self._written = 0  # traces kept since the last write (log_frequency)
        self._file_index = 0
        #: The global settings the server started with: what clearing one restores.
        self._initial = dict(self._global)
        if initial:
            self.update(initial)
            self._initial = dict(self._global)

    # -- tracing ---------------------------------------------------------------------------
    def start(self, model: str) -> tuple[int, tuple[str, ...]]:
        """Decide whether to trace a request to ``model``.

        Returns
        -------
        tuple of (int, tuple of str)
            The trace id (0: not traced) and the trace levels in effect.
        """
        if not self._enabled:
            return 0, ()
        with self._lock:
            scope = model if model in self._models else ""
            merged = {**self._global, **self._models.get(model, {})}
            levels = tuple(merged["trace_level"])
            if levels == ("OFF",) or not merged["trace_file"]:
                return 0, ()
            seen = self._seen.get(scope, 0)
            self._seen[scope] = seen + 1
            if seen % max(int(merged["trace_rate"]), 1):
                return 0, ()
            count = int(merged["trace_count"])
            if count == 0:
                return 0, ()
            if count > 0:  # the remaining count goes down where it was set
                target = (
                    self._models[model]
                    if "trace_count" in self._models.get(model, {})
                    else self._global
                )
                target["trace_count"] = str(count - 1)
            return next(self._ids), levels

    def record(
        self,
        trace_id: int,
        levels: Sequence[str],
        *,
        model: str,
        version: int,
        request_id: str,
        timestamps: Sequence[tuple[str, int]],
        inputs: Sequence[Any] = (),
        outputs: Sequence[Any] = (),
    ) -> None:
        """Keep the trace of a finished request (see the module docstring for the format).

        ``inputs`` and ``outputs`` are core tensors (``name``, ``datatype``, ``shape``,
        ``data``); they are written only at the ``TENSORS`` level.
        """
        entries: list[dict[str, Any]] = [
            {
                "id": trace_id,
                "model_name": model,
                "model_version": version,
                "request_id": request_id,
                "parent_id": 0,
            }
        ]
        if "TIMESTAMPS" in levels:
            entries.append(
                {"id": trace_id, "timestamps": [{"name": n, "ns": ns} for n, ns in timestamps]}
            )
        if "TENSORS" in levels:
            for activity, tensors in (
                ("TENSOR_QUEUE_INPUT", inputs),
                ("TENSOR_BACKEND_OUTPUT", outputs),
            ):
                entries.extend(
                    {"id": trace_id, "activity": activity, "tensor": _tensor_json(t)}
                    for t in tensors
                )
        with self._lock:
            self._pending.extend(entries)
            self._written += 1
            frequency = int(self._global["log_frequency"])
            if frequency > 0 and self._written >= frequency:
                self._write_locked(f"{self._global['trace_file']}.{self._file_index}")
                self._file_index += 1

    def flush(self) -> None:
        """Write the traces not written yet (server shutdown)."""
        with self._lock:
            if not self._pending or not self._global["trace_file"]:
                return
            path = self._global["trace_file"]
            if int(self._global["log_frequency"]) > 0:
                path = f"{path}.{self._file_index}"
                self._file_index += 1
            self._write_locked(path)

    def _write_locked(self, path: str) -> None:
        entries, self._pending, self._written = self._pending, [], 0
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(entries, f)
        except OSError as exc:
            logging.getLogger("mock_server").error("cannot write trace file '%s': %s", path, exc)

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
        """Apply ``changes`` and return the new settings.  None clears a setting, as in
        Triton: a model's setting then follows the global one again, a global setting goes
        back to its value at start-up."""
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
                else:
                    new_global[key] = self._initial[key]
            effective = {**new_global, **new_model}
            # Validate the result before keeping any of it.
            if effective["trace_level"] != ["OFF"] and not effective["trace_file"]:
                raise ServerError.invalid_arg(
                    "Attempting to set invalid trace setting :trace file name is not given"
                )
            self._global = new_global
            if model:
                self._models[model] = new_model
            self._enabled = any(
                scope.get("trace_level", ["OFF"]) != ["OFF"]
                for scope in (self._global, *self._models.values())
            )
        return self.get(model)


def _tensor_json(tensor: Any) -> dict[str, str]:
    data = np.asarray(tensor.data).reshape(-1)
    if data.dtype == np.object_:
        values = ",".join(
            v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)
            for v in data.tolist()
        )
    else:
        values = ",".join(str(v) for v in data.tolist())
    return {
        "name": tensor.name,
        "data": values,
        "shape": ",".join(str(d) for d in tensor.shape),
        "dtype": tensor.datatype,
    }


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
