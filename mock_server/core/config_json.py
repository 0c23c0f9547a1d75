"""The JSON form of model configuration, both ways.

Triton's core speaks model configuration as JSON at its edges: an override ``config`` of a
load request (:func:`config_from_json`), what a backend is given and auto-completes, and what
the configuration endpoints and ``tritonserver``'s ``Model.config()`` return
(:func:`config_to_json`, protocol reference §3.6).  The core itself keeps ``ModelConfig``
messages; these two functions are the one place that maps them to and from JSON, with
Triton's rules (proto field names or lowerCamel names, case-insensitive enum names, 64-bit
integers as numbers or strings).
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from tritonclient._proto import model_config_pb2 as mc

from .errors import ServerError

__all__ = ["config_from_json", "config_to_json"]


def config_from_json(obj: Mapping[str, Any] | str | bytes, source: str) -> mc.ModelConfig:
    """Parse a ``ModelConfig`` from its JSON form (an override ``config`` of a load request).

    Accepts what Triton's parser accepts: proto field names or their lowerCamel JSON names,
    enum names in any letter case, 64-bit integers as numbers or strings.  Unknown fields are
    rejected.

    Parameters
    ----------
    obj : dict or str or bytes
        The JSON document, decoded or not.
    source : str
        What the JSON came from (e.g. ``"the load request of model 'm'"``); named in errors.

    Returns
    -------
    ModelConfig
        The configuration exactly as given (nothing completed).

    Raises
    ------
    ServerError
        ``INVALID_ARG`` naming ``source`` and what was wrong (bad JSON, unknown field with its
        path, wrong value type, unknown enum name).
    """
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as exc:
            raise _json_error(source, f"{exc.msg} at line {exc.lineno} column {exc.colno}") from exc
        except UnicodeDecodeError as exc:
            raise _json_error(source, "the document is not valid UTF-8") from exc
    if not isinstance(obj, Mapping):
        raise _json_error(source, f"expected a JSON object, got {type(obj).__name__}")
    normalized = _normalize_json_message(mc.ModelConfig.DESCRIPTOR, obj, source, "")
    config = mc.ModelConfig()
    try:
        json_format.ParseDict(normalized, config)
    except (json_format.ParseError, TypeError, ValueError, AttributeError) as exc:
        detail = str(exc).split("\n", 1)[0].strip()
        raise _json_error(source, detail) from exc
    return config


def _json_error(source: str, detail: str) -> ServerError:
    return ServerError.invalid_arg(f"invalid JSON model configuration from {source}: {detail}")


def _normalize_json_message(
    descriptor: Any, obj: Mapping[str, Any], source: str, path: str
) -> dict[str, Any]:
    """Check field names and canonicalize enum names (case-insensitive) for ``ParseDict``."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        field = descriptor.fields_by_name.get(key) if isinstance(key, str) else None
        if field is None and isinstance(key, str):
            field = next((f for f in descriptor.fields if f.json_name == key), None)
        if field is None:
            raise _json_error(source, f"{path}{key}: Cannot find field.")
        out[key] = _normalize_json_field(field, value, source, f"{path}{key}")
    return out


def _normalize_json_field(field: Any, value: Any, source: str, path: str) -> Any:
    if _is_map(field) and isinstance(value, Mapping):
        value_field = field.message_type.fields_by_name["value"]
        return {
            k: _normalize_json_single(value_field, v, source, f"{path}[{k}]")
            for k, v in value.items()
        }
    if _is_repeated(field) and isinstance(value, list):
        return [
            _normalize_json_single(field, item, source, f"{path}[{index}]")
            for index, item in enumerate(value)
        ]
    return _normalize_json_single(field, value, source, path)


