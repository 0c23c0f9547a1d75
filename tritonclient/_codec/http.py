"""The HTTP/REST wire format of the KServe v2 / Triton protocol, as pure functions (sans-I/O).

One module for both sides of the connection, so that each piece of protocol knowledge lives in
one place (``docs/protocol.md`` section 3):

* **client side** -- :func:`encode_input`, :func:`encode_output`, :func:`encode_infer_request`
  build an inference request body (a list of buffers, zero-copy for numpy inputs, plus the JSON
  length for ``Inference-Header-Content-Length``); :func:`decode_infer_response` splits a
  response body and turns outputs into numpy arrays with :func:`numpy.frombuffer` over the
  received bytes; :func:`error_from_response` maps a non-200 answer to
  :class:`~tritonclient.utils.InferenceServerException`.  Helpers for the other endpoints build
  paths (:func:`model_path`) and request bodies (:func:`encode_load_request`, ...).
* **server side** -- :func:`parse_header_length`, :func:`parse_infer_request` (JSON plus the
  binary tensor extension), :func:`parse_raw_request` (``Inference-Header-Content-Length: 0``),
  :func:`decode_input` (JSON data or raw bytes to numpy), :func:`encode_infer_response`, the
  generate extension (:func:`parse_generate_request`, :func:`encode_generate_response`,
  :func:`encode_sse_event`) and the bodies of the other endpoints.  Every problem is a
  :class:`HttpCodecError` carrying the HTTP status Triton answers with (JSON parsing and typing
  failures are 500, validation failures 400, see section 8).
* **both** -- compression (:func:`compress`, :func:`decompress`, :func:`negotiate_encoding`).

Buffers
    Bodies are passed around as :data:`Buffer` objects (``bytes``, ``bytearray`` or
    ``memoryview``).  Request bodies are built as a list of chunks so that a transport can
    write numpy arrays without joining them; received bodies are sliced with ``memoryview`` and
    numbers decoded with :func:`numpy.frombuffer`, so an output array shares memory with the
    body it came from.

Non-UTF-8 BYTES in JSON
    Triton writes the raw bytes of a BYTES element into JSON strings without escaping them, so
    a JSON body may not be valid UTF-8 (section 3.7.3).  This module does the same when it
    encodes, and decodes every JSON body as UTF-8 with ``surrogateescape``: the raw bytes of
    such an element survive the round trip (``str.encode("utf-8", "surrogateescape")`` gives
    them back), for this server and for Triton alike.

Error messages follow Triton 2.51 (section 10) where it has one.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, quote_plus

import ml_dtypes
import numpy as np
import numpy.typing as npt

from tritonclient._codec.numbers import atoi
from tritonclient._codec.raw import (
    DecodedOutputs,
    Requested,
    bytes_fault,
    decode_raw_output,
    known_datatype,
    response_fault,
    response_shape,
)
from tritonclient._codec.settings import TRACE_NUMBERS, trace_levels, trace_number
from tritonclient.utils import (
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
    InferenceServerException,
    InferenceServerProtocolError,
    deserialize_bytes_tensor,
    raise_error,
    serialize_bf16_tensor,
    serialize_byte_tensor,
)
from tritonclient.utils._codec import (
    check_input_array,
    check_parameter_name,
    json_number_text,
)
from tritonclient.utils._dtypes import DATATYPES

__all__ = [
    "HEADER_ACCEPT_ENCODING",
    "HEADER_CONTENT_ENCODING",
    "HEADER_INFERENCE_HEADER_CONTENT_LENGTH",
    "MAX_JSON_DEPTH",
    "SUPPORTED_ENCODINGS",
    "Buffer",
    "DecodedResponse",
    "EncodedBody",
    "HttpCodecError",
    "ParamValue",
    "ParsedInferRequest",
    "ParsedInput",
    "ParsedOutput",
    "RequestInput",
    "RequestOutput",
    "RequestParameters",
    "Requested",
    "ResponseOutput",
    "SharedMemoryRef",
    "client_json",
    "compress",
    "cuda_shm_path",
    "decode_infer_response",
    "decode_input",
    "decompress",
    "dumps",
    "encode_cuda_shm_register",
    "encode_error",
    "encode_generate_response",
    "encode_index_request",
    "encode_infer_request",
    "encode_infer_response",
    "encode_input",
    "encode_input_raw",
    "encode_input_shm",
    "encode_load_request",
    "encode_output",
    "encode_query",
    "encode_sse_event",
    "encode_system_shm_register",
    "encode_unload_request",
    "error_from_response",
    "loads",
    "model_path",
    "negotiate_encoding",
    "parse_cuda_shm_register",
    "parse_generate_request",
    "parse_header_length",
    "parse_index_request",
    "parse_infer_request",
    "parse_json_document",
    "parse_json_object",
    "parse_load_request",
    "parse_log_setting_request",
    "parse_raw_request",
    "parse_request_parameters",
    "parse_system_shm_register",
    "parse_trace_setting_request",
    "parse_unload_request",
    "system_shm_path",
    "tensor_from_buffer",
    "tensor_from_json",
    "tensor_to_buffer",
    "tensor_to_json",
]

#: A body or a piece of one.
Buffer = bytes | bytearray | memoryview
#: A request/response parameter value as JSON carries it.
ParamValue = bool | int | float | str

HEADER_INFERENCE_HEADER_CONTENT_LENGTH = "Inference-Header-Content-Length"
HEADER_CONTENT_ENCODING = "Content-Encoding"
HEADER_ACCEPT_ENCODING = "Accept-Encoding"
#: Content codings this module compresses and decompresses.
SUPPORTED_ENCODINGS = ("gzip", "deflate")
#: The deepest nesting of an input's JSON ``data`` that is accepted (as current Triton).
MAX_JSON_DEPTH = 100

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1
_INT32_MAX = 2**31 - 1
_INT_TYPES = frozenset({"INT8", "INT16", "INT32", "INT64"})
_FLOAT_TYPES = frozenset({"FP32", "FP64"})
_NO_JSON_TYPES = frozenset({"FP16", "BF16"})


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


class HttpCodecError(InferenceServerException):
    """A request or response that does not follow the protocol.

    Raised by the server-side functions; ``http_status`` is the status Triton answers with
    (the same number is the exception's :meth:`status`, as a string).

    Parameters
    ----------
    msg : str
        What was wrong, in Triton's words where it has them.
    http_status : int, optional
        The HTTP status for the error response.  Default 400.
    in_response : bool, optional
        True for a fault Triton reports in the inference response rather than when the
        request arrives (the server then answers as for a failed response).
    """

    def __init__(self, msg: str, http_status: int = 400, in_response: bool = False) -> None:
        super().__init__(msg, status=str(http_status))
        self.http_status = http_status
        self.in_response = in_response

    def __reduce__(self) -> tuple[type[HttpCodecError], tuple[object, ...]]:
        return (type(self), (self.message(), self.http_status, self.in_response))


def _bad(msg: str) -> HttpCodecError:
    """A validation error (400)."""
    return HttpCodecError(msg, 400)


def _internal(msg: str) -> HttpCodecError:
    """A JSON parsing/typing error (Triton reports these as INTERNAL, 500)."""
    return HttpCodecError(msg, 500)


def _type_error(field_name: str, expected: str, verb: str = "parse") -> HttpCodecError:
    return _internal(
        f"Unable to {verb} '{field_name}': attempt to access JSON non-{expected} as {expected}"
    )


def _json_type(expected: str) -> str:
    """TritonJson's text for a value of the wrong type, e.g. ``non-string as string``."""
    return f"attempt to access JSON non-{expected} as {expected}"


def _missing(field_name: str) -> HttpCodecError:
    return _internal(
        f"Unable to parse '{field_name}': attempt to access non-existing object member "
        f"'{field_name}'"
    )


def _request_prefix(request_id: str) -> str:
    """Triton's ``[request id: <id>] `` message prefix."""
    return f"[request id: {request_id or '<id_unknown>'}] "


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


def dumps(obj: Any, *, raw_strings: bool = False) -> bytes:
    """Serialize ``obj`` as compact JSON.

    Parameters
    ----------
    obj : Any
        A JSON-serializable object.  Non-finite floats become the bare tokens ``NaN``,
        ``Infinity`` and ``-Infinity``, as Triton writes them.
    raw_strings : bool, optional
        Write non-ASCII characters unescaped and turn ``surrogateescape`` characters back into
        the raw bytes they stand for (Triton's output for BYTES tensors).  Default False: the
        output is ASCII with ``\\uXXXX`` escapes.

    Returns
    -------
    bytes
        The JSON text.
    """
    if raw_strings:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8", "surrogateescape")
    return json.dumps(obj, separators=(",", ":")).encode("ascii")


def loads(data: Buffer) -> Any:
    """Parse JSON leniently: big integers, ``NaN``/``Infinity`` and non-UTF-8 strings.

    Parameters
    ----------
    data : bytes-like
        The JSON text.  Bytes that are not valid UTF-8 become ``surrogateescape`` characters.

    Returns
    -------
    Any
        The parsed value.

    Raises
    ------
    ValueError
        If ``data`` is not JSON (``json.JSONDecodeError``) or nests too deeply.
    """
    text = bytes(data).decode("utf-8", "surrogateescape")
    # rapidjson reads a NUL character as the end of its input: whatever follows one is not
    # part of the document (so NUL padding after a complete document is accepted).
    text = text.partition("\0")[0]
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nesting is too deep") from None


_SURROGATES = re.compile("[\udc80-\udcff]")


def _rapidjson_error(text: str) -> str:
    """Triton's message for a body its JSON parser (rapidjson) refuses.

    Triton reports ``failed to parse the request JSON buffer: <rapidjson's English message> at
    <byte offset>``.  The text comes from python-rapidjson (the same C++ parser) when it is
    installed (the ``server`` extra), so the wording and offset are rapidjson's own.
    """
    try:
        import rapidjson
    except ImportError:  # pragma: no cover - without the server extra
        return "Invalid value."
    # rapidjson (as Triton builds it) does not check UTF-8: a byte that is not valid UTF-8
    # behaves as any other character there. '?' does the same in every place and keeps the
    # byte offsets, where python-rapidjson would refuse the text before parsing it.
    text = _SURROGATES.sub("?", text)
    try:
        rapidjson.loads(text, number_mode=rapidjson.NM_NAN)
    except rapidjson.JSONDecodeError as exc:
        detail = str(exc)
        head, sep, message = detail.partition(": ")
        offset = head.rsplit(" ", 1)[-1]
        if sep and head.startswith("Parse error at offset") and offset.isdigit():
            return f"{message} at {offset}"
        return detail
    except (ValueError, UnicodeError, OverflowError, RecursionError):
        pass
    return "Invalid value."


def parse_json_document(data: Buffer) -> Any:
    """Parse a request body as Triton does (server side): the whole of it, any JSON value.

    Parameters
    ----------
    data : bytes-like
        The body (or the JSON part of an inference request).

    Returns
    -------
    Any
        The value; non-UTF-8 bytes in strings become ``surrogateescape`` characters.

    Raises
    ------
    HttpCodecError
        500 ``failed to parse the request JSON buffer: ...`` with rapidjson's message when the
        body is not one JSON value (empty, malformed, or followed by more than whitespace;
        a NUL character ends the input, as in rapidjson).
    """
    text = bytes(data).decode("utf-8", "surrogateescape")
    # rapidjson reads a NUL character as the end of its input: whatever follows one is not
    # part of the document (so NUL padding after a complete document is accepted).
    text = text.partition("\0")[0]
    try:
        return json.loads(text)
    except RecursionError:
        raise _internal(
            "failed to parse the request JSON buffer: JSON nesting is too deep"
        ) from None
    except ValueError:
        raise _internal(
            f"failed to parse the request JSON buffer: {_rapidjson_error(text)}"
        ) from None


def _members(document: Any) -> dict[str, Any]:
    """The members Triton finds in ``document``: its own when it is an object, none otherwise
    (TritonJson's ``Find`` on an array or a scalar finds nothing)."""
    return document if isinstance(document, dict) else {}


def _member_object(document: Any) -> dict[str, Any]:
    """TritonJson's ``Members()``: an object's members; any other value is an error."""
    if not isinstance(document, dict):
        raise _internal("attempt to get members for non-object")
    return document


def parse_json_object(data: Buffer, *, allow_empty: bool = True) -> dict[str, Any]:
    """Parse a request body and return the members Triton finds in it (server side).

    Parameters
    ----------
    data : bytes-like
        The body.
    allow_empty : bool, optional
        Whether an empty body is accepted as ``{}`` (the endpoints that read a body only when
        it has one: index, load, unload).  Default True.

    Returns
    -------
    dict
        The object's members; ``{}`` for a JSON value that is not an object (Triton finds no
        members in it).

    Raises
    ------
    HttpCodecError
        500 when the body is not JSON.
    """
    if allow_empty and not len(data):
        return {}
    return _members(parse_json_document(data))


def _is_uint(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _UINT64_MAX


def _is_int64(value: Any) -> bool:
    return type(value) is int and _INT64_MIN <= value <= _INT64_MAX


# ---------------------------------------------------------------------------------------------
# Tensors <-> wire
# ---------------------------------------------------------------------------------------------


def _element_count(shape: Sequence[int]) -> int:
    """The product of ``shape``; past the int64 range it stops multiplying and returns the
    partial product (already too large to match any buffer), so hostile shapes such as
    ``[2**62] * 100000`` cost no big-integer arithmetic."""
    dims = [int(d) for d in shape]
    if 0 in dims:
        return 0
    count = 1
    for dim in dims:
        count *= dim
        if not -_INT64_MAX <= count <= _INT64_MAX:
            return count
    return count


def tensor_to_buffer(datatype: str, array: npt.NDArray[Any]) -> Buffer:
    """The raw (binary) wire form of a tensor (section 2.2), zero-copy where possible.

    Parameters
    ----------
    datatype : str
        Protocol datatype of the tensor.
    array : numpy.ndarray
        The values.  Fixed-size types: C-contiguous little-endian arrays are not copied (the
        result is a ``memoryview`` of the array); BYTES is serialized (a new ``bytes``); BF16
        accepts ``ml_dtypes.bfloat16`` (not copied) or ``float32`` (truncated, copied).

    Returns
    -------
    bytes or memoryview
        The bytes, row-major.
    """
    if datatype == "BYTES":
        packed = serialize_byte_tensor(array)
        return bytes(packed.item()) if packed.size else b""
    if datatype == "BF16" and array.dtype != ml_dtypes.bfloat16:
        packed = serialize_bf16_tensor(array)
        return bytes(packed.item()) if packed.size else b""
    contiguous = np.ascontiguousarray(array)
    if contiguous.dtype.byteorder == ">":
        contiguous = contiguous.astype(contiguous.dtype.newbyteorder("<"))
    return contiguous.reshape(-1).view(np.uint8).data


def tensor_from_buffer(
    datatype: str,
    shape: Sequence[int],
    buffer: Buffer,
    *,
    name: str = "",
    model_name: str = "",
    request_id: str = "",
) -> npt.NDArray[Any]:
    """Decode the raw wire form of a tensor into a numpy array shaped ``shape``.

    Fixed-size datatypes are decoded with :func:`numpy.frombuffer` (no copy: the array shares
    memory with ``buffer``); BYTES elements become ``bytes`` in an object array.

    Parameters
    ----------
    datatype : str
        Protocol datatype.
    shape : sequence of int
        The tensor's shape.
    buffer : bytes-like
        The raw bytes.
    name, model_name, request_id : str, optional
        Used in error messages.

    Returns
    -------
    numpy.ndarray
        The tensor.

    Raises
    ------
    HttpCodecError
        400 for an unknown datatype, a byte size that does not match the shape (Triton's
        ``input byte size mismatch`` message) or a BYTES buffer that does not hold exactly
        product(shape) well-formed elements.
    """
    info = DATATYPES.get(datatype)
    if info is None:
        raise _bad(f"invalid datatype for input {name}")
    view = memoryview(buffer).cast("B")
    expected_count = _element_count(shape)
    prefix = _request_prefix(request_id)
    if info.byte_size is None:
        items = _split_bytes_elements(view, name, model_name, prefix, expected_count)
        return items.reshape(tuple(shape))
    expected = expected_count * info.byte_size
    if len(view) != expected:
        raise _bad(
            f"{prefix}input byte size mismatch for input '{name}' for model '{model_name}'. "
            f"Expected {expected}, got {len(view)}"
        )
    return np.frombuffer(view, dtype=np.dtype(info.numpy_type)).reshape(tuple(shape))


def _split_bytes_elements(
    view: Buffer, name: str, model_name: str, prefix: str, expected: int
) -> npt.NDArray[np.object_]:
    """Split a BYTES buffer, with Triton's messages for malformed ones."""
    try:
        items = deserialize_bytes_tensor(view) if len(view) else np.empty(0, np.object_)
    except InferenceServerException:
        fault = bytes_fault(view, name, model_name, prefix)
        raise HttpCodecError(fault.message, 400, fault.in_response) from None
    if len(items) < expected:
        raise _bad(
            f"{prefix}expected {expected} string elements for inference input '{name}' for "
            f"model '{model_name}', got {len(items)}"
        )
    if len(items) > expected:
        raise _bad(
            f"{prefix}unexpected number of string elements {len(items)} for inference input "
            f"'{name}' for model '{model_name}', expecting {expected}"
        )
    return items


def _flatten(data: Any, depth: int = 1) -> list[Any]:
    """Leaves of a (possibly nested) JSON array, row-major."""
    if depth > MAX_JSON_DEPTH:
        raise _internal(
            f"Unable to parse 'data': JSON array nesting exceeds the maximum depth of "
            f"{MAX_JSON_DEPTH}"
        )
    if not any(type(item) is list for item in data):
        return list(data)
    out: list[Any] = []
    for item in data:
        if type(item) is list:
            out.extend(_flatten(item, depth + 1))
        else:
            out.append(item)
    return out


def tensor_from_json(
    datatype: str, shape: Sequence[int], data: Any, *, name: str = ""
) -> npt.NDArray[Any]:
    """Decode an input's JSON ``data`` (flat or nested, section 3.7.3) into a numpy array.

    Parameters
    ----------
    datatype : str
        Protocol datatype.
    shape : sequence of int
        The tensor's shape; the number of leaves must equal its element count.
    data : list or scalar
        The parsed JSON ``data`` value.
    name : str, optional
        The input name, for error messages.

    Returns
    -------
    numpy.ndarray
        The tensor (BYTES as ``bytes`` elements: the UTF-8 of each string).  Integers wider
        than the datatype wrap modulo 2**bits, as in Triton.

    Raises
    ------
    HttpCodecError
        400 for an unknown datatype and for FP16/BF16 (JSON is not allowed for them); 500 for a
        wrong element count or element type (Triton's JSON-typing errors).
    """
    info = DATATYPES.get(datatype)
    count = _element_count(shape)
    if count == 0:
        # Triton reads no data at all for an empty tensor (whatever 'data' holds); an unknown
        # datatype is the server's datatype check's to report then.
        return np.empty(tuple(shape), dtype=np.dtype(info.numpy_type if info else np.uint8))
    if info is None:
        raise _bad(f"invalid datatype for input {name}")
    if datatype in _NO_JSON_TYPES:
        raise _bad(
            f"receiving {datatype} data via JSON is not supported. Please use the binary data "
            f"format for input {name}"
        )
    flat = _flatten(data) if type(data) is list else [data]
    target = np.dtype(info.numpy_type)
    kinds = set(map(type, flat))
    if datatype != "BYTES" and len(flat) != count:
        raise _internal("Unable to parse 'data': Shape does not match true shape of 'data' field")
    if datatype == "BOOL":
        if not kinds <= {bool}:
            raise _type_error("data", "boolean")
        return np.array(flat, dtype=target).reshape(tuple(shape))
    if datatype == "BYTES":
        if not kinds <= {str}:
            raise _internal(
                "Unable to parse JSON bytes array: attempt to access JSON non-string as string"
            )
        try:
            items = [s.encode("utf-8", "surrogateescape") for s in flat]
        except UnicodeEncodeError:
            raise _internal(
                "Unable to parse JSON bytes array: string is not valid Unicode"
            ) from None
        out = np.empty(len(items), dtype=np.object_)
        out[:] = items
        # Triton sizes BYTES data by its bytes, not its elements: a wrong count is left to
        # the server's element-count check, which names it (the array stays flat then).
        return out.reshape(tuple(shape)) if len(items) == count else out
    if datatype in _FLOAT_TYPES:
        if not kinds <= {int, float}:
            raise _type_error("data", "number")
        try:
            values = np.array(flat, dtype=np.float64)
        except OverflowError:
            raise _type_error("data", "number") from None
        return values.astype(target).reshape(tuple(shape))
    if not kinds <= {int}:
        signed = datatype in _INT_TYPES
        raise _type_error("data", "signed-integer" if signed else "unsigned-integer")
    if datatype in _INT_TYPES:
        if flat and (min(flat) < _INT64_MIN or max(flat) > _INT64_MAX):
            raise _type_error("data", "signed-integer")
        wide = np.array(flat, dtype=np.int64)
    else:
        if flat and (min(flat) < 0 or max(flat) > _UINT64_MAX):
            raise _type_error("data", "unsigned-integer")
        wide = np.array(flat, dtype=np.uint64)
    return wide.astype(target).reshape(tuple(shape))


def tensor_to_json(datatype: str, array: npt.NDArray[Any], *, bytes_as: str = "str") -> list[Any]:
    """The flat JSON ``data`` list of a tensor (section 3.7.3, output rules).

    Parameters
    ----------
    datatype : str
        Protocol datatype.
    array : numpy.ndarray
        The values (any shape; flattened row-major).
    bytes_as : {"str", "surrogateescape"}, optional
        For BYTES: ``"str"`` requires UTF-8 elements (the client rule, raising
        InferenceServerException otherwise); ``"surrogateescape"`` keeps non-UTF-8 bytes as
        escape characters, which :func:`dumps` with ``raw_strings=True`` writes raw (Triton's
        output rule).  Default ``"str"``.

    Returns
    -------
    list
        The elements: bool, int (exact, also beyond 2**53), float (FP32 widened to double)
        or str.

    Raises
    ------
    InferenceServerException
        For FP16/BF16 (an :class:`HttpCodecError` with status 400), or a BYTES element that
        is not bytes/str or (with ``bytes_as="str"``) not UTF-8.
    """
    if datatype in _NO_JSON_TYPES:
        raise _bad(
            f"sending {datatype} data via JSON is not supported. Please use the binary data "
            "format for output"
        )
    flat = np.asarray(array).reshape(-1)
    if datatype == "BYTES":
        errors = "surrogateescape" if bytes_as == "surrogateescape" else "strict"
        out: list[Any] = []
        for item in flat.tolist():
            if isinstance(item, bytes):
                try:
                    out.append(item.decode("utf-8", errors))
                except UnicodeDecodeError:
                    raise_error(
                        f'Failed to encode "{item!r}" using UTF-8. Please use binary_data=True, '
                        "if you want to pass a byte array."
                    )
            elif isinstance(item, str):
                out.append(item)
            else:
                raise_error(
                    f"BYTES element of type '{type(item).__name__}' cannot be sent as JSON; "
                    "expected bytes or str"
                )
        return out
    if datatype == "BOOL":
        return flat.astype(bool).tolist()  # type: ignore[no-any-return]
    if datatype == "FP32":
        return flat.astype(np.float64).tolist()  # type: ignore[no-any-return]
    return flat.tolist()  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------


@dataclass
class RequestParameters:
    """The request-level ``parameters`` of an inference request, interpreted (section 7.1).

    Attributes
    ----------
    custom : dict
        Parameters passed to the model (every key that is not interpreted below).
    sequence_id : int or str
        Correlation id (0 / ``""``: none).
    sequence_start, sequence_end : bool
        Sequence flags.
    priority : int
        Priority level (0: the model's default).
    timeout : int or None
        Queue timeout in microseconds.
    binary_data_output : bool or None
        Default binary/JSON choice for outputs the request does not list.
    """

    custom: dict[str, ParamValue] = field(default_factory=dict)
    sequence_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    timeout: int | None = None
    binary_data_output: bool | None = None


def _custom_parameter(key: str, value: Any) -> ParamValue:
    if isinstance(value, (bool, str)):
        return value
    if type(value) is int:
        return value if _is_int64(value) else float(value)
    if type(value) is float:
        return value
    raise _bad(
        f"parameter '{key}' has invalid type. It should be either 'int', 'bool', or 'string'."
    )


def parse_request_parameters(parameters: Any) -> RequestParameters:
    """Interpret a request's ``parameters`` object (server side).

    Parameters
    ----------
    parameters : Any
        The parsed JSON value of ``parameters`` (None when absent).

    Returns
    -------
    RequestParameters
        Reserved parameters parsed into fields, the rest in ``custom``.

    Raises
    ------
    HttpCodecError
        500 for a reserved parameter of the wrong JSON type (Triton's ``Unable to parse
        'sequence_id': ...``); 400 for ``triton_``-prefixed keys and custom values that are
        objects, arrays or null.
    """
    result = RequestParameters()
    if parameters is None:
        return result
    if not isinstance(parameters, dict):
        raise _type_error("parameters", "object")
    for key, value in parameters.items():
        if key.startswith(TRITON_RESERVED_REQUEST_PARAMS_PREFIX):
            raise _bad(
                f"parameter keys starting with '{TRITON_RESERVED_REQUEST_PARAMS_PREFIX}' are "
                "reserved for Triton usage and should not be specified."
            )
        if key == "sequence_id":
            if not (_is_uint(value) or isinstance(value, str)):
                raise _type_error("sequence_id", "string")
            result.sequence_id = value
        elif key in ("sequence_start", "sequence_end", "binary_data_output"):
            if not isinstance(value, bool):
                raise _type_error(key, "boolean")
            setattr(result, key, value)
        elif key in ("priority", "timeout"):
            if not _is_uint(value):
                raise _type_error(key, "unsigned-integer")
            setattr(result, key, value)
        else:
            result.custom[key] = _custom_parameter(key, value)
    return result


def _request_parameters_json(
    sequence_id: int | str,
    sequence_start: bool,
    sequence_end: bool,
    priority: int,
    timeout: int | None,
    parameters: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The client's request ``parameters`` object, as ``tritonclient`` writes it."""
    out: dict[str, Any] = {}
    if sequence_id != 0 and sequence_id != "":
        out["sequence_id"] = sequence_id
        out["sequence_start"] = bool(sequence_start)
        out["sequence_end"] = bool(sequence_end)
    if priority != 0:
        out["priority"] = priority
    if timeout is not None:
        out["timeout"] = timeout
    for key, value in (parameters or {}).items():
        check_parameter_name(key)
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------
# Bodies
# ---------------------------------------------------------------------------------------------


@dataclass
class EncodedBody:
    """A request or response body as a list of chunks to write in order.

    Attributes
    ----------
    chunks : list of bytes-like
        The pieces (the JSON first; then binary tensor data, often ``memoryview`` objects of
        numpy arrays -- keep the arrays unchanged until the body is sent).
    json_size : int or None
        Byte length of the JSON part when binary data follows it (the value of
        ``Inference-Header-Content-Length``), None when the body is all JSON.
    content_encoding : str or None
        ``"gzip"`` or ``"deflate"`` after :meth:`compressed`, else None.
    """

    chunks: list[Buffer]
    json_size: int | None = None
    content_encoding: str | None = None

    @property
    def nbytes(self) -> int:
        """Total length of the body (``Content-Length``)."""
        return sum(memoryview(c).nbytes for c in self.chunks)

    def tobytes(self) -> bytes:
        """The body as one ``bytes`` object (copies every chunk)."""
        return b"".join(self.chunks)

    def headers(self) -> dict[str, str]:
        """The headers that describe this body.

        Returns
        -------
        dict
            ``Content-Type`` (``application/octet-stream`` with binary data, else
            ``application/json``), ``Inference-Header-Content-Length`` when binary data
            follows the JSON, and ``Content-Encoding`` when compressed.
        """
        out = {
            "Content-Type": "application/json"
            if self.json_size is None
            else "application/octet-stream"
        }
        if self.json_size is not None:
            out[HEADER_INFERENCE_HEADER_CONTENT_LENGTH] = str(self.json_size)
        if self.content_encoding is not None:
            out[HEADER_CONTENT_ENCODING] = self.content_encoding
        return out

    def compressed(self, algorithm: str | None) -> EncodedBody:
        """This body compressed as one chunk (``json_size`` unchanged: it counts the JSON
        before compression, section 3.10).

        Parameters
        ----------
        algorithm : {"gzip", "deflate"} or None
            None returns the body unchanged.

        Returns
        -------
        EncodedBody
        """
        if algorithm is None:
            return self
        return EncodedBody([compress(self.chunks, algorithm)], self.json_size, algorithm)


# ---------------------------------------------------------------------------------------------
# Client side: requests
# ---------------------------------------------------------------------------------------------


@dataclass
class SharedMemoryRef:
    """A tensor placed in a registered shared-memory region.

    Attributes
    ----------
    region : str
        The region's registered name.
    byte_size : int
        Bytes of the tensor in the region.
    offset : int
        Where the tensor starts in the region.
    """

    region: str
    byte_size: int
    offset: int = 0

    def to_parameters(self) -> dict[str, Any]:
        """The tensor-level ``parameters`` entries for this placement."""
        out: dict[str, Any] = {
            "shared_memory_region": self.region,
            "shared_memory_byte_size": self.byte_size,
        }
        if self.offset:
            out["shared_memory_offset"] = self.offset
        return out


# Datatypes whose JSON ``data`` is written as number text straight from the array.
_NUMBER_TYPES = frozenset(
    {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"}
    | {"FP16", "FP32", "FP64"}
)


def _number_text_list(datatype: str, text: bytes) -> list[Any]:
    """The JSON ``data`` list that :func:`json_number_text` text stands for: Python ints,
    bools, or floats (FP16/FP32 values widened to double, as ``ndarray.tolist`` gives)."""
    values: list[Any] = json.loads(b"[" + text + b"]")
    if datatype in ("FP16", "FP32"):
        # The text parses back to the exact float32 (FP16 values are exact in float32).
        return np.array(values, dtype=np.float32).astype(np.float64).tolist()  # type: ignore[no-any-return]
    return values


def _with_data_text(member: bytes, text: bytes) -> bytes:
    """Append ``"data":[text]`` to the JSON object ``member`` (which has other members)."""
    return b"".join((member[:-1], b',"data":[', text, b"]}"))


class RequestInput:
    """One input of a request being built (client side).

    Parameters
    ----------
    name, datatype : str
        Input name and protocol datatype.
    shape : list of int
        The shape.
    parameters : dict, optional
        Tensor parameters (``binary_data_size``, shared-memory placement).
    data : list, optional
        JSON ``data`` (flat), when sent as JSON.
    raw : bytes-like, optional
        The binary chunk, when sent with the binary tensor extension.
    text : bytes, optional
        JSON ``data`` of a numeric tensor as pre-formatted number text (the inside of the
        array, see :func:`tritonclient.utils._codec.json_number_text`); the body is built
        from it and :attr:`data` is derived from it only when asked for.

    Attributes
    ----------
    name, datatype, shape, parameters, raw
        As given.
    """

    __slots__ = ("_data", "_json", "_text", "datatype", "name", "parameters", "raw", "shape")

    def __init__(
        self,
        name: str,
        datatype: str,
        shape: list[int],
        parameters: dict[str, Any] | None = None,
        data: list[Any] | None = None,
        raw: Buffer | None = None,
        *,
        text: bytes | None = None,
    ) -> None:
        self.name = name
        self.datatype = datatype
        self.shape = shape
        self.parameters: dict[str, Any] = {} if parameters is None else parameters
        self.raw = raw
        self._data = data
        self._text = None if data is not None else text
        self._json: bytes | None = None  # to_json_bytes(), made once

    @property
    def data(self) -> list[Any] | None:
        """JSON ``data`` (flat) when sent as JSON, else None (made from the number text on
        first use)."""
        if self._data is None and self._text is not None:
            self._data = _number_text_list(self.datatype, self._text)
        return self._data

    @data.setter
    def data(self, value: list[Any] | None) -> None:
        self._data = value
        self._text = None
        self._json = None

    @property
    def text(self) -> bytes | None:
        """JSON ``data`` as pre-formatted number text, or None."""
        return self._text

    def replace(self, name: str, datatype: str, shape: list[int]) -> RequestInput:
        """A copy with another name, datatype and shape (same data, parameters copied).

        Parameters
        ----------
        name, datatype : str
            The new name and datatype.
        shape : list of int
            The new shape.

        Returns
        -------
        RequestInput
        """
        return RequestInput(
            name, datatype, shape, dict(self.parameters), self._data, self.raw, text=self._text
        )

    def to_json(self) -> dict[str, Any]:
        """The ``$request_input`` object."""
        out: dict[str, Any] = {"name": self.name, "shape": self.shape, "datatype": self.datatype}
        if self.parameters:
            out["parameters"] = self.parameters
        data = self.data
        if data is not None:
            out["data"] = data
        return out

    def to_json_bytes(self) -> bytes:
        """The ``$request_input`` object as JSON text (number text spliced in as is).

        Made on the first call and kept: the object is not to be changed once it is used
        in a request (the clients make a new one when an input changes).
        """
        if self._json is not None:
            return self._json
        if self._text is None:
            text = dumps(self.to_json())
        else:
            out: dict[str, Any] = {
                "name": self.name,
                "shape": self.shape,
                "datatype": self.datatype,
            }
            if self.parameters:
                out["parameters"] = self.parameters
            text = _with_data_text(dumps(out), self._text)
        self._json = text
        return text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequestInput):
            return NotImplemented
        header = (self.name, self.datatype, self.shape, self.parameters, self.raw)
        if header != (other.name, other.datatype, other.shape, other.parameters, other.raw):
            return False
        if self._text is not None and other._text is not None:
            return self._text == other._text
        return self.data == other.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        data = repr(self._data) if self._text is None else f"<{len(self._text)} bytes of text>"
        return (
            f"RequestInput(name={self.name!r}, datatype={self.datatype!r}, "
            f"shape={self.shape!r}, parameters={self.parameters!r}, data={data}, "
            f"raw={self.raw!r})"
        )


def encode_input(
    name: str,
    datatype: str,
    shape: Sequence[int],
    tensor: npt.NDArray[Any],
    *,
    binary_data: bool = True,
) -> RequestInput:
    """Describe an input whose values come from a numpy array (``set_data_from_numpy``).

    Parameters
    ----------
    name : str
        Input name.
    datatype : str
        Protocol datatype; must match the array's dtype (BF16 also takes float32, truncated).
    shape : sequence of int
        The input shape; must equal the array's shape.
    tensor : numpy.ndarray
        The values.
    binary_data : bool, optional
        Send the values with the binary tensor extension (default, zero-copy for contiguous
        arrays) rather than as JSON.

    Returns
    -------
    RequestInput

    Raises
    ------
    InferenceServerException
        If the dtype or shape does not match, or the values cannot be sent as JSON (BF16;
        BYTES elements that are not UTF-8).
    """
    check_input_array(name, datatype, shape, tensor)
    array = tensor
    shape_list = [int(d) for d in shape]
    if not binary_data:
        if datatype == "BF16":
            raise_error(
                "BF16 inputs must be sent as binary data over HTTP. Please set binary_data=True"
            )
        if datatype in _NUMBER_TYPES:
            # FP16 included: JSON has no FP16; send the numbers and let the server answer
            # (Triton: 400).  The text is made now, so later changes to the array do not
            # show, as with tritonclient's list.
            text = json_number_text(array)
            return RequestInput(name, datatype, shape_list, {}, None, None, text=text)
        return RequestInput(name, datatype, shape_list, {}, tensor_to_json(datatype, array))
    raw = tensor_to_buffer(datatype, array)
    return RequestInput(
        name, datatype, shape_list, {"binary_data_size": memoryview(raw).nbytes}, None, raw
    )


def encode_input_raw(name: str, datatype: str, shape: Sequence[int], raw: Buffer) -> RequestInput:
    """Describe an input given as raw bytes in the wire layout (section 2.2).

    Parameters
    ----------
    name, datatype : str
        Input name and datatype.
    shape : sequence of int
        The shape.
    raw : bytes-like
        The tensor's bytes (BYTES: length-prefixed elements); sent as is.

    Returns
    -------
    RequestInput
    """
    return RequestInput(
        name,
        datatype,
        [int(d) for d in shape],
        {"binary_data_size": memoryview(raw).nbytes},
        None,
        raw,
    )


def encode_input_shm(
    name: str, datatype: str, shape: Sequence[int], region: str, byte_size: int, offset: int = 0
) -> RequestInput:
    """Describe an input whose data is in a registered shared-memory region.

    Parameters
    ----------
    name, datatype : str
        Input name and datatype.
    shape : sequence of int
        The shape.
    region : str
        Registered region name.
    byte_size : int
        Bytes of the tensor in the region.
    offset : int, optional
        Offset in the region (default 0; only sent when non-zero).

    Returns
    -------
    RequestInput
    """
    placement = SharedMemoryRef(region, byte_size, offset)
    return RequestInput(name, datatype, [int(d) for d in shape], placement.to_parameters())


@dataclass
class RequestOutput:
    """One requested output (client side).

    Attributes
    ----------
    name : str
        Output name.
    parameters : dict
        ``binary_data``, ``classification``, shared-memory placement.
    """

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``$request_output`` object."""
        out: dict[str, Any] = {"name": self.name}
        if self.parameters:
            out["parameters"] = self.parameters
        return out

    @functools.cached_property
    def json_bytes(self) -> bytes:
        """:meth:`to_json` as JSON text, made once (the object is not to be changed once it
        is used in a request)."""
        return dumps(self.to_json())


def encode_output(
    name: str,
    *,
    binary_data: bool = True,
    class_count: int = 0,
    shared_memory: SharedMemoryRef | None = None,
) -> RequestOutput:
    """Describe a requested output (``InferRequestedOutput``).

    Parameters
    ----------
    name : str
        Output name.
    binary_data : bool, optional
        Return the output with the binary tensor extension (default True).  Ignored with
        ``shared_memory`` (sent as ``false`` then, as ``tritonclient`` does).
    class_count : int, optional
        Return the top ``class_count`` classes instead of the tensor (0: off).
    shared_memory : SharedMemoryRef, optional
        Write the output into this registered region.

    Returns
    -------
    RequestOutput
    """
    parameters: dict[str, Any] = {}
    if class_count:
        parameters["classification"] = class_count
    if shared_memory is not None:
        parameters["binary_data"] = False
        parameters.update(shared_memory.to_parameters())
    else:
        parameters["binary_data"] = binary_data
    return RequestOutput(name, parameters)


def encode_infer_request(
    inputs: Iterable[RequestInput],
    outputs: Iterable[RequestOutput] | None = None,
    *,
    request_id: str = "",
    sequence_id: int | str = 0,
    sequence_start: bool = False,
    sequence_end: bool = False,
    priority: int = 0,
    timeout: int | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> EncodedBody:
    """Build an inference request body: JSON header, then each binary input's bytes.

    Parameters follow ``tritonclient``'s ``infer()`` (section 7.1 for how they are written):
    the sequence parameters only when ``sequence_id`` is non-zero/non-empty, ``priority`` only
    when non-zero, ``timeout`` only when given; without ``outputs`` the request asks for every
    output in binary (``binary_data_output: true``).

    Parameters
    ----------
    inputs : iterable of RequestInput
        The inputs, in order (binary chunks follow in this order).
    outputs : iterable of RequestOutput, optional
        The outputs to return; None or empty returns every output.
    request_id : str, optional
        Request id (omitted when empty).
    sequence_id : int or str, optional
        Correlation id.
    sequence_start, sequence_end : bool, optional
        Sequence flags.
    priority : int, optional
        Priority level.
    timeout : int, optional
        Queue timeout in microseconds.
    parameters : mapping, optional
        Custom request parameters (reserved names are refused).

    Returns
    -------
    EncodedBody
        ``json_size`` is set when at least one input is binary.

    Raises
    ------
    InferenceServerException
        For a reserved custom parameter name.
    """
    inputs = list(inputs)
    # The JSON is assembled from pieces so that number text is spliced in without being
    # parsed; the members are those (and in the order) json.dumps of the request would give.
    parts: list[bytes] = [b"{"]
    if request_id != "":
        parts += [b'"id":', dumps(request_id), b","]
    params = _request_parameters_json(
        sequence_id, sequence_start, sequence_end, priority, timeout, None
    )
    parts.append(b'"inputs":[')
    for index, each in enumerate(inputs):
        if index:
            parts.append(b",")
        parts.append(each.to_json_bytes())
    parts.append(b"]")
    output_list = list(outputs or [])
    if output_list:
        parts += [b',"outputs":[', b",".join(o.json_bytes for o in output_list), b"]"]
    else:
        params["binary_data_output"] = True
    params.update(_request_parameters_json(0, False, False, 0, None, parameters))
    if params:
        parts += [b',"parameters":', dumps(params)]
    parts.append(b"}")
    header = b"".join(parts)
    chunks: list[Buffer] = [header]
    binary = False
    for each in inputs:
        if each.raw is not None:
            binary = True
            if memoryview(each.raw).nbytes:
                chunks.append(each.raw)
    return EncodedBody(chunks, len(header) if binary else None)


# ---------------------------------------------------------------------------------------------
# Client side: responses
# ---------------------------------------------------------------------------------------------


class DecodedResponse:
    """An inference response body split into its JSON and its binary outputs, checked and
    decoded (client side).

    Every output is checked and decoded here, once, so that a broken answer fails before it is
    handed out rather than at :meth:`as_numpy`: its name, datatype and shape; binary data of
    exactly the size its datatype and shape need, the sizes adding up to the bytes after the
    JSON (none missing, none trailing); JSON ``data`` with shape's number of elements, each of
    the datatype's JSON type and within its range.  Fixed-size binary outputs cost a
    :func:`numpy.frombuffer` view each.

    Parameters
    ----------
    response : dict
        The parsed JSON (``$inference_response``).
    buffer : memoryview
        The bytes after the JSON.
    requested : Requested, optional
        The outputs the request asked for: each must be in the response, and only those
        requested in shared memory may come without data.  None (a body parsed on its own,
        as by ``parse_response_body``): an output without data is taken as written to shared
        memory.

    Raises
    ------
    InferenceServerProtocolError
        For a response that does not hold what it says (see :func:`decode_infer_response`).
    """

    def __init__(
        self, response: dict[str, Any], buffer: memoryview, requested: Requested | None = None
    ) -> None:
        self._response = response
        self._buffer = buffer
        self._slices: dict[str, tuple[int, int]] = {}
        arrays: dict[str, npt.NDArray[Any] | None] = {}
        outputs = response.get("outputs")
        if outputs is None:
            outputs = []
        elif type(outputs) is not list:
            raise response_fault(f"'outputs' is a {_json_kind(outputs)}, expected an array")
        offset = 0
        binary: list[dict[str, Any]] = []
        slices = self._slices
        for output in outputs:
            if type(output) is not dict:
                raise response_fault(
                    f"an element of 'outputs' is a {_json_kind(output)}, expected an object"
                )
            name = output.get("name")
            if type(name) is not str:
                raise response_fault(f"an output has name {name!r}; expected a string")
            if name in arrays:
                continue  # get_output() and as_numpy() see the first one, as before
            parameters = output.get("parameters")
            size = None
            if parameters is not None:
                if type(parameters) is not dict:
                    raise response_fault(
                        f"output '{name}' has parameters of type {_json_kind(parameters)}, "
                        "expected an object"
                    )
                size = parameters.get("binary_data_size")
            if size is not None:
                if type(size) is not int or size < 0:
                    raise response_fault(
                        f"output '{name}' has binary_data_size {size!r}; expected a "
                        "non-negative integer"
                    )
                slices[name] = (offset, size)
                binary.append(output)
                offset += size
                arrays[name] = None
            elif "data" in output:
                arrays[name] = _json_output(
                    name, output.get("datatype"), output.get("shape"), output["data"]
                )
            else:
                datatype = output.get("datatype")
                known_datatype(name, datatype)
                dims = response_shape(name, output.get("shape"))
                if requested is not None:
                    requested.no_data(name, datatype, dims)
                arrays[name] = None  # in shared memory
        if offset != len(buffer):
            if offset > len(buffer):
                detail = f"{offset - len(buffer)} bytes are missing"
            else:
                detail = f"{len(buffer) - offset} bytes trail them"
            raise response_fault(
                f"its outputs declare {offset} bytes of binary data (binary_data_size) and "
                f"{len(buffer)} bytes follow its JSON: {detail}"
            )
        for output in binary:
            name = output["name"]
            start, size = slices[name]
            arrays[name] = decode_raw_output(
                name, output.get("datatype"), output.get("shape"), buffer[start : start + size]
            )
        if requested is not None:
            requested.check_present(arrays)
        self._outputs = DecodedOutputs(arrays)

    @property
    def response(self) -> dict[str, Any]:
        """The parsed JSON of the response."""
        return self._response

    def get_output(self, name: str) -> dict[str, Any] | None:
        """The ``$response_output`` object of output ``name``, or None."""
        for output in self._response.get("outputs") or []:
            if output.get("name") == name:
                return output  # type: ignore[no-any-return]
        return None

    def output_buffer(self, name: str) -> memoryview | None:
        """The binary bytes of output ``name`` (a view of the body), or None if it has none."""
        found = self._slices.get(name)
        if found is None:
            return None
        offset, size = found
        return self._buffer[offset : offset + size]

    def as_numpy(self, name: str) -> npt.NDArray[Any] | None:
        """Output ``name`` as a numpy array shaped as the response says.

        Binary fixed-size outputs are :func:`numpy.frombuffer` views of the body (no copy; the
        array is read-only when the body is ``bytes``).  BYTES outputs hold ``bytes`` when
        binary and ``str`` when sent as JSON (as ``tritonclient`` returns them).  Each call
        returns an array of its own where the array is writable (the first call gets the one
        decoded with the response).

        Parameters
        ----------
        name : str
            Output name.

        Returns
        -------
        numpy.ndarray or None
            None when there is no such output, or it was written to shared memory.
        """
        return self._outputs.get(name)


def _json_kind(value: Any) -> str:
    """The JSON type of a parsed value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


#: The values each numeric datatype holds, for a JSON output's elements.
_JSON_INT_RANGES: dict[str, tuple[int, int]] = {
    name: (
        int(np.iinfo(np.dtype(info.numpy_type)).min),
        int(np.iinfo(np.dtype(info.numpy_type)).max),
    )
    for name, info in DATATYPES.items()
    if name.startswith(("INT", "UINT"))
}
_JSON_FLOAT_MAX: dict[str, float] = {
    "FP16": float(np.finfo(np.float16).max),
    "FP32": float(np.finfo(np.float32).max),
    "BF16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),  # type: ignore[no-untyped-call]
}


def _json_output(name: str, datatype: Any, shape: Any, data: Any) -> npt.NDArray[Any]:
    """An output's JSON ``data`` as an array, checked against its datatype and shape."""
    info = known_datatype(name, datatype)
    dims = response_shape(name, shape)
    count = math.prod(dims)
    described = f"output '{name}' ({datatype}, shape {list(dims)})"
    if type(data) is not list:
        raise response_fault(
            f"{described} has 'data' of type {_json_kind(data)}, expected an array"
        )
    try:
        flat = _flatten(data)
    except HttpCodecError:
        raise response_fault(f"{described} has 'data' nested too deeply") from None
    if len(flat) != count:
        raise response_fault(f"{described} needs {count} elements, its 'data' has {len(flat)}")
    kinds = set(map(type, flat))
    if datatype == "BYTES":
        if not kinds <= {str}:
            raise response_fault(_element_fault(described, "strings", flat, {str}))
        items = np.empty(count, dtype=np.object_)
        items[:] = flat
        return items.reshape(dims)
    if datatype == "BOOL":
        if not kinds <= {bool}:
            raise response_fault(_element_fault(described, "booleans", flat, {bool}))
        return np.array(flat, dtype=np.bool_).reshape(dims)
    limits = _JSON_INT_RANGES.get(datatype)
    if limits is not None:
        if not kinds <= {int}:
            raise response_fault(_element_fault(described, "integers", flat, {int}))
        if flat and (min(flat) < limits[0] or max(flat) > limits[1]):
            bad = next(v for v in flat if not limits[0] <= v <= limits[1])
            raise response_fault(
                f"{described} has element {bad} in its 'data', outside the {datatype} range "
                f"[{limits[0]}, {limits[1]}]"
            )
        return np.array(flat, dtype=np.dtype(info.numpy_type)).reshape(dims)
    if not kinds <= {int, float}:
        raise response_fault(_element_fault(described, "numbers", flat, {int, float}))
    try:
        wide = np.array(flat, dtype=np.float64)
    except OverflowError:  # an integer beyond any double
        raise response_fault(f"{described} has a number in its 'data' beyond {datatype}") from None
    top = _JSON_FLOAT_MAX.get(datatype)
    if top is not None and count:
        finite = wide[np.isfinite(wide)]
        if finite.size and float(np.abs(finite).max()) > top:
            raise response_fault(
                f"{described} has element {float(np.abs(finite).max())!r} (absolute value) in "
                f"its 'data', beyond the {datatype} range"
            )
    return wide.astype(np.dtype(info.numpy_type)).reshape(dims)


def _element_fault(described: str, expected: str, flat: list[Any], allowed: set[type]) -> str:
    index, value = next((i, v) for i, v in enumerate(flat) if type(v) not in allowed)
    return (
        f"{described} has {_json_kind(value)} {value!r} at index {index} of its 'data', "
        f"expected {expected}"
    )


_JSON = json.JSONDecoder()


def client_json(data: Buffer, what: str) -> Any:
    """Parse a JSON body received by a client: strict UTF-8, exactly one JSON value.

    Triton writes the bytes of a BYTES output into JSON strings as they are, so a body may not
    be UTF-8 when such an output is not text; RFC 8259 JSON is UTF-8, and a client cannot tell
    those bytes from a corrupt body, so both are refused (as NVIDIA's client does, with a
    ``UnicodeDecodeError``), with a hint to ask for binary data.

    Parameters
    ----------
    data : bytes-like
        The JSON text.
    what : str
        The body, for messages (``"the inference response"``).

    Returns
    -------
    Any
        The parsed value (``NaN``/``Infinity`` become floats, big integers stay exact).

    Raises
    ------
    InferenceServerProtocolError
        If ``data`` is not UTF-8, or not a single JSON value.
    """
    raw = bytes(data)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = max(exc.start - 20, 0)
        raise InferenceServerProtocolError(
            f"{what} is not valid UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
            f"({raw[start : exc.start + 20]!r})"
        ).with_hint(
            "a BYTES output holding bytes that are not UTF-8 can only come as binary data: "
            "request it with InferRequestedOutput(name, binary_data=True)"
        ) from None
    try:
        return _JSON.decode(text)
    except RecursionError:
        raise InferenceServerProtocolError(f"{what} is not JSON: it nests too deeply") from None
    except ValueError as exc:
        excerpt = text[:200]
        raise InferenceServerProtocolError(
            f"{what} is not JSON ({exc}): {excerpt!r}", debug_details=excerpt
        ) from None


def decode_infer_response(
    body: Buffer,
    header_length: int | str | None = None,
    content_encoding: str | None = None,
    requested: Requested | None = None,
) -> DecodedResponse:
    """Parse and check an inference response body (client side).

    Parameters
    ----------
    body : bytes-like
        The body as received.
    header_length : int or str, optional
        The ``Inference-Header-Content-Length`` header (None: the whole body is JSON).
    content_encoding : str, optional
        The ``Content-Encoding`` header; the body is decompressed first.
    requested : Requested, optional
        The outputs the request asked for (see :class:`DecodedResponse`).

    Returns
    -------
    DecodedResponse

    Raises
    ------
    InferenceServerProtocolError
        If the body is not a valid response: corrupt compression, a header length outside the
        body, JSON that is not UTF-8 or not one JSON object, an output whose data do not fit
        its datatype and shape, binary data missing or trailing, a requested output missing.
    """
    try:
        data = decompress(body, content_encoding)
    except HttpCodecError as exc:
        raise InferenceServerProtocolError(str(exc.message())) from None
    view = memoryview(data).cast("B")
    if header_length is None:
        json_part, rest = view, view[len(view) :]
    else:
        try:
            size = int(header_length)
        except ValueError:
            raise response_fault(
                f"invalid {HEADER_INFERENCE_HEADER_CONTENT_LENGTH}: {header_length!r}"
            ) from None
        if not 0 <= size <= len(view):
            raise response_fault(
                f"{HEADER_INFERENCE_HEADER_CONTENT_LENGTH} {size} is outside the body of "
                f"{len(view)} bytes"
            )
        json_part, rest = view[:size], view[size:]
    parsed = client_json(json_part, "the inference response")
    if not isinstance(parsed, dict):
        raise response_fault(f"the JSON is a {_json_kind(parsed)}, expected an object")
    return DecodedResponse(parsed, rest, requested)


def error_from_response(status: int, body: Buffer) -> InferenceServerException | None:
    """The exception for a non-200 response, or None for 200.

    Parameters
    ----------
    status : int
        HTTP status code.
    body : bytes-like
        The (decompressed) body: ``{"error": "..."}``, possibly empty or not JSON.

    Returns
    -------
    InferenceServerException or None
        With ``status()`` the HTTP status as a string and the message from ``error``.
    """
    if status == 200:
        return None
    # As NVIDIA's 2.73 clients: a body that is not UTF-8 JSON with an "error" key is quoted
    # in the message (with the decoding error), and kept as the debug details.
    text: str | None = None
    try:
        text = bytes(body).decode("utf-8")
        if not text:
            return InferenceServerException(
                msg="client received an empty response from the server.", status=str(status)
            )
        message = json.loads(text)["error"]
    except Exception as exc:  # what NVIDIA's client catches: any decoding failure
        return InferenceServerException(
            msg=f"an exception occurred in the client while decoding the response: {exc}\n"
            f"response: {text}",
            status=str(status),
            debug_details=text,
        )
    return InferenceServerException(msg=message, status=str(status))


# ---------------------------------------------------------------------------------------------
# Server side: requests
# ---------------------------------------------------------------------------------------------


@dataclass
class ParsedInput:
    """One input of a parsed inference request (server side).

    Attributes
    ----------
    name, datatype : str
        Input name and datatype (not yet checked against the table for binary inputs).
    shape : list of int
        The shape.
    parameters : dict
        The input's ``parameters`` as sent.
    data : Any
        The JSON ``data`` (nested or flat), when the input is JSON.
    raw : memoryview or None
        The input's binary chunk (a view of the body), when it used ``binary_data_size``.
    shared_memory : SharedMemoryRef or None
        The placement, when the input is in shared memory.
    """

    name: str
    datatype: str
    shape: list[int]
    parameters: dict[str, Any] = field(default_factory=dict)
    data: Any = None
    raw: memoryview | None = None
    shared_memory: SharedMemoryRef | None = None


@dataclass
class ParsedOutput:
    """One requested output of a parsed inference request (server side).

    Attributes
    ----------
    name : str
        Output name.
    binary_data : bool
        Return it with the binary extension.
    class_count : int
        Classification top-K (0: off).
    shared_memory : SharedMemoryRef or None
        Write it to this region.
    parameters : dict
        The output's ``parameters`` as sent.
    """

    name: str
    binary_data: bool = False
    class_count: int = 0
    shared_memory: SharedMemoryRef | None = None
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParsedInferRequest:
    """A parsed inference request (server side).

    Attributes
    ----------
    id : str
        Request id ("" when absent).
    inputs : list of ParsedInput
        The inputs in request order.
    outputs : list of ParsedOutput
        The requested outputs (empty: every output).
    parameters : RequestParameters
        Interpreted request parameters.
    raw_binary : bool
        True for a raw binary request (``Inference-Header-Content-Length: 0``): every output
        is returned in binary.
    """

    id: str = ""
    inputs: list[ParsedInput] = field(default_factory=list)
    outputs: list[ParsedOutput] = field(default_factory=list)
    parameters: RequestParameters = field(default_factory=RequestParameters)
    raw_binary: bool = False

    def output_binary(self, name: str) -> bool:
        """Whether output ``name`` goes back in binary (section 3.8.3).

        A listed output is binary only when its own ``binary_data`` is true; with no
        ``outputs`` listed the request-level ``binary_data_output`` decides; a raw binary
        request returns everything in binary.
        """
        if self.raw_binary:
            return True
        if self.outputs:
            for output in self.outputs:
                if output.name == name:
                    return output.binary_data
            return False
        return bool(self.parameters.binary_data_output)

    def output(self, name: str) -> ParsedOutput | None:
        """The requested output ``name``, or None when not listed."""
        for output in self.outputs:
            if output.name == name:
                return output
        return None


def parse_header_length(value: str | None, body_size: int) -> int:
    """Interpret the ``Inference-Header-Content-Length`` request header as Triton does.

    Parameters
    ----------
    value : str or None
        The header value (None when absent).
    body_size : int
        Length of the (decompressed) body.

    Returns
    -------
    int
        The JSON length: the whole body when the header is absent; 0 means a raw binary
        request (also what an absent header gives for an empty body, and what a value that is
        not a number reads as, as with ``atoi``).

    Raises
    ------
    HttpCodecError
        400 ``inference header size should be in range (0, <body size>), got: <value>`` for a
        negative value or one larger than the body.
    """
    if value is None:
        return body_size
    size = atoi(value)
    if size < 0 or size > body_size:
        raise _bad(f"inference header size should be in range (0, {body_size}), got: {value}")
    return size


def _opt_str(obj: Mapping[str, Any], key: str, default: str = "") -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise _type_error(key, "string")
    return value


def _req_str(obj: Mapping[str, Any], key: str) -> str:
    if key not in obj:
        raise _missing(key)
    return _opt_str(obj, key)


def _req_array(obj: Mapping[str, Any], key: str) -> list[Any]:
    """TritonJson's ``MemberAsArray``, with the ``Unable to parse '<key>'`` prefix."""
    if key not in obj:
        raise _missing(key)
    value = obj[key]
    if not isinstance(value, list):
        raise _type_error(key, "array")
    return value


def _shape_of(obj: Mapping[str, Any]) -> list[int]:
    shape = _req_array(obj, "shape")
    if not all(_is_uint(d) for d in shape):
        raise _type_error("shape", "unsigned-integer")
    return [int(d) for d in shape]


def _tensor_parameters(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A tensor's ``parameters`` members (none when absent or not an object, as TritonJson's
    ``Find`` sees it)."""
    return _members(obj.get("parameters"))


def _shared_memory_of(parameters: Mapping[str, Any]) -> SharedMemoryRef | None:
    """Triton's ``CheckSharedMemoryData``: region, offset and byte size, each read if present
    (an absent byte size is 0, which the region's bounds check then refuses)."""
    if "shared_memory_region" not in parameters:
        return None
    region = _opt_str(parameters, "shared_memory_region")
    for key in ("shared_memory_offset", "shared_memory_byte_size"):
        if key in parameters and not _is_uint(parameters[key]):
            raise _type_error(key, "unsigned-integer")
    return SharedMemoryRef(
        region,
        int(parameters.get("shared_memory_byte_size", 0)),
        int(parameters.get("shared_memory_offset", 0)),
    )


def _check_input_sources(obj: Mapping[str, Any]) -> None:
    """Triton's ``ValidateInputContentType``: exactly one of data, binary, shared memory."""
    parameters = _tensor_parameters(obj)
    present = [
        label
        for label, found in (
            ("data", "data" in obj),
            ("binary_data_size", "binary_data_size" in parameters),
            ("shared_memory_region", "shared_memory_region" in parameters),
        )
        if found
    ]
    if len(present) != 1:
        detail = "no field is set" if not present else "set " + " ".join(f"'{s}'" for s in present)
        raise _bad(
            "Input must set only one of the following fields: 'data', 'binary_data_size' in "
            "'parameters', 'shared_memory_region' in 'parameters'. But " + detail
        )


def _parse_input(element: Any) -> ParsedInput:
    """One element of ``inputs``, read in the order Triton's ``ParseJsonTritonIO`` reads it."""
    obj = _members(element)
    _check_input_sources(obj)
    name = _req_str(obj, "name")
    datatype = _req_str(obj, "datatype")
    shape = _shape_of(obj)
    parameters = _tensor_parameters(obj)
    parsed = ParsedInput(name, datatype, shape, parameters)
    if "binary_data_size" in parameters:
        if not _is_uint(parameters["binary_data_size"]):
            raise _type_error("binary_data_size", "unsigned-integer")
        return parsed
    parsed.shared_memory = _shared_memory_of(parameters)
    if parsed.shared_memory is None:
        parsed.data = obj["data"]
        if _element_count(shape) and not isinstance(parsed.data, list):
            raise _type_error("data", "array")
    return parsed


def _parse_output(element: Any) -> ParsedOutput:
    """One element of ``outputs``, read in the order Triton's ``ParseJsonTritonIO`` reads it."""
    obj = _members(element)
    parameters = _tensor_parameters(obj)
    if "shared_memory_region" in parameters:
        if "classification" in parameters:
            raise _bad("Output can't set both 'shared_memory_region' and 'classification'")
        if "binary_data" in parameters:
            if not isinstance(parameters["binary_data"], bool):
                raise _internal(f"Unable to set 'binary_data': {_json_type('boolean')}")
            if parameters["binary_data"]:
                raise _bad("Output can't set both 'shared_memory_region' and 'binary_data'")
    name = _req_str(obj, "name")
    class_count = parameters.get("classification", 0)
    if not _is_uint(class_count):
        raise _type_error("classification", "unsigned-integer", verb="set")
    placement = _shared_memory_of(parameters)
    binary = False
    if placement is None:
        binary = parameters.get("binary_data", False)
        if not isinstance(binary, bool):
            raise _type_error("binary_data", "boolean")
    return ParsedOutput(name, binary, int(class_count), placement, parameters)


def parse_infer_request(
    body: Buffer, header_length: int | None = None, *, model_name: str = ""
) -> ParsedInferRequest:
    """Parse an inference request body (JSON, optionally followed by binary input data).

    The fields are read in the order Triton's HTTP frontend reads them (``id``, then
    ``parameters``, then each input and its data, then ``outputs``), so that a request with
    several faults gets the message Triton gives for it.

    Parameters
    ----------
    body : bytes-like
        The decompressed body.
    header_length : int or None, optional
        The JSON length (``Inference-Header-Content-Length``); None: the whole body is JSON.
        For 0 (raw binary requests) use :func:`parse_raw_request`.
    model_name : str, optional
        For error messages.

    Returns
    -------
    ParsedInferRequest
        Binary inputs hold ``memoryview`` slices of ``body`` (no copy).

    Raises
    ------
    HttpCodecError
        500 for malformed JSON and JSON typing errors; 400 for the validation failures of
        sections 3.7 and 3.8 (data sources, JSON FP16/BF16, binary chunk accounting,
        ``triton_`` parameters, ...).
    """
    view = memoryview(body).cast("B") if not isinstance(body, memoryview) else body.cast("B")
    size = len(view) if header_length is None else header_length
    if not 0 < size <= len(view) and not (size == 0 and len(view) == 0):
        raise _bad(f"inference header size should be in range (0, {len(view)}), got: {size}")
    request = _members(parse_json_document(view[:size]))
    request_id = _opt_str(request, "id")
    raw_parameters = request.get("parameters")
    if "parameters" in request and not isinstance(raw_parameters, dict):
        raise _internal("failed to get request params.: attempt to get members for non-object")
    parameters = parse_request_parameters(raw_parameters)
    raw_inputs = _req_array(request, "inputs")
    inputs: list[ParsedInput] = []
    offset = size
    for element in raw_inputs:
        each = _parse_input(element)
        inputs.append(each)
        if "binary_data_size" not in each.parameters:
            continue
        declared = int(each.parameters["binary_data_size"])
        available = len(view) - offset
        if declared and size == 0:
            raise _bad(
                "must specify valid 'Infer-Header-Content-Length' in request header and "
                "'binary_data_size' when passing inputs in binary data format"
            )
        if available < declared:
            raise _bad(
                f"unexpected size for input '{each.name}', expecting {declared - available} "
                f"additional bytes for model '{model_name}'"
            )
        each.raw = view[offset : offset + declared]
        offset += declared
    if offset != len(view):
        raise _bad(f"unexpected additional input data for model '{model_name}'")
    outputs: list[ParsedOutput] = []
    if "outputs" in request:
        outputs = [_parse_output(each) for each in _req_array(request, "outputs")]
    return ParsedInferRequest(request_id, inputs, outputs, parameters)


def parse_raw_request(
    body: Buffer,
    *,
    model_name: str,
    inputs: Sequence[tuple[str, str, Sequence[int]]],
    max_batch_size: int = 0,
) -> ParsedInferRequest:
    """Parse a raw binary request (``Inference-Header-Content-Length: 0``, section 3.9).

    The body is the raw bytes of the model's single input, whose shape Triton deduces from
    the model's dims: a batching model gets a batch dimension of 1, and the one variable
    dimension (at most one) takes the byte count divided by the size of the rest (rounded
    down: a count that does not fit is left to the server's byte-size check, which names the
    input).  A BYTES input must have dims ``[1]``; the whole body is its one element.  Every
    output is returned in binary.

    Parameters
    ----------
    body : bytes-like
        The decompressed body.
    model_name : str
        The model.
    inputs : sequence of (name, datatype, dims)
        The model's inputs from its configuration (dims without the batch dimension).
    max_batch_size : int, optional
        The model's ``max_batch_size``.

    Returns
    -------
    ParsedInferRequest
        One input named as the model's, ``raw`` a view of ``body`` (for BYTES: the body
        behind its 4-byte length); ``raw_binary`` True.

    Raises
    ------
    HttpCodecError
        400, with Triton's messages, when the model does not have exactly one input or the
        shape cannot be deduced.
    """
    view = memoryview(body).cast("B") if not isinstance(body, memoryview) else body.cast("B")
    prefix = _request_prefix("")
    if len(inputs) != 1:
        raise _bad(
            f"{prefix}Raw request must only have 1 input (found 1) to be deduced but got "
            f"{len(inputs)} inputs in '{model_name}' model configuration"
        )
    name, datatype, dims = inputs[0]
    shape = [1] if max_batch_size != 0 else []
    variable = -1
    fixed = 1
    for dim in (int(d) for d in dims):
        if dim == -1:
            if variable != -1:
                raise _bad(
                    f"{prefix}The shape of the raw input '{name}' can not be deduced because "
                    "there are more than one variable-sized dimension"
                )
            variable = len(shape)
        else:
            fixed *= dim
        shape.append(dim)
    raw: Buffer = view
    if datatype == "BYTES":
        if variable != -1 or fixed != 1:
            raise _bad(
                f"{prefix}For BYTE datatype raw input '{name}', the model must have input shape [1]"
            )
        raw = memoryview(struct.pack("<I", len(view)) + bytes(view))
    elif variable != -1:
        info = DATATYPES.get(datatype)
        size = info.byte_size if info is not None and info.byte_size else 0
        shape[variable] = len(view) // fixed // size if fixed and size else 0
    parsed = ParsedInput(name, datatype, shape, {"binary_data_size": len(raw)}, raw=memoryview(raw))
    return ParsedInferRequest("", [parsed], [], RequestParameters(), raw_binary=True)


def decode_input(
    parsed: ParsedInput,
    buffer: Buffer | None = None,
    *,
    model_name: str = "",
    request_id: str = "",
) -> npt.NDArray[Any]:
    """The numpy value of a parsed input.

    Parameters
    ----------
    parsed : ParsedInput
        The input.
    buffer : bytes-like, optional
        The input's bytes when they are not in the body (the shared-memory view); by default
        its binary chunk or JSON data is decoded.
    model_name, request_id : str, optional
        For error messages.

    Returns
    -------
    numpy.ndarray
        Shaped as the input; raw data is not copied (BYTES excepted).

    Raises
    ------
    HttpCodecError
        As :func:`tensor_from_buffer` and :func:`tensor_from_json`.
    """
    source = buffer if buffer is not None else parsed.raw
    if source is not None:
        return tensor_from_buffer(
            parsed.datatype,
            parsed.shape,
            source,
            name=parsed.name,
            model_name=model_name,
            request_id=request_id,
        )
    return tensor_from_json(parsed.datatype, parsed.shape, parsed.data, name=parsed.name)


# ---------------------------------------------------------------------------------------------
# Server side: responses
# ---------------------------------------------------------------------------------------------


@dataclass
class ResponseOutput:
    """One output of a response being built (server side).

    Attributes
    ----------
    name, datatype : str
        Output name and datatype.
    shape : sequence of int
        The full shape.
    data : numpy.ndarray or None
        The values; None for an output written to shared memory (only name, datatype and
        shape are reported then).
    binary : bool
        Send with the binary extension rather than as JSON ``data``.
    """

    name: str
    datatype: str
    shape: Sequence[int]
    data: npt.NDArray[Any] | None
    binary: bool = False


def encode_infer_response(
    model_name: str,
    model_version: str,
    outputs: Iterable[ResponseOutput],
    *,
    request_id: str = "",
    parameters: Mapping[str, ParamValue] | None = None,
) -> EncodedBody:
    """Build an inference response body (section 3.7.2 key order; binary data in output order).

    Parameters
    ----------
    model_name, model_version : str
        The model and version that answered.
    outputs : iterable of ResponseOutput
        The outputs, in the order the model produced them.
    request_id : str, optional
        Echoed when non-empty.
    parameters : mapping, optional
        Response parameters (omitted when empty).

    Returns
    -------
    EncodedBody
        ``json_size`` set when binary data follows the JSON (an empty binary output alone
        leaves the body plain JSON, as in Triton).  Binary chunks of fixed-size outputs are
        views of the arrays (no copy).

    Raises
    ------
    HttpCodecError
        400 for an FP16/BF16 output requested as JSON (the whole request fails, as in
        Triton).
    """
    response: dict[str, Any] = {}
    if request_id:
        response["id"] = request_id
    response["model_name"] = model_name
    response["model_version"] = model_version
    if parameters:
        response["parameters"] = dict(parameters)
    entries: list[bytes] = []
    chunks: list[Buffer] = []
    binary = False
    for output in outputs:
        entry: dict[str, Any] = {
            "name": output.name,
            "datatype": output.datatype,
            "shape": [int(d) for d in output.shape],
        }
        if output.data is not None:
            if output.binary:
                raw = tensor_to_buffer(output.datatype, output.data)
                size = memoryview(raw).nbytes
                entry["parameters"] = {"binary_data_size": size}
                if size:
                    # Triton marks a body binary only when some binary data follows the JSON.
                    binary = True
                    chunks.append(raw)
            else:
                text = _response_number_text(output.datatype, output.data)
                if text is not None:
                    entries.append(_with_data_text(dumps(entry, raw_strings=True), text))
                    continue
                try:
                    entry["data"] = tensor_to_json(
                        output.datatype, output.data, bytes_as="surrogateescape"
                    )
                except HttpCodecError:
                    raise
                except InferenceServerException as exc:
                    raise _internal(str(exc.message())) from None
        entries.append(dumps(entry, raw_strings=True))
    # "outputs" is the last member: splice the entries (already JSON) into its place.
    response["outputs"] = []
    head = dumps(response, raw_strings=True)
    header = b"".join((head[:-3], b"[", b",".join(entries), b"]}"))
    return EncodedBody([header, *chunks], len(header) if binary else None)


def _response_number_text(datatype: str, data: Any) -> bytes | None:
    """JSON number text of an output sent as JSON, or None where :func:`tensor_to_json`
    must make the list (BYTES, FP16/BF16 errors, values not in the datatype's dtype).

    The text equals ``json.dumps`` of :func:`tensor_to_json`'s list: FP32 values are
    widened to double, as Triton writes them."""
    if datatype not in _NUMBER_TYPES or datatype == "FP16" or not isinstance(data, np.ndarray):
        return None
    if data.dtype != DATATYPES[datatype].numpy_type:
        return None
    return json_number_text(data, float32_as_double=True)


def encode_error(message: str) -> bytes:
    """The error body ``{"error": "<message>"}``."""
    return dumps({"error": message}, raw_strings=True)


# ---------------------------------------------------------------------------------------------
# Generate extension (provisional, section 3.16)
# ---------------------------------------------------------------------------------------------


def _generate_shape(name: str, value: Any, dims: Sequence[int]) -> list[int]:
    """The shape Triton gives a generate input: the value's element count (a list's length,
    else 1) spread over the model's metadata dims, fixed ones first from the innermost, then
    the innermost variable one takes what is left and the others 1."""
    count = len(value) if isinstance(value, list) else 1
    shape = [int(d) for d in dims]
    refused = _bad(f"The schema can not convert input '{name}' to tensor with proper shape")
    for dim in reversed(shape):
        if dim != -1:
            if dim <= 0 or count % dim:
                raise refused
            count //= dim
    for index in reversed(range(len(shape))):
        if shape[index] == -1:
            shape[index] = count
            count = 1
    if count != 1:
        raise refused
    return shape


def parse_generate_request(
    body: Buffer, *, model_inputs: Mapping[str, tuple[str, Sequence[int]]]
) -> ParsedInferRequest:
    """Parse a generate / generate_stream request (server side) as Triton 2.51 does.

    Each top-level key named like a model input becomes a JSON input: its datatype and shape
    come from the model's metadata (see :func:`_generate_shape`: a list's length, or 1 for a
    scalar, spread over the metadata dims).  The members of a ``parameters`` object are read
    the same way.  ``id`` sets the request id; any other key becomes a request parameter.

    Parameters
    ----------
    body : bytes-like
        The body.
    model_inputs : mapping of str to (str, sequence of int)
        The model's input names, with each datatype and metadata shape (a batching model's
        shape starts with ``-1``).

    Returns
    -------
    ParsedInferRequest

    Raises
    ------
    HttpCodecError
        500 for a body that is not JSON and for one that is not an object; 400 for an input
        whose value does not fit its shape, a ``parameters`` that is not an object, and
        parameter values of the wrong type.
    """
    request = _member_object(parse_json_document(body))
    request_id = ""
    inputs: list[ParsedInput] = []
    params: dict[str, Any] = {}

    def convert(members: Mapping[str, Any], context: str) -> None:
        nonlocal request_id
        for key, value in members.items():
            if key == "id" and not context and isinstance(value, str):
                request_id = value
                continue
            if key == "parameters" and not context:
                if key in model_inputs:
                    raise _bad(
                        "Keyword 'parameters' for nested schema also given as input tensor name"
                    )
                if not isinstance(value, dict):
                    raise _internal(
                        "Expected JSON object for keyword: 'parameters': " + _json_type("object")
                    )
                try:
                    convert(value, "parameters")
                except HttpCodecError as exc:
                    raise HttpCodecError(
                        f"Converting keyword: 'parameters': {exc.message()}", exc.http_status
                    ) from None
                continue
            found = model_inputs.get(key)
            if found is None:
                params[key] = value
                continue
            datatype, dims = found
            shape = _generate_shape(key, value, dims)
            data = value if isinstance(value, list) else [value]
            inputs.append(ParsedInput(key, datatype, shape, {}, data=data))

    convert(request, "")
    parameters = RequestParameters()
    for key, value in params.items():
        parameters.custom[key] = _custom_parameter(key, value)
    return ParsedInferRequest(request_id, inputs, [], parameters)


def encode_generate_response(
    model_name: str,
    model_version: str,
    outputs: Iterable[tuple[str, str, npt.NDArray[Any]]],
    *,
    request_id: str = "",
    parameters: Mapping[str, ParamValue] | None = None,
) -> bytes:
    """The JSON object of one generate response, as Triton 2.51 writes it.

    Every output, the response parameters, ``id`` (when non-empty), ``model_name`` and
    ``model_version`` are members of one object, in the byte order of their names (Triton
    collects them in a ``std::map``); an output of one element is written as a scalar, others
    as flat lists.

    Parameters
    ----------
    model_name, model_version : str
        The model that answered.
    outputs : iterable of (name, datatype, array)
        The outputs.
    request_id : str, optional
        Echoed as ``id`` when non-empty.
    parameters : mapping, optional
        The response's parameters.

    Returns
    -------
    bytes

    Raises
    ------
    HttpCodecError
        400 for an FP16/BF16 output (Triton sends those only as binary data).
    """
    members: dict[str, Any] = {}
    for name, datatype, array in outputs:
        values = tensor_to_json(datatype, array, bytes_as="surrogateescape")
        members.setdefault(name, values[0] if len(values) == 1 else values)
    for key, value in (parameters or {}).items():
        members.setdefault(key, value)
    if request_id:
        members.setdefault("id", request_id)
    members.setdefault("model_name", model_name)
    members.setdefault("model_version", model_version)
    ordered = {key: members[key] for key in sorted(members, key=lambda k: k.encode())}
    return dumps(ordered, raw_strings=True)


def encode_sse_event(payload: bytes) -> bytes:
    """One server-sent event carrying ``payload`` (``data: <payload>\\n\\n``)."""
    return b"data: " + payload + b"\n\n"


# ---------------------------------------------------------------------------------------------
# Compression (section 3.10)
# ---------------------------------------------------------------------------------------------


def compress(chunks: Buffer | Iterable[Buffer], algorithm: str) -> bytes:
    """Compress a body.

    Parameters
    ----------
    chunks : bytes-like or iterable of bytes-like
        The body, whole or in pieces (not joined first).
    algorithm : {"gzip", "deflate"}
        ``gzip`` (RFC 1952) or ``deflate`` (zlib container, RFC 1950, as ``zlib.compress``).

    Returns
    -------
    bytes

    Raises
    ------
    InferenceServerException
        For another algorithm.
    """
    if algorithm == "gzip":
        compressor = zlib.compressobj(wbits=31)
    elif algorithm == "deflate":
        compressor = zlib.compressobj(wbits=15)
    else:
        raise_error(
            f"unsupported compression algorithm '{algorithm}'; expected 'gzip' or 'deflate'"
        )
    pieces = [chunks] if isinstance(chunks, (bytes, bytearray, memoryview)) else chunks
    out = [compressor.compress(piece) for piece in pieces]
    out.append(compressor.flush())
    return b"".join(out)


def decompress(
    body: Buffer, encoding: str | None, *, max_size: int | None = None, lenient: bool = False
) -> Buffer:
    """Decompress a body by its ``Content-Encoding``.

    Parameters
    ----------
    body : bytes-like
        The body as received.
    encoding : str or None
        The ``Content-Encoding`` value: None, ``""`` or ``identity`` (returned unchanged),
        ``gzip`` or ``deflate`` (either container is detected automatically, and raw
        deflate is accepted too).
    max_size : int, optional
        Refuse bodies that inflate to more than this many bytes.
    lenient : bool, optional
        Corrupt or truncated data gives what inflated before the fault instead of an error
        (Triton's server does that, so a corrupt body reaches it as an empty or short one).

    Returns
    -------
    bytes-like

    Raises
    ------
    HttpCodecError
        501 ``Unsupported compression type`` for another encoding; 500 when the data is
        corrupt (unless ``lenient``); 400 when it exceeds ``max_size``.
    """
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return body
    if name not in SUPPORTED_ENCODINGS:
        raise HttpCodecError("Unsupported compression type", 501)
    for wbits in (47, -15):
        inflater = zlib.decompressobj(wbits=wbits)
        try:
            if max_size is None:
                out = inflater.decompress(body) + inflater.flush()
            else:
                out = inflater.decompress(body, max_size + 1)
                if len(out) > max_size or inflater.unconsumed_tail:
                    raise _bad(
                        f"decompressed request body exceeds the maximum allowed size of "
                        f"{max_size} bytes"
                    )
                out += inflater.flush()
        except zlib.error as exc:
            if wbits == 47 and name == "deflate":
                continue
            if lenient:
                return _inflated_prefix(body, wbits, max_size)
            raise _internal(f"failed to decompress the {name} body: {exc}") from None
        if not inflater.eof and not lenient:
            raise _internal(f"failed to decompress the {name} body: truncated data")
        return out
    raise _internal(f"failed to decompress the {name} body")  # pragma: no cover


def _inflated_prefix(body: Buffer, wbits: int, max_size: int | None) -> bytes:
    """What inflates from ``body`` before the first corrupt byte (fed in small pieces)."""
    inflater = zlib.decompressobj(wbits=wbits)
    view = memoryview(body).cast("B")
    out: list[bytes] = []
    total = 0
    for start in range(0, len(view), 256):
        try:
            piece = inflater.decompress(view[start : start + 256])
        except zlib.error:
            break
        out.append(piece)
        total += len(piece)
        if max_size is not None and total > max_size:
            raise _bad(
                f"decompressed request body exceeds the maximum allowed size of {max_size} bytes"
            )
    return b"".join(out)


def negotiate_encoding(accept_encoding: str | None) -> Literal["gzip", "deflate"] | None:
    """Pick the response encoding from an ``Accept-Encoding`` header (section 3.10).

    Parameters
    ----------
    accept_encoding : str or None
        The header, e.g. ``"gzip;q=0.5, deflate"``.

    Returns
    -------
    {"gzip", "deflate"} or None
        The acceptable coding with the highest weight among gzip, deflate and identity (ties
        keep the first listed); None for identity or when nothing applies.
    """
    if not accept_encoding:
        return None
    best: str | None = None
    best_q = 0.0
    for item in accept_encoding.split(","):
        parts = [p.strip() for p in item.split(";")]
        coding = parts[0].lower()
        if coding not in ("gzip", "deflate", "identity"):
            continue
        weight = 1.0
        for part in parts[1:]:
            if part.lower().startswith("q="):
                try:
                    weight = float(part[2:])
                except ValueError:
                    weight = 0.0
        if weight > best_q:
            best, best_q = coding, weight
    if best == "gzip":
        return "gzip"
    if best == "deflate":
        return "deflate"
    return None


# ---------------------------------------------------------------------------------------------
# Other endpoints
# ---------------------------------------------------------------------------------------------


def model_path(model_name: str, model_version: str = "", suffix: str = "") -> str:
    """The path of a model endpoint, with the name percent-encoded (as ``tritonclient``).

    Parameters
    ----------
    model_name : str
        The model.
    model_version : str, optional
        A version ("" for the server's choice).
    suffix : str, optional
        ``"infer"``, ``"ready"``, ``"config"``, ``"stats"``, ``"generate"``, ... ("" for
        metadata).

    Returns
    -------
    str
        E.g. ``/v2/models/simple/versions/1/infer``.
    """
    path = "/v2/models/" + quote(model_name)
    if model_version:
        path += "/versions/" + quote(str(model_version))
    if suffix:
        path += "/" + suffix
    return path


def encode_query(query_params: Mapping[str, Any] | None) -> str:
    """A query string from ``query_params`` as ``tritonclient`` builds it.

    Parameters
    ----------
    query_params : mapping or None
        ``{name: value}``; a list value repeats the name once per item.  Names and values are
        ``quote_plus``-encoded (values through ``str``).

    Returns
    -------
    str
        ``"a=1&b=x+y"``, or ``""`` for no parameters (the server ignores query strings).
    """
    pairs: list[str] = []
    for key, value in (query_params or {}).items():
        for item in value if isinstance(value, list) else [value]:
            pairs.append(f"{quote_plus(str(key))}={quote_plus(str(item))}")
    return "&".join(pairs)


def system_shm_path(action: str, region_name: str = "") -> str:
    """``/v2/systemsharedmemory[/region/<name>]/<action>`` (action: status, register,
    unregister)."""
    region = f"/region/{quote(region_name)}" if region_name else ""
    return f"/v2/systemsharedmemory{region}/{action}"


def cuda_shm_path(action: str, region_name: str = "") -> str:
    """``/v2/cudasharedmemory[/region/<name>]/<action>`` (action: status, register,
    unregister)."""
    region = f"/region/{quote(region_name)}" if region_name else ""
    return f"/v2/cudasharedmemory{region}/{action}"


def encode_index_request(ready: bool | None = None) -> bytes:
    """Body of ``POST /v2/repository/index`` (empty unless ``ready`` is given)."""
    return b"" if ready is None else dumps({"ready": bool(ready)})


def parse_index_request(body: Buffer) -> bool:
    """The ``ready`` flag of a repository index request (False when absent).

    Raises
    ------
    HttpCodecError
        500 for malformed JSON or a non-bool ``ready`` (Triton 2.51).
    """
    request = parse_json_object(body)
    ready = request.get("ready", False)
    if not isinstance(ready, bool):
        raise _internal(_json_type("boolean"))
    return ready


def encode_load_request(
    config: str | None = None, files: Mapping[str, bytes] | None = None
) -> bytes:
    """Body of ``POST /v2/repository/models/<m>/load``.

    Parameters
    ----------
    config : str, optional
        A JSON ``ModelConfig`` to use instead of the model's ``config.pbtxt``.
    files : mapping of str to bytes, optional
        ``{"file:<version>/<path>": content}``; contents are sent base64-encoded.

    Returns
    -------
    bytes
        ``{}`` or ``{"parameters": {...}}``.
    """
    parameters: dict[str, str] = {}
    if config is not None:
        parameters["config"] = config
    for path, content in (files or {}).items():
        parameters[path] = base64.b64encode(bytes(content)).decode("ascii")
    return dumps({"parameters": parameters} if parameters else {})


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
    for key, value in _member_object(request["parameters"]).items():
        if not isinstance(value, str):
            raise _internal(_json_type("string"))
        if key == "config":
            config = value
        elif key.startswith("file:"):
            files[key] = _lenient_b64decode(value)
        else:
            raise _internal("unexpected error on creating Triton parameter")
    return config, files


def encode_unload_request(unload_dependents: bool = False) -> bytes:
    """Body of ``POST /v2/repository/models/<m>/unload`` (as ``tritonclient`` sends it)."""
    return dumps({"parameters": {"unload_dependents": bool(unload_dependents)}})


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
    value = _members(request.get("parameters")).get("unload_dependents", False)
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
    request = _members(parse_json_document(body))
    changes: dict[str, Any] = {}
    if "trace_file" in request:
        value = request["trace_file"]
        if value is not None and not isinstance(value, str):
            raise _internal(_json_type("string"))
        changes["trace_file"] = value
    if "trace_level" in request:
        levels = request["trace_level"]
        if levels is None:
            changes["trace_level"] = None
        else:
            if not isinstance(levels, list):
                raise _internal(_json_type("array"))
            if not all(isinstance(level, str) for level in levels):
                raise _internal(_json_type("string"))
            try:
                chosen = trace_levels(levels)
            except ValueError as exc:
                raise _bad(str(exc)) from None
            if chosen is not None:
                changes["trace_level"] = chosen
    for key, lowest, bounds in TRACE_NUMBERS:
        if key not in request:
            continue
        value = request[key]
        if value is None:
            changes[key] = None
            continue
        if not isinstance(value, str):
            raise _internal(_json_type("string"))
        try:
            changes[key] = trace_number(key, value, lowest, bounds, got="got:")
        except ValueError as exc:
            raise _bad(str(exc)) from None
    return changes


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
    request = _members(parse_json_document(body))
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
            "unsigned-integer": _is_uint(value),
        }[expected]
        if not valid:
            raise _internal(_json_type(expected))
        if key == "log_format" and value not in ("default", "ISO8601"):
            raise HttpCodecError(f"invalid argument for --log_format, got: {value}", 503)
        changes[key] = value
    return changes


def encode_system_shm_register(key: str, offset: int, byte_size: int) -> bytes:
    """Body of a system shared-memory register request."""
    return dumps({"key": key, "offset": int(offset), "byte_size": int(byte_size)})


def _register_field(request: Mapping[str, Any], key: str) -> Any:
    if key not in request:
        raise _bad(f"Shared memory register request has no '{key}' field")
    return request[key]


def _member_uint(request: Mapping[str, Any], key: str) -> int:
    """TritonJson's ``MemberAsUInt`` (errors without a field prefix, as Triton reports them)."""
    if key not in request:
        raise _internal(f"attempt to access non-existing object member '{key}'")
    value = request[key]
    if not _is_uint(value):
        raise _internal(_json_type("unsigned-integer"))
    return int(value)


def parse_system_shm_register(body: Buffer) -> tuple[str, int, int]:
    """``(key, offset, byte_size)`` of a system shared-memory register request.

    Raises
    ------
    HttpCodecError
        400 for a missing ``key`` or ``byte_size``; 500 for a body that is not JSON (an empty
        one included) and for wrong types.
    """
    request = _members(parse_json_document(body))
    key = _register_field(request, "key")
    if not isinstance(key, str):
        raise _internal(_json_type("string"))
    offset = _member_uint(request, "offset") if "offset" in request else 0
    _register_field(request, "byte_size")
    byte_size = _member_uint(request, "byte_size")
    return key, offset, byte_size


def encode_cuda_shm_register(raw_handle: bytes, device_id: int, byte_size: int) -> bytes:
    """Body of a CUDA shared-memory register request (``raw_handle`` is base64-encoded)."""
    return dumps(
        {
            "raw_handle": {"b64": base64.b64encode(bytes(raw_handle)).decode("ascii")},
            "device_id": int(device_id),
            "byte_size": int(byte_size),
        }
    )


def parse_cuda_shm_register(body: Buffer) -> tuple[bytes, int, int]:
    """``(raw_handle, device_id, byte_size)`` of a CUDA shared-memory register request.

    Raises
    ------
    HttpCodecError
        400 for a missing ``raw_handle`` or a handle that does not decode to the 64 bytes of a
        ``cudaIpcMemHandle_t``; 500 for a body that is not JSON and for wrong types.
    """
    request = _members(parse_json_document(body))
    handle = _members(_register_field(request, "raw_handle"))
    if "b64" not in handle:
        raise _internal("attempt to access non-existing object member 'b64'")
    if not isinstance(handle["b64"], str):
        raise _internal(_json_type("string"))
    byte_size = _member_uint(request, "byte_size")
    device_id = _member_uint(request, "device_id")
    raw = _lenient_b64decode(handle["b64"])
    if len(raw) != 64:
        raise _bad("'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t")
    return raw, device_id, byte_size
