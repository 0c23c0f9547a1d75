"""Inference responses and the iterators that deliver them.

The core calls a request's ``response_callback`` from its own threads.  :class:`ResponseIterator`
hands responses over through a :class:`queue.SimpleQueue`; :class:`AsyncResponseIterator`
schedules them onto its event loop with :meth:`asyncio.AbstractEventLoop.call_soon_threadsafe`,
so awaiting a response never blocks the loop.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import queue
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.types import InferRequest, InferResponse
from ._enums import MemoryType
from ._errors import InternalError, InvalidArgumentError, TritonError, to_triton_error
from ._tensor import DeviceOrMemoryType, MemoryAllocator, Tensor, parse_device_or_memory_type

if TYPE_CHECKING:
    from ._model import Model

__all__ = ["AsyncResponseIterator", "InferenceResponse", "ResponseIterator"]

log = logging.getLogger("mock_server.api")


@dataclass
class InferenceResponse:
    """Dataclass representing an inference response.

    Inference response objects are returned from response iterators which are in turn returned
    from model inference methods. They contain output data, output parameters, any potential
    errors reported and a flag to indicate if the response is the final one for a request.

    Parameters
    ----------
    model : Model
        Model instance associated with the response.
    request_id : Optional[str], default None
        Unique identifier for the inference request (if provided)
    parameters : dict[str, str | int | bool], default {}
        Additional parameters associated with the response.
    outputs : dict [str, Tensor], default {}
        Output tensors for the inference.
    error : Optional[TritonError], default None
        Error (if any) that occurred in the processing of the request.
    classification_label : Optional[str], default None
        Classification label associated with the inference. Not currently supported.
    final : bool, default False
        Flag indicating if the response is final
    """

    model: Model
    request_id: str | None = None
    parameters: dict[str, str | int | bool | float] = field(default_factory=dict)
    outputs: dict[str, Tensor] = field(default_factory=dict)
    error: TritonError | None = None
    classification_label: str | None = None
    final: bool = False


class _Converter:
    """Turns core responses into :class:`InferenceResponse` objects (on the core's threads)."""

    def __init__(
        self,
        model: Model,
        output_memory_type: DeviceOrMemoryType | None,
        output_memory_allocator: MemoryAllocator | None,
    ) -> None:
        self._model = model
        self._allocator = output_memory_allocator
        self._memory = (
            parse_device_or_memory_type(output_memory_type)
            if output_memory_type is not None
            else (MemoryType.CPU, 0)
        )
        self._models: dict[tuple[str, str], Model] = {}

    def _model_for(self, name: str, version: str) -> Model:
        key = (name, version)
        found = self._models.get(key)
        if found is None:
            found = copy.copy(self._model)
            found.name = name
            if version.isdigit():
                found.version = int(version)
            self._models[key] = found
        return found

    def convert(self, response: InferResponse) -> InferenceResponse:
        result = InferenceResponse(
            self._model_for(response.model_name, response.model_version),
            request_id=response.id,
            parameters=dict(response.parameters),
            final=response.final,
        )
        if response.error is not None:
            result.error = to_triton_error(response.error)
        try:
            outputs = {tensor.name: Tensor._from_core(tensor) for tensor in response.outputs}
            if self._allocator is not None:
                memory_type, memory_type_id = self._memory
                outputs = {
                    name: tensor._copy_into(
                        self._allocator.allocate(tensor.size, memory_type, memory_type_id)
                    )
                    for name, tensor in outputs.items()
                }
            result.outputs = outputs
        except TritonError as exc:
            result.error = result.error or exc
        except Exception as exc:
            result.error = result.error or InternalError(
                f"Unexpected error in creating response object: {exc}"
            )
        return result


class _Delivery:
    """What both iterators do with a request: take its responses on the core's threads,
    convert them, and hand each one over to ``_deliver`` (the subclass says how)."""

    def __init__(
        self,
        model: Model,
        request: InferRequest,
        raise_on_error: bool,
        output_memory_type: DeviceOrMemoryType | None,
        output_memory_allocator: MemoryAllocator | None,
    ) -> None:
        self._model = model
        self._request: InferRequest | None = request
        self._raise_on_error = raise_on_error
        self._complete = False
        self._converter = _Converter(model, output_memory_type, output_memory_allocator)
        request.response_callback = self._response_callback

    def cancel(self) -> None:
        """Cancel an inflight request.

        Cancels an in-flight request. Cancellation is handled on a best effort basis and may
        not prevent execution of a request if it is already started or completed.  Models see
        it through ``request.is_cancelled()``; requests still queued fail with
        :class:`CancelledError`.

        Examples
        --------
        responses = server.model("slow").infer(inputs={"INPUT0": numpy.array([1], numpy.int32)})

        responses.cancel()
        """
        request = self._request
        if request is not None:
            request.cancel()

    def _received(self, response: InferenceResponse) -> InferenceResponse:
        """``response`` as ``__next__``/``__anext__`` return it (its error raised if asked)."""
        self._complete = response.final
        if response.error is not None and self._raise_on_error:
            raise response.error
        return response

    def _response_callback(self, response: InferResponse) -> None:
        if self._request is None:
            log.error("response received after the final response of a request; dropped")
            return
        result = self._converter.convert(response)
        if result.final:
            self._request = None
        self._deliver(result)

    def _deliver(self, response: InferenceResponse) -> None:
        raise NotImplementedError


class ResponseIterator(_Delivery):
    """Response iterator.

    Response iterators are returned from model inference methods and allow users to process
    inference responses in the order they were received for a request.

    Parameters
    ----------
    model : Model
        The model the request was sent to.
    request : InferRequest
        The core request; its ``response_callback`` is set to this iterator's.
    user_queue : Optional[queue.SimpleQueue]
        A queue that receives every response too.
    raise_on_error : bool, default False
        Raise a response's error from ``__next__`` instead of returning the response.
    """

    def __init__(
        self,
        model: Model,
        request: InferRequest,
        user_queue: queue.SimpleQueue[Any] | None = None,
        raise_on_error: bool = False,
        *,
        _output_memory_type: DeviceOrMemoryType | None = None,
        _output_memory_allocator: MemoryAllocator | None = None,
    ) -> None:
        if user_queue is not None and not isinstance(user_queue, (queue.SimpleQueue, queue.Queue)):
            raise InvalidArgumentError("queue.SimpleQueue must be used for response iterator")
        self._user_queue = user_queue
        self._queue: queue.SimpleQueue[InferenceResponse] = queue.SimpleQueue()
        super().__init__(
            model, request, raise_on_error, _output_memory_type, _output_memory_allocator
        )

    def __iter__(self) -> ResponseIterator:
        return self

    def __next__(self) -> InferenceResponse:
        """The next response, waiting for it.

        Raises
        ------
        StopIteration
            After the final response.
        TritonError
            The response's error, when ``raise_on_error`` is set.
        """
        if self._complete:
            raise StopIteration
        return self._received(self._queue.get())

    def _deliver(self, response: InferenceResponse) -> None:
        self._queue.put(response)
        if self._user_queue is not None:
            self._user_queue.put(response)


class AsyncResponseIterator(_Delivery):
    """Asyncio compatible response iterator.

    Response iterators are returned from model inference methods and allow users to process
    inference responses in the order they were received for a request.

    Parameters
    ----------
    model : Model
        The model the request was sent to.
    request : InferRequest
        The core request; its ``response_callback`` is set to this iterator's.
    user_queue : Optional[asyncio.Queue]
        A queue that receives every response too (on the iterator's event loop).
    raise_on_error : bool, default False
        Raise a response's error from ``__anext__`` instead of returning the response.
    loop : Optional[asyncio.AbstractEventLoop]
        The event loop responses are delivered on; by default the running loop, or, when the
        iterator is created outside a running loop, the loop that first awaits it.
    """

    def __init__(
        self,
        model: Model,
        request: InferRequest,
        user_queue: asyncio.Queue[Any] | None = None,
        raise_on_error: bool = False,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        _output_memory_type: DeviceOrMemoryType | None = None,
        _output_memory_allocator: MemoryAllocator | None = None,
    ) -> None:
        if user_queue is not None and not isinstance(user_queue, asyncio.Queue):
            raise InvalidArgumentError("asyncio.Queue must be used for async response iterator")
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self._user_queue = user_queue
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: list[InferenceResponse] = []
        self._queue: asyncio.Queue[InferenceResponse] = asyncio.Queue()
        super().__init__(
            model, request, raise_on_error, _output_memory_type, _output_memory_allocator
        )

    def __aiter__(self) -> AsyncResponseIterator:
        return self

    async def __anext__(self) -> InferenceResponse:
        """The next response, awaiting it without blocking the event loop.

        Raises
        ------
        StopAsyncIteration
            After the final response.
        TritonError
            The response's error, when ``raise_on_error`` is set.
        """
        if self._complete:
            raise StopAsyncIteration
        self._bind_loop()
        return self._received(await self._queue.get())

    def _bind_loop(self) -> None:
        with self._lock:
            if self._loop is not None:
                return
            self._loop = asyncio.get_running_loop()
            pending, self._pending = self._pending, []
        for response in pending:
            self._put(response)

    def _put(self, response: InferenceResponse) -> None:
        self._queue.put_nowait(response)
        if self._user_queue is not None:
            self._user_queue.put_nowait(response)

    def _deliver(self, response: InferenceResponse) -> None:
        # On the core's thread: onto the iterator's loop, or kept until a loop awaits it.
        with self._lock:
            loop = self._loop
            if loop is None:
                self._pending.append(response)
                return
        try:
            loop.call_soon_threadsafe(self._put, response)
        except RuntimeError:
            log.error("event loop of an AsyncResponseIterator is closed; response dropped")
