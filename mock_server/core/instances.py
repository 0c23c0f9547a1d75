"""A loaded model version at run time: its instances, their worker threads, and the response path.

Each instance of the model's ``instance_group`` gets a worker thread that takes one batch at a
time from the scheduler and runs it on the instance, so model code never runs on a frontend's
event loop and instances run concurrently.  Every response passes through
:meth:`ModelVersion._route`, which stamps model name, version and request id, keeps only the
requested outputs (applying the classification extension), and hands the response to the
request's own callback.

Statistics are recorded as Triton's Python backend reports them (``python_be.cc``): once per
executed request when the execution ends, as a success unless the backend failed the request
(``execute`` raised, returned something unusable...).  An error response that the model itself
sent (``InferenceResponse(error=...)``, :attr:`InferResponse.model_error`) is a success there,
and no per-response statistics are reported.  The response of a non-decoupled request
produced during the execution is handed over after the statistics are recorded, so a client
that has its answer reads statistics that count it.  Requests that fail before reaching the
model (queue rejection, cancellation, unload) count as failures when they fail.
"""

from __future__ import annotations

import collections
import heapq
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tritonclient._proto import model_config_pb2 as mc

from .errors import ErrorKind, ServerError
from .scheduler import Pending, Scheduler, make_scheduler
from .settings import TraceSettings
from .stats import ModelStats
from .types import InferRequest, InferResponse, RequestedOutput, ResponseCallback, Tensor
from .validation import RequestChecks

__all__ = [
    "InstanceSpec",
    "ModelInstance",
    "ModelVersion",
    "VersionBase",
    "instance_specs",
    "output_labels",
]

log = logging.getLogger("mock_server.core")

#: Requests with more input bytes than this always go through the queue: packing them for an
#: instance in another process copies their data, which the caller's thread (a frontend's
#: event loop) should not do.
DIRECT_MAX_BYTES = 1 << 20
#: Requests count as sequential (each sent after the previous one's answer, as by one
#: synchronous client) when none has overlapped another for this long.
SEQUENTIAL_NS = 100_000_000


class ModelInstance(Protocol):
    """What the core needs of a backend's model instance.

    An instance may also offer ``compute_window() -> tuple[int, int] | None``: the
    :func:`time.monotonic_ns` readings just before and just after the model's own computation
    in the last ``execute``, which split the execution into Triton's compute input, infer and
    output phases (without it the whole execution counts as compute infer); and
    ``ready() -> bool``, asked when the model's readiness is (its backend's active health
    check; an instance without it is ready while loaded); and
    ``execute_async(requests, done)``: start the execution and return at once, calling
    ``done(rescheduled)`` exactly once, on any thread, when the model's ``execute`` has
    returned (an instance in another process offers it: the caller's thread only sends the
    batch, so an idle instance can take a request straight from the frontend's thread, see
    :meth:`ModelVersion.enqueue`); with it, ``settle()``: called on the same thread right
    after ``execute_async`` when that request is alone in flight and requests have come one
    after another (the sender has nothing else to do), to wait a little for the end there
    instead of returning to sleep; and ``ahead()``: called when a request the idle instance
    will likely take has begun to be read, under the same conditions, to get ready for it
    (a stub process is woken then).
    """

    def execute(self, requests: list[InferRequest]) -> list[InferRequest]: ...

    def finalize(self) -> None: ...


def _compute_window(instance: ModelInstance, start: int, end: int) -> tuple[int, int]:
    """The instance's (compute start, compute end) of its last execution, within [start, end]."""
    window_of: Callable[[], tuple[int, int] | None] | None = getattr(
        instance, "compute_window", None
    )
    window = window_of() if window_of is not None else None
    if window is None:
        return start, end
    compute_start = min(max(window[0], start), end)
    return compute_start, min(max(window[1], compute_start), end)


@dataclass(frozen=True)
class InstanceSpec:
    """One model instance to create: its name, kind ("CPU"/"GPU") and device id."""

    name: str
    kind: str
    device_id: int