def _normalize_json_single(field: Any, value: Any, source: str, path: str) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE and isinstance(value, Mapping):
        return _normalize_json_message(field.message_type, value, source, f"{path}.")
    if (
        field.type == FieldDescriptor.TYPE_ENUM
        and isinstance(value, str)
        and not (
            value.lstrip("-").isdigit()  # a number in a string: ParseDict takes it as is
        )
    ):
        upper = value.upper()
        for name in field.enum_type.values_by_name:
            if name.upper() == upper:
                return name
        raise _json_error(
            source, f"{path}: invalid value '{value}' for enum {field.enum_type.full_name}"
        )
    return value


def config_to_json(config: Message) -> dict[str, Any]:
    """The JSON form of a configuration, as Triton's configuration endpoints serve it (§3.6).

    Proto field names; enums as names (unknown numbers as numbers); 64-bit integers as JSON
    numbers; every scalar, repeated and map field of a present message printed even at its
    default; unset sub-messages and unset oneof members omitted.  Keys follow the ``.proto``
    declaration order (as Triton's output does); map entries are sorted by key (Triton's order
    is unspecified).  Floats print as their shortest round-tripping decimal, integral floats
    as integers (Triton prints ``[0, 1.5]``).

    Scalars that Triton 2.51 does not have (``ensemble_scheduling.max_inflight_requests``) are
    printed only when set.  Two Triton 2.51 quirks are *not* reproduced: it prints
    ``sequence_batching.state.initial_state.dims`` as strings and puts a set oneof member of
    ``InitialState`` after ``name``; this function prints numbers in declaration order.

    Parameters
    ----------
    config : ModelConfig
        The configuration (normally completed); any message of model_config.proto works.

    Returns
    -------
    dict
        A JSON-serializable dict (``json.dumps`` it for the HTTP body).
    """
    return _message_to_json(config)


#: Fields newer than Triton 2.51 (``ModelEnsembling.max_inflight_requests``, Nov 2025): a 2.51
#: server never prints them, so they are printed only when set to something else than 0.
_NEWER_SCALARS = frozenset({"inference.ModelEnsembling.max_inflight_requests"})


def _message_to_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    fields: Any = message.DESCRIPTOR.fields
    for field in fields:
        value = getattr(message, field.name)
        if field.full_name in _NEWER_SCALARS and not value:
            continue
        if _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {
                _map_key_json(key): _value_to_json(value_field, value[key]) for key in sorted(value)
            }
        elif _is_repeated(field):
            out[field.name] = [_value_to_json(field, item) for item in value]
        elif field.containing_oneof is not None or field.type == FieldDescriptor.TYPE_MESSAGE:
            if message.HasField(field.name):
                out[field.name] = _value_to_json(field, value)
        else:
            out[field.name] = _value_to_json(field, value)
    return out


def _value_to_json(field: Any, value: Any) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        return _message_to_json(value)
    if kind == FieldDescriptor.TYPE_ENUM:
        enum_value = field.enum_type.values_by_number.get(int(value))
        return enum_value.name if enum_value is not None else int(value)
    if kind == FieldDescriptor.TYPE_FLOAT:
        return _float_to_json(float(value), single=True)
    if kind == FieldDescriptor.TYPE_DOUBLE:
        return _float_to_json(float(value), single=False)
    if kind == FieldDescriptor.TYPE_BOOL:
        return bool(value)
    if kind == FieldDescriptor.TYPE_STRING:
        return str(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(bytes(value)).decode("ascii")
    return int(value)


def _map_key_json(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _float_to_json(value: float, *, single: bool) -> float | int | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    if single:
        packed = struct.pack("<f", value)
        for precision in range(6, 10):
            candidate = float(f"{value:.{precision}g}")
            if struct.pack("<f", candidate) == packed:
                return candidate
    return value


def _is_repeated(field: Any) -> bool:
    """Whether ``field`` is repeated (``is_repeated`` on protobuf >= 5.29, ``label`` before)."""
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag() if callable(flag) else flag)
    return bool(getattr(field, "label", None) == FieldDescriptor.LABEL_REPEATED)


def _is_map(field: Any) -> bool:
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and _is_repeated(field)
        and bool(field.message_type.GetOptions().map_entry)
    )
