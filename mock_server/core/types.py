"""Core request, response and tensor types, shared by the frontends, schedulers and backends.

Tensors hold host numpy arrays: fixed-size datatypes as arrays of the datatype's numpy dtype
(see :mod:`tritonclient.utils._dtypes`), BYTES as object arrays of ``bytes``.  Shapes are
always the full request shape (batch dimension included for batching models).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tritonclient._codec.types import DecodedInferRequest, ParamValue, SharedMemoryRef

from .errors import ServerError

__all__ = ["CancelFlag", "InferRequest", "InferResponse", "ParamValue", "RequestedOutput", "Tensor"]


class CancelFlag:
    """A request's cancellation flag: ``threading.Event``'s interface, cheaper to create.

    Every request carries one and almost none is ever waited on, so the lock and condition an
    ``Event`` needs are made only when :meth:`wait` is first called.
    """

    __slots__ = ("_event", "_set")

    def __init__(self) -> None:
        self._set = False
        self._event: threading.Event | None = None

    def is_set(self) -> bool:
        """True once :meth:`set` was called."""
        return self._set

    def set(self) -> None:
        """Raise the flag and wake every :meth:`wait`."""
        self._set = True
        event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the flag is set or ``timeout`` seconds pass; return :meth:`is_set`."""
        if self._set:
            return True
        with _EVENT_LOCK:
            if self._event is None:
                self._event = threading.Event()
                if self._set:  # set() ran before the event existed
                    self._event.set()
        return self._event.wait(timeout) or self._set


_EVENT_LOCK = threading.Lock()


@dataclass
class Tensor:
    """A named tensor with its protocol datatype and shape.

    Attributes
    ----------
    name : str
        Tensor name.
    datatype : str
        Protocol datatype string (``"FP32"``, ``"BYTES"``, ...).
    shape : tuple of int
        The tensor's shape.
    data : numpy.ndarray
        The values, shaped as ``shape``.
    parameters : dict
        Tensor-level parameters (e.g. shared-memory placement, classification).
    """

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: np.ndarray[Any, Any]
    parameters: dict[str, ParamValue] = field(default_factory=dict)


@dataclass
class RequestedOutput:
    """An output the client asked for, with its parameters (``classification``, ...).

    ``shared_memory`` is where the client placed it, when it did: the frontend writes it there
    (:meth:`~mock_server.core.shm.SharedMemoryRegistry.write_outputs`), unless a backend wrote
    it in place already (a model in a stub process maps the region itself).
    """

    name: str
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    shared_memory: SharedMemoryRef | None = None


@dataclass
class InferResponse:
    """One response to an inference request.

    Attributes
    ----------
    model_name, model_version : str
        The model and version that produced it.
    id : str
        The request id it answers.
    outputs : list of Tensor
        The output tensors (empty for an error or an empty final response).
    parameters : dict
        Response parameters set by the model.
    error : ServerError or None
        Set when the request failed; then ``outputs`` is empty.
    final : bool
        True on the last response for the request (Triton's ``COMPLETE_FINAL`` flag).
    model_error : bool
        True when ``error`` is one the model itself answered with (a Python model's
        ``InferenceResponse(error=...)``): Triton's Python backend reports such a request as
        a successful one in the statistics and metrics.  False (the default) for a failed
        request.
    """

    model_name: str
    model_version: str
    id: str = ""
    outputs: list[Tensor] = field(default_factory=list)
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    error: ServerError | None = None
    final: bool = True
    model_error: bool = False


#: Receives every response of a request, from whichever thread produced it.
ResponseCallback = Callable[[InferResponse], None]

#: Receives the compute input, infer and output durations (ns) of a successful request.
StatsListener = Callable[[int, int, int], None]


