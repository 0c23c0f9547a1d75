"""The gRPC frontend end to end: raw ``GRPCInferenceService`` stubs against a real server.

A :class:`CoreServer` on the bundled repository and :class:`GrpcFrontend` instances on
127.0.0.1 port 0, their event loop on a background thread.  Every RPC, the status-code table
of the protocol reference (section 8), health, streams (decoupled models, errors, cancel),
shared memory, compression, restricted APIs and a 64 MiB tensor; plus NVIDIA's own
``tritonclient`` against the server when the peer interpreter is installed.
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import shutil
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import ml_dtypes
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mock_server.compose import build_core
from mock_server.core.server import CoreServer, ModelControlMode, ServerOptions
from mock_server.frontends.grpc import GrpcFrontend
from shm import posix
from tests import grpc_requests
from tritonclient._codec import grpc_client, grpc_common, types
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc
from tritonclient.utils._dtypes import DATATYPES

MODELS = Path(__file__).resolve().parent.parent / "mock_server" / "models"
T = 20.0  # timeout of every call
Code = grpc.StatusCode
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", 2**31 - 1),
    ("grpc.max_receive_message_length", 2**31 - 1),
]


class Served:
    """A GrpcFrontend on a shared event loop, with a channel and stubs to it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, core: CoreServer, **options: Any):
        self.loop = loop
        self.frontend = GrpcFrontend(core, port=0, **options)
        self.port = self.run(self.frontend.start())
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=CHANNEL_OPTIONS)
        self.stub: Any = service_pb2_grpc.GRPCInferenceServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(T)

    def close(self) -> None:
        self.channel.close()
        self.run(self.frontend.stop(1.0))


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    thread = threading.Thread(target=event_loop.run_forever, name="grpc-test-loop", daemon=True)
    thread.start()
    yield event_loop
    event_loop.call_soon_threadsafe(event_loop.stop)
    thread.join(10)
    event_loop.close()


@pytest.fixture(scope="module")
def core() -> Iterator[CoreServer]:
    server = build_core(ServerOptions(model_repository=[MODELS], allow_client_shm=True))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def served(loop: asyncio.AbstractEventLoop, core: CoreServer) -> Iterator[Served]:
    frontend = Served(loop, core)
    yield frontend
    frontend.close()


@pytest.fixture(scope="module")
def stub(served: Served) -> service_pb2_grpc.GRPCInferenceServiceStub:
    return served.stub


def fails(call: Callable[..., Any], request: Any, code: grpc.StatusCode, match: str = "") -> str:
    """Call an RPC that must fail with ``code`` (and a message matching ``match``)."""
    with pytest.raises(grpc.RpcError) as info:
        call(request, timeout=T)
    error: Any = info.value
    assert error.code() == code, (error.code(), error.details())
    assert re.search(match, error.details()), error.details()
    return str(error.details())


def output(response: Any, name: str) -> np.ndarray:
    """The output ``name`` of a ``ModelInferResponse`` (which must carry it)."""
    array = grpc_client.check_infer_response(response).get(name)
    assert array is not None, name
    return array


def tensor(name: str, array: np.ndarray, datatype: str | None = None) -> grpc_client.InputTensor:
    dt = datatype or {np.dtype(np.int32): "INT32", np.dtype(np.uint32): "UINT32"}[array.dtype]
    return grpc_client.InputTensor(name, dt, array.shape, array)


def simple_request(a: np.ndarray, b: np.ndarray, **kw: Any) -> pb.ModelInferRequest:
    return grpc_requests.infer_request("simple", [tensor("INPUT0", a), tensor("INPUT1", b)], **kw)


def repeat_request(values: list[int], delay_ms: int, request_id: str, **kw: Any) -> Any:
    inputs = [
        tensor("IN", np.array(values, dtype=np.int32)),
        tensor("DELAY", np.array([delay_ms], dtype=np.uint32)),
        tensor("WAIT", np.array([0], dtype=np.uint32)),
    ]
    return grpc_requests.infer_request("repeat_int32", inputs, request_id=request_id, **kw)


def slow_request(delay_ms: int, request_id: str = "") -> pb.ModelInferRequest:
    inputs = [
        tensor("INPUT0", np.array([7], dtype=np.int32)),
        tensor("DELAY_MS", np.array([delay_ms], dtype=np.uint32)),
    ]
    return grpc_requests.infer_request("slow", inputs, request_id=request_id)


A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.ones((1, 16), dtype=np.int32)


# -- health, metadata, configuration ---------------------------------------------------------


def test_health(served: Served) -> None:
    stub = served.stub
    assert stub.ServerLive(pb.ServerLiveRequest(), timeout=T).live
    assert stub.ServerReady(pb.ServerReadyRequest(), timeout=T).ready
    check = served.health.Check(health_pb2.HealthCheckRequest(service="any"), timeout=T)
    assert check.status == health_pb2.HealthCheckResponse.SERVING
    watch = served.health.Watch(health_pb2.HealthCheckRequest(), timeout=T)
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    watch.cancel()


def test_health_watch_reports_draining_and_ends_on_stop(loop: asyncio.AbstractEventLoop) -> None:
    # gRPC's client-side health checking watches this stream: a draining server must say
    # NOT_SERVING on it (and in Check), and stopping must not wait for open watches.
    options = ServerOptions(model_repository=[], model_control_mode=ModelControlMode.EXPLICIT)
    core = build_core(options)
    core.start()
    served = Served(loop, core)
    try:
        watch = served.health.Watch(health_pb2.HealthCheckRequest(), timeout=T)
        assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
        core.drain()
        assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
        check = served.health.Check(health_pb2.HealthCheckRequest(), timeout=T)
        assert check.status == health_pb2.HealthCheckResponse.NOT_SERVING
        assert not served.stub.ServerReady(pb.ServerReadyRequest(), timeout=T).ready
        started = time.monotonic()
        served.run(served.frontend.stop(5.0))  # the watch ends at once, not after the grace
        assert time.monotonic() - started < 4.0
        with pytest.raises(StopIteration):
            next(watch)
    finally:
        served.channel.close()
        core.stop()


