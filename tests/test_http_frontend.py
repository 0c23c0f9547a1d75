"""The HTTP/REST frontend end to end: a CoreServer on the bundled repository, an HttpFrontend on
a free loopback port (its event loop in a background thread), driven with raw HTTP."""

from __future__ import annotations

import asyncio
import gzip
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
import uuid
import zlib
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import ml_dtypes
import numpy as np
import pytest

from mock_server.compose import build_core
from mock_server.core.server import CoreServer, ModelControlMode, ServerOptions
from mock_server.frontends.http import HttpFrontend
from mock_server.frontends.http_support import RequestBodies
from shm import posix
from tests.http_requests import encode_request
from tritonclient._codec import http_body, http_client, jsontext, types
from tritonclient.utils import InferenceServerProtocolError
from tritonclient.utils._dtypes import DATATYPES

MODELS = Path(__file__).resolve().parent.parent / "mock_server" / "models"

_T = TypeVar("_T")


# ---------------------------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------------------------


class LoopThread:
    """An asyncio event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="http-test-loop")
        self.thread.daemon = True
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float = 30.0) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return jsontext.loads(self.body)

    @property
    def error(self) -> str:
        return str(self.json()["error"])


@dataclass
class Endpoint:
    """One running frontend."""

    port: int

    def call(
        self,
        method: str,
        path: str,
        body: bytes | dict[str, Any] | list[Any] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Reply:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=headers or {})
            response = conn.getresponse()
            return Reply(response.status, response.headers, response.read())
        finally:
            conn.close()

    def infer(
        self,
        model: str,
        inputs: list[http_client.RequestInput],
        outputs: list[http_client.RequestOutput] | None = None,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> http_client.DecodedResponse:
        body = encode_request(inputs, outputs, **kw)
        reply = self.call(
            "POST",
            http_body.model_path(model, suffix="infer"),
            body.tobytes(),
            {**body.headers(), **(headers or {})},
        )
        assert reply.status == 200, reply.body
        return http_client.decode_infer_response(
            reply.body,
            reply.headers.get(http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH),
            reply.headers.get(http_body.HEADER_CONTENT_ENCODING),
        )


def start_frontend(loop: LoopThread, core: CoreServer, **kw: Any) -> tuple[HttpFrontend, Endpoint]:
    frontend = HttpFrontend(core, port=0, **kw)
    port = loop.run(frontend.start())
    return frontend, Endpoint(port)


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture(scope="module")
def core() -> Iterator[CoreServer]:
    server = build_core(
        ServerOptions(model_repository=[MODELS], has_gpu=False, allow_client_shm=True)
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(loop: LoopThread, core: CoreServer) -> Iterator[Endpoint]:
    frontend, endpoint = start_frontend(loop, core)
    yield endpoint
    loop.run(frontend.stop())


FAILING_MODEL = b"""
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        error = pb_utils.TritonError("failing: model failed on purpose")
        return [pb_utils.InferenceResponse(error=error) for _ in requests]
