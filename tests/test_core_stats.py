"""Tests of :mod:`mock_server.core.stats`."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format

from mock_server.compose import build_core
from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.server import CoreServer, ModelControlMode, ServerOptions
from mock_server.core.stats import ModelStats, StatsRegistry, epoch_ms
from mock_server.core.types import InferRequest, InferResponse, Tensor
from tritonclient.grpc import service_pb2

# The statistics JSON observed from Triton 2.51 (docs/protocol.md section 3.11).
TRITON_EXAMPLE = json.loads(
    """
{"model_stats":[{"name":"identity_fp32","version":"1","last_inference":1795318309730,
  "inference_count":20,"execution_count":14,
  "inference_stats":{"success":{"count":14,"ns":41388267},"fail":{"count":0,"ns":0},
    "queue":{"count":14,"ns":1311144},"compute_input":{"count":14,"ns":423546},
    "compute_infer":{"count":14,"ns":38366438},"compute_output":{"count":14,"ns":1253498},
    "cache_hit":{"count":0,"ns":0},"cache_miss":{"count":0,"ns":0}},
  "response_stats":{},
  "batch_stats":[{"batch_size":1,"compute_input":{"count":8,"ns":119906},
    "compute_infer":{"count":8,"ns":1737164},"compute_output":{"count":8,"ns":721510}}],
  "memory_usage":[]}]}
