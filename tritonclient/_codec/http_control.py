"""The server side of the HTTP/REST endpoints other than inference (sans-I/O): the bodies of
the repository index, load and unload, trace and log settings, and shared-memory registration
requests, read with Triton's checks and error texts.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from .errors import HttpCodecError, http_bad, http_internal, json_type_text
from .jsontext import is_uint, member_object, members, parse_json_document, parse_json_object
from .settings import trace_changes
from .types import Buffer

__all__ = [
    "parse_cuda_shm_register",
    "parse_index_request",
    "parse_load_request",
    "parse_log_setting_request",
    "parse_system_shm_register",
    "parse_trace_setting_request",
    "parse_unload_request",
]


def parse_index_request(body: Buffer, *, strict_ready: bool = False) -> bool:
    """The ``ready`` flag of a repository index request (False when absent).

    Parameters
    ----------
    body : bytes-like
        The request body.
    strict_ready : bool, optional
        Refuse a non-bool ``ready`` as Triton 2.73 does: 400 "Invalid value for 'ready':
        expected a boolean" (src/http_server.cc:1457-1463, 2.73.0); otherwise Triton 2.51's 500.

    Raises
    ------
    HttpCodecError
        500 for malformed JSON; for a non-bool ``ready`` as ``strict_ready`` says.
    """
    request = parse_json_object(body)
    ready = request.get("ready", False)
    if not isinstance(ready, bool):
        if strict_ready:
            raise http_bad("Invalid value for 'ready': expected a boolean")
        raise http_internal(json_type_text("boolean"))
    return ready


def _lenient_b64decode(text: str) -> bytes:
    """Decode base64 as Triton's libb64 does: characters outside the alphabet are skipped and
    a partial last group is dropped, so no input is an error."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    kept = "".join(c for c in text if c in alphabet)
    if len(kept) % 4 == 1:  # one character of a group decodes to nothing
        kept = kept[:-1]
    kept += "=" * (-len(kept) % 4)
    return base64.b64decode(kept) if kept else b""


def parse_load_request(body: Buffer) -> tuple[str | None, dict[str, bytes]]:
    """The override ``config`` and ``file:`` contents of a load request (server side).

    Read as Triton 2.51 reads it: the members of ``parameters`` in order, each a string;
    ``config`` is kept as text (the server parses it), ``file:`` values are base64 decoded
    leniently, any other key is refused.

    Returns
    -------
    tuple of (str or None, dict)
        The config JSON text (None when absent) and ``{"file:<path>": decoded bytes}``.

    Raises
    ------
    HttpCodecError
        500 for malformed JSON, a ``parameters`` that is not an object, a non-string value,
        and an unknown key (``unexpected error on creating Triton parameter``).
    """
    request = parse_json_object(body)
    config: str | None = None
    files: dict[str, bytes] = {}
    if "parameters" not in request:
        return config, files
    for key, value in member_object(request["parameters"]).items():
        if not isinstance(value, str):
            raise http_internal(json_type_text("string"))
        if key == "config":
            config = value
        elif key.startswith("file:"):
            files[key] = _lenient_b64decode(value)
        else:
            raise http_internal("unexpected error on creating Triton parameter")
    return config, files


def parse_unload_request(body: Buffer) -> bool:
    """The ``unload_dependents`` flag of an unload request (False when absent).

    Triton 2.51 ignores a ``unload_dependents`` that is not a bool (and a ``parameters`` that
    is not an object), so this does too.

    Raises
    ------
    HttpCodecError
        500 for malformed JSON.
    """
    request = parse_json_object(body)
    value = members(request.get("parameters")).get("unload_dependents", False)
    return value if isinstance(value, bool) else False


