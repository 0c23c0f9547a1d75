"""``pb_utils.InferenceRequest``: what ``execute`` receives, and the request a model sends to
another model (BLS, run by :mod:`._pb_bls`).

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.types import InferRequest as CoreRequest
from ..core.types import RequestedOutput
from . import _context, _pybind
from ._errors import TritonModelException
from ._pb_bls import ResponseIterator, _BLSCall, _Pending
from ._pb_response import InferenceResponseSender
from ._pb_tensor import Tensor, _tensor_from_core, _tensor_to_core
from ._pb_types import (
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_END,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
    TRITONSERVER_REQUEST_RELEASE_ALL,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    MemoryType,
    _check_parameters,
)


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
        A ``None`` correlation id is refused this way too (the binding's ``.none(false)``).
    TritonModelException
        For a correlation id that is neither an int nor a str (nor None), or parameters that
        are not a dict of str to bool, int or str.
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
            # ``.none(false)`` in the binding: None is refused before the body's type test.
            or correlation_id is None
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
