"""The HTTP frontend's fast path (mock_server/frontends/http_fast.py) against aiohttp's path.

Plain inference requests are answered by the fast path; every other request hands its
connection to aiohttp.  Both must answer byte for byte alike (but for the Date header), keep
pipelined requests in order, and hand over without losing a byte."""

from __future__ import annotations

import gzip
import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np
import pytest

from mock_server.core.server import CoreServer
from mock_server.frontends.http import HttpFrontend
from mock_server.frontends.http_fast import FAST_BODY_BYTES, FastInferServer
from tests import test_http_frontend
from tests.test_http_frontend import LoopThread

# The event loop and core fixtures of the frontend's own tests (module-scoped: one each here).
loop = test_http_frontend.loop
core = test_http_frontend.core

INPUT0 = np.arange(16, dtype=np.int32)
INPUT1 = np.ones(16, dtype=np.int32)


def _json_simple(a: np.ndarray, b: np.ndarray, binary_out: bool = True) -> bytes:
    return json.dumps(
        {
            "inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": a.tolist()},
                {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": b.tolist()},
            ],
            "outputs": [
                {"name": "OUTPUT0", "parameters": {"binary_data": binary_out}},
                {"name": "OUTPUT1"},
            ],
        }
    ).encode()


def _binary_simple(a: np.ndarray, b: np.ndarray) -> tuple[bytes, int]:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": name,
                    "datatype": "INT32",
                    "shape": [1, 16],
                    "parameters": {"binary_data_size": 64},
                }
                for name in ("INPUT0", "INPUT1")
            ]
        }
    ).encode()
    return header + a.tobytes() + b.tobytes(), len(header)


def post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def infer_json(a: np.ndarray = INPUT0, b: np.ndarray = INPUT1, *headers: str) -> bytes:
    return post("/v2/models/simple/infer", _json_simple(a, b), *headers)


def infer_binary(a: np.ndarray = INPUT0, b: np.ndarray = INPUT1) -> bytes:
    body, length = _binary_simple(a, b)
    return post("/v2/models/simple/infer", body, f"Inference-Header-Content-Length: {length}")


GET_LIVE = b"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def read_response(stream: BinaryIO) -> tuple[bytes, bytes]:
    """One response from ``stream``: its head (status and header lines) and its body."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = stream.readline()
        assert line, f"the connection closed after {head!r}"
        head += line
    match = re.search(rb"\r\nContent-Length: (\d+)\r\n", head)
    assert match is not None, head
    return head, stream.read(int(match[1]))


def outputs_of(body: bytes, head: bytes) -> dict[str, np.ndarray]:
    """OUTPUT0 and OUTPUT1 of a ``simple`` answer (binary or JSON)."""
    match = re.search(rb"Inference-Header-Content-Length: (\d+)", head)
    split = int(match[1]) if match else len(body)
    answer = json.loads(body[:split])
    result = {}
    offset = split
    for output in answer["outputs"]:
        size = output.get("parameters", {}).get("binary_data_size")
        if size is None:
            result[output["name"]] = np.array(output["data"], dtype=np.int32)
        else:
            result[output["name"]] = np.frombuffer(body[offset : offset + size], np.int32)
            offset += size
    return result


def masked(head: bytes) -> bytes:
    return re.sub(rb"Date: [^\r]*", b"Date: -", head)


@pytest.fixture(scope="module")
def frontend(loop: LoopThread, core: CoreServer) -> Iterator[HttpFrontend]:
    frontend = HttpFrontend(core, port=0)
    loop.run(frontend.start())
    yield frontend
    loop.run(frontend.stop())


def fast_server(frontend: HttpFrontend) -> FastInferServer:
    server = frontend._server
    assert isinstance(server, FastInferServer)
    return server


class Connection:
    """A kept-alive client connection read one response at a time."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.stream = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self) -> tuple[bytes, bytes]:
        return read_response(self.stream)

    def close(self) -> None:
        self.stream.close()
        self.sock.close()


@pytest.fixture
def connect(frontend: HttpFrontend) -> Iterator[Any]:
    opened: list[Connection] = []

    def make() -> Connection:
        assert frontend.port is not None
        opened.append(Connection(frontend.port))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


