"""``triton_python_backend_utils`` for models running on this server.

Models written for Triton's Python backend do ``import triton_python_backend_utils as pb_utils``;
importing :mod:`mock_server.python_backend` makes that name resolve to this module.  It provides
the documented API of the Python backend:

* tensors: :class:`Tensor` (numpy, DLPack, BF16 through ``ml_dtypes``);
* requests and responses: :class:`InferenceRequest` (what ``execute`` receives, and the
  business-logic-scripting (BLS) request with ``exec``/``async_exec``), :class:`InferenceResponse`,
  :class:`InferenceResponseSender`, :class:`ResponseIterator`, :class:`TritonError`,
  :class:`TritonModelException`;
* configuration: :class:`ModelConfig` for ``auto_complete_config`` and the ``get_*_by_name``
  helpers;
* model control: :func:`load_model`, :func:`unload_model`, :func:`is_model_ready`;
* :class:`Logger`, custom metrics (:class:`MetricFamily`, :class:`Metric`), and the
  ``TRITONSERVER_*`` constants.

Everything lives in host memory: ``Tensor.is_cpu()`` is always True and GPU ``PreferredMemory``
is accepted but has no effect.

Arguments are taken as Triton 2.51's bindings (pybind11) take them (:mod:`._pybind`): where
Triton takes a ``str`` (names, ids, messages) ``bytes`` are accepted too and read as UTF-8;
numbers, lists and enums are not converted from other types, and what Triton refuses with a
``TypeError`` is refused the same way.  ``tests/conformance/test_pb_utils_differential.py``
runs the same probes on both servers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import functools
import json
import logging
import queue
import struct
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from tritonclient.utils import (
    deserialize_bytes_tensor,
    np_to_triton_dtype,
    triton_to_np_dtype,
)
from tritonclient.utils._dtypes import DATATYPES

from ..core.errors import ErrorKind, ServerError
from ..core.types import InferRequest as CoreRequest
from ..core.types import InferResponse as CoreResponse
from ..core.types import ParamValue, RequestedOutput
from ..core.types import Tensor as CoreTensor
from . import _context, _dlpack, _pybind
from ._errors import TritonModelException
from .metrics import Metric, MetricFamily, MetricKind

__all__ = [
    "TRITONSERVER_MEMORY_CPU",
    "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "TRITON_STRING_TO_NUMPY",
    "InferenceRequest",
    "InferenceResponse",
    "InferenceResponseSender",
    "InferenceTrace",
    "LogLevel",
    "Logger",
    "MemoryType",
    "Metric",
    "MetricFamily",
    "MetricKind",
    "ModelConfig",
    "PreferredMemory",
    "ResponseIterator",
    "Tensor",
    "TritonError",
    "TritonErrorCode",
    "TritonModelException",
    "deserialize_bytes_tensor",
    "get_input_config_by_name",
    "get_input_tensor_by_name",
    "get_model_dir",
    "get_output_config_by_name",
    "get_output_tensor_by_name",
    "is_model_ready",
    "load_model",
    "numpy_to_triton_type",
    "serialize_byte_tensor",
    "triton_string_to_numpy",
    "triton_to_numpy_type",
    "unload_model",
    "using_decoupled_model_transaction_policy",
]

_T = TypeVar("_T")

# -- constants -----------------------------------------------------------------------------------
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


# -- errors --------------------------------------------------------------------------------------
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


# -- tensors -------------------------------------------------------------------------------------
class Tensor:
    """A named tensor: an input of a request or an output of a response.

    Parameters
    ----------
    name : str
        Tensor name (``bytes`` are read as UTF-8).
    numpy_array : numpy.ndarray
        The data, a numpy array (as in Triton, other objects are refused).  Any dtype with a
        protocol datatype: bool, (u)int8..64, float16/32/64, ``ml_dtypes.bfloat16`` (BF16), and
        for BYTES ``object`` arrays of ``bytes``/``str``, or ``numpy.bytes_``/``numpy.str_``
        arrays (str is sent UTF-8 encoded); non-contiguous arrays are made C-contiguous.

    Raises
    ------
    TypeError
        If the name is not text or the data not a numpy array.
    TritonModelException
        If the dtype has no protocol datatype.
    """

    __slots__ = ("_array", "_datatype", "_name")

    def __init__(self, name: str, numpy_array: Any) -> None:
        text = _pybind.text_arg(name)
        if text is None or not isinstance(numpy_array, np.ndarray):
            raise _pybind.incompatible(
                "__init__",
                "Tensor(arg0: str, arg1: numpy.ndarray)",
                (name, numpy_array),
                constructor=True,
            )
        name = text
        array = numpy_array
        datatype = np_to_triton_dtype(array.dtype)
        if datatype is None:
            raise TritonModelException(
                f"tensor '{name}': numpy dtype {array.dtype} has no Triton datatype; use bool, "
                "(u)int8-64, float16/32/64, ml_dtypes.bfloat16, or object/bytes_/str_ for BYTES"
            )
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self._name = name
        self._array: npt.NDArray[Any] = array
        self._datatype = datatype

    @classmethod
    def _wrap(cls, name: str, datatype: str, array: npt.NDArray[Any]) -> Tensor:
        tensor = cls.__new__(cls)
        tensor._name = name
        tensor._datatype = datatype
        tensor._array = array
        return tensor

    def name(self) -> str:
        """Return the tensor's name."""
        return self._name

    def as_numpy(self) -> npt.NDArray[Any]:
        """Return the data as a numpy array (no copy).

        BYTES tensors are ``object`` arrays (of ``bytes`` for inputs).

        Raises
        ------
        TritonModelException
            For a BF16 tensor, as Triton's (numpy has no bfloat16): use :meth:`to_dlpack` and
            :meth:`from_dlpack` (e.g. with torch) instead.
        """
        if self._datatype == "BF16":
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and "
                "from_dlpack() instead."
            )
        return self._array

    def triton_dtype(self) -> int:
        """Return the ``TRITONSERVER_DataType`` number of the tensor's datatype."""
        return _TRITON_TYPE_CODES[self._datatype]

    def shape(self) -> list[int]:
        """Return the tensor's shape."""
        return [int(d) for d in self._array.shape]

    def is_cpu(self) -> bool:
        """Whether the tensor is in CPU memory (always True on this server)."""
        return True

    def to_dlpack(self) -> Any:
        """Return a DLPack capsule sharing the tensor's memory (BF16 included).

        Raises
        ------
        TritonModelException
            For BYTES tensors, which DLPack cannot carry.
        """
        return _dlpack.export_array(self._array)

    @staticmethod
    def from_dlpack(name: str, dlpack_tensor: Any) -> Tensor:
        """Create a tensor from a DLPack capsule or an object implementing ``__dlpack__``.

        Parameters
        ----------
        name : str
            Tensor name (``bytes`` are read as UTF-8).
        dlpack_tensor : PyCapsule or object with ``__dlpack__``
            The tensor to wrap, C-order contiguous; its memory is shared, not copied (tensors in
            GPU memory are copied to the host by their producer).

        Returns
        -------
        Tensor

        Raises
        ------
        TritonModelException
            If the tensor is not C-contiguous or its dtype has no Triton datatype.
        """
        if _pybind.text_arg(name) == "":  # checked first, as Triton's binding does
            raise TritonModelException("Tensor name cannot be an empty string.")
        return Tensor(name, _dlpack.import_array(dlpack_tensor))

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any:
        """DLPack protocol: export the tensor (host memory)."""
        if dl_device is not None and tuple(dl_device) != _dlpack.HOST_DEVICE:
            raise BufferError("pb_utils.Tensor lives in host memory; cannot export to a device")
        if copy:
            return _dlpack.export_array(self._array.copy(), stream, max_version)
        return _dlpack.export_array(self._array, stream, max_version)

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack protocol: the tensor's device (``kDLCPU``, 0)."""
        return _dlpack.HOST_DEVICE

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, {self._datatype}, shape={list(self._array.shape)})"


