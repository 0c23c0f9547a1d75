"""``tritonclient.grpc.InferenceServerClient`` end to end against the bundled server.

The server (``mock_server.app.MockServer``) runs in-process on free loopback ports; every
wait has a timeout and every shared-memory region is unlinked.
"""

from __future__ import annotations

import base64
import queue
import shutil
import threading
import uuid
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import ml_dtypes
import numpy as np
import pytest

import tritonclient.grpc as grpcclient
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ModelControlMode, ServerOptions
from shm import posix
from tritonclient._codec.types import InferOptions
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.grpc.auth import BasicAuth
from tritonclient.utils import InferenceServerException

T = 20.0  # timeout of every wait


def _frontend(**kw: Any) -> FrontendOptions:
    return FrontendOptions(
        http_port=0, grpc_port=0, metrics_port=0, allow_http=False, allow_metrics=False, **kw
    )


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True), _frontend()
    ) as s:
        yield s


@pytest.fixture
def client(server: MockServer) -> Iterator[grpcclient.InferenceServerClient]:
    with grpcclient.InferenceServerClient(server.grpc_url) as c:
        yield c


def _simple_inputs(
    a: np.ndarray | None = None, b: np.ndarray | None = None
) -> list[grpcclient.InferInput]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16) if a is None else a
    b = np.ones((1, 16), dtype=np.int32) if b is None else b
    i0 = grpcclient.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(a)
    i1 = grpcclient.InferInput("INPUT1", [1, 16], "INT32").set_data_from_numpy(b)
    return [i0, i1]


# ------------------------------------------------------------------------------------------
# Health, metadata, config, repository, statistics, settings
# ------------------------------------------------------------------------------------------


def test_health(client: grpcclient.InferenceServerClient) -> None:
    assert client.is_server_live(client_timeout=T) is True
    assert client.is_server_ready(client_timeout=T) is True
    assert client.is_model_ready("simple", client_timeout=T) is True
    assert client.is_model_ready("simple", "1") is True
    assert client.is_model_ready("no_such_model") is False or True  # server-defined
    with pytest.raises(InferenceServerException, match="model version must be a string"):
        client.is_model_ready("simple", 1)  # type: ignore[arg-type]


def test_metadata_and_config(client: grpcclient.InferenceServerClient) -> None:
    meta = client.get_server_metadata()
    assert isinstance(meta, service_pb2.ServerMetadataResponse)
    assert meta.name == "triton"
    meta_json = client.get_server_metadata(as_json=True)
    assert meta_json["name"] == "triton" and "extensions" in meta_json

    model = client.get_model_metadata("simple", as_json=True)
    assert model["name"] == "simple"
    assert [i["name"] for i in model["inputs"]] == ["INPUT0", "INPUT1"]
    assert model["inputs"][0]["shape"] == ["-1", "16"]  # int64 as strings (MessageToJson)
    assert client.get_model_metadata("simple", "1").name == "simple"

    config = client.get_model_config("simple")
    assert config.config.name == "simple" and config.config.max_batch_size == 8
    assert client.get_model_config("simple", as_json=True)["config"]["name"] == "simple"


def test_repository_index_and_statistics(client: grpcclient.InferenceServerClient) -> None:
    index = client.get_model_repository_index()
    names = {m.name for m in index.models}
    assert {"simple", "repeat_int32", "identity_bf16"} <= names
    index_json = client.get_model_repository_index(as_json=True)
    assert any(m["name"] == "simple" for m in index_json["models"])

    client.infer("simple", _simple_inputs())
    stats = client.get_inference_statistics("simple")
    assert stats.model_stats[0].name == "simple"
    assert stats.model_stats[0].inference_count >= 1
    stats_json = client.get_inference_statistics(as_json=True)
    assert any(m["name"] == "simple" for m in stats_json["model_stats"])


def test_trace_and_log_settings(client: grpcclient.InferenceServerClient) -> None:
    trace = client.get_trace_settings(as_json=True)
    assert "settings" in trace
    updated = client.update_trace_settings(settings={"trace_rate": "7"}, as_json=True)
    assert updated["settings"]["trace_rate"]["value"] == ["7"]
    per_model = client.update_trace_settings(model_name="simple", settings={"trace_rate": 3})
    assert list(per_model.settings["trace_rate"].value) == ["3"]
    cleared = client.update_trace_settings(model_name="simple", settings={"trace_rate": None})
    assert list(cleared.settings["trace_rate"].value) == ["7"]
    assert client.get_trace_settings(model_name="simple").settings["trace_rate"].value
    client.update_trace_settings(settings={"trace_rate": "1000"})

    logs = client.get_log_settings(as_json=True)
    assert "log_verbose_level" in logs["settings"]
    new = client.update_log_settings({"log_verbose_level": 2, "log_info": True})
    assert new.settings["log_verbose_level"].uint32_param == 2
    client.update_log_settings({"log_verbose_level": 0})


# ------------------------------------------------------------------------------------------
# Inference
# ------------------------------------------------------------------------------------------


def test_infer_simple(client: grpcclient.InferenceServerClient) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    outputs = [
        grpcclient.InferRequestedOutput("OUTPUT0"),
        grpcclient.InferRequestedOutput("OUTPUT1"),
    ]
    result = client.infer(
        "simple", _simple_inputs(a, b), outputs=outputs, request_id="r1", client_timeout=T
    )
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    assert result.as_numpy("NOPE") is None
    assert result.get_output("OUTPUT0").datatype == "INT32"
    assert result.get_output("OUTPUT0", as_json=True)["shape"] == ["1", "16"]
    assert result.get_output("NOPE") is None
    response = result.get_response()
    assert response.id == "r1" and response.model_name == "simple"
    assert len(response.raw_output_contents) == 2
    as_json = result.get_response(as_json=True)
    assert as_json["id"] == "r1" and as_json["outputs"][0]["name"] == "OUTPUT0"
    # as_numpy still works after get_response() moved the raw contents into the message
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)


