"""The gRPC codec: tensors and parameters <-> ``ModelInferRequest``/``ModelInferResponse``.

Pure functions with no I/O and no channel code, written once for both sides of the wire:

Client side
    :func:`build_infer_request` / :func:`build_infer_request_parts` turn input tensors,
    requested outputs and the request-level options into a ``ModelInferRequest``;
    :func:`output_to_numpy`, :func:`response_parameters` and :func:`is_final_response` read a
    ``ModelInferResponse``; :func:`exception_from_rpc_error`, :func:`exception_from_status`
    and :func:`exception_from_stream_error` turn failures into
    :class:`~tritonclient.utils.InferenceServerException`.
Server side
    :func:`decode_infer_request` turns a ``ModelInferRequest`` into a
    :class:`DecodedInferRequest` (the fields of the server core's request, tensors as numpy
    arrays) and raises :class:`GrpcCodecError` with Triton's messages;
    :func:`encode_infer_response` / :func:`encode_infer_response_parts` and the ``stream``
    variants turn a core response into the wire messages.
Both
    :func:`to_infer_parameter` / :func:`from_infer_parameter` (the ``InferParameter`` oneof),
    :func:`tensor_to_buffer` / :func:`raw_to_array` (the raw tensor layout), and the error
    kind <-> gRPC status tables.

Zero-copy framing
    protobuf copies ``bytes`` fields on every assignment and every read, and accepts no
    ``memoryview``.  The ``*_parts`` builders therefore keep the raw tensor contents out of
    the message, and :func:`serialize_infer_request`, :func:`serialize_infer_response` and
    :func:`serialize_stream_response` append them to the serialized message in one join (a
    protobuf message followed by more occurrences of a repeated field is the same message).
    :func:`parse_infer_request`, :func:`parse_infer_response` and
    :func:`parse_stream_response` do the reverse: the raw contents come back as
    ``memoryview`` slices of the received bytes and only the small rest goes through
    protobuf.  Used as a gRPC method's serializer/deserializer, numpy data are copied once on
    the sending side (into the message buffer) and never on the receiving side.

The datatype table is :data:`tritonclient.utils._dtypes.DATATYPES`; BYTES and BF16 use the
codecs of :mod:`tritonclient.utils`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from google.protobuf.message import DecodeError

from tritonclient._codec.numbers import stol
from tritonclient._codec.raw import (
    DecodedOutputs,
    Requested,
    bytes_fault,
    decode_raw_output,
    known_datatype,
    response_fault,
    response_shape,
    wire_dtype,
)
from tritonclient._codec.settings import TRACE_NUMBERS, trace_levels, trace_number
from tritonclient._proto import service_pb2
from tritonclient.utils import (
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
    InferenceServerException,
    deserialize_bytes_tensor,
    raise_error,
    serialize_bf16_tensor,
    serialize_byte_tensor,
)
from tritonclient.utils._codec import check_parameter_name
from tritonclient.utils._dtypes import DATATYPES
from tritonclient.utils._errors import (
    InferenceServerProtocolError,
    InferenceServerUnavailableError,
)

__all__ = [
    "ERROR_KIND_TO_STATUS",
    "FINAL_RESPONSE_PARAM",
    "GRPC_STATUS_CODES",
    "STATUS_TO_ERROR_KIND",
    "Buffer",
    "DecodedInferRequest",
    "DecodedInput",
    "DecodedOutput",
    "GrpcCodecError",
    "InputTensor",
    "OutputTensorLike",
    "ParamValue",
    "RequestedOutput",
    "ResponseLike",
    "SharedMemoryRef",
    "StreamLedger",
    "build_infer_request",
    "build_infer_request_parts",
    "check_infer_response",
    "contents_to_array",
    "decode_infer_request",
    "encode_empty_final_response",
    "encode_infer_response",
    "encode_infer_response_parts",
    "encode_stream_error",
    "encode_stream_response_parts",
    "error_kind_for_status",
    "exception_from_rpc_error",
    "exception_from_status",
    "exception_from_stream_error",
    "from_infer_parameter",
    "get_parameters",
    "is_final_response",
    "output_to_numpy",
    "parse_infer_request",
    "parse_infer_response",
    "parse_log_settings_request",
    "parse_model_version",
    "parse_stream_response",
    "parse_trace_setting_request",
    "raw_to_array",
    "response_parameters",
    "serialize_infer_request",
    "serialize_infer_response",
    "serialize_stream_response",
    "set_parameters",
    "status_for_error_kind",
    "status_name",
    "tensor_to_buffer",
    "to_infer_parameter",
]

#: A request, response or tensor parameter value.
ParamValue = bool | int | float | str

#: A contiguous byte buffer: what raw tensor contents are read from and written as.
Buffer = bytes | bytearray | memoryview

#: Response parameter the server adds on the stream: true on the last response of a request.
FINAL_RESPONSE_PARAM = "triton_final_response"
#: Request parameter asking for an empty final response from decoupled models (stream only).
EMPTY_FINAL_RESPONSE_PARAM = "triton_enable_empty_final_response"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1

# ------------------------------------------------------------------------------------------
# Status codes and error kinds
# ------------------------------------------------------------------------------------------

#: gRPC status code names and numbers (``grpc.StatusCode`` without importing grpc).
GRPC_STATUS_CODES: Mapping[str, int] = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}
_STATUS_NAMES = {number: name for name, number in GRPC_STATUS_CODES.items()}

#: Server error kind (Triton's ``TRITONSERVER_Error_Code`` without the prefix, as in
#: ``mock_server.core.errors.ErrorKind``) -> gRPC status code name (protocol section 8).
ERROR_KIND_TO_STATUS: Mapping[str, str] = {
    "UNKNOWN": "UNKNOWN",
    "INTERNAL": "INTERNAL",
    "NOT_FOUND": "NOT_FOUND",
    "INVALID_ARG": "INVALID_ARGUMENT",
    "UNAVAILABLE": "UNAVAILABLE",
    "UNSUPPORTED": "UNIMPLEMENTED",
    "ALREADY_EXISTS": "ALREADY_EXISTS",
    "CANCELLED": "CANCELLED",
}
#: gRPC status code name -> server error kind (the inverse of :data:`ERROR_KIND_TO_STATUS`).
STATUS_TO_ERROR_KIND: Mapping[str, str] = {v: k for k, v in ERROR_KIND_TO_STATUS.items()}


def status_name(code: Any) -> str:
    """Return the name of a gRPC status code given in any of its usual forms.

    Parameters
    ----------
    code : grpc.StatusCode or str or int
        A ``grpc.StatusCode`` member (anything with a ``name``), a name (``"NOT_FOUND"``
        or ``"StatusCode.NOT_FOUND"``) or a code number.

    Returns
    -------
    str
        The code name, e.g. ``"NOT_FOUND"``; ``"UNKNOWN"`` for a number or name that is not
        a gRPC status code.
    """
    name = getattr(code, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(code, bool):
        return "UNKNOWN"
    if isinstance(code, int):
        return _STATUS_NAMES.get(code, "UNKNOWN")
    if isinstance(code, str):
        text = code.rpartition(".")[2].upper()
        return text if text in GRPC_STATUS_CODES else "UNKNOWN"
    return "UNKNOWN"


def status_for_error_kind(kind: str) -> str:
    """Map a server error kind to the gRPC status code name that reports it.

    Parameters
    ----------
    kind : str
        The error kind name (``"INVALID_ARG"``, ``"UNSUPPORTED"``, ...).

    Returns
    -------
    str
        The status code name (``"INVALID_ARGUMENT"``, ``"UNIMPLEMENTED"``, ...);
        ``"UNKNOWN"`` for an unknown kind.
    """
    return ERROR_KIND_TO_STATUS.get(kind, "UNKNOWN")


def error_kind_for_status(code: Any) -> str:
    """Map a gRPC status code to the server error kind it reports.

    Parameters
    ----------
    code : grpc.StatusCode or str or int
        The status code, in any form :func:`status_name` accepts.

    Returns
    -------
    str
        The error kind name; ``"UNKNOWN"`` for codes no kind maps to (e.g.
        ``DEADLINE_EXCEEDED``, which the gRPC layer produces, not the server).
    """
    return STATUS_TO_ERROR_KIND.get(status_name(code), "UNKNOWN")


def exception_from_status(
    code: Any, details: str | None, debug_details: str | None = None
) -> InferenceServerException:
    """Build the exception a client raises for a failed RPC.

    Parameters
    ----------
    code : grpc.StatusCode or str or int
        The RPC's status code.
    details : str or None
        The status message; it becomes the exception's message.
    debug_details : str, optional
        gRPC's debug error string.

    Returns
    -------
    InferenceServerException
        With ``status()`` equal to ``str(grpc.StatusCode.<NAME>)``, e.g.
        ``"StatusCode.NOT_FOUND"``, as NVIDIA's client reports it.
    """
    return InferenceServerException(
        msg=details, status=f"StatusCode.{status_name(code)}", debug_details=debug_details
    )


def exception_from_rpc_error(error: Any) -> InferenceServerException:
    """Build the exception a client raises for a ``grpc.RpcError``.

    Parameters
    ----------
    error : grpc.RpcError or grpc.aio.AioRpcError
        The error raised by a call; its ``code()``, ``details()`` and
        ``debug_error_string()`` are read where present.

    Returns
    -------
    InferenceServerException
        See :func:`exception_from_status`.
    """
    code = error.code() if callable(getattr(error, "code", None)) else "UNKNOWN"
    details = error.details() if callable(getattr(error, "details", None)) else str(error)
    debug = getattr(error, "debug_error_string", None)
    return exception_from_status(code, details, debug() if callable(debug) else None)


def exception_from_stream_error(error_message: str) -> InferenceServerException:
    """Build the exception for a failed request reported inside a stream.

    Parameters
    ----------
    error_message : str
        ``ModelStreamInferResponse.error_message``.

    Returns
    -------
    InferenceServerException
        With the message and no status (the stream itself did not fail).
    """
    return InferenceServerException(msg=error_message)


class GrpcCodecError(ValueError):
    """A request the server must refuse, found while decoding it.

    Parameters
    ----------
    kind : str
        The server error kind name (``"INVALID_ARG"``, ``"NOT_FOUND"``, ``"UNSUPPORTED"``,
        ...; see :data:`ERROR_KIND_TO_STATUS`).
    message : str
        Triton's message for the problem.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __repr__(self) -> str:
        return f"GrpcCodecError({self.kind}, {self.message!r})"


