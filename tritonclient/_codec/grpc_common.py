"""What both sides of the gRPC protocol share: status codes and their mapping to errors,
parameters (``InferParameter``), typed tensor ``contents``, and the stream's parameter names.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient._proto import service_pb2
from tritonclient.utils import (
    InferenceServerException,
    raise_error,
)
from tritonclient.utils._dtypes import DATATYPES
from tritonclient.utils._errors import InferenceServerValueError

from .numbers import INT64_MAX, INT64_MIN, UINT64_MAX
from .raw import wire_dtype
from .types import ParamValue

__all__ = [
    "CONTENTS_FIELD",
    "CONTENTS_FIELD_TYPES",
    "EMPTY_FINAL_RESPONSE_PARAM",
    "ERROR_KIND_TO_STATUS",
    "FINAL_RESPONSE_PARAM",
    "GRPC_STATUS_CODES",
    "STATUS_TO_ERROR_KIND",
    "contents_array",
    "error_kind_for_status",
    "exception_from_rpc_error",
    "exception_from_status",
    "exception_from_stream_error",
    "from_infer_parameter",
    "get_parameters",
    "int64_value",
    "out_of_range",
    "set_parameters",
    "status_for_error_kind",
    "status_name",
    "to_infer_parameter",
]

#: Response parameter the server adds on the stream: true on the last response of a request.
FINAL_RESPONSE_PARAM = "triton_final_response"


#: Request parameter asking for an empty final response from decoupled models (stream only).
EMPTY_FINAL_RESPONSE_PARAM = "triton_enable_empty_final_response"


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


def int64_value(value: int, what: str) -> int:
    """``value``, checked to fit an ``int64`` field of a request (``int64_param``).

    Parameters
    ----------
    value : int
        The integer.
    what : str
        The argument it comes from, named in the error's hint.

    Returns
    -------
    int
        ``value``.

    Raises
    ------
    InferenceServerValueError
        Outside -2**63 .. 2**63-1, with NVIDIA's text (``Value out of range: N``, protobuf's
        ``ValueError``, which NVIDIA's gRPC client lets through); it is also a ``ValueError``.
    """
    if not INT64_MIN <= value <= INT64_MAX:
        raise out_of_range(value, what, "a signed 64-bit integer: -2**63 .. 2**63-1")
    return value


def out_of_range(value: int, what: str, field: str) -> InferenceServerValueError:
    """The error for an integer that does not fit its request field: NVIDIA's text
    (``Value out of range: N``, protobuf's ``ValueError``) and a hint naming the argument
    ``what`` and the ``field``'s range."""
    error = InferenceServerValueError(f"Value out of range: {value}")
    error.with_hint(f"{what} travels as {field}")
    return error


def to_infer_parameter(
    value: Any,
    out: service_pb2.InferParameter | None = None,
    key: str | None = None,
    *,
    int64_only: bool = False,
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
    int64_only : bool, optional
        Integers only as ``int64_param`` (what a client sends: NVIDIA's refuses larger ones,
        and Triton refuses a ``uint64_param`` custom parameter); see :func:`int64_value`.

    Returns
    -------
    InferParameter
        ``out`` (or the new message).

    Raises
    ------
    InferenceServerException
        For another type, or an integer outside the int64/uint64 range
        (:class:`InferenceServerValueError` outside int64 with ``int64_only``).
    """
    param = service_pb2.InferParameter() if out is None else out
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        param.bool_param = value
    elif isinstance(value, int):
        if int64_only:
            param.int64_param = int64_value(value, f"parameter '{key}'" if key else "a parameter")
        elif INT64_MIN <= value <= INT64_MAX:
            param.int64_param = value
        elif 0 <= value <= UINT64_MAX:
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
    target: MutableMapping[str, service_pb2.InferParameter],
    values: Mapping[str, Any],
    *,
    int64_only: bool = False,
) -> None:
    """Store every value of ``values`` in a protobuf parameter map with :func:`to_infer_parameter`.

    Parameters
    ----------
    target : protobuf map of str to InferParameter
        E.g. ``request.parameters``.
    values : mapping of str to bool, int, float or str
        The parameters.
    int64_only : bool, optional
        As for :func:`to_infer_parameter` (True for what a client sends).
    """
    for key, value in values.items():
        to_infer_parameter(value, target[key], key if int64_only else None, int64_only=int64_only)


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


#: The ``InferTensorContents`` field for each datatype (FP16 and BF16 have none).
CONTENTS_FIELD: Mapping[str, str] = {
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
CONTENTS_FIELD_TYPES: Mapping[str, tuple[Any, str]] = {
    "bool_contents": (np.bool_, "BOOL"),
    "int_contents": (np.int32, "INT32"),
    "int64_contents": (np.int64, "INT64"),
    "uint_contents": (np.uint32, "UINT32"),
    "uint64_contents": (np.uint64, "UINT64"),
    "fp32_contents": (np.float32, "FP32"),
    "fp64_contents": (np.float64, "FP64"),
    "bytes_contents": (np.object_, "BYTES"),
}


def contents_array(
    contents: service_pb2.InferTensorContents, datatype: str
) -> tuple[npt.NDArray[Any] | None, str | None]:
    """The flat array of the typed contents for ``datatype``.

    Returns ``(array, None)``, or ``(None, field)`` naming a populated field that does not
    belong to ``datatype``.  An unknown datatype with no populated field gives an empty
    uint8 array.
    """
    expected = CONTENTS_FIELD.get(datatype)
    for name in CONTENTS_FIELD_TYPES:
        if name != expected and len(getattr(contents, name)):
            return None, name
    if expected is None:
        if datatype in DATATYPES:  # FP16, BF16: raw only
            return np.empty(0, dtype=wire_dtype(datatype)), None
        return np.empty(0, dtype=np.uint8), None
    values = getattr(contents, expected)
    source_type, _ = CONTENTS_FIELD_TYPES[expected]
    if source_type is np.object_:
        array: npt.NDArray[Any] = np.empty(len(values), dtype=np.object_)
        array[:] = list(values)
        return array, None
    flat = np.fromiter(values, dtype=source_type, count=len(values))
    # INT8/INT16/UINT8/UINT16 keep the low-order bytes of each 32-bit value, as Triton does.
    return flat.astype(wire_dtype(datatype), copy=False), None
