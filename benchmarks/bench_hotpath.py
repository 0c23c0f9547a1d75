"""The client's hot path: client CPU per small call, ours vs NVIDIA's 2.73 vs the floor.

Usage
-----
``python benchmarks/bench_hotpath.py [--quick] [--rounds R] [--n N] [--servers canned,mock,triton]
[--cases ...] [--profile CASE] [--peer-python PATH]``

What is measured
    Client CPU per call (``time.process_time()`` of the worker process: every thread of the
    client, grpcio's and gevent's included), for the calls users make most, with the
    ``simple`` model (2 x INT32 [1, 16] in, both outputs requested and read with
    ``as_numpy``).  Wall time is not used: on a small shared machine it measures the
    neighbours as much as the client.

Servers
    ``canned``: a server (this file, ``--canned-server``) that answers every request with a
    pre-built response without parsing it (HTTP: reads the headers and ``Content-Length``
    bytes, answers the binary or the JSON response depending on whether the request has
    ``Inference-Header-Content-Length``; gRPC: ``ModelInfer`` and ``ModelStreamInfer`` with
    bytes in and bytes out), so that only the client's own cost is counted.  ``mock``: the
    bundled ``mock_server``; ``triton``: the real Triton 2.51 (when installed, see
    ``tests/peers.py``), so that the server's share shows.

Sides
    ``ours`` (this repository's ``tritonclient``) and ``NVIDIA`` (``tritonclient`` 2.73 in the
    peers' cache) each run in a persistent worker process of their own (``--worker``) that
    takes one measurement at a time; the driver alternates the sides round by round (and
    which goes first), and the table gives the median of the rounds.  The floors run in a
    third worker: ``floor http`` is a blocking socket sending the pre-built request and
    reading the answer by its ``Content-Length``; ``floor grpc`` is grpcio's unary call with
    pre-serialized bytes in and out; the stream cases' floors are grpcio's stream with the
    same window of 8 and pre-serialized bytes (sync: requests from a ``SimpleQueue``, the
    answers read by a thread; aio: written to the call and read from it).  Every client
    result is checked (OUTPUT0 = a + b, OUTPUT1 = a - b) once per measurement, so a broken
    fast path cannot win.

Cases
    ``http``, ``http-json``, ``grpc``: a sync ``infer``, one after another (HTTP binary
    tensors, HTTP JSON tensors, gRPC).  ``http-aio``, ``grpc-aio``: the same with the asyncio
    clients (one awaited at a time).  ``http-8``, ``grpc-8``: ``async_infer`` with 8 in flight
    (HTTP: ``concurrency=8``, ``get_result`` in order; gRPC: callbacks and a semaphore).
    ``grpc-stream``, ``grpc-stream-aio``: ``stream_infer`` per message, 8 messages in flight
    on one stream (sync: ``async_stream_infer`` and the stream's callback; aio:
    ``stream_infer`` over an async generator).  ``grpc-over-stream``,
    ``grpc-aio-over-stream``: ``infer`` (sync; asyncio, one awaited at a time) of a client made
    with ``infer_over_stream=True`` (one persistent ``ModelStreamInfer`` stream carries the
    calls); NVIDIA's client has no such option, so its side is its usual unary ``infer``, and
    the sync case's floor is grpcio's unary call.  The canned server answers stream requests
    as Triton does, with the request's id and ``triton_final_response``.  Every result has
    both outputs read with ``as_numpy`` (a client may decode lazily).

The ratio column is NVIDIA / ours (above 1: ours costs less); ``floor`` gives our distance to
the floor on the same server (ours / floor).  ``--profile CASE`` prints a cProfile listing of
our client for one case against the canned server instead.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench_clients import MockServer, peer_python, triton_server  # noqa: E402

CASES = (
    "http",
    "http-json",
    "grpc",
    "http-aio",
    "grpc-aio",
    "http-8",
    "grpc-8",
    "grpc-stream",
    "grpc-stream-aio",
    "grpc-over-stream",
    "grpc-aio-over-stream",
)
#: The floor each case is compared with (on the same server).
FLOOR_OF = {
    "http": "floor-http",
    "http-json": "floor-http-json",
    "grpc": "floor-grpc",
    "grpc-over-stream": "floor-grpc",
    "grpc-stream": "floor-grpc-stream",
    "grpc-stream-aio": "floor-grpc-stream-aio",
}
#: The goals of issue 33: NVIDIA / ours at least this (ours <= 1/goal x NVIDIA's).
GOALS = {
    "http": 1 / 0.4,
    "grpc": 1 / 0.75,
    "http-aio": 1 / 0.5,
    "grpc-aio": 1 / 0.8,
    "grpc-stream": 1 / 0.7,
    "grpc-stream-aio": 1 / 0.7,
    "grpc-over-stream": 1 / 0.75,
    "grpc-aio-over-stream": 1 / 0.8,
}

# ---------------------------------------------------------------------------------------------
# The canned-response server (a process of its own, our interpreter).
# ---------------------------------------------------------------------------------------------

INFER_PATH = "/v2/models/simple/infer"
GRPC_INFER = "/inference.GRPCInferenceService/ModelInfer"
GRPC_STREAM = "/inference.GRPCInferenceService/ModelStreamInfer"


def _simple_values() -> tuple[Any, Any, Any, Any]:
    import numpy as np

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    return a, b, a + b, a - b


def canned_http_responses() -> tuple[bytes, bytes]:
    """The whole HTTP responses (status line to body) to ``simple``: binary outputs, JSON."""
    _, _, total, diff = _simple_values()
    outputs = [
        {"name": name, "datatype": "INT32", "shape": [1, 16]} for name in ("OUTPUT0", "OUTPUT1")
    ]
    head = {"model_name": "simple", "model_version": "1", "outputs": []}
    binary_outputs = [dict(o, parameters={"binary_data_size": 64}) for o in outputs]
    header = json.dumps(dict(head, outputs=binary_outputs), separators=(",", ":")).encode()
    body = header + total.tobytes() + diff.tobytes()
    binary = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
        b"Inference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
        % (len(header), len(body))
    ) + body
    json_outputs = [
        dict(o, data=values.ravel().tolist())
        for o, values in zip(outputs, (total, diff), strict=True)
    ]
    text = json.dumps(dict(head, outputs=json_outputs), separators=(",", ":")).encode()
    as_json = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(text)
    ) + text
    return binary, as_json


def canned_grpc_responses() -> tuple[bytes, bytes]:
    """``ModelInferResponse`` and ``ModelStreamInferResponse`` to ``simple``, serialized."""
    from tritonclient._proto import service_pb2

    _, _, total, diff = _simple_values()
    response = service_pb2.ModelInferResponse(model_name="simple", model_version="1")
    for name, values in (("OUTPUT0", total), ("OUTPUT1", diff)):
        output = response.outputs.add()
        output.name = name
        output.datatype = "INT32"
        output.shape.extend([1, 16])
        response.raw_output_contents.append(values.tobytes())
    stream = service_pb2.ModelStreamInferResponse(infer_response=response)
    return response.SerializeToString(), stream.SerializeToString()


def _serve_http_connection(conn: socket.socket, binary: bytes, as_json: bytes) -> None:
    """Answer every request on ``conn`` with a canned response, reading only its framing."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    pending = b""
    with conn:
        while True:
            end = pending.find(b"\r\n\r\n")
            while end < 0:
                data = conn.recv(65536)
                if not data:
                    return
                pending += data
                end = pending.find(b"\r\n\r\n")
            head = pending[:end].lower()
            at = head.find(b"content-length:")
            length = 0
            if at >= 0:
                stop = head.find(b"\r\n", at)
                length = int(head[at + 15 : stop if stop >= 0 else len(head)])
            need = end + 4 + length
            while len(pending) < need:
                data = conn.recv(65536)
                if not data:
                    return
                pending += data
            pending = pending[need:]
            conn.sendall(binary if b"inference-header-content-length" in head else as_json)