def _invalid(message: str) -> GrpcCodecError:
    return GrpcCodecError("INVALID_ARG", message)


# ------------------------------------------------------------------------------------------
# Parameters
# ------------------------------------------------------------------------------------------


def to_infer_parameter(
    value: Any, out: service_pb2.InferParameter | None = None, key: str | None = None
) -> service_pb2.InferParameter:
    """Store a Python value in an ``InferParameter`` (the oneof member follows the type).

    Parameters
    ----------
    value : bool, int, float or str
        ``bool`` -> ``bool_param`` (checked before int); ``int`` -> ``int64_param``, or
        ``uint64_param`` for 2**63 .. 2**64-1; ``float`` -> ``double_param``; ``str`` ->
        ``string_param``.  numpy scalars are converted with ``.item()`` first.
    out : InferParameter, optional
        The message to fill (e.g. ``request.parameters["key"]``); a new one by default.
    key : str, optional
        The request parameter's name: an unsupported type is then refused with the message
        of NVIDIA's client.

    Returns
    -------
    InferParameter
        ``out`` (or the new message).

    Raises
    ------
    InferenceServerException
        For another type, or an integer outside the int64/uint64 range.
    """
    param = service_pb2.InferParameter() if out is None else out
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        param.bool_param = value
    elif isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            param.int64_param = value
        elif 0 <= value <= _UINT64_MAX:
            param.uint64_param = value
        else:
            raise_error(f"parameter value {value} does not fit in a 64-bit integer")
    elif isinstance(value, float):
        param.double_param = value
    elif isinstance(value, str):
        param.string_param = value
    else:
        expected = "expected bool, int, float or str"
        if key is not None:
            raise_error(
                f'The parameter datatype "{type(value)}" for key "{key}" is not supported.',
                hint=expected,
            )
        raise_error(f"unsupported parameter type '{type(value).__name__}'; {expected}")
    return param


def from_infer_parameter(param: service_pb2.InferParameter) -> ParamValue | None:
    """Read the value of an ``InferParameter``.

    Parameters
    ----------
    param : InferParameter
        The message.

    Returns
    -------
    bool, int, float, str or None
        The value of whichever oneof member is set; None when none is.
    """
    which = param.WhichOneof("parameter_choice")
    if which is None:
        return None
    value: ParamValue = getattr(param, which)
    return value


def set_parameters(
    target: MutableMapping[str, service_pb2.InferParameter], values: Mapping[str, Any]
) -> None:
    """Store every value of ``values`` in a protobuf parameter map with :func:`to_infer_parameter`.

    Parameters
    ----------
    target : protobuf map of str to InferParameter
        E.g. ``request.parameters``.
    values : mapping of str to bool, int, float or str
        The parameters.
    """
    for key, value in values.items():
        to_infer_parameter(value, target[key])


def get_parameters(source: Mapping[str, service_pb2.InferParameter]) -> dict[str, ParamValue]:
    """Read a protobuf parameter map with :func:`from_infer_parameter` (unset entries skipped).

    Parameters
    ----------
    source : protobuf map of str to InferParameter
        E.g. ``response.parameters``.

    Returns
    -------
    dict
        Key to value.
    """
    out: dict[str, ParamValue] = {}
    for key, param in source.items():
        value = from_infer_parameter(param)
        if value is not None:
            out[key] = value
    return out


# ------------------------------------------------------------------------------------------
# Tensor data
# ------------------------------------------------------------------------------------------

#: The ``InferTensorContents`` field for each datatype (FP16 and BF16 have none).
_CONTENTS_FIELD: Mapping[str, str] = {
    "BOOL": "bool_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}
#: Each ``InferTensorContents`` field: its element type and the datatype it is named after.
_CONTENTS_FIELD_TYPES: Mapping[str, tuple[Any, str]] = {
    "bool_contents": (np.bool_, "BOOL"),
    "int_contents": (np.int32, "INT32"),
    "int64_contents": (np.int64, "INT64"),
    "uint_contents": (np.uint32, "UINT32"),
    "uint64_contents": (np.uint64, "UINT64"),
    "fp32_contents": (np.float32, "FP32"),
    "fp64_contents": (np.float64, "FP64"),
    "bytes_contents": (np.object_, "BYTES"),
}


_wire_dtype = wire_dtype


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


def _as_byte_view(array: npt.NDArray[Any]) -> memoryview:
    """A flat unsigned-byte view of a C-contiguous array (no copy)."""
    return array.reshape(-1).view(np.uint8).data


def tensor_to_buffer(data: npt.NDArray[Any], datatype: str) -> Buffer:
    """Lay a numpy array out in the raw wire form of ``datatype`` (protocol section 2.2).

    Parameters
    ----------
    data : numpy.ndarray
        The tensor.  Its dtype must be the datatype's numpy type; BYTES also takes ``bytes_``
        and ``str_`` arrays and object arrays of ``bytes``/``str``; BF16 also takes
        ``float32`` (truncated to the upper 16 bits).
    datatype : str
        The protocol datatype.

    Returns
    -------
    bytes or memoryview
        For fixed-size datatypes a byte view of ``data`` itself when it is C-contiguous and
        little-endian (no copy), else of a contiguous copy; for BYTES (and float32 given as
        BF16) the serialized bytes.

    Raises
    ------
    InferenceServerException
        For an unknown datatype, or an array whose dtype does not match it.
    """
    info = DATATYPES.get(datatype)
    if info is None:
        raise_error(f"unknown datatype '{datatype}'; expected one of {', '.join(DATATYPES)}")
    if not isinstance(data, np.ndarray):
        raise_error(f"expected a numpy.ndarray for a {datatype} tensor, got {type(data).__name__}")
    if info.byte_size is None:
        if data.size == 0:
            return b""
        packed: bytes = serialize_byte_tensor(data).item()
        return packed
    expected = _wire_dtype(datatype)
    if datatype == "BF16" and data.dtype == np.float32:
        return b"" if data.size == 0 else serialize_bf16_tensor(data).item()
    if data.dtype.newbyteorder("=") != expected.newbyteorder("="):
        raise_error(
            f"got unexpected numpy dtype {data.dtype} for a {datatype} tensor, expected "
            f"{np.dtype(info.numpy_type)}"
        )
    array = np.ascontiguousarray(data)
    if array.dtype != expected:  # differs in byte order only
        array = array.astype(expected)
    return _as_byte_view(array)


def _buffer_nbytes(buffer: Buffer) -> int:
    return len(buffer) if type(buffer) is bytes else memoryview(buffer).nbytes


def raw_to_array(buffer: Buffer, datatype: str, shape: Sequence[int]) -> npt.NDArray[Any]:
    """Read a tensor from its raw wire form (client side; strict).

    Parameters
    ----------
    buffer : bytes-like
        The raw contents.
    datatype : str
        The protocol datatype.
    shape : sequence of int
        The tensor's shape.

    Returns
    -------
    numpy.ndarray
        For fixed-size datatypes a read-only array over ``buffer`` (``np.frombuffer``, no
        copy) with the datatype's numpy dtype (``bool`` for BOOL, ``ml_dtypes.bfloat16`` for
        BF16); for BYTES an object array of ``bytes``.

    Raises
    ------
    InferenceServerException
        For an unknown datatype, or a buffer that does not hold ``shape`` elements.
    """
    info = DATATYPES.get(datatype)
    if info is None:
        raise_error(f"unknown datatype '{datatype}' in the response")
    size = info.byte_size
    if size is not None and not _buffer_nbytes(buffer) % size:
        # The usual case, without the checks the slow path below words errors with.
        try:
            return np.frombuffer(buffer, dtype=_wire_dtype(datatype)).reshape(tuple(shape))
        except (ValueError, TypeError):
            pass
    try:
        if info.byte_size is None:
            array: npt.NDArray[Any] = deserialize_bytes_tensor(buffer)
        else:
            nbytes = _buffer_nbytes(buffer)
            if nbytes % info.byte_size:
                raise ValueError(
                    f"{nbytes} bytes is not a whole number of {info.byte_size}-byte elements"
                )
            array = np.frombuffer(buffer, dtype=_wire_dtype(datatype))
        return array.reshape([int(d) for d in shape])
    except ValueError as exc:
        raise_error(
            f"cannot read a {datatype} tensor of shape {list(shape)} from "
            f"{_buffer_nbytes(buffer)} bytes: {exc}"
        )


def _contents_array(
    contents: service_pb2.InferTensorContents, datatype: str
) -> tuple[npt.NDArray[Any] | None, str | None]:
    """The flat array of the typed contents for ``datatype``.

    Returns ``(array, None)``, or ``(None, field)`` naming a populated field that does not
    belong to ``datatype``.  An unknown datatype with no populated field gives an empty
    uint8 array.
    """
    expected = _CONTENTS_FIELD.get(datatype)
    for name in _CONTENTS_FIELD_TYPES:
        if name != expected and len(getattr(contents, name)):
            return None, name
    if expected is None:
        if datatype in DATATYPES:  # FP16, BF16: raw only
            return np.empty(0, dtype=_wire_dtype(datatype)), None
        return np.empty(0, dtype=np.uint8), None
    values = getattr(contents, expected)
    source_type, _ = _CONTENTS_FIELD_TYPES[expected]
    if source_type is np.object_:
        array: npt.NDArray[Any] = np.empty(len(values), dtype=np.object_)
        array[:] = list(values)
        return array, None
    flat = np.fromiter(values, dtype=source_type, count=len(values))
    # INT8/INT16/UINT8/UINT16 keep the low-order bytes of each 32-bit value, as Triton does.
    return flat.astype(_wire_dtype(datatype), copy=False), None


def contents_to_array(
    contents: service_pb2.InferTensorContents, datatype: str, shape: Sequence[int]
) -> npt.NDArray[Any]:
    """Read a tensor from typed ``InferTensorContents`` (client side; strict).

    Parameters
    ----------
    contents : InferTensorContents
        The typed contents.
    datatype : str
        The protocol datatype; selects the field (protocol section 2.1).
    shape : sequence of int
        The tensor's shape.

    Returns
    -------
    numpy.ndarray
        A new array of the datatype's numpy dtype.

    Raises
    ------
    InferenceServerException
        When a field of another datatype is populated, or the element count does not match.
    """
    array, wrong = _contents_array(contents, datatype)
    if array is None:
        raise_error(f"unexpected typed contents '{wrong}' for a tensor of datatype '{datatype}'")
    if array.size != _element_count(shape):
        raise_error(
            f"typed contents hold {array.size} elements but shape {list(shape)} needs "
            f"{_element_count(shape)}"
        )
    return array.reshape([int(d) for d in shape])


def _set_contents(
    contents: service_pb2.InferTensorContents, data: Any, datatype: str, name: str
) -> None:
    field_name = _CONTENTS_FIELD.get(datatype)
    if field_name is None:
        raise_error(
            f"input '{name}': datatype '{datatype}' has no typed contents field; send it as "
            "raw contents"
        )
    if not isinstance(data, np.ndarray):
        raise_error(f"input '{name}': typed contents need a numpy array")
    flat = data.reshape(-1)
    values: list[Any]
    if datatype == "BYTES":
        values = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in flat.tolist()]
    else:
        tensor_to_buffer(data, datatype)  # checks the dtype
        values = flat.tolist()
    getattr(contents, field_name).extend(values)


