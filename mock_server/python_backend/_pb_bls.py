"""Business-logic scripting: a request a model sends to another model (``InferenceRequest.exec``,
``async_exec``) and the iterator over a decoupled model's responses (``ResponseIterator``).

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any, Generic, TypeVar

from ..core.errors import ErrorKind, ServerError
from ..core.types import InferRequest as CoreRequest
from ..core.types import InferResponse as CoreResponse
from ._pb_response import InferenceResponse
from ._pb_types import TritonError, TritonErrorCode

_T = TypeVar("_T")


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