def parse_trace_setting_request(body: Buffer) -> dict[str, Any]:
    """The changes of a ``POST .../trace/setting`` request, read as Triton 2.51 reads them.

    Only ``trace_file``, ``trace_level``, ``trace_rate``, ``trace_count`` and
    ``log_frequency`` are read (other keys are ignored); a JSON ``null`` clears a setting
    (the value is None then).  Levels other than ``OFF``, ``TIMESTAMPS`` and ``TENSORS`` are
    ignored; numbers are strings parsed with ``std::stoi`` (a 32-bit value; a negative rate or
    frequency wraps to unsigned, as in Triton).

    Returns
    -------
    dict
        ``{setting: value}`` with levels as a list and numbers as decimal strings.

    Raises
    ------
    HttpCodecError
        500 for a body that is not JSON (an empty one included) and values of the wrong JSON
        type; 400 for numbers that do not parse or are out of range, and ``OFF`` with another
        level.
    """
    request = members(parse_json_document(body))

    def read(key: str) -> Any:
        value = request[key]
        if value is None:
            return None
        if key != "trace_level":
            if not isinstance(value, str):
                raise http_internal(json_type_text("string"))
            return value
        if not isinstance(value, list):
            raise http_internal(json_type_text("array"))
        if not all(isinstance(level, str) for level in value):
            raise http_internal(json_type_text("string"))
        return value

    try:
        return trace_changes(request, read, got="got:")
    except ValueError as exc:
        raise http_bad(str(exc)) from None


def parse_log_setting_request(body: Buffer) -> dict[str, Any]:
    """The changes of a ``POST /v2/logging`` request, read as Triton 2.51 reads them.

    Only the six settings are read (other keys are ignored); a JSON ``null`` leaves a setting
    as it is (it is left out of the result).

    Returns
    -------
    dict
        ``{setting: value}``.

    Raises
    ------
    HttpCodecError
        500 for a body that is not JSON (an empty one included) and values of the wrong JSON
        type; 503 for an unknown ``log_format`` (Triton reports it as UNAVAILABLE).
    """
    request = members(parse_json_document(body))
    changes: dict[str, Any] = {}
    for key, expected in (
        ("log_file", "string"),
        ("log_info", "boolean"),
        ("log_warning", "boolean"),
        ("log_error", "boolean"),
        ("log_verbose_level", "unsigned-integer"),
        ("log_format", "string"),
    ):
        value = request.get(key)
        if value is None:
            continue
        valid = {
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "unsigned-integer": is_uint(value),
        }[expected]
        if not valid:
            raise http_internal(json_type_text(expected))
        if key == "log_format" and value not in ("default", "ISO8601"):
            raise HttpCodecError(f"invalid argument for --log_format, got: {value}", 503)
        changes[key] = value
    return changes


def _register_field(request: Mapping[str, Any], key: str) -> Any:
    if key not in request:
        raise http_bad(f"Shared memory register request has no '{key}' field")
    return request[key]


def _member_uint(request: Mapping[str, Any], key: str) -> int:
    """TritonJson's ``MemberAsUInt`` (errors without a field prefix, as Triton reports them)."""
    if key not in request:
        raise http_internal(f"attempt to access non-existing object member '{key}'")
    value = request[key]
    if not is_uint(value):
        raise http_internal(json_type_text("unsigned-integer"))
    return int(value)


def parse_system_shm_register(body: Buffer) -> tuple[str, int, int]:
    """``(key, offset, byte_size)`` of a system shared-memory register request.

    Raises
    ------
    HttpCodecError
        400 for a missing ``key`` or ``byte_size``; 500 for a body that is not JSON (an empty
        one included) and for wrong types.
    """
    request = members(parse_json_document(body))
    key = _register_field(request, "key")
    if not isinstance(key, str):
        raise http_internal(json_type_text("string"))
    offset = _member_uint(request, "offset") if "offset" in request else 0
    _register_field(request, "byte_size")
    byte_size = _member_uint(request, "byte_size")
    return key, offset, byte_size


def parse_cuda_shm_register(body: Buffer) -> tuple[bytes, int, int]:
    """``(raw_handle, device_id, byte_size)`` of a CUDA shared-memory register request.

    Raises
    ------
    HttpCodecError
        400 for a missing ``raw_handle`` or a handle that does not decode to the 64 bytes of a
        ``cudaIpcMemHandle_t``; 500 for a body that is not JSON and for wrong types.
    """
    request = members(parse_json_document(body))
    handle = members(_register_field(request, "raw_handle"))
    if "b64" not in handle:
        raise http_internal("attempt to access non-existing object member 'b64'")
    if not isinstance(handle["b64"], str):
        raise http_internal(json_type_text("string"))
    byte_size = _member_uint(request, "byte_size")
    device_id = _member_uint(request, "device_id")
    raw = _lenient_b64decode(handle["b64"])
    if len(raw) != 64:
        raise http_bad("'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t")
    return raw, device_id, byte_size