def test_infer_input_api() -> None:
    inp = grpcclient.InferInput("X", [2, 3], "FP32")
    assert (inp.name(), inp.datatype(), inp.shape()) == ("X", "FP32", [2, 3])
    assert inp.set_shape([1, 6]) is inp and inp.shape() == [1, 6]
    with pytest.raises(InferenceServerException, match="must be a numpy array"):
        inp.set_data_from_numpy([1, 2, 3])  # type: ignore[arg-type]
    with pytest.raises(InferenceServerException, match=r"unexpected datatype INT32.*FP32"):
        inp.set_data_from_numpy(np.zeros((1, 6), np.int32))
    with pytest.raises(InferenceServerException, match=r"unexpected numpy array shape \[2, 3\]"):
        inp.set_data_from_numpy(np.zeros((2, 3), np.float32))
    data = np.arange(6, dtype=np.float32).reshape(1, 6)
    inp.set_data_from_numpy(data)
    assert inp._get_content() == data.tobytes()
    data[0, 0] = 99  # the input keeps the values it was given
    assert inp._get_content() != data.tobytes()
    tensor = inp._get_tensor()
    assert tensor.name == "X" and list(tensor.shape) == [1, 6]
    inp.set_shared_memory("region", 24, offset=8)
    assert inp._get_content() is None
    params = inp._get_tensor().parameters
    assert params["shared_memory_region"].string_param == "region"
    assert params["shared_memory_byte_size"].int64_param == 24
    assert params["shared_memory_offset"].int64_param == 8

    out = grpcclient.InferRequestedOutput("Y", class_count=3)
    assert out.name() == "Y"
    assert out._get_tensor().parameters["classification"].int64_param == 3
    with pytest.raises(InferenceServerException, match="classification"):
        out.set_shared_memory("r", 4)
    out2 = grpcclient.InferRequestedOutput("Z")
    out2.set_shared_memory("r", 4)
    assert "shared_memory_region" in out2._get_tensor().parameters
    out2.unset_shared_memory()
    assert "shared_memory_region" not in out2._get_tensor().parameters


_IDENTITY = {
    "BOOL": np.array([[True, False, True]]),
    "UINT8": np.array([[0, 1, 255]], np.uint8),
    "UINT16": np.array([[0, 1, 65535]], np.uint16),
    "UINT32": np.array([[0, 1, 2**32 - 1]], np.uint32),
    "UINT64": np.array([[0, 1, 2**64 - 1]], np.uint64),
    "INT8": np.array([[-128, 0, 127]], np.int8),
    "INT16": np.array([[-(2**15), 0, 2**15 - 1]], np.int16),
    "INT32": np.array([[-(2**31), 0, 2**31 - 1]], np.int32),
    "INT64": np.array([[-(2**63), 0, 2**63 - 1]], np.int64),
    "FP16": np.array([[-1.5, 0.0, 65504.0]], np.float16),
    "FP32": np.array([[-1.5, 0.0, 3.25]], np.float32),
    "FP64": np.array([[-1.5, 0.0, 1e300]], np.float64),
    "BF16": np.array([[-1.5, 0.0, 3.0]], ml_dtypes.bfloat16),
    "BYTES": np.array([[b"a", b"\x00bc", "\u00e9".encode()]], np.object_),
}


@pytest.mark.parametrize("datatype", sorted(_IDENTITY))
def test_infer_identity_every_datatype(
    client: grpcclient.InferenceServerClient, datatype: str
) -> None:
    data = _IDENTITY[datatype]
    inp = grpcclient.InferInput("INPUT0", list(data.shape), datatype)
    inp.set_data_from_numpy(data)
    result = client.infer(f"identity_{datatype.lower()}", [inp], client_timeout=T)
    out = result.as_numpy("OUTPUT0")
    assert out is not None
    assert out.dtype == data.dtype and out.shape == data.shape
    np.testing.assert_array_equal(out, data)


def test_infer_bf16_refuses_float32_as_nvidia_273(
    client: grpcclient.InferenceServerClient,
) -> None:
    """NVIDIA's 2.73 refuses float32 for a BF16 input (older releases truncated it)."""
    inp = grpcclient.InferInput("INPUT0", [1, 2], "BF16")
    with pytest.raises(InferenceServerException) as info:
        inp.set_data_from_numpy(np.array([[1.0, -2.5]], np.float32))
    assert (info.value.message() or "").startswith(
        "got unexpected datatype FP32 from numpy array, expected BF16. Since r26.06"
    )
    inp.set_data_from_numpy(np.array([[1.0, -2.5]], ml_dtypes.bfloat16))
    out = client.infer("identity_bf16", [inp]).as_numpy("OUTPUT0")
    assert out is not None and out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), [[1.0, -2.5]])


def test_infer_empty_tensor(client: grpcclient.InferenceServerClient) -> None:
    inp = grpcclient.InferInput("INPUT0", [1, 0], "INT32").set_data_from_numpy(
        np.zeros((1, 0), np.int32)
    )
    out = client.infer("identity_int32", [inp]).as_numpy("OUTPUT0")
    assert out is not None and out.shape == (1, 0)


def test_infer_simple_string(client: grpcclient.InferenceServerClient) -> None:
    a = np.array([[str(i) for i in range(16)]], dtype=np.object_)
    b = np.array([["1"] * 16], dtype=np.object_)
    i0 = grpcclient.InferInput("INPUT0", [1, 16], "BYTES").set_data_from_numpy(a)
    i1 = grpcclient.InferInput("INPUT1", [1, 16], "BYTES").set_data_from_numpy(b)
    result = client.infer("simple_string", [i0, i1])
    out0 = result.as_numpy("OUTPUT0")
    assert out0 is not None
    assert [int(x) for x in out0[0]] == [i + 1 for i in range(16)]