def _bytes_element(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytearray, memoryview)):
        return bytes(item)
    return str(item).encode("utf-8")


def _bytes_array(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An object array of ``bytes`` with the data of a BYTES-typed array."""
    if array.dtype == np.object_:
        flat = array.reshape(-1)
        if all(type(item) is bytes for item in flat):
            return array
        items = [_bytes_element(item) for item in flat]
    else:  # bytes_ / str_
        items = [_bytes_element(item) for item in array.reshape(-1).tolist()]
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out.reshape(array.shape)


def _tensor_to_core(tensor: Tensor) -> CoreTensor:
    array = tensor._array
    if tensor._datatype == "BYTES":
        try:
            array = _bytes_array(array)
        except UnicodeEncodeError as exc:
            raise TritonModelException(
                f"tensor '{tensor._name}': a str element cannot be encoded as UTF-8 ({exc})"
            ) from exc
    return CoreTensor(tensor._name, tensor._datatype, tuple(int(d) for d in array.shape), array)


def _tensor_from_core(tensor: CoreTensor) -> Tensor:
    return Tensor._wrap(tensor.name, tensor.datatype, tensor.data)


# -- parameters ----------------------------------------------------------------------------------
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


# -- responses -----------------------------------------------------------------------------------
class InferenceResponse:
    """The response to an inference request.

    Parameters
    ----------
    output_tensors : list of Tensor, optional
        The outputs (ignored when ``error`` is given).
    error : TritonError, optional
        The error of a failed request.
    parameters : dict, optional
        Response parameters: str keys, bool, int or str values (a later Python backend's
        argument; Triton 2.51 has none).

    Raises
    ------
    TypeError
        If ``output_tensors`` is not a list of Tensor or ``error`` not a TritonError.
    TritonModelException
        If a parameter is not of a supported type.
    """

    def __init__(
        self,
        output_tensors: Sequence[Tensor] = (),
        error: TritonError | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        # None is no list to pybind11 (a TypeError, as Triton's QA argument_validation checks).
        outputs = _pybind.sequence_arg(output_tensors)
        if (
            outputs is None
            or any(tensor is not None and not isinstance(tensor, Tensor) for tensor in outputs)
            or (error is not None and not isinstance(error, TritonError))
        ):
            raise _pybind.incompatible(
                "__init__",
                "InferenceResponse(output_tensors: List[Tensor] = [], error: TritonError = None)",
                (),
                {"output_tensors": output_tensors, "error": error},
                constructor=True,
            )
        if any(tensor is None for tensor in outputs):  # pybind11's null pointer, refused
            raise TritonModelException("Output tensor for inference response should not be empty.")
        self._outputs: list[Tensor] = outputs
        self._error = error
        self._parameters = _check_parameters(parameters)

    def output_tensors(self) -> list[Tensor]:
        """Return the output tensors."""
        return self._outputs

    def has_error(self) -> bool:
        """Whether the response carries an error."""
        return self._error is not None

    def error(self) -> TritonError | None:
        """Return the response's error, or None."""
        return self._error

    def parameters(self) -> str:
        """Return the response parameters as a JSON string."""
        return json.dumps(self._parameters)

    def __repr__(self) -> str:
        if self._error is not None:
            return f"InferenceResponse(error={self._error!r})"
        return f"InferenceResponse({self._outputs!r})"

    def _to_core(
        self, model_name: str, model_version: str, request_id: str, final: bool
    ) -> CoreResponse:
        if self._error is not None:
            return CoreResponse(
                model_name,
                model_version,
                request_id,
                error=self._error._to_server_error(),
                parameters=dict(self._parameters),
                final=final,
                model_error=True,
            )
        return CoreResponse(
            model_name,
            model_version,
            request_id,
            outputs=[_tensor_to_core(t) for t in self._outputs],
            parameters=dict(self._parameters),
            final=final,
        )

    @classmethod
    def _from_core(cls, response: CoreResponse) -> InferenceResponse:
        error = (
            TritonError._from_server_error(response.error) if response.error is not None else None
        )
        made = cls([], error)
        if error is None:
            made._outputs = [_tensor_from_core(t) for t in response.outputs]
        made._parameters = dict(response.parameters)
        return made


def get_output_tensor_by_name(inference_response: InferenceResponse, name: str) -> Tensor | None:
    """Return the output tensor called ``name`` of a response, or None."""
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


class InferenceResponseSender:
    """Sends the responses of one request (``request.get_response_sender()``).

    In decoupled mode any number of responses may be sent, from any thread, also after
    ``execute`` returned; the last one carries ``TRITONSERVER_RESPONSE_COMPLETE_FINAL`` (alone,
    with ``response=None``, for an empty final response).  In default mode exactly one response
    may be sent, with the final flag or followed by a flags-only final call.
    """

    def __init__(
        self, request: CoreRequest, model_name: str, model_version: str, decoupled: bool
    ) -> None:
        self._request = request
        self._model_name = model_name
        self._model_version = model_version
        self._decoupled = decoupled
        self._lock = threading.RLock()
        self._closed = False
        self._sent = 0
        self._held: CoreResponse | None = None
        #: The model asked for this sender (``request.get_response_sender()``): a default-mode
        #: model that returns None for the request may still answer through it later.
        self._taken = False

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        """Send ``response``, and with ``flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL`` close.

        Parameters
        ----------
        response : InferenceResponse, optional
            The response; may be omitted only together with the final flag.
        flags : int, optional
            0, or ``TRITONSERVER_RESPONSE_COMPLETE_FINAL`` for the last response.

        Raises
        ------
        TritonModelException
            For an unsupported flag, a missing response without the final flag, a send after
            the final one, or a second response of a default-mode model.
        """
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if response is None and flags == 0:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        if response is not None and not isinstance(response, InferenceResponse):
            raise TypeError(
                f"response must be a pb_utils.InferenceResponse, got {type(response).__name__}"
            )
        final = flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
        with self._lock:
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            if not self._decoupled:
                if response is not None and self._sent > 0:
                    raise TritonModelException(
                        "Non-decoupled model cannot send more than one response."
                    )
                if response is None and self._sent == 0:
                    raise TritonModelException(
                        "Non-decoupled model cannot send complete final before sending a response."
                    )
            core = None
            if response is not None:
                core = response._to_core(
                    self._model_name, self._model_version, self._request.id, final
                )
            if final:
                self._closed = True
            if response is not None:
                self._sent += 1
            if self._decoupled:
                self._deliver(core or self._empty_final())
            elif core is not None and not final:
                self._held = core  # one response, completed by the flags-only call
            else:
                held = core or self._held
                assert held is not None
                held.final = True
                self._held = None
                self._deliver(held)

    def is_cancelled(self) -> bool:
        """Whether the client cancelled the request."""
        return self._request.cancelled.is_set()

    # -- backend side ----------------------------------------------------------------------------
    def _empty_final(self) -> CoreResponse:
        return CoreResponse(self._model_name, self._model_version, self._request.id, final=True)

    def _deliver(self, response: CoreResponse) -> None:
        callback = self._request.response_callback
        if callback is not None:
            callback(response)

    @property
    def _used(self) -> bool:
        return self._sent > 0 or self._closed

    def _finish(self, response: InferenceResponse) -> None:
        """Deliver the response ``execute`` returned for the request (default mode)."""
        try:
            core = response._to_core(self._model_name, self._model_version, self._request.id, True)
        except TritonModelException as exc:
            self._fail(ServerError.internal(f"model '{self._model_name}': {exc}"))
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._sent += 1
            self._deliver(core)

    def _fail(self, error: ServerError) -> bool:
        """Complete the request with ``error`` unless it is complete already.

        A default-mode response sent without the final flag has left the model already (in
        Triton it reaches the frontend at once): it goes out first, the error after it, and
        each frontend makes of the two what Triton's does (a gRPC stream keeps the first,
        unary gRPC answers "expected a single response").
        """
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            held, self._held = self._held, None
            if held is not None:
                self._deliver(held)
            self._deliver(
                CoreResponse(self._model_name, self._model_version, self._request.id, error=error)
            )
            return True


# -- requests ------------------------------------------------------------------------------------
class PreferredMemory:
    """Where a BLS request would like its outputs (accepted; outputs are always in host memory).

    Parameters
    ----------
    preferred_memory_type : MemoryType
        ``TRITONSERVER_MEMORY_GPU`` or ``TRITONSERVER_MEMORY_CPU``.
    preferred_device_id : int, optional
        The device id.
    """

    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0) -> None:
        self.preferred_memory_type = MemoryType(preferred_memory_type)
        self.preferred_device_id = int(preferred_device_id)

    def __repr__(self) -> str:
        return f"PreferredMemory({self.preferred_memory_type.name}, {self.preferred_device_id})"