"""

FAILING_CONFIG = {
    "name": "failing",
    "backend": "python",
    "max_batch_size": 0,
    "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [-1]}],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [-1]}],
}


def _copy_model(repo: Path, source: str, name: str, edit: Any = None) -> None:
    shutil.copytree(MODELS / source, repo / name)
    config = repo / name / "config.pbtxt"
    text = config.read_text().replace(f'name: "{source}"', f'name: "{name}"')
    config.write_text(edit(text) if edit else text)


@pytest.fixture(scope="module")
def explicit(loop: LoopThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    """A server in EXPLICIT mode on a repository made for these tests (not ready: one startup
    model is broken)."""
    repo = tmp_path_factory.mktemp("explicit") / "repo"
    repo.mkdir()
    shutil.copytree(MODELS / "simple", repo / "simple")
    shutil.copytree(MODELS / "identity_int32", repo / "identity_int32")
    _copy_model(
        repo,
        "simple",
        "simple_dyna",
        lambda t: t + "\ndynamic_batching {\n  max_queue_delay_microseconds: 500000\n}\n",
    )
    _copy_model(
        repo,
        "identity_fp32",
        "raw_fp32",
        lambda t: t.replace("max_batch_size: 0", "max_batch_size: 8").replace(
            "dims: [ -1, -1 ]", "dims: [ 4 ]"
        ),
    )
    _copy_model(
        repo,
        "slow",
        "queued",
        lambda t: t + "\ndynamic_batching {\n  default_queue_policy { max_queue_size: 1 }\n}\n",
    )
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "config.pbtxt").write_text('name: "broken"\nmax_batch_size: "x"\n')
    core = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["simple_dyna", "raw_fp32", "queued", "broken"],
            has_gpu=False,
        )
    )
    core.start()
    frontend, endpoint = start_frontend(loop, core)
    yield endpoint
    loop.run(frontend.stop())
    core.stop()


def ints(
    name: str, values: Any, datatype: str = "INT32", binary: bool = True
) -> http_client.RequestInput:
    array = np.asarray(values, dtype=DATATYPES[datatype].numpy_type)
    return http_client.encode_input(name, datatype, array.shape, array, binary_data=binary)


def simple_inputs(
    binary: bool = True,
) -> tuple[list[http_client.RequestInput], np.ndarray, np.ndarray]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    return [ints("INPUT0", a, binary=binary), ints("INPUT1", b, binary=binary)], a, b


def wait_for(predicate: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------------------------
# Health, metadata, routing
# ---------------------------------------------------------------------------------------------


def test_health_and_server_metadata(server: Endpoint) -> None:
    for path in ("/v2/health/live", "/v2/health/ready"):
        reply = server.call("GET", path)
        assert (reply.status, reply.body) == (200, b"")
        assert reply.headers["Content-Type"].startswith("text/plain")
    metadata = server.call("GET", "/v2").json()
    assert metadata["name"] == "triton" and metadata["version"]
    assert metadata["extensions"][:13] == [
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
    # Triton serves generate but does not list it among the extensions.
    assert "generate" not in metadata["extensions"]


def test_not_live_and_not_ready(loop: LoopThread, explicit: Endpoint) -> None:
    reply = explicit.call("GET", "/v2/health/ready")  # a startup model failed to load
    assert (reply.status, reply.body) == (400, b"")
    assert explicit.call("GET", "/v2/health/live").status == 200
    unstarted = build_core(ServerOptions(model_repository=[], has_gpu=False))
    frontend, endpoint = start_frontend(loop, unstarted)
    try:
        for path in ("/v2/health/live", "/v2/health/ready"):
            reply = endpoint.call("GET", path)
            assert (reply.status, reply.body) == (400, b"")
    finally:
        loop.run(frontend.stop())


def test_model_ready(server: Endpoint) -> None:
    assert server.call("GET", "/v2/models/simple/ready").status == 200
    assert server.call("GET", "/v2/models/simple/versions/1/ready").status == 200
    for path in ("/v2/models/nope/ready", "/v2/models/simple/versions/7/ready"):
        reply = server.call("GET", path)
        assert reply.status == 400 and reply.json() == {"error": "Model version not ready"}


def test_model_metadata_and_config(server: Endpoint) -> None:
    expected = {
        "name": "simple",
        "versions": ["1"],
        "platform": "python",
        "inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [-1, 16]},
            {"name": "INPUT1", "datatype": "INT32", "shape": [-1, 16]},
        ],
        "outputs": [
            {"name": "OUTPUT0", "datatype": "INT32", "shape": [-1, 16]},
            {"name": "OUTPUT1", "datatype": "INT32", "shape": [-1, 16]},
        ],
    }
    assert server.call("GET", "/v2/models/simple").json() == expected
    assert server.call("GET", "/v2/models/simple/versions/1").json() == expected
    config = server.call("GET", "/v2/models/simple/config")
    assert config.headers["Content-Type"] == "application/json"
    body = config.json()
    assert body["name"] == "simple" and body["max_batch_size"] == 8
    assert body["input"][0]["data_type"] == "TYPE_INT32" and body["input"][0]["dims"] == [16]
    assert server.call("GET", "/v2/models/simple/versions/1/config").json() == body
    for path, message in [
        ("/v2/models/nope", "Request for unknown model: 'nope' is not found"),
        ("/v2/models/nope/config", "Request for unknown model: 'nope' is not found"),
        ("/v2/models/simple/versions/7", "Request for unknown model: 'simple' version 7 is not"),
    ]:
        reply = server.call("GET", path)
        assert reply.status == 404 and message in reply.error


@pytest.mark.parametrize(
    ("method", "path", "status", "body"),
    [
        ("GET", "/v2/", 404, {"error": "Not Found"}),
        ("GET", "/v2/health", 404, {"error": "Not Found"}),
        ("GET", "/v2/models", 404, {"error": "Not Found"}),
        ("GET", "/v2/models/simple/versions/abc", 404, {"error": "Not Found"}),
        ("GET", "/v2/models/simple/versions/1/trace/setting", 404, {"error": "Not Found"}),
        ("GET", "/nothing", 404, {"error": "Not Found"}),
        ("POST", "/v2/health/live", 405, {"error": "Method Not Allowed"}),
        ("POST", "/v2", 405, {"error": "Method Not Allowed"}),
        ("GET", "/v2/models/simple/infer", 405, {"error": "Method Not Allowed"}),
        ("POST", "/v2/models/simple/config", 405, {"error": "Method Not Allowed"}),
        ("GET", "/v2/repository/index", 405, {"error": "Method Not Allowed"}),
        ("POST", "/v2/systemsharedmemory/status", 405, {"error": "Method Not Allowed"}),
        ("GET", "/v2/systemsharedmemory/region/r/register", 405, {"error": "Method Not Allowed"}),
        ("PUT", "/v2/logging", 405, {"error": "Method Not Allowed"}),
        ("DELETE", "/v2/trace/setting", 405, {"error": "Method Not Allowed"}),
    ],
)
def test_routing_errors(server: Endpoint, method: str, path: str, status: int, body: Any) -> None:
    reply = server.call(method, path)
    assert reply.status == status and reply.json() == body


def test_query_string_is_ignored_and_names_are_not_percent_decoded(server: Endpoint) -> None:
    assert server.call("GET", "/v2/models/simple?x=1").json()["name"] == "simple"
    # As Triton 2.51: path segments are used as sent.
    assert server.call("GET", "/v2/models/identity%5Ffp32/ready").status == 400
    reply = server.call("GET", "/v2/models/identity%5Ffp32")
    assert reply.status == 404 and "'identity%5Ffp32'" in reply.error


# ---------------------------------------------------------------------------------------------
# Inference
# ---------------------------------------------------------------------------------------------


def test_infer_json(server: Endpoint) -> None:
    request = {
        "id": "42",
        "inputs": [
            {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": list(range(16))},
            {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [[1] * 16]},
        ],
    }
    reply = server.call("POST", "/v2/models/simple/infer", request)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers.get(http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH) is None
    body = reply.json()
    assert list(body) == ["id", "model_name", "model_version", "outputs"]
    assert (body["id"], body["model_name"], body["model_version"]) == ("42", "simple", "1")
    outputs = {o["name"]: o for o in body["outputs"]}
    assert list(outputs["OUTPUT0"]) == ["name", "datatype", "shape", "data"]
    assert outputs["OUTPUT0"]["data"] == [i + 1 for i in range(16)]
    assert outputs["OUTPUT1"]["data"] == [i - 1 for i in range(16)]
    assert outputs["OUTPUT0"]["shape"] == [1, 16]
    with_version = server.call("POST", "/v2/models/simple/versions/1/infer", request)
    assert with_version.status == 200


def test_chunked_request_body(server: Endpoint) -> None:
    inputs, a, b = simple_inputs()
    body = encode_request(inputs)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        # the binary chunks go out as they are (memoryviews of the arrays), chunk-encoded
        conn.request(
            "POST",
            "/v2/models/simple/infer",
            body=iter([bytes(c) for c in body.chunks]),
            headers=body.headers(),
            encode_chunked=True,
        )
        response = conn.getresponse()
        data = response.read()
        assert response.status == 200, data
        length = response.headers[http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH]
    finally:
        conn.close()
    decoded = http_client.decode_infer_response(data, length)
    assert np.array_equal(decoded.as_numpy("OUTPUT1"), a - b)


def test_infer_binary_and_output_selection(server: Endpoint) -> None:
    inputs, a, b = simple_inputs()
    decoded = server.infer("simple", inputs)  # no outputs listed: binary_data_output
    assert np.array_equal(decoded.as_numpy("OUTPUT0"), a + b)
    assert decoded.output_buffer("OUTPUT1") is not None
    mixed = server.infer(
        "simple",
        inputs,
        [
            http_client.encode_output("OUTPUT0"),
            http_client.encode_output("OUTPUT1", binary_data=False),
        ],
        request_id="mix",
    )
    assert mixed.get_output("OUTPUT1")["data"] == (a - b).ravel().tolist()
    assert mixed.output_buffer("OUTPUT0") is not None
    assert np.array_equal(mixed.as_numpy("OUTPUT0"), a + b)
    only = server.infer("simple", inputs, [http_client.encode_output("OUTPUT1")])
    assert [o["name"] for o in only.response["outputs"]] == ["OUTPUT1"]
    # a listed output without binary_data is JSON even with binary_data_output: true
    request = json.loads(encode_request(simple_inputs(False)[0]).tobytes())
    request["outputs"] = [{"name": "OUTPUT0"}]
    reply = server.call("POST", "/v2/models/simple/infer", request)
    assert "data" in reply.json()["outputs"][0]


DATATYPE_VALUES: dict[str, Any] = {
    "bool": ([[True, False, True]], np.bool_),
    "uint8": ([[0, 255, 7]], np.uint8),
    "uint16": ([[0, 65535, 7]], np.uint16),
    "uint32": ([[0, 2**32 - 1, 7]], np.uint32),
    "uint64": ([[0, 2**64 - 1, 7]], np.uint64),
    "int8": ([[-128, 127, 0]], np.int8),
    "int16": ([[-(2**15), 2**15 - 1, 0]], np.int16),
    "int32": ([[-(2**31), 2**31 - 1, 0]], np.int32),
    "int64": ([[-(2**63), 2**63 - 1, 0]], np.int64),
    "fp16": ([[1.5, -2.0, 65504.0]], np.float16),
    "fp32": ([[0.1, -0.0, np.inf]], np.float32),
    "fp64": ([[1e308, np.nan, -1.5]], np.float64),
    "bf16": ([[1.5, -2.0, 3.25]], ml_dtypes.bfloat16),
}


@pytest.mark.parametrize("suffix", sorted(DATATYPE_VALUES))
def test_every_datatype_through_identity(server: Endpoint, suffix: str) -> None:
    values, dtype = DATATYPE_VALUES[suffix]
    array = np.array(values, dtype=dtype)
    datatype = suffix.upper()
    modes = (
        [(True, True)] if datatype in ("FP16", "BF16") else [(b, o) for b in (0, 1) for o in (0, 1)]
    )
    for binary_in, binary_out in modes:
        decoded = server.infer(
            f"identity_{suffix}",
            [
                http_client.encode_input(
                    "INPUT0", datatype, array.shape, array, binary_data=binary_in
                )
            ],
            [http_client.encode_output("OUTPUT0", binary_data=bool(binary_out))],
        )
        out = decoded.as_numpy("OUTPUT0")
        assert out is not None and out.dtype == array.dtype and out.shape == array.shape
        assert out.tobytes() == array.tobytes() or np.array_equal(out, array, equal_nan=True)
    empty = np.zeros((0, 3), dtype=dtype)
    decoded = server.infer(
        f"identity_{suffix}",
        [http_client.encode_input("INPUT0", datatype, empty.shape, empty)],
        [http_client.encode_output("OUTPUT0")],
    )
    assert decoded.as_numpy("OUTPUT0").shape == (0, 3)


def test_bytes_models(server: Endpoint) -> None:
    a = np.array([[str(i).encode() for i in range(16)]], dtype=np.object_)
    b = np.array([["1"] * 16], dtype=np.object_)
    for binary in (True, False):
        decoded = server.infer(
            "simple_string",
            [
                http_client.encode_input("INPUT0", "BYTES", [1, 16], a, binary_data=binary),
                http_client.encode_input("INPUT1", "BYTES", [1, 16], b, binary_data=binary),
            ],
            [http_client.encode_output("OUTPUT0", binary_data=binary)],
        )
        out = decoded.as_numpy("OUTPUT0")
        assert [int(x) for x in out.ravel()] == [i + 1 for i in range(16)]
    words = np.array([["héllo", "日本", ""]], dtype=np.object_)
    decoded = server.infer(
        "identity_bytes",
        [http_client.encode_input("INPUT0", "BYTES", [1, 3], words, binary_data=False)],
        [http_client.encode_output("OUTPUT0", binary_data=False)],
    )
    assert decoded.as_numpy("OUTPUT0").tolist() == words.tolist()
    # non-UTF-8 bytes requested as JSON come back raw inside the JSON string, as from Triton
    raw = np.array([[b"\xff\x00", b"ok"]], dtype=np.object_)
    body = encode_request(
        [http_client.encode_input("INPUT0", "BYTES", [1, 2], raw)],
        [http_client.encode_output("OUTPUT0", binary_data=False)],
    )
    reply = server.call("POST", "/v2/models/identity_bytes/infer", body.tobytes(), body.headers())
    assert reply.status == 200 and b'"data":["\xff\\u0000","ok"]' in reply.body
    # such a body is not JSON (not UTF-8): a client refuses it, with the hint to ask for binary
    with pytest.raises(InferenceServerProtocolError, match="not valid UTF-8"):
        http_client.decode_infer_response(reply.body)


def test_half_precision_json_is_refused(server: Endpoint) -> None:
    request = {"inputs": [{"name": "INPUT0", "shape": [1, 1], "datatype": "FP16", "data": [1.0]}]}
    reply = server.call("POST", "/v2/models/identity_fp16/infer", request)
    assert reply.status == 400 and "receiving FP16 data via JSON is not supported" in reply.error
    half = np.ones((1, 2), np.float16)
    body = encode_request([http_client.encode_input("INPUT0", "FP16", [1, 2], half)])
    header = json.loads(body.chunks[0])
    del header["parameters"]  # outputs omitted and not binary: JSON for every output
    wire = json.dumps(header).encode()
    reply = server.call(
        "POST",
        "/v2/models/identity_fp16/infer",
        wire + half.tobytes(),
        {http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH: str(len(wire))},
    )
    assert reply.status == 400 and "sending FP16 data via JSON is not supported" in reply.error


def test_raw_binary_request(server: Endpoint, explicit: Endpoint) -> None:
    values = np.arange(4, dtype=np.float32)
    reply = explicit.call(
        "POST",
        "/v2/models/raw_fp32/infer",
        values.tobytes(),
        {http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH: "0"},
    )
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/octet-stream"
    decoded = http_client.decode_infer_response(
        reply.body, reply.headers[http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH]
    )
    assert decoded.get_output("OUTPUT0")["shape"] == [1, 4]
    assert decoded.as_numpy("OUTPUT0").tolist() == [values.tolist()]
    headers = {http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH: "0"}
    bad = explicit.call("POST", "/v2/models/raw_fp32/infer", bytes(125), headers)
    assert bad.status == 400
    assert "input byte size mismatch for input 'raw_input' for model 'raw_fp32'" in bad.error
    assert "Expected 16, got 125" in bad.error
    two_inputs = server.call("POST", "/v2/models/simple/infer", bytes(64), headers)
    assert two_inputs.status == 400 and "must only have 1 input" in two_inputs.error
    two_dims = server.call("POST", "/v2/models/identity_fp32/infer", bytes(16), headers)
    assert two_dims.status == 400 and "variable-sized dimension" in two_dims.error


def test_classification(server: Endpoint) -> None:
    inputs, _, _ = simple_inputs()
    for binary in (True, False):
        decoded = server.infer(
            "simple",
            inputs,
            [http_client.encode_output("OUTPUT0", binary_data=binary, class_count=3)],
        )
        output = decoded.get_output("OUTPUT0")
        assert output["datatype"] == "BYTES" and output["shape"] == [1, 3]
        got = [
            x if isinstance(x, bytes) else x.encode() for x in decoded.as_numpy("OUTPUT0").ravel()
        ]
        assert got == [b"18:15", b"17:14", b"16:13"]


def test_sequence(server: Endpoint) -> None:
    sequence = [(0, True, False), (11, False, False), (7, False, True)]
    got = []
    for value, start, end in sequence:
        decoded = server.infer(
            "simple_sequence",
            [ints("INPUT", [[value]])],
            sequence_id=4242,
            sequence_start=start,
            sequence_end=end,
        )
        got.append(int(decoded.as_numpy("OUTPUT").item()))
    assert got == [1, 11, 7]
    body = encode_request([ints("INPUT", [[1]])], sequence_id=4243)
    reply = server.call("POST", "/v2/models/simple_sequence/infer", body.tobytes(), body.headers())
    assert reply.status == 400 and "START flag" in reply.error
    body = encode_request([ints("INPUT", [[1]])])
    reply = server.call("POST", "/v2/models/simple_sequence/infer", body.tobytes(), body.headers())
    assert reply.status == 400 and "correlation ID" in reply.error


def test_large_tensor(server: Endpoint) -> None:
    array = np.random.default_rng(0).random((512, 1024), dtype=np.float32)  # 2 MiB
    decoded = server.infer(
        "identity_fp32",
        [http_client.encode_input("INPUT0", "FP32", array.shape, array)],
        [http_client.encode_output("OUTPUT0")],
    )
    assert np.array_equal(decoded.as_numpy("OUTPUT0"), array)


def infer_raw(
    endpoint: Endpoint, model: str, header: Any, tail: bytes = b"", **headers: str
) -> Reply:
    wire = header if isinstance(header, bytes) else json.dumps(header).encode()
    extra = dict(headers)
    if tail:
        extra.setdefault(http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH, str(len(wire)))
    return endpoint.call("POST", f"/v2/models/{model}/infer", wire + tail, extra)


def input_obj(name: str = "INPUT0", **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": name, "shape": [1, 16], "datatype": "INT32", "data": [0] * 16}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


BOTH = [input_obj("INPUT0"), input_obj("INPUT1")]


@pytest.mark.parametrize(
    ("request_obj", "tail", "status", "message"),
    [
        (b"{bad json", b"", 500, "failed to parse the request JSON buffer"),
        ({}, b"", 500, "Unable to parse 'inputs': attempt to access non-existing object member"),
        ({"id": 1, "inputs": BOTH}, b"", 500, "Unable to parse 'id'"),
        ({"inputs": [input_obj(shape=[-1, 16]), BOTH[1]]}, b"", 500, "non-unsigned-integer"),
        ({"inputs": [input_obj(data=[1, 2]), BOTH[1]]}, b"", 500, "Shape does not match"),
        ({"inputs": [input_obj(data=[True] * 16), BOTH[1]]}, b"", 500, "non-signed-integer"),
        ({"inputs": [input_obj(datatype="STRING"), BOTH[1]]}, b"", 400, "invalid datatype for"),
        ({"inputs": [input_obj(data=None), BOTH[1]]}, b"", 400, "But no field is set"),
        (
            {"inputs": [input_obj(shape=[1, 15], data=[0] * 15), BOTH[1]]},
            b"",
            400,
            "unexpected shape",
        ),
        ({"inputs": [input_obj(datatype="FP32"), BOTH[1]]}, b"", 400, "data-type is 'FP32'"),
        ({"inputs": [BOTH[0]]}, b"", 400, "expected 2 inputs but got 1 inputs"),
        ({"inputs": [*BOTH, input_obj("BOGUS")]}, b"", 400, "expected 2 inputs but got 3"),
        ({"inputs": BOTH, "outputs": [{"name": "NOPE"}]}, b"", 400, "unexpected inference output"),
        ({"inputs": [BOTH[0], BOTH[0]]}, b"", 400, "input 'INPUT0' already exists in request"),
        ({"inputs": BOTH, "parameters": {"triton_x": 1}}, b"", 400, "reserved for Triton usage"),
        ({"inputs": BOTH, "parameters": {"p": {"a": 1}}}, b"", 400, "parameter 'p' has invalid"),
        ({"inputs": BOTH, "parameters": {"sequence_id": 1.5}}, b"", 500, "'sequence_id'"),
        (
            {
                "inputs": [
                    input_obj(shape=[9, 16], data=[0] * 144),
                    input_obj("INPUT1", shape=[9, 16], data=[0] * 144),
                ]
            },
            b"",
            400,
            "batch-size must be <= 8",
        ),
        (
            {"inputs": [input_obj(data=None, parameters={"binary_data_size": 64}), BOTH[1]]},
            bytes(60),
            400,
            "unexpected size for input 'INPUT0', expecting 4 additional bytes for model 'simple'",
        ),
        (
            {"inputs": [input_obj(data=None, parameters={"binary_data_size": 64}), BOTH[1]]},
            bytes(65),
            400,
            "unexpected additional input data for model 'simple'",
        ),
        (
            {"inputs": [input_obj(data=None, parameters={"binary_data_size": 60}), BOTH[1]]},
            bytes(60),
            400,
            "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60",
        ),
    ],
)
def test_infer_errors(
    server: Endpoint, request_obj: Any, tail: bytes, status: int, message: str
) -> None:
    reply = infer_raw(server, "simple", request_obj, tail)
    assert reply.status == status, reply.body
    assert message in reply.error
    assert set(reply.json()) == {"error"}


def test_repeated_output_is_refused(server: Endpoint) -> None:
    # Triton 2.73 (the default profile) refuses it; 2.51 returns it once (tests/test_compat.py
    # and the differential case http/infer/duplicate-output).
    request = {"inputs": BOTH, "outputs": [{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]}
    reply = infer_raw(server, "simple", request)
    assert reply.status == 400
    assert reply.error == "[request id: <id_unknown>] output 'OUTPUT0' already exists in request"


def test_header_length_errors(server: Endpoint) -> None:
    header = json.dumps({"inputs": BOTH}).encode()
    # As Triton 2.73 (std::stoi; 2.51's atoi read text as 0: tests/test_compat.py).
    for value, message in [
        ("abc", "Unable to parse Inference-Header-Content-Length, got: abc"),
        ("99999", f"should be in range (0, {len(header)}), got: 99999"),
    ]:
        reply = server.call(
            "POST",
            "/v2/models/simple/infer",
            header,
            {http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH: value},
        )
        assert reply.status == 400 and message in reply.error
    # absent header with binary inputs: the whole body counts as JSON, so what follows the
    # JSON is an error (NUL bytes end rapidjson's input, and then the data are missing)
    binary = {"inputs": [input_obj(data=None, parameters={"binary_data_size": 64}), BOTH[1]]}
    reply = server.call("POST", "/v2/models/simple/infer", json.dumps(binary).encode() + bytes(64))
    assert reply.status == 400
    assert "unexpected size for input 'INPUT0', expecting 64 additional bytes" in reply.error


def test_unknown_model_and_version_on_infer(server: Endpoint) -> None:
    reply = infer_raw(server, "nope", {"inputs": []})
    assert reply.status == 404 and "Request for unknown model: 'nope' is not found" in reply.error
    reply = server.call("POST", "/v2/models/simple/versions/3/infer", {"inputs": BOTH})
    assert reply.status == 404 and "version 3 is not found" in reply.error


def test_decoupled_model_on_infer_is_501(server: Endpoint) -> None:
    reply = infer_raw(server, "repeat_int32", {"inputs": []})
    assert reply.status == 501
    assert reply.error == "HTTP end point doesn't support models with decoupled transaction policy"


def test_model_execution_error_is_500(explicit: Endpoint) -> None:
    load = http_client.encode_load_request(
        json.dumps(FAILING_CONFIG), {"file:1/model.py": FAILING_MODEL}
    )
    assert explicit.call("POST", "/v2/repository/models/failing/load", load).status == 200
    reply = infer_raw(
        explicit,
        "failing",
        {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [1]}]},
    )
    assert reply.status == 500 and "failed on purpose" in reply.error
    assert explicit.call("POST", "/v2/repository/models/failing/unload", b"").status == 200


def test_queue_full_is_503(explicit: Endpoint) -> None:
    def slow_request(delay_ms: int) -> Reply:
        request = {
            "inputs": [
                {"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [1]},
                {"name": "DELAY_MS", "shape": [1], "datatype": "UINT32", "data": [delay_ms]},
            ]
        }
        return infer_raw(explicit, "queued", request)

    with ThreadPoolExecutor(4) as pool:
        running = pool.submit(slow_request, 1500)
        time.sleep(0.4)
        queued = pool.submit(slow_request, 10)
        time.sleep(0.3)
        rejected = slow_request(10)
        assert rejected.status == 503 and "Exceeds maximum queue size" in rejected.error
        assert running.result(20).status == 200 and queued.result(20).status == 200


def test_compression(server: Endpoint) -> None:
    inputs, a, b = simple_inputs()
    body = encode_request(inputs, [http_client.encode_output("OUTPUT0")])
    for request_encoding in ("gzip", "deflate"):
        for response_encoding in ("gzip", "deflate", "identity"):
            packed = body.compressed(request_encoding)
            headers = {**packed.headers(), "Accept-Encoding": response_encoding}
            reply = server.call("POST", "/v2/models/simple/infer", packed.tobytes(), headers)
            assert reply.status == 200, reply.body
            expected_encoding = None if response_encoding == "identity" else response_encoding
            assert reply.headers.get("Content-Encoding") == expected_encoding
            decoded = http_client.decode_infer_response(
                reply.body,
                reply.headers.get(http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH),
                reply.headers.get("Content-Encoding"),
            )
            assert np.array_equal(decoded.as_numpy("OUTPUT0"), a + b)
    # header length refers to the JSON before compression, in both directions
    reply = server.call(
        "POST",
        "/v2/models/simple/infer",
        body.tobytes(),
        {**body.headers(), "Accept-Encoding": "gzip;q=0.2, deflate;q=0.9"},
    )
    assert reply.headers["Content-Encoding"] == "deflate"
    plain = zlib.decompress(reply.body)
    length = int(reply.headers[http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH])
    assert json.loads(plain[:length])["model_name"] == "simple"
    json_only = server.call(
        "POST",
        "/v2/models/simple/infer",
        gzip.compress(json.dumps({"inputs": BOTH}).encode()),
        {"Content-Encoding": "gzip", "Accept-Encoding": "gzip"},
    )
    assert json.loads(gzip.decompress(json_only.body))["model_name"] == "simple"
    # other endpoints ignore Accept-Encoding
    metadata = server.call("GET", "/v2", headers={"Accept-Encoding": "gzip"})
    assert metadata.headers.get("Content-Encoding") is None and metadata.json()["name"]
    unsupported = server.call("POST", "/v2/models/simple/infer", b"xx", {"Content-Encoding": "br"})
    assert unsupported.status == 501
    assert unsupported.json() == {"error": "Unsupported compression type"}
    assert unsupported.headers["Accept-Encoding"] == "gzip, deflate"


# ---------------------------------------------------------------------------------------------
# Statistics, repository
# ---------------------------------------------------------------------------------------------


def test_statistics(server: Endpoint) -> None:
    def success() -> int:
        stats = server.call("GET", "/v2/models/simple_int8/stats").json()["model_stats"]
        return int(stats[0]["inference_stats"]["success"]["count"])

    before = success()
    a = np.ones((2, 16), np.int8)
    server.infer("simple_int8", [ints("INPUT0", a, "INT8"), ints("INPUT1", a, "INT8")])
    assert success() == before + 1
    every = server.call("GET", "/v2/models/stats").json()["model_stats"]
    assert {"simple", "simple_int8", "slow"} <= {s["name"] for s in every}
    one = server.call("GET", "/v2/models/simple_int8/versions/1/stats").json()["model_stats"]
    assert len(one) == 1 and one[0]["version"] == "1"
    assert set(one[0]) >= {"last_inference", "inference_count", "execution_count", "batch_stats"}
    unknown = server.call("GET", "/v2/models/nope/stats")
    assert unknown.status == 400 and "requested model 'nope' is not available" in unknown.error
    version = server.call("GET", "/v2/models/simple/versions/9/stats")
    assert version.status == 400


def test_repository_in_none_mode(server: Endpoint) -> None:
    index = server.call("POST", "/v2/repository/index")
    assert index.status == 200
    rows = index.json()
    assert {"name": "simple", "version": "1", "state": "READY"} in rows
    assert all("reason" not in row for row in rows if row.get("state") == "READY")
    assert server.call("POST", "/v2/repository/index", {"ready": True}).status == 200
    assert server.call("POST", "/v2/repository/other/index", {}).status == 200
    bad = server.call("POST", "/v2/repository/index", {"ready": "yes"})
    assert bad.status == 400  # Triton 2.73 (2.51: 500, tests/test_compat.py)
    for action in ("load", "unload"):
        reply = server.call("POST", f"/v2/repository/models/simple/{action}", b"")
        assert reply.status == 503
        repo = server.call("POST", f"/v2/repository/myrepo/models/simple/{action}", b"")
        assert repo.status == 501
        assert repo.error == "'repository_name' specification is not supported"


def test_explicit_load_unload(explicit: Endpoint) -> None:
    rows = explicit.call("POST", "/v2/repository/index").json()
    assert {"name": "identity_int32"} in rows
    broken = [r for r in rows if r["name"] == "broken"]
    assert broken and broken[0]["state"] == "UNAVAILABLE" and broken[0]["reason"]
    assert explicit.call("GET", "/v2/models/identity_int32/ready").status == 400
    reply = explicit.call("POST", "/v2/repository/models/identity_int32/load", b"")
    assert (reply.status, reply.body) == (200, b"")
    assert explicit.call("GET", "/v2/models/identity_int32/ready").status == 200
    ready_rows = explicit.call("POST", "/v2/repository/index", {"ready": True}).json()
    assert all(r.get("state") == "READY" for r in ready_rows)
    unload = http_client.encode_unload_request(unload_dependents=True)
    reply = explicit.call("POST", "/v2/repository/models/identity_int32/unload", unload)
    assert (reply.status, reply.body) == (200, b"")
    assert explicit.call("GET", "/v2/models/identity_int32/ready").status == 400
    assert explicit.call("POST", "/v2/repository/models/never_heard_of/unload", b"").status == 200
    unknown = explicit.call("POST", "/v2/repository/models/never_heard_of/load", b"")
    assert unknown.status == 500 and "failed to poll from model repository" in unknown.error
    bad_key = explicit.call(
        "POST", "/v2/repository/models/simple/load", {"parameters": {"bogus": "x"}}
    )
    assert bad_key.status == 500
    assert bad_key.error == "unexpected error on creating Triton parameter"
    not_string = explicit.call(
        "POST", "/v2/repository/models/simple/load", {"parameters": {"config": 1}}
    )
    assert not_string.status == 500
    # a config override (max_batch_size 16) then a plain reload
    config = explicit.call("GET", "/v2/models/simple_dyna/config").json()
    config.pop("dynamic_batching")
    config["max_batch_size"] = 16
    load = http_client.encode_load_request(json.dumps({**config, "name": "simple"}))
    assert explicit.call("POST", "/v2/repository/models/simple/load", load).status == 200
    assert explicit.call("GET", "/v2/models/simple/config").json()["max_batch_size"] == 16
    big = np.zeros((12, 16), np.int32)
    decoded = explicit.infer("simple", [ints("INPUT0", big), ints("INPUT1", big)])
    assert decoded.as_numpy("OUTPUT0").shape == (12, 16)
    assert explicit.call("POST", "/v2/repository/models/simple/unload", b"").status == 200


# ---------------------------------------------------------------------------------------------
# Shared memory
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def shm_key() -> Iterator[str]:
    key = f"/http_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    yield key
    posix.unlink(key)
    assert not Path("/dev/shm" + key).exists()


def test_system_shared_memory_end_to_end(server: Endpoint, shm_key: str) -> None:
    region = posix.create(shm_key, 256)
    try:
        buffer = region.buffer
        a = np.arange(16, dtype=np.int32)
        b = np.full(16, 2, dtype=np.int32)
        buffer[0:64] = a.tobytes()
        buffer[64:128] = b.tobytes()
        register = http_client.encode_system_shm_register(shm_key, 0, 256)
        path = http_body.system_shm_path("register", "io_region")
        assert server.call("POST", path, register).status == 200
        status = server.call("GET", http_body.system_shm_path("status", "io_region")).json()
        assert status == [{"name": "io_region", "key": shm_key, "offset": 0, "byte_size": 256}]
        assert status[0] in server.call("GET", "/v2/systemsharedmemory/status").json()
        body = encode_request(
            [
                http_client.encode_input_shm("INPUT0", "INT32", [1, 16], "io_region", 64, 0),
                http_client.encode_input_shm("INPUT1", "INT32", [1, 16], "io_region", 64, 64),
            ],
            [
                http_client.encode_output(
                    "OUTPUT0", shared_memory=types.SharedMemoryRef("io_region", 64, 128)
                ),
                http_client.encode_output(
                    "OUTPUT1", shared_memory=types.SharedMemoryRef("io_region", 64, 192)
                ),
            ],
        )
        reply = server.call("POST", "/v2/models/simple/infer", body.tobytes(), body.headers())
        assert reply.status == 200, reply.body
        outputs = reply.json()["outputs"]
        assert sorted(outputs, key=lambda o: o["name"]) == [
            {"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]},
            {"name": "OUTPUT1", "datatype": "INT32", "shape": [1, 16]},
        ]
        assert np.frombuffer(buffer[128:192], np.int32).tolist() == (a + b).tolist()
        assert np.frombuffer(buffer[192:256], np.int32).tolist() == (a - b).tolist()
        # mixed: one input from shm, one in the body; output too small for the result
        small = encode_request(
            [
                http_client.encode_input_shm("INPUT0", "INT32", [1, 16], "io_region", 64, 0),
                ints("INPUT1", b.reshape(1, 16)),
            ],
            [
                http_client.encode_output(
                    "OUTPUT0", shared_memory=types.SharedMemoryRef("io_region", 16, 128)
                )
            ],
        )
        reply = server.call("POST", "/v2/models/simple/infer", small.tobytes(), small.headers())
        assert reply.status == 500
        assert "should be at least 64 bytes to hold the results" in reply.error
        duplicate = server.call("POST", path, register)
        assert duplicate.status == 400 and "already in manager" in duplicate.error
        unregister = server.call("POST", http_body.system_shm_path("unregister", "io_region"))
        assert (unregister.status, unregister.body) == (200, b"")
        assert server.call("GET", http_body.system_shm_path("status", "io_region")).status == 404
        # register two, unregister all
        assert (
            server.call("POST", http_body.system_shm_path("register", "r1"), register).status == 200
        )
        # A second region on a key already registered fails, as on Triton 2.51 (which reuses
        # the descriptor it closed after mapping the first).
        again = server.call("POST", http_body.system_shm_path("register", "r2"), register)
        assert again.status == 500 and again.error == f"Invalid shared memory region: '{shm_key}'"
        other = posix.create(shm_key + "_2", 64)
        try:
            second = http_client.encode_system_shm_register(shm_key + "_2", 0, 64)
            path = http_body.system_shm_path("register", "r2")
            assert server.call("POST", path, second).status == 200
            assert len(server.call("GET", "/v2/systemsharedmemory/status").json()) == 2
            assert server.call("POST", "/v2/systemsharedmemory/unregister").status == 200
            assert server.call("GET", "/v2/systemsharedmemory/status").json() == []
        finally:
            other.close()
            posix.unlink(shm_key + "_2")
    finally:
        server.call("POST", "/v2/systemsharedmemory/unregister")
        region.close()


def test_shared_memory_errors(server: Endpoint, shm_key: str) -> None:
    region = posix.create(shm_key, 64)
    try:
        path = http_body.system_shm_path("register", "err_region")
        cases = [
            ({"byte_size": 8}, 400, "Shared memory register request has no 'key' field"),
            ({"key": shm_key}, 400, "Shared memory register request has no 'byte_size' field"),
            ({"key": "/no_such_key_xyz", "byte_size": 8}, 500, "Unable to open shared memory"),
            ({"key": shm_key, "offset": 32, "byte_size": 64}, 400, "invalid args"),
            ({"key": shm_key, "byte_size": "8"}, 500, "non-unsigned-integer"),
        ]
        for body, status, message in cases:
            reply = server.call("POST", path, body)
            assert reply.status == status and message in reply.error, (body, reply.body)
        no_region = server.call(
            "POST", "/v2/systemsharedmemory/register", {"key": shm_key, "byte_size": 8}
        )
        assert no_region.status == 400 and "'region name' is necessary" in no_region.error
        unknown = server.call("GET", http_body.system_shm_path("status", "missing"))
        assert unknown.status == 404
        assert unknown.error == "Unable to find system shared memory region: 'missing'"
        assert server.call("POST", http_body.system_shm_path("unregister", "missing")).status == 200
        assert server.call("POST", path, {"key": shm_key, "byte_size": 64}).status == 200

        def infer_with(region_name: str, byte_size: int, offset: int) -> Reply:
            body = encode_request(
                [
                    http_client.encode_input_shm(
                        "INPUT0", "INT32", [1, 16], region_name, byte_size, offset
                    ),
                    ints("INPUT1", np.zeros((1, 16))),
                ]
            )
            return server.call("POST", "/v2/models/simple/infer", body.tobytes(), body.headers())

        reply = infer_with("missing", 64, 0)
        assert (
            reply.status == 404 and "Unable to find shared memory region: 'missing'" in reply.error
        )
        reply = infer_with("err_region", 64, 64)
        assert reply.status == 400 and "Invalid offset for shared memory region" in reply.error
        reply = infer_with("err_region", 64, 8)
        assert reply.status == 400 and "Invalid offset + byte size" in reply.error
        reply = infer_with("err_region", 32, 0)
        assert reply.status == 400 and "input byte size mismatch" in reply.error
        assert infer_with("err_region", 64, 0).status == 200
    finally:
        server.call("POST", "/v2/systemsharedmemory/unregister")
        region.close()


def test_cuda_shared_memory_without_gpu(server: Endpoint) -> None:
    assert server.call("GET", "/v2/cudasharedmemory/status").json() == []
    path = http_body.cuda_shm_path("register", "gpu_region")
    bad = server.call("POST", path, {"raw_handle": {"b64": "AAAA"}, "device_id": 0, "byte_size": 8})
    assert bad.status == 400
    assert bad.error == "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t"
    body = http_client.encode_cuda_shm_register(bytes(64), 0, 8)
    no_gpu = server.call("POST", path, body)
    # What Triton's GPU build answers when it cannot open the handle (no GPU here).
    assert no_gpu.status == 400
    assert no_gpu.error == "failed to register shared memory region: invalid args"
    assert server.call("GET", http_body.cuda_shm_path("status", "gpu_region")).status == 404
    assert server.call("POST", http_body.cuda_shm_path("unregister")).status == 200
    assert server.call("POST", http_body.cuda_shm_path("unregister", "gpu_region")).status == 200


# ---------------------------------------------------------------------------------------------
# Trace, logging, restricted APIs
# ---------------------------------------------------------------------------------------------


def test_trace_settings(server: Endpoint) -> None:
    settings = server.call("GET", "/v2/trace/setting").json()
    assert settings == {
        "trace_level": ["OFF"],
        "trace_rate": "1000",
        "trace_count": "-1",
        "log_frequency": "0",
        "trace_file": "",
        "trace_mode": "triton",
    }
    try:
        updated = server.call("POST", "/v2/trace/setting", {"trace_rate": "5"}).json()
        assert updated["trace_rate"] == "5"
        model = server.call("POST", "/v2/models/simple/trace/setting", {"trace_count": "3"})
        assert model.json()["trace_count"] == "3" and model.json()["trace_rate"] == "5"
        cleared = server.call("POST", "/v2/models/simple/trace/setting", {"trace_count": None})
        assert cleared.json()["trace_count"] == "-1"
        assert server.call("GET", "/v2/models/simple/trace/setting").status == 200
    finally:
        server.call("POST", "/v2/trace/setting", {"trace_rate": "1000"})
    for body, status, message in [
        ({"trace_rate": 5}, 500, "non-string as string"),
        ({"trace_file": "/tmp/x"}, 501, "trace file location can not be updated"),
        ({"trace_level": ["TIMESTAMPS"]}, 400, "trace file name is not given"),
        ({"trace_level": ["OFF", "TENSORS"]}, 400, "Expect only one trace level 'OFF'"),
        ({"trace_level": "OFF"}, 500, "non-array as array"),
    ]:
        reply = server.call("POST", "/v2/trace/setting", body)
        assert reply.status == status and message in reply.error
    unknown = server.call("GET", "/v2/models/nope/trace/setting")
    assert unknown.status == 400 and "Request for unknown model : nope" in unknown.error


def test_logging_settings(server: Endpoint) -> None:
    settings = server.call("GET", "/v2/logging").json()
    assert set(settings) == {
        "log_file",
        "log_info",
        "log_warning",
        "log_error",
        "log_verbose_level",
        "log_format",
    }
    try:
        updated = server.call("POST", "/v2/logging", {"log_verbose_level": 1, "log_info": False})
        assert updated.status == 200
        assert updated.json()["log_verbose_level"] == 1 and updated.json()["log_info"] is False
        assert server.call("POST", "/v2/logging", {"log_format": "ISO8601"}).status == 200
        assert server.call("POST", "/v2/logging", {"log_file": None}).status == 200
    finally:
        restore = {k: v for k, v in settings.items() if k != "log_file"}
        assert server.call("POST", "/v2/logging", restore).json() == settings
    for body, status, message in [
        ({"log_info": 1}, 500, "non-boolean as boolean"),
        ({"log_file": "/tmp/log"}, 501, "log file location can not be updated"),
        ({"log_format": "xml"}, 503, "invalid argument for --log_format, got: xml"),
        (b"{", 500, "failed to parse"),
    ]:
        reply = server.call("POST", "/v2/logging", body)
        assert reply.status == status and message in reply.error


def test_restricted_apis_and_limits(loop: LoopThread, core: CoreServer) -> None:
    frontend, endpoint = start_frontend(
        loop,
        core,
        restricted_apis={
            "inference": ("infer-key", "secret"),
            "health": ("health-key", "h"),
            "shared-memory": ("admin", "yes"),
        },
        max_input_size=2048,
        header_forward_pattern="^triton_",
    )
    try:
        denied = endpoint.call("GET", "/v2/health/live")
        assert denied.status == 403
        assert denied.json() == {"error": "This API is restricted, expecting header 'health-key'"}
        assert endpoint.call("GET", "/v2/health/live", headers={"health-key": "h"}).status == 200
        assert endpoint.call("GET", "/v2/models/simple/ready").status == 403
        wrong = endpoint.call("GET", "/v2/health/live", headers={"health-key": "nope"})
        assert wrong.status == 403
        assert endpoint.call("GET", "/v2/systemsharedmemory/status").status == 403
        assert endpoint.call("GET", "/v2").status == 200  # metadata is not restricted
        inputs, a, b = simple_inputs()
        body = encode_request(inputs)
        reply = endpoint.call("POST", "/v2/models/simple/infer", body.tobytes(), body.headers())
        assert reply.status == 403
        assert reply.error == "This API is restricted, expecting header 'infer-key'"
        decoded = endpoint.infer("simple", inputs, headers={"infer-key": "secret"})
        assert np.array_equal(decoded.as_numpy("OUTPUT0"), a + b)
        # header forwarding of a reserved name is refused
        reply = endpoint.call(
            "POST",
            "/v2/models/simple/infer",
            body.tobytes(),
            {**body.headers(), "infer-key": "secret", "triton_x": "1"},
        )
        assert reply.status == 400 and "reserved for Triton usage" in reply.error
        # max_input_size limits the JSON part, not the binary data after it
        big_json = {"inputs": [input_obj(), input_obj("INPUT1")], "id": "x" * 3000}
        reply = endpoint.call("POST", "/v2/models/simple/infer", big_json, {"infer-key": "secret"})
        assert reply.status == 400 and "--http-max-input-size" in reply.error
        wide = np.zeros((8, 16), np.int32)  # 512 bytes of binary data per input: fine
        decoded = endpoint.infer(
            "simple", [ints("INPUT0", wide), ints("INPUT1", wide)], headers={"infer-key": "secret"}
        )
        assert decoded.as_numpy("OUTPUT0").shape == (8, 16)
    finally:
        loop.run(frontend.stop())
    with pytest.raises(ValueError, match="unknown restricted API group"):
        HttpFrontend(core, restricted_apis={"everything": ("k", "v")})


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https(loop: LoopThread, core: CoreServer, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    frontend, endpoint = start_frontend(loop, core, ssl_context=server_context)
    try:
        client_context = ssl.create_default_context(cafile=str(cert))
        conn = http.client.HTTPSConnection(
            "127.0.0.1", endpoint.port, timeout=30, context=client_context
        )
        try:
            conn.request("GET", "/v2/models/simple")
            response = conn.getresponse()
            assert response.status == 200 and json.loads(response.read())["name"] == "simple"
        finally:
            conn.close()
    finally:
        loop.run(frontend.stop())


# ---------------------------------------------------------------------------------------------
# Generate, decoupled
# ---------------------------------------------------------------------------------------------


def test_generate(server: Endpoint) -> None:
    reply = server.call(
        "POST", "/v2/models/slow/generate", {"id": "g1", "INPUT0": [1, 2, 3], "DELAY_MS": 1}
    )
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("application/json")
    assert reply.json() == {
        "OUTPUT0": [1, 2, 3],
        "id": "g1",
        "model_name": "slow",
        "model_version": "1",
    }
    scalar = server.call(
        "POST", "/v2/models/slow/generate", {"parameters": {"INPUT0": 7, "DELAY_MS": 1}}
    )
    assert scalar.json()["OUTPUT0"] == 7
    square = server.call("POST", "/v2/models/square_int32/generate", {"IN": 1})
    assert square.status == 200 and square.json()["OUT"] == 1
    many = server.call("POST", "/v2/models/square_int32/generate", {"IN": 3})
    assert (
        many.status == 200 and "generate expects model to produce exactly 1 response" in many.error
    )
    unknown = server.call("POST", "/v2/models/nope/generate", {"x": 1})
    assert unknown.status == 404
    # A nested list counts as one element of a 1-D input (Triton reads generate inputs so).
    shape = server.call("POST", "/v2/models/slow/generate", {"INPUT0": [[1, 2]]})
    assert shape.status == 500
    assert shape.error == "Unable to parse 'data': Shape does not match true shape of 'data' field"
    batching = server.call(
        "POST", "/v2/models/simple/generate", {"INPUT0": [[1] * 16], "INPUT1": [[1] * 16]}
    )
    assert batching.status == 400
    assert batching.error == "The schema can not convert input 'INPUT0' to tensor with proper shape"
    flat = server.call(
        "POST", "/v2/models/simple/generate", {"INPUT0": [1] * 16, "INPUT1": [1] * 16}
    )
    assert flat.status == 200 and flat.json()["OUTPUT0"] == [2] * 16
    bad = server.call("POST", "/v2/models/slow/generate", b"{")
    assert bad.status == 500
    encoded = server.call(
        "POST",
        "/v2/models/slow/generate",
        gzip.compress(b'{"INPUT0": 1}'),
        {"Content-Encoding": "gzip"},
    )
    assert encoded.status == 400


def sse_events(body: bytes) -> list[Any]:
    assert body.endswith(b"\n\n") or body == b""
    return [json.loads(chunk[len(b"data: ") :]) for chunk in body.split(b"\n\n") if chunk]


def test_generate_stream_decoupled(server: Endpoint) -> None:
    request = {"id": "s1", "IN": [4, 2, 0, 1], "DELAY": [5, 5, 5, 5], "WAIT": 0}
    reply = server.call("POST", "/v2/models/repeat_int32/generate_stream", request)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/event-stream; charset=utf-8"
    events = sse_events(reply.body)
    assert [e["OUT"] for e in events] == [4, 2, 0, 1]
    assert [e["IDX"] for e in events] == [0, 1, 2, 3]
    assert all(e["id"] == "s1" and e["model_name"] == "repeat_int32" for e in events)
    empty = server.call("POST", "/v2/models/square_int32/generate_stream", {"IN": 0})
    assert (empty.status, empty.body) == (200, b"")
    three = sse_events(
        server.call("POST", "/v2/models/square_int32/generate_stream", {"IN": 3}).body
    )
    assert [e["OUT"] for e in three] == [3, 3, 3]
    missing = server.call("POST", "/v2/models/repeat_int32/generate_stream", {"IN": [1]})
    assert missing.status == 400 and "expected 3 inputs" in missing.error


# ---------------------------------------------------------------------------------------------
# Concurrency, batching, cancellation
# ---------------------------------------------------------------------------------------------


def test_concurrent_requests(server: Endpoint) -> None:
    def one(i: int) -> bool:
        a = np.full((1, 16), i, dtype=np.int32)
        b = np.arange(16, dtype=np.int32).reshape(1, 16)
        decoded = server.infer(
            "simple", [ints("INPUT0", a), ints("INPUT1", b, binary=i % 2 == 0)], request_id=str(i)
        )
        return (
            decoded.response["id"] == str(i)
            and np.array_equal(decoded.as_numpy("OUTPUT0"), a + b)
            and np.array_equal(decoded.as_numpy("OUTPUT1"), a - b)
        )

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(64), timeout=60))
    assert all(results) and len(results) == 64


def test_dynamic_batching_forms_batches(explicit: Endpoint) -> None:
    barrier = threading.Barrier(8, timeout=10)

    def one(i: int) -> bool:
        a = np.full((1, 16), i, dtype=np.int32)
        barrier.wait()
        decoded = explicit.infer("simple_dyna", [ints("INPUT0", a), ints("INPUT1", a)])
        return bool(np.array_equal(decoded.as_numpy("OUTPUT0"), 2 * a))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(one, range(8), timeout=60))
    stats = explicit.call("GET", "/v2/models/simple_dyna/stats").json()["model_stats"][0]
    assert stats["inference_count"] == 8
    assert stats["execution_count"] < 8
    assert max(b["batch_size"] for b in stats["batch_stats"]) > 1


def test_client_disconnect_cancels_request(server: Endpoint) -> None:
    def successes() -> int:
        stats = server.call("GET", "/v2/models/slow/stats").json()["model_stats"][0]
        return int(stats["inference_stats"]["success"]["count"])

    before = successes()
    request = {
        "inputs": [
            {"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [1]},
            {"name": "DELAY_MS", "shape": [1], "datatype": "UINT32", "data": [20000]},
        ]
    }
    body = json.dumps(request).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v2/models/slow/infer HTTP/1.1\r\nHost: test\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        time.sleep(0.5)  # the model is sleeping on it now
    start = time.monotonic()
    quick = dict(request)
    quick["inputs"] = [request["inputs"][0], {**request["inputs"][1], "data": [1]}]
    reply = server.call("POST", "/v2/models/slow/infer", quick, timeout=15)
    assert reply.status == 200
    assert time.monotonic() - start < 5  # the single instance was freed by the cancellation
    # The model answered the cancelled request (with a CANCELLED error): a success in the
    # statistics, as Triton 2.51's Python backend counts it; then the quick one.
    assert wait_for(lambda: successes() == before + 2)


# ---------------------------------------------------------------------------------------------
# NVIDIA's tritonclient against this server
# ---------------------------------------------------------------------------------------------

PEER_SCRIPT = r"""
import asyncio
import os
import sys