@pytest.mark.parametrize("seq_ids", [(1000, 1001), ("seq-a", "seq-b")])
def test_sequence(client: grpcclient.InferenceServerClient, seq_ids: tuple[Any, Any]) -> None:
    # Triton's simple_grpc_sequence_sync_infer_client.py values
    values = [0, 11, 7, 5, 3, 2, 0, 1]
    got: dict[Any, list[int]] = {s: [] for s in seq_ids}
    for n, value in enumerate(values):
        for k, seq in enumerate(seq_ids):
            v = value if k == 0 else -value
            inp = grpcclient.InferInput("INPUT", [1, 1], "INT32")
            inp.set_data_from_numpy(np.array([[v]], np.int32))
            result = client.infer(
                "simple_sequence",
                [inp],
                sequence_id=seq,
                sequence_start=n == 0,
                sequence_end=n == len(values) - 1,
                client_timeout=T,
            )
            out = result.as_numpy("OUTPUT")
            assert out is not None
            got[seq].append(int(out[0][0]))
    assert got[seq_ids[0]] == [1, 11, 7, 5, 3, 2, 0, 1]
    assert got[seq_ids[1]] == [1, -11, -7, -5, -3, -2, 0, -1]


def test_parameters_and_priority(client: grpcclient.InferenceServerClient) -> None:
    result = client.infer(
        "simple",
        _simple_inputs(),
        parameters={"p_str": "x", "p_int": 3, "p_bool": True, "p_float": 1.5},
        priority=1,
        timeout=10_000_000,
    )
    assert result.as_numpy("OUTPUT0") is not None
    with pytest.raises(InferenceServerException, match="reserved"):
        client.infer("simple", _simple_inputs(), parameters={"sequence_id": 1})
    with pytest.raises(InferenceServerException, match="reserved"):
        client.infer("simple", _simple_inputs(), parameters={"triton_x": 1})


def test_errors(client: grpcclient.InferenceServerClient) -> None:
    with pytest.raises(InferenceServerException) as e:
        client.infer("no_such_model", _simple_inputs())
    assert e.value.status() == "StatusCode.NOT_FOUND"
    assert "no_such_model" in str(e.value.message())
    with pytest.raises(InferenceServerException) as e:
        client.get_model_metadata("no_such_model")
    assert e.value.status() == "StatusCode.NOT_FOUND"

    # wrong datatype / shape for the model: INVALID_ARGUMENT from the server
    bad = grpcclient.InferInput("INPUT0", [1, 16], "FP32").set_data_from_numpy(
        np.zeros((1, 16), np.float32)
    )
    with pytest.raises(InferenceServerException) as e:
        client.infer("simple", [bad, _simple_inputs()[1]])
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"
    wrong_shape = grpcclient.InferInput("INPUT0", [1, 8], "INT32").set_data_from_numpy(
        np.zeros((1, 8), np.int32)
    )
    with pytest.raises(InferenceServerException) as e:
        client.infer("simple", [wrong_shape, _simple_inputs()[1]])
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"
    # an input without data is refused by the client, with its name
    with pytest.raises(InferenceServerException, match="INPUT0"):
        client.infer("simple", [grpcclient.InferInput("INPUT0", [1, 16], "INT32")])
    with pytest.raises(InferenceServerException, match="InferInput"):
        client.infer("simple", ["INPUT0"])  # type: ignore[list-item]
    # a decoupled model over ModelInfer
    inp = grpcclient.InferInput("IN", [1], "INT32").set_data_from_numpy(np.array([1], np.int32))
    with pytest.raises(InferenceServerException) as e:
        client.infer("repeat_int32", [inp])
    assert e.value.status() == "StatusCode.UNIMPLEMENTED"


def _slow_inputs(delay_ms: int) -> list[grpcclient.InferInput]:
    i0 = grpcclient.InferInput("INPUT0", [1], "INT32").set_data_from_numpy(np.array([1], np.int32))
    d = grpcclient.InferInput("DELAY_MS", [1], "UINT32").set_data_from_numpy(
        np.array([delay_ms], np.uint32)
    )
    return [i0, d]


def test_client_timeout(client: grpcclient.InferenceServerClient) -> None:
    with pytest.raises(InferenceServerException) as e:
        client.infer("slow", _slow_inputs(3000), client_timeout=0.2)
    assert e.value.status() == "StatusCode.DEADLINE_EXCEEDED"
    assert e.value.message() == "Deadline Exceeded"
    # async_infer reports the deadline through the callback
    done: queue.Queue[Any] = queue.Queue()
    client.async_infer(
        "slow", _slow_inputs(3000), lambda result, error: done.put(error), client_timeout=0.2
    )
    error = done.get(timeout=T)
    assert isinstance(error, InferenceServerException)
    assert error.message() == "Deadline Exceeded"


def test_async_infer_and_cancel(client: grpcclient.InferenceServerClient) -> None:
    done: queue.Queue[tuple[Any, Any]] = queue.Queue()

    def callback(user: str, result: Any, error: Any) -> None:
        done.put((result, error))

    import functools

    ctx = client.async_infer("simple", _simple_inputs(), functools.partial(callback, "u"))
    result, error = done.get(timeout=T)
    assert error is None and result.as_numpy("OUTPUT0") is not None
    assert isinstance(ctx, grpcclient.CallContext)

    ctx = client.async_infer("slow", _slow_inputs(5000), functools.partial(callback, "u"))
    ctx.cancel()
    result, error = done.get(timeout=T)
    assert result is None
    assert error.status() == "StatusCode.CANCELLED"


@pytest.mark.parametrize("algorithm", ["deflate", "gzip", None])
def test_compression(client: grpcclient.InferenceServerClient, algorithm: str | None) -> None:
    a = np.zeros((1, 16), np.int32)
    result = client.infer("simple", _simple_inputs(a), compression_algorithm=algorithm)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + 1)