class InferenceTrace:
    """The trace of a request (tracing is not implemented: there is never a trace context)."""

    def get_context(self, mode: str = "opentelemetry") -> str | None:
        """Return the trace context of ``mode``; always None here."""
        return None


class InferenceRequest:
    """An inference request.

    ``execute`` receives these (use :meth:`inputs`, :meth:`request_id`, ... and
    :meth:`get_response_sender`); models also build them for business logic scripting and run
    them on another model with :meth:`exec` or :meth:`async_exec`.

    Parameters
    ----------
    request_id : str, optional
        Request id.
    correlation_id : int or str, optional
        Sequence correlation id (unsigned int or str); 0 when not part of a sequence.
    inputs : list of Tensor
        The input tensors (required).
    requested_output_names : list of str
        The outputs to return (required; empty returns all outputs).
    model_name : str
        The model to run (required).
    model_version : int, optional
        The version; -1 (the default) lets the server choose.
    flags : int, optional
        ``TRITONSERVER_REQUEST_FLAG_SEQUENCE_START`` / ``_END``, or-ed.
    timeout : int, optional
        Time-out in microseconds; 0 (the default) means none.  A request that times out gets a
        response with an ``UNAVAILABLE`` error.
    preferred_memory : PreferredMemory, optional
        Accepted for compatibility; outputs are always in host memory.
    trace : InferenceTrace, optional
        Accepted for compatibility.
    parameters : dict, optional
        Request parameters: str keys, bool, int or str values.

    Raises
    ------
    TypeError
        As Triton's binding: for a missing required argument or one of the wrong type (the
        ``str`` arguments, and the names in ``requested_output_names``, take ``bytes`` too).
    TritonModelException
        For a correlation id that is neither an int nor a str, or parameters that are not a
        dict of str to bool, int or str.
    RuntimeError
        For a negative correlation id.
    """

    def __init__(
        self,
        request_id: str = "",
        correlation_id: int | str = 0,
        inputs: Sequence[Tensor] | None = None,
        requested_output_names: Sequence[str] | None = None,
        model_name: str | None = None,
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: PreferredMemory | None = None,
        trace: InferenceTrace | None = None,
        parameters: Mapping[str, Any] | str | None = None,
    ) -> None:
        text_id = _pybind.text_arg(request_id)
        tensors = _pybind.sequence_arg(inputs)
        names = _pybind.sequence_arg(requested_output_names)
        texts = [_pybind.text_arg(n) for n in names or ()]
        text_model = _pybind.text_arg(model_name)
        version = _pybind.int_arg(model_version)
        flag_bits = _pybind.int_arg(flags, unsigned=True)
        timeout_us = _pybind.int_arg(timeout, unsigned=True)
        if (
            text_id is None
            or tensors is None
            # pybind11 takes None for a tensor (a null pointer); the backend refuses it below.
            or any(t is not None and not isinstance(t, Tensor) for t in tensors)
            or names is None
            or any(t is None for t in texts)
            or text_model is None
            or version is None
            or flag_bits is None
            or timeout_us is None
            or (preferred_memory is not None and not isinstance(preferred_memory, PreferredMemory))
            or (trace is not None and not isinstance(trace, InferenceTrace))
        ):
            raise _pybind.incompatible(
                "__init__",
                "InferenceRequest(request_id: str = '', correlation_id: object = 0, inputs: "
                "List[Tensor], requested_output_names: List[str], model_name: str, "
                "model_version: int = -1, flags: int = 0, timeout: int = 0, preferred_memory: "
                "PreferredMemory = ..., trace: InferenceTrace = ..., parameters: object = None)",
                (),
                {
                    "request_id": request_id,
                    "correlation_id": correlation_id,
                    "inputs": inputs,
                    "requested_output_names": requested_output_names,
                    "model_name": model_name,
                    "model_version": model_version,
                    "flags": flags,
                    "timeout": timeout,
                },
                constructor=True,
            )
        if any(t is None for t in tensors):
            raise TritonModelException(
                f"Input tensor for request with id '{text_id}' and model name '{text_model}' "
                "should not be empty."
            )
        if any(t == "" for t in texts):
            raise TritonModelException(
                f"Requested output name for request with id '{text_id}' and model name "
                f"'{text_model}' should not be empty."
            )
        if isinstance(correlation_id, int):
            if correlation_id < 0:
                raise RuntimeError(_pybind.CAST_ERROR)
            correlation_id = int(correlation_id)
        elif isinstance(correlation_id, str):
            correlation_id = str(correlation_id)
        else:
            raise TritonModelException("Correlation ID must be integer or string")
        self._request_id = text_id
        self._correlation_id: int | str = correlation_id
        self._inputs: list[Tensor] = tensors
        self._requested = [t for t in texts if t is not None]
        self._model_name = text_model
        self._model_version = version
        self._flags = flag_bits
        self._timeout = timeout_us
        self._preferred_memory = preferred_memory or PreferredMemory(TRITONSERVER_MEMORY_CPU)
        self._trace = trace or InferenceTrace()
        self._parameters = _check_parameters(parameters)
        self._core: CoreRequest | None = None
        self._sender: InferenceResponseSender | None = None
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL

    @classmethod
    def _received(
        cls,
        request: CoreRequest,
        model_version: int,
        output_names: Sequence[str],
        sender: InferenceResponseSender,
    ) -> InferenceRequest:
        """Wrap a request the model receives in ``execute``."""
        flags = (TRITONSERVER_REQUEST_FLAG_SEQUENCE_START if request.sequence_start else 0) | (
            TRITONSERVER_REQUEST_FLAG_SEQUENCE_END if request.sequence_end else 0
        )
        made = cls.__new__(cls)
        made._request_id = request.id
        made._correlation_id = request.correlation_id
        made._inputs = [_tensor_from_core(t) for t in request.inputs]
        made._requested = [o.name for o in request.outputs] or list(output_names)
        made._model_name = request.model_name
        made._model_version = model_version
        made._flags = flags
        made._timeout = request.timeout_us
        made._preferred_memory = PreferredMemory(TRITONSERVER_MEMORY_CPU)
        made._trace = InferenceTrace()
        made._parameters = dict(request.parameters)
        made._core = request
        made._sender = sender
        made._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        return made

    # -- accessors -------------------------------------------------------------------------------
    def inputs(self) -> list[Tensor]:
        """Return the input tensors."""
        return self._inputs

    def request_id(self) -> str:
        """Return the request id ("" when none)."""
        return self._request_id

    def correlation_id(self) -> int | str:
        """Return the sequence correlation id (0 when none)."""
        return self._correlation_id

    def flags(self) -> int:
        """Return the request flags (sequence start/end)."""
        return self._flags

    def set_flags(self, flags: int) -> None:
        """Set the request flags (for BLS requests)."""
        self._flags = int(flags)

    def timeout(self) -> int:
        """Return the time-out in microseconds (0 when none)."""
        return self._timeout

    def parameters(self) -> str:
        """Return the request parameters as a JSON string (parse it with ``json.loads``)."""
        return json.dumps(self._parameters)

    def requested_output_names(self) -> set[str]:
        """Return the names of the outputs to compute (a set, as Triton's binding returns)."""
        return set(self._requested)

    def model_name(self) -> str:
        """Return the name of the model the request is for."""
        return self._model_name

    def model_version(self) -> int:
        """Return the version of the model the request is for (-1: the server's choice)."""
        return self._model_version

    def trace(self) -> InferenceTrace:
        """Return the request's trace."""
        return self._trace

    def is_cancelled(self) -> bool:
        """Whether the client cancelled the request."""
        return self._core is not None and self._core.cancelled.is_set()

    def get_response_sender(self) -> InferenceResponseSender:
        """Return the request's response sender.

        Raises
        ------
        TritonModelException
            For a request the model built itself (BLS).
        """
        if self._sender is None:
            raise TritonModelException(
                "a response sender is available only for requests received by execute"
            )
        self._sender._taken = True
        return self._sender

    def set_release_flags(self, flags: int = TRITONSERVER_REQUEST_RELEASE_ALL) -> None:
        """Set how the request is released when ``execute`` returns.

        Parameters
        ----------
        flags : int
            ``TRITONSERVER_REQUEST_RELEASE_ALL`` (the default) or
            ``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE`` to run the request again in a later
            batch (the model must use iterative sequence batching).
        """
        if flags not in (TRITONSERVER_REQUEST_RELEASE_ALL, TRITONSERVER_REQUEST_RELEASE_RESCHEDULE):
            raise TritonModelException(
                f"invalid release flags {flags}; expected TRITONSERVER_REQUEST_RELEASE_ALL or "
                "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE"
            )
        if self._sender is None:
            raise TritonModelException(
                "release flags can be set only on requests received by execute"
            )
        self._release_flags = flags

    # -- business logic scripting ----------------------------------------------------------------
    def _core_request(self) -> CoreRequest:
        return CoreRequest(
            model_name=self._model_name,
            model_version=self._model_version,
            id=self._request_id,
            inputs=[_tensor_to_core(t) for t in self._inputs],
            outputs=[RequestedOutput(name) for name in self._requested],
            parameters=dict(self._parameters),
            correlation_id=self._correlation_id,
            sequence_start=bool(self._flags & TRITONSERVER_REQUEST_FLAG_SEQUENCE_START),
            sequence_end=bool(self._flags & TRITONSERVER_REQUEST_FLAG_SEQUENCE_END),
            timeout_us=max(self._timeout, 0),
        )

    def _start(self, threaded: bool) -> _BLSCall:
        hooks, phase = _context.runtime()
        if phase in ("auto_complete", "initialize", "finalize"):
            # Triton 2.51's words, in initialize() and finalize() alike.
            raise TritonModelException("BLS is only supported during the 'execute' function.")
        if hooks is None:
            raise TritonModelException(
                "BLS requests cannot be executed here: no server is attached "
                f"(model function: {phase})"
            )
        return _BLSCall(hooks, self._core_request(), self._timeout, threaded)

    def exec(self, decoupled: bool = False) -> Any:
        """Run the request on its model and wait.

        Parameters
        ----------
        decoupled : bool, optional
            False (the default): return the single response.  True: return a
            :class:`ResponseIterator` over all responses (for decoupled models; the last one may
            be empty).

        Returns
        -------
        InferenceResponse or ResponseIterator
            Failures (unknown model, invalid input, time-out ...) come back as a response whose
            ``has_error()`` is True.
        """
        call = self._start(threaded=decoupled)
        if decoupled:
            return ResponseIterator(call)
        return call.single()

    def async_exec(self, decoupled: bool = False) -> _Pending[Any]:
        """Start the request on its model and return an awaitable of :meth:`exec`'s result.

        The request starts at once; await the result in ``async def execute``, e.g. with
        ``asyncio.gather``.

        Parameters
        ----------
        decoupled : bool, optional
            As for :meth:`exec`; with True the awaited value is a :class:`ResponseIterator`
            (iterable with ``for`` and ``async for``).

        Returns
        -------
        Awaitable
            Resolves to an InferenceResponse or a ResponseIterator.
        """
        call = self._start(threaded=decoupled)
        if decoupled:
            # As Triton's stub (the call runs in an executor until its first response): the
            # awaitable resolves once the first response is there, so iterating it with a plain
            # ``for`` does not hold up the event loop while the model works.
            return _Pending(functools.partial(ResponseIterator, call, wait_for_first=True))
        return _Pending(call.single)

    def __repr__(self) -> str:
        return f"InferenceRequest(model_name={self._model_name!r}, id={self._request_id!r})"