def test_model_ready(stub: Any) -> None:
    assert stub.ModelReady(pb.ModelReadyRequest(name="simple"), timeout=T).ready
    assert stub.ModelReady(pb.ModelReadyRequest(name="simple", version="1"), timeout=T).ready
    assert not stub.ModelReady(pb.ModelReadyRequest(name="simple", version="9"), timeout=T).ready
    assert not stub.ModelReady(pb.ModelReadyRequest(name="nope"), timeout=T).ready
    fails(
        stub.ModelReady,
        pb.ModelReadyRequest(name="simple", version="x"),
        Code.INVALID_ARGUMENT,
        "failed to get model version from specified version string 'x'",
    )


def test_server_metadata(stub: Any) -> None:
    metadata = stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=T)
    assert metadata.name == "triton" and metadata.version
    assert list(metadata.extensions) == [
        "classification",
        "sequence",
        "model_repository",
        "model_repository(unload_dependents)",
        "schedule_policy",
        "model_configuration",
        "system_shared_memory",
        "cuda_shared_memory",
        "binary_tensor_data",
        "parameters",
        "statistics",
        "trace",
        "logging",
    ]


def test_model_metadata_and_config(stub: Any) -> None:
    metadata = stub.ModelMetadata(pb.ModelMetadataRequest(name="simple"), timeout=T)
    assert (metadata.name, list(metadata.versions), metadata.platform) == (
        "simple",
        ["1"],
        "python",
    )
    assert [(t.name, t.datatype, list(t.shape)) for t in metadata.inputs] == [
        ("INPUT0", "INT32", [-1, 16]),
        ("INPUT1", "INT32", [-1, 16]),
    ]
    assert [t.name for t in metadata.outputs] == ["OUTPUT0", "OUTPUT1"]
    fails(
        stub.ModelMetadata,
        pb.ModelMetadataRequest(name="nope"),
        Code.NOT_FOUND,
        r"^Request for unknown model: 'nope' is not found$",
    )
    fails(
        stub.ModelMetadata,
        pb.ModelMetadataRequest(name="simple", version="7"),
        Code.NOT_FOUND,
        "'simple' version 7 is not found",
    )
    fails(
        stub.ModelMetadata,
        pb.ModelMetadataRequest(name="simple", version="-1"),
        Code.INVALID_ARGUMENT,
        "invalid model version specified '-1'",
    )
    config = stub.ModelConfig(pb.ModelConfigRequest(name="repeat_int32"), timeout=T).config
    assert config.name == "repeat_int32" and config.model_transaction_policy.decoupled
    assert config.backend == "python"
    fails(stub.ModelConfig, pb.ModelConfigRequest(name="nope"), Code.NOT_FOUND, "unknown model")


def test_statistics(stub: Any) -> None:
    stub.ModelInfer(simple_request(A, B), timeout=T)
    everything = stub.ModelStatistics(pb.ModelStatisticsRequest(), timeout=T)
    assert "simple" in {s.name for s in everything.model_stats}
    stats = stub.ModelStatistics(pb.ModelStatisticsRequest(name="simple"), timeout=T)
    (simple,) = stats.model_stats
    assert simple.version == "1" and simple.inference_count >= 1
    assert simple.inference_stats.success.count >= 1 and simple.last_inference > 0
    fails(
        stub.ModelStatistics,
        pb.ModelStatisticsRequest(name="nope"),
        Code.INVALID_ARGUMENT,
        "requested model 'nope' is not available",
    )
    fails(
        stub.ModelStatistics,
        pb.ModelStatisticsRequest(name="simple", version="x"),
        Code.INVALID_ARGUMENT,
        "version string 'x'",
    )


# -- model repository ------------------------------------------------------------------------


def test_repository_index_and_control_mode(stub: Any) -> None:
    index = stub.RepositoryIndex(pb.RepositoryIndexRequest(), timeout=T)
    rows = {m.name: m for m in index.models}
    assert rows["simple"].state == "READY" and rows["simple"].version == "1"
    ready = stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True), timeout=T)
    assert all(m.state == "READY" for m in ready.models)
    fails(
        stub.RepositoryIndex,
        pb.RepositoryIndexRequest(repository_name="r"),
        Code.UNIMPLEMENTED,
        "'repository_name' specification is not supported",
    )
    fails(
        stub.RepositoryModelLoad,
        pb.RepositoryModelLoadRequest(model_name="simple"),
        Code.UNAVAILABLE,
        "^explicit model load / unload is not allowed if polling is enabled$",
    )
    fails(
        stub.RepositoryModelUnload,
        pb.RepositoryModelUnloadRequest(model_name="simple"),
        Code.UNAVAILABLE,
        "^explicit model load / unload is not allowed if polling is enabled$",
    )


def test_load_and_unload_in_explicit_mode(loop: asyncio.AbstractEventLoop) -> None:
    explicit = build_core(
        ServerOptions(model_repository=[MODELS], model_control_mode=ModelControlMode.EXPLICIT)
    )
    explicit.start()
    served = Served(loop, explicit)
    stub = served.stub
    try:
        assert not stub.ModelReady(pb.ModelReadyRequest(name="simple"), timeout=T).ready
        stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="simple"), timeout=T)
        assert stub.ModelReady(pb.ModelReadyRequest(name="simple"), timeout=T).ready
        response = stub.ModelInfer(simple_request(A, B), timeout=T)
        assert np.array_equal(output(response, "OUTPUT0"), A + B)
        fails(
            stub.RepositoryModelLoad,
            pb.RepositoryModelLoadRequest(model_name="nope"),
            Code.INTERNAL,
            "failed to load 'nope', failed to poll from model repository",
        )
        bad = pb.RepositoryModelLoadRequest(model_name="simple")
        bad.parameters["config"].bytes_param = b"{}"
        fails(
            stub.RepositoryModelLoad,
            bad,
            Code.INVALID_ARGUMENT,
            r"invalid value type for load parameter 'config', expected string_param\.",
        )
        bad = pb.RepositoryModelLoadRequest(model_name="simple")
        bad.parameters["file:1/model.py"].string_param = "x"
        fails(stub.RepositoryModelLoad, bad, Code.INVALID_ARGUMENT, "expected bytes_param")
        bad = pb.RepositoryModelLoadRequest(model_name="simple")
        bad.parameters["foo"].bool_param = True
        fails(stub.RepositoryModelLoad, bad, Code.INVALID_ARGUMENT, r"unrecognized load parameter")
        bad_unload = pb.RepositoryModelUnloadRequest(model_name="simple")
        bad_unload.parameters["unload_dependents"].string_param = "yes"
        fails(
            stub.RepositoryModelUnload,
            bad_unload,
            Code.INVALID_ARGUMENT,
            "invalid value type for 'unload_dependents' parameter, expected bool_param.",
        )
        unload = pb.RepositoryModelUnloadRequest(model_name="simple")
        unload.parameters["unload_dependents"].bool_param = True
        stub.RepositoryModelUnload(unload, timeout=T)
        assert not stub.ModelReady(pb.ModelReadyRequest(name="simple"), timeout=T).ready
        stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="nope"), timeout=T)
        fails(stub.ModelInfer, simple_request(A, B), Code.NOT_FOUND, "no available versions")
    finally:
        served.close()
        explicit.stop()


