"""Hostile input against a real bundled server (HTTP and gRPC on free loopback ports).

Every attack is followed by a valid ``simple`` inference: the server must answer the attack with
a clear error and keep serving.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.client
import json
import os
import random
import socket
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import numpy as np
import pytest

from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from shm import posix
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc

MAX_INPUT = 1 << 20  # the HTTP frontend's default is 64 MiB; bombs inflate far past either


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    srv = MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True),
        FrontendOptions(http_port=0, grpc_port=0, metrics_port=0),
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


# -- helpers ------------------------------------------------------------------------------------


def _http(
    server: MockServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def _simple_body() -> bytes:
    a = list(range(16))
    return json.dumps(
        {
            "inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": a},
                {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
            ]
        }
    ).encode()


def assert_http_alive(server: MockServer) -> None:
    status, _, body = _http(server, "POST", "/v2/models/simple/infer", _simple_body())
    assert status == 200, body
    out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]}
    assert out["OUTPUT0"] == [i + 1 for i in range(16)]


def _grpc_stub(
    server: MockServer,
) -> tuple[grpc.Channel, service_pb2_grpc.GRPCInferenceServiceStub]:
    channel = grpc.insecure_channel(server.grpc_url)
    return channel, service_pb2_grpc.GRPCInferenceServiceStub(channel)


def _simple_grpc_request(request_id: str = "") -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="simple", id=request_id)
    for name in ("INPUT0", "INPUT1"):
        tensor = request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        del tensor
        request.raw_input_contents.append(np.arange(16, dtype=np.int32).tobytes())
    return request


def assert_grpc_alive(server: MockServer) -> None:
    channel, stub = _grpc_stub(server)
    with channel:
        response = stub.ModelInfer(_simple_grpc_request(), timeout=30)
    out = np.frombuffer(response.raw_output_contents[0], dtype=np.int32)
    assert out.tolist() == [2 * i for i in range(16)]


def assert_alive(server: MockServer) -> None:
    assert_http_alive(server)
    assert_grpc_alive(server)


def _error(body: bytes) -> str:
    return str(json.loads(body)["error"])


# -- 1. dims overflow ---------------------------------------------------------------------------

OVERFLOW_SHAPES = [
    [2**40, 2**40],
    [2**62, 4],
    [2**31, 2**31, 2**31],
    [2**63 - 1, 2],
    [0, 2**63 - 1, 2**63 - 1],
]


@pytest.mark.parametrize("shape", OVERFLOW_SHAPES)
def test_http_dims_overflow_json(server: MockServer, shape: list[int]) -> None:
    body = json.dumps(
        {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": shape, "data": [1, 2]}]}
    ).encode()
    for model in ("simple", "slow", "identity_fp32"):
        status, _, reply = _http(server, "POST", f"/v2/models/{model}/infer", body)
        assert status in (400, 500), reply
        assert _error(reply)
    assert_http_alive(server)


@pytest.mark.parametrize("shape", OVERFLOW_SHAPES)
def test_http_dims_overflow_binary(server: MockServer, shape: list[int]) -> None:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "INPUT0",
                    "datatype": "INT32",
                    "shape": shape,
                    "parameters": {"binary_data_size": 8},
                }
            ]
        }
    ).encode()
    for model in ("slow", "identity_fp32"):
        status, _, reply = _http(
            server,
            "POST",
            f"/v2/models/{model}/infer",
            header + b"\0" * 8,
            {"Inference-Header-Content-Length": str(len(header))},
        )
        assert status in (400, 500), reply
        assert _error(reply)
    assert_http_alive(server)


@pytest.mark.parametrize("shape", OVERFLOW_SHAPES)
def test_grpc_dims_overflow(server: MockServer, shape: list[int]) -> None:
    channel, stub = _grpc_stub(server)
    with channel:
        for model, raw in (("slow", True), ("identity_fp32", True), ("slow", False)):
            request = pb.ModelInferRequest(model_name=model)
            tensor = request.inputs.add(name="INPUT0", datatype="INT32", shape=shape)
            if raw:
                request.raw_input_contents.append(b"\0" * 8)
            else:
                tensor.contents.int_contents.extend([1, 2])
            with pytest.raises(grpc.RpcError) as info:
                stub.ModelInfer(request, timeout=30)
            assert info.value.code() in (
                grpc.StatusCode.INVALID_ARGUMENT,
                grpc.StatusCode.INTERNAL,
            ), info.value
            assert info.value.details()
    assert_alive(server)


def test_many_huge_dims_are_cheap(server: MockServer) -> None:
    """100k dims of 2**62: refused quickly (the product is not computed in full)."""
    shape = [2**62] * 100_000
    body = json.dumps(
        {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": shape, "data": [1]}]}
    ).encode()
    started = time.monotonic()
    status, _, reply = _http(server, "POST", "/v2/models/slow/infer", body)
    assert status in (400, 500), reply
    channel, stub = _grpc_stub(server)
    with channel:
        request = pb.ModelInferRequest(model_name="slow")
        request.inputs.add(name="INPUT0", datatype="INT32", shape=shape)
        request.raw_input_contents.append(b"\0" * 4)
        with pytest.raises(grpc.RpcError) as info:
            stub.ModelInfer(request, timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert time.monotonic() - started < 10
    assert_alive(server)


# -- 2. deeply nested JSON ---------------------------------------------------------------------


@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
@pytest.mark.parametrize(
    "path", ["/v2/models/simple/infer", "/v2/repository/index", "/v2/trace/setting"]
)
def test_deeply_nested_json(server: MockServer, opener: bytes, path: str) -> None:
    body = opener * 100_000
    status, _, reply = _http(server, "POST", path, body)
    assert status in (400, 500), reply
    assert _error(reply)
    # Nested inside an otherwise valid request.
    nested = b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[16],"data":' + body
    status, _, reply = _http(server, "POST", "/v2/models/simple/infer", nested)
    assert status in (400, 500), reply
    assert_http_alive(server)


def test_deeply_nested_json_closed(server: MockServer) -> None:
    """Well-formed but absurdly deep data (closed brackets) is refused, not recursed into."""
    data = b"[" * 50_000 + b"]" * 50_000
    body = b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[16],"data":' + data + b"}]}"
    status, _, reply = _http(server, "POST", "/v2/models/simple/infer", body)
    assert status in (400, 500), reply
    assert _error(reply)
    assert_http_alive(server)


# -- 3. decompression bombs --------------------------------------------------------------------


@functools.lru_cache(maxsize=4)  # (compressing 300 MiB takes the attacker seconds each time)
def _bomb(encoding: str, size: int = 300 << 20) -> bytes:
    compressor = (
        zlib.compressobj(9, zlib.DEFLATED, 31) if encoding == "gzip" else zlib.compressobj(9)
    )
    chunk = b"\0" * (1 << 20)
    parts = [compressor.compress(chunk) for _ in range(size >> 20)]
    parts.append(compressor.flush())
    return b"".join(parts)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_decompression_bomb(server: MockServer, encoding: str) -> None:
    bomb = _bomb(encoding)
    assert len(bomb) < 1 << 20
    started = time.monotonic()
    status, _, reply = _http(
        server, "POST", "/v2/models/simple/infer", bomb, {"Content-Encoding": encoding}
    )
    assert status == 400, reply
    assert "exceeds the maximum allowed" in _error(reply)
    assert time.monotonic() - started < 20
    # Only inference bodies are decompressed (as in Triton): elsewhere a compressed body is
    # read as JSON, and refused at once.
    status, _, reply = _http(
        server, "POST", "/v2/repository/index", bomb, {"Content-Encoding": encoding}
    )
    assert status == 500 and "failed to parse the request JSON buffer" in _error(reply)
    assert time.monotonic() - started < 20
    # With a binary header declared too.
    status, _, reply = _http(
        server,
        "POST",
        "/v2/models/simple/infer",
        bomb,
        {"Content-Encoding": encoding, "Inference-Header-Content-Length": "10"},
    )
    assert status == 400, reply
    assert_http_alive(server)


def test_compressed_valid_request_still_works(server: MockServer) -> None:
    status, _, reply = _http(
        server,
        "POST",
        "/v2/models/simple/infer",
        gzip.compress(_simple_body()),
        {"Content-Encoding": "gzip"},
    )
    assert status == 200, reply


# -- 4. declared sizes larger than the body -----------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "status"),
    # Read with atoi, as Triton reads it: "abc" is 0 (a raw request), "1e3" is 1 (a JSON part
    # of one byte, which does not parse), the huge number wraps to a negative int.
    [("100000", 400), ("-1", 400), ("99999999999999999999", 400), ("abc", 400), ("1e3", 500)],
)
def test_header_length_larger_than_body(server: MockServer, declared: str, status: int) -> None:
    answer, _, reply = _http(
        server,
        "POST",
        "/v2/models/simple/infer",
        _simple_body(),
        {"Inference-Header-Content-Length": declared},
    )
    assert answer == status, reply
    assert _error(reply)
    assert_http_alive(server)


@pytest.mark.parametrize("size", [65, 1 << 40, 2**63, -1, 2**64 + 5])
def test_binary_data_size_larger_than_body(server: MockServer, size: int) -> None:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": n,
                    "datatype": "INT32",
                    "shape": [1, 16],
                    "parameters": {"binary_data_size": size},
                }
                for n in ("INPUT0", "INPUT1")
            ]
        }
    ).encode()
    status, _, reply = _http(
        server,
        "POST",
        "/v2/models/simple/infer",
        header + b"\0" * 128,
        {"Inference-Header-Content-Length": str(len(header))},
    )
    assert status in (400, 500), reply
    assert _error(reply)
    assert_http_alive(server)


def test_content_length_larger_than_body(server: MockServer) -> None:
    """A client that declares more than it sends and goes away: no wedge."""
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as sock:
        sock.sendall(
            b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 100000\r\n\r\n" + _simple_body()
        )
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(10)
        data = sock.recv(65536)
        assert data == b"" or data.startswith(b"HTTP/1.1 400")
    assert_http_alive(server)


# -- 5. truncated shared memory ----------------------------------------------------------------


def _register(server: MockServer, name: str, key: str, size: int) -> None:
    status, _, reply = _http(
        server,
        "POST",
        f"/v2/systemsharedmemory/region/{name}/register",
        json.dumps({"key": key, "offset": 0, "byte_size": size}).encode(),
    )
    assert status == 200, reply


def test_truncated_shm_input_and_output(server: MockServer) -> None:
    key = f"/hostile_{uuid.uuid4().hex[:8]}"
    region = posix.create(key, 256)
    try:
        region.buffer[:128] = np.arange(32, dtype=np.int32).tobytes()
        _register(server, "trunc_in", key, 256)
        fd = os.open("/dev/shm" + key, os.O_RDWR)
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)
        header = {
            "inputs": [
                {
                    "name": n,
                    "datatype": "INT32",
                    "shape": [1, 16],
                    "parameters": {
                        "shared_memory_region": "trunc_in",
                        "shared_memory_offset": off,
                        "shared_memory_byte_size": 64,
                    },
                }
                for n, off in (("INPUT0", 0), ("INPUT1", 64))
            ]
        }
        status, _, reply = _http(
            server, "POST", "/v2/models/simple/infer", json.dumps(header).encode()
        )
        assert status == 400, reply
        assert "truncated" in _error(reply) or "smaller" in _error(reply)
        assert_http_alive(server)
        # Output into the truncated region.
        out_header = json.loads(_simple_body())
        out_header["outputs"] = [
            {
                "name": "OUTPUT0",
                "parameters": {
                    "shared_memory_region": "trunc_in",
                    "shared_memory_offset": 128,
                    "shared_memory_byte_size": 64,
                },
            }
        ]
        status, _, reply = _http(
            server, "POST", "/v2/models/simple/infer", json.dumps(out_header).encode()
        )
        assert status == 400, reply
        # gRPC, input and output.
        channel, stub = _grpc_stub(server)
        with channel:
            request = pb.ModelInferRequest(model_name="simple")
            for n, off in (("INPUT0", 0), ("INPUT1", 64)):
                tensor = request.inputs.add(name=n, datatype="INT32", shape=[1, 16])
                tensor.parameters["shared_memory_region"].string_param = "trunc_in"
                tensor.parameters["shared_memory_offset"].int64_param = off
                tensor.parameters["shared_memory_byte_size"].int64_param = 64
            with pytest.raises(grpc.RpcError) as info:
                stub.ModelInfer(request, timeout=30)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            request = _simple_grpc_request()
            out = request.outputs.add(name="OUTPUT0")
            out.parameters["shared_memory_region"].string_param = "trunc_in"
            out.parameters["shared_memory_offset"].int64_param = 128
            out.parameters["shared_memory_byte_size"].int64_param = 64
            with pytest.raises(grpc.RpcError) as info:
                stub.ModelInfer(request, timeout=30)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        # Grown back: usable again.
        fd = os.open("/dev/shm" + key, os.O_RDWR)
        try:
            os.ftruncate(fd, 256)
        finally:
            os.close(fd)
        status, _, reply = _http(
            server, "POST", "/v2/models/simple/infer", json.dumps(header).encode()
        )
        assert status == 200, reply
        assert_alive(server)
    finally:
        _http(server, "POST", "/v2/systemsharedmemory/region/trunc_in/unregister")
        region.close()
        posix.unlink(key)


# -- 6. pipelining and slowloris ---------------------------------------------------------------


def _read_responses(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    data = b""
    out: list[tuple[int, bytes]] = []
    while len(out) < count:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, "connection closed early"
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        while len(data) < length:
            chunk = sock.recv(65536)
            assert chunk
            data += chunk
        out.append((status, data[:length]))
        data = data[length:]
    return out


def test_http_pipelining(server: MockServer) -> None:
    body = _simple_body()
    infer = (
        b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    missing = b"GET /v2/models/nope HTTP/1.1\r\nHost: x\r\n\r\n"
    live = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=15) as sock:
        sock.sendall(infer + missing + live + infer)
        replies = _read_responses(sock, 4)
    assert [s for s, _ in replies] == [200, 404, 200, 200]
    assert json.loads(replies[0][1])["model_name"] == "simple"
    assert json.loads(replies[3][1])["model_name"] == "simple"


def test_slowloris_does_not_block_others(server: MockServer) -> None:
    stop = threading.Event()
    socks = [
        socket.create_connection(("127.0.0.1", server.http_port), timeout=10) for _ in range(20)
    ]

    def trickle() -> None:
        header = b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nX-Slow: "
        for i in range(len(header)):
            for s in socks:
                with contextlib.suppress(OSError):
                    s.sendall(header[i : i + 1])
            if stop.wait(0.05):
                return
        while not stop.wait(0.05):
            for s in socks:
                with contextlib.suppress(OSError):
                    s.sendall(b"a")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        time.sleep(0.3)
        started = time.monotonic()
        for _ in range(10):
            assert_alive(server)
        assert time.monotonic() - started < 10
    finally:
        stop.set()
        thread.join(5)
        for s in socks:
            s.close()


# -- 7. malformed protobuf ---------------------------------------------------------------------

GARBAGE = [
    b"\xff\xff\xff\xff",
    b"\x0a\xff\xff\xff\xff\x0f",  # field 1, length far past the end
    b"\x12\x05abc",  # truncated string
    bytes(range(256)),
    b"\x0a\x06simple\x32\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # varint overflow
]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_malformed_protobuf_unary(server: MockServer, garbage: bytes) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        call = channel.unary_unary(
            "/inference.GRPCInferenceService/ModelInfer",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        try:
            call(garbage, timeout=30)
        except grpc.RpcError as exc:
            assert exc.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.INTERNAL)
        else:  # it happened to parse: then the request itself must be refused
            raise AssertionError("garbage accepted")
        for method in ("ModelMetadata", "ModelConfig", "RepositoryModelLoad"):
            other = channel.unary_unary(
                f"/inference.GRPCInferenceService/{method}",
                request_serializer=lambda b: b,
                response_deserializer=lambda b: b,
            )
            with pytest.raises(grpc.RpcError) as info:
                other(garbage, timeout=30)
            assert info.value.code() in (
                grpc.StatusCode.INVALID_ARGUMENT,
                grpc.StatusCode.INTERNAL,
                grpc.StatusCode.NOT_FOUND,
                grpc.StatusCode.UNAVAILABLE,
            )
    assert_alive(server)


def test_malformed_protobuf_in_stream(server: MockServer) -> None:
    """A garbage message in the middle of a stream ends the reading there, as in Triton: the
    requests before it are answered and the stream ends with OK."""
    with grpc.insecure_channel(server.grpc_url) as channel:
        call = channel.stream_stream(
            "/inference.GRPCInferenceService/ModelStreamInfer",
            request_serializer=lambda b: b,
            response_deserializer=pb.ModelStreamInferResponse.FromString,
        )
        sent = [
            _simple_grpc_request("first").SerializeToString(),
            b"\xff\xff\xff\xff",
            _simple_grpc_request("after").SerializeToString(),
            b"\x12\x05abc",
            _simple_grpc_request("last").SerializeToString(),
        ]
        responses = list(call(iter(sent), timeout=30))
        assert [r.infer_response.id for r in responses] == ["first"]
        assert not responses[0].error_message
        # The same with triton_grpc_error.
        ended = list(call(iter(sent), timeout=30, metadata=(("triton_grpc_error", "true"),)))
        assert [r.infer_response.id for r in ended] == ["first"]
    assert_alive(server)


# -- 8. internal names; no poisoning -----------------------------------------------------------


def test_register_colliding_names(server: MockServer) -> None:
    key = f"/hostile_{uuid.uuid4().hex[:8]}"
    region = posix.create(key, 128)
    try:
        for name in ("", "..", "%2F", "%00", "status", "region", "a" * 4096):
            _http(
                server,
                "POST",
                f"/v2/systemsharedmemory/region/{name}/register",
                json.dumps({"key": key, "offset": 0, "byte_size": 64}).encode(),
            )
        # Keys naming things that are not shm objects (paths outside /dev/shm) are refused.
        for bad_key in ("/../../etc/passwd", "../etc/passwd", "/dev/zero", "", "/" + "x" * 5000):
            status, _, reply = _http(
                server,
                "POST",
                "/v2/systemsharedmemory/region/badkey/register",
                json.dumps({"key": bad_key, "offset": 0, "byte_size": 8}).encode(),
            )
            assert status in (400, 500), (bad_key, reply)
        _http(server, "POST", "/v2/systemsharedmemory/unregister")
        # Same name twice, and the same name over gRPC: refused, the first stays intact.
        _register(server, "dup", key, 64)
        status, _, reply = _http(
            server,
            "POST",
            "/v2/systemsharedmemory/region/dup/register",
            json.dumps({"key": key, "offset": 64, "byte_size": 64}).encode(),
        )
        assert status == 400
        channel, stub = _grpc_stub(server)
        with channel, pytest.raises(grpc.RpcError):
            stub.SystemSharedMemoryRegister(
                pb.SystemSharedMemoryRegisterRequest(name="dup", key=key, byte_size=8)
            )
        status, _, reply = _http(server, "GET", "/v2/systemsharedmemory/region/dup/status")
        assert json.loads(reply)[0]["byte_size"] == 64
        assert_alive(server)
    finally:
        _http(server, "POST", "/v2/systemsharedmemory/unregister")
        region.close()
        posix.unlink(key)


def test_request_cannot_poison_model(server: MockServer) -> None:
    """Requests that fail at every stage leave nothing behind for later requests."""
    bad = [
        {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]},
        {
            "inputs": [
                {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": [1.0] * 16},
                {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
            ]
        },
        {
            "inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [9, 16], "data": [1] * 144},
                {"name": "INPUT1", "datatype": "INT32", "shape": [9, 16], "data": [1] * 144},
            ]
        },
        {"inputs": [], "parameters": {"sequence_id": 5, "sequence_start": True}},
        {"inputs": [], "outputs": [{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]},
        {"inputs": [], "parameters": {"priority": -1, "timeout": -5}},
    ]
    for body in bad:
        status, _, _reply = _http(
            server, "POST", "/v2/models/simple/infer", json.dumps(body).encode()
        )
        assert status >= 400
    status, _, reply = _http(server, "GET", "/v2/models/simple/config")
    config = json.loads(reply)
    assert [i["dims"] for i in config["input"]] == [[16], [16]]
    assert_alive(server)


# -- 9. seeded fuzz ----------------------------------------------------------------------------

_DATATYPES = ["INT32", "FP32", "BYTES", "BOOL", "UINT8", "INT64", "FP16", "BF16", "X", ""]


def _mutate_value(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            -1,
            0,
            2**63,
            2**64 + 1,
            -(2**63) - 1,
            1.5,
            "x",
            "",
            [],
            {},
            [1, [2]],
            True,
            "\u0000",
            rng.randint(-(2**70), 2**70),
        ]
    )


def _params(tensor: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(tensor.get("parameters"), dict):
        tensor["parameters"] = {}
    params: dict[str, Any] = tensor["parameters"]
    return params


def _fuzz_http_request(rng: random.Random) -> tuple[bytes, dict[str, str]]:
    model_inputs = [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
    ]
    doc: dict[str, Any] = {"inputs": model_inputs}
    binary = rng.random() < 0.5
    blobs: list[bytes] = []
    if binary:
        for tensor in model_inputs:
            del tensor["data"]
            tensor["parameters"] = {"binary_data_size": 64}
            blobs.append(np.arange(16, dtype=np.int32).tobytes())
    for _ in range(rng.randint(1, 4)):
        tensor = rng.choice(model_inputs)
        what = rng.randrange(9)
        if what == 0:
            tensor["datatype"] = rng.choice(_DATATYPES)
        elif what == 1:
            tensor["shape"] = [
                rng.choice([-1, 0, 1, 16, 2**31, 2**62, 2**64]) for _ in range(rng.randint(0, 4))
            ]
        elif what == 2:
            _params(tensor)["binary_data_size"] = _mutate_value(rng)
        elif what == 3:
            tensor["data"] = _mutate_value(rng)
        elif what == 4:
            tensor[rng.choice(["name", "datatype", "shape", "parameters"])] = _mutate_value(rng)
        elif what == 5:
            doc[rng.choice(["inputs", "outputs", "parameters", "id"])] = _mutate_value(rng)
        elif what == 6:
            doc["outputs"] = [
                {"name": "OUTPUT0", "parameters": {"binary_data": _mutate_value(rng)}}
            ]
        elif what == 7:
            _params(tensor)[
                rng.choice(["shared_memory_region", "shared_memory_byte_size", "classification"])
            ] = _mutate_value(rng)
        else:
            doc["parameters"] = {
                rng.choice(
                    ["sequence_id", "priority", "timeout", "binary_data_output"]
                ): _mutate_value(rng)
            }
    header = json.dumps(doc).encode()
    if rng.random() < 0.2:  # byte-level damage
        damaged = bytearray(header)
        for _ in range(rng.randint(1, 5)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        header = bytes(damaged)
    headers: dict[str, str] = {}
    body = header
    if binary:
        body = header + b"".join(blobs)
        length: Any = len(header)
        if rng.random() < 0.2:
            length = rng.choice([0, -1, len(body) + 1, len(header) - 1, "x", 2**70])
        headers["Inference-Header-Content-Length"] = str(length)
        if rng.random() < 0.2:
            body = body[: rng.randrange(len(body))]
    if rng.random() < 0.1:
        body = gzip.compress(body)
        headers["Content-Encoding"] = rng.choice(["gzip", "deflate", "br"])
    return body, headers


ALLOWED_HTTP = {200, 400, 404, 500, 501}


def test_fuzz_http_infer(server: MockServer) -> None:
    rng = random.Random(20240517)
    deadline = time.monotonic() + 120
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        for i in range(300):
            assert time.monotonic() < deadline
            body, headers = _fuzz_http_request(rng)
            try:
                conn.request("POST", "/v2/models/simple/infer", body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
                continue
            assert resp.status in ALLOWED_HTTP, (i, resp.status, data, body[:300], headers)
            if resp.status == 200:
                assert "outputs" in json.loads(
                    data[: int(resp.getheader("Inference-Header-Content-Length") or len(data))]
                )
            else:
                assert isinstance(_error(data), str), (i, data)
            if resp.status == 500:
                # Triton's JSON-error rule: 500 only for JSON parsing / typing errors.
                assert "unexpected server error" not in _error(data), (i, data, body[:300])
    finally:
        conn.close()
    assert_alive(server)


def _fuzz_grpc_request(rng: random.Random) -> bytes:
    request = _simple_grpc_request()
    for _ in range(rng.randint(1, 4)):
        what = rng.randrange(8)
        tensor = request.inputs[rng.randrange(len(request.inputs))] if request.inputs else None
        if what == 0 and tensor is not None:
            tensor.datatype = rng.choice(_DATATYPES)
        elif what == 1 and tensor is not None:
            del tensor.shape[:]
            tensor.shape.extend(
                rng.choice([-1, 0, 1, 16, 2**31, 2**62, 2**63 - 1, -(2**63)])
                for _ in range(rng.randint(0, 4))
            )
        elif what == 2 and request.raw_input_contents:
            k = rng.randrange(len(request.raw_input_contents))
            request.raw_input_contents[k] = rng.randbytes(rng.choice([0, 1, 63, 64, 65, 1000]))
        elif what == 3:
            del request.raw_input_contents[rng.randrange(len(request.raw_input_contents) + 1) :]
        elif what == 4 and tensor is not None:
            tensor.contents.int_contents.extend(
                rng.randint(-(2**31), 2**31 - 1) for _ in range(rng.randint(0, 20))
            )
            tensor.contents.bytes_contents.extend([b"x"] * rng.randint(0, 2))
        elif what == 5 and tensor is not None:
            key = rng.choice(
                [
                    "shared_memory_region",
                    "shared_memory_byte_size",
                    "shared_memory_offset",
                    "binary_data_size",
                ]
            )
            choice = rng.randrange(3)
            if choice == 0:
                tensor.parameters[key].string_param = "nope"
            elif choice == 1:
                tensor.parameters[key].int64_param = rng.choice([-1, 0, 2**62])
            else:
                tensor.parameters[key].bool_param = True
        elif what == 6:
            request.parameters[
                rng.choice(["sequence_id", "priority", "timeout", "sequence_start"])
            ].int64_param = rng.choice([-1, 2**62, 0])
        else:
            out = request.outputs.add(name=rng.choice(["OUTPUT0", "OUTPUT9", ""]))
            out.parameters["classification"].int64_param = rng.choice([-1, 0, 3, 2**40])
    data = request.SerializeToString()
    if rng.random() < 0.25:  # byte-level damage
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        data = bytes(damaged)
    return data


ALLOWED_GRPC = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.UNKNOWN,
}


def test_fuzz_grpc_infer(server: MockServer) -> None:
    rng = random.Random(4242)
    deadline = time.monotonic() + 120
    with grpc.insecure_channel(server.grpc_url) as channel:
        call = channel.unary_unary(
            "/inference.GRPCInferenceService/ModelInfer",
            request_serializer=lambda b: b,
            response_deserializer=pb.ModelInferResponse.FromString,
        )
        for i in range(300):
            assert time.monotonic() < deadline
            data = _fuzz_grpc_request(rng)
            try:
                response = call(data, timeout=30)
            except grpc.RpcError as exc:
                assert exc.code() in ALLOWED_GRPC, (i, exc.code(), exc.details())
                assert exc.code() != grpc.StatusCode.UNKNOWN or "Exception" not in (
                    exc.details() or ""
                ), (i, exc.details())
                assert exc.details(), i
            else:
                assert response.model_name == "simple"
    assert_alive(server)


# -- 10. concurrency ---------------------------------------------------------------------------


def test_concurrent_http_connections(server: MockServer) -> None:
    body = _simple_body()

    def one(_: int) -> int:
        status, _, reply = _http(server, "POST", "/v2/models/simple/infer", body, timeout=60)
        assert status == 200, reply
        assert json.loads(reply)["outputs"][0]["data"] == [i + 1 for i in range(16)]
        return status

    with ThreadPoolExecutor(200) as pool:
        assert list(pool.map(one, range(200))) == [200] * 200


def test_concurrent_grpc_streams(server: MockServer) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)

        def stream(k: int) -> list[str]:
            requests = [_simple_grpc_request(f"{k}-{j}") for j in range(5)]
            results = list(stub.ModelStreamInfer(iter(requests), timeout=60))
            assert [r.error_message for r in results] == [""] * 5
            for r in results:
                out = np.frombuffer(r.infer_response.raw_output_contents[0], dtype=np.int32)
                assert out.tolist() == [2 * i for i in range(16)]
            return sorted(r.infer_response.id for r in results)

        with ThreadPoolExecutor(50) as pool:
            got = list(pool.map(stream, range(50)))
        assert got == [sorted(f"{k}-{j}" for j in range(5)) for k in range(50)]


def test_slow_model_does_not_stall_simple(server: MockServer) -> None:
    slow_body = json.dumps(
        {
            "inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [4], "data": [1, 2, 3, 4]},
                {"name": "DELAY_MS", "datatype": "UINT32", "shape": [1], "data": [3000]},
            ]
        }
    ).encode()
    with ThreadPoolExecutor(4) as pool:
        slow = [
            pool.submit(_http, server, "POST", "/v2/models/slow/infer", slow_body) for _ in range(2)
        ]
        time.sleep(0.2)
        started = time.monotonic()
        for _ in range(5):
            assert_alive(server)
        assert time.monotonic() - started < 2.5
        assert all(f.result(60)[0] == 200 for f in slow)


def test_http_and_grpc_same_model(server: MockServer) -> None:
    with ThreadPoolExecutor(40) as pool:
        futures = [
            pool.submit(assert_http_alive if k % 2 else assert_grpc_alive, server)
            for k in range(200)
        ]
        for future in futures:
            future.result(60)