def get_input_tensor_by_name(inference_request: InferenceRequest, name: str) -> Tensor | None:
    """Return the input tensor called ``name`` of a request, or None."""
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


class _Pending(Generic[_T]):
    """An awaitable whose value is computed on a thread of its own, started at creation."""

    def __init__(self, function: Callable[[], _T]) -> None:
        self._future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        threading.Thread(
            target=self._run, args=(function,), name="pb_utils-async-exec", daemon=True
        ).start()

    def _run(self, function: Callable[[], _T]) -> None:
        try:
            self._future.set_result(function())
        except BaseException as exc:
            self._future.set_exception(exc)

    def __await__(self) -> Generator[Any, None, _T]:
        return asyncio.wrap_future(self._future).__await__()

    def result(self, timeout: float | None = None) -> _T:
        """Block until the value is ready and return it."""
        return self._future.result(timeout)


class _Refused(Exception):
    """A BLS request the server refused (it never ran): the Python backend words those
    ``Model <name> - Error when running inference: <message>``."""

    def __init__(self, error: ServerError) -> None:
        super().__init__(error.message)
        self.error = error


class _BLSCall:
    """One BLS request in flight.

    For a decoupled run (which must start at once) a thread moves the responses into a queue;
    otherwise the caller iterates the runtime's responses itself.  The request's time-out is
    the server's (it expires the request while queued, as Triton's core does); the caller
    waits for the answer however long the model takes, as on Triton 2.51 (a BLS request with
    a 1 ms time-out to a model that runs for a second gets its response).
    """

    def __init__(self, hooks: Any, request: CoreRequest, timeout_us: int, threaded: bool) -> None:
        self._request = request
        self._hooks = hooks
        self._done = False
        self._lock = threading.Lock()
        self._queue: queue.Queue[CoreResponse | BaseException | None] | None = None
        self._responses: Iterator[CoreResponse] | None = None
        self._ahead: list[CoreResponse | BaseException | None] = []  # taken from the queue
        if threaded:
            self._queue = queue.Queue()
            threading.Thread(
                target=self._pump, args=(hooks,), name=f"bls:{request.model_name}", daemon=True
            ).start()

    def _submit(self, hooks: Any) -> Iterator[CoreResponse]:
        """Start the request; what the server refuses (it never runs) is a :class:`_Refused`,
        in the Python backend's words for a model (version) that is not ready."""
        request = self._request
        try:
            responses = iter(hooks.infer(request))
            first = next(responses, None)
        except ServerError as exc:
            if exc.kind is ErrorKind.NOT_FOUND:  # no such model or version ready
                exc = ServerError(
                    ErrorKind.INTERNAL,
                    "Failed for execute the inference request. Model "
                    f"'{request.model_name}' is not ready.",
                )
            raise _Refused(exc) from exc
        if first is None:
            return
        yield first
        yield from responses

    def _pull(self) -> CoreResponse | BaseException | None:
        """Get the next item directly from the runtime (no thread)."""
        try:
            if self._responses is None:
                self._responses = iter(self._submit(self._hooks))
            return next(self._responses)
        except StopIteration:
            return None
        except Exception as exc:
            return exc

    def _pump(self, hooks: Any) -> None:
        sink = self._queue
        assert sink is not None
        try:
            for response in self._submit(hooks):
                sink.put(response)
                if response.final:
                    return
            sink.put(None)
        except BaseException as exc:
            sink.put(exc)

    def cancel(self) -> None:
        self._request.cancel()

    def first_arrived(self) -> None:
        """Wait until the first response (or the end, or a failure) is there (threaded only)."""
        with self._lock:
            if self._queue is not None and not self._done and not self._ahead:
                self._ahead.append(self._queue.get())

    def next(self) -> InferenceResponse | None:
        """Return the next response, or None after the final one."""
        with self._lock:
            if self._done:
                return None
            if self._ahead:
                item = self._ahead.pop()
            else:
                item = self._pull() if self._queue is None else self._queue.get()
            if item is None:
                self._done = True
                return None
            if isinstance(item, BaseException):
                self._done = True
                if isinstance(item, _Refused):
                    return _error_response(
                        f"Model {self._request.model_name} - Error when running inference: "
                        f"{item.error.message}",
                        TritonErrorCode.INTERNAL,
                    )
                if isinstance(item, ServerError):
                    return InferenceResponse(error=TritonError._from_server_error(item))
                return _error_response(
                    f"inference on model '{self._request.model_name}' failed: "
                    f"{type(item).__name__}: {item}",
                    TritonErrorCode.INTERNAL,
                )
            if item.final:
                self._done = True
            return InferenceResponse._from_core(item)

    def single(self) -> InferenceResponse:
        """Wait for the whole run and return its one response."""
        responses: list[InferenceResponse] = []
        while (response := self.next()) is not None:
            responses.append(response)
        for response in responses:
            if response.has_error():
                return response
        with_outputs = [r for r in responses if r.output_tensors()]
        if len(with_outputs) > 1:
            return _error_response(
                f"model '{self._request.model_name}' sent {len(with_outputs)} responses; use "
                "exec(decoupled=True) to receive the responses of a decoupled model",
                TritonErrorCode.INVALID_ARG,
            )
        if with_outputs:
            return with_outputs[0]
        return responses[-1] if responses else InferenceResponse()