def instance_specs(config: mc.ModelConfig) -> list[InstanceSpec]:
    """Expand the (completed) ``instance_group`` list into individual instances."""
    Group = mc.ModelInstanceGroup
    specs: list[InstanceSpec] = []
    for index, group in enumerate(config.instance_group):
        name = group.name or f"{config.name}_{index}"
        count = group.count or 1
        if group.kind == Group.KIND_GPU:
            for gpu in list(group.gpus) or [0]:
                specs.extend(
                    InstanceSpec(f"{name}_{gpu}_{i}" if group.gpus else f"{name}_{i}", "GPU", gpu)
                    for i in range(count)
                )
        else:
            specs.extend(InstanceSpec(f"{name}_{i}", "CPU", 0) for i in range(count))
    return specs or [InstanceSpec(f"{config.name}_0", "CPU", 0)]


def _classify(
    tensor: Tensor, count: int, labels: list[str], batched: bool
) -> Tensor:  # pragma: no branch - small helper
    """Triton's classification extension: top ``count`` entries as "value:index[:label]"."""
    data = np.asarray(tensor.data)
    rows = data.reshape(data.shape[0], -1) if batched and data.ndim > 0 else data.reshape(1, -1)
    out = []
    for row in rows:
        order = np.argsort(-row.astype(np.float64), kind="stable")[:count]
        entries = []
        for index in order.tolist():
            value = row[index]
            text = f"{float(value):f}" if np.issubdtype(row.dtype, np.floating) else f"{value}"
            entry = f"{text}:{index}"
            if index < len(labels):
                entry += f":{labels[index]}"
            entries.append(entry.encode())
        out.append(entries)
    result: np.ndarray[Any, Any] = np.empty((len(out), len(out[0]) if out else 0), np.object_)
    for i, entries in enumerate(out):
        result[i, : len(entries)] = entries
    if not batched:
        result = result.reshape(-1)
    return Tensor(tensor.name, "BYTES", tuple(result.shape), result, dict(tensor.parameters))


def output_labels(config: mc.ModelConfig, model_dir: Path, output: str) -> list[str]:
    """The classification labels of ``output``: the lines of its ``label_filename`` in the
    model's folder (none when it has no such file)."""
    for out in config.output:
        if out.name == output and out.label_filename:
            path = model_dir / out.label_filename
            if path.is_file():
                return path.read_text(encoding="utf-8").splitlines()
    return []


class VersionBase:
    """What a loaded model version and an ensemble version both keep: their identity, the
    configuration with its request checks, statistics, failure counts, and the classification
    labels of their outputs (read from the model's folder on first use)."""

    def __init__(
        self,
        name: str,
        version: int,
        config: mc.ModelConfig,
        stats: ModelStats,
        model_dir: Path,
        failures: collections.Counter[str] | None,
    ) -> None:
        self.name = name
        self.version = version
        self.config = config
        #: The request checks derived from ``config`` (see :func:`validate_request`).
        self.checks = RequestChecks(config)
        self.decoupled = bool(config.model_transaction_policy.decoupled)
        #: Failed requests by metrics reason: REJECTED, CANCELED, BACKEND, OTHER.
        self.failures: collections.Counter[str] = (
            failures if failures is not None else collections.Counter()
        )
        self._stats = stats
        self._model_dir = model_dir
        self._labels: dict[str, list[str]] = {}

    def ahead(self) -> None:
        """A request for this version is on its way (a frontend has looked the model up and
        begun to read it): nothing to get ready by default (an ensemble's steps are found as
        it runs); see :meth:`ModelVersion.ahead`."""

    def _classified(self, tensor: Tensor, wanted: RequestedOutput | None) -> Tensor:
        """``tensor``, or its classification when the request's ``wanted`` output asks for it."""
        count = _class_count(wanted) if wanted is not None else 0
        if not count:
            return tensor
        if tensor.name not in self._labels:
            self._labels[tensor.name] = output_labels(self.config, self._model_dir, tensor.name)
        return _classify(tensor, count, self._labels[tensor.name], self.config.max_batch_size > 0)