import numpy as np
import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

url = sys.argv[1]
assert "tritonclient-ng" not in httpclient.__file__
client = httpclient.InferenceServerClient(url)
assert client.is_server_live() and client.is_server_ready()
assert client.get_server_metadata()["name"] == "triton"
assert client.is_model_ready("simple") and not client.is_model_ready("nope")
assert client.get_model_metadata("simple")["inputs"][0]["shape"] == [-1, 16]
assert client.get_model_config("simple")["max_batch_size"] == 8

a = np.arange(16, dtype=np.int32).reshape(1, 16)
b = np.ones((1, 16), dtype=np.int32)
for binary in (True, False):
    i0 = httpclient.InferInput("INPUT0", [1, 16], "INT32")
    i0.set_data_from_numpy(a, binary_data=binary)
    i1 = httpclient.InferInput("INPUT1", [1, 16], "INT32")
    i1.set_data_from_numpy(b, binary_data=binary)
    outputs = [
        httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary),
        httpclient.InferRequestedOutput("OUTPUT1", binary_data=binary),
    ]
    result = client.infer("simple", [i0, i1], outputs=outputs, request_id="peer")
    assert (result.as_numpy("OUTPUT0") == a + b).all()
    assert (result.as_numpy("OUTPUT1") == a - b).all()
    assert result.get_response()["id"] == "peer"
    result = client.infer("simple", [i0, i1])
    assert (result.as_numpy("OUTPUT0") == a + b).all()
    result = client.infer(
        "simple",
        [i0, i1],
        request_compression_algorithm="gzip",
        response_compression_algorithm="deflate",
    )
    assert (result.as_numpy("OUTPUT1") == a - b).all()
    result = client.async_infer("simple", [i0, i1]).get_result()
    assert (result.as_numpy("OUTPUT0") == a + b).all()