def _error_response(message: str, code: TritonErrorCode) -> InferenceResponse:
    return InferenceResponse(error=TritonError(message, code))


class ResponseIterator:
    """The responses of a BLS request run with ``decoupled=True``.

    Iterate with ``for`` (blocking) or ``async for``; the last response may have no outputs.
    """

    def __init__(self, call: _BLSCall, wait_for_first: bool = False) -> None:
        self._call = call
        if wait_for_first:
            call.first_arrived()

    def __iter__(self) -> Iterator[InferenceResponse]:
        return self

    def __next__(self) -> InferenceResponse:
        response = self._call.next()
        if response is None:
            raise StopIteration
        return response

    def __aiter__(self) -> AsyncIterator[InferenceResponse]:
        return self

    async def __anext__(self) -> InferenceResponse:
        response = await _Pending(self._call.next)
        if response is None:
            raise StopAsyncIteration
        return response

    def cancel(self) -> None:
        """Ask the model to stop working on the request."""
        self._call.cancel()


def serialize_byte_tensor(input_tensor: npt.NDArray[Any]) -> bytes | tuple[()] | None:
    """Serialize a BYTES tensor as the Python backend's helper does.

    Parameters
    ----------
    input_tensor : numpy.ndarray
        An ``object`` array (``bytes`` elements as they are, anything else as the UTF-8 of its
        ``str()``) or a ``numpy.bytes_`` array.

    Returns
    -------
    bytes or tuple or None
        Each element in C order as a 4-byte little-endian length and its bytes; an empty
        tuple for an empty array and None for an array of another dtype (as Triton's
        ``triton_python_backend_utils`` returns; ``tritonclient.utils``' version differs).
    """
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype != np.object_ and input_tensor.dtype.type is not np.bytes_:
        return None
    parts: list[bytes] = []
    for item in input_tensor.ravel(order="C").tolist():
        data = item if type(item) is bytes else str(item).encode("utf-8")
        parts += (struct.pack("<I", len(data)), data)
    return b"".join(parts)