# ------------------------------------------------------------------------------------------
# Client side: requests
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SharedMemoryRef:
    """Where a tensor lives in a registered shared-memory region.

    Attributes
    ----------
    region : str
        The registered region name.
    byte_size : int
        Bytes of the tensor in the region.
    offset : int
        Offset of the tensor inside the region.
    """

    region: str
    byte_size: int
    offset: int = 0


@dataclass
class InputTensor:
    """An input of a request being built.

    Attributes
    ----------
    name : str
        Input name.
    datatype : str
        Protocol datatype.
    shape : sequence of int
        Shape.
    data : numpy.ndarray or bytes-like or None
        The values (converted with :func:`tensor_to_buffer`) or the raw contents already
        laid out; None when the input is in shared memory.
    shared_memory : SharedMemoryRef or None
        Shared-memory placement (then ``data`` is ignored).
    parameters : mapping
        Further tensor-level parameters.
    """

    name: str
    datatype: str
    shape: Sequence[int]
    data: npt.NDArray[Any] | Buffer | None = None
    shared_memory: SharedMemoryRef | None = None
    parameters: Mapping[str, ParamValue] = field(default_factory=dict)


@dataclass
class RequestedOutput:
    """An output asked for in a request being built.

    Attributes
    ----------
    name : str
        Output name.
    class_count : int
        Top-K classification (0: the tensor itself).
    shared_memory : SharedMemoryRef or None
        Write the output into shared memory instead of the response.
    parameters : mapping
        Further tensor-level parameters.
    """

    name: str
    class_count: int = 0
    shared_memory: SharedMemoryRef | None = None
    parameters: Mapping[str, ParamValue] = field(default_factory=dict)


def _set_shm_parameters(
    params: MutableMapping[str, service_pb2.InferParameter], ref: SharedMemoryRef
) -> None:
    params["shared_memory_region"].string_param = ref.region
    params["shared_memory_byte_size"].int64_param = ref.byte_size
    if ref.offset:
        params["shared_memory_offset"].int64_param = ref.offset


def _build_request(
    model_name: str,
    inputs: Sequence[InputTensor],
    outputs: Sequence[RequestedOutput] | None,
    model_version: str,
    request_id: str,
    sequence_id: int | str,
    sequence_start: bool,
    sequence_end: bool,
    priority: int,
    timeout: int | None,
    parameters: Mapping[str, Any] | None,
    enable_empty_final_response: bool,
    typed_contents: bool,
) -> tuple[service_pb2.ModelInferRequest, list[Buffer]]:
    request = service_pb2.ModelInferRequest(
        model_name=model_name, model_version=model_version, id=request_id
    )
    params = request.parameters
    if sequence_id != 0 and sequence_id != "":
        if isinstance(sequence_id, str):
            params["sequence_id"].string_param = sequence_id
        elif isinstance(sequence_id, int) and not isinstance(sequence_id, bool):
            if not _INT64_MIN <= sequence_id <= _UINT64_MAX:
                raise_error(f"sequence_id {sequence_id} does not fit in 64 bits")
            # The server reads int64 as uint64: ids >= 2**63 travel in two's complement.
            params["sequence_id"].int64_param = (
                sequence_id - 2**64 if sequence_id > _INT64_MAX else sequence_id
            )
        else:
            raise_error(f"sequence_id must be an int or a str, got {type(sequence_id).__name__}")
        params["sequence_start"].bool_param = bool(sequence_start)
        params["sequence_end"].bool_param = bool(sequence_end)
    if priority:
        if not 0 <= priority <= _UINT64_MAX:
            raise_error(f"priority must be between 0 and 2**64-1, got {priority}")
        params["priority"].uint64_param = priority
    if timeout is not None:
        params["timeout"].int64_param = timeout
    if enable_empty_final_response:
        params[EMPTY_FINAL_RESPONSE_PARAM].bool_param = True
    for key, value in (parameters or {}).items():
        check_parameter_name(key)
        to_infer_parameter(value, params[key], key)

    raw: list[Buffer] = []
    for tensor in inputs:
        message = request.inputs.add(name=tensor.name, datatype=tensor.datatype)
        message.shape.extend(int(d) for d in tensor.shape)
        set_parameters(message.parameters, tensor.parameters)
        if tensor.shared_memory is not None:
            _set_shm_parameters(message.parameters, tensor.shared_memory)
        elif tensor.data is None:
            raise_error(f"input '{tensor.name}' has neither data nor a shared-memory region")
        elif typed_contents:
            _set_contents(message.contents, tensor.data, tensor.datatype, tensor.name)
        elif isinstance(tensor.data, np.ndarray):
            raw.append(tensor_to_buffer(tensor.data, tensor.datatype))
        else:
            raw.append(tensor.data)
    for output in outputs or ():
        message_out = request.outputs.add(name=output.name)
        set_parameters(message_out.parameters, output.parameters)
        if output.class_count:
            message_out.parameters["classification"].int64_param = output.class_count
        if output.shared_memory is not None:
            _set_shm_parameters(message_out.parameters, output.shared_memory)
    return request, raw


def build_infer_request_parts(
    model_name: str,
    inputs: Sequence[InputTensor],
    outputs: Sequence[RequestedOutput] | None = None,
    *,
    model_version: str = "",
    request_id: str = "",
    sequence_id: int | str = 0,
    sequence_start: bool = False,
    sequence_end: bool = False,
    priority: int = 0,
    timeout: int | None = None,
    parameters: Mapping[str, Any] | None = None,
    enable_empty_final_response: bool = False,
    typed_contents: bool = False,
) -> tuple[service_pb2.ModelInferRequest, list[Buffer]]:
    """Build a ``ModelInferRequest`` with its raw input contents kept out of the message.

    Encoding as NVIDIA's client does: ``sequence_id`` (with ``sequence_start`` and
    ``sequence_end``) only when non-zero/non-empty, ``int64_param`` for integers (ids of
    2**63 and above in two's complement) and ``string_param`` for strings; ``priority`` as
    ``uint64_param`` when non-zero; ``timeout`` as ``int64_param`` when given; custom
    parameters with :func:`to_infer_parameter`; tensor shared-memory parameters
    (``shared_memory_offset`` only when non-zero); ``classification`` as ``int64_param``.

    Parameters
    ----------
    model_name : str
        Target model.
    inputs : sequence of InputTensor
        The inputs, in order.
    outputs : sequence of RequestedOutput, optional
        Requested outputs; None or empty asks for all.
    model_version : str, optional
        Version; "" lets the server choose.
    request_id : str, optional
        Request id, echoed in responses.
    sequence_id : int or str, optional
        Correlation id (0 or "": not part of a sequence).
    sequence_start, sequence_end : bool, optional
        Sequence flags.
    priority : int, optional
        Priority level (0: the model's default).
    timeout : int, optional
        Queue timeout in microseconds.
    parameters : mapping, optional
        Custom request parameters (bool, int, float, str).
    enable_empty_final_response : bool, optional
        Ask a decoupled model's stream for an empty final response.
    typed_contents : bool, optional
        Put the data in each input's typed ``contents`` instead of raw contents (for
        servers that need it; FP16 and BF16 cannot be sent so).

    Returns
    -------
    tuple of (ModelInferRequest, list of bytes-like)
        The message without raw contents, and the raw contents: one entry per input that
        is neither in shared memory nor typed, in order.  Send them with
        :func:`serialize_infer_request`.

    Raises
    ------
    InferenceServerException
        For a reserved custom parameter name, an unsupported parameter value, an input with
        no data, or data whose dtype does not match the input's datatype.
    """
    return _build_request(
        model_name,
        inputs,
        outputs,
        model_version,
        request_id,
        sequence_id,
        sequence_start,
        sequence_end,
        priority,
        timeout,
        parameters,
        enable_empty_final_response,
        typed_contents,
    )