strings = np.array([[str(i).encode() for i in range(16)]], dtype=np.object_)
ones = np.array([[b"1"] * 16], dtype=np.object_)
for binary in (True, False):
    s0 = httpclient.InferInput("INPUT0", [1, 16], "BYTES")
    s0.set_data_from_numpy(strings, binary_data=binary)
    s1 = httpclient.InferInput("INPUT1", [1, 16], "BYTES")
    s1.set_data_from_numpy(ones, binary_data=binary)
    out = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)]
    result = client.infer("simple_string", [s0, s1], outputs=out)
    assert [int(x) for x in result.as_numpy("OUTPUT0").ravel()] == list(range(1, 17))

values = [0, 11, 7, 5]
got = []
for index, value in enumerate(values):
    inp = httpclient.InferInput("INPUT", [1, 1], "INT32")
    inp.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    result = client.infer(
        "simple_sequence",
        [inp],
        sequence_id=31337,
        sequence_start=index == 0,
        sequence_end=index == len(values) - 1,
    )
    got.append(int(result.as_numpy("OUTPUT").item()))
assert got == [1, 11, 7, 5], got

stats = client.get_inference_statistics("simple")
assert stats["model_stats"][0]["inference_stats"]["success"]["count"] >= 8
try:
    client.infer("nope", [i0])
