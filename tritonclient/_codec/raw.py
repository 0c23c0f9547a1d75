"""The raw (binary) tensor layout both protocols share (protocol reference section 2.2).

A tensor's raw form is its elements in row-major order: fixed-size datatypes little-endian
(:func:`wire_dtype`), BYTES as a 4-byte little-endian length then the bytes, for each element.
:func:`tensor_to_buffer` lays a numpy array out (zero-copy where it can); the server-side
decoders :func:`tensor_from_buffer` (HTTP) and :func:`raw_input_array` (gRPC) read a request's
input back with Triton's checks and messages, which differ between Triton's two frontends;
:func:`bytes_fault` words a malformed BYTES buffer.  The client side reads responses through
:mod:`tritonclient._codec.checks`.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient.utils import (
    InferenceServerException,
    deserialize_bytes_tensor,
    raise_error,
    serialize_bf16_tensor,
    serialize_byte_tensor,
)
from tritonclient.utils._dtypes import DATATYPES

from .errors import HttpCodecError, grpc_invalid, http_bad, request_prefix
from .numbers import INT64_MAX
from .types import Buffer

__all__ = [
    "BytesFault",
    "buffer_nbytes",
    "bytes_fault",
    "element_count",
    "raw_input_array",
    "tensor_from_buffer",
    "tensor_to_buffer",
    "wire_dtype",
]


_LITTLE_ENDIAN_HOST = sys.byteorder == "little"


_WIRE_DTYPES: dict[str, np.dtype[Any]] = {}


def wire_dtype(datatype: str) -> np.dtype[Any]:
    """The numpy dtype of the raw layout of a fixed-size datatype (little-endian).

    Parameters
    ----------
    datatype : str
        A protocol datatype known to :data:`~tritonclient.utils._dtypes.DATATYPES`.

    Returns
    -------
    numpy.dtype
        Its numpy dtype, little-endian (``object`` for BYTES).
    """
    dtype = _WIRE_DTYPES.get(datatype)
    if dtype is None:
        dtype = np.dtype(DATATYPES[datatype].numpy_type)
        if not _LITTLE_ENDIAN_HOST:
            dtype = dtype.newbyteorder("<")
        _WIRE_DTYPES[datatype] = dtype
    return dtype


def element_count(shape: Sequence[int]) -> int:
    """The product of ``shape``; past the int64 range it stops multiplying and returns the
    partial product (already too large to match any buffer), so hostile shapes such as
    ``[2**62] * 100000`` cost no big-integer arithmetic."""
    dims = [int(d) for d in shape]
    if 0 in dims:
        return 0
    count = 1
    for dim in dims:
        count *= dim
        if not -INT64_MAX <= count <= INT64_MAX:
            return count
    return count


def buffer_nbytes(buffer: Buffer) -> int:
    """The number of bytes in ``buffer`` (``len`` of a ``bytes`` is the fast path)."""
    return len(buffer) if type(buffer) is bytes else memoryview(buffer).nbytes


def tensor_to_buffer(datatype: str, array: npt.NDArray[Any]) -> Buffer:
    """Lay a numpy array out in the raw wire form of ``datatype``, zero-copy where possible.

    Parameters
    ----------
    datatype : str
        The protocol datatype.
    array : numpy.ndarray
        The tensor.  Its dtype must be the datatype's numpy type (any byte order); BYTES also
        takes ``bytes_`` and ``str_`` arrays and object arrays of ``bytes``/``str``; BF16 also
        takes ``float32`` (truncated to the upper 16 bits).

    Returns
    -------
    bytes or memoryview
        For fixed-size datatypes a byte view of ``array`` itself when it is C-contiguous and
        little-endian (no copy), else of a contiguous little-endian copy; for BYTES (and
        float32 given as BF16) the serialized bytes.

    Raises
    ------
    InferenceServerException
        For an unknown datatype, or an array whose dtype does not match it.
    """
    info = DATATYPES.get(datatype)
    if info is None:
        raise_error(f"unknown datatype '{datatype}'; expected one of {', '.join(DATATYPES)}")
    if not isinstance(array, np.ndarray):
        raise_error(f"expected a numpy.ndarray for a {datatype} tensor, got {type(array).__name__}")
    if info.byte_size is None:
        if array.size == 0:
            return b""
        packed: bytes = serialize_byte_tensor(array).item()
        return packed
    expected = wire_dtype(datatype)
    if datatype == "BF16" and array.dtype == np.float32:
        return b"" if array.size == 0 else serialize_bf16_tensor(array).item()
    if array.dtype.newbyteorder("=") != expected.newbyteorder("="):
        raise_error(
            f"got unexpected numpy dtype {array.dtype} for a {datatype} tensor, expected "
            f"{np.dtype(info.numpy_type)}"
        )
    contiguous = np.ascontiguousarray(array)
    if contiguous.dtype != expected:  # differs in byte order only
        contiguous = contiguous.astype(expected)
    return contiguous.reshape(-1).view(np.uint8).data


class BytesFault:
    """Where a BYTES buffer that does not parse goes wrong, in Triton's words.

    Attributes
    ----------
    message : str
        Triton 2.51's message.
    in_response : bool
        True when Triton reports it in the inference response (its Python backend finds a
        string running past the buffer) rather than when the request arrives (its core finds
        a length prefix cut short); the response's message has no request-id prefix.
    """

    def __init__(self, message: str, in_response: bool) -> None:
        self.message = message
        self.in_response = in_response


def bytes_fault(buffer: Buffer, name: str, model_name: str, prefix: str) -> BytesFault:
    """Scan a malformed BYTES buffer (4-byte little-endian length, then the bytes, repeated).

    Parameters
    ----------
    buffer : bytes-like
        The input's bytes.
    name, model_name : str
        The input and the model, for the message.
    prefix : str
        Triton's ``[request id: ...] `` prefix.

    Returns
    -------
    BytesFault
        The first fault.
    """
    view = memoryview(buffer).cast("B")
    offset = 0
    while offset < len(view):
        remaining = len(view) - offset
        if remaining < 4:
            return BytesFault(
                f"{prefix}incomplete string length indicator for inference input '{name}' "
                f"for model '{model_name}', expecting 4 bytes but only {remaining} bytes "
                "available. Please make sure the string length indicator is in one buffer.",
                in_response=False,
            )
        (length,) = struct.unpack_from("<I", view, offset)
        if length > remaining - 4:
            return BytesFault(
                f"incomplete string data for inference input '{name}', expecting string of "
                f"length {length} but only {remaining - 4} bytes available",
                in_response=True,
            )
        offset += 4 + length
    return BytesFault(f"{prefix}invalid string data for inference input '{name}'", False)


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
    memory with ``buffer``); BYTES elements become ``bytes`` in an object array; the bytes
    of an unknown datatype come back as they are (``uint8``, unshaped) for the server's
    datatype check to report.

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
        400 for a byte size that does not match the shape (Triton's
        ``input byte size mismatch`` message) or a BYTES buffer that does not hold exactly
        product(shape) well-formed elements.
    """
    info = DATATYPES.get(datatype)
    view = memoryview(buffer).cast("B")
    if info is None:
        # Triton's HTTP frontend hands binary data of any datatype to the core, whose
        # datatype check reports it ("data-type is '<invalid>'"), in its order of checks.
        return np.frombuffer(view, dtype=np.uint8)
    expected_count = element_count(shape)
    prefix = request_prefix(request_id)
    if info.byte_size is None:
        items = _split_bytes_elements(view, name, model_name, prefix, expected_count)
        return items.reshape(tuple(shape))
    expected = expected_count * info.byte_size
    if len(view) != expected:
        raise http_bad(
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
        raise http_bad(
            f"{prefix}expected {expected} string elements for inference input '{name}' for "
            f"model '{model_name}', got {len(items)}"
        )
    if len(items) > expected:
        raise http_bad(
            f"{prefix}unexpected number of string elements {len(items)} for inference input "
            f"'{name}' for model '{model_name}', expecting {expected}"
        )
    return items


def raw_input_array(
    buffer: Buffer, datatype: str, shape: tuple[int, ...], name: str, model: str, prefix: str
) -> npt.NDArray[Any]:
    """A gRPC request's raw input as an array, with Triton's gRPC frontend checks.

    Only what Triton's gRPC frontend itself refuses raises here (a malformed BYTES buffer, a
    size that is not a whole number of elements); an array of the wrong element count comes
    back unshaped, for the core's validation to report in Triton's order of checks.

    Raises
    ------
    GrpcCodecError
        ``INVALID_ARG`` with Triton's message.
    """
    info = DATATYPES.get(datatype)
    if info is None or any(d < 0 for d in shape):
        # The core reports the datatype or the dimensions, in Triton's order of checks.
        return np.empty(0, dtype=np.uint8 if info is None else wire_dtype(datatype))
    count = element_count(shape)
    if info.byte_size is None:
        try:
            array = deserialize_bytes_tensor(buffer)
        except InferenceServerException:
            raise grpc_invalid(bytes_fault(buffer, name, model, prefix).message) from None
    else:
        nbytes = buffer_nbytes(buffer)
        if nbytes % info.byte_size:
            raise grpc_invalid(
                f"{prefix}input byte size mismatch for input '{name}' for model '{model}'. "
                f"Expected {count * info.byte_size}, got {nbytes}"
            )
        array = np.frombuffer(buffer, dtype=wire_dtype(datatype))
    return array.reshape(shape) if array.size == count else array