def test_unknown_compression_warns(client: grpcclient.InferenceServerClient) -> None:
    with pytest.warns(UserWarning, match="unsupported compression_algorithm"):
        client.infer("simple", _simple_inputs(), compression_algorithm="brotli")


# ------------------------------------------------------------------------------------------
# Streaming
# ------------------------------------------------------------------------------------------


def _repeat_inputs(values: list[int], delay_ms: int = 0) -> list[grpcclient.InferInput]:
    i = grpcclient.InferInput("IN", [len(values)], "INT32").set_data_from_numpy(
        np.array(values, np.int32)
    )
    d = grpcclient.InferInput("DELAY", [len(values)], "UINT32").set_data_from_numpy(
        np.full(len(values), delay_ms, np.uint32)
    )
    w = grpcclient.InferInput("WAIT", [1], "UINT32").set_data_from_numpy(np.zeros(1, np.uint32))
    return [i, d, w]


def test_stream_decoupled(client: grpcclient.InferenceServerClient) -> None:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(lambda result, error: got.put((result, error)), stream_timeout=60)
    with pytest.raises(InferenceServerException, match="already running"):
        client.start_stream(lambda result, error: None)
    client.async_stream_infer(
        "repeat_int32", _repeat_inputs([4, 5, 6]), request_id="a", enable_empty_final_response=True
    )
    items = [got.get(timeout=T) for _ in range(4)]
    assert all(error is None for _, error in items)
    outs = [r.as_numpy("OUT") for r, _ in items[:3]]
    assert [int(o[0]) for o in outs] == [4, 5, 6]
    finals = [r.get_response().parameters["triton_final_response"].bool_param for r, _ in items]
    assert finals == [False, False, False, True]
    assert items[3][0].get_response().id == "a" and items[3][0].as_numpy("OUT") is None

    # without the opt-in: no empty final response
    client.async_stream_infer("repeat_int32", _repeat_inputs([7]), request_id="b")
    result, error = got.get(timeout=T)
    assert error is None and int(result.as_numpy("OUT")[0]) == 7
    # an in-band error keeps the stream open
    client.async_stream_infer("no_such_model", _repeat_inputs([1]), request_id="c")
    result, error = got.get(timeout=T)
    assert result is None and isinstance(error, InferenceServerException)
    assert "no_such_model" in str(error)
    client.async_stream_infer("simple", _simple_inputs(), request_id="d")
    result, error = got.get(timeout=T)
    assert error is None and result.get_response().id == "d"
    client.stop_stream()
    assert got.empty()
    with pytest.raises(InferenceServerException, match="start_stream"):
        client.async_stream_infer("simple", _simple_inputs())


def test_stream_inputs_reusable_after_enqueue(client: grpcclient.InferenceServerClient) -> None:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(lambda result, error: got.put((result, error)))
    data = np.zeros((1, 16), np.int32)
    inputs = _simple_inputs(data)
    for k in range(5):
        inputs[0].set_data_from_numpy(np.full((1, 16), k, np.int32))
        client.async_stream_infer("simple", inputs, request_id=str(k))
    client.stop_stream()  # waits for every response
    results = [got.get(timeout=T)[0] for _ in range(5)]
    by_id = {r.get_response().id: int(r.as_numpy("OUTPUT0")[0][0]) for r in results}
    assert by_id == {str(k): k + 1 for k in range(5)}


def test_stream_stop_with_cancel(client: grpcclient.InferenceServerClient) -> None:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(lambda result, error: got.put((result, error)))
    client.async_stream_infer("repeat_int32", _repeat_inputs(list(range(50)), delay_ms=200))
    first, error = got.get(timeout=T)
    assert error is None and first is not None
    stopper = threading.Thread(target=client.stop_stream, kwargs={"cancel_requests": True})
    stopper.start()
    stopper.join(timeout=T)
    assert not stopper.is_alive(), "stop_stream(cancel_requests=True) hung"
    errors = []
    while not got.empty():
        _result, error = got.get_nowait()
        if error is not None:
            errors.append(error)
    assert errors and errors[-1].status() == "StatusCode.CANCELLED"
    # a new stream can be started afterwards
    client.start_stream(lambda result, error: got.put((result, error)))
    client.async_stream_infer("simple", _simple_inputs())
    assert got.get(timeout=T)[1] is None
    client.stop_stream()


def test_stream_timeout_and_callback_errors(server: MockServer) -> None:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    calls = []

    def callback(result: Any, error: Any) -> None:
        calls.append(1)
        got.put((result, error))
        if len(calls) == 1:
            raise RuntimeError("callback failure")

    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        client.start_stream(callback, stream_timeout=1.0)
        client.async_stream_infer("simple", _simple_inputs())
        assert got.get(timeout=T)[1] is None
        # the callback raised; the stream still delivers
        client.async_stream_infer("repeat_int32", _repeat_inputs([1, 2], delay_ms=3000))
        _result, error = got.get(timeout=T)  # the stream deadline comes first
        assert isinstance(error, InferenceServerException)
        assert error.status() == "StatusCode.DEADLINE_EXCEEDED"
        with pytest.raises(InferenceServerException, match="no longer in valid state"):
            client.async_stream_infer("simple", _simple_inputs())
    # leaving the with-block closed the stream and the channel


# ------------------------------------------------------------------------------------------
# Plugins, auth, headers, keepalive, channel options, verbose
# ------------------------------------------------------------------------------------------


class _Recorder(service_pb2_grpc.GRPCInferenceServiceServicer):
    def __init__(self) -> None:
        self.metadata: list[dict[str, str]] = []

    def ServerLive(self, request: Any, context: Any) -> Any:
        self.metadata.append(dict(context.invocation_metadata()))
        return service_pb2.ServerLiveResponse(live=True)


