"""JSON as Triton reads and writes it, for the HTTP protocol (section 3).

Bodies are parsed the way Triton's rapidjson-based ``TritonJson`` parses them
(:func:`parse_json_document`, :func:`parse_json_object`, with Triton's error texts), written
compactly (:func:`dumps`), and read strictly by the clients (:func:`client_json`: one value,
UTF-8).  Tensor data in JSON form go both ways here too: :func:`tensor_from_json` (server side,
Triton's messages), :func:`tensor_to_json`, and the client's checked reading of a response
output's ``data``.

Non-UTF-8 BYTES in JSON
    Triton writes the raw bytes of a BYTES element into JSON strings without escaping them, so
    a JSON body may not be valid UTF-8 (section 3.7.3).  The server side does the same when it
    encodes, and decodes every JSON body as UTF-8 with ``surrogateescape``: the raw bytes of
    such an element survive the round trip (``str.encode("utf-8", "surrogateescape")`` gives
    them back).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from tritonclient.utils import (
    InferenceServerProtocolError,
    raise_error,
)
from tritonclient.utils._dtypes import DATATYPES, DatatypeInfo

from .checks import known_datatype, response_fault, response_shape
from .errors import HttpCodecError, http_bad, http_internal, json_type_error, not_utf8
from .numbers import INT64_MAX, INT64_MIN, UINT64_MAX, as_int64
from .raw import element_count
from .types import Buffer

__all__ = [
    "MAX_JSON_DEPTH",
    "NUMBER_TYPES",
    "client_json",
    "dumps",
    "is_int64",
    "is_uint",
    "json_kind",
    "json_output",
    "loads",
    "member_object",
    "members",
    "number_text_list",
    "parse_json_document",
    "parse_json_object",
    "tensor_from_json",
    "tensor_to_json",
    "unread_tensor",
    "with_data_text",
]

#: The deepest nesting of an input's JSON ``data`` that is accepted (as current Triton).
MAX_JSON_DEPTH = 100


_INT_TYPES = frozenset({"INT8", "INT16", "INT32", "INT64"})


_FLOAT_TYPES = frozenset({"FP32", "FP64"})


_NO_JSON_TYPES = frozenset({"FP16", "BF16"})


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


class Members(dict):  # type: ignore[type-arg]
    """A JSON object's members as a dict, with every member in document order, duplicates
    included (``pairs``): what :func:`parse_json_document` gives with ``keep_duplicates``."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def parse_json_document(data: Buffer, *, keep_duplicates: bool = False) -> Any:
    """Parse a request body as Triton does (server side): the whole of it, any JSON value.

    Parameters
    ----------
    data : bytes-like
        The body (or the JSON part of an inference request).
    keep_duplicates : bool, optional
        Objects become :class:`Members`, whose ``pairs`` keep members that repeat a name
        (Triton walks those too; a dict keeps only the last).

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
        if keep_duplicates:
            return json.loads(text, object_pairs_hook=Members)
        return json.loads(text)
    except RecursionError:
        raise http_internal(
            "failed to parse the request JSON buffer: JSON nesting is too deep"
        ) from None
    except ValueError:
        raise http_internal(
            f"failed to parse the request JSON buffer: {_rapidjson_error(text)}"
        ) from None


def members(document: Any) -> dict[str, Any]:
    """The members Triton finds in ``document``: its own when it is an object, none otherwise
    (TritonJson's ``Find`` on an array or a scalar finds nothing)."""
    return document if isinstance(document, dict) else {}


def member_object(document: Any) -> dict[str, Any]:
    """TritonJson's ``Members()``: an object's members; any other value is an error."""
    if not isinstance(document, dict):
        raise http_internal("attempt to get members for non-object")
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
    return members(parse_json_document(data))


def is_uint(value: Any) -> bool:
    return type(value) is int and 0 <= value <= UINT64_MAX


def is_int64(value: Any) -> bool:
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def _flatten(data: list[Any], max_depth: int | None = MAX_JSON_DEPTH) -> list[Any]:
    """Leaves of a (possibly nested) JSON array, row-major.

    With ``max_depth``, a value nested that deep (``data`` itself at depth 0, its elements at
    1, ...) is refused, as Triton 2.73's ``ReadDataFromJsonHelper`` and
    ``JsonBytesArrayByteSize`` refuse it; without, any depth the JSON parser took is walked
    (iteratively: no recursion limit).
    """
    if not any(type(item) is list for item in data):
        if max_depth is not None and max_depth <= 1 and data:
            raise _too_deep(max_depth)
        return list(data)
    out: list[Any] = []
    stack: list[tuple[Iterator[Any], int]] = [(iter(data), 1)]
    while stack:
        items, depth = stack[-1]
        if max_depth is not None and depth >= max_depth:
            if next(items, _END) is not _END:
                raise _too_deep(max_depth)
            stack.pop()
            continue
        for item in items:
            if type(item) is list:
                stack.append((iter(item), depth + 1))
                break
            out.append(item)
        else:
            stack.pop()
    return out


_END = object()


def _element_count_2_73(shape: Sequence[int]) -> int:
    """Triton 2.73's ``GetElementCount`` (src/common.cc:109-135) of a shape read as int64s:
    -1 at the first -1 (wildcard), -2 at a dimension below -1 (invalid), 0 at the first 0,
    -3 when the product passes ``INT64_MAX``, else the product (0 for no dimension)."""
    count = None
    for dim in shape:
        if dim == -1:
            return -1
        if dim < 0:
            return -2
        if dim == 0:
            return 0
        if count is not None and count > INT64_MAX // dim:
            return -3
        count = dim if count is None else count * dim
    return count or 0


def _check_count_2_73(name: str, shape: Sequence[int]) -> int:
    """Triton 2.73's element count of a JSON input of ``shape``; refuse the invalid and the
    overflowing ones with its words (src/http_server.cc:2701-2726, 2.73.0)."""
    dims64 = [as_int64(d) for d in shape]
    count = _element_count_2_73(dims64)
    if count in (-2, -3):
        dims = ",".join(map(str, dims64))
        problem = (
            "contains one or more invalid dimensions"
            if count == -2
            else f"causes total element count to exceed maximum size of {INT64_MAX}"
        )
        raise http_bad(f"invalid shape for input '{name}': shape [{dims}] {problem}")
    return count


def _check_json_size(name: str, nbytes: int, max_bytes: int | None) -> None:
    """Refuse a JSON input whose bytes (as a ``size_t``) pass ``--http-max-input-size``
    (src/http_server.cc:2757-2767, 2.73.0)."""
    if max_bytes is not None and nbytes % 2**64 > max_bytes:
        raise http_bad(
            f"JSON input '{name}' has a byte_size ({nbytes % 2**64} bytes) that exceeds the "
            f"maximum allowed value of {max_bytes} bytes. Use --http-max-input-size to "
            "increase the limit."
        )


def _check_typed_size_2_73(
    name: str, info: DatatypeInfo, count: int, max_bytes: int | None
) -> None:
    """Triton 2.73's size checks of a typed (not BYTES) JSON input of ``count`` elements,
    before its data are read (src/http_server.cc:2736-2767): the byte size must not pass
    ``INT64_MAX``, nor ``max_bytes``.  A wildcard shape counts -1 there, so its byte size
    wraps round as a ``size_t`` and passes any limit."""
    size = info.byte_size or 0
    if size > 1 and count > INT64_MAX // size:
        raise http_bad(
            f"byte size overflow for input '{name}': element count ({count}) * data type "
            f"size ({size}) exceeds maximum allowed size ({INT64_MAX})"
        )
    _check_json_size(name, count * size, max_bytes)


def unread_tensor(datatype: str) -> npt.NDArray[Any]:
    """An input whose data Triton hands on unread (the core refuses its shape first): empty,
    of the datatype's numpy type (raw bytes for an unknown datatype, whose check is the
    core's)."""
    info = DATATYPES.get(datatype)
    return np.empty(0, dtype=np.dtype(info.numpy_type if info else np.uint8))


def _too_deep_text(max_depth: int) -> str:
    return f"JSON nesting depth exceeds maximum allowed limit ({max_depth})"


def _too_deep(max_depth: int) -> HttpCodecError:
    return http_bad(_too_deep_text(max_depth))


def tensor_from_json(
    datatype: str,
    shape: Sequence[int],
    data: Any,
    *,
    name: str = "",
    max_depth: int | None = MAX_JSON_DEPTH,
    element_count_2_73: bool = False,
    max_bytes: int | None = None,
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
    max_depth : int or None, optional
        How deep ``data`` may nest (Triton 2.73's ``HTTP_MAX_JSON_NESTING_DEPTH``, 100); None:
        any depth (Triton 2.51).
    element_count_2_73 : bool, optional
        Count the elements as Triton 2.73's ``GetElementCount`` does and refuse, with its
        words (400), a shape it finds invalid (a negative dimension other than -1 before any
        -1 or 0: "invalid shape for input 'X': shape [..] contains one or more invalid
        dimensions"), a shape whose element count passes ``INT64_MAX`` ("... causes total
        element count to exceed maximum size of 9223372036854775807") and a typed input
        whose byte size does ("byte size overflow for input 'X': ...").  Triton 2.51 reads
        the data and reports the byte-size mismatch.
    max_bytes : int or None, optional
        The largest byte size of the input (Triton 2.73's ``--http-max-input-size``): "JSON
        input 'X' has a byte_size (N bytes) that exceeds the maximum allowed value of M
        bytes. Use --http-max-input-size to increase the limit." (400), checked before a
        typed input's data are read and after a BYTES input's are sized (4 bytes and the
        UTF-8 of each string); None: no limit (Triton 2.51).

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
    counted = _check_count_2_73(name, shape) if element_count_2_73 else None
    info = DATATYPES.get(datatype)
    if counted and info is not None and datatype != "BYTES":
        # 2.73 sizes a typed input from its count before it reads any data, a wildcard's -1
        # included (so [-1, 0] is refused for its size, not read as empty).
        _check_typed_size_2_73(name, info, counted, max_bytes)
    count = element_count(shape)
    if count == 0:
        # Triton reads no data at all for an empty tensor (whatever 'data' holds); an unknown
        # datatype is the server's datatype check's to report then.
        if any(dim < 0 for dim in shape):
            # A wildcard with a 0 ([-1, 0], [0, -1]): the core refuses the shape before it
            # looks at the data ("All input dimensions should be specified ...").
            return unread_tensor(datatype)
        try:
            return np.empty(tuple(shape), dtype=np.dtype(info.numpy_type if info else np.uint8))
        except ValueError:  # e.g. [0, 2**63-1, 2**63-1]: numpy refuses the other dims' product
            raise http_bad(
                f"input '{name}' has shape {list(shape)}: no tensor of that shape can be held "
                "(its non-zero dimensions overflow)"
            ) from None
    if info is None:
        raise http_bad(f"invalid datatype for input {name}")
    if datatype in _NO_JSON_TYPES:
        raise http_bad(
            f"receiving {datatype} data via JSON is not supported. Please use the binary data "
            f"format for input {name}"
        )
    try:
        flat = _flatten(data, max_depth) if type(data) is list else [data]
    except HttpCodecError as exc:
        if datatype == "BYTES":  # Triton sizes BYTES data first (JsonBytesArrayByteSize)
            raise
        raise http_bad(f"Unable to parse 'data': {_too_deep_text(max_depth or 0)}") from exc
    target = np.dtype(info.numpy_type)
    kinds = set(map(type, flat))
    if datatype != "BYTES" and len(flat) != count:
        raise http_internal(
            "Unable to parse 'data': Shape does not match true shape of 'data' field"
        )
    if datatype == "BOOL":
        if not kinds <= {bool}:
            raise json_type_error("data", "boolean")
        return np.array(flat, dtype=target).reshape(tuple(shape))
    if datatype == "BYTES":
        if not kinds <= {str}:
            raise http_internal(
                "Unable to parse JSON bytes array: attempt to access JSON non-string as string"
            )
        try:
            items = [s.encode("utf-8", "surrogateescape") for s in flat]
        except UnicodeEncodeError:
            raise http_internal(
                "Unable to parse JSON bytes array: string is not valid Unicode"
            ) from None
        if element_count_2_73:
            _check_json_size(name, sum(4 + len(item) for item in items), max_bytes)
        out = np.empty(len(items), dtype=np.object_)
        out[:] = items
        # Triton sizes BYTES data by its bytes, not its elements: a wrong count is left to
        # the server's element-count check, which names it (the array stays flat then).
        return out.reshape(tuple(shape)) if len(items) == count else out
    if datatype in _FLOAT_TYPES:
        if not kinds <= {int, float}:
            raise json_type_error("data", "number")
        try:
            values = np.array(flat, dtype=np.float64)
        except OverflowError:
            raise json_type_error("data", "number") from None
        return values.astype(target).reshape(tuple(shape))
    if not kinds <= {int}:
        signed = datatype in _INT_TYPES
        raise json_type_error("data", "signed-integer" if signed else "unsigned-integer")
    if datatype in _INT_TYPES:
        if flat and (min(flat) < INT64_MIN or max(flat) > INT64_MAX):
            raise json_type_error("data", "signed-integer")
        wide = np.array(flat, dtype=np.int64)
    else:
        if flat and (min(flat) < 0 or max(flat) > UINT64_MAX):
            raise json_type_error("data", "unsigned-integer")
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
        For BYTES: ``"str"`` requires UTF-8 bytes elements (the client rule, raising
        InferenceServerException otherwise) and sends other objects as their ``str()``;
        ``"surrogateescape"`` keeps non-UTF-8 bytes as escape characters, which
        :func:`dumps` with ``raw_strings=True`` writes raw (Triton's output rule).
        Default ``"str"``.

    Returns
    -------
    list
        The elements: bool, int (exact, also beyond 2**53), float (FP32 widened to double)
        or str.

    Raises
    ------
    InferenceServerException
        For FP16/BF16 (an :class:`HttpCodecError` with status 400), or a BYTES element that
        is not UTF-8 bytes (with ``bytes_as="str"``; other objects are sent as their
        ``str()``) or, with ``"surrogateescape"``, neither bytes nor str.
    """
    if datatype in _NO_JSON_TYPES:
        raise http_bad(
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
            elif errors == "strict":
                # The client rule: any other object goes as its str(), as NVIDIA's client
                # sends it (and as the binary encoding, serialize_byte_tensor, does).
                out.append(str(item))
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


NUMBER_TYPES = frozenset(
    {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"}
    | {"FP16", "FP32", "FP64"}
)


def number_text_list(datatype: str, text: bytes) -> list[Any]:
    """The JSON ``data`` list that :func:`json_number_text` text stands for: Python ints,
    bools, or floats (FP16/FP32 values widened to double, as ``ndarray.tolist`` gives)."""
    values: list[Any] = json.loads(b"[" + text + b"]")
    if datatype in ("FP16", "FP32"):
        # The text parses back to the exact float32 (FP16 values are exact in float32).
        return np.array(values, dtype=np.float32).astype(np.float64).tolist()  # type: ignore[no-any-return]
    return values


def with_data_text(member: bytes, text: bytes) -> bytes:
    """Append ``"data":[text]`` to the JSON object ``member`` (which has other members)."""
    return b"".join((member[:-1], b',"data":[', text, b"]}"))


def json_kind(value: Any) -> str:
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


def json_output(name: str, datatype: Any, shape: Any, data: Any) -> npt.NDArray[Any]:
    """An output's JSON ``data`` as an array, checked against its datatype and shape."""
    info = known_datatype(name, datatype)
    dims = response_shape(name, shape)
    count = math.prod(dims)
    described = f"output '{name}' ({datatype}, shape {list(dims)})"
    if type(data) is not list:
        raise response_fault(f"{described} has 'data' of type {json_kind(data)}, expected an array")
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
        f"{described} has {json_kind(value)} {value!r} at index {index} of its 'data', "
        f"expected {expected}"
    )


_JSON = json.JSONDecoder()

try:  # msgspec (the http extra) parses JSON in C, 3-4x faster than the json module
    import msgspec
except ImportError:  # pragma: no cover - without the http extra: the json module only
    _FAST_JSON = None
    _FAST_JSON_ERRORS: tuple[type[Exception], ...] = ()
else:
    _FAST_JSON = msgspec.json.Decoder().decode
    # (ValueError: msgspec raises UnicodeDecodeError for a string that is not UTF-8)
    _FAST_JSON_ERRORS = (msgspec.MsgspecError, ValueError)


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
    if _FAST_JSON is not None:
        # msgspec reads what the json module reads, with the same values (exact integers of
        # any size, correctly rounded floats, the last of repeated keys).  What it refuses
        # (NaN and Infinity, numbers beyond a double, lone surrogates, and every broken
        # body) goes the json module's way below, which accepts the first three as Triton
        # writes them and words the errors.
        try:
            return _FAST_JSON(data)
        except _FAST_JSON_ERRORS:
            pass
    raw = bytes(data)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        hint = (
            "a BYTES output holding bytes that are not UTF-8 can only come as binary data: "
            "request it with InferRequestedOutput(name, binary_data=True)"
        )
        raise not_utf8(f"{what} is not valid UTF-8", raw, exc, hint) from None
    try:
        return _JSON.decode(text)
    except RecursionError:
        raise InferenceServerProtocolError(f"{what} is not JSON: it nests too deeply") from None
    except ValueError as exc:
        excerpt = text[:200]
        raise InferenceServerProtocolError(
            f"{what} is not JSON ({exc}): {excerpt!r}", debug_details=excerpt
        ) from None
