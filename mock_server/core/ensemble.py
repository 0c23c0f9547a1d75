"""The ensemble scheduler: an ensemble request runs as a dataflow over the composing models.

:class:`EnsembleVersion` stands where a :class:`~mock_server.core.instances.ModelVersion`
stands for other models: the server validates a request against the ensemble's configuration
and enqueues it here.  Each request gets a :class:`_Context` that holds the *ensemble tensors*
(its inputs, every step's outputs) and runs a step as soon as all the tensors it reads are
there, as Triton's ``EnsembleContext`` does: independent steps run concurrently (each is a
request to its composing model, queued there like any other), a decoupled step's responses
each start the downstream steps again (every response is one *iteration* of the tensors it
writes), and the ensemble answers once every requested output of one iteration is present.

What follows Triton 2.51 (observed on a real server, see ``tests/conformance``):

* a step request carries the ensemble request's id, custom parameters, correlation id,
  sequence flags, priority and timeout, and asks for every output its ``output_map`` names;
* outputs of the ensemble come in the order of Triton's hash map of them (not the
  configuration's), and every response carries ``sequence_id``, ``sequence_start`` and
  ``sequence_end`` parameters: the correlation id and flags of the step that wrote the
  outputs (a composing model can change them through response parameters of those names);
* steps that only feed outputs the request did not ask for are pruned, with Triton's pruning
  walk; when nothing can produce a requested output the request fails with "unexpected
  deadlock".  The walk is 2.51's, faults included: a step whose every output is an ensemble
  output not asked for is pruned even when another step reads those outputs, and a tensor
  left without readers is pruned even when it was asked for (with ``ensemble_fan``, asking
  for only one of its two outputs fails that way, on Triton as here);
* a step's error ends the request with ``in ensemble '<name>', <the step's message>`` and the
  step's status, at once (steps still running finish unobserved; no other step starts); a
  decoupled ensemble streams one response per iteration, the last one (or an empty one) final;
* statistics: a successful request counts as one request and one execution of its batch size,
  its compute durations being the sums of its steps'; a failed one counts twice as a failure
  (reason ``OTHER``), as 2.51 does (it reports it once on responding and once on release);
* cancelling the ensemble request cancels the steps scheduled after it (running steps are not
  interrupted).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np

from tritonclient._proto import model_config_pb2 as mc

from ._input_order import triton_input_order
from .ensemble_checks import EnsembleStep, dims_match, ensemble_steps
from .errors import ServerError
from .instances import VersionBase
from .stats import ModelStats
from .types import InferRequest, InferResponse, ParamValue, RequestedOutput, Tensor
from .validation import RequestChecks, log_request_prefix, validate_request

__all__ = ["EnsembleVersion", "ModelLookup", "Runnable", "reshape_for"]

log = logging.getLogger("mock_server.core")

_START = 1  # TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
_END = 2  # TRITONSERVER_REQUEST_FLAG_SEQUENCE_END


class Runnable(Protocol):
    """What a step needs of the model version it runs on (a model or another ensemble)."""

    name: str
    version: int
    config: mc.ModelConfig
    checks: RequestChecks

    def enqueue(self, request: InferRequest, batch_size: int) -> None: ...


#: Finds the ready version of a composing model (-1: the latest); raises ``ServerError``.
ModelLookup = Callable[[str, int], Runnable]


def reshape_for(
    config_dims: Sequence[int], batching: bool, tensor_batch: int, shape: Sequence[int]
) -> tuple[int, ...]:
    """The shape a tensor takes where it goes, as Triton's ``ReshapeTensorDims``.

    A tensor written by a non-batching model may feed a batching one (and the reverse) when
    their full shapes agree: the batch dimension is added or removed only where the two sides
    disagree about batching and the shape does not already fit.

    Parameters
    ----------
    config_dims : sequence of int
        The receiving side's configured dims (without batch dimension).
    batching : bool
        Whether the receiving side batches.
    tensor_batch : int
        The batch size the tensor was produced with; 0 when its producer does not batch.
    shape : sequence of int
        The tensor's actual shape.

    Returns
    -------
    tuple of int
        The shape to give the tensor.
    """
    dims = tuple(int(d) for d in shape)
    if batching != (tensor_batch != 0):
        if batching:
            if dims_match(config_dims, dims):
                return (1, *dims)
        elif not dims_match(config_dims, dims) and tensor_batch == 1:
            return dims[1:]
    return dims


#: The correlation id and sequence flags a tensor carries downstream.
_Origin = tuple[int | str, int]


@dataclass
class _Value:
    """One iteration of an ensemble tensor: the data (None when its step did not produce it),
    how many more readers it has, and the correlation id and flags it carries downstream."""

    tensor: Tensor | None
    readers: int
    correlation_id: int | str = 0
    flags: int = 0
    from_step: bool = False  # written by a step (carries its correlation id and flags)


@dataclass
class _Run:
    """One dispatched step request."""

    step: EnsembleStep
    model: Runnable
    request: InferRequest
    correlation_id: int | str
    flags: int
    done: bool = False


class EnsembleVersion(VersionBase):
    """One loaded version of an ensemble model.

    Parameters
    ----------
    name : str
        The ensemble's name.
    version : int
        Its version.
    config : ModelConfig
        Its completed configuration (``model_transaction_policy.decoupled`` decided by
        :func:`~mock_server.core.ensemble_checks.check_composition`).
    model_dir : pathlib.Path
        Its folder (for output label files).
    stats : ModelStats
        Where its statistics are recorded.
    lookup : ModelLookup
        Resolves a step's model and version when a request starts.
    failures : collections.Counter, optional
        Where failed requests are counted by metrics reason.
    """

    def __init__(
        self,
        name: str,
        version: int,
        config: mc.ModelConfig,
        model_dir: Path,
        stats: ModelStats,
        lookup: ModelLookup,
        *,
        failures: collections.Counter[str] | None = None,
    ) -> None:
        # Its failures are always counted as ``OTHER``.
        super().__init__(name, version, config, stats, model_dir, failures)
        self.steps = ensemble_steps(config)
        self._lookup = lookup
        self.readers: dict[str, frozenset[int]] = {}
        self.writer: dict[str, int] = {}
        for model_input in config.input:
            self.readers[model_input.name] = frozenset()
        for model_output in config.output:
            self.readers[model_output.name] = frozenset()
        for step in self.steps:
            for tensor in step.input_map.values():
                self.readers[tensor] = self.readers.get(tensor, frozenset()) | {step.index}
            for tensor in step.output_map.values():
                self.readers.setdefault(tensor, frozenset())
                self.writer.setdefault(tensor, step.index)
        self.output_dims = {
            o.name: tuple(int(d) for d in (o.reshape.shape if o.HasField("reshape") else o.dims))
            for o in config.output
        }
        self.output_order = triton_input_order([o.name for o in config.output])
        self.optional_inputs = tuple(i.name for i in config.input if i.optional)
        self._lock = threading.Condition()
        self._contexts: set[_Context] = set()
        self._stopping = False

    # -- the interface of a model version ----------------------------------------------------
    @property
    def stats(self) -> ModelStats:
        """The recorder of this version's statistics."""
        return self._stats

    @property
    def scheduler(self) -> EnsembleVersion:
        """What the metrics read the pending-request count from: ensemble requests are never
        queued (their steps queue at the composing models)."""
        return self

    def ready(self) -> bool:
        """An ensemble has no instances of its own: once loaded it is ready, as in Triton
        (its steps' models answer for themselves when a request reaches them)."""
        return True

    def queued(self) -> int:
        """Requests waiting in a queue of the ensemble itself: always 0."""
        return 0

    def in_flight(self) -> int:
        """Requests accepted and not yet answered with a final response."""
        with self._lock:
            return len(self._contexts)

    def enqueue(self, request: InferRequest, batch_size: int) -> None:
        """Start a validated request; its responses arrive through its callback.

        Parameters
        ----------
        request : InferRequest
            The request, validated against this ensemble's configuration.
        batch_size : int
            Its batch size (1 for a non-batching ensemble).

        Raises
        ------
        ServerError
            ``UNAVAILABLE`` while the version is unloading.
        """
        context = _Context(self, request, batch_size if self.config.max_batch_size > 0 else 0)
        with self._lock:
            if self._stopping:
                raise ServerError.unavailable(
                    f"model '{self.name}' version {self.version} is unloading"
                )
            self._contexts.add(context)
        context.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop taking requests and wait (up to ``timeout_s``) for those in flight."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            self._stopping = True
            while self._contexts and time.monotonic() < deadline:
                self._lock.wait(max(deadline - time.monotonic(), 0.0))

    # -- used by the contexts -----------------------------------------------------------------
    def lookup(self, step: EnsembleStep) -> Runnable:
        return self._lookup(step.model_name, step.model_version)

    def done(self, context: _Context) -> None:
        with self._lock:
            self._contexts.discard(context)
            self._lock.notify_all()

    def select_outputs(self, request: InferRequest, outputs: list[Tensor]) -> list[Tensor]:
        """Apply the classification extension to the outputs the request asked it for."""
        wanted = {o.name: o for o in reversed(request.outputs)}
        return [self._classified(tensor, wanted.get(tensor.name)) for tensor in outputs]