def canned_server(port_file: str) -> None:
    """Run the canned HTTP and gRPC servers until SIGTERM; write their ports to ``port_file``."""
    from concurrent import futures

    import grpc

    from tritonclient._proto import service_pb2

    binary, as_json = canned_http_responses()
    unary, streamed = canned_grpc_responses()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.listen(64)

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(
                target=_serve_http_connection, args=(conn, binary, as_json), daemon=True
            ).start()

    threading.Thread(target=accept, daemon=True).start()

    def infer(request: bytes, context: Any) -> bytes:
        return unary

    def stream(requests: Any, context: Any) -> Any:
        # As Triton answers on a stream: the request's id and triton_final_response (a
        # client matches answers to requests by id: infer_over_stream).
        for request in requests:
            answer = service_pb2.ModelStreamInferResponse.FromString(streamed)
            answer.infer_response.id = service_pb2.ModelInferRequest.FromString(request).id
            answer.infer_response.parameters["triton_final_response"].bool_param = True
            yield answer.SerializeToString()

    handlers = {
        "ModelInfer": grpc.unary_unary_rpc_method_handler(infer),
        "ModelStreamInfer": grpc.stream_stream_rpc_method_handler(stream),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("inference.GRPCInferenceService", handlers),)
    )
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    Path(port_file).write_text(json.dumps({"http": listener.getsockname()[1], "grpc": grpc_port}))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop(0)