def get_model_dir() -> str:
    """Return the folder of the calling model version's files (``<repository>/<model>/<n>``).

    Raises
    ------
    TritonModelException
        When called outside model code.
    """
    context = _context.current()
    if context is None or not context.model_dir:
        raise TritonModelException("get_model_dir() is available only to model code")
    return context.model_dir


# -- model control -------------------------------------------------------------------------------
def _control_runtime(what: str) -> Any:
    hooks, phase = _context.runtime()
    # Triton 2.51 answers is_model_ready() in finalize() (read on the real server).
    if phase == "auto_complete" or (phase == "finalize" and what != "is_model_ready"):
        raise TritonModelException(
            f"{what} is not supported in the {phase}"
            + ("_config" if phase == "auto_complete" else "")
            + " function"
        )
    if hooks is None:
        raise TritonModelException(f"{what} is not available: no server is attached")
    return hooks


def load_model(model_name: str, config: str = "", files: Mapping[str, bytes] | None = None) -> None:
    """Load (or reload) a model of the server's repository.

    Parameters
    ----------
    model_name : str
        The model to load.
    config : str, optional
        An override model configuration, in JSON.
    files : dict of str to bytes, optional
        Override model files, keyed ``"file:<path in the model folder>"`` (needs ``config``).

    Raises
    ------
    TritonModelException
        If loading fails.
    """
    name, text_config = _pybind.text_arg(model_name), _pybind.text_arg(config)
    if name is None or text_config is None:
        raise _pybind.incompatible(
            "load_model",
            "(model_name: str, config: str = '', files: object = None) -> None",
            (model_name, config, files),
        )
    hooks = _control_runtime("load_model")
    try:
        hooks.load_model(name, text_config, dict(files) if files is not None else None)
    except ServerError as exc:
        raise TritonModelException(exc.message) from exc


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """Unload a model.

    Parameters
    ----------
    model_name : str
        The model to unload.
    unload_dependents : bool, optional
        Accepted for compatibility; this server has no model dependencies (ensembles), so there
        is nothing more to unload.

    Raises
    ------
    TritonModelException
        If unloading fails.
    """
    name = _pybind.text_arg(model_name)
    if name is None or not isinstance(unload_dependents, (bool, np.bool_)):
        raise _pybind.incompatible(
            "unload_model",
            "(model_name: str, unload_dependents: bool = False) -> None",
            (model_name, unload_dependents),
        )
    hooks = _control_runtime("unload_model")
    try:
        hooks.unload_model(name)
    except ServerError as exc:
        raise TritonModelException(exc.message) from exc


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    """Whether a model (version, given as a string; "" for the default) is ready.

    Raises
    ------
    TritonModelException
        If the server cannot answer.
    """
    name, version = _pybind.text_arg(model_name), _pybind.text_arg(model_version)
    if name is None or version is None:
        raise _pybind.incompatible(
            "is_model_ready",
            "(model_name: str, model_version: str = '') -> bool",
            (model_name, model_version),
        )
    hooks = _control_runtime("is_model_ready")
    try:
        return bool(hooks.is_model_ready(name, version))
    except ServerError as exc:
        raise TritonModelException(exc.message) from exc