class _DeadlineWatch:
    """One thread that cancels running requests whose timeout passes during execution, so the
    model sees ``is_cancelled()`` (queued requests are expired by the schedulers).

    Only running requests are watched (at most the instances' batches), and a request is
    dropped from the watch as soon as it completes, so none is held until its deadline.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, InferRequest]] = []
        self._cond = threading.Condition()
        self._counter = 0
        self._thread: threading.Thread | None = None

    def add(self, deadline_ns: int, request: InferRequest) -> None:
        with self._cond:
            self._counter += 1
            heapq.heappush(self._heap, (deadline_ns, self._counter, request))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()

    def discard(self, request: InferRequest) -> None:
        """Stop watching ``request`` (it completed)."""
        with self._cond:
            for index, entry in enumerate(self._heap):
                if entry[2] is request:
                    last = self._heap.pop()
                    if index < len(self._heap):
                        self._heap[index] = last
                        heapq.heapify(self._heap)
                    self._cond.notify()
                    return

    def watched(self) -> int:
        """How many requests are watched now."""
        with self._cond:
            return len(self._heap)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, _, request = self._heap[0]
                now = time.monotonic_ns()
                if now < deadline:
                    self._cond.wait((deadline - now) / 1e9)
                    continue
                heapq.heappop(self._heap)
            request.cancel()


_deadlines = _DeadlineWatch()


@dataclass
class _Flight:
    """Bookkeeping of one request between enqueue and its final response."""

    pending: Pending
    callback: ResponseCallback | None
    dispatch_ns: int = 0
    exec_end_ns: int = 0
    responses: int = 0
    done: bool = False
    trace_id: int = 0
    trace_levels: tuple[str, ...] = ()
    watched: bool = False  # in the deadline watch
    executing: bool = False  # handed to an instance whose execute has not returned
    failure: str | None = None  # the failure reason, when the request failed
    recorded: bool = False  # counted in the statistics
    held: InferResponse | None = None  # final response kept until the statistics are recorded


class ModelVersion(VersionBase):
    """One loaded version of a model: instances, scheduler, workers and response routing.

    Parameters
    ----------
    name : str
        Model name.
    version : int
        Model version.
    config : ModelConfig
        The completed configuration.
    instances : list
        The created model instances, one worker thread each.
    stats : ModelStats
        Where statistics are recorded.
    model_dir : pathlib.Path
        The model's folder (for output label files).
    trace : TraceSettings or None
        Where requests are sampled for tracing and their traces kept (None: no tracing).
    failures : collections.Counter, optional
        Where failed requests are counted by metrics reason (a new counter by default).
    """

    def __init__(
        self,
        name: str,
        version: int,
        config: mc.ModelConfig,
        instances: list[ModelInstance],
        stats: ModelStats,
        model_dir: Path,
        trace: TraceSettings | None = None,
        *,
        failures: collections.Counter[str] | None = None,
    ) -> None:
        super().__init__(name, version, config, stats, model_dir, failures)
        self._instances = instances
        self._trace = trace
        self._lock = threading.Condition()
        self._flights: dict[int, _Flight] = {}
        #: When a request last arrived with another in flight (``time.monotonic_ns()``):
        #: while requests overlap, the loop that sends one has others to serve.
        self._overlap_ns = 0
        self._stopping = False
        self._output_names = [o.name for o in config.output]
        self.scheduler: Scheduler = make_scheduler(config, len(instances), self._reject)
        # Whether a request may go straight to an idle instance (every instance executes
        # asynchronously; the scheduler says per request whether one is idle).
        self._direct = all(hasattr(i, "execute_async") for i in instances)
        self._workers = [
            threading.Thread(
                target=self._work, args=(index,), name=f"{name}:{version}:{index}", daemon=True
            )
            for index in range(len(instances))
        ]
        for worker in self._workers:
            worker.start()

    # -- entry ----------------------------------------------------------------------------
    def enqueue(self, request: InferRequest, batch_size: int) -> None:
        """Queue a validated request; its responses arrive through its callback."""
        pending = Pending(request=request, batch_size=batch_size)
        flight = _Flight(pending=pending, callback=request.response_callback)
        if self._trace is not None:
            flight.trace_id, flight.trace_levels = self._trace.start(self.name)
        with self._lock:
            if self._stopping:
                raise ServerError.unavailable(
                    f"model '{self.name}' version {self.version} is unloading"
                )
            self._flights[id(request)] = flight
            if len(self._flights) > 1:
                self._overlap_ns = time.monotonic_ns()
        request.response_callback = lambda response: self._route(flight, response)
        if self._direct and _small(request):
            index = self.scheduler.claim_idle()
            if index is not None:
                # Nothing is queued and this instance's worker is idle: the request skips the
                # queue and the worker's wake-up, and the instance's reply ends it on whichever
                # thread reads it (see _finish).
                self._run_direct(index, pending)
                return
        try:
            self.scheduler.enqueue(pending)
        except ServerError:
            with self._lock:
                self._flights.pop(id(request), None)
            request.response_callback = flight.callback
            raise

    def ahead(self) -> None:
        """A request for this version is on its way (a frontend has begun to read it): when
        requests come one after another and none is in flight, the idle instance that will
        take it may get ready for it (``ahead()``, see :class:`ModelInstance`)."""
        if not self._sequential(0):
            return
        index = self.scheduler.idle()
        if index is None:
            return
        get_ready: Callable[[], None] | None = getattr(self._instances[index], "ahead", None)
        if get_ready is not None:
            get_ready()

    def ready(self) -> bool:
        """Whether every instance says it is ready (see :class:`ModelInstance`)."""
        for instance in self._instances:
            check: Callable[[], bool] | None = getattr(instance, "ready", None)
            if check is not None and not check():
                return False
        return True

    @property
    def stats(self) -> ModelStats:
        """The recorder of this version's statistics."""
        return self._stats

    def in_flight(self) -> int:
        """Requests accepted and not yet answered with a final response."""
        with self._lock:
            return len(self._flights)

    # -- workers --------------------------------------------------------------------------
    def _work(self, index: int) -> None:
        instance = self._instances[index]
        while True:
            with self._lock:
                if self._stopping and not self.scheduler.queued():
                    return
            batch = self.scheduler.next_batch(index, 0.1)
            if batch:
                self._run(index, instance, batch)

    def _run(self, index: int, instance: ModelInstance, batch: list[Pending]) -> None:
        start, flights = self._begin(batch)
        requests = [p.request for p in batch]
        try:
            reschedule = instance.execute(requests)
        except Exception as exc:  # a backend bug must not kill the worker
            reschedule = self._failed(index, requests, exc)
        self._finish(index, instance, batch, flights, start, reschedule)

    def _run_direct(self, index: int, pending: Pending) -> None:
        """Run one request on a claimed idle instance without blocking this thread.

        When the execution ends, the thread that read its end runs the next queued request
        the same way if it is small (the instance stays claimed); otherwise the instance goes
        back to its worker.  Measured at concurrency 8 on ``simple`` (stub processes, the HTTP
        fast path, 2 cores): 1,440-1,720 -> 2,230-2,300 requests/s over HTTP and 1,060-1,085
        -> 1,380-1,440 over gRPC against handing every queued request to the worker, whose
        wake-up and GIL hand-overs with the frontend's loop cost more than the send.  (Before
        the fast path, with the loop busier, the worker was the faster of the two.)"""
        instance = self._instances[index]
        batch = [pending]
        start, flights = self._begin(batch)
        sender: int | None = threading.get_ident()

        def done(reschedule: list[InferRequest]) -> None:
            try:
                self._finish(index, instance, batch, flights, start, reschedule)
            finally:
                # The thread that read the end sends the next queued request at once (the
                # instance stays claimed): the worker's wake-up and a hand-over of the GIL
                # between it and a frontend's loop cost more than the send.  Not from inside
                # the send (a stub that cannot take requests would recurse through the queue).
                following = (
                    []
                    if sender == threading.get_ident()
                    else self.scheduler.take_claimed(index, _chainable)
                )
                if following:
                    self._run_direct(index, following[0])
                else:
                    self.scheduler.unclaim(index)

        try:
            instance.execute_async([pending.request], done)  # type: ignore[attr-defined]
        except Exception as exc:  # a backend bug: as in _run
            done(self._failed(index, [pending.request], exc))
        finally:
            sender = None
        # Alone in flight, the caller (a frontend's loop) has nothing else to do: the
        # instance may wait for the end on this thread (see ProcessModelInstance.settle).
        settle: Callable[[], None] | None = getattr(instance, "settle", None)
        if settle is not None and self._sequential(1):
            settle()

    def _sequential(self, in_flight: int) -> bool:
        """Whether ``in_flight`` requests are in flight and none overlapped another for
        :data:`SEQUENTIAL_NS` (the conditions of an instance's ``settle`` and ``ahead``)."""
        return (
            len(self._flights) == in_flight
            and time.monotonic_ns() - self._overlap_ns > SEQUENTIAL_NS
        )

    def _failed(
        self, index: int, requests: list[InferRequest], exc: Exception
    ) -> list[InferRequest]:
        log.exception("model '%s' instance %d failed", self.name, index, exc_info=exc)
        error = ServerError.internal(f"model '{self.name}' failed to execute: {exc}")
        for request in requests:
            self._fail(request, error)
        return []

    def _begin(self, batch: list[Pending]) -> tuple[int, list[_Flight | None]]:
        """Mark a batch as handed to an instance; return the start time and its flights."""
        start = time.monotonic_ns()
        with self._lock:
            flights = [self._flights.get(id(p.request)) for p in batch]
            for flight in flights:
                if flight is not None:
                    flight.dispatch_ns = start
                    flight.executing = True
        for pending, flight in zip(batch, flights, strict=True):
            if pending.deadline_ns and flight is not None:
                flight.watched = True
                _deadlines.add(pending.deadline_ns, pending.request)
        return start, flights

    def _finish(
        self,
        index: int,
        instance: ModelInstance,
        batch: list[Pending],
        flights: list[_Flight | None],
        start: int,
        reschedule: list[InferRequest],
    ) -> None:
        """Record an ended execution's statistics, release its held final responses, and
        requeue what the model asked to reschedule."""
        end = time.monotonic_ns()
        compute_start, compute_end = _compute_window(instance, start, end)
        again = {id(r) for r in reschedule}
        total = 0
        finished: list[tuple[_Flight, InferResponse | None]] = []
        with self._lock:
            for pending, flight in zip(batch, flights, strict=True):
                if flight is not None:
                    flight.executing = False
                    flight.exec_end_ns = end
                if id(pending.request) in again:
                    continue
                total += pending.batch_size
                if flight is not None and not flight.recorded:
                    flight.recorded = True
                    finished.append((flight, flight.held))
                    flight.held = None
        for flight, _ in finished:
            pending = flight.pending
            if flight.failure is not None:
                self._stats.record_failure(end - pending.enqueue_ns)
                self.failures[flight.failure] += 1
            else:
                self._stats.record_success(
                    pending.batch_size,
                    max(start - pending.enqueue_ns, 0),
                    compute_start - start,
                    compute_end - compute_start,
                    end - compute_end,
                )
                listener = pending.request.stats_listener
                if listener is not None:
                    listener(compute_start - start, compute_end - compute_start, end - compute_end)
        if total:
            self._stats.record_execution(
                total, compute_start - start, compute_end - compute_start, end - compute_end
            )
        for flight, held in finished:
            if held is not None and flight.callback is not None:
                flight.callback(held)
        for pending in batch:
            if id(pending.request) in again:
                self.scheduler.requeue(pending, index)
            else:
                self.scheduler.released(pending)

    def _fail(self, request: InferRequest, error: ServerError) -> None:
        if request.response_callback is not None:
            request.response_callback(
                InferResponse(self.name, str(self.version), request.id, error=error, final=True)
            )

    def _reject(self, pending: Pending, error: ServerError) -> None:
        self._fail(pending.request, error)

    # -- responses ------------------------------------------------------------------------
    def _select_outputs(self, request: InferRequest, outputs: list[Tensor]) -> list[Tensor]:
        if not request.outputs:
            return outputs
        # Triton returns the requested outputs in the order the model produced them, each once
        # (it keeps requested names in a set; the first request for a name holds its settings).
        requested: dict[str, RequestedOutput] = {}
        for output in request.outputs:
            requested.setdefault(output.name, output)
        return [
            self._classified(tensor, requested[tensor.name])
            for tensor in outputs
            if tensor.name in requested
        ]

    def _route(self, flight: _Flight, response: InferResponse) -> None:
        request = flight.pending.request
        now = time.monotonic_ns()
        response.model_name = self.name
        response.model_version = str(self.version)
        response.id = request.id
        if response.error is None:
            try:
                response.outputs = self._select_outputs(request, response.outputs)
            except Exception as exc:
                response.outputs = []
                response.error = ServerError.internal(f"failed to prepare outputs: {exc}")
        unexecuted_failure: str | None = None
        hold = False
        with self._lock:
            if flight.done:
                log.warning("model '%s' sent a response after the final one", self.name)
                return
            flight.responses += 1
            if response.final:
                flight.done = True
                self._flights.pop(id(request), None)
                self._lock.notify_all()
                if response.error is not None and not response.model_error:
                    flight.failure = _failure_reason(response.error, flight.dispatch_ns)
                    if not flight.dispatch_ns and not flight.recorded:
                        flight.recorded = True  # failed before reaching the model
                        unexecuted_failure = flight.failure
                hold = flight.executing and not self.decoupled
                if hold:
                    flight.held = response
        if response.final:
            if flight.watched:
                _deadlines.discard(request)
            if unexecuted_failure is not None:
                self._stats.record_failure(now - flight.pending.enqueue_ns)
                self.failures[unexecuted_failure] += 1
            if flight.trace_id and self._trace is not None:
                self._record_trace(flight, response, now)
        if not hold and flight.callback is not None:
            flight.callback(response)

    # -- shutdown -------------------------------------------------------------------------
    def _record_trace(self, flight: _Flight, response: InferResponse, now: int) -> None:
        assert self._trace is not None
        request = flight.pending.request
        start = flight.pending.enqueue_ns
        dispatch = flight.dispatch_ns or now
        exec_end = flight.exec_end_ns or now
        self._trace.record(
            flight.trace_id,
            flight.trace_levels,
            model=self.name,
            version=self.version,
            request_id=request.id,
            timestamps=(
                ("REQUEST_START", start),
                ("QUEUE_START", start),
                ("COMPUTE_START", dispatch),
                ("COMPUTE_INPUT_END", dispatch),
                ("COMPUTE_OUTPUT_START", exec_end),
                ("COMPUTE_END", exec_end),
                ("REQUEST_END", now),
            ),
            inputs=request.inputs,
            outputs=response.outputs,
        )

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop taking requests, let queued and running ones finish (up to ``timeout_s``),
        then finalize the instances."""
        with self._lock:
            self._stopping = True
        deadline = time.monotonic() + timeout_s
        for worker in self._workers:
            worker.join(max(deadline - time.monotonic(), 0.0))
        for pending in self.scheduler.close():
            self._reject(pending, ServerError.unavailable(f"model '{self.name}' was unloaded"))
        with self._lock:
            while self._flights and time.monotonic() < deadline:
                self._lock.wait(max(deadline - time.monotonic(), 0.0))
        for instance in self._instances:
            try:
                instance.finalize()
            except Exception:
                log.exception("finalize of model '%s' failed", self.name)


def _chainable(pending: Pending) -> bool:
    """Whether a queued request may be sent by the thread that read the previous end (see
    ModelVersion._run_direct): a small one whose caller does not block for it.  A blocking
    caller's Assist must be offered before the caller waits (it waits on its queue once it
    found no offer); the worker's blocking execution reads for it instead."""
    return pending.request.assist is None and _small(pending.request)


def _small(request: InferRequest) -> bool:
    """Whether ``request``'s inputs are small enough to skip the queue (DIRECT_MAX_BYTES)."""
    total = 0
    for tensor in request.inputs:
        total += int(getattr(tensor.data, "nbytes", 0))
    return total <= DIRECT_MAX_BYTES


def _failure_reason(error: ServerError, dispatch_ns: int) -> str:
    """The ``reason`` label of ``nv_inference_request_failure`` for a failed request."""
    if error.kind is ErrorKind.CANCELLED:
        return "CANCELED"
    if not dispatch_ns:
        return "REJECTED"  # never reached the model: queue timeout or rejection
    if error.kind in (ErrorKind.INTERNAL, ErrorKind.UNKNOWN, ErrorKind.INVALID_ARG):
        return "BACKEND"
    return "OTHER"


def _class_count(output: RequestedOutput) -> int:
    value: Any = output.parameters.get("classification", 0)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


CreateInstance = Callable[[InstanceSpec], ModelInstance]