@pytest.fixture
def recorder() -> Iterator[tuple[str, _Recorder]]:
    rec = _Recorder()
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(rec, srv)  # type: ignore[no-untyped-call]
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    try:
        yield f"127.0.0.1:{port}", rec
    finally:
        srv.stop(grace=None).wait(T)


def test_plugin_and_basic_auth_headers(recorder: tuple[str, _Recorder]) -> None:
    url, rec = recorder
    with grpcclient.InferenceServerClient(url) as client:
        assert client.plugin() is None
        with pytest.raises(InferenceServerException, match="No plugin"):
            client.unregister_plugin()
        auth = BasicAuth("user", "secret")
        client.register_plugin(auth)
        assert client.plugin() is auth
        with pytest.raises(InferenceServerException, match="already registered"):
            client.register_plugin(auth)
        headers = {"X-Custom": "1"}
        assert client.is_server_live(headers=headers, client_timeout=T)
        assert headers == {"X-Custom": "1"}  # the caller's dict is not modified
        client.unregister_plugin()
        client.is_server_live(client_timeout=T)
    token = base64.b64encode(b"user:secret").decode()
    assert rec.metadata[0]["authorization"] == f"Basic {token}"
    assert rec.metadata[0]["x-custom"] == "1"
    assert "authorization" not in rec.metadata[1]


def test_restricted_api_header_reaches_server() -> None:
    token = "Basic " + base64.b64encode(b"u:p").decode()
    frontend = _frontend(grpc_restricted_protocol={"model-repository": ("authorization", token)})
    with MockServer(ServerOptions(model_repository=[BUNDLED_MODELS]), frontend) as srv:

        class ProtocolAuth(grpcclient.InferenceServerClientPlugin):
            def __call__(self, request: grpcclient.Request) -> None:
                request.headers["triton-grpc-protocol-authorization"] = token

        with grpcclient.InferenceServerClient(srv.grpc_url) as client:
            assert client.is_server_live()  # health is not restricted
            with pytest.raises(InferenceServerException) as e:
                client.get_model_repository_index()
            assert e.value.status() == "StatusCode.UNAVAILABLE"
            assert "restricted" in str(e.value)
            client.register_plugin(ProtocolAuth())
            assert client.get_model_repository_index().models


def test_keepalive_and_channel_args(server: MockServer) -> None:
    ka = grpcclient.KeepAliveOptions(
        keepalive_time_ms=10_000,
        keepalive_timeout_ms=5_000,
        keepalive_permit_without_calls=True,
        http2_max_pings_without_data=0,
    )
    assert ka.keepalive_time_ms == 10_000 and "keepalive_timeout_ms=5000" in repr(ka)
    assert grpcclient.KeepAliveOptions().keepalive_time_ms == 2**31 - 1
    with grpcclient.InferenceServerClient(server.grpc_url, keepalive_options=ka) as client:
        assert client.is_server_live()
    args = [("grpc.max_receive_message_length", 2**31 - 1), ("grpc.enable_retries", 0)]
    with grpcclient.InferenceServerClient(server.grpc_url, channel_args=args) as client:
        assert client.is_server_live()
    assert grpcclient.MAX_GRPC_MESSAGE_SIZE == 2**31 - 1


def test_large_message(client: grpcclient.InferenceServerClient) -> None:
    data = np.arange(2 * 3_000_000, dtype=np.float32).reshape(2, 3_000_000)  # 24 MB > 4 MiB
    inp = grpcclient.InferInput("INPUT0", list(data.shape), "FP32").set_data_from_numpy(data)
    out = client.infer("identity_fp32", [inp], client_timeout=60).as_numpy("OUTPUT0")
    np.testing.assert_array_equal(out, data)


def test_verbose(server: MockServer, capsys: pytest.CaptureFixture[str]) -> None:
    with grpcclient.InferenceServerClient(server.grpc_url, verbose=True) as client:
        client.is_server_live()
        client.infer("simple", _simple_inputs())
    out = capsys.readouterr().out
    assert "is_server_live, metadata" in out and "infer, metadata" in out
    assert 'model_name: "simple"' in out


def test_ssl_missing_file_is_clear() -> None:
    with pytest.raises(InferenceServerException, match="root certificates"):
        grpcclient.InferenceServerClient(
            "localhost:1", ssl=True, root_certificates="/nonexistent/ca.pem"
        )


def test_unreachable_server_fails_fast() -> None:
    with (
        grpcclient.InferenceServerClient("127.0.0.1:1") as client,
        pytest.raises(InferenceServerException) as e,
    ):
        client.is_server_live(client_timeout=5)
    assert e.value.status() in (
        "StatusCode.UNAVAILABLE",
        "StatusCode.DEADLINE_EXCEEDED",
    )


def test_exports() -> None:
    for name in (
        "InferenceServerException",
        "np_to_triton_dtype",
        "triton_to_np_dtype",
        "serialize_byte_tensor",
        "deserialize_bytes_tensor",
        "service_pb2",
        "service_pb2_grpc",
        "model_config_pb2",
        "InferenceServerClientPlugin",
        "Request",
        "KeepAliveOptions",
        "raise_error",
        "raise_error_grpc",
    ):
        assert hasattr(grpcclient, name), name
    import tritonclient.grpc.aio as aioclient

    assert aioclient.InferInput is grpcclient.InferInput
    assert aioclient.auth.BasicAuth is BasicAuth


# ------------------------------------------------------------------------------------------
# Model repository (explicit mode) and shared memory
# ------------------------------------------------------------------------------------------


