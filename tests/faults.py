"""Fault-injecting servers for the client failure tests (``test_client_failures.py``).

Every server runs on 127.0.0.1, on a free port, in an asyncio loop of its own thread
(:class:`LoopThread`), and answers according to the *scenario* named by the request: the model
name of an inference or metadata request.  A real peer cannot be made to misbehave on demand,
so these are the project's only mock servers (ARCHITECTURE.md, principle 4).

* :class:`HttpFaultServer` -- a raw HTTP/1.1 server over asyncio streams: it writes the bytes of
  a scenario (:func:`http_scenario`) and then keeps the connection, closes it, or stalls.
  Given a TLS context it serves HTTPS; bytes that are not an HTTP request (a TLS handshake)
  get ``400`` and a close, as from a real HTTP server.
* :class:`GrpcFaultServer` -- a ``grpc.aio`` server whose handlers answer with raw bytes
  (custom serializers), so that a response can be any byte string: a malformed or truncated
  message, invalid UTF-8, outputs whose data lie about their shape.  With TLS credentials it
  serves over TLS.
* :class:`TcpProxy` -- a TCP relay in front of a server that can *kill* it (every connection
  dropped, new ones refused: what a client sees when the server process dies) or be *silent*
  (accepts connections, never answers).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from tritonclient.grpc import service_pb2

T = 20.0  # bound of every wait in the fault servers
R = TypeVar("R")


def free_port() -> int:
    """A TCP port nothing listens on (bound then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LoopThread:
    """An asyncio loop in a daemon thread, for the fault servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        """Run ``coro`` in the loop and return its result (at most :data:`T` seconds)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(T)

    def close(self) -> None:
        """Cancel what still runs, stop the loop and join its thread."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.run(cancel_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(T)
        self.loop.close()


# -- HTTP ------------------------------------------------------------------------------------------


@dataclass
class HttpAnswer:
    """What the HTTP fault server does for one request.

    Attributes
    ----------
    data : bytes or None
        The bytes to write (None: write nothing).
    after : str
        ``"keep"`` (serve the next request on the connection), ``"close"`` or ``"stall"``
        (keep the connection open and never write again).
    """

    data: bytes | None
    after: str = "keep"


def http_response(
    status: int, body: bytes, headers: dict[str, str] | None = None, length: int | None = None
) -> bytes:
    """An HTTP/1.1 response; ``length`` is the Content-Length it claims (default: the truth)."""
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body) if length is None else length}"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


#: The one output of the HTTP scenarios, as JSON data and as binary data.
GOOD_OUTPUT = {"name": "OUT", "datatype": "INT32", "shape": [2], "data": [1, 2]}
GOOD_BINARY = {
    "name": "OUT",
    "datatype": "INT32",
    "shape": [2],
    "parameters": {"binary_data_size": 8},
}
GOOD_METADATA = {"name": "m", "versions": ["1"], "platform": "p", "inputs": [], "outputs": []}


def _infer_json(*outputs: dict[str, Any]) -> bytes:
    return json.dumps({"model_name": "m", "model_version": "1", "outputs": list(outputs)}).encode()


def _binary(header: bytes, data: bytes) -> bytes:
    return http_response(200, header + data, {"Inference-Header-Content-Length": str(len(header))})


def _output(**changes: Any) -> dict[str, Any]:
    return {**GOOD_OUTPUT, **changes}


def http_scenario(name: str, infer: bool) -> HttpAnswer:
    """The answer of scenario ``name`` to an inference request (``infer``) or another one."""
    body = _infer_json(GOOD_OUTPUT) if infer else json.dumps(GOOD_METADATA).encode()
    general: dict[str, Callable[[], HttpAnswer]] = {
        "ok": lambda: HttpAnswer(http_response(200, body)),
        "kill": lambda: HttpAnswer(None, "close"),
        "silent": lambda: HttpAnswer(None, "stall"),
        "killed_mid_body": lambda: HttpAnswer(
            http_response(200, body[: len(body) // 2], length=len(body)), "close"
        ),
        # a large answer is read into one buffer of the announced size (another code path)
        "killed_mid_large_body": lambda: HttpAnswer(
            http_response(200, b" " * 1_500_000, length=4_000_000), "close"
        ),
        "stalled_mid_body": lambda: HttpAnswer(
            http_response(200, body[: len(body) // 2], length=len(body)), "stall"
        ),
        "content_length_long": lambda: HttpAnswer(
            http_response(200, body, length=len(body) + 100), "stall"
        ),
        "content_length_short": lambda: HttpAnswer(http_response(200, body, length=len(body) - 9)),
        "malformed_json": lambda: HttpAnswer(http_response(200, body[:-3] + b"]]x")),
        "invalid_utf8": lambda: HttpAnswer(
            http_response(200, body.replace(b'"m"', b'"\xff\xfem"', 1))
        ),
        "error_not_json": lambda: HttpAnswer(http_response(500, b"upstream exploded")),
        "garbage": lambda: HttpAnswer(b"SMTP ready\r\n\r\n", "close"),
    }
    if name in general:
        return general[name]()
    if not infer:
        raise AssertionError(f"scenario {name} is for inference requests")
    good_header = _infer_json(GOOD_BINARY)
    outputs: dict[str, Callable[[], HttpAnswer]] = {
        "shape_lie": lambda: HttpAnswer(http_response(200, _infer_json(_output(shape=[3])))),
        "datatype_range": lambda: HttpAnswer(
            http_response(200, _infer_json(_output(datatype="INT8", data=[1, 300])))
        ),
        "datatype_kind": lambda: HttpAnswer(
            http_response(200, _infer_json(_output(data=["1", "2"])))
        ),
        "unknown_datatype": lambda: HttpAnswer(
            http_response(200, _infer_json(_output(datatype="FP128")))
        ),
        "missing_output": lambda: HttpAnswer(http_response(200, _infer_json(_output(name="X")))),
        "no_data": lambda: HttpAnswer(
            http_response(200, _infer_json({"name": "OUT", "datatype": "INT32", "shape": [2]}))
        ),
        "binary_missing": lambda: HttpAnswer(_binary(good_header, b"\x01\x00\x00\x00")),
        "binary_trailing": lambda: HttpAnswer(_binary(good_header, bytes(8) + b"extra")),
        "binary_shape_lie": lambda: HttpAnswer(
            _binary(_infer_json({**GOOD_BINARY, "shape": [4]}), bytes(8))
        ),
        "bytes_lie": lambda: HttpAnswer(
            _binary(
                _infer_json({**GOOD_BINARY, "datatype": "BYTES", "shape": [1]}),
                b"\x09\x00\x00\x00abcd",
            )
        ),
        "header_length_beyond_body": lambda: HttpAnswer(
            http_response(
                200,
                _infer_json(GOOD_OUTPUT),
                {"Inference-Header-Content-Length": str(len(_infer_json(GOOD_OUTPUT)) + 50)},
            )
        ),
        "zlib_corrupt": lambda: HttpAnswer(
            http_response(200, b"\x78\x9cthis is not deflate", {"Content-Encoding": "deflate"})
        ),
    }
    return outputs[name]()


class HttpFaultServer:
    """Answers ``/v2/models/<scenario>[/infer]`` as :func:`http_scenario` says.

    Parameters
    ----------
    loop : LoopThread
        Where it runs.
    tls : ssl.SSLContext, optional
        Serve HTTPS with this server context.
    """

    def __init__(self, loop: LoopThread, tls: ssl.SSLContext | None = None) -> None:
        self._loop = loop
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server = loop.run(
            asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=tls)
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        self.url = f"127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                first = await reader.readline()
                if not first:
                    break
                if not first.rstrip().endswith((b"HTTP/1.1", b"HTTP/1.0")):
                    # Not HTTP/1 (a TLS handshake, HTTP/2): a real server answers 400.
                    writer.write(http_response(400, b"Bad Request"))
                    await writer.drain()
                    break
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                if length:
                    await reader.readexactly(length)
                path = first.split(b" ")[1].decode()
                parts = path.split("?")[0].split("/")
                if len(parts) < 4 or parts[1:3] != ["v2", "models"]:
                    answer = HttpAnswer(http_response(200, b"{}"))
                else:
                    answer = http_scenario(parts[3], infer=parts[-1] == "infer")
                if answer.data is not None:
                    writer.write(answer.data)
                    await writer.drain()
                if answer.after == "close":
                    break
                if answer.after == "stall":
                    await asyncio.sleep(3600)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        except asyncio.CancelledError:  # the loop is closing
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def close(self) -> None:
        """Stop listening and drop every connection."""

        async def stop() -> None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            await self._server.wait_closed()

        self._loop.run(stop())


# -- TCP proxy -------------------------------------------------------------------------------------


class TcpProxy:
    """A TCP relay to ``127.0.0.1:target`` that can kill every connection or stay silent.

    Parameters
    ----------
    loop : LoopThread
        Where it runs.
    target : int or None
        The port it relays to; None for a silent proxy (it accepts connections, reads what
        comes and never answers).
    """

    def __init__(self, loop: LoopThread, target: int | None) -> None:
        self._loop = loop
        self._target = target
        self._transports: list[asyncio.BaseTransport] = []
        self.killed = threading.Event()
        self._server: asyncio.Server = loop.run(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = int(self._server.sockets[0].getsockname()[1])
        self.url = f"127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._transports.append(writer.transport)
        if self._target is None:  # silent
            try:
                while await reader.read(65536):
                    pass
            except (ConnectionError, asyncio.CancelledError):
                pass
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target)
        except OSError:
            writer.transport.abort()
            return
        self._transports.append(up_writer.transport)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.transport.abort()

        with contextlib.suppress(asyncio.CancelledError):  # the loop is closing
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    def drop_connections(self) -> None:
        """Drop every connection open now (from any thread); new ones are relayed: what a
        client sees when the network between it and the server breaks for a moment."""

        async def drop() -> None:
            transports, self._transports = self._transports, []
            for transport in transports:
                transport.abort()

        self._loop.run(drop())

    def kill_now(self) -> None:
        """Drop every connection and refuse new ones (in the proxy's loop)."""
        self._server.close()
        for transport in self._transports:
            transport.abort()
        self.killed.set()

    def close(self) -> None:
        """Kill it (from any thread) and wait until it no longer listens."""

        async def stop() -> None:
            self.kill_now()
            await self._server.wait_closed()

        self._loop.run(stop())


# -- gRPC ------------------------------------------------------------------------------------------

_RAW = 6  # ModelInferResponse.raw_output_contents


def _infer_response(
    request_id: str = "", final: bool | None = None
) -> service_pb2.ModelInferResponse:
    response = service_pb2.ModelInferResponse(model_name="m", model_version="1", id=request_id)
    out = response.outputs.add(name="OUT", datatype="INT32")
    out.shape.extend([2])
    response.raw_output_contents.append(b"\x01\x00\x00\x00\x02\x00\x00\x00")
    if final is not None:
        response.parameters["triton_final_response"].bool_param = final
    return response


def grpc_infer_answer(name: str, request_id: str = "", final: bool | None = None) -> bytes:
    """The ``ModelInferResponse`` bytes of scenario ``name`` (one output, OUT INT32 [2])."""
    response = _infer_response(request_id, final)
    out = response.outputs[0]
    if name == "ok":
        pass
    elif name == "malformed":
        return b"\xff\xff\xff\xffnot a protobuf message"
    elif name == "truncated":
        data = response.SerializeToString()
        return data[:-3]
    elif name == "invalid_utf8":
        return b"\x0a\x02\xffm" + response.SerializeToString()
    elif name == "shape_lie":
        response.raw_output_contents[0] = b"\x01\x00\x00"
    elif name == "unknown_datatype":
        out.datatype = "FP128"
    elif name == "bytes_lie":
        out.datatype = "BYTES"
        out.shape[:] = [1]
        response.raw_output_contents[0] = b"\x09\x00\x00\x00abcd"
    elif name == "missing_output":
        out.name = "X"
    elif name == "empty_raw":
        response.raw_output_contents[0] = b""
    elif name == "raw_count":
        response.raw_output_contents.append(b"\x00" * 8)
    else:
        raise AssertionError(f"no gRPC inference answer for scenario {name}")
    return response.SerializeToString()


def grpc_metadata_answer(name: str) -> bytes:
    """The ``ModelMetadataResponse`` bytes of scenario ``name``."""
    data = service_pb2.ModelMetadataResponse(name="m", versions=["1"], platform="p")
    wire = data.SerializeToString()
    if name == "ok":
        return wire
    if name == "malformed":
        return b"\xff\xff\xff\xffnot a protobuf message"
    if name == "truncated":
        return wire[:-1]
    if name == "invalid_utf8":
        return b"\x0a\x02\xffm" + wire
    raise AssertionError(f"no gRPC metadata answer for scenario {name}")


#: Scenarios whose answer is bytes (a response of some kind); the others are actions.
GRPC_BYTES_SCENARIOS = frozenset(
    {
        "ok",
        "malformed",
        "truncated",
        "invalid_utf8",
        "shape_lie",
        "unknown_datatype",
        "bytes_lie",
        "missing_output",
        "empty_raw",
        "raw_count",
    }
)


class GrpcFaultServer:
    """A ``grpc.aio`` server answering ``ModelInfer``, ``ModelStreamInfer`` and
    ``ModelMetadata`` as the scenario (model name) says, with raw bytes.

    Scenarios with an action rather than bytes: ``kill`` (calls :attr:`on_kill`, meant to
    kill the :class:`TcpProxy` in front, then hangs), ``stall`` (hangs), ``error`` (aborts
    with INTERNAL).  Streams, per request: ``ok`` sends a final response with the request's
    id; ``kill`` and ``stall`` send a non-final response first; ``early_end`` sends one and
    ends the stream (OK) while the client still sends; ``unanswered`` sends nothing and ends
    the stream once the client closed its side; the bytes scenarios send their message.

    Parameters
    ----------
    loop : LoopThread
        Where it runs.
    credentials : grpc.ServerCredentials, optional
        Serve over TLS.
    """

    def __init__(self, loop: LoopThread, credentials: Any = None) -> None:
        self._loop = loop
        #: Called (in the server's loop) by the ``kill`` scenario.
        self.on_kill: Callable[[], None] = lambda: None
        #: Set once a ``stall`` or ``kill`` call is inside the server.
        self.entered = threading.Event()

        def handler(kind: str, fn: Any, request_type: Any) -> Any:
            factory = getattr(grpc, f"{kind}_rpc_method_handler")
            return factory(
                fn,
                request_deserializer=request_type.FromString,
                response_serializer=lambda data: data,
            )

        handlers = grpc.method_handlers_generic_handler(
            "inference.GRPCInferenceService",
            {
                "ModelInfer": handler("unary_unary", self._infer, service_pb2.ModelInferRequest),
                "ModelMetadata": handler(
                    "unary_unary", self._metadata, service_pb2.ModelMetadataRequest
                ),
                "ModelStreamInfer": handler(
                    "stream_stream", self._stream, service_pb2.ModelInferRequest
                ),
            },
        )

        async def start() -> tuple[Any, int]:
            server = grpc.aio.server()
            server.add_generic_rpc_handlers((handlers,))
            address = "127.0.0.1:0"
            if credentials is None:
                port = server.add_insecure_port(address)
            else:
                port = server.add_secure_port(address, credentials)
            await server.start()
            return server, port

        self._server, self.port = loop.run(start())
        self.url = f"127.0.0.1:{self.port}"

    async def _act(self, name: str, context: Any) -> None:
        """The action scenarios of unary calls (never return for kill and stall)."""
        if name == "error":
            await context.abort(grpc.StatusCode.INTERNAL, "model exploded")
        if name not in ("kill", "stall"):
            raise AssertionError(f"unknown scenario {name}")
        self.entered.set()
        if name == "kill":
            self.on_kill()
        await asyncio.sleep(3600)

    async def _infer(self, request: Any, context: Any) -> bytes:
        if request.model_name in GRPC_BYTES_SCENARIOS:
            return grpc_infer_answer(request.model_name)
        await self._act(request.model_name, context)
        raise AssertionError("unreachable")

    async def _metadata(self, request: Any, context: Any) -> bytes:
        if request.name in ("ok", "malformed", "truncated", "invalid_utf8"):
            return grpc_metadata_answer(request.name)
        await self._act(request.name, context)
        raise AssertionError("unreachable")

    async def _stream(self, requests: Any, context: Any) -> AsyncIterator[bytes]:
        async for request in requests:
            name, rid = request.model_name, request.id
            if name in GRPC_BYTES_SCENARIOS:
                data = grpc_infer_answer(name, rid, final=True)
                if name in ("malformed", "truncated", "invalid_utf8"):
                    yield data  # the whole message does not parse
                else:
                    yield service_pb2.ModelStreamInferResponse(
                        infer_response=service_pb2.ModelInferResponse.FromString(data)
                    ).SerializeToString()
                continue
            if name == "error":
                await context.abort(grpc.StatusCode.INTERNAL, "model exploded")
            if name == "unanswered":
                continue  # never answered; the stream ends (OK) when the client's side does
            first = service_pb2.ModelStreamInferResponse(
                infer_response=_infer_response(rid, final=False)
            )
            yield first.SerializeToString()
            if name == "early_end":
                return  # OK, while the client has not closed its side
            if name in ("kill", "stall"):
                await asyncio.sleep(0.2)  # let the first response reach the client
                self.entered.set()
                if name == "kill":
                    self.on_kill()
                await asyncio.sleep(3600)
            raise AssertionError(f"unknown stream scenario {name}")

    def close(self) -> None:
        """Stop the server (in-flight calls are cancelled)."""
        self._loop.run(self._server.stop(0))