class Assist:
    """A thread that will block for a request's responses, offering to read them itself.

    The waiting thread (:meth:`~.server.CoreServer.infer_iter`) puts one on the request before
    submitting it.  An instance whose responses arrive on a channel any thread may read (a stub
    process's) offers its reader (:meth:`offer`): the waiting thread then reads and dispatches what
    arrives (:meth:`wait`) instead of sleeping until the channel's own reader thread hands the
    responses over, which on a busy machine costs a good part of a small request's round trip
    (a wake-up of each thread, and the GIL).  The offer keeps the channel's own reader away
    from the first reply (``hold``) until the waiting thread reads or gives up
    (:meth:`close`), so that a reply quicker than the waiting thread does not wake it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reader: Callable[[Callable[[], bool], float | None], bool] | None = None
        self._release: Callable[[], None] | None = None
        self._closed = False

    def offer(
        self,
        reader: Callable[[Callable[[], bool], float | None], bool],
        hold: Callable[[], None],
        release: Callable[[], None],
    ) -> bool:
        """Offer ``reader(done, timeout_s) -> done()``, which reads the channel on the calling
        thread until ``done()`` or ``timeout_s`` passes; ``hold()`` is called now and
        ``release()`` once the waiting thread reads or gives up.  False (nothing held) when
        the waiting thread is gone or another instance offered first."""
        with self._lock:
            if self._closed or self._reader is not None:
                return False
            hold()
            self._reader, self._release = reader, release
        if self._closed:  # closed meanwhile, before there was a hold to release
            self._end_hold()
        return True

    def wait(self, done: Callable[[], bool], timeout_s: float | None) -> bool:
        """Read on this thread until ``done()`` (True) or ``timeout_s`` passes or the channel
        ends (False; the offer then ends, and the responses come through the instance's own
        reader).  False at once when nothing was offered."""
        reader = self._reader
        if reader is None:
            return False
        try:
            if reader(done, timeout_s):
                return True
        finally:
            self._end_hold()
        with self._lock:
            self._reader = None
        return done()

    def close(self) -> None:
        """The waiting thread reads no more for now: release the channel's reader."""
        self._closed = True
        if self._release is not None:  # (an offer made meanwhile sees the flag: see offer)
            self._end_hold()

    def _end_hold(self) -> None:
        with self._lock:
            release, self._release = self._release, None
        if release is not None:
            release()


@dataclass
class InferRequest:
    """An inference request as the core sees it (frontends build these).

    Attributes
    ----------
    model_name : str
        Target model.
    model_version : int
        Target version; -1 selects the model's version policy default (the highest ready).
    id : str
        Client-supplied request id, echoed in responses.
    inputs : list of Tensor
        Input tensors.
    outputs : list of RequestedOutput
        Outputs to return; empty means every output of the model.
    parameters : dict
        Custom request parameters (the reserved ones are parsed into the fields below).
    correlation_id : int or str
        Sequence correlation id; 0 or "" when the request is not part of a sequence.
    sequence_start, sequence_end : bool
        Sequence control flags.
    priority : int
        Scheduling priority level; 0 means the model's default.
    timeout_us : int
        Queue timeout in microseconds; 0 means none.
    response_callback : callable
        Called with each :class:`InferResponse`; the last one has ``final=True``.
    stats_listener : callable or None
        Called with the request's compute durations (input, infer, output; ns) when it
        succeeds, after the model's own statistics are recorded: Triton's secondary statistics
        aggregator, through which an ensemble sums the compute time of its steps.
    assist : Assist or None
        Set by a thread that will block for the responses, for the instance that takes the
        request to offer it the reading of them (see :class:`Assist`).
    """

    model_name: str
    model_version: int = -1
    id: str = ""
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[RequestedOutput] = field(default_factory=list)
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    correlation_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    timeout_us: int = 0
    response_callback: ResponseCallback | None = None
    cancelled: CancelFlag = field(default_factory=CancelFlag)
    stats_listener: StatsListener | None = None
    assist: Assist | None = None

    @classmethod
    def from_decoded(
        cls,
        decoded: DecodedInferRequest,
        forwarded: dict[str, ParamValue] | None = None,
    ) -> InferRequest:
        """The core's request for one a frontend decoded (either protocol).

        Parameters
        ----------
        decoded : DecodedInferRequest
            From the codec's HTTP or gRPC decoder.
        forwarded : dict, optional
            Parameters taken from the request's headers (header forwarding); they win over
            request parameters of the same name, as in Triton.
        """
        parameters = decoded.parameters
        if forwarded:
            parameters = {**parameters, **forwarded}
        return cls(
            model_name=decoded.model_name,
            model_version=decoded.model_version,
            id=decoded.id,
            inputs=[
                Tensor(t.name, t.datatype, t.shape, t.data, t.parameters) for t in decoded.inputs
            ],
            outputs=[
                RequestedOutput(o.name, o.parameters, o.shared_memory) for o in decoded.outputs
            ],
            parameters=parameters,
            correlation_id=decoded.correlation_id,
            sequence_start=decoded.sequence_start,
            sequence_end=decoded.sequence_end,
            priority=decoded.priority,
            timeout_us=decoded.timeout_us,
        )

    def cancel(self) -> None:
        """Ask the server to stop working on this request (models see ``is_cancelled()``)."""
        self.cancelled.set()

    def input(self, name: str) -> Tensor | None:
        """Return the input named ``name``, or None."""
        for tensor in self.inputs:
            if tensor.name == name:
                return tensor
        return None