# -- inference ---------------------------------------------------------------------------------


def test_infer_simple(stub: Any) -> None:
    response = stub.ModelInfer(simple_request(A, B, request_id="req-1"), timeout=T)
    assert (response.model_name, response.model_version, response.id) == ("simple", "1", "req-1")
    assert [o.name for o in response.outputs] == ["OUTPUT0", "OUTPUT1"]
    assert len(response.raw_output_contents) == 2
    assert np.array_equal(output(response, "OUTPUT0"), A + B)
    assert np.array_equal(output(response, "OUTPUT1"), A - B)
    only = grpc_requests.infer_request(
        "simple",
        [tensor("INPUT0", A), tensor("INPUT1", B)],
        [grpc_client.RequestedOutput("OUTPUT1")],
    )
    assert [o.name for o in stub.ModelInfer(only, timeout=T).outputs] == ["OUTPUT1"]


def test_infer_typed_contents_and_classification(stub: Any) -> None:
    typed = grpc_requests.infer_request(
        "simple", [tensor("INPUT0", A), tensor("INPUT1", B)], typed_contents=True
    )
    response = stub.ModelInfer(typed, timeout=T)
    assert len(response.raw_output_contents) == 2  # outputs always in raw contents
    assert np.array_equal(output(response, "OUTPUT0"), A + B)
    classify = grpc_requests.infer_request(
        "simple",
        [tensor("INPUT0", A), tensor("INPUT1", B)],
        [grpc_client.RequestedOutput("OUTPUT0", class_count=2)],
    )
    response = stub.ModelInfer(classify, timeout=T)
    assert response.outputs[0].datatype == "BYTES"
    assert output(response, "OUTPUT0").tolist() == [[b"16:15", b"15:14"]]


def test_infer_strings_and_sequence(stub: Any) -> None:
    a = np.array([[str(i) for i in range(16)]], dtype=np.object_)
    b = np.array([["1"] * 16], dtype=np.object_)
    request = grpc_requests.infer_request(
        "simple_string", [tensor("INPUT0", a, "BYTES"), tensor("INPUT1", b, "BYTES")]
    )
    out = output(stub.ModelInfer(request, timeout=T), "OUTPUT0")
    assert [int(x) for x in out.ravel()] == [i + 1 for i in range(16)]

    def step(corr: int | str, value: int, start: bool = False, end: bool = False) -> int:
        data = np.array([[value]], dtype=np.int32)
        request = grpc_requests.infer_request(
            "simple_sequence",
            [tensor("INPUT", data)],
            sequence_id=corr,
            sequence_start=start,
            sequence_end=end,
        )
        return int(output(stub.ModelInfer(request, timeout=T), "OUTPUT").item())

    assert [step(9001, 0, start=True), step(9001, 11), step(9001, 7, end=True)] == [1, 11, 7]
    assert step("corr-x", 4, start=True, end=True) == 5


@pytest.mark.parametrize("datatype", list(DATATYPES))
def test_identity_every_datatype(stub: Any, datatype: str) -> None:
    rng = np.random.default_rng(1)
    if datatype == "BYTES":
        array = np.array([["é", b"\x00"], [b"", "x" * 300]], dtype=np.object_)
        expected = np.array([["é".encode(), b"\x00"], [b"", b"x" * 300]], dtype=np.object_)
    elif datatype == "BF16":
        array = expected = rng.random((2, 3)).astype(ml_dtypes.bfloat16)
    else:
        dtype = np.dtype(DATATYPES[datatype].numpy_type)
        array = expected = (rng.random((2, 3)) * 100).astype(dtype)
    request = grpc_requests.infer_request(
        f"identity_{datatype.lower()}",
        [grpc_client.InputTensor("INPUT0", datatype, array.shape, array)],
    )
    out = output(stub.ModelInfer(request, timeout=T), "OUTPUT0")
    assert out is not None and out.dtype == expected.dtype and out.shape == expected.shape
    assert out.tolist() == expected.tolist()


def test_infer_errors(stub: Any) -> None:
    fails(
        stub.ModelInfer,
        grpc_requests.infer_request("nope", []),
        Code.NOT_FOUND,
        "Request for unknown model: 'nope' is not found",
    )
    fails(
        stub.ModelInfer,
        simple_request(A, B, model_version="9"),
        Code.NOT_FOUND,
        "'simple' version 9 is not found",
    )
    fails(
        stub.ModelInfer,
        simple_request(A, B, model_version="v1"),
        Code.INVALID_ARGUMENT,
        "failed to get model version",
    )
    fails(
        stub.ModelInfer,
        repeat_request([1], 0, "d"),
        Code.UNIMPLEMENTED,
        r"^ModelInfer RPC doesn't support models with decoupled transaction policy$",
    )
    fails(
        stub.ModelInfer,
        simple_request(A[:, :8], B[:, :8]),
        Code.INVALID_ARGUMENT,
        # Triton visits INPUT1 first (its std::unordered_map order), so it names that one.
        r"unexpected shape for input 'INPUT1' for model 'simple'\. Expected \[-1,16\], got \[1,8\]",
    )
    fails(
        stub.ModelInfer,
        grpc_requests.infer_request("simple", [tensor("INPUT0", A)]),
        Code.INVALID_ARGUMENT,
        "expected 2 inputs but got 1 inputs for model 'simple'",
    )
    short = simple_request(A, B)
    short.raw_input_contents[1] = short.raw_input_contents[1][:-1]
    fails(
        stub.ModelInfer,
        short,
        Code.INVALID_ARGUMENT,
        r"input byte size mismatch for input 'INPUT1' for model 'simple'\. Expected 64, got 63",
    )
    missing = simple_request(A, B)
    del missing.raw_input_contents[1]
    fails(stub.ModelInfer, missing, Code.INVALID_ARGUMENT, "unable to find data for input tensor")
    reserved = simple_request(A, B)
    reserved.parameters["triton_x"].bool_param = True
    fails(stub.ModelInfer, reserved, Code.INVALID_ARGUMENT, "reserved for Triton usage")
    bad_string = grpc_requests.infer_request(
        "simple_string",
        [
            tensor("INPUT0", np.array([["x"] * 16], dtype=np.object_), "BYTES"),
            tensor("INPUT1", np.array([["1"] * 16], dtype=np.object_), "BYTES"),
        ],
    )
    fails(stub.ModelInfer, bad_string, Code.INVALID_ARGUMENT, "")  # the model's own error
    # The server keeps serving.
    assert stub.ModelInfer(simple_request(A, B), timeout=T).outputs