# -- configuration -------------------------------------------------------------------------------
def get_input_config_by_name(model_config: Mapping[str, Any], name: str) -> Any:
    """Return the configuration dict of input ``name`` in ``model_config``, or None."""
    for entry in model_config.get("input", []):
        if entry.get("name") == name:
            return entry
    return None


def get_output_config_by_name(model_config: Mapping[str, Any], name: str) -> Any:
    """Return the configuration dict of output ``name`` in ``model_config``, or None."""
    for entry in model_config.get("output", []):
        if entry.get("name") == name:
            return entry
    return None


def using_decoupled_model_transaction_policy(model_config: Mapping[str, Any]) -> bool:
    """Whether ``model_config`` sets the decoupled transaction policy."""
    policy = model_config.get("model_transaction_policy") or {}
    return bool(policy.get("decoupled", False))


def triton_string_to_numpy(triton_type_string: str) -> Any:
    """Map a model-config datatype (``"TYPE_FP32"``) to its numpy type.

    Raises
    ------
    KeyError
        For an unknown name.
    """
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def triton_to_numpy_type(data_type: int) -> Any:
    """Map a ``TRITONSERVER_DataType`` number to its numpy type (None when unknown)."""
    name = _TRITON_TYPE_NAMES.get(int(data_type))
    return None if name is None else triton_to_np_dtype(name)


def numpy_to_triton_type(data_type: Any) -> int | None:
    """Map a numpy dtype or type to its ``TRITONSERVER_DataType`` number (None when none)."""
    name = np_to_triton_dtype(data_type)
    return None if name is None else _TRITON_TYPE_CODES[name]


def _dims(value: Any) -> list[int]:
    return [int(d) for d in value]


