"""Serialization of BYTES and BF16 tensors and of JSON number text (the public codecs of
:mod:`tritonclient.utils`), with their optional C accelerator.

BYTES wire form: for each element in row-major (C) order, a 4-byte little-endian length
followed by that many bytes.  The loops run in the optional C accelerator
(``tritonclient.utils._speedups``); where it was not built, an equivalent implementation
using numpy and C-level builtins is used instead.

BF16 wire form: 2 bytes little-endian per element, the upper half of the IEEE-754 binary32
encoding.

JSON number text (:func:`json_number_text`): the elements of a numeric tensor written as
the inside of a JSON array, for the HTTP protocol's explicit ``data``; also in the C
accelerator, with a numpy fallback that gives the same text.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from ._errors import raise_error

__all__ = [
    "HAVE_SPEEDUPS",
    "TRITON_RESERVED_REQUEST_PARAMS",
    "TRITON_RESERVED_REQUEST_PARAMS_PREFIX",
    "deserialize_bf16_tensor",
    "deserialize_bytes_tensor",
    "json_number_text",
    "serialize_bf16_tensor",
    "serialize_byte_tensor",
    "serialized_byte_size",
]

_MAX_ELEMENT_BYTES = 0xFFFFFFFF

#: Request parameter names that Triton reserves for its own use; clients reject them in
#: user-supplied ``parameters``.
TRITON_RESERVED_REQUEST_PARAMS: list[str] = [
    "sequence_id",
    "sequence_start",
    "sequence_end",
    "priority",
    "timeout",
    "headers",
    "binary_data_output",
]
#: Prefix of further reserved request parameter names.
TRITON_RESERVED_REQUEST_PARAMS_PREFIX: str = "triton_"


def _utf8_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _py_pack_bytes(items: Sequence[Any], coerce: bool = False) -> bytes:
    """Length-prefix and concatenate bytes/str items (fallback for the C accelerator); with
    ``coerce``, any other item as ``str(item)``."""
    if coerce:
        items = [x if isinstance(x, (bytes, str)) else str(x) for x in items]
    types = set(map(type, items))
    if not all(issubclass(t, bytes) for t in types):
        for index, item in enumerate(items):
            if not isinstance(item, (bytes, str)):
                raise TypeError(
                    f"element {index} of the BYTES tensor is of type "
                    f"'{type(item).__name__}'; expected bytes or str"
                )
            if isinstance(item, str) and not _utf8_encodable(item):
                raise ValueError(
                    f"element {index} of the BYTES tensor is a str that cannot be encoded as "
                    "UTF-8 (it holds a lone surrogate)"
                )
        items = [x.encode() if isinstance(x, str) else x for x in items]
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    if lengths.size and int(lengths.max()) > _MAX_ELEMENT_BYTES:
        index = int(np.argmax(lengths > _MAX_ELEMENT_BYTES))
        raise OverflowError(
            f"element {index} of the BYTES tensor is {int(lengths[index])} bytes; the wire "
            f"format limits an element to {_MAX_ELEMENT_BYTES} bytes"
        )
    # One 4-byte header object per element, made by numpy; then a single join.
    headers = lengths.astype("<u4").view("V4").tolist()
    parts: list[Any] = [None] * (2 * len(items))
    parts[0::2] = headers
    parts[1::2] = items
    return b"".join(parts)


def _py_unpack_bytes(buffer: Any) -> list[bytes]:
    """Split length-prefixed elements (fallback for the C accelerator)."""
    view = memoryview(buffer).cast("B")
    size = len(view)
    unpack = struct.Struct("<I").unpack_from
    out: list[bytes] = []
    offset = 0
    while offset < size:
        if size - offset < 4:
            raise ValueError(
                f"truncated BYTES tensor: element {len(out)} at byte offset {offset} needs a "
                f"4-byte length prefix but only {size - offset} byte(s) remain"
            )
        (length,) = unpack(view, offset)
        if length > size - offset - 4:
            raise ValueError(
                f"truncated BYTES tensor: element {len(out)} at byte offset {offset} declares "
                f"{length} byte(s) but only {size - offset - 4} remain"
            )
        out.append(bytes(view[offset + 4 : offset + 4 + length]))
        offset += 4 + length
    return out


# Exact doubles 1e0 .. 1e22 (the same table as in _speedups.c).
_POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)


def _scale_pow10(values: npt.NDArray[np.float64], power: npt.NDArray[np.int64]) -> Any:
    """``values * 10**power`` by the same chain of correctly rounded steps as the C code."""
    v = values.copy()
    up = power >= 0
    left = np.where(up, power, -power)
    while True:
        big = left > 22
        if not big.any():
            break
        v[big & up] *= 1e22
        v[big & ~up] /= 1e22
        left[big] -= 22
    factor = _POW10[left]
    return np.where(up, v * factor, v / factor)


def _float32_decimals(values: npt.NDArray[np.float32]) -> tuple[Any, Any]:
    """Digits and decimal exponents of non-zero finite float32 values (C: put_float32).

    Returns ``(digits, exp10)``: int64 arrays, ``|value| == digits * 10**exp10`` for the
    shortest decimal of at most 9 significant digits that lies inside the value's float32
    rounding interval by a safety margin; ``digits`` has no trailing zeros.
    """
    bits = values.view(np.uint32).astype(np.int64)
    biased = (bits >> 23) & 0xFF
    mantissa = bits & 0x7FFFFF
    a = np.abs(values.astype(np.float64))
    subnormal = biased == 0
    # floor(log2(a)): a subnormal is mantissa * 2**-149 and frexp gives its bit length.
    e2 = np.where(subnormal, np.frexp(mantissa.astype(np.float64))[1] - 150, biased - 127)
    half_gap = np.where(
        subnormal,
        -150,
        np.where((mantissa == 0) & (biased > 1), e2 - 25, e2 - 24),
    )
    h = np.ldexp(1.0, half_gap)
    p = 8 - ((e2 * 78913) >> 18)
    y = _scale_pow10(a, p)
    s = np.rint(y)
    over = s >= 1e9
    if over.any():
        p = np.where(over, p - 1, p)
        y = np.where(over, _scale_pow10(a, p), y)
        s = np.rint(y)
    limit = _scale_pow10(h, p) * 0.9990234375
    best = s
    drop = np.zeros(len(values), dtype=np.int64)
    active = np.ones(len(values), dtype=bool)
    for j in range(1, 9):
        c = np.rint(y / _POW10[j])
        active &= np.abs(c * _POW10[j] - y) < limit
        if not active.any():
            break
        best = np.where(active, c, best)
        drop[active] = j
    digits = best.astype(np.int64)
    exp10 = drop - p
    while True:
        zeros = digits % 10 == 0
        if not zeros.any():
            break
        digits = np.where(zeros, digits // 10, digits)
        exp10 = np.where(zeros, exp10 + 1, exp10)
    return digits, exp10


def _float32_short_doubles(values: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """For each float32, the double nearest to its short decimal (repr of it is that text)."""
    out = values.astype(np.float64)
    regular = np.isfinite(out) & (out != 0)
    if not regular.any():
        return out
    digits, exp10 = _float32_decimals(values[regular])
    d = digits.astype(np.float64)  # exact: at most 9 digits
    # One correctly rounded operation where the power of ten is an exact double.
    factor = _POW10[np.clip(np.abs(exp10), 0, 22)]
    near = np.where(exp10 >= 0, d * factor, d / factor)
    far = np.flatnonzero(np.abs(exp10) > 22)
    for i in far.tolist():
        near[i] = float(f"{int(digits[i])}e{int(exp10[i])}")
    out[regular] = np.copysign(near, out[regular])
    return out


def _py_format_json_numbers(flat: npt.NDArray[Any], kind: str) -> bytes:
    """JSON number text of a 1-D native-order array (fallback for the C accelerator).

    ``kind``: ``"b"`` bool, ``"i"``/``"u"`` signed/unsigned integers, ``"f"`` float32 as
    its short decimal, ``"d"`` float32/float64 as the repr of the double.
    """
    with np.errstate(invalid="ignore"):  # widening a signalling NaN
        if kind == "f":
            values: list[Any] = _float32_short_doubles(flat).tolist()
        elif kind == "d":
            values = flat.astype(np.float64).tolist()
        elif kind in ("b", "i", "u"):
            values = flat.tolist()
        else:
            raise ValueError(f"unknown number kind '{kind}'")
    # json writes floats with float.__repr__ and NaN/Infinity/-Infinity as bare tokens.
    return json.dumps(values, separators=(",", ":"))[1:-1].encode("ascii")


_pack_bytes: Callable[[Sequence[Any], bool], bytes]
_unpack_bytes: Callable[[Any], list[bytes]]
_format_json_numbers: Callable[[Any, str], bytes]

if os.environ.get("TRITONCLIENT_DISABLE_SPEEDUPS"):
    HAVE_SPEEDUPS = False
else:
    try:
        from . import _speedups
    except ImportError:
        HAVE_SPEEDUPS = False
    else:
        HAVE_SPEEDUPS = True

#: The C accelerator's in-place object-array packer and unpacker (None without it).
_pack_object_array: Callable[[Any, int, int, bool], bytes] | None
_unpack_bytes_array: Callable[[Any, Callable[[int], tuple[Any, int]]], Any] | None

if HAVE_SPEEDUPS:
    _pack_bytes = _speedups.pack_bytes
    _unpack_bytes = _speedups.unpack_bytes
    _format_json_numbers = _speedups.format_json_numbers
    _pack_object_array = _speedups.pack_object_array
    _unpack_bytes_array = _speedups.unpack_bytes_array
else:
    _pack_bytes = _py_pack_bytes
    _unpack_bytes = _py_unpack_bytes
    _format_json_numbers = _py_format_json_numbers
    _pack_object_array = _unpack_bytes_array = None


def json_number_text(array: npt.NDArray[Any], *, float32_as_double: bool = False) -> bytes:
    """The elements of a numeric array as JSON number text, comma-separated (no brackets).

    Parameters
    ----------
    array : numpy.ndarray
        Bool, integer or float (16, 32 or 64-bit) values; any shape, memory layout and byte
        order (flattened row-major).
    float32_as_double : bool, optional
        Write float32 (and float16) values widened to double, as ``json.dumps`` of
        ``array.tolist()`` does (Triton's JSON output).  Default False: the shortest decimal
        of at most 9 significant digits that parses back to the same float32 (also when
        parsed as a double first), which is much faster to produce.

    Returns
    -------
    bytes
        ASCII text such as ``b"1,2.5,-3e-07"``: integers exactly, ``true``/``false`` for
        bool, floats laid out as Python's ``repr`` does (``1.0``, ``1e-05``, ``1e+16``) and
        ``NaN``, ``Infinity``, ``-Infinity`` for non-finite values, as ``json.dumps`` writes
        them.  Empty for an empty array.

    Raises
    ------
    TypeError
        For any other dtype.
    """
    dtype = array.dtype.newbyteorder("=")
    if dtype == np.bool_:
        kind = "b"
    elif dtype.kind in "iu":
        kind = dtype.kind
    elif dtype in (np.float16, np.float32):
        kind = "d" if float32_as_double else "f"
        dtype = np.dtype(np.float32)
    elif dtype == np.float64:
        kind = "d"
    else:
        raise TypeError(f"cannot write {dtype} values as JSON numbers")
    flat = np.ascontiguousarray(array.reshape(-1), dtype=dtype)
    return _format_json_numbers(flat, kind)


def _bytes_elements(input_tensor: npt.NDArray[Any], what: str) -> list[Any]:
    """Flatten a BYTES-typed array to a list of its elements in row-major order (bytes or
    str, or for an object array any object: the packer writes those as ``str(element)``,
    as NVIDIA's ``serialize_byte_tensor`` does)."""
    if not isinstance(input_tensor, np.ndarray):
        raise_error(f"{what}: expected a numpy.ndarray, got {type(input_tensor).__name__}")
    if input_tensor.dtype.kind not in "OSU":
        raise_error(
            f"{what}: invalid datatype",
            hint=f"the array's dtype is {input_tensor.dtype}; BYTES tensors are arrays of "
            "dtype object (with bytes or str elements), bytes_ or str_",
        )
    # ravel() copies only when the array is not C-contiguous; for 'S'/'U' arrays tolist()
    # drops trailing NUL padding exactly as ndarray.item() does.
    items: list[Any] = input_tensor.ravel(order="C").tolist()
    return items


def serialize_byte_tensor(input_tensor: npt.NDArray[Any]) -> npt.NDArray[np.object_]:
    """Serialize a BYTES tensor into the length-prefixed wire form.

    Parameters
    ----------
    input_tensor : numpy.ndarray
        The tensor to serialize: dtype ``object`` whose elements are ``bytes`` or ``str``
        (str is encoded as UTF-8; any other element is written as ``str(element)``, as
        NVIDIA's client does), ``numpy.bytes_`` or ``numpy.str_``; any shape and memory
        order.  Elements are taken in row-major order.  Note that numpy drops trailing NUL
        bytes of ``bytes_`` elements; use dtype ``object`` to keep them.

    Returns
    -------
    numpy.ndarray
        A 0-d array of dtype ``object`` holding one ``bytes`` object with the serialized
        tensor (``.item()`` returns it), or an empty 1-D object array if the tensor has no
        elements.

    Raises
    ------
    InferenceServerException
        If the array's dtype cannot hold BYTES elements, a ``str`` element cannot be
        encoded as UTF-8 (lone surrogates), or an element is longer than 4 GiB - 1.
    """
    if isinstance(input_tensor, np.ndarray) and input_tensor.size == 0:
        return np.empty([0], dtype=np.object_)
    pack_in_place = _pack_object_array
    if (
        pack_in_place is not None
        and isinstance(input_tensor, np.ndarray)
        and input_tensor.dtype == np.object_
    ):
        # The C packer reads the elements where they are (no list of them made first) and
        # checks each one's type as it packs it.
        flat = _object_slots(input_tensor.ravel(order="C"))
        try:
            packed = pack_in_place(flat, flat.__array_interface__["data"][0], flat.size, True)
        except (TypeError, ValueError, OverflowError) as exc:
            raise_error(f"cannot serialize bytes tensor: {exc}")
        return np.asarray(packed, dtype=np.object_)
    items = _bytes_elements(input_tensor, "cannot serialize bytes tensor")
    if not items:
        return np.empty([0], dtype=np.object_)
    try:
        # The check of each element's type is the packer's (in C: no pass over a million
        # elements in Python before it).
        packed = _pack_bytes(items, input_tensor.dtype.kind == "O")
    except (TypeError, ValueError, OverflowError) as exc:
        raise_error(f"cannot serialize bytes tensor: {exc}")
    return np.asarray(packed, dtype=np.object_)


def _object_slots(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array``, checked to be a C-contiguous 1-D object array: its data is then one
    ``PyObject *`` per element, which the C accelerator reads (or fills) in place."""
    if not (
        array.dtype == np.object_
        and array.ndim == 1
        and array.flags.c_contiguous
        and array.itemsize == _POINTER_SIZE
    ):  # pragma: no cover - ravel() and empty() always give such arrays
        raise_error("internal error: not a contiguous object array")
    return array


_POINTER_SIZE = struct.calcsize("P")


def _new_object_array(count: int) -> tuple[npt.NDArray[Any], int]:
    """A new 1-D object array of ``count`` elements and the address of its data (for the C
    accelerator to fill)."""
    out = _object_slots(np.empty(count, dtype=np.object_))
    return out, out.__array_interface__["data"][0]


def deserialize_bytes_tensor(encoded_tensor: Any) -> npt.NDArray[np.object_]:
    """Deserialize a length-prefixed BYTES buffer into a 1-D array of ``bytes``.

    Parameters
    ----------
    encoded_tensor : bytes
        The encoded tensor where each element has its length in the first 4 bytes
        (little-endian) followed by the content.  Any object exposing a contiguous buffer
        (bytes, bytearray, memoryview, numpy array) is accepted, as is the 0-d object
        array returned by :func:`serialize_byte_tensor`.

    Returns
    -------
    numpy.ndarray
        1-D array of dtype ``object`` holding the elements as ``bytes``, in row-major order.

    Raises
    ------
    InferenceServerException
        If the buffer is truncated or corrupt; the message names the element and byte
        offset where decoding failed.
    """
    if isinstance(encoded_tensor, np.ndarray) and encoded_tensor.dtype == np.object_:
        if encoded_tensor.size == 0:
            return np.empty([0], dtype=np.object_)
        encoded_tensor = encoded_tensor.item()
    try:
        if _unpack_bytes_array is not None:
            # The elements go straight into the array's slots (no list of them first).
            made: npt.NDArray[np.object_] = _unpack_bytes_array(encoded_tensor, _new_object_array)
            return made
        items = _unpack_bytes(encoded_tensor)
    except ValueError as exc:
        raise_error(str(exc))
    except TypeError as exc:
        raise_error(f"cannot deserialize bytes tensor: {exc}")
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


def serialized_byte_size(tensor_value: npt.NDArray[Any]) -> int:
    """Get the number of content bytes of a BYTES tensor, without length prefixes.

    Parameters
    ----------
    tensor_value : numpy.ndarray
        Array of dtype ``object`` whose elements are ``bytes`` or ``str`` (str counted as
        its UTF-8 encoding).

    Returns
    -------
    int
        The sum of the elements' byte lengths.

    Raises
    ------
    InferenceServerException
        If the dtype is not ``object`` or an element is neither ``bytes`` nor ``str``.
    """
    if not isinstance(tensor_value, np.ndarray) or tensor_value.dtype != np.object_:
        raise_error("The tensor_value dtype must be np.object_")
    if tensor_value.size == 0:
        return 0
    serialized = serialize_byte_tensor(tensor_value).item()
    return len(serialized) - 4 * tensor_value.size


def serialize_bf16_tensor(input_tensor: npt.NDArray[Any]) -> npt.NDArray[np.object_]:
    """Serialize a tensor to BF16 wire form (2 bytes little-endian per element).

    Parameters
    ----------
    input_tensor : numpy.ndarray
        An ``ml_dtypes.bfloat16`` array (copied bit for bit), or a ``float32`` array, whose
        values are truncated to their upper 16 bits as NVIDIA's package does.  Any shape and
        memory order; elements are taken in row-major order.

    Returns
    -------
    numpy.ndarray
        A 0-d array of dtype ``object`` holding one ``bytes`` object, or an empty 1-D
        object array if the tensor has no elements.

    Raises
    ------
    InferenceServerException
        If the dtype is neither ``bfloat16`` nor ``float32``.
    """
    if not isinstance(input_tensor, np.ndarray):
        raise_error(
            f"cannot serialize bf16 tensor: expected a numpy.ndarray, got "
            f"{type(input_tensor).__name__}"
        )
    if input_tensor.dtype == ml_dtypes.bfloat16:
        bits = np.ascontiguousarray(input_tensor).view(np.uint16)
    elif input_tensor.dtype == np.float32:
        bits = (np.ascontiguousarray(input_tensor).view(np.uint32) >> 16).astype(np.uint16)
    else:
        raise_error(
            f"cannot serialize bf16 tensor: invalid datatype {input_tensor.dtype}; expected "
            "ml_dtypes.bfloat16 or float32"
        )
    if bits.size == 0:
        return np.empty([0], dtype=np.object_)
    return np.asarray(bits.astype("<u2", copy=False).tobytes(), dtype=np.object_)


def deserialize_bf16_tensor(encoded_tensor: Any) -> npt.NDArray[np.float32]:
    """Deserialize a BF16 buffer into a 1-D ``float32`` array.

    Parameters
    ----------
    encoded_tensor : bytes
        The encoded tensor, 2 bytes per element (any contiguous buffer, or the 0-d object
        array returned by :func:`serialize_bf16_tensor`).

    Returns
    -------
    numpy.ndarray
        1-D ``float32`` array; each value is the BF16 value exactly (the low 16 bits of the
        float32 are zero).  Use ``.astype(ml_dtypes.bfloat16)`` for a bfloat16 array.

    Raises
    ------
    InferenceServerException
        If the buffer's length is odd.
    """
    if isinstance(encoded_tensor, np.ndarray) and encoded_tensor.dtype == np.object_:
        if encoded_tensor.size == 0:
            return np.empty([0], dtype=np.float32)
        encoded_tensor = encoded_tensor.item()
    raw = np.frombuffer(encoded_tensor, dtype=np.uint8)
    if raw.size % 2:
        raise_error(
            f"cannot deserialize bf16 tensor: buffer of {raw.size} bytes is not a whole "
            "number of 2-byte elements"
        )
    return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
