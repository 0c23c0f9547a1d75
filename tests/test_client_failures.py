"""Failure behaviour of the four clients against small fault-injecting servers.

HTTP: a raw asyncio server on a free loopback port that answers each request according to
the scenario in its path (killed mid-call, silent, truncated or lying bodies, bad JSON,
corrupt compression, unknown datatypes).  gRPC: a ``grpc.aio`` server whose servicer
misbehaves (silent, UNAVAILABLE, undecodable responses, streams that end or stall mid-way,
killed mid-call).  Every failure must reach the caller as an ``InferenceServerException``
naming what went wrong, within the client's timeout.  Every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import json
import queue
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import (
    InferenceServerCancelledError,
    InferenceServerConnectionError,
    InferenceServerDeadlineExceededError,
    InferenceServerException,
    InferenceServerInternalError,
    InferenceServerProtocolError,
    InferenceServerUnavailableError,
)

T = 20.0  # bound of every wait
SHORT = 0.5  # client timeouts in the "silent server" cases


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _LoopThread:
    """An asyncio loop in a daemon thread, for the fault servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(T)

    def close(self) -> None:
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.run(cancel_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(T)
        self.loop.close()


# -- the HTTP fault server -------------------------------------------------------------------------


def _response(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
    for k, v in (headers or {}).items():
        head.append(f"{k}: {v}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _infer_json(output: dict[str, Any]) -> bytes:
    return json.dumps({"model_name": "m", "outputs": [output]}).encode()


def _scenario(name: str) -> bytes | None:
    """The bytes the server sends for scenario ``name`` (None: send nothing, close)."""
    good = {"name": "OUT", "datatype": "INT32", "shape": [2], "data": [1, 2]}
    if name == "kill":
        return None
    if name == "content_length_lie":
        return b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b'{"name": "m"'
    if name == "large_content_length_lie":  # a large answer is read into one buffer
        return b"HTTP/1.1 200 OK\r\nContent-Length: 4000000\r\n\r\n" + b"x" * 1_500_000
    if name == "header_length_beyond_body":
        body = _infer_json(good)
        return _response(200, body, {"Inference-Header-Content-Length": str(len(body) + 50)})
    if name == "not_json":
        return _response(200, b"<html>surprise</html>")
    if name == "error_not_json":
        return _response(500, b"upstream exploded")
    if name == "binary_size_lie":
        header = _infer_json(
            {
                "name": "OUT",
                "datatype": "INT32",
                "shape": [4],
                "parameters": {"binary_data_size": 16},
            }
        )
        return _response(
            200, header + b"\x01\x00\x00\x00", {"Inference-Header-Content-Length": str(len(header))}
        )
    if name == "unknown_datatype":
        return _response(
            200, _infer_json({"name": "OUT", "datatype": "FP128", "shape": [2], "data": [1, 2]})
        )
    if name == "zlib_corrupt":
        return _response(200, b"\x78\x9cthis is not deflate", {"Content-Encoding": "deflate"})
    if name == "garbage":
        return b"SMTP ready\r\n\r\n"
    raise AssertionError(name)


class HttpFaultServer:
    """Answers ``/v2/models/<scenario>/...`` requests as :func:`_scenario` says; ``silent``
    reads the request and never answers."""

    def __init__(self) -> None:
        self._lt = _LoopThread()
        self._server: asyncio.Server = self._lt.run(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                if length:
                    await reader.readexactly(length)
                scenario = path.split("/")[3] if path.startswith("/v2/models/") else "kill"
                if scenario == "silent":
                    await asyncio.sleep(3600)
                data = _scenario(scenario)
                if data is None:
                    break
                writer.write(data)
                await writer.drain()
                if scenario in ("content_length_lie", "large_content_length_lie", "garbage"):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        self._server.close()
        self._lt.close()


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpFaultServer]:
    server = HttpFaultServer()
    yield server
    server.close()


def _inputs(mod: Any) -> list[Any]:
    tensor = mod.InferInput("IN", [2], "INT32")
    tensor.set_data_from_numpy(np.array([1, 2], dtype=np.int32))
    return [tensor]


#: scenario -> exception class expected (at least)
HTTP_CASES: dict[str, type[InferenceServerException]] = {
    "kill": InferenceServerConnectionError,
    "content_length_lie": InferenceServerConnectionError,
    "large_content_length_lie": InferenceServerConnectionError,
    "header_length_beyond_body": InferenceServerException,
    "not_json": InferenceServerException,
    "error_not_json": InferenceServerInternalError,
    "binary_size_lie": InferenceServerException,
    "unknown_datatype": InferenceServerException,
    "zlib_corrupt": InferenceServerException,
    "garbage": InferenceServerException,
}


def _infer_and_decode(client: Any, scenario: str, mod: Any) -> None:
    result = client.infer(scenario, _inputs(mod))
    result.as_numpy("OUT")  # a lazily decoded output must fail here, not return garbage


@pytest.mark.parametrize("scenario", sorted(HTTP_CASES))
def test_http_sync_faults(http_server: HttpFaultServer, scenario: str) -> None:
    with httpclient.InferenceServerClient(
        http_server.url, connection_timeout=T, network_timeout=T
    ) as c:
        with pytest.raises(HTTP_CASES[scenario]) as info:
            _infer_and_decode(c, scenario, httpclient)
        assert str(info.value)
        if scenario in ("not_json", "garbage", "kill"):
            with pytest.raises(InferenceServerException):
                c.get_model_metadata(scenario)


@pytest.mark.parametrize("scenario", sorted(HTTP_CASES))
def test_http_aio_faults(http_server: HttpFaultServer, scenario: str) -> None:
    async def run() -> None:
        async with httpaio.InferenceServerClient(http_server.url, conn_timeout=T) as c:
            with pytest.raises(HTTP_CASES[scenario]) as info:
                result = await c.infer(scenario, _inputs(httpaio))
                result.as_numpy("OUT")
            assert str(info.value)
            if scenario in ("not_json", "garbage", "kill"):
                with pytest.raises(InferenceServerException):
                    await c.get_model_metadata(scenario)

    asyncio.run(asyncio.wait_for(run(), T))


def test_http_protocol_error_types(http_server: HttpFaultServer) -> None:
    with (
        httpclient.InferenceServerClient(http_server.url) as c,
        pytest.raises(InferenceServerProtocolError, match="not JSON"),
    ):
        c.get_model_metadata("not_json")


def test_http_silent_server_bounded(http_server: HttpFaultServer) -> None:
    with httpclient.InferenceServerClient(
        http_server.url, connection_timeout=SHORT, network_timeout=SHORT
    ) as c:
        start = time.monotonic()
        with pytest.raises(InferenceServerDeadlineExceededError):
            c.infer("silent", _inputs(httpclient))
        assert time.monotonic() - start < 5
        request = c.async_infer("silent", _inputs(httpclient))
        with pytest.raises(InferenceServerDeadlineExceededError):
            request.get_result(timeout=T)

    async def run() -> None:
        async with httpaio.InferenceServerClient(http_server.url, conn_timeout=SHORT) as a:
            with pytest.raises(InferenceServerDeadlineExceededError):
                await a.get_model_metadata("silent")

    start = time.monotonic()
    asyncio.run(asyncio.wait_for(run(), T))
    assert time.monotonic() - start < 5


def test_http_refused() -> None:
    url = f"127.0.0.1:{_free_port()}"
    with httpclient.InferenceServerClient(url) as c:
        with pytest.raises(InferenceServerConnectionError) as info:
            c.is_server_live()
        assert isinstance(info.value, ConnectionError)  # as NVIDIA's leaked socket error
        with pytest.raises(InferenceServerConnectionError):
            c.async_infer("m", _inputs(httpclient)).get_result(timeout=T)

    async def run() -> None:
        async with httpaio.InferenceServerClient(url) as a:
            with pytest.raises(InferenceServerConnectionError):
                await a.is_server_ready()

    asyncio.run(asyncio.wait_for(run(), T))


# -- the gRPC fault server -------------------------------------------------------------------------


class _Servicer(service_pb2_grpc.GRPCInferenceServiceServicer):
    """Misbehaving methods; ``entered`` is set once a ModelInfer call is inside."""

    def __init__(self) -> None:
        self.entered = threading.Event()

    async def ServerLive(self, request: Any, context: Any) -> Any:
        return service_pb2.ServerLiveResponse(live=True)

    async def ServerMetadata(self, request: Any, context: Any) -> Any:
        await asyncio.sleep(3600)  # silent
        raise AssertionError("unreachable")

    async def ModelMetadata(self, request: Any, context: Any) -> Any:
        await context.abort(grpc.StatusCode.UNAVAILABLE, "going away")

    async def ModelInfer(self, request: Any, context: Any) -> Any:
        response = service_pb2.ModelInferResponse(model_name=request.model_name, id=request.id)
        out = response.outputs.add()
        out.name = "OUT"
        if request.model_name == "hang":
            self.entered.set()
            await asyncio.sleep(3600)
        if request.model_name == "unknown_datatype":
            out.datatype = "FP128"
            out.shape.extend([2])
            response.raw_output_contents.append(b"\x00" * 32)
        elif request.model_name == "short_raw":
            out.datatype = "FP32"
            out.shape.extend([4])
            response.raw_output_contents.append(b"\x00" * 3)
        elif request.model_name == "bad_bytes":
            out.datatype = "BYTES"
            out.shape.extend([1])
            response.raw_output_contents.append(b"\xff\xff\x00\x00abc")
        return response

    async def ModelStreamInfer(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
        async for request in request_iterator:
            reply = service_pb2.ModelStreamInferResponse()
            reply.infer_response.model_name = request.model_name
            yield reply
            if request.model_name == "end":
                return  # ends the stream while the client still sends
            if request.model_name == "abort":
                await context.abort(grpc.StatusCode.INTERNAL, "stream broke")
            if request.model_name == "stall":
                await asyncio.sleep(3600)


class GrpcFaultServer:
    def __init__(self) -> None:
        self.servicer = _Servicer()
        self._lt = _LoopThread()

        async def start() -> tuple[Any, int]:
            server = grpc.aio.server()
            service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(self.servicer, server)
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            return server, port

        self._server, port = self._lt.run(start())
        self.url = f"127.0.0.1:{port}"
        self._stopped = False

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._lt.run(self._server.stop(0))

    def close(self) -> None:
        self.stop()
        self._lt.close()


@pytest.fixture
def grpc_server() -> Iterator[GrpcFaultServer]:
    server = GrpcFaultServer()
    yield server
    server.close()


def _grpc_inputs() -> list[grpcclient.InferInput]:
    tensor = grpcclient.InferInput("IN", [2], "INT32")
    tensor.set_data_from_numpy(np.array([1, 2], dtype=np.int32))
    return [tensor]


GRPC_DECODE_CASES = ["unknown_datatype", "short_raw", "bad_bytes"]


def test_grpc_sync_faults(grpc_server: GrpcFaultServer) -> None:
    with grpcclient.InferenceServerClient(grpc_server.url) as c:
        start = time.monotonic()
        with pytest.raises(InferenceServerDeadlineExceededError):
            c.get_server_metadata(client_timeout=SHORT)
        assert time.monotonic() - start < 5
        with pytest.raises(InferenceServerUnavailableError, match="going away"):
            c.get_model_metadata("m", client_timeout=T)
        for name in GRPC_DECODE_CASES:
            with pytest.raises(InferenceServerException) as info:
                c.infer(name, _grpc_inputs(), client_timeout=T).as_numpy("OUT")
            assert str(info.value), name
        # async_infer: a response that cannot be decoded reaches the callback
        got: queue.Queue[tuple[Any, Any]] = queue.Queue()
        for name in GRPC_DECODE_CASES:
            c.async_infer(
                name,
                _grpc_inputs(),
                lambda result, error: got.put((result, error)),
                client_timeout=T,
            )
            result, error = got.get(timeout=T)
            if error is None:
                with pytest.raises(InferenceServerException):
                    result.as_numpy("OUT")


def test_grpc_aio_faults(grpc_server: GrpcFaultServer) -> None:
    async def run() -> None:
        async with grpcaio.InferenceServerClient(grpc_server.url) as c:
            with pytest.raises(InferenceServerDeadlineExceededError):
                await c.get_server_metadata(client_timeout=SHORT)
            with pytest.raises(InferenceServerUnavailableError):
                await c.get_model_metadata("m", client_timeout=T)
            for name in GRPC_DECODE_CASES:
                with pytest.raises(InferenceServerException):
                    result = await c.infer(name, _grpc_inputs(), client_timeout=T)
                    result.as_numpy("OUT")

    asyncio.run(asyncio.wait_for(run(), T))


def test_grpc_refused() -> None:
    url = f"127.0.0.1:{_free_port()}"
    with (
        grpcclient.InferenceServerClient(url) as c,
        pytest.raises(InferenceServerUnavailableError),
    ):
        c.is_server_live(client_timeout=T)

    async def run() -> None:
        async with grpcaio.InferenceServerClient(url) as a:
            with pytest.raises(InferenceServerUnavailableError):
                await a.infer("m", _grpc_inputs(), client_timeout=T)

    asyncio.run(asyncio.wait_for(run(), T))


def test_grpc_server_killed_mid_call(grpc_server: GrpcFaultServer) -> None:
    with grpcclient.InferenceServerClient(grpc_server.url) as c:
        got: queue.Queue[tuple[Any, Any]] = queue.Queue()
        c.async_infer("hang", _grpc_inputs(), _put_into(got), client_timeout=T)
        assert grpc_server.servicer.entered.wait(T)
        grpc_server.stop()
        _, error = got.get(timeout=T)
        assert isinstance(error, InferenceServerUnavailableError | InferenceServerCancelledError)


def _put_into(got: queue.Queue[tuple[Any, Any]]) -> Any:
    return lambda result, error: got.put((result, error))


def _stream(c: grpcclient.InferenceServerClient, **kw: Any) -> queue.Queue[tuple[Any, Any]]:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    c.start_stream(lambda result, error: got.put((result, error)), **kw)
    return got


def _next_error(got: queue.Queue[tuple[Any, Any]]) -> InferenceServerException:
    deadline = time.monotonic() + T
    while True:
        _, error = got.get(timeout=max(deadline - time.monotonic(), 0.01))
        if error is not None:
            assert isinstance(error, InferenceServerException)
            return error


def test_grpc_stream_ends_or_breaks(grpc_server: GrpcFaultServer) -> None:
    with grpcclient.InferenceServerClient(grpc_server.url) as c:
        for name, expected in (
            ("end", InferenceServerUnavailableError),
            ("abort", InferenceServerInternalError),
        ):
            got = _stream(c)
            c.async_stream_infer(name, _grpc_inputs())
            error = _next_error(got)
            assert isinstance(error, expected), (name, error)
            start = time.monotonic()
            c.stop_stream()
            assert time.monotonic() - start < 5


def test_grpc_stream_stalls(grpc_server: GrpcFaultServer) -> None:
    with grpcclient.InferenceServerClient(grpc_server.url) as c:
        # stream_timeout bounds a stalled stream
        got = _stream(c, stream_timeout=SHORT)
        c.async_stream_infer("stall", _grpc_inputs())
        assert isinstance(_next_error(got), InferenceServerDeadlineExceededError)
        c.stop_stream()
        # stop_stream(timeout=...) returns although the server never ends the stream
        got = _stream(c)
        c.async_stream_infer("stall", _grpc_inputs())
        assert got.get(timeout=T)[1] is None  # the first response arrives
        start = time.monotonic()
        c.stop_stream(timeout=SHORT)
        assert time.monotonic() - start < 5
        assert isinstance(_next_error(got), InferenceServerCancelledError)
        # cancel_requests=True is prompt as well
        got = _stream(c)
        c.async_stream_infer("stall", _grpc_inputs())
        start = time.monotonic()
        c.stop_stream(cancel_requests=True)
        assert time.monotonic() - start < 5


def test_grpc_server_killed_mid_stream(grpc_server: GrpcFaultServer) -> None:
    with grpcclient.InferenceServerClient(grpc_server.url) as c:
        got = _stream(c)
        c.async_stream_infer("stall", _grpc_inputs())
        assert got.get(timeout=T)[1] is None
        grpc_server.stop()
        assert isinstance(
            _next_error(got), InferenceServerUnavailableError | InferenceServerCancelledError
        )
        start = time.monotonic()
        c.stop_stream()
        assert time.monotonic() - start < 5


def test_grpc_aio_stream_faults(grpc_server: GrpcFaultServer) -> None:
    async def requests(name: str) -> AsyncIterator[dict[str, Any]]:
        yield {"model_name": name, "inputs": _grpc_inputs()}
        await asyncio.sleep(3600)  # keep the stream open from the client's side

    async def consume(
        c: grpcaio.InferenceServerClient, name: str, **kw: Any
    ) -> InferenceServerException:
        iterator = c.stream_infer(requests(name), **kw)
        try:
            async for _result, error in iterator:
                if error is not None:
                    return error
        except InferenceServerException as error:
            return error
        finally:
            iterator.cancel()
        raise AssertionError("the stream ended without an error")

    async def run() -> None:
        async with grpcaio.InferenceServerClient(grpc_server.url) as c:
            assert isinstance(await consume(c, "abort"), InferenceServerInternalError)
            assert isinstance(
                await consume(c, "stall", stream_timeout=SHORT),
                InferenceServerDeadlineExceededError,
            )

    asyncio.run(asyncio.wait_for(run(), T))
