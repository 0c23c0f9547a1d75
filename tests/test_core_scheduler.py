"""Schedulers and instance workers, with fake model instances on real threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format

from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.instances import DIRECT_MAX_BYTES, ModelVersion, instance_specs
from mock_server.core.scheduler import Pending, QueueScheduler, SequenceScheduler, control_tensors
from mock_server.core.types import Assist, InferRequest, InferResponse, RequestedOutput, Tensor
from tritonclient.grpc import model_config_pb2 as mc


def config(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


class Recorder:
    """Collects responses per request id; wait() blocks until n finals arrived."""

    def __init__(self) -> None:
        self.responses: list[InferResponse] = []
        self.cond = threading.Condition()

    def __call__(self, response: InferResponse) -> None:
        with self.cond:
            self.responses.append(response)
            self.cond.notify_all()

    def wait(self, finals: int, timeout: float = 10.0) -> list[InferResponse]:
        with self.cond:
            ok = self.cond.wait_for(lambda: sum(r.final for r in self.responses) >= finals, timeout)
        assert ok, f"only {sum(r.final for r in self.responses)} of {finals} final responses"
        return self.responses


class FakeStats:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def record_success(self, *args: Any) -> None:
        self.calls.append(("success", args))

    def record_failure(self, *args: Any) -> None:
        self.calls.append(("failure", args))

    def record_execution(self, *args: Any) -> None:
        self.calls.append(("execution", args))


class EchoInstance:
    """Answers every request with OUT = IN (+ optional delay); records the batches it saw."""

    def __init__(self, delay: float = 0.0) -> None:
        self.batches: list[list[InferRequest]] = []
        self.delay = delay
        self.finalized = False
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.batches.append(list(requests))
        time.sleep(self.delay)
        for request in requests:
            assert request.response_callback is not None
            tensor = request.inputs[0]
            out = Tensor("OUT", tensor.datatype, tensor.shape, tensor.data.copy())
            extra = Tensor("EXTRA", "INT32", (1,), np.array([7], np.int32))
            request.response_callback(InferResponse("", "", outputs=[out, extra], final=True))
        with self.lock:
            self.active -= 1
        return []

    def finalize(self) -> None:
        self.finalized = True


def request(rec: Recorder, value: int = 1, batch: int = 1, **kw: Any) -> InferRequest:
    data = np.full((batch, 1), value, dtype=np.int32)
    return InferRequest(
        model_name="m",
        id=str(value),
        inputs=[Tensor("IN", "INT32", data.shape, data)],
        response_callback=rec,
        **kw,
    )


def make_version(cfg: mc.ModelConfig, instances: list[Any], stats: Any = None) -> ModelVersion:
    return ModelVersion("m", 1, cfg, instances, stats or FakeStats(), Path("."))


def test_default_scheduler_one_request_per_execution_and_output_filtering() -> None:
    inst = EchoInstance()
    version = make_version(config('name: "m" max_batch_size: 8'), [inst])
    rec = Recorder()
    try:
        for i in range(5):
            r = request(rec, i)
            if i == 0:
                r.outputs = [RequestedOutput("OUT")]
            version.enqueue(r, 1)
        responses = rec.wait(5)
    finally:
        version.stop(5)
    assert all(len(b) == 1 for b in inst.batches)
    first = next(r for r in responses if r.id == "0")
    assert [t.name for t in first.outputs] == ["OUT"]  # only what was requested
    other = next(r for r in responses if r.id == "1")
    assert [t.name for t in other.outputs] == ["OUT", "EXTRA"]
    assert first.model_name == "m" and first.model_version == "1"
    assert inst.finalized


def test_dynamic_batcher_forms_batches_under_load() -> None:
    inst = EchoInstance(delay=0.05)
    cfg = config(
        'name: "m" max_batch_size: 8 dynamic_batching { max_queue_delay_microseconds: 200000 }'
    )
    stats = FakeStats()
    version = make_version(cfg, [inst], stats)
    rec = Recorder()
    try:
        for i in range(16):
            version.enqueue(request(rec, i), 1)
        rec.wait(16)
    finally:
        version.stop(5)
    sizes = [len(b) for b in inst.batches]
    assert sum(sizes) == 16
    assert max(sizes) > 1, sizes
    assert all(s <= 8 for s in sizes)
    executions = [c for c in stats.calls if c[0] == "execution"]
    assert sum(c[1][0] for c in executions) == 16


def test_dynamic_batcher_preferred_size_dispatches_without_waiting_for_delay() -> None:
    inst = EchoInstance()
    cfg = config(
        'name: "m" max_batch_size: 8 dynamic_batching { preferred_batch_size: [2] '
        "max_queue_delay_microseconds: 5000000 }"
    )
    version = make_version(cfg, [inst])
    rec = Recorder()
    start = time.monotonic()
    try:
        version.enqueue(request(rec, 1), 1)
        version.enqueue(request(rec, 2), 1)
        rec.wait(2, timeout=3)
    finally:
        version.stop(5)
    assert time.monotonic() - start < 3  # far less than the 5 s delay
    assert [len(b) for b in inst.batches] == [2]


def test_batch_never_exceeds_max_batch_size_in_elements() -> None:
    inst = EchoInstance(delay=0.02)
    cfg = config(
        'name: "m" max_batch_size: 4 dynamic_batching { max_queue_delay_microseconds: 100000 }'
    )
    version = make_version(cfg, [inst])
    rec = Recorder()
    try:
        for i in range(6):
            version.enqueue(request(rec, i, batch=3), 3)
        rec.wait(6)
    finally:
        version.stop(5)
    assert all(sum(r.inputs[0].shape[0] for r in b) <= 4 for b in inst.batches)


def test_instances_run_concurrently() -> None:
    instances = [EchoInstance(delay=0.2), EchoInstance(delay=0.2)]
    cfg = config('name: "m" instance_group [{ count: 2 kind: KIND_CPU }]')
    version = make_version(cfg, instances)
    rec = Recorder()
    start = time.monotonic()
    try:
        for i in range(4):
            version.enqueue(request(rec, i), 1)
        rec.wait(4)
    finally:
        version.stop(5)
    elapsed = time.monotonic() - start
    assert all(inst.batches for inst in instances)
    assert elapsed < 0.75, elapsed  # 4 x 0.2 s serially would be 0.8 s


POLICY = (
    'name: "m" max_batch_size: 1 dynamic_batching { default_queue_policy { '
    "default_timeout_microseconds: 5000000 allow_timeout_override: %s } }"
)


def test_queue_timeout_rejects_with_unavailable() -> None:
    inst = EchoInstance(delay=0.3)
    version = make_version(config(POLICY % "true"), [inst])
    rec = Recorder()
    try:
        version.enqueue(request(rec, 1), 1)
        version.enqueue(request(rec, 2, timeout_us=50_000), 1)
        responses = rec.wait(2)
    finally:
        version.stop(5)
    late = next(r for r in responses if r.id == "2")
    assert late.error is not None and late.error.kind is ErrorKind.UNAVAILABLE
    assert late.error.message == "Request timeout expired"


@pytest.mark.parametrize(
    ("cfg", "client_us", "expected_us"),
    [
        ('name: "m"', 50_000, 0),  # no queue policy: the client's timeout is ignored
        (POLICY % "false", 50_000, 5_000_000),  # override not allowed: the default applies
        (POLICY % "true", 50_000, 50_000),  # override may lower the default
        (POLICY % "true", 9_000_000, 5_000_000),  # ... but never raise it
    ],
)
def test_timeout_rules(cfg: str, client_us: int, expected_us: int) -> None:
    sched = QueueScheduler(config(cfg), lambda p, e: None)
    pending = Pending(request(Recorder(), 1, timeout_us=client_us), 1)
    sched.enqueue(pending)
    got = pending.deadline_ns - pending.enqueue_ns if pending.deadline_ns else 0
    assert got == expected_us * 1000


def test_cancelled_while_queued() -> None:
    inst = EchoInstance(delay=0.3)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        version.enqueue(request(rec, 1), 1)
        r2 = request(rec, 2)
        version.enqueue(r2, 1)
        r2.cancel()
        responses = rec.wait(2)
    finally:
        version.stop(5)
    cancelled = next(r for r in responses if r.id == "2")
    assert cancelled.error is not None and cancelled.error.kind is ErrorKind.CANCELLED


def test_max_queue_size_and_priority_levels() -> None:
    cfg = config(
        'name: "m" max_batch_size: 4 dynamic_batching { priority_levels: 2 '
        "default_priority_level: 2 default_queue_policy { max_queue_size: 1 } }"
    )
    sched = QueueScheduler(cfg, lambda p, e: None)
    rec = Recorder()
    sched.enqueue(Pending(request(rec, 1), 1))
    with pytest.raises(ServerError, match="maximum queue size"):
        sched.enqueue(Pending(request(rec, 2), 1))
    sched.enqueue(Pending(request(rec, 3, priority=1), 1))  # another level, own queue
    with pytest.raises(ServerError, match="maximum queue size"):
        # Out of range: falls back to the default level 2, whose queue is full.
        sched.enqueue(Pending(request(rec, 4, priority=3), 1))
    batch = sched.next_batch(0, 1.0)
    assert next(p.request.id for p in batch) == "3"  # level 1 first


def test_model_exception_fails_the_batch_and_worker_survives() -> None:
    class Broken(EchoInstance):
        def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
            if requests[0].id == "1":
                raise RuntimeError("boom")
            return super().execute(requests)

    version = make_version(config('name: "m"'), [Broken()])
    rec = Recorder()
    try:
        version.enqueue(request(rec, 1), 1)
        version.enqueue(request(rec, 2), 1)
        responses = rec.wait(2)
    finally:
        version.stop(5)
    by_id = {r.id: r for r in responses}
    assert by_id["1"].error is not None and "boom" in by_id["1"].error.message
    assert by_id["1"].error.kind is ErrorKind.INTERNAL
    assert by_id["2"].error is None


def test_reschedule_requeues_request() -> None:
    class Twice(EchoInstance):
        def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
            self.batches.append(list(requests))
            if len(self.batches) == 1:
                return list(requests)
            return super().execute(requests)

    inst = Twice()
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        version.enqueue(request(rec, 5), 1)
        responses = rec.wait(1)
    finally:
        version.stop(5)
    assert len(responses) == 1 and responses[0].error is None
    assert len(inst.batches) >= 2


SEQ = """
name: "s" max_batch_size: 2
sequence_batching {
  max_sequence_idle_microseconds: 300000
  control_input [
    { name: "START" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] },
    { name: "READY" control [{ kind: CONTROL_SEQUENCE_READY fp32_false_true: [0, 1] }] },
    { name: "END" control [{ kind: CONTROL_SEQUENCE_END bool_false_true: [false, true] }] },
    { name: "CORRID" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }] }
  ]
}
"""


def test_control_tensors() -> None:
    cfg = config(SEQ)
    rec = Recorder()
    tensors = {
        t.name: t
        for t in control_tensors(cfg, request(rec, 1, correlation_id=42, sequence_start=True))
    }
    assert tensors["START"].data.tolist() == [[1]] and tensors["START"].datatype == "INT32"
    assert tensors["READY"].data.dtype == np.float32 and tensors["READY"].data.tolist() == [[1.0]]
    assert tensors["END"].data.tolist() == [[False]] and tensors["END"].datatype == "BOOL"
    assert tensors["CORRID"].data.tolist() == [[42]] and tensors["CORRID"].datatype == "UINT64"
    string_cfg = config(SEQ.replace("TYPE_UINT64", "TYPE_STRING"))
    corr = next(
        t
        for t in control_tensors(string_cfg, request(rec, 1, correlation_id="abc"))
        if t.name == "CORRID"
    )
    assert corr.datatype == "BYTES" and corr.data.tolist() == [[b"abc"]]


def test_sequences_stick_to_instances_and_keep_order() -> None:
    instances = [EchoInstance(delay=0.01), EchoInstance(delay=0.01)]
    cfg = config(SEQ + " instance_group [{ count: 2 }]")
    version = make_version(cfg, instances)
    rec = Recorder()
    try:
        for step in range(4):
            for corr in (100, 200, 300):
                version.enqueue(
                    request(
                        rec,
                        corr * 10 + step,
                        correlation_id=corr,
                        sequence_start=step == 0,
                        sequence_end=step == 3,
                    ),
                    1,
                )
        rec.wait(12)
    finally:
        version.stop(5)
    owner: dict[int, int] = {}
    for index, inst in enumerate(instances):
        for batch in inst.batches:
            ids = [r.correlation_id for r in batch]
            assert len(ids) == len(set(ids))  # one request per sequence per execution
            for r in batch:
                assert owner.setdefault(int(r.correlation_id), index) == index
    for corr in (100, 200, 300):
        seen = [
            int(r.id) % 10
            for inst in instances
            for b in inst.batches
            for r in b
            if r.correlation_id == corr
        ]
        assert seen == [0, 1, 2, 3]


def test_sequence_without_start_and_idle_release() -> None:
    sched = SequenceScheduler(config(SEQ), 1, lambda p, e: None)
    rec = Recorder()
    with pytest.raises(ServerError, match="must specify the START flag"):
        sched.enqueue(Pending(request(rec, 1, correlation_id=9), 1))
    sched.enqueue(Pending(request(rec, 1, correlation_id=9, sequence_start=True), 1))
    assert sched.next_batch(0, 1.0)
    sched.enqueue(Pending(request(rec, 2, correlation_id=9), 1))  # still active
    assert sched.next_batch(0, 1.0)
    time.sleep(0.4)  # idle timeout is 0.3 s
    with pytest.raises(ServerError, match="START flag"):
        sched.enqueue(Pending(request(rec, 3, correlation_id=9), 1))


ITERATIVE = 'name: "it" sequence_batching { iterative_sequence: true }'


@pytest.mark.parametrize(
    "flags",
    [{}, {"sequence_start": True}, {"sequence_end": True}, {"correlation_id": ""}],
)
def test_iterative_sequence_gives_requests_without_id_a_sequence_of_their_own(
    flags: dict[str, Any],
) -> None:
    # Triton 2.51: ids 1, 2, ... per model, START flag only (an END flag is dropped).
    sched = SequenceScheduler(config(ITERATIVE), 1, lambda p, e: None)
    other = SequenceScheduler(config(ITERATIVE), 1, lambda p, e: None)
    rec = Recorder()
    first, second = request(rec, 1, **flags), request(rec, 2, **flags)
    for req in (first, second):
        sched.enqueue(Pending(req, 1))
    assert [(r.correlation_id, r.sequence_start, r.sequence_end) for r in (first, second)] == [
        (1, True, False),
        (2, True, False),
    ]
    third = request(rec, 3)
    other.enqueue(Pending(third, 1))
    assert third.correlation_id == 1  # another model counts on its own


def test_iterative_sequence_ends_when_its_request_is_released() -> None:
    sched = SequenceScheduler(config(ITERATIVE), 1, lambda p, e: None)
    rec = Recorder()
    sched.enqueue(Pending(request(rec, 1, correlation_id=9, sequence_start=True), 1))
    (pending,) = sched.next_batch(0, 1.0)
    sched.requeue(pending, 0)  # rescheduled: the sequence goes on
    (pending,) = sched.next_batch(0, 1.0)
    sched.enqueue(Pending(request(rec, 2, correlation_id=9), 1))  # queued behind it
    sched.released(pending)
    (pending,) = sched.next_batch(0, 1.0)
    sched.released(pending)  # released, nothing queued: the sequence is over
    with pytest.raises(ServerError, match="must specify the START flag"):
        sched.enqueue(Pending(request(rec, 3, correlation_id=9), 1))


def test_sequence_id_zero_without_iterative_batching_is_not_a_sequence() -> None:
    # The validation refuses such requests before they reach the scheduler; the scheduler
    # itself never makes up an id for a model without iterative sequence batching.
    sched = SequenceScheduler(config(SEQ), 1, lambda p, e: None)
    with pytest.raises(ServerError, match="must specify the START flag"):
        sched.enqueue(Pending(request(Recorder(), 1), 1))


def test_decoupled_responses_and_stats() -> None:
    class Repeat(EchoInstance):
        def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
            def send(req: InferRequest) -> None:
                assert req.response_callback is not None
                for i in range(3):
                    data = np.array([i], np.int32)
                    req.response_callback(
                        InferResponse(
                            "", "", outputs=[Tensor("OUT", "INT32", (1,), data)], final=False
                        )
                    )
                req.response_callback(InferResponse("", "", final=True))

            for req in requests:
                threading.Thread(target=send, args=(req,)).start()
            return []

    stats = FakeStats()
    version = make_version(
        config('name: "m" model_transaction_policy { decoupled: true }'), [Repeat()], stats
    )
    rec = Recorder()
    try:
        version.enqueue(request(rec, 1), 1)
        responses = rec.wait(1)
    finally:
        version.stop(5)
    assert [r.final for r in responses] == [False, False, False, True]
    assert [r.outputs[0].data.tolist() for r in responses[:3]] == [[0], [1], [2]]
    # As Triton 2.51's Python backend: the request counts once, as a success, when its
    # execution ends; no per-response statistics.
    assert [c[0] for c in stats.calls if c[0] != "execution"] == ["success"]


def test_classification_output() -> None:
    class Scores(EchoInstance):
        def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
            for req in requests:
                assert req.response_callback is not None
                data = np.array([[0.1, 0.7, 0.2]], np.float32)
                req.response_callback(
                    InferResponse("", "", outputs=[Tensor("OUT", "FP32", (1, 3), data)])
                )
            return []

    version = make_version(config('name: "m" max_batch_size: 4'), [Scores()])
    rec = Recorder()
    try:
        r = request(rec, 1)
        r.outputs = [RequestedOutput("OUT", {"classification": 2})]
        version.enqueue(r, 1)
        out = rec.wait(1)[0].outputs[0]
    finally:
        version.stop(5)
    assert out.datatype == "BYTES" and out.shape == (1, 2)
    assert out.data.tolist() == [[b"0.700000:1", b"0.200000:2"]]


def test_instance_specs() -> None:
    cfg = config(
        'name: "m" instance_group [{ name: "a" count: 2 kind: KIND_CPU }, '
        '{ name: "g" count: 1 kind: KIND_GPU gpus: [0, 1] }]'
    )
    specs = instance_specs(cfg)
    assert [(s.name, s.kind, s.device_id) for s in specs] == [
        ("a_0", "CPU", 0),
        ("a_1", "CPU", 0),
        ("g_0_0", "GPU", 0),
        ("g_1_0", "GPU", 1),
    ]


def test_unload_drains_queue_then_rejects_new() -> None:
    inst = EchoInstance(delay=0.05)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    for i in range(3):
        version.enqueue(request(rec, i), 1)
    version.stop(5)
    assert sum(r.final for r in rec.responses) == 3
    assert all(r.error is None for r in rec.responses)
    with pytest.raises(ServerError, match="unloading"):
        version.enqueue(request(rec, 9), 1)


def test_cancel_flag_behaves_like_an_event() -> None:
    import threading
    import time

    from mock_server.core.types import CancelFlag

    flag = CancelFlag()
    assert not flag.is_set()
    t0 = time.monotonic()
    assert flag.wait(0.05) is False
    assert time.monotonic() - t0 >= 0.04
    timer = threading.Timer(0.05, flag.set)
    timer.start()
    assert flag.wait(5) is True
    timer.join()
    assert flag.is_set() and flag.wait(0) is True
    early = CancelFlag()
    early.set()
    assert early.wait(0) is True


# -- requests that skip the queue (an idle instance that executes asynchronously) -------------


class AsyncEcho(EchoInstance):
    """An instance in the manner of a stub process: ``execute_async`` hands the batch to a
    thread of its own (the "process") and reports its end through the callback."""

    def __init__(self, delay: float = 0.0, again: int = 0) -> None:
        super().__init__(delay)
        self.async_threads: list[int] = []
        self.sync_calls = 0
        self.again = again  # how many times the first request is asked to be rescheduled

    def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
        self.sync_calls += 1
        return super().execute(requests)

    def execute_async(self, requests: list[InferRequest], done: Any) -> None:
        self.async_threads.append(threading.get_ident())

        def run() -> None:
            if self.again:
                self.again -= 1
                self.batches.append(list(requests))
                done(list(requests))
                return
            done(super(AsyncEcho, self).execute(requests))

        threading.Thread(target=run, daemon=True).start()


def wait_parked(version: ModelVersion, count: int = 1, timeout: float = 5.0) -> None:
    """Wait until ``count`` workers wait for work (so that an instance is idle)."""
    scheduler = version.scheduler
    assert isinstance(scheduler, QueueScheduler)
    end = time.monotonic() + timeout
    while len(scheduler._parked) < count:
        assert time.monotonic() < end, "the workers did not start waiting"
        time.sleep(0.005)


def test_a_request_for_an_idle_instance_skips_the_queue_and_its_statistics_count() -> None:
    inst = AsyncEcho()
    stats = FakeStats()
    version = make_version(config('name: "m" max_batch_size: 8'), [inst], stats)
    rec = Recorder()
    try:
        wait_parked(version)
        version.enqueue(request(rec, 3), 1)
        (response,) = rec.wait(1)
        # Sent from the caller's thread, not by the worker: the worker never executed.
        assert inst.async_threads == [threading.get_ident()]
        assert inst.sync_calls == 0
        assert response.error is None and response.outputs[0].data.tolist() == [[3]]
        # The statistics are recorded before the final response is released.
        assert [c[0] for c in stats.calls] == ["success", "execution"]
        # The instance is given back: the next request skips the queue again.
        wait_parked(version)
        version.enqueue(request(rec, 4), 1)
        rec.wait(2)
        assert len(inst.async_threads) == 2
    finally:
        version.stop(5)
    assert inst.finalized


def test_while_the_instance_is_busy_requests_queue_and_run_in_order() -> None:
    inst = AsyncEcho(delay=0.05)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        wait_parked(version)
        for i in range(6):
            version.enqueue(request(rec, i), 1)
        responses = rec.wait(6)
    finally:
        version.stop(5)
    # The first skips the queue; each of the others is sent, in order, by the thread that
    # reported the previous one's end (the instance stays claimed), not by the worker.
    assert inst.async_threads[0] == threading.get_ident() and inst.sync_calls == 0
    assert len(inst.async_threads) == 6
    assert threading.get_ident() not in inst.async_threads[1:]
    assert [r.id for r in responses] == [str(i) for i in range(6)]
    assert inst.max_active == 1  # one execution at a time on the one instance


class SettlingEcho(AsyncEcho):
    """An AsyncEcho that also offers ``settle`` and ``ahead`` (as a stub-process instance
    does), recording how many sends it had seen when it was asked to wait for a send's end
    (``settled``) or told a request was on its way (``told``)."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__(delay)
        self.settled: list[int] = []
        self.told: list[int] = []

    def settle(self) -> None:
        self.settled.append(len(self.async_threads))

    def ahead(self) -> None:
        self.told.append(len(self.async_threads))


