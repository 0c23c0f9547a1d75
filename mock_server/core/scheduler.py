"""Schedulers: how queued requests become batches for model instances.

* :class:`QueueScheduler` serves models without sequence batching.  Without
  ``dynamic_batching`` (or with ``max_batch_size`` 0) every execution gets one request; with it,
  requests are gathered until a preferred batch size or ``max_batch_size`` is reached or the
  oldest request has waited ``max_queue_delay_microseconds``.  Priority levels, queue sizes and
  queue timeouts follow ``ModelQueuePolicy``.
* :class:`SequenceScheduler` serves models with ``sequence_batching``: requests are routed by
  correlation id to the instance that holds the sequence, the sequence control tensors
  (START, READY, END, CORRID) are added as inputs, and idle sequences are released after
  ``max_sequence_idle_microseconds``.  With ``iterative_sequence``, as in Triton 2.51, a
  request without a correlation id (0 or "") starts a sequence of its own under an id the
  scheduler gives it (1, 2, ... per model, with the START flag only), and a sequence ends when
  the model releases a request without rescheduling it.

Both hand out lists of :class:`Pending` to the instance workers (Triton's Python backend
receives a batch as a list of requests); requests that expire or are cancelled while queued
are answered through the ``reject`` callback instead.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tritonclient._proto import model_config_pb2 as mc

from .errors import ErrorKind, ServerError
from .types import InferRequest, Tensor

__all__ = ["Pending", "QueueScheduler", "Scheduler", "SequenceScheduler", "make_scheduler"]

RejectFn = Callable[["Pending", ServerError], None]


@dataclass
class Pending:
    """A queued request with the bookkeeping the schedulers and statistics need."""

    request: InferRequest
    batch_size: int
    enqueue_ns: int = field(default_factory=time.monotonic_ns)
    deadline_ns: int = 0
    level: int = 0
    delayed: bool = False


class Scheduler:
    """Common interface of the schedulers."""

    def enqueue(self, pending: Pending) -> None:
        """Queue a request; raises :class:`ServerError` if it cannot be accepted."""
        raise NotImplementedError

    def next_batch(self, instance: int, timeout_s: float) -> list[Pending]:
        """Block up to ``timeout_s`` for the next batch for ``instance``; [] if none."""
        raise NotImplementedError

    def requeue(self, pending: Pending, instance: int) -> None:
        """Put back a request that the model asked to reschedule."""
        raise NotImplementedError

    def released(self, pending: Pending) -> None:
        """A request the model executed and did not reschedule (nothing to do by default)."""

    def claim_idle(self) -> int | None:
        """Take an idle instance for a request that skips the queue (see
        :meth:`ModelVersion.enqueue`): the index of an instance whose worker waits for work
        while nothing is queued, now reserved until :meth:`unclaim`; None when there is none
        or this scheduler must see every request (batching, sequences, queue policies)."""
        return None

    def unclaim(self, instance: int) -> None:
        """Give back an instance taken by :meth:`claim_idle`."""
        raise NotImplementedError

    def idle(self) -> int | None:
        """The instance :meth:`claim_idle` would take now, left unclaimed (a hint: another
        request may take it first)."""
        return None

    def take_claimed(self, instance: int, accept: Callable[[Pending], bool]) -> list[Pending]:
        """The next request for a claimed ``instance`` whose run just ended, the claim kept:
        the queue's head when it is due and ``accept(head)``; [] otherwise (then
        :meth:`unclaim` the instance)."""
        return []

    def close(self) -> list[Pending]:
        """Stop accepting requests; return what was still queued."""
        raise NotImplementedError

    def queued(self) -> int:
        """Number of requests waiting."""
        raise NotImplementedError


def _timeout_ns(policy: mc.ModelQueuePolicy | None, request: InferRequest) -> int:
    """The queue timeout that applies to ``request`` under ``policy``, in ns (0 = none).

    As in Triton: the policy's ``default_timeout_microseconds``; a request's own ``timeout``
    counts only where the policy has ``allow_timeout_override`` and a non-zero default, and
    only to lower it.
    """
    if policy is None or not policy.default_timeout_microseconds:
        return 0
    timeout_us = policy.default_timeout_microseconds
    if policy.allow_timeout_override and 0 < request.timeout_us < timeout_us:
        timeout_us = request.timeout_us
    return timeout_us * 1000


class QueueScheduler(Scheduler):
    """Default and dynamic-batching scheduler (one shared queue per priority level)."""

    def __init__(self, config: mc.ModelConfig, reject: RejectFn) -> None:
        self._reject = reject
        self._cond = threading.Condition()
        self._closed = False
        self._max_batch = max(config.max_batch_size, 0)
        self._batching = config.HasField("dynamic_batching") and self._max_batch > 0
        db = config.dynamic_batching
        self._preferred = sorted(set(db.preferred_batch_size)) if self._batching else []
        self._delay_ns = db.max_queue_delay_microseconds * 1000 if self._batching else 0
        self._levels = int(db.priority_levels) if config.HasField("dynamic_batching") else 0
        default_level = int(db.default_priority_level) or (self._levels + 1) // 2 or 1
        self._default_level = min(default_level, self._levels) if self._levels else 0
        self._policies: dict[int, mc.ModelQueuePolicy | None] = {}
        has_policy = config.HasField("dynamic_batching") and db.HasField("default_queue_policy")
        for level in range(self._levels + 1):
            if level in db.priority_queue_policy:
                self._policies[level] = db.priority_queue_policy[level]
            else:
                self._policies[level] = db.default_queue_policy if has_policy else None
        self._queues: dict[int, collections.deque[Pending]] = {
            level: collections.deque() for level in range(self._levels + 1)
        }
        # Requests may skip the queue only where it does nothing for them: no batching, no
        # priorities, no queue policy (its sizes and timeouts count queued requests).
        self._direct = not config.HasField("dynamic_batching")
        self._parked: set[int] = set()  # instances whose worker waits in next_batch
        self._claimed: set[int] = set()  # instances taken by claim_idle

    # -- queueing -------------------------------------------------------------------------
    def _level_of(self, request: InferRequest) -> int:
        # Triton's rule: 0 or a level above priority_levels means the default level.
        if not self._levels:
            return 0
        if request.priority <= 0 or request.priority > self._levels:
            return self._default_level
        return request.priority

    def enqueue(self, pending: Pending) -> None:
        level = self._level_of(pending.request)
        policy = self._policies.get(level)
        pending.level = level
        timeout = _timeout_ns(policy, pending.request)
        pending.deadline_ns = pending.enqueue_ns + timeout if timeout else 0
        with self._cond:
            if self._closed:
                raise ServerError.unavailable(
                    f"model '{pending.request.model_name}' is unloading; request rejected"
                )
            queue = self._queues[level]
            if policy is not None and policy.max_queue_size and len(queue) >= policy.max_queue_size:
                raise ServerError.unavailable("Exceeds maximum queue size")
            queue.append(pending)
            self._wake()

    def _wake(self) -> None:
        # Only a waiting worker whose instance is not claimed takes from the queue: wake enough
        # waiters that one of those sees it.  When every waiting worker's instance is claimed,
        # none is woken (each woke for nothing, about 3 times per request at concurrency 8):
        # a claimed instance takes its next request when its run ends (take_claimed), and
        # unclaim wakes the workers when requests are queued; a worker between batches looks
        # at the queue before it waits.
        if self._parked - self._claimed:
            self._cond.notify(len(self._claimed) + 1)

    def requeue(self, pending: Pending, instance: int) -> None:
        with self._cond:
            self._queues[pending.level].appendleft(pending)
            self._wake()

    def claim_idle(self) -> int | None:
        if not self._direct:
            return None
        with self._cond:
            instance = self._idle_locked()
            if instance is not None:
                self._claimed.add(instance)
            return instance

    def idle(self) -> int | None:
        if not self._direct:
            return None
        with self._cond:
            return self._idle_locked()

    def _idle_locked(self) -> int | None:
        """A parked, unclaimed instance while nothing is queued; call with the lock."""
        if self._closed or any(self._queues.values()):
            return None
        return next((i for i in self._parked if i not in self._claimed), None)

    def unclaim(self, instance: int) -> None:
        with self._cond:
            self._claimed.discard(instance)
            if any(self._queues.values()):
                self._cond.notify_all()

    def take_claimed(self, instance: int, accept: Callable[[Pending], bool]) -> list[Pending]:
        with self._cond:
            if self._closed or instance not in self._claimed:
                return []
            now = time.monotonic_ns()
            rejected = self._expire(now)
            batch: list[Pending] = []
            for queue in self._order():
                if queue:
                    # The head, taken as the worker takes it (only an unbatched scheduler
                    # claims instances, so _take gives just that one).
                    if accept(queue[0]):
                        batch = self._take()
                    break
        for pending, error in rejected:
            self._reject(pending, error)
        return batch

    def queued(self) -> int:
        with self._cond:
            return sum(len(q) for q in self._queues.values())

    def close(self) -> list[Pending]:
        with self._cond:
            self._closed = True
            rest = [p for q in self._queues.values() for p in q]
            for q in self._queues.values():
                q.clear()
            self._cond.notify_all()
            return rest

    # -- batching -------------------------------------------------------------------------
    def _order(self) -> list[collections.deque[Pending]]:
        # Level 1 is the highest priority; level 0 is the single queue without levels.
        return [self._queues[level] for level in sorted(self._queues)]

    def _expire(self, now: int) -> list[tuple[Pending, ServerError]]:
        """Drop requests that timed out or were cancelled while queued (lock held)."""
        dropped: list[tuple[Pending, ServerError]] = []
        for level, queue in self._queues.items():
            policy = self._policies.get(level)
            delay_action = policy is not None and policy.timeout_action == mc.ModelQueuePolicy.DELAY
            keep: collections.deque[Pending] = collections.deque()
            delayed: list[Pending] = []
            for pending in queue:
                if pending.request.cancelled.is_set():
                    dropped.append((pending, ServerError(ErrorKind.CANCELLED, "Request cancelled")))
                elif pending.deadline_ns and now >= pending.deadline_ns and not pending.delayed:
                    if delay_action:
                        pending.delayed = True
                        delayed.append(pending)
                    else:
                        dropped.append(
                            (pending, ServerError.unavailable("Request timeout expired"))
                        )
                else:
                    keep.append(pending)
            keep.extend(delayed)  # DELAY: timed-out requests go behind the others
            self._queues[level] = keep
        return dropped

    def _take(self) -> list[Pending]:
        """Take the next batch from the queues (lock held); [] if nothing is queued."""
        batch: list[Pending] = []
        total = 0
        for queue in self._order():
            while queue:
                head = queue[0]
                if not batch:
                    batch.append(queue.popleft())
                    total = head.batch_size
                    if not self._batching:
                        return batch
                    continue
                if total + head.batch_size > self._max_batch:
                    return batch
                batch.append(queue.popleft())
                total += head.batch_size
        return batch

    def _ready_to_dispatch(self, now: int) -> bool:
        """Whether the queued requests should go now (lock held)."""
        total = 0
        oldest = None
        for queue in self._order():
            for pending in queue:
                total += pending.batch_size
                oldest = pending.enqueue_ns if oldest is None else min(oldest, pending.enqueue_ns)
        if total == 0:
            return False
        if not self._batching or total >= self._max_batch or self._delay_ns == 0:
            return True
        if self._preferred and total in self._preferred:
            return True
        if self._preferred and total > max(self._preferred):
            return True
        return oldest is not None and now - oldest >= self._delay_ns

    def next_batch(self, instance: int, timeout_s: float) -> list[Pending]:
        end = time.monotonic() + timeout_s
        rejected: list[tuple[Pending, ServerError]] = []
        batch: list[Pending] = []
        with self._cond:
            self._parked.add(instance)
            try:
                while not self._closed:
                    if instance in self._claimed:  # running a request that skipped the queue
                        remaining = end - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                        continue
                    now = time.monotonic_ns()
                    rejected.extend(self._expire(now))
                    if self._ready_to_dispatch(now):
                        batch = self._take()
                        break
                    remaining = end - time.monotonic()
                    if remaining <= 0:
                        break
                    wait = remaining
                    if self.queued():
                        # Something is queued but not dispatchable yet: wake up when the
                        # batching delay or the earliest queue deadline runs out.
                        wait = min(wait, self._next_wakeup(now))
                    self._cond.wait(max(wait, 0.0005))
            finally:
                self._parked.discard(instance)
        for pending, error in rejected:
            self._reject(pending, error)
        return batch

    def _next_wakeup(self, now: int) -> float:
        times = []
        for queue in self._queues.values():
            for pending in queue:
                if self._batching and self._delay_ns:
                    times.append(pending.enqueue_ns + self._delay_ns)
                if pending.deadline_ns and not pending.delayed:
                    times.append(pending.deadline_ns)
        if not times:
            return 0.05
        return max((min(times) - now) / 1e9, 0.0)


# -- sequences ------------------------------------------------------------------------------


@dataclass
class _Sequence:
    instance: int
    last_ns: int
    ending: bool = False


def _control_value(control: mc.ModelSequenceBatching.Control, flag: bool) -> Tensor:
    index = 1 if flag else 0
    if len(control.fp32_false_true) == 2:
        return Tensor("", "FP32", (1,), np.array([control.fp32_false_true[index]], np.float32))
    if len(control.bool_false_true) == 2:
        return Tensor("", "BOOL", (1,), np.array([control.bool_false_true[index]], np.bool_))
    values = list(control.int32_false_true) if len(control.int32_false_true) == 2 else [0, 1]
    return Tensor("", "INT32", (1,), np.array([values[index]], np.int32))


def _corrid_value(control: mc.ModelSequenceBatching.Control, corr_id: int | str) -> Tensor:
    dtype = control.data_type
    if dtype == mc.TYPE_STRING:
        data = np.array([str(corr_id).encode()], dtype=np.object_)
        return Tensor("", "BYTES", (1,), data)
    table = {
        mc.TYPE_UINT64: ("UINT64", np.uint64),
        mc.TYPE_INT64: ("INT64", np.int64),
        mc.TYPE_UINT32: ("UINT32", np.uint32),
        mc.TYPE_INT32: ("INT32", np.int32),
    }
    name, np_type = table.get(dtype, ("UINT64", np.uint64))
    value = int(corr_id) if not isinstance(corr_id, str) else 0
    bits = np.dtype(np_type).itemsize * 8
    value &= (1 << bits) - 1  # 32-bit controls truncate the id, as Triton does
    return Tensor("", name, (1,), np.array([value], dtype=np.uint64).astype(np_type))


def control_tensors(config: mc.ModelConfig, request: InferRequest) -> list[Tensor]:
    """The sequence control inputs for ``request`` (shape [1], or [1, 1] for batching models)."""
    Kind = mc.ModelSequenceBatching.Control
    out: list[Tensor] = []
    batched = config.max_batch_size > 0
    for control_input in config.sequence_batching.control_input:
        for control in control_input.control:
            if control.kind == Kind.CONTROL_SEQUENCE_START:
                tensor = _control_value(control, request.sequence_start)
            elif control.kind == Kind.CONTROL_SEQUENCE_END:
                tensor = _control_value(control, request.sequence_end)
            elif control.kind == Kind.CONTROL_SEQUENCE_READY:
                tensor = _control_value(control, True)
            elif control.kind == Kind.CONTROL_SEQUENCE_CORRID:
                tensor = _corrid_value(control, request.correlation_id)
            else:
                continue
            tensor.name = control_input.name
            if batched:
                tensor.shape = (1, 1)
                tensor.data = tensor.data.reshape(1, 1)
            out.append(tensor)
    return out


class SequenceScheduler(Scheduler):
    """Sequence batcher: sticky routing by correlation id, control tensors, idle timeout."""

    def __init__(self, config: mc.ModelConfig, instances: int, reject: RejectFn) -> None:
        self._config = config
        self._reject = reject
        self._cond = threading.Condition()
        self._closed = False
        self._queues = [collections.deque[Pending]() for _ in range(max(instances, 1))]
        self._sequences: dict[int | str, _Sequence] = {}
        idle_us = config.sequence_batching.max_sequence_idle_microseconds or 1_000_000
        self._idle_ns = idle_us * 1000
        self._slots = max(config.max_batch_size, 1)
        self._iterative = bool(config.sequence_batching.iterative_sequence)
        self._last_generated_id = 0

    def _describe(self, request: InferRequest) -> str:
        return (
            f"inference request for sequence {request.correlation_id} to model "
            f"'{request.model_name}'"
        )

    def _release_idle(self, now: int) -> None:
        for corr_id, seq in list(self._sequences.items()):
            queued = any(p.request.correlation_id == corr_id for p in self._queues[seq.instance])
            if not queued and now - seq.last_ns > self._idle_ns:
                del self._sequences[corr_id]

    def enqueue(self, pending: Pending) -> None:
        request = pending.request
        with self._cond:
            if self._closed:
                raise ServerError.unavailable(
                    f"model '{request.model_name}' is unloading; request rejected"
                )
            if self._iterative and request.correlation_id in (0, ""):
                # Triton gives a request without a sequence a sequence of its own: a fresh id
                # and the START flag (an END flag the request had is dropped; its sequence
                # ends when the model releases it without rescheduling).
                self._last_generated_id += 1
                request.correlation_id = self._last_generated_id
                request.sequence_start = True
                request.sequence_end = False
            corr_id = request.correlation_id
            now = time.monotonic_ns()
            self._release_idle(now)
            seq = self._sequences.get(corr_id)
            if request.sequence_start:
                if seq is None:
                    loads = [0] * len(self._queues)
                    for other in self._sequences.values():
                        loads[other.instance] += 1
                    seq = _Sequence(instance=loads.index(min(loads)), last_ns=now)
                    self._sequences[corr_id] = seq
            elif seq is None:
                raise ServerError.invalid_arg(
                    f"{self._describe(request)} must specify the START flag on the first "
                    "request of the sequence"
                )
            seq.last_ns = now
            seq.ending = request.sequence_end
            self._queues[seq.instance].append(pending)
            if request.sequence_end:
                # The slot is free for new sequences once this request is queued; later
                # requests with this id must start a new sequence.
                del self._sequences[corr_id]
            self._cond.notify_all()

    def requeue(self, pending: Pending, instance: int) -> None:
        with self._cond:
            self._queues[instance].appendleft(pending)
            self._cond.notify_all()

    def released(self, pending: Pending) -> None:
        if not self._iterative:
            return
        # An iterative sequence lasts as long as the model reschedules its request.
        corr_id = pending.request.correlation_id
        with self._cond:
            queued = any(
                p.request.correlation_id == corr_id for queue in self._queues for p in queue
            )
            if not queued:
                self._sequences.pop(corr_id, None)
                self._cond.notify_all()

    def queued(self) -> int:
        with self._cond:
            return sum(len(q) for q in self._queues)

    def close(self) -> list[Pending]:
        with self._cond:
            self._closed = True
            rest = [p for q in self._queues for p in q]
            for q in self._queues:
                q.clear()
            self._cond.notify_all()
            return rest

    def next_batch(self, instance: int, timeout_s: float) -> list[Pending]:
        end = time.monotonic() + timeout_s
        batch: list[Pending] = []
        rejected: list[tuple[Pending, ServerError]] = []
        with self._cond:
            queue = self._queues[instance]
            while not self._closed and not queue:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return []
                self._cond.wait(remaining)
            now = time.monotonic_ns()
            seen: set[int | str] = set()
            rest: collections.deque[Pending] = collections.deque()
            while queue:
                pending = queue.popleft()
                corr_id = pending.request.correlation_id
                if pending.request.cancelled.is_set():
                    rejected.append(
                        (pending, ServerError(ErrorKind.CANCELLED, "Request cancelled"))
                    )
                elif pending.deadline_ns and now >= pending.deadline_ns:
                    rejected.append((pending, ServerError.unavailable("Request timeout expired")))
                elif corr_id in seen or len(batch) >= self._slots:
                    rest.append(pending)  # one request per sequence per execution, in order
                else:
                    seen.add(corr_id)
                    batch.append(pending)
            queue.extend(rest)
        for pending, error in rejected:
            self._reject(pending, error)
        for pending in batch:
            controls = control_tensors(self._config, pending.request)
            names = {tensor.name for tensor in controls}
            # A rescheduled request already carries controls from its previous dispatch.
            request = pending.request
            request.inputs = [t for t in request.inputs if t.name not in names] + controls
        return batch


def make_scheduler(config: mc.ModelConfig, instances: int, reject: RejectFn) -> Scheduler:
    """The scheduler a model's configuration asks for."""
    if config.HasField("sequence_batching"):
        return SequenceScheduler(config, instances, reject)
    return QueueScheduler(config, reject)