def test_plain_requests_are_answered_on_the_fast_path(frontend: HttpFrontend, connect: Any) -> None:
    server = fast_server(frontend)
    fast, handed = server.fast_requests, server.handed_over
    conn = connect()
    for shift in range(3):
        a = INPUT0 + shift
        conn.send(infer_binary(a) if shift % 2 else infer_json(a))
        head, body = conn.read()
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
        out = outputs_of(body, head)
        np.testing.assert_array_equal(out["OUTPUT0"], a + INPUT1)
        np.testing.assert_array_equal(out["OUTPUT1"], a - INPUT1)
    assert server.fast_requests == fast + 3
    assert server.handed_over == handed


ANSWERS = {
    "json": infer_json(),
    "json-out": post("/v2/models/simple/infer", _json_simple(INPUT0, INPUT1, binary_out=False)),
    "binary": infer_binary(),
    "version": post("/v2/models/simple/versions/1/infer", _json_simple(INPUT0, INPUT1)),
    "no-version": post("/v2/models/simple/versions/7/infer", _json_simple(INPUT0, INPUT1)),
    "unknown-model": post("/v2/models/nope/infer", b"{}"),
    "bad-json": post("/v2/models/simple/infer", b"{bad"),
    "empty-body": post("/v2/models/simple/infer", b""),
    "no-inputs": post("/v2/models/simple/infer", b"{}"),
    "bad-header-length": post(
        "/v2/models/simple/infer", b"{}", "Inference-Header-Content-Length: 99"
    ),
    "decoupled": post("/v2/models/square_int32/infer", b"{}"),
    "gzip-answer": infer_json(INPUT0, INPUT1, "Accept-Encoding: gzip"),
    "keep-alive": infer_json(INPUT0, INPUT1, "Connection: Keep-Alive"),
    "raw-binary": post(
        "/v2/models/identity_int32/infer",
        np.arange(4, dtype=np.int32).tobytes(),
        "Inference-Header-Content-Length: 0",
    ),
}


@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_fast_path_answers_as_aiohttp_does(frontend: HttpFrontend, connect: Any, case: str) -> None:
    server = fast_server(frontend)
    request = ANSWERS[case]
    handed = server.handed_over
    fast = connect()
    fast.send(request)
    fast_head, fast_body = fast.read()
    assert server.handed_over == handed  # answered on the fast path
    slow = connect()
    slow.send(GET_LIVE)  # not an inference request: the connection goes to aiohttp
    assert slow.read()[0].startswith(b"HTTP/1.1 200 OK")
    assert server.handed_over == handed + 1
    slow.send(request)
    slow_head, slow_body = slow.read()
    assert masked(fast_head) == masked(slow_head)
    assert fast_body == slow_body
    if case == "gzip-answer":
        assert b"Content-Encoding: gzip" in fast_head
        assert gzip.decompress(fast_body).startswith(b'{"model_name":"simple"')


def test_pipelined_requests_keep_their_order(frontend: HttpFrontend, connect: Any) -> None:
    server = fast_server(frontend)
    handed = server.handed_over
    conn = connect()
    shifts = (0, 5, 9)
    # Two on the fast path, then one for aiohttp (which takes the rest of the connection).
    conn.send(infer_binary(INPUT0 + shifts[0]) + infer_json(INPUT0 + shifts[1]) + GET_LIVE)
    conn.send(infer_json(INPUT0 + shifts[2]))
    for index, shift in enumerate(shifts):
        head, body = conn.read()
        assert head.startswith(b"HTTP/1.1 200 OK"), head
        np.testing.assert_array_equal(outputs_of(body, head)["OUTPUT0"], INPUT0 + shift + 1)
        if index == 1:
            live_head, live_body = conn.read()
            assert live_head.startswith(b"HTTP/1.1 200 OK") and live_body == b""
    assert server.handed_over == handed + 1


def test_a_request_split_across_writes(frontend: HttpFrontend, connect: Any) -> None:
    server = fast_server(frontend)
    fast, handed = server.fast_requests, server.handed_over
    conn = connect()
    request = infer_binary(INPUT0 * 3)
    for start in range(0, len(request), 37):
        conn.send(request[start : start + 37])
        time.sleep(0.002)
    head, body = conn.read()
    np.testing.assert_array_equal(outputs_of(body, head)["OUTPUT1"], INPUT0 * 3 - 1)
    assert (server.fast_requests, server.handed_over) == (fast + 1, handed)