def test_the_sender_of_a_request_alone_in_flight_is_offered_to_wait_for_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sequential requests: the core offers the instance (settle) to wait for each on the
    thread that sent it.  Once a request arrives while another is in flight, no send is
    offered for SEQUENTIAL_NS, even one alone in flight (the sender's loop has other
    clients); after it, sequential sends are offered again."""
    from mock_server.core import instances

    monkeypatch.setattr(instances, "SEQUENTIAL_NS", 1_500_000_000)
    inst = SettlingEcho(delay=0.05)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        for value in range(2):
            wait_parked(version)
            version.enqueue(request(rec, value), 1)
            rec.wait(value + 1)
        assert inst.settled == [1, 2]
        wait_parked(version)
        version.enqueue(request(rec, 2), 1)  # sent at once, alone: offered
        version.enqueue(request(rec, 3), 1)  # overlaps it: queued, sent by the end's reader
        rec.wait(4)
        assert inst.settled == [1, 2, 3]
        wait_parked(version)
        version.enqueue(request(rec, 4), 1)  # alone, but within SEQUENTIAL_NS of an overlap
        rec.wait(5)
        assert inst.settled == [1, 2, 3]
        time.sleep(1.5)
        wait_parked(version)
        version.enqueue(request(rec, 5), 1)  # sequential again
        rec.wait(6)
        assert inst.settled == [1, 2, 3, 6]
    finally:
        version.stop(5)


def test_an_idle_instance_is_told_of_a_sequential_request_on_its_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ModelVersion.ahead reaches the idle instance that will take the request, only while
    requests come one after another: not with a request in flight, nor within SEQUENTIAL_NS
    of an overlap, nor when no instance is idle (busy, or a queue in front); an instance
    without ``ahead`` is left alone."""
    from mock_server.core import instances

    monkeypatch.setattr(instances, "SEQUENTIAL_NS", 1_500_000_000)
    inst = SettlingEcho(delay=0.2)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        wait_parked(version)
        version.ahead()
        assert inst.told == [0]
        version.enqueue(request(rec, 0), 1)
        version.ahead()  # one in flight: the instance is busy
        rec.wait(1)
        assert inst.told == [0]
        wait_parked(version)
        version.ahead()
        assert inst.told == [0, 1]
        version.enqueue(request(rec, 1), 1)
        version.enqueue(request(rec, 2), 1)  # overlaps it
        rec.wait(3)
        wait_parked(version)
        version.ahead()  # alone again, but within SEQUENTIAL_NS of the overlap
        assert inst.told == [0, 1]
        time.sleep(1.5)
        version.ahead()
        assert inst.told == [0, 1, 3]
    finally:
        version.stop(5)
    plain = make_version(config('name: "p"'), [AsyncEcho()])
    try:
        wait_parked(plain)
        plain.ahead()  # no ahead(): nothing to call, nothing raised
        assert plain.scheduler.idle() == 0
    finally:
        plain.stop(5)