def build_infer_request(
    model_name: str,
    inputs: Sequence[InputTensor],
    outputs: Sequence[RequestedOutput] | None = None,
    *,
    model_version: str = "",
    request_id: str = "",
    sequence_id: int | str = 0,
    sequence_start: bool = False,
    sequence_end: bool = False,
    priority: int = 0,
    timeout: int | None = None,
    parameters: Mapping[str, Any] | None = None,
    enable_empty_final_response: bool = False,
    typed_contents: bool = False,
) -> service_pb2.ModelInferRequest:
    """Build a complete ``ModelInferRequest`` (raw contents inside the message).

    Same parameters, encoding and errors as :func:`build_infer_request_parts`; protobuf
    copies each raw entry into the message.

    Returns
    -------
    ModelInferRequest
        The request, with one ``raw_input_contents`` entry per input that is neither in
        shared memory nor typed.
    """
    request, raw = _build_request(
        model_name,
        inputs,
        outputs,
        model_version,
        request_id,
        sequence_id,
        sequence_start,
        sequence_end,
        priority,
        timeout,
        parameters,
        enable_empty_final_response,
        typed_contents,
    )
    request.raw_input_contents.extend(b if isinstance(b, bytes) else bytes(b) for b in raw)
    return request


# ------------------------------------------------------------------------------------------
# Client side: responses
# ------------------------------------------------------------------------------------------


def response_parameters(response: service_pb2.ModelInferResponse) -> dict[str, ParamValue]:
    """The response-level parameters of a ``ModelInferResponse``.

    Parameters
    ----------
    response : ModelInferResponse
        The response.

    Returns
    -------
    dict
        Key to value (``triton_final_response`` included when present).
    """
    return get_parameters(response.parameters)


def is_final_response(response: service_pb2.ModelInferResponse) -> bool:
    """Whether a stream response is the last one for its request.

    Parameters
    ----------
    response : ModelInferResponse
        A response received on ``ModelStreamInfer``.

    Returns
    -------
    bool
        The ``triton_final_response`` parameter; False when absent (a decoupled model
        without the empty-final-response opt-in may never send an explicit end marker).
    """
    param = response.parameters.get(FINAL_RESPONSE_PARAM)
    return bool(param is not None and param.bool_param)


class StreamLedger:
    """Which requests of a ``ModelStreamInfer`` stream still wait for their final response.

    Sans-I/O bookkeeping shared by the sync and asyncio clients: :meth:`sent` for each
    request, :meth:`received` for each response, :meth:`ended` when the server ends the stream
    with OK.  Safe to use from two threads (the sync client sends in the caller's thread and
    receives in its stream thread).

    The rule (Triton 2.51, protocol section 5): the server ends a stream with OK only after the
    client closed its side and every request in flight completed; each response but the errors
    of refused requests carries ``triton_final_response``, true on a request's last one.  So

    * a stream the server ends while the client is still sending is a broken stream, whatever
      was pending;
    * after the client closed its side, a request sent with ``enable_empty_final_response``
      (a final response is then due, from a decoupled model or not) that got no final
      response was left unanswered;
    * a request sent without it is never reported then: a decoupled model may send no
      response at all for it, or never mark its last one, and nothing on the wire tells a
      decoupled model from another.  (Send requests with ``enable_empty_final_response=True``
      to have them checked.)

    Requests are told apart by id: a final response completes a request of its id, one sent
    with ``enable_empty_final_response`` first (so that such a request is never reported
    although it was answered: with shared ids the count may only err towards reporting less).
    A response counts as final when ``triton_final_response`` is true or absent (a refused
    request's error; servers that never set it).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: id -> requests sent with enable_empty_final_response still due a final response.
        self._due: dict[str, int] = {}
        #: id -> requests sent without it that have had no final response (yet, or ever: a
        #: decoupled model's).
        self._open: dict[str, int] = {}

    def sent(self, request_id: str, enable_empty_final_response: bool) -> None:
        """Record a request sent on the stream."""
        table = self._due if enable_empty_final_response else self._open
        with self._lock:
            table[request_id] = table.get(request_id, 0) + 1

    def received(self, message: service_pb2.ModelStreamInferResponse) -> None:
        """Record a response (or an error) received on the stream."""
        response = message.infer_response
        param = response.parameters.get(FINAL_RESPONSE_PARAM)
        if param is not None and not param.bool_param:
            return  # more responses of its request follow
        request_id = response.id
        with self._lock:
            if self._due.get(request_id):
                self._take(self._due, request_id)
            elif self._open.get(request_id):
                self._take(self._open, request_id)

    @staticmethod
    def _take(table: dict[str, int], request_id: str) -> None:
        left = table[request_id] - 1
        if left:
            table[request_id] = left
        else:
            del table[request_id]

    def pending(self) -> str:
        """The requests still waiting, for messages: ids with counts; "" when none."""
        with self._lock:
            counts = dict(self._due)
            for request_id, count in self._open.items():
                counts[request_id] = counts.get(request_id, 0) + count
        return _id_list(counts)

    def ended(self, client_done: bool, what: str) -> InferenceServerException | None:
        """The error for a stream the server ended with OK, or None when it was entitled to.

        Parameters
        ----------
        client_done : bool
            Whether the client had closed its side of the stream.
        what : str
            How the client closes its side, for the message (``"stop_stream() was called"``).

        Returns
        -------
        InferenceServerException or None
            :class:`InferenceServerUnavailableError` when the server ended the stream before
            ``what``; :class:`InferenceServerProtocolError` naming the requests that were due
            a final response and got none.
        """
        if not client_done:
            pending = self.pending()
            detail = f"; requests still without a final response: {pending}" if pending else ""
            return InferenceServerUnavailableError(
                f"the server ended the stream before {what}{detail}"
            )
        with self._lock:
            due = dict(self._due)
        if not due:
            return None
        return InferenceServerProtocolError(
            f"the server ended the stream with no final response for {sum(due.values())} "
            f"request(s) sent with enable_empty_final_response=True: {_id_list(due)}"
        )


def _id_list(counts: Mapping[str, int]) -> str:
    """``'a', 'b' (2 requests), '' (no id)`` for messages."""
    parts = []
    for request_id in sorted(counts):
        text = f"id {request_id!r}" if request_id else "no id"
        if counts[request_id] > 1:
            text += f" ({counts[request_id]} requests)"
        parts.append(text)
    return ", ".join(parts)


def output_to_numpy(
    response: service_pb2.ModelInferResponse,
    name: str,
    raw_output_contents: Sequence[Buffer] | None = None,
) -> npt.NDArray[Any] | None:
    """Read one output of a ``ModelInferResponse`` as a numpy array.

    The data come from ``raw_output_contents`` (index-aligned with ``outputs``) through
    ``np.frombuffer``, falling back to the output's typed ``contents`` (other KServe
    servers).  BYTES become object arrays of ``bytes``, BOOL ``bool``, BF16
    ``ml_dtypes.bfloat16``.

    Parameters
    ----------
    response : ModelInferResponse
        The response.
    name : str
        The output name.
    raw_output_contents : sequence of bytes-like, optional
        The raw contents when they were split off the message (:func:`parse_infer_response`);
        by default the message's own ``raw_output_contents``.

    Returns
    -------
    numpy.ndarray or None
        The tensor, or None if the response has no output ``name`` or the output was written
        to shared memory (an empty raw entry for a non-empty shape, as Triton sends it, or a
        ``shared_memory_region`` parameter, as other servers may).

    Raises
    ------
    InferenceServerException
        If the output's data do not match its datatype and shape, or are missing.
    """
    raw = response.raw_output_contents if raw_output_contents is None else raw_output_contents
    for index, output in enumerate(response.outputs):
        if output.name != name:
            continue
        if output.parameters and "shared_memory_region" in output.parameters:
            return None
        if index < len(raw):
            if not _buffer_nbytes(raw[index]) and _element_count(output.shape):
                # Triton answers an output it wrote to shared memory with an empty entry and
                # no marker: the data are in the region, not here.
                return None
            return raw_to_array(raw[index], output.datatype, output.shape)
        shape = [int(d) for d in output.shape]
        if output.HasField("contents"):
            return contents_to_array(output.contents, output.datatype, shape)
        if _element_count(shape) == 0 and output.datatype in DATATYPES:
            return np.empty(shape, dtype=_wire_dtype(output.datatype))
        raise_error(f"the response carries no data for output '{name}'")
    return None


def check_infer_response(
    response: service_pb2.ModelInferResponse,
    raw_output_contents: Sequence[Buffer] | None = None,
    requested: Requested | None = None,
) -> DecodedOutputs:
    """Check a ``ModelInferResponse`` a client received and decode every output, once.

    Each output must have a protocol datatype and a shape of non-negative integers, and data
    that are exactly what they need: a raw entry of the right size (BYTES: that many
    well-formed elements) or typed ``contents`` of the right count.  Raw entries are
    index-aligned with the outputs, one each, or absent (typed contents).  An empty raw entry
    for an output with elements is how Triton answers an output it wrote to shared memory:
    right for an output requested there, a broken answer for any other.

    Parameters
    ----------
    response : ModelInferResponse
        The response.
    raw_output_contents : sequence of bytes-like, optional
        The raw contents when they were split off the message (:func:`parse_infer_response`);
        by default the message's own.
    requested : Requested, optional
        The outputs the request asked for: each must be present, and only those requested in
        shared memory may come without data.  None when unknown (a stream response): an
        output without data is then taken as written to shared memory.

    Returns
    -------
    DecodedOutputs
        The arrays, by output name (None for those in shared memory).

    Raises
    ------
    InferenceServerProtocolError
        Naming the output, what was expected and what came.
    """
    raw = response.raw_output_contents if raw_output_contents is None else raw_output_contents
    outputs = response.outputs
    if raw and len(raw) != len(outputs):
        raise response_fault(
            f"it has {len(raw)} raw_output_contents entries for {len(outputs)} outputs "
            "(expected one entry per output)"
        )
    arrays: dict[str, npt.NDArray[Any] | None] = {}
    for index, output in enumerate(outputs):
        name = output.name
        if name in arrays:
            continue  # as_numpy() reads the first one
        if raw:
            entry = raw[index]
            if _buffer_nbytes(entry) or not math.prod(response_shape(name, output.shape)):
                arrays[name] = decode_raw_output(name, output.datatype, output.shape, entry)
                continue
        elif output.HasField("contents"):
            arrays[name] = _checked_contents(name, output)
            continue
        known_datatype(name, output.datatype)
        dims = response_shape(name, output.shape)
        if not math.prod(dims):  # no raw contents at all, and nothing to carry
            arrays[name] = np.empty(dims, dtype=wire_dtype(output.datatype))
            continue
        # No data for an output with elements: written to shared memory, or a broken answer.
        if requested is not None and "shared_memory_region" not in output.parameters:
            requested.no_data(name, output.datatype, dims)
        arrays[name] = None
    if requested is not None:
        requested.check_present(arrays)
    return DecodedOutputs(arrays)


def _checked_contents(
    name: str, output: service_pb2.ModelInferResponse.InferOutputTensor
) -> npt.NDArray[Any]:
    """An output's typed contents as an array, checked against its datatype and shape."""
    known_datatype(name, output.datatype)
    dims = response_shape(name, output.shape)
    array, wrong = _contents_array(output.contents, output.datatype)
    if array is None:
        raise response_fault(
            f"output '{name}' ({output.datatype}) has typed contents in '{wrong}', which is "
            f"not the field of its datatype"
        )
    if array.size != math.prod(dims):
        raise response_fault(
            f"output '{name}' ({output.datatype}, shape {list(dims)}) needs "
            f"{math.prod(dims)} elements, its typed contents have {array.size}"
        )
    return array.reshape(dims)