def test_deadline_cancels_the_request(stub: Any) -> None:
    fails(
        lambda r, timeout: stub.ModelInfer(r, timeout=0.5),
        slow_request(60_000),
        Code.DEADLINE_EXCEEDED,
    )
    # "slow" has one instance: this answers quickly only if the first request was cancelled.
    start = time.monotonic()
    response = stub.ModelInfer(slow_request(0), timeout=10)
    assert output(response, "OUTPUT0").tolist() == [7]
    assert time.monotonic() - start < 8


def test_large_tensor(stub: Any) -> None:
    size = 64 << 20
    array = np.random.default_rng(2).integers(0, 255, size=(1, size), dtype=np.uint8)
    request = grpc_requests.infer_request(
        "identity_uint8", [grpc_client.InputTensor("INPUT0", "UINT8", array.shape, array)]
    )
    response = stub.ModelInfer(request, timeout=120)
    out = output(response, "OUTPUT0")
    assert out is not None and out.shape == array.shape and np.array_equal(out, array)


# -- streaming ---------------------------------------------------------------------------------


class StreamFeed:
    """Feed requests to a ``ModelStreamInfer`` call from a queue (None half-closes)."""

    def __init__(self) -> None:
        self.requests: queue.Queue[pb.ModelInferRequest | None] = queue.Queue()

    def __iter__(self) -> Iterator[pb.ModelInferRequest]:
        while True:
            item = self.requests.get(timeout=T)
            if item is None:
                return
            yield item

    def send(self, *requests: pb.ModelInferRequest | None) -> None:
        for request in requests:
            self.requests.put(request)


def stream_all(stub: Any, requests: list[pb.ModelInferRequest], **kw: Any) -> list[Any]:
    feed = StreamFeed()
    feed.send(*requests, None)
    return list(stub.ModelStreamInfer(iter(feed), timeout=T, **kw))


def test_stream_decoupled_many_in_flight(stub: Any) -> None:
    requests = []
    expected: dict[str, list[int]] = {}
    for i in range(8):
        values = [100 * i + k for k in range(i + 1)]
        requests.append(
            repeat_request(values, 5 * (i % 3), f"rep-{i}", enable_empty_final_response=i % 2 == 0)
        )
        expected[f"rep-{i}"] = values
    for n in range(4):
        inputs = [tensor("IN", np.array([n], dtype=np.int32))]
        for opt_in in (False, True):
            request_id = f"sq-{n}-{opt_in}"
            requests.append(
                grpc_requests.infer_request(
                    "square_int32",
                    inputs,
                    request_id=request_id,
                    enable_empty_final_response=opt_in,
                )
            )
            expected[request_id] = [n] * n
    requests.append(simple_request(A, B, request_id="plain"))
    messages = stream_all(stub, requests)
    by_id: dict[str, list[Any]] = {}
    for message in messages:
        assert message.error_message == ""
        by_id.setdefault(message.infer_response.id, []).append(message.infer_response)
    # Different requests interleave: the first responses are not all from one request.
    assert len({m.infer_response.id for m in messages[:6]}) > 1
    for request_id, values in expected.items():
        responses = by_id.get(request_id, [])
        opt_in = request_id.endswith("True") or (
            request_id.startswith("rep-") and int(request_id[4:]) % 2 == 0
        )
        data = responses[:-1] if opt_in else responses
        out = [int(output(r, "OUT").item()) for r in data]
        assert out == values, request_id
        if request_id.startswith("rep-"):
            idx = [int(output(r, "IDX").item()) for r in data]
            assert idx == list(range(len(values)))
        assert not any(grpc_client.is_final_response(r) for r in data), request_id
        if opt_in:
            final = responses[-1]
            assert grpc_client.is_final_response(final) and not final.outputs
            assert not final.raw_output_contents and final.model_name
            assert final.model_version == ""  # copied from the request
    (plain,) = by_id["plain"]
    assert grpc_client.is_final_response(plain) and plain.model_version == "1"
    assert np.array_equal(output(plain, "OUTPUT0"), A + B)


def test_stream_sequence(stub: Any) -> None:
    values = [0, 11, 7, 5]
    requests = [
        grpc_requests.infer_request(
            "simple_sequence",
            [tensor("INPUT", np.array([[v]], dtype=np.int32))],
            request_id=str(i),
            sequence_id=4242,
            sequence_start=i == 0,
            sequence_end=i == len(values) - 1,
        )
        for i, v in enumerate(values)
    ]
    messages = stream_all(stub, requests)
    got = {m.infer_response.id: int(output(m.infer_response, "OUTPUT").item()) for m in messages}
    assert got == {"0": 1, "1": 11, "2": 7, "3": 5}


def test_stream_errors_do_not_close_it(stub: Any) -> None:
    bad_string = grpc_requests.infer_request(
        "simple_string",
        [
            tensor("INPUT0", np.array([["x"] * 16], dtype=np.object_), "BYTES"),
            tensor("INPUT1", np.array([["1"] * 16], dtype=np.object_), "BYTES"),
        ],
        request_id="model-error",
    )
    requests = [
        simple_request(A, B, request_id="ok-1"),
        grpc_requests.infer_request("nope", [], request_id="unknown"),
        simple_request(A[:, :8], B[:, :8], request_id="bad-shape"),
        bad_string,
        simple_request(A, B, request_id="ok-2"),
    ]
    by_id = {m.infer_response.id: m for m in stream_all(stub, requests)}
    assert set(by_id) == {"ok-1", "unknown", "bad-shape", "model-error", "ok-2"}
    assert not by_id["ok-1"].error_message and not by_id["ok-2"].error_message
    unknown = by_id["unknown"]
    assert unknown.error_message == "Request for unknown model: 'nope' is not found"
    assert not unknown.infer_response.model_name and not unknown.infer_response.parameters
    assert "unexpected shape" in by_id["bad-shape"].error_message
    model_error = by_id["model-error"]
    assert model_error.error_message and model_error.infer_response.model_name == "simple_string"
    assert grpc_client.is_final_response(model_error.infer_response)