except InferenceServerException as exc:
    assert exc.status() == "404" and "unknown model" in exc.message()
else:
    raise AssertionError("expected an error")
try:
    client.load_model("simple")
except InferenceServerException as exc:
    assert exc.status() == "503"
else:
    raise AssertionError("expected an error")

key = "/peer_shm_%d" % os.getpid()
handle = shm.create_shared_memory_region("peer_region", key, 256)
try:
    shm.set_shared_memory_region(handle, [a, b])
    client.register_system_shared_memory("peer_region", key, 256)
    assert client.get_system_shared_memory_status()[0]["name"] == "peer_region"
    i0 = httpclient.InferInput("INPUT0", [1, 16], "INT32")
    i0.set_shared_memory("peer_region", 64, 0)
    i1 = httpclient.InferInput("INPUT1", [1, 16], "INT32")
    i1.set_shared_memory("peer_region", 64, 64)
    o0 = httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)
    o0.set_shared_memory("peer_region", 64, 128)
    o1 = httpclient.InferRequestedOutput("OUTPUT1")
    result = client.infer("simple", [i0, i1], outputs=[o0, o1])
    out0 = shm.get_contents_as_numpy(handle, np.int32, [1, 16], offset=128)
    assert (out0 == a + b).all() and (result.as_numpy("OUTPUT1") == a - b).all()
    client.unregister_system_shared_memory("peer_region")
    assert client.get_system_shared_memory_status() == []