# ------------------------------------------------------------------------------------------
# Server side: requests
# ------------------------------------------------------------------------------------------


@dataclass
class DecodedInput:
    """An input tensor decoded from a request.

    Attributes
    ----------
    name, datatype : str
        As sent.
    shape : tuple of int
        As sent.
    data : numpy.ndarray
        The values, shaped as ``shape`` when the data hold exactly that many elements; left
        flat otherwise (the server's validation then reports the mismatch with Triton's
        message), and an empty placeholder for an unknown datatype or negative dimensions.
        Fixed-size data are read-only views of the received buffer (or shared memory).
    parameters : dict
        Tensor parameters other than the shared-memory ones.
    shared_memory : SharedMemoryRef or None
        Where the data were read from, for a shared-memory input.
    """

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: npt.NDArray[Any]
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    shared_memory: SharedMemoryRef | None = None


@dataclass
class DecodedOutput:
    """A requested output decoded from a request.

    Attributes
    ----------
    name : str
        Output name.
    parameters : dict
        Tensor parameters other than the shared-memory ones (``classification`` included).
    shared_memory : SharedMemoryRef or None
        Where to write the output instead of the response.
    """

    name: str
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    shared_memory: SharedMemoryRef | None = None


@dataclass
class DecodedInferRequest:
    """A ``ModelInferRequest`` as the server core wants it.

    Attributes
    ----------
    model_name : str
        Target model.
    model_version : int
        Target version; -1 for the server's choice.
    model_version_str : str
        The version string as sent (stream error responses echo it).
    id : str
        Request id.
    inputs : list of DecodedInput
        The inputs.
    outputs : list of DecodedOutput
        The requested outputs (empty: all).
    parameters : dict
        Custom request parameters (reserved ones parsed into the fields below).
    correlation_id : int or str
        ``sequence_id`` (an int64 is read as uint64); 0 or "" when absent.
    sequence_start, sequence_end : bool
        Sequence flags.
    priority : int
        Priority level.
    timeout_us : int
        Queue timeout in microseconds (0: none).
    enable_empty_final_response : bool
        The ``triton_enable_empty_final_response`` request parameter.
    """

    model_name: str
    model_version: int = -1
    model_version_str: str = ""
    id: str = ""
    inputs: list[DecodedInput] = field(default_factory=list)
    outputs: list[DecodedOutput] = field(default_factory=list)
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    correlation_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    timeout_us: int = 0
    enable_empty_final_response: bool = False


def parse_model_version(version: str, model_name: str) -> int:
    """Parse a model version string as the server reads it.

    Parameters
    ----------
    version : str
        The version from a request; "" selects the server's choice.
    model_name : str
        The model (for the message).

    Returns
    -------
    int
        The version (read as ``std::stol`` reads it: ``"3abc"`` is 3), or -1 for "".

    Raises
    ------
    GrpcCodecError
        ``INVALID_ARG`` for a string that does not start with a number or is negative, with
        Triton's messages.
    """
    if version == "":
        return -1
    try:
        number = stol(version)
    except (ValueError, OverflowError):
        # Triton quotes the C++ exception's what(), which is "stol" for both failures.
        raise _invalid(
            f"failed to get model version from specified version string '{version}' "
            "(details: stol), version should be an integral value > 0"
        ) from None
    if number < 0:
        raise _invalid(
            f"invalid model version specified '{version}' , version should be an integral value > 0"
        )
    return number


def parse_trace_setting_request(request: service_pb2.TraceSettingRequest) -> dict[str, Any]:
    """The changes of a ``TraceSetting`` request, read as Triton 2.51 reads them (server side).

    Only ``trace_file``, ``trace_level``, ``trace_rate``, ``trace_count`` and
    ``log_frequency`` are read, other keys are ignored; a setting with no values clears it
    (None).  Levels other than ``OFF``, ``TIMESTAMPS`` and ``TENSORS`` are ignored; numbers
    are parsed with ``std::stoi`` (a negative rate or frequency wraps to unsigned).

    Returns
    -------
    dict
        ``{setting: value}``: levels as a list, numbers as decimal strings.

    Raises
    ------
    GrpcCodecError
        ``INVALID_ARG`` with Triton's messages: several values for a single-valued setting,
        ``OFF`` with another level, numbers that do not parse or are out of range.
    """
    settings = request.settings
    changes: dict[str, Any] = {}

    def single(key: str) -> str | None:
        values = list(settings[key].value)
        if not values:
            return None
        if len(values) != 1:
            raise _invalid(f"expect only 1 value for '{key}'")
        return values[0]

    if "trace_file" in settings:
        changes["trace_file"] = single("trace_file")
    if "trace_level" in settings:
        levels = list(settings["trace_level"].value)
        if not levels:
            changes["trace_level"] = None
        else:
            try:
                chosen = trace_levels(levels)
            except ValueError as exc:
                raise _invalid(str(exc)) from None
            if chosen is not None:
                changes["trace_level"] = chosen
    for key, lowest, bounds in TRACE_NUMBERS:
        if key not in settings:
            continue
        value = single(key)
        if value is None:
            changes[key] = None
            continue
        try:
            changes[key] = trace_number(key, value, lowest, bounds, got="got: ")
        except ValueError as exc:
            raise _invalid(str(exc)) from None
    return changes


_LOG_SETTINGS = (
    ("log_file", "string_param", "string"),
    ("log_info", "bool_param", "boolean"),
    ("log_warning", "bool_param", "boolean"),
    ("log_error", "bool_param", "boolean"),
    ("log_verbose_level", "uint32_param", "int32"),
    ("log_format", "string_param", "string"),
)


def parse_log_settings_request(request: service_pb2.LogSettingsRequest) -> dict[str, Any]:
    """The changes of a ``LogSettings`` request, read as Triton 2.51 reads them (server side).

    Only the six settings are read (other keys are ignored); each must hold its own kind of
    value.

    Returns
    -------
    dict
        ``{setting: value}``.

    Raises
    ------
    GrpcCodecError
        ``INVALID_ARG`` ``expect <type> for '<setting>'`` for a value of the wrong kind, and
        ``invalid argument for log_format, got: <value>``.
    """
    changes: dict[str, Any] = {}
    for key, field_name, kind in _LOG_SETTINGS:
        if key not in request.settings:
            continue
        entry = request.settings[key]
        if entry.WhichOneof("parameter_choice") != field_name:
            raise _invalid(f"expect {kind} for '{key}'")
        value = getattr(entry, field_name)
        if key == "log_format" and value not in ("default", "ISO8601"):
            raise _invalid(f"invalid argument for log_format, got: {value}")
        changes[key] = value
    return changes