SENDS_TWICE = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        sender = requests[0].get_response_sender()
        for value in (1, 2):  # the second send raises: a default-mode model answers once
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("X", np.array([value]))]))
"""


def test_default_mode_model_that_sent_a_response_then_failed(
    loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    # As Triton 2.51 (QA response_sender, non_decoupled_two_response_pre_return): the model's
    # first response reaches a stream and the error after it is dropped; unary ModelInfer
    # counts the two and fails.
    (tmp_path / "sends_twice" / "1").mkdir(parents=True)
    (tmp_path / "sends_twice" / "1" / "model.py").write_text(SENDS_TWICE)
    (tmp_path / "sends_twice" / "config.pbtxt").write_text(
        'backend: "python"\nmax_batch_size: 0\n'
        'output [{ name: "X", data_type: TYPE_INT64, dims: [ 1 ] }]\n'
    )
    core = build_core(ServerOptions(model_repository=[tmp_path]))
    core.start()
    served = Served(loop, core)
    try:
        request = grpc_requests.infer_request("sends_twice", [], request_id="r")
        fails(served.stub.ModelInfer, request, Code.INTERNAL, "^expected a single response, got 2$")
        messages = stream_all(served.stub, [request])
        assert len(messages) == 1 and not messages[0].error_message
        assert output(messages[0].infer_response, "X").tolist() == [1]
    finally:
        served.close()
        core.stop()


def test_stream_error_mode_ends_the_stream_at_a_model_error(stub: Any) -> None:
    # As Triton 2.51: a request the server refuses is still reported in the stream; an error
    # a model sends ends the stream with that error's status.
    strings = np.array([[b"x"] * 16], dtype=np.object_)
    failing = grpc_requests.infer_request(
        "simple_string",
        [tensor("INPUT0", strings, "BYTES"), tensor("INPUT1", strings, "BYTES")],
        request_id="bad",
    )
    feed = StreamFeed()
    call = stub.ModelStreamInfer(iter(feed), timeout=T, metadata=[("triton_grpc_error", "true")])
    feed.send(grpc_requests.infer_request("nope", [], request_id="unknown"))
    refused = next(call)
    assert refused.infer_response.id == "unknown" and "unknown model" in refused.error_message
    feed.send(failing)
    with pytest.raises(grpc.RpcError) as info:
        next(call)
    feed.send(None)
    error: Any = info.value
    assert error.code() == Code.INVALID_ARGUMENT
    assert "simple_string expects decimal integers" in error.details()


def test_stream_cancel_cancels_requests(stub: Any) -> None:
    feed = StreamFeed()
    call = stub.ModelStreamInfer(iter(feed), timeout=T)
    feed.send(slow_request(60_000, "long"))
    time.sleep(0.5)  # let the model start
    call.cancel()
    feed.send(None)
    with pytest.raises(grpc.RpcError) as info:
        list(call)
    assert info.value.code() == Code.CANCELLED
    start = time.monotonic()
    response = stub.ModelInfer(slow_request(0), timeout=10)  # one instance: free again
    assert response.outputs and time.monotonic() - start < 8


def test_stream_cancel_of_decoupled_request(stub: Any) -> None:
    feed = StreamFeed()
    call = stub.ModelStreamInfer(iter(feed), timeout=T)
    feed.send(repeat_request(list(range(100)), 100, "many"))
    first = next(call)
    assert first.infer_response.id == "many"
    call.cancel()
    feed.send(None)
    with pytest.raises(grpc.RpcError):
        list(call)
    # The decoupled model stopped: a new request is answered at once.
    messages = stream_all(stub, [repeat_request([1, 2], 0, "after")])
    assert [m.infer_response.id for m in messages] == ["after", "after"]


# -- shared memory -----------------------------------------------------------------------------


def shm_in(name: str, region: str, offset: int, size: int = 64) -> grpc_client.InputTensor:
    return grpc_client.InputTensor(
        name, "INT32", [1, 16], shared_memory=types.SharedMemoryRef(region, size, offset)
    )


def shm_out(name: str, region: str, offset: int, size: int = 64) -> grpc_client.RequestedOutput:
    return grpc_client.RequestedOutput(
        name, shared_memory=types.SharedMemoryRef(region, size, offset)
    )


def test_system_shared_memory_end_to_end(stub: Any) -> None:
    # One object per region: Triton 2.51 refuses a second region on a key (checked below).
    key = f"/grpc_frontend_test_{os.getpid()}"
    out_key = key + "_out"
    region = posix.create(key, 128)
    out_region = posix.create(out_key, 256)
    try:
        region.buffer[0:64] = A.tobytes()
        region.buffer[64:128] = B.tobytes()
        register = pb.SystemSharedMemoryRegisterRequest
        stub.SystemSharedMemoryRegister(register(name="in", key=key, byte_size=128), timeout=T)
        fails(
            stub.SystemSharedMemoryRegister,
            register(name="in_again", key=key, byte_size=128),
            Code.INTERNAL,
            f"Invalid shared memory region: '{key}'",
        )
        stub.SystemSharedMemoryRegister(
            register(name="out", key=out_key, offset=128, byte_size=128), timeout=T
        )
        fails(
            stub.SystemSharedMemoryRegister,
            register(name="in", key=key, byte_size=128),
            Code.ALREADY_EXISTS,
            "shared memory region 'in' already in manager",
        )
        status = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(), timeout=T)
        assert set(status.regions) == {"in", "out"}
        out_status = status.regions["out"]
        assert (out_status.key, out_status.offset, out_status.byte_size) == (out_key, 128, 128)
        fails(
            stub.SystemSharedMemoryStatus,
            pb.SystemSharedMemoryStatusRequest(name="nope"),
            Code.NOT_FOUND,
            "Unable to find system shared memory region: 'nope'",
        )

        request = grpc_requests.infer_request(
            "simple",
            [shm_in("INPUT0", "in", 0), shm_in("INPUT1", "in", 64)],
            [shm_out("OUTPUT0", "out", 0), shm_out("OUTPUT1", "out", 64)],
        )
        assert not request.raw_input_contents
        response = stub.ModelInfer(request, timeout=T)
        assert list(response.raw_output_contents) == [b"", b""]
        assert grpc_client.check_infer_response(response).get("OUTPUT0") is None
        # As Triton: nothing in the response marks the outputs, their entries are empty.
        assert grpc_common.get_parameters(response.outputs[1].parameters) == {}
        result = np.frombuffer(out_region.buffer[128:256], dtype=np.int32).reshape(2, 16)
        assert np.array_equal(result[0], (A + B)[0]) and np.array_equal(result[1], (A - B)[0])

        # Mixed: one input in shared memory, one raw; one output in the response.
        mixed = grpc_requests.infer_request(
            "simple",
            [shm_in("INPUT0", "in", 0), tensor("INPUT1", B * 3)],
            [shm_out("OUTPUT0", "out", 0), grpc_client.RequestedOutput("OUTPUT1")],
        )
        response = stub.ModelInfer(mixed, timeout=T)
        assert np.array_equal(output(response, "OUTPUT1"), A - 3 * B)
        assert np.array_equal(np.frombuffer(out_region.buffer[128:192], np.int32), (A + 3 * B)[0])

        # The same through the stream.
        (message,) = stream_all(stub, [request])
        assert not message.error_message and grpc_client.is_final_response(message.infer_response)

        def bad(
            inputs: list[grpc_client.InputTensor], outputs: list[grpc_client.RequestedOutput]
        ) -> Any:
            return grpc_requests.infer_request("simple", inputs, outputs)

        raw_in = [tensor("INPUT0", A), tensor("INPUT1", B)]
        fails(
            stub.ModelInfer,
            bad([shm_in("INPUT0", "ghost", 0), tensor("INPUT1", B)], []),
            Code.NOT_FOUND,
            "Unable to find shared memory region: 'ghost'",
        )
        fails(
            stub.ModelInfer,
            bad([shm_in("INPUT0", "in", 128), tensor("INPUT1", B)], []),
            Code.INVALID_ARGUMENT,
            "Invalid offset for shared memory region: 'in'",
        )
        fails(
            stub.ModelInfer,
            bad([shm_in("INPUT0", "in", 100), tensor("INPUT1", B)], []),
            Code.INVALID_ARGUMENT,
            r"Invalid offset \+ byte size for shared memory region: 'in'",
        )
        fails(
            stub.ModelInfer,
            bad([shm_in("INPUT0", "in", 0, size=60), tensor("INPUT1", B)], []),
            Code.INVALID_ARGUMENT,
            "input byte size mismatch",
        )
        fails(
            stub.ModelInfer,
            bad(raw_in, [shm_out("OUTPUT0", "out", 0, size=16)]),
            Code.INTERNAL,
            r"shared memory size specified with the request for output 'OUTPUT0' \(16 bytes\) "
            "should be at least 64 bytes to hold the results",
        )
        stub.SystemSharedMemoryUnregister(
            pb.SystemSharedMemoryUnregisterRequest(name="in"), timeout=T
        )
        stub.SystemSharedMemoryUnregister(
            pb.SystemSharedMemoryUnregisterRequest(name="never-registered"), timeout=T
        )
        status = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(), timeout=T)
        assert set(status.regions) == {"out"}
    finally:
        stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest(), timeout=T)
        for each in (region, out_region):
            each.close()
            posix.unlink(each.key)
    status = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(), timeout=T)
    assert not status.regions
    assert not [n for n in os.listdir("/dev/shm") if key[1:] in n]


def test_cuda_shared_memory_rpcs(stub: Any) -> None:
    assert not stub.CudaSharedMemoryStatus(pb.CudaSharedMemoryStatusRequest(), timeout=T).regions
    fails(
        stub.CudaSharedMemoryStatus,
        pb.CudaSharedMemoryStatusRequest(name="nope"),
        Code.NOT_FOUND,
        "Unable to find cuda shared memory region: 'nope'",
    )
    fails(
        stub.CudaSharedMemoryRegister,
        pb.CudaSharedMemoryRegisterRequest(name="c", raw_handle=b"abc", byte_size=8),
        Code.INVALID_ARGUMENT,
        "^failed to register shared memory region: invalid args$",
    )
    stub.CudaSharedMemoryUnregister(pb.CudaSharedMemoryUnregisterRequest(), timeout=T)


# -- trace and logging -------------------------------------------------------------------------


def test_trace_settings(stub: Any) -> None:
    def values(response: Any) -> dict[str, list[str]]:
        return {k: list(v.value) for k, v in response.settings.items()}

    current = values(stub.TraceSetting(pb.TraceSettingRequest(), timeout=T))
    assert current["trace_level"] == ["OFF"] and current["trace_rate"] == ["1000"]
    assert set(current) == {
        "trace_level",
        "trace_rate",
        "trace_count",
        "log_frequency",
        "trace_file",
        "trace_mode",
    }
    update = pb.TraceSettingRequest(model_name="simple")
    update.settings["trace_rate"].value.append("7")
    assert values(stub.TraceSetting(update, timeout=T))["trace_rate"] == ["7"]
    clear = pb.TraceSettingRequest(model_name="simple")
    clear.settings["trace_rate"].SetInParent()
    assert values(stub.TraceSetting(clear, timeout=T))["trace_rate"] == ["1000"]
    unknown = pb.TraceSettingRequest(model_name="nope")
    fails(stub.TraceSetting, unknown, Code.INVALID_ARGUMENT, "Request for unknown model : nope")
    # As Triton: unknown levels and settings are ignored, malformed values refused.
    ignored = pb.TraceSettingRequest()
    ignored.settings["trace_level"].value.append("LOUD")
    ignored.settings["bogus"].value.append("1")
    assert values(stub.TraceSetting(ignored, timeout=T))["trace_level"] == ["OFF"]
    bad = pb.TraceSettingRequest()
    bad.settings["trace_rate"].value.extend(["1", "2"])
    fails(stub.TraceSetting, bad, Code.INVALID_ARGUMENT, "^expect only 1 value for 'trace_rate'$")


def test_log_settings(stub: Any) -> None:
    response = stub.LogSettings(pb.LogSettingsRequest(), timeout=T)
    settings = {k: v.WhichOneof("parameter_choice") for k, v in response.settings.items()}
    assert settings == {
        "log_file": "string_param",
        "log_info": "bool_param",
        "log_warning": "bool_param",
        "log_error": "bool_param",
        "log_verbose_level": "uint32_param",
        "log_format": "string_param",
    }
    update = pb.LogSettingsRequest()
    update.settings["log_verbose_level"].uint32_param = 1
    assert stub.LogSettings(update, timeout=T).settings["log_verbose_level"].uint32_param == 1
    update.settings["log_verbose_level"].uint32_param = 0
    stub.LogSettings(update, timeout=T)
    bad = pb.LogSettingsRequest()
    bad.settings["log_info"].string_param = "yes"
    fails(stub.LogSettings, bad, Code.INVALID_ARGUMENT, "expect boolean for 'log_info'")
    bad = pb.LogSettingsRequest()
    bad.settings["log_format"].string_param = "bogus"
    fails(stub.LogSettings, bad, Code.INVALID_ARGUMENT, "invalid argument for log_format")
    bad = pb.LogSettingsRequest()
    bad.settings["log_file"].string_param = "/tmp/x"
    fails(stub.LogSettings, bad, Code.UNIMPLEMENTED, "log file location")


# -- transport options -------------------------------------------------------------------------


def test_compression(loop: asyncio.AbstractEventLoop, core: CoreServer, stub: Any) -> None:
    compressed = Served(loop, core, compression="gzip")
    try:
        for target in (stub, compressed.stub):
            for algorithm in (grpc.Compression.Gzip, grpc.Compression.Deflate):
                response = target.ModelInfer(simple_request(A, B), timeout=T, compression=algorithm)
                assert np.array_equal(output(response, "OUTPUT0"), A + B)
        words = np.array([["a" * 1000] * 4], dtype=np.object_)
        request = grpc_requests.infer_request("identity_bytes", [tensor("INPUT0", words, "BYTES")])
        (message,) = stream_all(compressed.stub, [request], compression=grpc.Compression.Gzip)
        out = output(message.infer_response, "OUTPUT0")
        assert out is not None and out.tolist() == [[b"a" * 1000] * 4]
    finally:
        compressed.close()
    with pytest.raises(ValueError, match="unknown compression"):
        GrpcFrontend(core, compression="brotli")


def test_restricted_apis(loop: asyncio.AbstractEventLoop, core: CoreServer) -> None:
    restricted = Served(
        loop,
        core,
        restricted_apis={"inference": ("infer-key", "s3cret"), "health": ("Admin", "yes")},
    )
    try:
        stub = restricted.stub
        details = fails(stub.ServerLive, pb.ServerLiveRequest(), Code.UNAVAILABLE)
        assert (
            details == "This protocol is restricted, expecting header 'triton-grpc-protocol-admin'"
        )
        health = [("triton-grpc-protocol-admin", "yes")]
        assert stub.ServerLive(pb.ServerLiveRequest(), timeout=T, metadata=health).live
        with pytest.raises(grpc.RpcError) as info:
            restricted.health.Check(health_pb2.HealthCheckRequest(), timeout=T)
        assert info.value.code() == Code.UNAVAILABLE
        assert stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=T).name  # not restricted
        fails(
            stub.ModelInfer,
            simple_request(A, B),
            Code.UNAVAILABLE,
            "expecting header 'triton-grpc-protocol-infer-key'",
        )
        wrong = [("triton-grpc-protocol-infer-key", "guess")]
        with pytest.raises(grpc.RpcError):
            stub.ModelInfer(simple_request(A, B), timeout=T, metadata=wrong)
        good = [("triton-grpc-protocol-infer-key", "s3cret")]
        assert stub.ModelInfer(simple_request(A, B), timeout=T, metadata=good).outputs
        with pytest.raises(grpc.RpcError) as info:
            stream_all(stub, [simple_request(A, B)])
        assert info.value.code() == Code.UNAVAILABLE
        assert stream_all(stub, [simple_request(A, B)], metadata=good)
    finally:
        restricted.close()
    with pytest.raises(ValueError, match="unknown API group"):
        GrpcFrontend(core, restricted_apis={"everything": ("k", "v")})


def test_message_size_limit(loop: asyncio.AbstractEventLoop, core: CoreServer) -> None:
    small = Served(loop, core, max_message_bytes=1 << 20)
    try:
        fits = np.zeros((1, 1000), dtype=np.uint8)
        request = grpc_requests.infer_request(
            "identity_uint8", [grpc_client.InputTensor("INPUT0", "UINT8", fits.shape, fits)]
        )
        assert output(small.stub.ModelInfer(request, timeout=T), "OUTPUT0").shape == (1, 1000)
        big = np.zeros((1, 2 << 20), dtype=np.uint8)
        request = grpc_requests.infer_request(
            "identity_uint8", [grpc_client.InputTensor("INPUT0", "UINT8", big.shape, big)]
        )
        fails(small.stub.ModelInfer, request, Code.RESOURCE_EXHAUSTED)
    finally:
        small.close()


def test_tls(loop: asyncio.AbstractEventLoop, core: CoreServer, tmp_path: Path) -> None:
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")]
        + ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    key, cert = (tmp_path / "key.pem").read_bytes(), (tmp_path / "cert.pem").read_bytes()
    frontend = GrpcFrontend(
        core, port=0, server_credentials=grpc.ssl_server_credentials([(key, cert)])
    )
    port = asyncio.run_coroutine_threadsafe(frontend.start(), loop).result(T)
    try:
        channel = grpc.secure_channel(
            f"127.0.0.1:{port}",
            grpc.ssl_channel_credentials(root_certificates=cert),
            options=[("grpc.ssl_target_name_override", "localhost")],
        )
        with channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            response = stub.ModelInfer(simple_request(A, B), timeout=T)
            assert np.array_equal(output(response, "OUTPUT0"), A + B)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as plain, pytest.raises(grpc.RpcError):
            service_pb2_grpc.GRPCInferenceServiceStub(plain).ServerLive(
                pb.ServerLiveRequest(), timeout=5
            )
    finally:
        asyncio.run_coroutine_threadsafe(frontend.stop(1.0), loop).result(T)


def test_stop_cancels_calls_in_flight(
    loop: asyncio.AbstractEventLoop, core: CoreServer, stub: Any
) -> None:
    doomed = Served(loop, core)
    feed = StreamFeed()
    stream = doomed.stub.ModelStreamInfer(iter(feed), timeout=T)
    feed.send(slow_request(60_000, "long"))
    time.sleep(0.5)
    start = time.monotonic()
    doomed.run(doomed.frontend.stop(0.2))
    feed.send(None)
    with pytest.raises(grpc.RpcError):
        list(stream)
    doomed.channel.close()
    response = stub.ModelInfer(slow_request(0), timeout=10)  # "slow" was freed
    assert response.outputs and time.monotonic() - start < 8


def test_port_in_use(loop: asyncio.AbstractEventLoop, core: CoreServer, served: Served) -> None:
    clash = GrpcFrontend(core, port=served.port)
    with pytest.raises(OSError):
        asyncio.run_coroutine_threadsafe(clash.start(), loop).result(T)
    asyncio.run_coroutine_threadsafe(clash.stop(), loop).result(T)


# -- NVIDIA's tritonclient against this server ------------------------------------------------

PEER_SCRIPT = textwrap.dedent(
    """
    import queue, sys
    import numpy as np
    import tritonclient.grpc as grpcclient
    import tritonclient.utils.shared_memory as shm
    from tritonclient.utils import InferenceServerException

    assert "site-packages" in grpcclient.__file__, grpcclient.__file__  # NVIDIA's package
    url = sys.argv[1]
    client = grpcclient.InferenceServerClient(url)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("simple") and not client.is_model_ready("nope")
    assert "statistics" in client.get_server_metadata().extensions
    assert client.get_model_metadata("simple").inputs[0].shape == [-1, 16]
    assert client.get_model_config("simple").config.max_batch_size == 8
    assert client.get_model_metadata("simple", as_json=True)["name"] == "simple"

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
              grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("simple", inputs, request_id="peer-1")
    assert (result.as_numpy("OUTPUT0") == a + b).all()
    assert (result.as_numpy("OUTPUT1") == a - b).all()
    assert result.get_response().id == "peer-1"
    try:
        client.infer("nope", inputs)
        raise AssertionError("no error")
    except InferenceServerException as exc:
        assert exc.status() == "StatusCode.NOT_FOUND", exc.status()

    s0 = np.array([[str(i).encode() for i in range(16)]], dtype=np.object_)
    s1 = np.array([[b"1"] * 16], dtype=np.object_)
    sin = [grpcclient.InferInput("INPUT0", [1, 16], "BYTES"),
           grpcclient.InferInput("INPUT1", [1, 16], "BYTES")]
    sin[0].set_data_from_numpy(s0)
    sin[1].set_data_from_numpy(s1)
    out = client.infer("simple_string", sin).as_numpy("OUTPUT0")
    assert [int(x) for x in out.ravel()] == [i + 1 for i in range(16)]

    # A sequence through the stream.
    results = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    values = [0, 11, 7, 5]
    for i, value in enumerate(values):
        x = grpcclient.InferInput("INPUT", [1, 1], "INT32")
        x.set_data_from_numpy(np.array([[value]], dtype=np.int32))
        client.async_stream_infer("simple_sequence", [x], request_id=str(i), sequence_id=777,
                                  sequence_start=i == 0, sequence_end=i == len(values) - 1)
    got = {}
    for _ in values:
        result, error = results.get(timeout=20)
        assert error is None, error
        got[result.get_response().id] = int(result.as_numpy("OUTPUT")[0][0])
    assert got == {"0": 1, "1": 11, "2": 7, "3": 5}, got

    # A decoupled model, with the empty final response.
    rin = [grpcclient.InferInput("IN", [3], "INT32"),
           grpcclient.InferInput("DELAY", [1], "UINT32"),
           grpcclient.InferInput("WAIT", [1], "UINT32")]
    rin[0].set_data_from_numpy(np.array([4, 5, 6], dtype=np.int32))
    rin[1].set_data_from_numpy(np.array([1], dtype=np.uint32))
    rin[2].set_data_from_numpy(np.array([0], dtype=np.uint32))
    client.async_stream_infer("repeat_int32", rin, request_id="rep",
                              enable_empty_final_response=True)
    outs = []
    while True:
        result, error = results.get(timeout=20)
        assert error is None, error
        response = result.get_response()
        if response.parameters["triton_final_response"].bool_param:
            break
        outs.append(int(result.as_numpy("OUT")[0]))
    assert outs == [4, 5, 6], outs
    client.async_stream_infer("nope", rin, request_id="bad")
    result, error = results.get(timeout=20)
    assert result is None and "unknown model" in str(error)
    client.stop_stream()

    stats = client.get_inference_statistics("simple")
    assert stats.model_stats[0].inference_count >= 1

    # System shared memory.
    key = sys.argv[2]
    handle = shm.create_shared_memory_region("peer_in", key, 256)
    try:
        shm.set_shared_memory_region(handle, [a, b])
        client.register_system_shared_memory("peer_region", key, 256)
        status = client.get_system_shared_memory_status()
        assert status.regions["peer_region"].byte_size == 256
        xin = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
               grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        xin[0].set_shared_memory("peer_region", 64)
        xin[1].set_shared_memory("peer_region", 64, offset=64)
        xout = [grpcclient.InferRequestedOutput("OUTPUT0"),
                grpcclient.InferRequestedOutput("OUTPUT1")]
        xout[0].set_shared_memory("peer_region", 64, offset=128)
        xout[1].set_shared_memory("peer_region", 64, offset=192)
        result = client.infer("simple", xin, outputs=xout)
        output = result.get_output("OUTPUT0")
        assert list(output.shape) == [1, 16]
        got = shm.get_contents_as_numpy(handle, np.int32, [1, 16], offset=128)
        assert (got == a + b).all(), got
        got = shm.get_contents_as_numpy(handle, np.int32, [1, 16], offset=192)
        assert (got == a - b).all(), got
        client.unregister_system_shared_memory("peer_region")
        assert not client.get_system_shared_memory_status().regions
    finally:
        shm.destroy_shared_memory_region(handle)
    client.close()
    print("PEER OK")
    """
)


def test_nvidia_tritonclient_against_this_server(
    nvidia_python: Path, served: Served, tmp_path: Path
) -> None:
    script = tmp_path / "peer.py"
    script.write_text(PEER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    key = f"/grpc_peer_test_{os.getpid()}"
    result = subprocess.run(
        [str(nvidia_python), str(script), f"127.0.0.1:{served.port}", key],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PEER OK" in result.stdout
    assert not [n for n in os.listdir("/dev/shm") if key[1:] in n]
