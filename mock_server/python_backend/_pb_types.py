"""The Python backend's constants, datatype codes and errors (``TRITONSERVER_*``,
:class:`MemoryType`, :class:`TritonErrorCode`, :class:`TritonError`), and the parameters of
requests and responses as ``pb_utils`` checks them.

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

import enum
import logging
from typing import Any, ClassVar

from tritonclient.utils._dtypes import DATATYPES

from ..core.errors import ErrorKind, ServerError
from ..core.types import ParamValue
from . import _pybind
from ._errors import TritonModelException

#: Request flag: first request of a sequence.
TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
#: Request flag: last request of a sequence.
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
#: Response flag: the last response of a request.
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
#: Release flag: the request is done (the default).
TRITONSERVER_REQUEST_RELEASE_ALL = 1
#: Release flag: run the request again in a later batch.
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2


class MemoryType(enum.IntEnum):
    """Memory types for :class:`PreferredMemory`."""

    TRITONSERVER_MEMORY_GPU = 0
    TRITONSERVER_MEMORY_CPU = 1


TRITONSERVER_MEMORY_GPU = MemoryType.TRITONSERVER_MEMORY_GPU
TRITONSERVER_MEMORY_CPU = MemoryType.TRITONSERVER_MEMORY_CPU

#: ``TRITONSERVER_DataType`` numbers of the protocol datatypes (``Tensor.triton_dtype()``).
_TRITON_TYPE_CODES: dict[str, int] = {
    "BOOL": 1,
    "UINT8": 2,
    "UINT16": 3,
    "UINT32": 4,
    "UINT64": 5,
    "INT8": 6,
    "INT16": 7,
    "INT32": 8,
    "INT64": 9,
    "FP16": 10,
    "FP32": 11,
    "FP64": 12,
    "BYTES": 13,
    "BF16": 14,
}
_TRITON_TYPE_NAMES = {code: name for name, code in _TRITON_TYPE_CODES.items()}

#: Model-config datatype names (``"TYPE_FP32"``) to numpy types, as in Triton's module.
TRITON_STRING_TO_NUMPY: dict[str, Any] = {
    info.config_name: info.numpy_type for info in DATATYPES.values()
}

_LOG = logging.getLogger("mock_server.model")


class TritonErrorCode(enum.IntEnum):
    """``TRITONSERVER_Error_Code`` values, available as ``TritonError.<NAME>``."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


class TritonError:
    """An error to report for one request (``InferenceResponse(error=...)``).

    Parameters
    ----------
    message : str
        What went wrong.
    code : TritonErrorCode, optional
        One of ``TritonError.UNKNOWN``, ``INTERNAL`` (the default), ``NOT_FOUND``,
        ``INVALID_ARG``, ``UNAVAILABLE``, ``UNSUPPORTED``, ``ALREADY_EXISTS``, ``CANCELLED``.
    """

    UNKNOWN: ClassVar[TritonErrorCode] = TritonErrorCode.UNKNOWN
    INTERNAL: ClassVar[TritonErrorCode] = TritonErrorCode.INTERNAL
    NOT_FOUND: ClassVar[TritonErrorCode] = TritonErrorCode.NOT_FOUND
    INVALID_ARG: ClassVar[TritonErrorCode] = TritonErrorCode.INVALID_ARG
    UNAVAILABLE: ClassVar[TritonErrorCode] = TritonErrorCode.UNAVAILABLE
    UNSUPPORTED: ClassVar[TritonErrorCode] = TritonErrorCode.UNSUPPORTED
    ALREADY_EXISTS: ClassVar[TritonErrorCode] = TritonErrorCode.ALREADY_EXISTS
    CANCELLED: ClassVar[TritonErrorCode] = TritonErrorCode.CANCELLED

    def __init__(self, message: str, code: TritonErrorCode = TritonErrorCode.INTERNAL) -> None:
        text = _pybind.text_arg(message)
        if text is None or not isinstance(code, TritonErrorCode):
            raise _pybind.incompatible(
                "__init__",
                "TritonError(message: str, code: TritonError.__ErrorCode = "
                "<__ErrorCode.INTERNAL: 1>)",
                (message, code),
                constructor=True,
            )
        self._code = code
        self._message = text

    def message(self) -> str:
        """Return the error message."""
        return self._message

    def code(self) -> TritonErrorCode:
        """Return the error code."""
        return self._code

    def __str__(self) -> str:
        return self._message

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, TritonError.{self._code.name})"

    def _to_server_error(self) -> ServerError:
        return ServerError(ErrorKind[self._code.name], self._message)

    @classmethod
    def _from_server_error(cls, error: ServerError) -> TritonError:
        return cls(error.message, TritonErrorCode[error.kind.name])


def _check_parameters(parameters: Any) -> dict[str, ParamValue]:
    """Request or response parameters as the Python backend checks them (``PyParametersToJSON``):
    a dict (or None) of str keys to bool, int or str values, with Triton's messages."""
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise TritonModelException(f"Expect N8pybind114dictE, got {type(parameters)}")
    clean: dict[str, ParamValue] = {}
    for key, value in parameters.items():
        if not isinstance(key, str):
            raise TritonModelException(
                f"Expect parameters keys to have type str, found type {type(key)}"
            )
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(value)}"
            )
        clean[str(key)] = value if isinstance(value, bool) else _plain(value)
    return clean


def _plain(value: int | str) -> int | str:
    """An int or str subclass (numpy's str_, an IntEnum...) as the plain type."""
    return str(value) if isinstance(value, str) else int(value)