def _wrong_type(key: str, expected: str, tensor: str | None = None) -> GrpcCodecError:
    where = f" for tensor '{tensor}'" if tensor is not None else ""
    return _invalid(f"invalid value type for '{key}' parameter{where}, expected {expected}.")


def _decode_request_parameters(
    params: Mapping[str, service_pb2.InferParameter], out: DecodedInferRequest
) -> None:
    for key in sorted(params):
        param = params[key]
        which = param.WhichOneof("parameter_choice")
        if key == "sequence_id":
            if which == "int64_param":
                out.correlation_id = param.int64_param & _UINT64_MAX
            elif which == "string_param":
                out.correlation_id = param.string_param
            else:
                raise _wrong_type(key, "int64_param or string_param")
        elif key in ("sequence_start", "sequence_end"):
            if which != "bool_param":
                raise _wrong_type(key, "bool_param")
            setattr(out, key, param.bool_param)
        elif key == "priority":
            if which == "int64_param":
                if param.int64_param < 0:
                    raise _invalid("invalid value for 'priority', expected value >= 0.")
                out.priority = param.int64_param
            elif which == "uint64_param":
                out.priority = param.uint64_param
            else:
                raise _wrong_type(key, "int64_param or uint64_param")
        elif key == "timeout":
            if which != "int64_param":
                raise _wrong_type(key, "int64_param")
            if param.int64_param < 0:
                raise _invalid("invalid value for 'timeout', expected value >= 0.")
            out.timeout_us = param.int64_param
        elif key == EMPTY_FINAL_RESPONSE_PARAM:
            if which != "bool_param":
                raise _wrong_type(key, "bool_param")
            out.enable_empty_final_response = param.bool_param
        elif key.startswith(TRITON_RESERVED_REQUEST_PARAMS_PREFIX):
            raise _invalid(
                f"parameter keys starting with '{TRITON_RESERVED_REQUEST_PARAMS_PREFIX}' are "
                "reserved for Triton usage. Only the following keys starting with "
                f"'{TRITON_RESERVED_REQUEST_PARAMS_PREFIX}' are allowed: "
                f"{EMPTY_FINAL_RESPONSE_PARAM}"
            )
        elif which in ("bool_param", "int64_param", "string_param", "double_param"):
            out.parameters[key] = getattr(param, which)
        else:
            raise _wrong_type(key, "int64_param, bool_param, or string_param")


def _decode_tensor_parameters(
    params: Mapping[str, service_pb2.InferParameter], tensor: str
) -> tuple[dict[str, ParamValue], SharedMemoryRef | None]:
    """Split tensor parameters into the shared-memory placement and the rest."""
    region: str | None = None
    sizes: dict[str, int] = {}
    rest: dict[str, ParamValue] = {}
    for key in sorted(params):
        param = params[key]
        which = param.WhichOneof("parameter_choice")
        if key == "shared_memory_region":
            if which != "string_param":
                raise _wrong_type(key, "string_param", tensor)
            region = param.string_param
        elif key in ("shared_memory_byte_size", "shared_memory_offset"):
            if which != "int64_param":
                raise _wrong_type(key, "int64_param", tensor)
            if param.int64_param < 0:
                raise _invalid(
                    f"invalid value for '{key}' parameter for tensor '{tensor}', expected "
                    "value >= 0"
                )
            sizes[key] = param.int64_param
        else:
            value = from_infer_parameter(param)
            if value is not None:
                rest[key] = value
    if region is None:
        for key in ("shared_memory_byte_size", "shared_memory_offset"):
            if key in sizes:
                raise _invalid(
                    f"'{key}' can not be specified without 'shared_memory_region' parameter "
                    f"for tensor '{tensor}'"
                )
        return rest, None
    if "shared_memory_byte_size" not in sizes:
        raise _invalid(
            "'shared_memory_byte_size' must be specified along with 'shared_memory_region' "
            f"parameter for tensor '{tensor}'"
        )
    return rest, SharedMemoryRef(
        region, sizes["shared_memory_byte_size"], sizes.get("shared_memory_offset", 0)
    )


def _request_prefix(request_id: str) -> str:
    return f"[request id: {request_id or '<id_unknown>'}] "


def _decode_raw(
    buffer: Buffer, datatype: str, shape: tuple[int, ...], name: str, model: str, prefix: str
) -> npt.NDArray[Any]:
    info = DATATYPES.get(datatype)
    if info is None or any(d < 0 for d in shape):
        # The core reports the datatype or the dimensions, in Triton's order of checks.
        return np.empty(0, dtype=np.uint8 if info is None else _wire_dtype(datatype))
    count = _element_count(shape)
    if info.byte_size is None:
        try:
            array = deserialize_bytes_tensor(buffer)
        except InferenceServerException:
            raise _invalid(bytes_fault(buffer, name, model, prefix).message) from None
    else:
        nbytes = _buffer_nbytes(buffer)
        if nbytes % info.byte_size:
            raise _invalid(
                f"{prefix}input byte size mismatch for input '{name}' for model '{model}'. "
                f"Expected {count * info.byte_size}, got {nbytes}"
            )
        array = np.frombuffer(buffer, dtype=_wire_dtype(datatype))
    return array.reshape(shape) if array.size == count else array


def decode_infer_request(
    request: service_pb2.ModelInferRequest,
    raw_input_contents: Sequence[Buffer] | None = None,
    *,
    shm_resolver: Callable[[str, SharedMemoryRef], Buffer] | None = None,
) -> DecodedInferRequest:
    """Decode a ``ModelInferRequest`` for the server core (protocol sections 4.5, 7).

    Tensor data come from ``raw_input_contents`` (the k-th entry belongs to the k-th input
    that is neither in shared memory nor typed), from typed ``contents``, or from shared
    memory through ``shm_resolver``.  Checks done here, with Triton's messages
    (``INVALID_ARG``): request and tensor parameter types, reserved ``triton_*`` keys,
    ``contents`` together with raw contents, ``contents`` together with shared memory, typed
    contents of another datatype, an input with no data, shared-memory parameter
    combinations, a raw buffer that is not a whole number of elements, truncated BYTES
    data, ``classification`` values, and an output with both shared memory and
    classification.  Element counts against the shape, datatypes, shapes and everything
    model-related are left to the core's validation (arrays are left flat when the count
    does not match).  Extra raw entries are ignored, as Triton 2.51 does.

    Parameters
    ----------
    request : ModelInferRequest
        The request.
    raw_input_contents : sequence of bytes-like, optional
        The raw contents when they were split off the message (:func:`parse_infer_request`);
        by default the message's own ``raw_input_contents``.
    shm_resolver : callable, optional
        ``shm_resolver(input_name, ref)`` returns the buffer of a shared-memory input (and
        raises to refuse it).  Without one, shared-memory inputs are refused
        (``UNSUPPORTED``).

    Returns
    -------
    DecodedInferRequest
        The decoded request.

    Raises
    ------
    GrpcCodecError
        For the problems above; whatever ``shm_resolver`` raises passes through.
    """
    model = request.model_name
    decoded = DecodedInferRequest(
        model_name=model,
        model_version=parse_model_version(request.model_version, model),
        model_version_str=request.model_version,
        id=request.id,
    )
    _decode_request_parameters(request.parameters, decoded)
    prefix = _request_prefix(request.id)
    raw = request.raw_input_contents if raw_input_contents is None else raw_input_contents
    raw_count = len(raw)
    next_raw = 0
    for message in request.inputs:
        name = message.name
        shape = tuple(int(d) for d in message.shape)
        params, shm = _decode_tensor_parameters(message.parameters, name)
        has_contents = message.HasField("contents")
        if shm is not None:
            if has_contents:
                raise _invalid(
                    "unexpected 'content' provided when using shared memory for input tensor "
                    f"'{name}' for model '{model}'"
                )
            if shm_resolver is None:
                raise GrpcCodecError(
                    "UNSUPPORTED", "shared-memory inputs are not supported by this decoder"
                )
            buffer = shm_resolver(name, shm)
            data = _decode_raw(buffer, message.datatype, shape, name, model, prefix)
        elif has_contents:
            if raw_count:
                raise _invalid(
                    "contents field must not be specified when using raw_input_contents for "
                    f"'{name}' for model '{model}'"
                )
            array, wrong = _contents_array(message.contents, message.datatype)
            if array is None:
                assert wrong is not None
                raise _invalid(
                    f"unexpected explicit tensor data for input tensor '{name}' for model "
                    f"'{model}' of type '{_CONTENTS_FIELD_TYPES[wrong][1]}', expected "
                    f"datatype '{message.datatype}'"
                )
            count = _element_count(shape)
            valid_shape = all(d >= 0 for d in shape)
            data = array.reshape(shape) if valid_shape and array.size == count else array
        elif next_raw < raw_count:
            data = _decode_raw(raw[next_raw], message.datatype, shape, name, model, prefix)
            next_raw += 1
        else:
            raise _invalid(
                f"unable to find data for input tensor '{name}' for model '{model}' in request."
            )
        decoded.inputs.append(DecodedInput(name, message.datatype, shape, data, params, shm))
    for wanted in request.outputs:
        params, shm = _decode_tensor_parameters(wanted.parameters, wanted.name)
        if "classification" in wanted.parameters:
            which = wanted.parameters["classification"].WhichOneof("parameter_choice")
            if which != "int64_param":
                raise _invalid(
                    "invalid value type for 'classification' parameter, expected int64_param"
                )
            if int(params["classification"]) <= 0:
                raise _invalid("invalid value for 'classification' parameter, expected >= 0")
            if shm is not None:
                raise _invalid("output can't set both 'shared_memory_region' and 'classification'")
        decoded.outputs.append(DecodedOutput(wanted.name, params, shm))
    return decoded