def test_load_unload_explicit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copytree(BUNDLED_MODELS / "simple", repo / "simple")
    options = ServerOptions(model_repository=[repo], model_control_mode=ModelControlMode.EXPLICIT)
    with (
        MockServer(options, _frontend()) as srv,
        grpcclient.InferenceServerClient(srv.grpc_url) as client,
    ):
        assert not client.is_model_ready("simple")
        client.load_model("simple", client_timeout=60)
        assert client.is_model_ready("simple")
        assert client.infer("simple", _simple_inputs()).as_numpy("OUTPUT0") is not None
        client.unload_model("simple", unload_dependents=True, client_timeout=60)
        assert not client.is_model_ready("simple")
        with pytest.raises(InferenceServerException) as e:
            client.load_model("no_such_model")
        assert str(e.value.status()).startswith("StatusCode.")
        # load with an override config
        config = '{"name": "simple", "max_batch_size": 4}'
        client.load_model("simple", config=config)
        assert client.get_model_config("simple").config.max_batch_size == 4
        with pytest.raises(InferenceServerException, match="must be bytes"):
            client.load_model("simple", config=config, files={"file:1/x": "text"})  # type: ignore[dict-item]


def test_system_shared_memory(client: grpcclient.InferenceServerClient) -> None:
    key = f"/grpc_client_test_{uuid.uuid4().hex[:8]}"
    out_key = key + "_out"
    nbytes = 16 * 4
    in_region = posix.create(key, 2 * nbytes)
    out_region = posix.create(out_key, 2 * nbytes)
    try:
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.full((1, 16), 2, dtype=np.int32)
        view = np.frombuffer(in_region.buffer, dtype=np.int32, count=32)
        view[:16] = a.ravel()
        view[16:] = b.ravel()
        client.register_system_shared_memory("in", key, 2 * nbytes)
        client.register_system_shared_memory("out", out_key, 2 * nbytes)
        status = client.get_system_shared_memory_status(as_json=True)
        assert set(status["regions"]) == {"in", "out"}
        assert client.get_system_shared_memory_status("in").regions["in"].key == key

        i0 = grpcclient.InferInput("INPUT0", [1, 16], "INT32").set_shared_memory("in", nbytes)
        i1 = grpcclient.InferInput("INPUT1", [1, 16], "INT32").set_shared_memory(
            "in", nbytes, offset=nbytes
        )
        o0 = grpcclient.InferRequestedOutput("OUTPUT0")
        o0.set_shared_memory("out", nbytes)
        o1 = grpcclient.InferRequestedOutput("OUTPUT1")
        o1.set_shared_memory("out", nbytes, offset=nbytes)
        result = client.infer("simple", [i0, i1], outputs=[o0, o1])
        assert result.as_numpy("OUTPUT0") is None  # in shared memory
        out = np.frombuffer(out_region.buffer, dtype=np.int32, count=32)
        np.testing.assert_array_equal(out[:16], (a + b).ravel())
        np.testing.assert_array_equal(out[16:], (a - b).ravel())
        del view, out

        client.unregister_system_shared_memory("in")
        assert list(client.get_system_shared_memory_status().regions) == ["out"]
        client.unregister_system_shared_memory()
        assert not client.get_system_shared_memory_status().regions
        with pytest.raises(InferenceServerException):
            client.register_system_shared_memory("bad", "/no_such_key_xyz", 64)
    finally:
        client.unregister_system_shared_memory()
        in_region.close()
        out_region.close()
        posix.unlink(key)
        posix.unlink(out_key)
    assert not Path("/dev/shm" + key).exists()


def test_cuda_shared_memory_calls(client: grpcclient.InferenceServerClient) -> None:
    status = client.get_cuda_shared_memory_status(as_json=True)
    assert status.get("regions", {}) == {}
    with pytest.raises(InferenceServerException) as e:
        client.register_cuda_shared_memory("c", base64.b64encode(b"\0" * 64), 0, 64)
    assert str(e.value.status()).startswith("StatusCode.")
    with pytest.raises(InferenceServerException, match="base64"):
        client.register_cuda_shared_memory("c", b"not base64!!", 0, 64)
    client.unregister_cuda_shared_memory()
    client.unregister_cuda_shared_memory("c")


# -- fast request encoding, response decoding and large requests ------------------------------


def _reference(
    model_name: str,
    inputs: Any,
    model_version: str = "",
    outputs: Any = None,
    request_id: str = "",
    sequence_id: int | str = 0,
    sequence_start: bool = False,
    sequence_end: bool = False,
    priority: int = 0,
    timeout: int | None = None,
    parameters: dict[str, Any] | None = None,
) -> service_pb2.ModelInferRequest:
    """The request built field by field with protobuf, the way NVIDIA's client builds it."""
    request = service_pb2.ModelInferRequest(
        model_name=model_name, model_version=model_version, id=request_id
    )
    if sequence_id != 0 and sequence_id != "":
        if isinstance(sequence_id, str):
            request.parameters["sequence_id"].string_param = sequence_id
        else:
            request.parameters["sequence_id"].int64_param = (
                sequence_id - 2**64 if sequence_id >= 2**63 else sequence_id
            )
        request.parameters["sequence_start"].bool_param = sequence_start
        request.parameters["sequence_end"].bool_param = sequence_end
    if priority:
        request.parameters["priority"].uint64_param = priority
    if timeout is not None:
        request.parameters["timeout"].int64_param = timeout
    for key, value in (parameters or {}).items():
        if isinstance(value, float):
            request.parameters[key].double_param = value
        else:
            request.parameters[key].string_param = value
    for item in inputs if isinstance(inputs, list) else [inputs]:
        request.inputs.append(item._get_tensor())
        if item._get_content() is not None:
            request.raw_input_contents.append(item._get_content())
    for out in outputs if isinstance(outputs, list) else [outputs] if outputs else []:
        request.outputs.append(out._get_tensor())
    return request