"""
)

RESPONSE_KEYS = ["compute_infer", "compute_output", "success", "fail", "empty_response", "cancel"]


def shape_of(value: Any) -> Any:
    """Replace every leaf by its type, keeping key order, to compare structures."""
    if isinstance(value, dict):
        return [(k, shape_of(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape_of(v) for v in value]
    return type(value).__name__


def duration_dict(msg: Any) -> dict[str, int]:
    return {"count": msg.count, "ns": msg.ns}


def proto_to_dict(msg: service_pb2.ModelStatistics) -> dict[str, Any]:
    """Read a ``ModelStatistics`` message back into the JSON form, field by field."""
    infer_keys = [
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
        "cache_hit",
        "cache_miss",
    ]
    return {
        "name": msg.name,
        "version": msg.version,
        "last_inference": msg.last_inference,
        "inference_count": msg.inference_count,
        "execution_count": msg.execution_count,
        "inference_stats": {k: duration_dict(getattr(msg.inference_stats, k)) for k in infer_keys},
        "response_stats": {
            key: {k: duration_dict(getattr(msg.response_stats[key], k)) for k in RESPONSE_KEYS}
            for key in sorted(msg.response_stats, key=int)
        },
        "batch_stats": [
            {
                "batch_size": b.batch_size,
                "compute_input": duration_dict(b.compute_input),
                "compute_infer": duration_dict(b.compute_infer),
                "compute_output": duration_dict(b.compute_output),
            }
            for b in msg.batch_stats
        ],
        "memory_usage": list(msg.memory_usage),
    }


def filled_stats() -> ModelStats:
    """Statistics with every kind of entry recorded."""
    stats = ModelStats("identity_fp32", 1, clock_ms=lambda: 1795318309730)
    stats.record_execution(2, 10, 100, 1000)
    stats.record_success(1, 5, 6, 7, 8)
    stats.record_success(1, 5, 6, 7, 8, request_ns=50)
    stats.record_execution(1, 1, 2, 3)
    stats.record_success(1, 1, 1, 1, 1)
    stats.record_failure(99)
    stats.record_response(0, 10, 20, True)
    stats.record_response(1, 30, 0, False, True)
    stats.record_cache_hit(40, 4, 3)
    stats.record_cache_miss(7)
    return stats


# -- shape ------------------------------------------------------------------------------


def test_snapshot_has_exactly_the_shape_of_tritons_json() -> None:
    stats = ModelStats("identity_fp32", 1)
    stats.record_execution(1, 1, 2, 3)
    stats.record_success(1, 1, 1, 1, 1)
    ours = {"model_stats": [asdict(stats.snapshot())]}
    assert shape_of(ours) == shape_of(TRITON_EXAMPLE)


def test_fresh_stats_print_zero_durations_and_no_batches() -> None:
    body = asdict(ModelStats("m", 3).snapshot())
    assert body["name"] == "m" and body["version"] == "3"
    assert body["last_inference"] == 0
    assert body["inference_count"] == 0 and body["execution_count"] == 0
    assert all(d == {"count": 0, "ns": 0} for d in body["inference_stats"].values())
    assert body["batch_stats"] == [] and body["response_stats"] == {}
    assert body["memory_usage"] == []


def test_numbers_are_json_integers() -> None:
    text = json.dumps(asdict(filled_stats().snapshot()))

    def leaves(value: Any) -> list[Any]:
        if isinstance(value, dict):
            return [x for v in value.values() for x in leaves(v)]
        if isinstance(value, list):
            return [x for v in value for x in leaves(v)]
        return [value]

    numbers = [x for x in leaves(json.loads(text)) if not isinstance(x, str)]
    assert numbers and all(type(x) is int for x in numbers)
    assert "." not in text.replace('"identity_fp32"', "")


def test_response_stats_entry_shape() -> None:
    body = asdict(filled_stats().snapshot())
    assert list(body["response_stats"]) == ["0", "1"]
    assert list(body["response_stats"]["0"]) == RESPONSE_KEYS


# -- counting ---------------------------------------------------------------------------


def test_success_and_execution_counting() -> None:
    stats = ModelStats("m", 1, clock_ms=lambda: 1234)
    # One dynamic batch of two requests (batch sizes 3 and 2), executed once.
    stats.record_execution(5, 10, 20, 30)
    stats.record_success(3, 100, 1, 2, 3)
    stats.record_success(2, 200, 4, 5, 6)
    assert stats.execution_count == 1
    assert stats.inference_count == 5
    assert stats.last_inference == 1234
    infer = stats.inference_stats
    assert infer.success.count == 2 and infer.success.ns == (100 + 1 + 2 + 3) + (200 + 4 + 5 + 6)
    assert infer.queue.count == 2 and infer.queue.ns == 300
    assert (infer.compute_input.ns, infer.compute_infer.ns, infer.compute_output.ns) == (5, 7, 9)
    assert infer.fail.count == 0


def test_request_ns_overrides_success_duration() -> None:
    stats = ModelStats("m", 1)
    stats.record_success(1, 1, 1, 1, 1, request_ns=1000)
    assert stats.inference_stats.success.ns == 1000


def test_non_batching_request_counts_one_inference() -> None:
    stats = ModelStats("m", 1)
    stats.record_success(0, 1, 1, 1, 1)
    stats.record_execution(0, 1, 1, 1)
    assert stats.inference_count == 1
    assert [b.batch_size for b in stats.batch_stats] == [1]


def test_failure_counts_only_in_fail() -> None:
    stats = ModelStats("m", 1)
    stats.record_failure(500)
    stats.record_failure(-5)  # a clock mix-up is recorded as 0, not a crash
    body = asdict(stats.snapshot())
    assert body["inference_stats"]["fail"] == {"count": 2, "ns": 500}
    assert body["inference_stats"]["success"] == {"count": 0, "ns": 0}
    assert body["inference_count"] == 0 and body["execution_count"] == 0
    assert body["last_inference"] == 0


def test_batch_stats_group_by_batch_size_in_ascending_order() -> None:
    stats = ModelStats("m", 1)
    for size, n in ((4, 3), (1, 2), (8, 1), (4, 1)):
        stats.record_execution(size, n, 10 * n, 100 * n)
    body = asdict(stats.snapshot())["batch_stats"]
    assert [b["batch_size"] for b in body] == [1, 4, 8]
    four = body[1]
    assert four["compute_input"] == {"count": 2, "ns": 4}
    assert four["compute_infer"] == {"count": 2, "ns": 40}
    assert four["compute_output"] == {"count": 2, "ns": 400}
    assert stats.execution_count == 4


def test_last_inference_uses_wall_clock_and_never_goes_back() -> None:
    times = iter([200, 100])
    stats = ModelStats("m", 1, clock_ms=lambda: next(times))
    stats.record_execution(1, 0, 0, 0)
    stats.record_execution(1, 0, 0, 0)
    assert stats.last_inference == 200
    real = ModelStats("m", 1)
    before = epoch_ms()
    real.record_execution(1, 0, 0, 0)
    assert before <= real.last_inference <= epoch_ms()


def test_response_stats_semantics() -> None:
    stats = ModelStats("m", 1)
    stats.record_response(0, 10, 5, True)
    stats.record_response(0, 20, 0, False)  # error without outputs
    stats.record_response(1, 7, 3, False)  # error after producing outputs
    stats.record_response(2, 9, 0, True, True)  # empty final response
    stats.record_response(3, 4, 0, False, False, True)  # cancelled
    body = asdict(stats.snapshot())["response_stats"]
    assert body["0"]["compute_infer"] == {"count": 2, "ns": 30}
    assert body["0"]["compute_output"] == {"count": 1, "ns": 5}
    assert body["0"]["success"] == {"count": 1, "ns": 15}
    assert body["0"]["fail"] == {"count": 1, "ns": 20}
    assert body["1"]["compute_output"] == {"count": 1, "ns": 3}
    assert body["1"]["fail"] == {"count": 1, "ns": 10}
    assert body["2"]["empty_response"] == {"count": 1, "ns": 9}
    assert body["2"]["compute_infer"] == {"count": 1, "ns": 9}
    assert body["2"]["success"] == {"count": 0, "ns": 0}
    assert body["3"]["cancel"] == {"count": 1, "ns": 4}
    assert body["3"]["compute_infer"] == {"count": 0, "ns": 0}
    with pytest.raises(ValueError):
        stats.record_response(-1, 0, 0, True)


def test_response_stats_keys_sort_numerically() -> None:
    stats = ModelStats("m", 1)
    for index in (10, 2, 0, 1):
        stats.record_response(index, 1, 1, True)
    assert list(asdict(stats.snapshot())["response_stats"]) == ["0", "1", "2", "10"]
    assert list(stats.response_stats) == ["0", "1", "2", "10"]


def test_cache_hit_and_miss() -> None:
    stats = ModelStats("m", 1)
    stats.record_cache_hit(40, 4, 3)
    stats.record_cache_miss(7)
    infer = asdict(stats.snapshot())["inference_stats"]
    assert infer["success"] == {"count": 1, "ns": 47}
    assert infer["queue"] == {"count": 1, "ns": 4}
    assert infer["cache_hit"] == {"count": 1, "ns": 3}
    assert infer["cache_miss"] == {"count": 1, "ns": 7}
    assert infer["compute_infer"] == {"count": 0, "ns": 0}
    assert stats.inference_count == 0 and stats.execution_count == 0


def test_accessors_return_copies() -> None:
    stats = filled_stats()
    snapshot = stats.inference_stats
    snapshot.success.count = 1000
    stats.batch_stats[0].compute_infer.count = 1000
    assert stats.inference_stats.success.count != 1000
    assert stats.batch_stats[0].compute_infer.count != 1000


def test_concurrent_recording_totals_are_exact() -> None:
    stats = ModelStats("m", 1, clock_ms=lambda: 1)
    threads_n, per_thread = 16, 2000
    start = threading.Barrier(threads_n)

    def hammer(worker: int) -> None:
        start.wait()
        for i in range(per_thread):
            size = 1 + (i + worker) % 4
            stats.record_execution(size, 1, 2, 3)
            stats.record_success(size, 1, 1, 1, 1)
            if i % 10 == 0:
                stats.record_failure(7)
            stats.record_response(i % 3, 1, 1, True)
            if i % 100 == 0:
                asdict(stats.snapshot())  # readers run concurrently with writers

    workers = [threading.Thread(target=hammer, args=(w,)) for w in range(threads_n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()

    total = threads_n * per_thread
    expected_inferences = sum(1 + (i + w) % 4 for w in range(threads_n) for i in range(per_thread))
    body = asdict(stats.snapshot())
    assert body["execution_count"] == total
    assert body["inference_count"] == expected_inferences
    infer = body["inference_stats"]
    assert infer["success"] == {"count": total, "ns": 4 * total}
    assert infer["queue"] == {"count": total, "ns": total}
    assert infer["fail"] == {"count": threads_n * (per_thread // 10), "ns": 7 * threads_n * 200}
    assert sum(b["compute_infer"]["count"] for b in body["batch_stats"]) == total
    assert sum(b["compute_output"]["ns"] for b in body["batch_stats"]) == 3 * total
    assert sum(r["success"]["count"] for r in body["response_stats"].values()) == total


# -- protobuf ---------------------------------------------------------------------------


def test_snapshot_fills_the_protobuf_message_by_its_json_mapping() -> None:
    # The gRPC frontend fills ModelStatistics from the snapshot's fields: every name and the
    # nesting must be the message's (ParseDict refuses an unknown field).
    stats = filled_stats()
    msg = json_format.ParseDict(asdict(stats.snapshot()), service_pb2.ModelStatistics())
    parsed = service_pb2.ModelStatistics.FromString(msg.SerializeToString())
    assert proto_to_dict(parsed) == asdict(stats.snapshot())
    assert parsed.last_inference == 1795318309730
    assert parsed.batch_stats[0].batch_size == 1 and parsed.batch_stats[1].batch_size == 2


def test_snapshot_is_a_copy() -> None:
    stats = filled_stats()
    before = stats.snapshot()
    stats.record_success(1, 1, 1, 1, 1)
    stats.record_execution(1, 1, 1, 1)
    assert (
        stats.snapshot().inference_stats.success.count == before.inference_stats.success.count + 1
    )
    assert (
        stats.snapshot().batch_stats[0].compute_infer.count
        == before.batch_stats[0].compute_infer.count + 1
    )


# -- registry ---------------------------------------------------------------------------


def test_registry_get_or_create_returns_the_same_recorder() -> None:
    registry = StatsRegistry()
    first = registry.get("m", 1)
    assert registry.get("m", 1) is first
    assert registry.get_or_create("m", 1) is first
    assert registry.find("m", 1) is first
    assert registry.find("m", 2) is None
    assert registry.find("other", 1) is None


def test_registry_collect_all_sorted() -> None:
    registry = StatsRegistry()
    for name, version in (("b", 1), ("a", 3), ("a", 1), ("c", 2)):
        registry.get(name, version)
    listed = [(s.name, s.version) for s in registry.collect()]
    assert listed == [("a", 1), ("a", 3), ("b", 1), ("c", 2)]
    assert [(s.name, s.version) for s in registry.collect("", "")] == listed
    assert [(s.name, s.version) for s in registry.collect("a")] == [("a", 1), ("a", 3)]
    assert [(s.name, s.version) for s in registry.collect("a", 3)] == [("a", 3)]
    assert [(s.name, s.version) for s in registry.collect("a", "1")] == [("a", 1)]


def test_registry_unknown_model_is_invalid_arg() -> None:
    registry = StatsRegistry()
    registry.get("m", 1)
    with pytest.raises(ServerError) as info:
        registry.collect("x")
    assert info.value.kind is ErrorKind.INVALID_ARG
    assert info.value.message == "requested model 'x' is not available"


def test_registry_unknown_version_is_invalid_arg() -> None:
    registry = StatsRegistry()
    registry.get("m", 1)
    with pytest.raises(ServerError) as info:
        registry.collect("m", 2)
    assert info.value.kind is ErrorKind.INVALID_ARG
    assert info.value.message == "requested model version is not available for model 'm'"
    with pytest.raises(ServerError) as info:
        registry.collect("m", "one")
    assert info.value.kind is ErrorKind.INVALID_ARG
    assert "version string 'one'" in info.value.message


def test_registry_remove_on_unload() -> None:
    registry = StatsRegistry()
    registry.get("m", 1).record_execution(1, 1, 1, 1)
    registry.get("m", 2)
    registry.remove("m", 1)
    assert [s.version for s in registry.collect("m")] == [2]
    # A reload starts from zero.
    assert registry.get("m", 1).execution_count == 0
    registry.remove("m")
    with pytest.raises(ServerError):
        registry.collect("m")
    registry.remove("never-loaded")  # not an error
    assert registry.collect() == []


def test_registry_collects_by_name_then_version() -> None:
    registry = StatsRegistry(clock_ms=lambda: 5)
    registry.get("m", 1).record_execution(2, 1, 2, 3)
    registry.get("m", 1).record_success(2, 1, 1, 1, 1)
    registry.get("n", 1)
    registry.get("m", 3)
    (only,) = registry.collect("m", 1)
    assert only.snapshot().inference_count == 2
    assert only.snapshot().batch_stats[0].batch_size == 2
    assert only.snapshot().last_inference == 5
    assert [(s.name, s.version) for s in registry.collect()] == [("m", 1), ("m", 3), ("n", 1)]
    assert [s.version for s in registry.collect("m")] == [1, 3]


def test_registry_concurrent_get_creates_one_recorder() -> None:
    registry = StatsRegistry()
    seen: list[ModelStats] = []
    lock = threading.Lock()

    def grab() -> None:
        stats = registry.get("m", 1)
        stats.record_execution(1, 0, 0, 0)
        with lock:
            seen.append(stats)

    workers = [threading.Thread(target=grab) for _ in range(32)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len({id(s) for s in seen}) == 1
    assert registry.get("m", 1).execution_count == 32


# -- the core's recording, end to end on a server ----------------------------------------------
MODELS = Path(__file__).resolve().parent.parent / "mock_server" / "models"
CONFORMANCE_MODELS = Path(__file__).resolve().parent / "conformance" / "models"


@pytest.fixture
def core(tmp_path: Path) -> Iterator[CoreServer]:
    repo = tmp_path / "repo"
    for source in (
        MODELS / "identity_int32",
        MODELS / "square_int32",
        CONFORMANCE_MODELS / "fail_modes",
    ):
        shutil.copytree(source, repo / source.name)
    server = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["*"],
        )
    )
    server.start()
    yield server
    server.stop()


def _infer(core: CoreServer, model: str, name: str, data: np.ndarray) -> list[InferResponse]:
    tensor = Tensor(name, "INT32", tuple(data.shape), data)
    return list(core.infer_iter(InferRequest(model_name=model, inputs=[tensor]), 20))


def _stats(core: CoreServer, model: str) -> dict[str, Any]:
    (stats,) = core.statistics(model)
    return asdict(stats)


def _wait(predicate: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_model_error_responses_count_as_successes(core: CoreServer) -> None:
    """Triton 2.51's Python backend fails a request only when execute fails: a response the
    model sends with an error is a success."""
    for mode in (0, 1, 2, 1):
        _infer(core, "fail_modes", "MODE", np.array([mode], np.int32))
    stats = _stats(core, "fail_modes")
    infer = stats["inference_stats"]
    assert (infer["success"]["count"], infer["fail"]["count"]) == (3, 1)
    assert (stats["inference_count"], stats["execution_count"]) == (3, 4)
    # Every phase timed (Triton reports time in each), for the successes only.
    for phase in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert infer[phase]["count"] == 3 and infer[phase]["ns"] > 0, phase
    assert infer["fail"]["ns"] > 0
    (batch,) = stats["batch_stats"]
    assert batch["batch_size"] == 1 and batch["compute_input"]["count"] == 4
    assert stats["response_stats"] == {}
    failures = core.stats.failure_counts()[("fail_modes", 1)]
    assert failures == {"BACKEND": 1}


def test_decoupled_request_counts_once_when_its_execute_returns(core: CoreServer) -> None:
    responses = _infer(core, "square_int32", "IN", np.array([3], np.int32))
    assert len(responses) == 4 and responses[-1].final
    assert _wait(lambda: _stats(core, "square_int32")["execution_count"] == 1)
    stats = _stats(core, "square_int32")
    assert stats["inference_stats"]["success"]["count"] == 1
    assert stats["inference_count"] == 1
    assert stats["response_stats"] == {}
    # An error response sent by the decoupled model: a success too.
    error = _infer(core, "square_int32", "IN", np.array([-1], np.int32))[-1].error
    assert error is not None and error.kind is ErrorKind.INVALID_ARG
    assert _wait(lambda: _stats(core, "square_int32")["inference_stats"]["success"]["count"] == 2)
    assert _stats(core, "square_int32")["inference_stats"]["fail"]["count"] == 0


def test_statistics_across_loads(core: CoreServer, tmp_path: Path) -> None:
    """A plain load of an unchanged model, or one whose override config changes nothing, keeps
    it; a load that changes the model starts its statistics again (they stay available
    throughout); an unload removes them."""
    data = np.array([[1, 2]], np.int32)
    for _ in range(2):
        _infer(core, "identity_int32", "INPUT0", data)
    core.load_model("identity_int32")
    assert _stats(core, "identity_int32")["inference_count"] == 2
    model_file = tmp_path / "repo" / "identity_int32" / "1" / "model.py"
    later = model_file.stat().st_mtime + 10
    os.utime(model_file, (later, later))
    core.load_model("identity_int32")
    stats = _stats(core, "identity_int32")
    assert (stats["inference_count"], stats["last_inference"]) == (0, 0)
    _infer(core, "identity_int32", "INPUT0", data)
    assert _stats(core, "identity_int32")["inference_count"] == 1
    same: dict[str, Any] = {
        "backend": "python",
        "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [-1, -1]}],
        "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [-1, -1]}],
    }
    core.load_model("identity_int32", config=json.dumps(same))  # the same model: kept
    assert _stats(core, "identity_int32")["inference_count"] == 1
    # Other instance groups or version policy: updated in place, statistics carry on.
    regrouped = {**same, "instance_group": [{"count": 2, "kind": "KIND_CPU"}]}
    core.load_model("identity_int32", config=json.dumps(regrouped))
    assert [g.count for g in core.model_config("identity_int32").instance_group] == [2]
    assert _stats(core, "identity_int32")["inference_count"] == 1
    changed = {**same, "parameters": {"k": {"string_value": "v"}}}
    core.load_model("identity_int32", config=json.dumps(changed))
    assert _stats(core, "identity_int32")["inference_count"] == 0
    core.unload_model("identity_int32")
    with pytest.raises(ServerError) as info:
        core.statistics("identity_int32")
    assert info.value.message == "requested model 'identity_int32' is not available"
    # The failure counters stay, as Triton 2.51 keeps them.
    assert ("identity_int32", 1) in core.stats.failure_counts()


def test_registry_publish_replaces_and_remove_only_its_own() -> None:
    registry = StatsRegistry()
    old = registry.new("m", 1)
    registry.publish(old)
    new = registry.new("m", 1)
    assert registry.collect("m") == [old]  # not reported before it is published
    registry.publish(new)
    registry.remove("m", 1, only=old)  # the replaced version stops: its successor stays
    assert registry.collect("m") == [new]
    registry.remove("m", 1, only=new)
    assert registry.collect() == []
    assert registry.failures("m", 1) is registry.failures("m", 1)