# ------------------------------------------------------------------------------------------
# Server side: responses
# ------------------------------------------------------------------------------------------


class OutputTensorLike(Protocol):
    """What the encoder reads of an output tensor (the core's ``Tensor`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def datatype(self) -> str: ...

    @property
    def shape(self) -> Sequence[int]: ...

    @property
    def data(self) -> npt.NDArray[Any]: ...


class ResponseLike(Protocol):
    """What the encoder reads of a response (the core's ``InferResponse`` fits)."""

    @property
    def model_name(self) -> str: ...

    @property
    def model_version(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def outputs(self) -> Sequence[OutputTensorLike]: ...

    @property
    def parameters(self) -> Mapping[str, Any]: ...


def _set_response_parameters(
    target: MutableMapping[str, service_pb2.InferParameter], values: Mapping[str, Any]
) -> None:
    for key, value in values.items():
        try:
            to_infer_parameter(value, target[key])
        except InferenceServerException:
            raise GrpcCodecError(
                "UNSUPPORTED",
                f"response parameter '{key}' has unsupported type "
                f"'{type(value).__name__}'; expected bool, int, float or str",
            ) from None


def encode_infer_response_parts(
    response: ResponseLike,
    *,
    shm_outputs: Mapping[str, SharedMemoryRef] | None = None,
    final: bool | None = None,
) -> tuple[service_pb2.ModelInferResponse, list[Buffer]]:
    """Encode a response with its raw output contents kept out of the message.

    Parameters
    ----------
    response : ResponseLike
        The core response (model name and version, id, outputs, parameters).
    shm_outputs : mapping of str to SharedMemoryRef, optional
        Outputs already written to shared memory: they get an empty raw entry (and, as in
        Triton, no parameters).
    final : bool, optional
        When given, sets the ``triton_final_response`` response parameter (stream).

    Returns
    -------
    tuple of (ModelInferResponse, list of bytes-like)
        The message and one raw entry per output (index-aligned, empty ones included).
        Send them with :func:`serialize_infer_response`.

    Raises
    ------
    GrpcCodecError
        ``UNSUPPORTED`` for a response parameter of an unsupported type.
    InferenceServerException
        For an output whose data do not match its datatype.
    """
    message = service_pb2.ModelInferResponse(
        model_name=response.model_name, model_version=response.model_version, id=response.id
    )
    _set_response_parameters(message.parameters, response.parameters)
    if final is not None:
        message.parameters[FINAL_RESPONSE_PARAM].bool_param = final
    raw: list[Buffer] = []
    shm = shm_outputs or {}
    for tensor in response.outputs:
        output = message.outputs.add(name=tensor.name, datatype=tensor.datatype)
        output.shape.extend(int(d) for d in tensor.shape)
        if tensor.name in shm:
            raw.append(b"")  # Triton sends no data and no parameters for it
        else:
            raw.append(tensor_to_buffer(tensor.data, tensor.datatype))
    return message, raw


def encode_infer_response(
    response: ResponseLike,
    *,
    shm_outputs: Mapping[str, SharedMemoryRef] | None = None,
    final: bool | None = None,
) -> service_pb2.ModelInferResponse:
    """Encode a complete ``ModelInferResponse`` (raw contents inside the message).

    Same parameters and errors as :func:`encode_infer_response_parts`.

    Returns
    -------
    ModelInferResponse
        With one ``raw_output_contents`` entry per output.
    """
    message, raw = encode_infer_response_parts(response, shm_outputs=shm_outputs, final=final)
    message.raw_output_contents.extend(b if isinstance(b, bytes) else bytes(b) for b in raw)
    return message


def encode_stream_response_parts(
    response: ResponseLike,
    *,
    final: bool,
    shm_outputs: Mapping[str, SharedMemoryRef] | None = None,
) -> tuple[service_pb2.ModelStreamInferResponse, list[Buffer]]:
    """Encode a successful stream response (``triton_final_response`` set to ``final``).

    Parameters
    ----------
    response : ResponseLike
        The core response.
    final : bool
        Whether it is the last response of its request.
    shm_outputs : mapping of str to SharedMemoryRef, optional
        As for :func:`encode_infer_response_parts`.

    Returns
    -------
    tuple of (ModelStreamInferResponse, list of bytes-like)
        The message and the raw output contents of its ``infer_response``; send them with
        :func:`serialize_stream_response`.
    """
    inner, raw = encode_infer_response_parts(response, shm_outputs=shm_outputs, final=final)
    message = service_pb2.ModelStreamInferResponse()
    message.infer_response.CopyFrom(inner)
    return message, raw


def encode_stream_error(
    error_message: str,
    *,
    request_id: str,
    model_name: str = "",
    model_version: str = "",
    final: bool | None = None,
) -> service_pb2.ModelStreamInferResponse:
    """Encode a failed request on the stream (protocol section 5.3).

    Parameters
    ----------
    error_message : str
        The error text.
    request_id : str
        The request's id.
    model_name, model_version : str, optional
        Set for errors the model returned (copied from the request); empty for requests
        refused before execution.
    final : bool, optional
        For model errors, whether the request is complete (``triton_final_response``).

    Returns
    -------
    ModelStreamInferResponse
        ``error_message`` plus an ``infer_response`` carrying the id (and the rest above).
    """
    message = service_pb2.ModelStreamInferResponse(error_message=error_message)
    inner = message.infer_response
    inner.id = request_id
    inner.model_name = model_name
    inner.model_version = model_version
    if final is not None:
        inner.parameters[FINAL_RESPONSE_PARAM].bool_param = final
    return message


def encode_empty_final_response(
    *, request_id: str, model_name: str, model_version: str
) -> service_pb2.ModelStreamInferResponse:
    """Encode the empty final response of a decoupled request (protocol section 5.2).

    Parameters
    ----------
    request_id : str
        The request's id.
    model_name, model_version : str
        Copied from the request (so the version is often "").

    Returns
    -------
    ModelStreamInferResponse
        No outputs, ``triton_final_response = true``.
    """
    message = service_pb2.ModelStreamInferResponse()
    inner = message.infer_response
    inner.id = request_id
    inner.model_name = model_name
    inner.model_version = model_version
    inner.parameters[FINAL_RESPONSE_PARAM].bool_param = True
    return message


# ------------------------------------------------------------------------------------------
# Framing: raw contents outside the protobuf message
# ------------------------------------------------------------------------------------------

_WIRE_VARINT, _WIRE_FIXED64, _WIRE_LEN, _WIRE_FIXED32 = 0, 1, 2, 5
_REQUEST_RAW_FIELD = 7  # ModelInferRequest.raw_input_contents
_RESPONSE_RAW_FIELD = 6  # ModelInferResponse.raw_output_contents
_STREAM_RESPONSE_FIELD = 2  # ModelStreamInferResponse.infer_response
_RAW_INPUT_TAG = bytes(((_REQUEST_RAW_FIELD << 3) | _WIRE_LEN,))


_SMALL_VARINTS = [bytes((i,)) for i in range(0x80)]


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _read_varint(view: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(view):
            raise ValueError("truncated protobuf message (varint)")
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("malformed protobuf varint")


def _len_fields(field_number: int, buffers: Sequence[Buffer]) -> tuple[list[Buffer], int]:
    """Wire form of ``buffers`` as occurrences of a length-delimited field, and its size."""
    tag = _varint((field_number << 3) | _WIRE_LEN)
    parts: list[Buffer] = []
    total = 0
    for buffer in buffers:
        size = _buffer_nbytes(buffer)
        length = _varint(size)
        parts += (tag, length, buffer)
        total += len(tag) + len(length) + size
    return parts, total


#: Messages up to this size are parsed by protobuf in one go (raw contents copied, which
#: costs less than splitting them off in Python); larger ones are split without copying.
SMALL_MESSAGE_BYTES = 64 * 1024

_REQUEST_INPUT_FIELD = 5  # ModelInferRequest.inputs
_REQUEST_OUTPUT_FIELD = 6  # ModelInferRequest.outputs


def len_field(field_number: int, payload: bytes) -> bytes:
    """One occurrence of a length-delimited field: tag, length and ``payload``.

    Parameters
    ----------
    field_number : int
        The field number.
    payload : bytes
        The serialized value (a sub-message, string or bytes).

    Returns
    -------
    bytes
        The wire form; appended to a serialized message it adds (or, for a singular
        sub-message, merges) the value.
    """
    return b"".join((_varint((field_number << 3) | _WIRE_LEN), _varint(len(payload)), payload))


def input_tensor_field(tensor: InputTensor) -> bytes:
    """The ``ModelInferRequest.inputs`` entry of ``tensor`` in wire form (tag included).

    Everything but the data: name, datatype, shape, parameters and the shared-memory
    placement.  Concatenated in order with :func:`encode_request_header`, the
    :func:`requested_output_field` entries and the :func:`raw_input_field_header` framed
    contents, it gives the bytes :func:`serialize_infer_request` gives for the same request.

    Raises
    ------
    InferenceServerException
        For unsupported parameter values.
    """
    message = service_pb2.ModelInferRequest.InferInputTensor(
        name=tensor.name, datatype=tensor.datatype
    )
    message.shape.extend(int(d) for d in tensor.shape)
    set_parameters(message.parameters, tensor.parameters)
    if tensor.shared_memory is not None:
        _set_shm_parameters(message.parameters, tensor.shared_memory)
    return len_field(_REQUEST_INPUT_FIELD, message.SerializeToString())


def requested_output_field(output: RequestedOutput) -> bytes:
    """The ``ModelInferRequest.outputs`` entry of ``output`` in wire form (tag included)."""
    message = service_pb2.ModelInferRequest.InferRequestedOutputTensor(name=output.name)
    set_parameters(message.parameters, output.parameters)
    if output.class_count:
        message.parameters["classification"].int64_param = output.class_count
    if output.shared_memory is not None:
        _set_shm_parameters(message.parameters, output.shared_memory)
    return len_field(_REQUEST_OUTPUT_FIELD, message.SerializeToString())


def raw_input_field_header(nbytes: int) -> bytes:
    """Tag and length of a ``raw_input_contents`` entry of ``nbytes`` bytes."""
    return _RAW_INPUT_TAG + _varint(nbytes)


def _ascii_string_field(field_number: int, value: str) -> bytes:
    if not value:
        return b""
    return _varint((field_number << 3) | _WIRE_LEN) + _varint(len(value)) + value.encode()


def encode_request_header(
    model_name: str,
    *,
    model_version: str = "",
    request_id: str = "",
    sequence_id: int | str = 0,
    sequence_start: bool = False,
    sequence_end: bool = False,
    priority: int = 0,
    timeout: int | None = None,
    parameters: Mapping[str, Any] | None = None,
    enable_empty_final_response: bool = False,
) -> bytes:
    """The request-level fields of a ``ModelInferRequest`` in wire form.

    Same encoding and errors as :func:`build_infer_request_parts` (without inputs and
    outputs); the common case (plain ASCII names, no parameters, no sequence) is written
    directly instead of through protobuf.
    """
    if (
        type(model_name) is str
        and type(model_version) is str
        and type(request_id) is str
        and not parameters
        and (sequence_id == 0 or sequence_id == "")
        and not priority
        and timeout is None
        and not enable_empty_final_response
        and model_name.isascii()
        and model_version.isascii()
        and request_id.isascii()
    ):
        return (
            _ascii_string_field(1, model_name)
            + _ascii_string_field(2, model_version)
            + _ascii_string_field(3, request_id)
        )
    request, _ = _build_request(
        model_name,
        (),
        None,
        model_version,
        request_id,
        sequence_id,
        sequence_start,
        sequence_end,
        priority,
        timeout,
        parameters,
        enable_empty_final_response,
        False,
    )
    header: bytes = request.SerializeToString()
    return header


def _split_field(data: Buffer, field_number: int) -> tuple[list[memoryview], list[memoryview]]:
    """Split the top-level occurrences of a length-delimited field off a serialized message.

    Returns the spans of every other field (in order) and the payloads of the field, all
    as views of ``data``.
    """
    view = memoryview(data).cast("B")
    size = len(view)
    rest: list[memoryview] = []
    values: list[memoryview] = []
    pos = span = 0
    while pos < size:
        start = pos
        key, pos = _read_varint(view, pos)
        number, wire = key >> 3, key & 7
        if wire == _WIRE_VARINT:
            _, pos = _read_varint(view, pos)
        elif wire == _WIRE_FIXED64:
            pos += 8
        elif wire == _WIRE_FIXED32:
            pos += 4
        elif wire == _WIRE_LEN:
            length, pos = _read_varint(view, pos)
            end = pos + length
            if end > size:
                raise ValueError("truncated protobuf message (length-delimited field)")
            if number == field_number:
                if start > span:
                    rest.append(view[span:start])
                values.append(view[pos:end])
                span = end
            pos = end
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > size:
            raise ValueError("truncated protobuf message")
    if span < size:
        rest.append(view[span:size])
    return rest, values


def serialize_infer_request(
    request: service_pb2.ModelInferRequest, raw_input_contents: Sequence[Buffer] = ()
) -> bytes:
    """Serialize a request, appending raw input contents kept outside the message.

    Parameters
    ----------
    request : ModelInferRequest
        The message (any raw contents it holds come first).
    raw_input_contents : sequence of bytes-like, optional
        Further ``raw_input_contents`` entries, e.g. from :func:`build_infer_request_parts`.

    Returns
    -------
    bytes
        The wire form of the request with every raw entry (the buffers are copied once).
    """
    parts, _ = _len_fields(_REQUEST_RAW_FIELD, raw_input_contents)
    return b"".join([request.SerializeToString(), *parts])


def parse_infer_request(data: Buffer) -> tuple[service_pb2.ModelInferRequest, list[memoryview]]:
    """Parse a serialized request, splitting off the raw input contents without copying.

    Parameters
    ----------
    data : bytes-like
        The wire form of a ``ModelInferRequest``.

    Returns
    -------
    tuple of (ModelInferRequest, list of memoryview)
        The message without ``raw_input_contents``, and those entries as views of ``data``.

    Raises
    ------
    ValueError
        If ``data`` is not a well-formed message (``google.protobuf.message.DecodeError``
        is a subclass).
    """
    if len(data) <= SMALL_MESSAGE_BYTES:
        try:
            request = service_pb2.ModelInferRequest.FromString(
                data if isinstance(data, bytes) else bytes(data)
            )
        except DecodeError as exc:
            raise ValueError(str(exc)) from exc
        if not request.raw_input_contents:
            return request, []
        small = [memoryview(b) for b in request.raw_input_contents]
        request.ClearField("raw_input_contents")
        return request, small
    rest, raw = _split_field(data, _REQUEST_RAW_FIELD)
    return service_pb2.ModelInferRequest.FromString(b"".join(rest)), raw


def serialize_infer_response(
    response: service_pb2.ModelInferResponse, raw_output_contents: Sequence[Buffer] = ()
) -> bytes:
    """Serialize a response, appending raw output contents kept outside the message.

    Parameters
    ----------
    response : ModelInferResponse
        The message.
    raw_output_contents : sequence of bytes-like, optional
        Further ``raw_output_contents`` entries, e.g. from
        :func:`encode_infer_response_parts`.

    Returns
    -------
    bytes
        The wire form (the buffers are copied once).
    """
    parts, _ = _len_fields(_RESPONSE_RAW_FIELD, raw_output_contents)
    return b"".join([response.SerializeToString(), *parts])


def parse_infer_response(
    data: Buffer,
) -> tuple[service_pb2.ModelInferResponse, list[memoryview]]:
    """Parse a serialized response, splitting off the raw output contents without copying.

    Parameters
    ----------
    data : bytes-like
        The wire form of a ``ModelInferResponse``.

    Returns
    -------
    tuple of (ModelInferResponse, list of memoryview)
        The message without ``raw_output_contents``, and those entries as views of ``data``
        (pass them to :func:`output_to_numpy`).

    Raises
    ------
    ValueError
        If ``data`` is not a well-formed message.
    """
    rest, raw = _split_field(data, _RESPONSE_RAW_FIELD)
    return service_pb2.ModelInferResponse.FromString(b"".join(rest)), raw


def serialize_stream_response(
    response: service_pb2.ModelStreamInferResponse, raw_output_contents: Sequence[Buffer] = ()
) -> bytes:
    """Serialize a stream response whose ``infer_response`` raw contents are kept outside.

    Parameters
    ----------
    response : ModelStreamInferResponse
        The message.
    raw_output_contents : sequence of bytes-like, optional
        Further ``infer_response.raw_output_contents`` entries, e.g. from
        :func:`encode_stream_response_parts`.

    Returns
    -------
    bytes
        The wire form (the buffers are copied once).
    """
    if not raw_output_contents:
        return response.SerializeToString()
    outer = service_pb2.ModelStreamInferResponse(error_message=response.error_message)
    inner = response.infer_response.SerializeToString()
    parts, size = _len_fields(_RESPONSE_RAW_FIELD, raw_output_contents)
    header = _varint((_STREAM_RESPONSE_FIELD << 3) | _WIRE_LEN) + _varint(len(inner) + size)
    return b"".join([outer.SerializeToString(), header, inner, *parts])


def parse_stream_response(
    data: Buffer,
) -> tuple[service_pb2.ModelStreamInferResponse, list[memoryview]]:
    """Parse a serialized stream response, splitting off the raw output contents.

    Parameters
    ----------
    data : bytes-like
        The wire form of a ``ModelStreamInferResponse``.

    Returns
    -------
    tuple of (ModelStreamInferResponse, list of memoryview)
        The message without ``infer_response.raw_output_contents``, and those entries as
        views of ``data``.

    Raises
    ------
    ValueError
        If ``data`` is not a well-formed message.
    """
    rest, inner_payloads = _split_field(data, _STREAM_RESPONSE_FIELD)
    message = service_pb2.ModelStreamInferResponse.FromString(b"".join(rest))
    raw: list[memoryview] = []
    if inner_payloads:
        inner_rest: list[Buffer] = []
        for payload in inner_payloads:
            spans, entries = _split_field(payload, _RESPONSE_RAW_FIELD)
            inner_rest.extend(spans)
            raw.extend(entries)
        message.infer_response.SetInParent()
        message.infer_response.MergeFromString(b"".join(inner_rest))
    return message, raw