def test_a_queued_request_whose_caller_blocks_for_it_is_left_to_the_worker() -> None:
    # A blocking caller (CoreServer.infer_iter) takes an instance's offer to read only before
    # it waits: sent later by another thread, its request could wait on a channel held for it.
    inst = AsyncEcho(delay=0.05)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        wait_parked(version)
        version.enqueue(request(rec, 1), 1)
        blocking = request(rec, 2)
        blocking.assist = Assist()
        version.enqueue(blocking, 1)
        responses = rec.wait(2)
    finally:
        version.stop(5)
    assert [r.id for r in responses] == ["1", "2"]
    assert len(inst.async_threads) == 1 and inst.sync_calls == 1


def test_a_rescheduled_direct_request_is_requeued_for_the_worker() -> None:
    inst = AsyncEcho(again=1)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        wait_parked(version)
        version.enqueue(request(rec, 5), 1)
        (response,) = rec.wait(1)
    finally:
        version.stop(5)
    assert response.error is None and response.outputs[0].data.tolist() == [[5]]
    # Requeued, then sent again by the thread that read the end, the instance still claimed.
    assert len(inst.async_threads) == 2 and inst.sync_calls == 0


@pytest.mark.parametrize(
    "cfg",
    [
        'name: "m" max_batch_size: 8 dynamic_batching {}',  # the batcher must see every request
        'name: "m" dynamic_batching { default_queue_policy { max_queue_size: 2 } }',
    ],
)
def test_batching_and_queue_policies_keep_every_request_in_the_queue(cfg: str) -> None:
    inst = AsyncEcho()
    version = make_version(config(cfg), [inst])
    rec = Recorder()
    try:
        wait_parked(version)
        assert version.scheduler.claim_idle() is None
        version.enqueue(request(rec, 1), 1)
        rec.wait(1)
    finally:
        version.stop(5)
    assert inst.async_threads == [] and inst.sync_calls == 1