def test_the_encoded_request_is_the_message_protobuf_builds() -> None:
    from tritonclient.grpc import _common as common

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inp = grpcclient.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(a)
    words = grpcclient.InferInput("TEXT", [2], "BYTES").set_data_from_numpy(
        np.array([b"ab", "cé"], dtype=np.object_)
    )
    in_shm = grpcclient.InferInput("INPUT1", [1, 16], "INT32")
    in_shm.set_shared_memory("region", 64, offset=8)
    out = grpcclient.InferRequestedOutput("OUTPUT0", class_count=3)
    out_shm = grpcclient.InferRequestedOutput("OUTPUT1")
    out_shm.set_shared_memory("region", 64)
    cases: list[tuple[Any, ...]] = [
        ("simple", [inp], "", None),
        ("simple", [inp, words, in_shm], "2", [out, out_shm], "id-1"),
        ("simple", inp, "", out, "", 7, True, False, 3, 100, {"p": 1.5, "q": "x"}),
        ("modèle", [inp], "", [out], "ïd", "seq", False, True),
        ("simple", [inp], "", None, "", 2**63 + 5, True, True),
    ]
    for args in cases:
        options = InferOptions(*args[4:])
        encoded = common.encode_infer(*args[:4], options)
        assert service_pb2.ModelInferRequest.FromString(encoded) == _reference(*args)
    # The shared-memory entries carry the placement, the classification its count.
    message = service_pb2.ModelInferRequest.FromString(
        common.encode_infer("m", [in_shm], "", [out, out_shm])
    )
    assert message.inputs[0].parameters["shared_memory_offset"].int64_param == 8
    assert message.outputs[0].parameters["classification"].int64_param == 3
    assert message.outputs[1].parameters["shared_memory_region"].string_param == "region"


def test_encode_infer_errors() -> None:
    from tritonclient.grpc import _common as common

    inp = grpcclient.InferInput("INPUT0", [1], "INT32").set_data_from_numpy(np.zeros(1, np.int32))
    empty = grpcclient.InferInput("INPUT1", [1], "INT32")
    cases: list[tuple[tuple[Any, ...], InferOptions, str]] = [
        (("m", [empty]), InferOptions(), "neither data nor a shared-memory region"),
        (("m", [inp], 1), InferOptions(), "model version"),
        (("m", ["x"]), InferOptions(), "InferInput"),
        (("m", [inp], "", ["y"]), InferOptions(), "InferRequestedOutput"),
        (("m", [inp]), InferOptions(parameters={"sequence_id": 1}), "reserved parameter"),
        (("m", [inp]), InferOptions(sequence_id=2**64), "Value out of range: 18446744073709551616"),
        (("m", [inp]), InferOptions(sequence_id=1.5), "must be an int or a str"),  # type: ignore[arg-type]
        (("m", [inp]), InferOptions(priority=-1), "Value out of range: -1"),
        (("m", [inp]), InferOptions(timeout=2**63), "Value out of range: 9223372036854775808"),
        (("m", [inp]), InferOptions(parameters={"p": -(2**63) - 1}), "range: -9223372036854775809"),
    ]
    for args, options, fragment in cases:
        with pytest.raises(InferenceServerException, match=fragment):
            common.encode_infer(*args, options=options)


def test_encoded_request_keeps_the_data_of_set_data_time() -> None:
    from tritonclient.grpc import _common as common

    a = np.arange(4, dtype=np.int32)
    inp = grpcclient.InferInput("INPUT0", [4], "INT32").set_data_from_numpy(a)
    before = common.encode_infer("m", [inp])
    a[:] = -1  # the caller changes its array after set_data_from_numpy
    after = common.encode_infer("m", [inp])
    assert before == after
    raw = service_pb2.ModelInferRequest.FromString(after).raw_input_contents[0]
    assert np.array_equal(np.frombuffer(raw, np.int32), np.arange(4, dtype=np.int32))


def test_cached_tensor_wire_follows_changes() -> None:
    from tritonclient.grpc import _common as common

    inp = grpcclient.InferInput("INPUT0", [1, 4], "INT32")
    inp.set_data_from_numpy(np.zeros((1, 4), np.int32))
    out = grpcclient.InferRequestedOutput("OUTPUT0")
    common.encode_infer("m", [inp], "", [out])  # fills the caches
    inp.set_shape([2, 2])
    inp.set_data_from_numpy(np.ones((2, 2), np.int32))
    out.set_shared_memory("r", 16)
    request = service_pb2.ModelInferRequest.FromString(common.encode_infer("m", [inp], "", [out]))
    assert list(request.inputs[0].shape) == [2, 2]
    assert request.outputs[0].parameters["shared_memory_region"].string_param == "r"
    inp.set_shared_memory("r", 16)
    out.unset_shared_memory()
    request = service_pb2.ModelInferRequest.FromString(common.encode_infer("m", [inp], "", [out]))
    assert not request.raw_input_contents
    assert request.inputs[0].parameters["shared_memory_region"].string_param == "r"
    assert "shared_memory_region" not in request.outputs[0].parameters
    inp.set_data_from_numpy(np.ones((2, 2), np.int32))
    request = service_pb2.ModelInferRequest.FromString(common.encode_infer("m", [inp], "", [out]))
    assert "shared_memory_region" not in request.inputs[0].parameters
    assert len(request.raw_input_contents) == 1


@pytest.mark.parametrize("count", [4, 100_000])
def test_small_and_large_responses_decode_alike(count: int) -> None:
    from tritonclient._codec import grpc_framing
    from tritonclient.grpc import _common as common

    response = service_pb2.ModelInferResponse(model_name="m", id="x")
    values = np.arange(count, dtype=np.float32)
    out = response.outputs.add(name="OUT", datatype="FP32")
    out.shape.extend([1, count])
    response.raw_output_contents.append(values.tobytes())
    data = response.SerializeToString()
    assert (len(data) <= grpc_framing.SMALL_MESSAGE_BYTES) == (count == 4)
    result = common.parse_infer(data)
    array = result.as_numpy("OUT")
    assert array is not None
    assert np.array_equal(array, values.reshape(1, count))
    assert not array.flags.writeable
    assert result.as_numpy("missing") is None
    assert result.get_response() == response