# ---------------------------------------------------------------------------------------------
# Workers: one per side, persistent, must not import anything from REPO (cwd is /).
# ---------------------------------------------------------------------------------------------


def _inputs(mod: Any, json_tensors: bool = False) -> tuple[list[Any], list[Any]]:
    a, b, _, _ = _simple_values()
    inputs = [mod.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
    if json_tensors:
        inputs[0].set_data_from_numpy(a, binary_data=False)
        inputs[1].set_data_from_numpy(b, binary_data=False)
        outputs = [mod.InferRequestedOutput(n, binary_data=False) for n in ("OUTPUT0", "OUTPUT1")]
    else:
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        if "http" in mod.__name__:
            outputs = [
                mod.InferRequestedOutput(n, binary_data=True) for n in ("OUTPUT0", "OUTPUT1")
            ]
        else:
            outputs = [mod.InferRequestedOutput(n) for n in ("OUTPUT0", "OUTPUT1")]
    return inputs, outputs


def _check(result: Any) -> None:
    import numpy as np

    _, _, total, diff = _simple_values()
    s, d = result.as_numpy("OUTPUT0"), result.as_numpy("OUTPUT1")
    if not (np.array_equal(s, total) and np.array_equal(d, diff)):
        raise AssertionError(f"simple: wrong outputs {s!r} {d!r}")


class _Window:
    """Calls answered through a callback, kept 8 in flight."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.free = threading.Semaphore(size)
        self.errors: list[Any] = []
        self.last: Any = None

    def callback(self, result: Any, error: Any) -> None:
        if error is not None:
            self.errors.append(error)
        else:  # read as users do (a client may decode lazily, in as_numpy)
            result.as_numpy("OUTPUT0")
            result.as_numpy("OUTPUT1")
        self.last = result
        self.free.release()

    def _run(self, send: Any, count: int) -> tuple[float, float]:
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(count):
            self.free.acquire()
            send()
        for _ in range(self.size):  # drain
            self.free.acquire()
        for _ in range(self.size):
            self.free.release()
        return time.process_time() - c0, time.perf_counter() - w0

    def measure(self, send: Any, n: int) -> dict[str, Any]:
        """Client CPU per call and calls per second of ``n`` calls of ``send()``."""
        self._run(send, max(16, n // 10))
        cpu, wall = self._run(send, n)
        if self.errors:
            raise AssertionError(f"errors: {self.errors[:3]}")
        _check(self.last)
        return {"cpu_us": cpu / n * 1e6, "rps": n / wall}


def _over_stream(mod: Any, url: str) -> Any:
    """A gRPC client of ``mod`` with ``infer_over_stream=True``; NVIDIA's has no such option,
    so its side of the ``*-over-stream`` cases is its usual (unary) client."""
    import inspect

    if "infer_over_stream" in inspect.signature(mod.InferenceServerClient).parameters:
        return mod.InferenceServerClient(url, infer_over_stream=True)
    return mod.InferenceServerClient(url)


class Worker:
    """The clients of one side, made once, measured many times."""

    def __init__(self) -> None:
        self.clients: dict[tuple[str, str], Any] = {}
        self.loop: Any = None

    def close(self) -> None:
        """Close every client (the asyncio ones on their loop)."""
        import inspect

        for client in self.clients.values():
            closing = client.close()
            if inspect.isawaitable(closing):
                self.loop.run_until_complete(closing)
        self.clients.clear()

    def client(self, kind: str, url: str) -> Any:
        key = (kind, url)
        if key not in self.clients:
            import importlib

            mod = importlib.import_module(f"tritonclient.{kind.partition('-')[0]}")
            if kind == "http-8":
                self.clients[key] = mod.InferenceServerClient(url, concurrency=8)
            elif kind == "grpc-over-stream":
                self.clients[key] = _over_stream(mod, url)
            else:
                self.clients[key] = mod.InferenceServerClient(url)
        return self.clients[key]

    def run(self, case: str, url: str, n: int) -> dict[str, Any]:
        method = getattr(self, "case_" + case.replace("-", "_"))
        return method(url, n)  # type: ignore[no-any-return]

    def _timed_sync(self, call: Any, n: int) -> float:
        r = None
        for _ in range(max(10, n // 10)):  # warm-up: connection, caches, lazy imports
            r = call()
        _check(r)
        c0 = time.process_time()
        for _ in range(n):
            r = call()
            r.as_numpy("OUTPUT0")
            r.as_numpy("OUTPUT1")
        cpu = time.process_time() - c0
        _check(r)
        return cpu / n * 1e6

    def case_http(self, url: str, n: int) -> dict[str, Any]:
        import tritonclient.http as mod

        client = self.client("http", url)
        inputs, outputs = _inputs(mod)
        return {
            "cpu_us": self._timed_sync(lambda: client.infer("simple", inputs, outputs=outputs), n)
        }

    def case_http_json(self, url: str, n: int) -> dict[str, Any]:
        import tritonclient.http as mod

        client = self.client("http", url)
        inputs, outputs = _inputs(mod, json_tensors=True)
        return {
            "cpu_us": self._timed_sync(lambda: client.infer("simple", inputs, outputs=outputs), n)
        }

    def case_grpc(self, url: str, n: int) -> dict[str, Any]:
        import tritonclient.grpc as mod

        client = self.client("grpc", url)
        inputs, outputs = _inputs(mod)
        return {
            "cpu_us": self._timed_sync(lambda: client.infer("simple", inputs, outputs=outputs), n)
        }

    def _aio(self, kind: str, url: str, n: int, over_stream: bool = False) -> dict[str, Any]:
        import asyncio
        import importlib

        mod = importlib.import_module(f"tritonclient.{kind}")
        aio = importlib.import_module(f"tritonclient.{kind}.aio")
        inputs, outputs = _inputs(mod)
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        key = (kind + "-aio" + ("-over-stream" if over_stream else ""), url)

        async def main() -> float:
            if key not in self.clients:
                if over_stream:
                    self.clients[key] = _over_stream(aio, url)
                else:
                    self.clients[key] = aio.InferenceServerClient(url)
            client = self.clients[key]
            r = None
            for _ in range(max(10, n // 10)):
                r = await client.infer("simple", inputs, outputs=outputs)
            _check(r)
            c0 = time.process_time()
            for _ in range(n):
                r = await client.infer("simple", inputs, outputs=outputs)
                r.as_numpy("OUTPUT0")
                r.as_numpy("OUTPUT1")
            cpu = time.process_time() - c0
            _check(r)
            return cpu / n * 1e6

        return {"cpu_us": self.loop.run_until_complete(main())}

    def case_http_aio(self, url: str, n: int) -> dict[str, Any]:
        return self._aio("http", url, n)

    def case_grpc_aio(self, url: str, n: int) -> dict[str, Any]:
        return self._aio("grpc", url, n)

    def case_grpc_over_stream(self, url: str, n: int) -> dict[str, Any]:
        import tritonclient.grpc as mod

        client = self.client("grpc-over-stream", url)
        inputs, outputs = _inputs(mod)
        return {
            "cpu_us": self._timed_sync(lambda: client.infer("simple", inputs, outputs=outputs), n)
        }

    def case_grpc_aio_over_stream(self, url: str, n: int) -> dict[str, Any]:
        return self._aio("grpc", url, n, over_stream=True)

    def case_http_8(self, url: str, n: int) -> dict[str, Any]:
        import collections

        import tritonclient.http as mod

        client = self.client("http-8", url)
        inputs, outputs = _inputs(mod)
        pending: collections.deque[Any] = collections.deque()

        def run(count: int) -> tuple[float, float]:
            r = None
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(count):
                if len(pending) >= 8:
                    r = pending.popleft().get_result()
                pending.append(client.async_infer("simple", inputs, outputs=outputs))
            while pending:
                r = pending.popleft().get_result()
            _check(r)
            return time.process_time() - c0, time.perf_counter() - w0

        run(max(16, n // 10))
        cpu, wall = run(n)
        return {"cpu_us": cpu / n * 1e6, "rps": n / wall}

    def case_grpc_8(self, url: str, n: int) -> dict[str, Any]:
        import tritonclient.grpc as mod

        client = self.client("grpc", url)
        inputs, outputs = _inputs(mod)
        window = _Window()
        send = lambda: client.async_infer("simple", inputs, window.callback, outputs=outputs)  # noqa: E731
        return window.measure(send, n)

    def case_grpc_stream(self, url: str, n: int) -> dict[str, Any]:
        import tritonclient.grpc as mod

        inputs, outputs = _inputs(mod)
        client = mod.InferenceServerClient(url)
        window = _Window()
        client.start_stream(window.callback)
        try:
            return window.measure(
                lambda: client.async_stream_infer("simple", inputs, outputs=outputs), n
            )
        finally:
            client.stop_stream()
            client.close()

    def case_grpc_stream_aio(self, url: str, n: int) -> dict[str, Any]:
        import asyncio

        import tritonclient.grpc as mod
        import tritonclient.grpc.aio as aio

        inputs, outputs = _inputs(mod)
        if self.loop is None:
            self.loop = asyncio.new_event_loop()

        async def main() -> float:
            client = aio.InferenceServerClient(url)
            try:

                async def one_run(count: int) -> float:
                    window = asyncio.Semaphore(8)

                    async def requests() -> Any:
                        for _ in range(count):
                            await window.acquire()
                            yield {"model_name": "simple", "inputs": inputs, "outputs": outputs}

                    c0 = time.process_time()
                    got = 0
                    r = None
                    async for result, error in client.stream_infer(requests()):
                        if error is not None:
                            raise AssertionError(f"stream error: {error}")
                        result.as_numpy("OUTPUT0")
                        result.as_numpy("OUTPUT1")
                        r = result
                        got += 1
                        window.release()
                        if got == count:
                            break
                    cpu = time.process_time() - c0
                    _check(r)
                    return cpu

                await one_run(max(16, n // 10))
                return await one_run(n)
            finally:
                await client.close()

        return {"cpu_us": self.loop.run_until_complete(main()) / n * 1e6}

    # -- floors (no tritonclient) -------------------------------------------------------------

    def case_floor_http(self, url: str, n: int, as_json: bool = False) -> dict[str, Any]:
        """A blocking socket: the pre-built request out, the answer read by Content-Length."""
        host, port = url.rsplit(":", 1)
        a, b, _, _ = _simple_values()
        if as_json:
            doc = {
                "inputs": [
                    {"name": n_, "shape": [1, 16], "datatype": "INT32", "data": v.ravel().tolist()}
                    for n_, v in (("INPUT0", a), ("INPUT1", b))
                ],
                "outputs": [
                    {"name": o, "parameters": {"binary_data": False}}
                    for o in ("OUTPUT0", "OUTPUT1")
                ],
            }
            body = json.dumps(doc, separators=(",", ":")).encode()
            extra = b"Content-Type: application/json\r\n"
        else:
            doc = {
                "inputs": [
                    {
                        "name": n_,
                        "shape": [1, 16],
                        "datatype": "INT32",
                        "parameters": {"binary_data_size": 64},
                    }
                    for n_ in ("INPUT0", "INPUT1")
                ],
                "outputs": [
                    {"name": o, "parameters": {"binary_data": True}} for o in ("OUTPUT0", "OUTPUT1")
                ],
            }
            header = json.dumps(doc, separators=(",", ":")).encode()
            body = header + a.tobytes() + b.tobytes()
            extra = (
                b"Content-Type: application/octet-stream\r\nInference-Header-Content-Length: %d\r\n"
                % len(header)
            )
        request = (
            b"POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n"
            % (INFER_PATH.encode(), url.encode(), extra, len(body))
        ) + body
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        recv = sock.recv
        sendall = sock.sendall

        def call() -> bytes:
            sendall(request)
            data = recv(65536)
            end = data.find(b"\r\n\r\n")
            while end < 0:
                data += recv(65536)
                end = data.find(b"\r\n\r\n")
            at = data.find(b"Content-Length: ", 0, end)
            if at < 0:
                at = data.lower().find(b"content-length: ", 0, end)
            length = int(data[at + 16 : data.find(b"\r\n", at)])
            while len(data) < end + 4 + length:
                data += recv(65536)
            return data[end + 4 :]

        try:
            for _ in range(max(10, n // 10)):
                answer = call()
            if b"OUTPUT1" not in answer:
                raise AssertionError(f"floor: unexpected answer {answer[:200]!r}")
            c0 = time.process_time()
            for _ in range(n):
                call()
            cpu = time.process_time() - c0
        finally:
            sock.close()
        return {"cpu_us": cpu / n * 1e6}

    def _floor_request(self, request_id: str = "") -> bytes:
        """A ``simple`` request, serialized, as the gRPC floors send it (the stream floors
        give it an id, as the clients' stream requests may have one)."""
        from tritonclient._proto import service_pb2  # either side's generated module

        a, b, _, _ = _simple_values()
        request = service_pb2.ModelInferRequest(model_name="simple", id=request_id)
        for name in ("INPUT0", "INPUT1"):
            tensor = request.inputs.add()
            tensor.name = name
            tensor.datatype = "INT32"
            tensor.shape.extend([1, 16])
        for name in ("OUTPUT0", "OUTPUT1"):
            request.outputs.add().name = name
        request.raw_input_contents.extend([a.tobytes(), b.tobytes()])
        return request.SerializeToString()  # type: ignore[no-any-return]

    def case_floor_grpc_stream(self, url: str, n: int) -> dict[str, Any]:
        """grpcio's sync stream, 8 messages in flight, pre-serialized bytes in, the replies
        left as bytes: requests from a ``SimpleQueue`` (grpcio's sending thread takes them),
        replies read by a thread of its own."""
        import queue

        import grpc

        data = self._floor_request("~1")
        channel = grpc.insecure_channel(url)
        method = channel.stream_stream(
            GRPC_STREAM, request_serializer=None, response_deserializer=None
        )
        requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        call = method(iter(requests.get, None))
        window = threading.Semaphore(8)
        answers: list[bytes] = []

        def read() -> None:
            try:
                for answer in call:
                    answers.append(answer)
                    window.release()
            except grpc.RpcError:
                pass  # cancelled at the end

        reader = threading.Thread(target=read, daemon=True)
        reader.start()

        def run(count: int) -> float:
            c0 = time.process_time()
            for _ in range(count):
                if not window.acquire(timeout=30):
                    raise AssertionError("floor: no answer on the stream")
                requests.put(data)
            for _ in range(8):  # drain
                window.acquire(timeout=30)
            for _ in range(8):
                window.release()
            return time.process_time() - c0

        try:
            run(max(16, n // 10))
            if not answers or b"OUTPUT1" not in answers[-1]:
                raise AssertionError("floor: unexpected stream answer")
            cpu = run(n)
        finally:
            requests.put(None)
            call.cancel()
            reader.join(10)
            channel.close()
        return {"cpu_us": cpu / n * 1e6}

    def case_floor_grpc_stream_aio(self, url: str, n: int) -> dict[str, Any]:
        """grpc.aio's stream, 8 messages in flight, pre-serialized bytes written to the call,
        the replies read as bytes."""
        import asyncio

        import grpc.aio

        data = self._floor_request("~1")
        if self.loop is None:
            self.loop = asyncio.new_event_loop()

        async def main() -> float:
            channel = grpc.aio.insecure_channel(url)
            method = channel.stream_stream(
                GRPC_STREAM, request_serializer=None, response_deserializer=None
            )

            async def one_run(count: int) -> float:
                window = asyncio.Semaphore(8)
                call = method()

                async def write() -> None:
                    for _ in range(count):
                        await window.acquire()
                        await call.write(data)
                    await call.done_writing()

                c0 = time.process_time()
                writer = asyncio.ensure_future(write())
                answer = b""
                for _ in range(count):
                    answer = await call.read()  # (a stall: the driver's timeout)
                    window.release()
                cpu = time.process_time() - c0
                await writer
                if b"OUTPUT1" not in answer:
                    raise AssertionError("floor: unexpected stream answer")
                return cpu

            try:
                await one_run(max(16, n // 10))
                return await one_run(n)
            finally:
                await channel.close()

        return {"cpu_us": self.loop.run_until_complete(main()) / n * 1e6}

    def case_floor_http_json(self, url: str, n: int) -> dict[str, Any]:
        return self.case_floor_http(url, n, as_json=True)

    def case_floor_grpc(self, url: str, n: int) -> dict[str, Any]:
        """grpcio's unary call with a pre-serialized request, the reply left as bytes."""
        import grpc

        data = self._floor_request()
        channel = grpc.insecure_channel(url)
        call = channel.unary_unary(GRPC_INFER, request_serializer=None, response_deserializer=None)
        try:
            for _ in range(max(10, n // 10)):
                answer = call(data)
            if b"OUTPUT1" not in answer:
                raise AssertionError("floor: unexpected gRPC answer")
            c0 = time.process_time()
            for _ in range(n):
                call(data)
            cpu = time.process_time() - c0
        finally:
            channel.close()
        return {"cpu_us": cpu / n * 1e6}


def worker_main() -> int:
    import tritonclient

    worker = Worker()
    out = sys.stdout
    print(json.dumps({"module": tritonclient.__file__}), file=out, flush=True)
    for line in sys.stdin:
        spec = json.loads(line)
        if spec.get("profile"):
            import cProfile
            import io
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            result = worker.run(spec["case"], spec["url"], spec["n"])
            prof.disable()
            text = io.StringIO()
            stats = pstats.Stats(prof, stream=text)
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(30)
            result["profile"] = text.getvalue()
        else:
            result = worker.run(spec["case"], spec["url"], spec["n"])
        print(json.dumps(result), file=out, flush=True)
    worker.close()
    return 0


# ---------------------------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------------------------


class WorkerProcess:
    """A persistent ``--worker`` subprocess of one side."""

    def __init__(self, python: str, ours: bool) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd="/",
        )
        hello = json.loads(self._readline(60))
        inside = Path(hello["module"]).resolve().is_relative_to(REPO / "tritonclient")
        if inside != ours:
            raise SystemExit(f"wrong package imported by {python}: {hello['module']}")
        self.module = hello["module"]

    def _readline(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()))  # type: ignore[union-attr]
        reader.daemon = True
        reader.start()
        reader.join(timeout)
        if not result or not result[0]:
            raise RuntimeError(
                f"worker gave no answer within {timeout} s (exit {self.proc.poll()})"
            )
        return str(result[0])

    def measure(self, spec: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._readline(timeout))  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class CannedServer(MockServer):
    """This file's ``--canned-server`` on free ports, for a ``with`` block."""

    def command(self, port_file: Path) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--canned-server", str(port_file)]


def pin_tree(pid: int, cpus: set[int]) -> None:
    """Pin process ``pid``, all its threads and all its descendants to ``cpus``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            for tid in os.listdir(f"/proc/{current}/task"):
                os.sched_setaffinity(int(tid), cpus)
        except OSError:
            continue
        todo.extend(children.get(current, []))


def _url(server: Any, case: str) -> str:
    return str(server.grpc_url if "grpc" in case else server.http_url)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per case")
    parser.add_argument("--n", type=int, default=1000, help="calls per measurement")
    parser.add_argument("--servers", default="canned,mock,triton")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--quick", action="store_true", help="3 rounds of 200 calls, canned")
    parser.add_argument(
        "--cpus",
        choices=("same", "split", "none"),
        default="same",
        help="same (default): every client and server on CPU 0, so that a call costs the "
        "client its own work and not the wake-ups of an idle core; split: clients on CPU 0, "
        "servers on CPU 1; none: where the OS puts them",
    )
    parser.add_argument("--profile", metavar="CASE", help="cProfile of ours, canned server")
    parser.add_argument("--peer-python", help="python of a venv with NVIDIA's tritonclient")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--canned-server", metavar="PORT_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()
    if args.canned_server:
        canned_server(args.canned_server)
        return 0
    if args.quick:
        args.rounds, args.n, args.servers = 3, 200, "canned"

    import contextlib

    if args.profile:
        with CannedServer() as srv:
            ours = WorkerProcess(sys.executable, True)
            try:
                res = ours.measure(
                    {
                        "case": args.profile,
                        "url": _url(srv, args.profile),
                        "n": args.n,
                        "profile": True,
                    }
                )
            finally:
                ours.close()
        print(f"{res['cpu_us']:.1f} us per call (under cProfile)\n{res['profile']}")
        return 0

    cases = [c for c in args.cases.split(",") if c]
    t_start = time.perf_counter()
    sides = {
        "ours": WorkerProcess(sys.executable, True),
        "NVIDIA": WorkerProcess(peer_python(args.peer_python), False),
    }
    floor = WorkerProcess(sys.executable, True)
    client_cpus = server_cpus = None
    if args.cpus != "none" and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        client_cpus = {0}
        server_cpus = {0} if args.cpus == "same" else {1}
        for w in (*sides.values(), floor):
            pin_tree(w.proc.pid, client_cpus)
    # (server, case) -> side -> list of cpu_us
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    rates: dict[tuple[str, str], dict[str, list[float]]] = {}
    try:
        with contextlib.ExitStack() as stack:
            servers: list[tuple[str, Any]] = []
            for name in args.servers.split(","):
                if name == "canned":
                    servers.append((name, stack.enter_context(CannedServer())))
                elif name == "mock":
                    servers.append((name, stack.enter_context(MockServer(("simple",)))))
                elif name == "triton":
                    try:
                        triton = triton_server(stack, ("simple",))
                    except Exception as exc:  # report it and go on without
                        print(f"Triton server not used: {exc}", file=sys.stderr)
                        triton = None
                    if triton is not None:
                        servers.append((name, triton))
            if server_cpus is not None:
                for _, srv in servers:
                    pid = getattr(getattr(srv, "proc", None), "pid", None) or getattr(
                        srv, "pid", None
                    )
                    if pid is None:
                        raise SystemExit(f"cannot pin {srv!r}: no process id")
                    pin_tree(pid, server_cpus)
            for sname, srv in servers:
                for case in cases:
                    floor_case = FLOOR_OF.get(case)
                    cell = results.setdefault(
                        (sname, case), {"ours": [], "NVIDIA": [], "floor": []}
                    )
                    rate = rates.setdefault((sname, case), {"ours": [], "NVIDIA": []})
                    for round_ in range(args.rounds):
                        order = ["ours", "NVIDIA"] if round_ % 2 == 0 else ["NVIDIA", "ours"]
                        for side in order:
                            res = sides[side].measure(
                                {"case": case, "url": _url(srv, case), "n": args.n}
                            )
                            cell[side].append(res["cpu_us"])
                            if "rps" in res:
                                rate[side].append(res["rps"])
                        if floor_case is not None:
                            res = floor.measure(
                                {"case": floor_case, "url": _url(srv, case), "n": args.n}
                            )
                            cell["floor"].append(res["cpu_us"])
                    print(f"  done: {sname} {case}", file=sys.stderr, flush=True)
    finally:
        for w in (*sides.values(), floor):
            w.close()

    print()
    print(
        f"Client CPU per call (us), medians of {args.rounds} interleaved rounds of {args.n} calls; "
        f"ours vs NVIDIA tritonclient 2.73 ({os.cpu_count()} CPUs, --cpus {args.cpus})"
    )
    print(
        f"{'server':7} {'case':20} {'NVIDIA':>8} {'ours':>8} {'NV/ours':>8} {'goal':>6} "
        f"{'floor':>8} {'ours/floor':>10}  rounds (ours)"
    )
    misses = 0
    for (sname, case), cell in results.items():
        nv, mine = statistics.median(cell["NVIDIA"]), statistics.median(cell["ours"])
        ratio = nv / mine
        goal = GOALS.get(case)
        mark = ""
        if goal is not None and sname == "canned":
            mark = "" if ratio >= goal else " MISS"
            misses += bool(mark)
        goal_text = f">={goal:.2f}" if goal is not None else ""
        fl = f"{statistics.median(cell['floor']):8.1f}" if cell["floor"] else f"{'':8}"
        dist = f"{mine / statistics.median(cell['floor']):9.2f}x" if cell["floor"] else f"{'':10}"
        spread = "/".join(f"{v:.0f}" for v in cell["ours"])
        print(
            f"{sname:7} {case:20} {nv:8.1f} {mine:8.1f} {ratio:7.2f}x {goal_text:>6} {fl} "
            f"{dist}  {spread}{mark}"
        )
        rate = rates[(sname, case)]
        if rate["ours"] and rate["NVIDIA"]:
            r_nv, r_ours = statistics.median(rate["NVIDIA"]), statistics.median(rate["ours"])
            print(f"{sname:7} {case + ' req/s':20} {r_nv:8.0f} {r_ours:8.0f} {r_ours / r_nv:7.2f}x")
    print(f"ours:   {sides['ours'].module}\nNVIDIA: {sides['NVIDIA'].module}")
    print(f"{misses} goal(s) missed (canned server); total {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