def test_large_inputs_go_through_the_queue_and_the_worker() -> None:
    inst = AsyncEcho(delay=0.2)
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    big = np.zeros((DIRECT_MAX_BYTES // 4 + 1, 1), np.int32)
    try:
        wait_parked(version)
        version.enqueue(request(rec, 1), 1)  # small: skips the queue
        for rid in ("big", "small"):
            data = big if rid == "big" else np.ones((1, 1), np.int32)
            r = InferRequest(
                model_name="m", id=rid, inputs=[Tensor("IN", "INT32", data.shape, data)]
            )
            r.response_callback = rec
            version.enqueue(r, 1)
        responses = rec.wait(3)
    finally:
        version.stop(5)
    assert [r.id for r in responses] == ["1", "big", "small"]
    # The big one never skips the queue; the worker runs it and the rest.
    assert len(inst.async_threads) == 1 and inst.sync_calls == 2


def test_a_claimed_instance_takes_no_queued_work_until_given_back() -> None:
    scheduler = QueueScheduler(config('name: "m"'), lambda p, e: None)
    got: list[list[Pending]] = []
    worker = threading.Thread(target=lambda: got.append(scheduler.next_batch(0, 3.0)))
    worker.start()
    end = time.monotonic() + 5
    while not scheduler._parked and time.monotonic() < end:
        time.sleep(0.005)
    assert scheduler.claim_idle() == 0
    assert scheduler.claim_idle() is None  # the only instance is taken
    rec = Recorder()
    scheduler.enqueue(Pending(request(rec, 1), 1))
    time.sleep(0.1)
    assert got == []  # the claimed instance's worker leaves the queue alone
    assert scheduler.claim_idle() is None  # something is queued: nobody skips it
    scheduler.unclaim(0)
    worker.join(5)
    assert len(got) == 1 and len(got[0]) == 1
    scheduler.close()


def test_a_backend_error_in_execute_async_fails_the_request_and_gives_the_instance_back() -> None:
    class Broken(AsyncEcho):
        def execute_async(self, requests: list[InferRequest], done: Any) -> None:
            raise RuntimeError("no stub")

    inst = Broken()
    version = make_version(config('name: "m"'), [inst])
    rec = Recorder()
    try:
        wait_parked(version)
        version.enqueue(request(rec, 1), 1)
        (response,) = rec.wait(1)
        assert response.error is not None and "no stub" in response.error.message
        assert version.scheduler.claim_idle() == 0  # given back
        version.scheduler.unclaim(0)
    finally:
        version.stop(5)