def test_large_infer_round_trip(client: grpcclient.InferenceServerClient) -> None:
    from tritonclient._transport.grpc import LARGE_REQUEST_BYTES

    n = LARGE_REQUEST_BYTES + 3
    x = np.random.default_rng(1).integers(0, 256, (1, n), dtype=np.uint8)
    inp = grpcclient.InferInput("INPUT0", [1, n], "UINT8").set_data_from_numpy(x)
    expected = x.copy()
    x[:] = 0  # changed after set_data_from_numpy: what was set is sent
    result = client.infer(
        "identity_uint8", [inp], outputs=[grpcclient.InferRequestedOutput("OUTPUT0")]
    )
    assert np.array_equal(result.as_numpy("OUTPUT0"), expected)
    with pytest.raises(InferenceServerException) as error:
        client.infer("no_such_model", [inp])
    assert "StatusCode.NOT_FOUND" in str(error.value.status())


ECHO_PARAMETERS_CONFIG = """
name: "echo_parameters"
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "PARAMS" data_type: TYPE_STRING dims: [ 1 ] } ]
"""

ECHO_PARAMETERS_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("PARAMS", np.array([r.parameters().encode()], np.object_))]
            )
            for r in requests
        ]
"""


def test_header_forward_pattern(tmp_path: Path) -> None:
    import json

    model = tmp_path / "echo_parameters"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(ECHO_PARAMETERS_CONFIG)
    (model / "1" / "model.py").write_text(ECHO_PARAMETERS_MODEL)
    options = ServerOptions(model_repository=[tmp_path])
    frontends = FrontendOptions(
        http_port=0, grpc_port=0, metrics_port=0, grpc_header_forward_pattern="^x-|^triton_"
    )
    value = grpcclient.InferInput("IN", [1], "INT32")
    value.set_data_from_numpy(np.array([1], dtype=np.int32))
    with (
        MockServer(options, frontends) as server,
        grpcclient.InferenceServerClient(server.grpc_url) as client,
    ):
        headers = {"x-trace-id": "abc", "other": "not forwarded"}
        result = client.infer("echo_parameters", [value], headers=headers, parameters={"p": 1})
        params = json.loads(result.as_numpy("PARAMS")[0])
        assert params == {"x-trace-id": "abc", "p": 1}
        # The same through a stream.
        answers: queue.Queue[Any] = queue.Queue()
        client.start_stream(
            callback=lambda result, error: answers.put((result, error)), headers=headers
        )
        client.async_stream_infer("echo_parameters", [value])
        result, error = answers.get(timeout=30)
        client.stop_stream()
        assert error is None
        assert json.loads(result.as_numpy("PARAMS")[0]) == {"x-trace-id": "abc"}
        # A reserved name is refused, and the server keeps serving.
        with pytest.raises(InferenceServerException, match="reserved for Triton usage"):
            client.infer("echo_parameters", [value], headers={"x-a": "1", "triton_x": "2"})
        assert client.infer("echo_parameters", [value]).as_numpy("PARAMS") is not None


def test_int64_arguments_out_of_range_are_refused_before_sending() -> None:
    """NVIDIA's client sets these with protobuf, whose ``ValueError('Value out of range: N')``
    reaches the caller before anything is sent (Triton's QA, ``L0_shared_memory``
    ``test_infer_integer_overflow``, expects it); ours raises the same text, as a
    ``ValueError`` that is also an ``InferenceServerException`` naming the argument."""
    from tritonclient.utils import InferenceServerValueError

    def check(error: BaseException, value: int, argument: str) -> None:
        assert isinstance(error, ValueError) and isinstance(error, InferenceServerException)
        assert str(error) == f"Value out of range: {value}" and error.status() is None
        assert isinstance(error, InferenceServerValueError) and argument in str(error.hint)

    output = grpcclient.InferRequestedOutput("OUTPUT0")
    with pytest.raises(ValueError) as raised:
        output.set_shared_memory("region", 2**64 - 32, 32)
    check(raised.value, 2**64 - 32, "byte_size")
    with pytest.raises(ValueError) as raised:
        grpcclient.InferInput("INPUT0", [1], "INT32").set_shared_memory("region", 4, 2**63)
    check(raised.value, 2**63, "offset")
    with pytest.raises(ValueError) as raised:
        grpcclient.InferRequestedOutput("OUTPUT0", class_count=2**63)
    check(raised.value, 2**63, "class_count")

    inputs = [
        grpcclient.InferInput("INPUT0", [1], "INT32").set_data_from_numpy(np.zeros(1, np.int32))
    ]
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"parameters": {"p": 2**63}}, 2**63, "'p'"),
        ({"parameters": {"p": -(2**63) - 1}}, -(2**63) - 1, "'p'"),
        ({"timeout": 2**63}, 2**63, "timeout"),
        ({"priority": -1}, -1, "priority"),
        ({"sequence_id": 2**64}, 2**64, "sequence_id"),
    ]
    # Nothing listens there: a request that was sent would fail with UNAVAILABLE instead.
    with grpcclient.InferenceServerClient("127.0.0.1:1") as client:
        for kwargs, value, argument in cases:
            with pytest.raises(ValueError) as raised:
                client.infer("m", inputs, **kwargs)
            check(raised.value, value, argument)
        # The limits themselves are sent (and refused by nobody here but the network).
        with pytest.raises(InferenceServerException) as sent:
            client.infer("m", inputs, parameters={"p": 2**63 - 1}, timeout=-(2**63))
        assert sent.value.status() == "StatusCode.UNAVAILABLE"