class ModelConfig:
    """The model configuration that ``auto_complete_config`` completes.

    Parameters
    ----------
    model_config : dict or str
        The configuration in Triton's JSON form (a dict or its JSON string).
    """

    _INPUT_PROPERTIES = ("name", "data_type", "dims", "optional")
    _OUTPUT_PROPERTIES = ("name", "data_type", "dims")

    def __init__(self, model_config: Mapping[str, Any] | str) -> None:
        config: dict[str, Any] = (
            json.loads(model_config) if isinstance(model_config, str) else dict(model_config)
        )
        config.setdefault("name", "")
        config.setdefault("max_batch_size", 0)
        config["input"] = list(config.get("input") or [])
        config["output"] = list(config.get("output") or [])
        self._model_config = config

    def as_dict(self) -> dict[str, Any]:
        """Return the configuration as a dict (treat it as read-only)."""
        return self._model_config

    def _name(self) -> str:
        return str(self._model_config.get("name", ""))

    def set_max_batch_size(self, max_batch_size: int) -> None:
        """Set ``max_batch_size``.

        Raises
        ------
        ValueError
            If the configuration already specifies a larger ``max_batch_size``.
        """
        current = int(self._model_config.get("max_batch_size", 0))
        if current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in "
                f"auto-complete-config function for model '{self._name()}' specified "
                f"max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = int(max_batch_size)

    def set_dynamic_batching(self) -> None:
        """Use the dynamic batcher (with default settings) unless it is already set.

        Raises
        ------
        ValueError
            If the configuration uses sequence batching or ensemble scheduling.
        """
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{other}', but "
                    f"auto-complete-config function for model '{self._name()}' tries to set "
                    "scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def set_model_transaction_policy(self, transaction_policy_dict: Mapping[str, Any]) -> None:
        """Set the model transaction policy (``{"decoupled": True}``).

        Raises
        ------
        ValueError
            For a property other than ``decoupled``, or when the configuration already sets
            another ``decoupled`` value.
        """
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = bool(transaction_policy_dict["decoupled"])
            if "decoupled" in policy and bool(policy["decoupled"]) != wanted:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model "
                    f"'{self._name()}', which is already set to '{policy['decoupled']}'."
                )
            policy["decoupled"] = wanted

    def add_input(self, input: Mapping[str, Any]) -> None:
        """Add an input (``name``, ``data_type``, ``dims``, optional ``optional``).

        Raises
        ------
        ValueError
            For another property, a missing one, or an input of that name that already exists
            with another ``data_type``, ``dims`` or ``optional``.
        """
        self._add("input", input, self._INPUT_PROPERTIES)

    def add_output(self, output: Mapping[str, Any]) -> None:
        """Add an output (``name``, ``data_type``, ``dims``).

        Raises
        ------
        ValueError
            For another property, a missing one, or an output of that name that already exists
            with another ``data_type`` or ``dims``.
        """
        self._add("output", output, self._OUTPUT_PROPERTIES)

    def _add(self, kind: str, tensor: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        model = self._name()
        if not isinstance(tensor, Mapping):
            raise ValueError(
                f"{kind} in auto-complete-config function for model '{model}' must be a dict"
            )
        label = f"{kind} '{tensor.get('name', '')}'"
        for key in tensor:
            if key not in allowed:
                listed = ", ".join(f"'{p}'" for p in allowed[:-1]) + f" and '{allowed[-1]}'"
                raise ValueError(
                    f"{label} in auto-complete-config function for model '{model}' contains "
                    f"property other than {listed}."
                )
        for key in ("name", "data_type", "dims"):
            if key not in tensor:
                where = f"{kind}" if key == "name" else label
                raise ValueError(
                    f"{where} in auto-complete-config function for model '{model}' is missing "
                    f"'{key}' property."
                )
        new = dict(tensor)
        new["dims"] = _dims(new["dims"])
        for current in self._model_config[kind]:
            if current.get("name") != new["name"]:
                continue
            current_type = current.get("data_type", "TYPE_INVALID")
            if current_type not in ("", "TYPE_INVALID") and current_type != new["data_type"]:
                raise ValueError(
                    f"unable to load model '{model}', configuration expects datatype "
                    f"{current_type} for {kind} '{new['name']}', model provides "
                    f"{new['data_type']}"
                )
            current_dims = _dims(current.get("dims") or [])
            if current_dims and current_dims != new["dims"]:
                raise ValueError(
                    f"model '{model}', tensor '{new['name']}': the model expects dims "
                    f"{new['dims']} but the model configuration specifies dims {current_dims}"
                )
            if (
                "optional" in current
                and "optional" in new
                and bool(current["optional"]) != bool(new["optional"])
            ):
                raise ValueError(
                    f"model '{model}', tensor '{new['name']}': the model expects optional "
                    f"{new['optional']} but the model configuration specifies optional "
                    f"{current['optional']}"
                )
            current["data_type"] = new["data_type"]
            current["dims"] = new["dims"]
            if "optional" in new:
                current["optional"] = new["optional"]
            return
        self._model_config[kind].append(new)


# -- logging -------------------------------------------------------------------------------------
class LogLevel(enum.IntEnum):
    """Log levels of :class:`Logger`."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


_PY_LEVELS = {
    LogLevel.INFO: logging.INFO,
    LogLevel.WARNING: logging.WARNING,
    LogLevel.ERROR: logging.ERROR,
    LogLevel.VERBOSE: logging.DEBUG,
}


_Level = LogLevel  # Logger.LogLevel shadows the name inside the class


def _emit(message: Any, level: LogLevel) -> None:
    context = _context.current()
    extra = {
        "model_name": context.model_name if context is not None else "",
        "model_version": context.model_version if context is not None else -1,
    }
    # stacklevel 3: the record names the model's line, not Logger's.
    _LOG.log(_PY_LEVELS[level], "%s", message, stacklevel=3, extra=extra)


class Logger:
    """Write to the server log (Python logger ``"mock_server.model"``).

    ``log_verbose`` logs at ``logging.DEBUG``; records carry ``model_name`` and
    ``model_version`` attributes.
    """

    INFO: ClassVar[_Level] = LogLevel.INFO
    WARNING: ClassVar[_Level] = LogLevel.WARNING
    ERROR: ClassVar[_Level] = LogLevel.ERROR
    VERBOSE: ClassVar[_Level] = LogLevel.VERBOSE
    LogLevel: ClassVar[type[_Level]] = LogLevel

    @staticmethod
    def log(message: str, level: _Level = _Level.INFO) -> None:
        """Log ``message`` at ``level`` (a ``Logger.LogLevel``; INFO by default)."""
        text = _pybind.text_arg(message)
        if text is None or not isinstance(level, LogLevel):
            raise _pybind.incompatible(
                "log",
                "(message: str, level: Logger.LogLevel = <LogLevel.INFO: 0>) -> None",
                (message, level),
            )
        _emit(text, level)

    @staticmethod
    def log_info(message: str) -> None:
        """Log ``message`` at INFO level."""
        _emit(_log_text("log_info", message), LogLevel.INFO)

    @staticmethod
    def log_warn(message: str) -> None:
        """Log ``message`` at WARNING level."""
        _emit(_log_text("log_warn", message), LogLevel.WARNING)

    @staticmethod
    def log_error(message: str) -> None:
        """Log ``message`` at ERROR level."""
        _emit(_log_text("log_error", message), LogLevel.ERROR)

    @staticmethod
    def log_verbose(message: str) -> None:
        """Log ``message`` at VERBOSE level (``logging.DEBUG``)."""
        _emit(_log_text("log_verbose", message), LogLevel.VERBOSE)


def _log_text(function: str, message: Any) -> str:
    text = _pybind.text_arg(message)
    if text is None:
        raise _pybind.incompatible(function, "(message: str) -> None", (message,))
    return text