finally:
    shm.destroy_shared_memory_region(handle)


async def use_aio():
    aio = aioclient.InferenceServerClient(url)
    try:
        assert await aio.is_server_live()
        i0 = aioclient.InferInput("INPUT0", [1, 16], "INT32")
        i0.set_data_from_numpy(a)
        i1 = aioclient.InferInput("INPUT1", [1, 16], "INT32")
        i1.set_data_from_numpy(b)
        result = await aio.infer("simple", [i0, i1])
        assert (result.as_numpy("OUTPUT0") == a + b).all()
    finally:
        await aio.close()


asyncio.run(use_aio())
client.close()
print("PEER-OK")
"""


def test_official_tritonclient_against_this_server(
    nvidia_python: Path, server: Endpoint, tmp_path: Path
) -> None:
    script = tmp_path / "peer_client.py"
    script.write_text(PEER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(
        [str(nvidia_python), str(script), f"127.0.0.1:{server.port}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PEER-OK" in result.stdout
    assert not list(Path("/dev/shm").glob("peer_shm_*"))


def test_large_body_buffer_reused_only_when_nothing_refers_to_it() -> None:
    bodies = RequestBodies(max_input_size=2**26)
    size = 8 << 20
    first = bodies._buffer(size)
    assert memoryview(first).nbytes == size
    held = np.frombuffer(memoryview(first), dtype=np.uint8)[:16]  # e.g. an input array
    del first
    second = bodies._buffer(size)
    assert not np.shares_memory(np.asarray(second), held)  # still referenced: a new buffer
    del held, second
    third = bodies._buffer(size - 5)
    assert memoryview(third).nbytes == size - 5
    fourth_ref = np.asarray(third)
    assert bodies._spare is not None and np.shares_memory(fourth_ref, bodies._spare)
    del third, fourth_ref
    small = bodies._buffer(1024)
    assert isinstance(small, bytearray) and len(small) == 1024


def test_large_tensors_back_to_back(server: Endpoint) -> None:
    """Large bodies through the reused body buffer and the sliced response writes."""
    arrays = [
        np.random.default_rng(seed).random((1, (5 << 20) // 4 + seed), dtype=np.float32)
        for seed in range(3)
    ]
    decoded = [
        server.infer(
            "identity_fp32",
            [http_client.encode_input("INPUT0", "FP32", a.shape, a)],
            [http_client.encode_output("OUTPUT0")],
        )
        for a in arrays
    ]
    for reply, array in zip(decoded, arrays, strict=True):
        assert np.array_equal(reply.as_numpy("OUTPUT0"), array)