def _chunked(request: bytes) -> bytes:
    head, body = request.split(b"\r\n\r\n", 1)
    head = re.sub(rb"Content-Length: \d+", b"Transfer-Encoding: chunked", head)
    return head + b"\r\n\r\n" + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"


def _gzipped(request: bytes) -> bytes:
    head, body = request.split(b"\r\n\r\n", 1)
    packed = gzip.compress(body)
    head = re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % len(packed), head)
    return head + b"\r\nContent-Encoding: gzip\r\n\r\n" + packed


UNTAKEN = {
    "chunked": _chunked(infer_json()),
    "gzip-body": _gzipped(infer_json()),
    "query": infer_json().replace(b"/infer HTTP", b"/infer?x=1 HTTP", 1),
    "connection-close": infer_json(INPUT0, INPUT1, "Connection: close"),
    "http-1.0": infer_json().replace(b"HTTP/1.1", b"HTTP/1.0", 1),
}


@pytest.mark.parametrize("case", sorted(UNTAKEN))
def test_unusual_requests_go_to_aiohttp(frontend: HttpFrontend, connect: Any, case: str) -> None:
    server = fast_server(frontend)
    fast, handed = server.fast_requests, server.handed_over
    conn = connect()
    conn.send(UNTAKEN[case])
    head, body = conn.read()
    assert head.split(b"\r\n")[0].endswith(b"200 OK"), head + body
    np.testing.assert_array_equal(outputs_of(body, head)["OUTPUT0"], INPUT0 + 1)
    assert (server.fast_requests, server.handed_over) == (fast, handed + 1)


def test_a_large_body_goes_to_aiohttp(frontend: HttpFrontend, connect: Any) -> None:
    server = fast_server(frontend)
    handed = server.handed_over
    data = np.arange(FAST_BODY_BYTES // 4 + 16, dtype=np.int32)
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "INPUT0",
                    "datatype": "INT32",
                    "shape": [1, int(data.size)],
                    "parameters": {"binary_data_size": int(data.nbytes)},
                }
            ],
            "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
        }
    ).encode()
    conn = connect()
    conn.send(
        post(
            "/v2/models/identity_int32/infer",
            header + data.tobytes(),
            f"Inference-Header-Content-Length: {len(header)}",
        )
    )
    head, body = conn.read()
    assert head.startswith(b"HTTP/1.1 200 OK"), head
    np.testing.assert_array_equal(outputs_of(body, head)["OUTPUT0"], data)
    assert server.handed_over == handed + 1


def _slow(delay_ms: int) -> bytes:
    body = json.dumps(
        {
            "inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [2], "data": [1, 2]},
                {"name": "DELAY_MS", "datatype": "UINT32", "shape": [1], "data": [delay_ms]},
            ]
        }
    ).encode()
    return post("/v2/models/slow/infer", body)


def test_a_client_that_goes_away_cancels_its_request(frontend: HttpFrontend, connect: Any) -> None:
    gone = connect()
    gone.send(_slow(60_000))
    time.sleep(0.5)  # running in the model by now
    gone.close()
    # slow has one instance: the next request runs only once the first has ended, which it
    # does at once when cancelled (not after its 60 s).
    conn = connect()
    conn.sock.settimeout(30)
    conn.send(_slow(1))
    head, body = conn.read()
    assert head.startswith(b"HTTP/1.1 200 OK"), head + body
    assert json.loads(body)["outputs"][0]["data"] == [1, 2]


def test_stop_closes_kept_alive_fast_connections(loop: LoopThread, core: CoreServer) -> None:
    frontend = HttpFrontend(core, port=0, shutdown_timeout=2.0)
    port = loop.run(frontend.start())
    conn = Connection(port)
    try:
        conn.send(infer_binary())
        assert conn.read()[0].startswith(b"HTTP/1.1 200 OK")
        assert fast_server(frontend).fast_requests == 1
        loop.run(frontend.stop())
        assert conn.stream.read(1) == b""  # closed by the server
    finally:
        conn.close()
