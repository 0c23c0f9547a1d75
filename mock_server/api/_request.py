"""Inference requests of the in-process API."""

from __future__ import annotations

import asyncio
import queue
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.types import InferRequest
from ._enums import RequestFlag
from ._errors import InvalidArgumentError
from ._tensor import DeviceOrMemoryType, MemoryAllocator, Tensor, parse_device_or_memory_type

if TYPE_CHECKING:
    from ._model import Model

__all__ = ["InferenceRequest"]

_KNOWN_FLAGS = int(RequestFlag.SEQUENCE_START | RequestFlag.SEQUENCE_END)


@dataclass
class InferenceRequest:
    """Dataclass representing an inference request.

    Inference request objects are created using Model factory methods. They contain input
    parameters and input data as well as configuration for response output memory allocation.

    Parameters
    ----------
    model : Model
        Model instance associated with the inference request.
    request_id : Optional[str], default None
        Unique identifier for the inference request.
    flags : int, default 0
        Flags indicating options for the inference request: ``RequestFlag.SEQUENCE_START`` (1)
        and ``RequestFlag.SEQUENCE_END`` (2), as Triton's ``TRITONSERVER_RequestFlag``.
    correlation_id : Optional[Union[int, str]], default None
        Correlation ID associated with the inference request (sequence models).
    priority : int, default 0
        Priority of the inference request (0: the model's default).
    timeout : int, default 0
        Timeout for the inference request in microseconds (0: none).
    inputs : Dict[str, Union[Tensor, Any]], default {}
        Dictionary of input names and corresponding input tensors or data.  Anything that is
        not a :class:`Tensor` is converted: lists and scalars through ``numpy.array``, numpy
        arrays of ``str_``/``bytes_``/``object`` to BYTES tensors, other numpy arrays and
        DLPack producers through :meth:`Tensor.from_dlpack`.
    parameters : Dict[str, Union[str, int, bool, float]], default {}
        Dictionary of parameters for the inference request.
    output_memory_type : Optional[DeviceOrMemoryType], default None
        Type of memory to allocate for inference response output. If not provided memory type
        will be chosen based on backend / model preference with MemoryType.CPU as fallback.
        Memory type can be given as a string, MemoryType, tuple [MemoryType, memory_type__id],
        or tuple[DLDeviceType, device_id].  Only host memory is supported here unless an
        ``output_memory_allocator`` is given.
    output_memory_allocator : Optional[MemoryAllocator], default None
        Memory allocator to use for inference response output.  Outputs are copied into the
        host buffers it returns.  If not provided, outputs stay in host memory owned by the
        response.
    response_queue : Optional[Union[queue.SimpleQueue, asyncio.Queue]], default None
        Queue for asynchronous handling of inference responses. If provided Inference
        responses will be added to the queue in addition to the response iterator. Must be
        queue.SimpleQueue for non asyncio requests and asyncio.Queue for asyncio requests.

    Examples
    --------
    >>> request = server.model("identity_fp16").create_request()
    >>> request.inputs["INPUT0"] = numpy.array([[1.0]]).astype(numpy.float16)
    >>> for response in server.model("identity_fp16").infer(request):
    ...     print(numpy.from_dlpack(response.outputs["OUTPUT0"]))
    [[1.]]
    """

    model: Model
    request_id: str | None = None
    flags: int = 0
    correlation_id: int | str | None = None
    priority: int = 0
    timeout: int = 0
    inputs: dict[str, Tensor | Any] = field(default_factory=dict)
    parameters: dict[str, str | int | bool | float] = field(default_factory=dict)
    output_memory_type: DeviceOrMemoryType | None = None
    output_memory_allocator: MemoryAllocator | None = None
    response_queue: queue.SimpleQueue[Any] | asyncio.Queue[Any] | None = None

    def _to_core(self) -> InferRequest:
        """Validate the request and build the core's :class:`InferRequest` (no callback yet).

        Raises
        ------
        InvalidArgumentError
            For a malformed field or an input that cannot be converted.
        """
        if self.request_id is not None and not isinstance(self.request_id, str):
            raise InvalidArgumentError("request_id must be a string")
        flags = self.flags
        if isinstance(flags, bool) or not isinstance(flags, int) or flags & ~_KNOWN_FLAGS:
            raise InvalidArgumentError(
                f"invalid request flags {flags!r}; expected a combination of "
                "RequestFlag.SEQUENCE_START (1) and RequestFlag.SEQUENCE_END (2)"
            )
        correlation_id = self.correlation_id
        if correlation_id is None:
            correlation_id = 0
        elif isinstance(correlation_id, bool) or not isinstance(correlation_id, (int, str)):
            raise InvalidArgumentError("correlation_id must be an int or a str")
        elif isinstance(correlation_id, int) and correlation_id < 0:
            raise InvalidArgumentError("correlation_id must not be negative")
        for what, value in (("priority", self.priority), ("timeout", self.timeout)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"{what} must be a non-negative integer")
        parameters: dict[str, str | int | bool | float] = {}
        for key, parameter in self.parameters.items():
            if not isinstance(key, str):
                raise InvalidArgumentError(f"request parameter names must be strings: {key!r}")
            if not isinstance(parameter, (str, int, bool, float)):
                raise InvalidArgumentError(
                    f"request parameter '{key}' has unsupported type "
                    f"{type(parameter).__name__}; expected str, int, bool or float"
                )
            parameters[key] = parameter
        if self.output_memory_type is not None:
            parse_device_or_memory_type(self.output_memory_type)
        if self.output_memory_allocator is not None and not isinstance(
            self.output_memory_allocator, MemoryAllocator
        ):
            raise InvalidArgumentError("output_memory_allocator must be a MemoryAllocator")
        inputs = []
        for name, data in self.inputs.items():
            if not isinstance(name, str):
                raise InvalidArgumentError(f"input names must be strings: {name!r}")
            inputs.append(Tensor._from_object(data)._to_core(name))
        return InferRequest(
            model_name=self.model.name,
            model_version=self.model.version,
            id=self.request_id or "",
            inputs=inputs,
            parameters=parameters,
            correlation_id=correlation_id,
            sequence_start=bool(flags & RequestFlag.SEQUENCE_START),
            sequence_end=bool(flags & RequestFlag.SEQUENCE_END),
            priority=self.priority,
            timeout_us=self.timeout,
        )