def _shaped(name: str, tensor: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``tensor`` under another name and shape (a view of the same data, never a copy)."""
    data = tensor.data if tuple(tensor.data.shape) == shape else np.reshape(tensor.data, shape)
    return Tensor(name, tensor.datatype, shape, data)


def _prefixed(ensemble: str, error: ServerError) -> ServerError:
    return ServerError(error.kind, f"in ensemble '{ensemble}', {error.message}")


def _flags_of(request: InferRequest) -> int:
    return (_START if request.sequence_start else 0) | (_END if request.sequence_end else 0)


class _Context:
    """The state of one ensemble request (Triton's ``EnsembleContext``).

    Everything that changes is guarded by ``_lock``; step requests are dispatched and
    responses delivered outside it (a step may answer on the dispatching thread), responses in
    the order they were produced.
    """

    def __init__(self, ensemble: EnsembleVersion, request: InferRequest, batch_size: int) -> None:
        self.ensemble = ensemble
        self.request = request
        self.callback = request.response_callback
        self.batch_size = batch_size  # Triton's BatchSize(): 0 for a non-batching ensemble
        self.enqueue_ns = time.monotonic_ns()
        self.compute_start_ns = self.enqueue_ns
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._outbox: collections.deque[InferResponse] = collections.deque()
        self._inflight = 0
        self._status: ServerError | None = None
        self._error_sent = False
        self._response_sent = False
        self._finished = False
        self._held: InferResponse | None = None
        self._compute = [0, 0, 0]
        self._models: dict[int, Runnable] = {}
        self._readers: dict[str, set[int]] = {}
        self._values: dict[str, dict[int, _Value]] = {}
        self._iterations: dict[str, int] = {}
        self._tensor_batch: dict[str, int] = {}
        self._requested: tuple[str, ...] = ()

    # -- start ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Resolve the composing models, seed the inputs and run what is ready."""
        ensemble = self.ensemble
        with self._lock:
            self.compute_start_ns = time.monotonic_ns()
            try:
                for step in ensemble.steps:
                    self._models[step.index] = ensemble.lookup(step)
            except ServerError as exc:
                self._status = exc
            self._requested = tuple(o.name for o in self.request.outputs) or tuple(
                o.name for o in ensemble.config.output
            )
            self._prune()
            updated: set[tuple[str, int]] = set()
            if self._status is None:
                for tensor in self.request.inputs:
                    self._add(tensor.name, tensor, None)
                    self._tensor_batch[tensor.name] = self.batch_size
                for name in ensemble.optional_inputs:
                    if not self._values.get(name):
                        self._add(name, None, None)
                        self._tensor_batch[name] = self.batch_size
                updated = {(name, 0) for name, values in self._values.items() if values}
            runs = self._round(updated)
        self._dispatch(runs)
        self._deliver()

    def _prune(self) -> None:
        """Drop the steps that only feed outputs nobody asked for (Triton's backward walk)."""
        ensemble = self.ensemble
        self._readers = {name: set(steps) for name, steps in ensemble.readers.items()}
        ignored = {o.name for o in ensemble.config.output} - set(self._requested)
        remaining: dict[int, int] = {}
        while ignored:
            dropped: set[str] = set()
            for tensor in sorted(ignored):
                # Triton looks the writer up with operator[]: a tensor no step writes (an
                # ensemble input) counts against step 0.
                index = ensemble.writer.get(tensor, 0)
                step = ensemble.steps[index]
                remaining[index] = remaining.get(index, len(step.output_map)) - 1
                if remaining[index] == 0:
                    for source in step.input_map.values():
                        readers = self._readers[source]
                        readers.discard(index)
                        if not readers:
                            dropped.add(source)
            ignored = dropped

    def _add(self, name: str, tensor: Tensor | None, origin: _Origin | None) -> int:
        """Store the next iteration of tensor ``name``; returns its iteration number.

        ``origin`` is the correlation id and flags of the step that wrote it (None for the
        ensemble's own inputs)."""
        iteration = self._iterations.get(name, 0)
        self._iterations[name] = iteration + 1
        readers = len(self._readers.get(name, ())) + (1 if name in self._requested else 0)
        value = _Value(tensor, readers)
        if origin is not None:
            value.correlation_id, value.flags = origin
            value.from_step = True
        self._values.setdefault(name, {})[iteration] = value
        return iteration

    # -- one round: what a new set of tensors makes possible -----------------------------------
    def _round(self, updated: set[tuple[str, int]]) -> list[_Run]:
        """Prepare the steps ``updated`` made ready and answer what can be answered (lock held)."""
        runs: list[_Run] = []
        if self._status is None:
            try:
                runs = self._ready_steps(updated)
            except ServerError as exc:
                self._status = exc
        if self._status is not None:
            self._finish(None)
            return []
        response = None
        if updated:
            try:
                response = self._outputs(updated)
            except ServerError as exc:
                self._status = exc
        self._finish(response)
        return runs

    def _ready_steps(self, updated: set[tuple[str, int]]) -> list[_Run]:
        ready: set[tuple[int, int]] = set()
        for name, iteration in updated:
            for index in self._readers.get(name, ()):
                step = self.ensemble.steps[index]
                if all(
                    iteration in self._values.get(source, {}) for source in step.input_map.values()
                ):
                    ready.add((index, iteration))
        runs = [self._prepare(index, iteration) for index, iteration in sorted(ready)]
        self._inflight += len(runs)
        return runs

    def _prepare(self, index: int, iteration: int) -> _Run:
        """Build the request of step ``index`` from the tensors of ``iteration``."""
        step = self.ensemble.steps[index]
        model = self._models[index]
        batching = model.config.max_batch_size > 0
        config_inputs = {i.name: i for i in model.config.input}
        correlation_id: int | str = self.request.correlation_id
        flags = _flags_of(self.request)
        from_step = False
        inputs: list[Tensor] = []
        for model_input, source in step.input_map.items():
            value = self._values[source][iteration]
            if value.tensor is not None:
                declared = config_inputs.get(model_input)
                dims = tuple(int(d) for d in declared.dims) if declared is not None else ()
                shape = reshape_for(
                    dims, batching, self._tensor_batch.get(source, 0), value.tensor.shape
                )
                inputs.append(_shaped(model_input, value.tensor, shape))
            if value.from_step:
                if from_step and (correlation_id, flags) != (value.correlation_id, value.flags):
                    log.error(
                        "%sDifferent set of response parameters are set for '%s'. Parameter "
                        "correlation ID %s, flags %d is used.",
                        log_request_prefix(self.request),
                        step.model_name,
                        correlation_id,
                        flags,
                    )
                    continue
                correlation_id, flags, from_step = value.correlation_id, value.flags, True
        for source in set(step.input_map.values()):
            self._release(source, iteration)
        request = InferRequest(
            model_name=step.model_name,
            model_version=model.version,
            id=self.request.id,
            inputs=inputs,
            outputs=[RequestedOutput(name) for name in step.output_map],
            parameters=dict(self.request.parameters),
            correlation_id=correlation_id,
            sequence_start=bool(flags & _START),
            sequence_end=bool(flags & _END),
            priority=self.request.priority,
            timeout_us=self.request.timeout_us,
        )
        run = _Run(step, model, request, correlation_id, flags)
        request.response_callback = partial(self._on_response, run)
        request.stats_listener = self._add_compute
        batch = model.checks.batch_size_of(request) if batching else 0
        for tensor in step.output_map.values():
            self._tensor_batch[tensor] = batch
        return run

    def _release(self, name: str, iteration: int) -> None:
        values = self._values[name]
        value = values[iteration]
        value.readers -= 1
        if value.readers == 0:
            del values[iteration]

    def _outputs(self, updated: set[tuple[str, int]]) -> InferResponse | None:
        """The response for one iteration, when every requested output has it."""
        requested = set(self._requested)
        ready = False
        iteration = 0
        for name, candidate in sorted(updated):
            if name not in requested:
                continue
            iteration = candidate
            ready = all(iteration in self._values.get(output, {}) for output in requested)
        if not ready:
            return None
        ensemble = self.ensemble
        batching = self.batch_size != 0
        outputs: list[Tensor] = []
        parameters: dict[str, ParamValue] = {}
        for name in ensemble.output_order:
            if name not in requested:
                continue
            value = self._values[name][iteration]
            if value.tensor is None:
                continue  # the writing step did not produce it
            shape = reshape_for(
                ensemble.output_dims[name],
                batching,
                self._tensor_batch.get(name, 0),
                value.tensor.shape,
            )
            outputs.append(_shaped(name, value.tensor, shape))
            if value.from_step:
                parameters.update(self._sequence_parameters(value))
            self._release(name, iteration)
        return InferResponse(
            ensemble.name,
            str(ensemble.version),
            self.request.id,
            outputs=ensemble.select_outputs(self.request, outputs),
            parameters=parameters,
            final=False,
        )

    def _sequence_parameters(self, value: _Value) -> dict[str, ParamValue]:
        corr = value.correlation_id
        if isinstance(self.request.correlation_id, str):
            sequence_id: ParamValue = str(corr)
        else:
            sequence_id = corr if isinstance(corr, int) else 0
        return {
            "sequence_id": sequence_id,
            "sequence_start": bool(value.flags & _START),
            "sequence_end": bool(value.flags & _END),
        }

    # -- the end of the request ----------------------------------------------------------------
    def _finish(self, response: InferResponse | None) -> None:
        """Answer what can be answered now; at the end, record the statistics (lock held)."""
        if self._finished:
            return
        ensemble = self.ensemble
        final = self._inflight == 0
        if self._status is None:
            if response is not None:
                self._response_sent = True
                if ensemble.decoupled or final:
                    response.final = final
                    self._outbox.append(response)
                else:
                    # A non-decoupled ensemble answers once: a response ready while steps still
                    # run (outputs nobody reads further) waits for them.
                    self._held = response
            elif final:
                if self._held is not None:
                    self._held.final = True
                    self._outbox.append(self._held)
                    self._held = None
                elif not ensemble.decoupled and not self._response_sent:
                    self._status = ServerError.invalid_arg(
                        f"in ensemble '{ensemble.name}', {log_request_prefix(self.request)}"
                        "unexpected deadlock, at least one output is not set while no more "
                        "ensemble steps can be made"
                    )
                    self._send_error(self._status)
                else:
                    self._outbox.append(
                        InferResponse(
                            ensemble.name, str(ensemble.version), self.request.id, final=True
                        )
                    )
        elif not self._error_sent:
            # Triton 2.51 answers with the error at once, steps still running or not.
            self._held = None
            self._send_error(_prefixed(ensemble.name, self._status))
        if final:
            self._finished = True
            self._record()

    def _send_error(self, error: ServerError) -> None:
        """Queue the error response; Triton 2.51 counts the failure once when it responds
        (and once more when the last step is done, see :meth:`_record`)."""
        self._error_sent = True
        ensemble = self.ensemble
        self._count_failure()
        self._outbox.append(
            InferResponse(ensemble.name, str(ensemble.version), self.request.id, error=error)
        )

    def _count_failure(self) -> None:
        ensemble = self.ensemble
        ensemble.stats.record_failure(time.monotonic_ns() - self.enqueue_ns)
        ensemble.failures["OTHER"] += 1

    def _record(self) -> None:
        """Record the request in the ensemble's statistics (before its final response goes)."""
        ensemble = self.ensemble
        end = time.monotonic_ns()
        compute_input, compute_infer, compute_output = self._compute
        if self._status is None:
            batch = max(1, self.batch_size)
            ensemble.stats.record_success(
                batch,
                self.compute_start_ns - self.enqueue_ns,
                compute_input,
                compute_infer,
                compute_output,
                request_ns=end - self.enqueue_ns,
            )
            ensemble.stats.record_execution(batch, compute_input, compute_infer, compute_output)
            listener = self.request.stats_listener
            if listener is not None:
                listener(compute_input, compute_infer, compute_output)
        else:
            # Triton 2.51 reports a failed ensemble request twice: when it responds with the
            # error (_send_error) and again here, when it releases the request.
            self._count_failure()

    # -- steps ----------------------------------------------------------------------------------
    def _dispatch(self, runs: list[_Run]) -> None:
        for run in runs:
            with self._lock:
                if self._status is not None:
                    # The ensemble already failed: the step is not scheduled.
                    self._inflight -= 1
                    self._finish(None)
                    continue
            if self.request.cancelled.is_set():
                run.request.cancel()
            try:
                # A step's custom parameters are the ensemble request's, which the core has
                # checked (with its profile's rule) when the request came in; its outputs are
                # the step's output map, each named once.
                validate_request(
                    run.request,
                    run.model.checks,
                    version=run.model.version,
                    reserved_parameters=False,
                )
                run.model.enqueue(run.request, run.model.checks.batch_size_of(run.request))
            except ServerError as exc:
                log.warning(
                    "Ensemble '%s' failed to schedule step : %s", self.ensemble.name, exc.message
                )
                with self._lock:
                    self._status = exc
                    self._inflight -= 1
                    self._finish(None)
        self._deliver()

    def _add_compute(self, compute_input: int, compute_infer: int, compute_output: int) -> None:
        with self._lock:
            self._compute[0] += max(compute_input, 0)
            self._compute[1] += max(compute_infer, 0)
            self._compute[2] += max(compute_output, 0)

    def _on_response(self, run: _Run, response: InferResponse) -> None:
        """A response of a step (on whichever thread its model answers)."""
        with self._lock:
            if run.done:
                return
            if response.final:
                run.done = True
                self._inflight -= 1
            updated: set[tuple[str, int]] = set()
            if self._status is None:
                if response.error is not None:
                    self._status = response.error
                elif not self._flags_only(run, response):
                    try:
                        updated = self._consume(run, response)
                    except ServerError as exc:
                        self._status = exc
            runs = self._round(updated)
        self._dispatch(runs)
        self._deliver()

    @staticmethod
    def _flags_only(run: _Run, response: InferResponse) -> bool:
        """Whether a decoupled step's response is only its final flag (no response object)."""
        return (
            response.final
            and not response.outputs
            and not response.parameters
            and bool(run.model.config.model_transaction_policy.decoupled)
        )

    def _consume(self, run: _Run, response: InferResponse) -> set[tuple[str, int]]:
        """Store a step's outputs as ensemble tensors; outputs it did not send are stored as
        missing (a later step may take them as optional inputs)."""
        override = self._override(run, response.parameters)
        updated: set[tuple[str, int]] = set()
        missing = dict(run.step.output_map)
        for tensor in response.outputs:
            target = missing.pop(tensor.name, None)
            if target is None:
                continue
            stored = Tensor(target, tensor.datatype, tuple(tensor.shape), tensor.data)
            updated.add((target, self._add(target, stored, override)))
        for target in missing.values():
            updated.add((target, self._add(target, None, override)))
        return updated

    @staticmethod
    def _override(run: _Run, parameters: dict[str, ParamValue]) -> _Origin:
        """The correlation id and flags the step's outputs carry: the step's, unless the model
        set the ``sequence_id`` / ``sequence_start`` / ``sequence_end`` response parameters."""
        if not any(key in parameters for key in ("sequence_id", "sequence_start", "sequence_end")):
            return run.correlation_id, run.flags
        correlation_id: int | str = run.correlation_id
        flags = 0
        for key, value in parameters.items():
            if key == "sequence_id":
                if isinstance(value, bool) or not isinstance(value, (int, str)):
                    raise ServerError.invalid_arg(
                        "expected parameter 'sequence_id' to be TRITONSERVER_PARAMETER_INT or "
                        "TRITONSERVER_PARAMETER_STRING"
                    )
                correlation_id = value
            elif key in ("sequence_start", "sequence_end"):
                if not isinstance(value, bool):
                    raise ServerError.invalid_arg(
                        f"expect parameter '{key}' to be TRITONSERVER_PARAMETER_BOOL"
                    )
                if value:
                    flags |= _START if key == "sequence_start" else _END
        return correlation_id, flags

    def _deliver(self) -> None:
        """Hand the produced responses to the client, in order, and retire a finished context."""
        with self._send_lock:
            while True:
                with self._lock:
                    if not self._outbox:
                        finished = self._finished
                        break
                    response = self._outbox.popleft()
                if self.callback is not None:
                    self.callback(response)
        if finished:
            self.ensemble.done(self)
