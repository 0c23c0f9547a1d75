"""Network engines for the bundled server, side by side in one run (issue 16).

Usage
-----
``python benchmarks/bench_engines.py [--quick] [--seconds S] [--rounds N] [--only NAME,...]``

Every candidate is a server process on a free port; this project's client drives each in turn
with the ``simple`` request (INT32 [1,16] x2, binary outputs over HTTP), sequentially
(``c=1``, the sync client) and with eight coroutines (``c=8``, the aio client), for
``--rounds`` interleaved rounds, so that the candidates share the machine's ups and downs.
Each figure is the median over the rounds: requests/s, and the server process's CPU (user +
system, its stub processes included, from ``/proc``) per request.

Two kinds of handler isolate the engine from the rest:

``echo``   the engine's own request handling, answering a canned (correct) response.
``full``   the same request through the codec (:mod:`tritonclient._codec`) and the server core
           (``simple`` in a stub process, the server's default), answered from the model's
           response: what a frontend on that engine costs at least.

Candidates (``NAME``): HTTP ``aiohttp-app`` (aiohttp's ``web.Application`` with its defaults,
echo), ``aiohttp-server`` (the low-level ``web.Server``, no access log: how the frontend runs
it), ``uvicorn`` (uvicorn with httptools and uvloop serving a plain ASGI app), ``httptools``
(an ``asyncio.Protocol`` on ``httptools``' parser, on uvloop), each ``-echo``/``-full``, plus
``frontend``, the bundled server's real HTTP frontend; gRPC ``grpc-aio`` (``grpc.aio``) and
``grpc-sync`` (``grpc.server`` with a thread pool), ``-echo``/``-full``, plus ``grpc-frontend``.
A ``+uvloop`` suffix runs an asyncio candidate's loop on uvloop.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_clients as bc  # noqa: E402
import bench_server as bs  # noqa: E402

HTTP_CANDIDATES = [
    "aiohttp-app-echo",
    "aiohttp-server-echo",
    "aiohttp-server-echo+uvloop",
    "uvicorn-echo",
    "httptools-echo",
    "aiohttp-server-full",
    "aiohttp-server-full+uvloop",
    "uvicorn-full",
    "httptools-full",
    "frontend",
    "frontend+uvloop",
]
GRPC_CANDIDATES = [
    "grpc-aio-echo",
    "grpc-aio-echo+uvloop",
    "grpc-sync-echo",
    "grpc-aio-full",
    "grpc-aio-full+uvloop",
    "grpc-sync-full",
    "grpc-frontend",
    "grpc-frontend+uvloop",
]

# ---------------------------------------------------------------------------------------------
# Server side.
# ---------------------------------------------------------------------------------------------


def _simple_arrays() -> tuple[Any, Any]:
    import numpy as np

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    return a + b, a - b


def _http_canned() -> tuple[dict[str, str], bytes]:
    from tritonclient._codec import http_server

    total, diff = _simple_arrays()
    body = http_server.encode_infer_response(
        "simple",
        "1",
        [
            http_server.ResponseOutput("OUTPUT0", "INT32", (1, 16), total, True),
            http_server.ResponseOutput("OUTPUT1", "INT32", (1, 16), diff, True),
        ],
    )
    return body.headers(), body.tobytes()


def _grpc_canned() -> bytes:
    from mock_server.core.types import InferResponse, Tensor
    from tritonclient._codec import grpc_framing, grpc_server

    total, diff = _simple_arrays()
    response = InferResponse(
        "simple",
        "1",
        "",
        outputs=[
            Tensor("OUTPUT0", "INT32", (1, 16), total),
            Tensor("OUTPUT1", "INT32", (1, 16), diff),
        ],
    )
    return grpc_framing.serialize_infer_response(*grpc_server.encode_infer_response_parts(response))


def _core() -> Any:
    from mock_server.compose import build_core
    from mock_server.core.server import ModelControlMode, ServerOptions

    core = build_core(
        ServerOptions(
            model_repository=[bc.REPO / "mock_server" / "models"],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["simple"],
        )
    )
    core.start()
    return core


class HttpFull:
    """The ``simple`` request through the codec and the core, engine-independent."""

    def __init__(self, core: Any) -> None:
        self.core = core

    def submit(self, body: bytes, header_length: str | None, deliver: Any) -> Any:
        from mock_server.core.types import InferRequest, RequestedOutput, Tensor
        from tritonclient._codec import http_server

        parsed = http_server.parse_infer_request(
            body, int(header_length) if header_length else None, model_name="simple"
        )
        inputs = [
            Tensor(
                p.name,
                p.datatype,
                tuple(p.shape),
                http_server.decode_input(p, None, model_name="simple", request_id=parsed.id),
            )
            for p in parsed.inputs
        ]
        request = InferRequest(
            model_name="simple",
            id=parsed.id,
            inputs=inputs,
            outputs=[RequestedOutput(o.name) for o in parsed.outputs],
        )
        request.response_callback = deliver
        self.core.infer(request)
        return parsed

    @staticmethod
    def encode(parsed: Any, response: Any) -> tuple[dict[str, str], bytes]:
        from tritonclient._codec import http_server

        assert response.error is None, response.error
        body = http_server.encode_infer_response(
            response.model_name,
            response.model_version,
            [
                http_server.ResponseOutput(
                    t.name, t.datatype, t.shape, t.data, parsed.output_binary(t.name)
                )
                for t in response.outputs
            ],
            request_id=response.id,
        )
        return body.headers(), body.tobytes()

    async def run(self, body: bytes, header_length: str | None) -> tuple[dict[str, str], bytes]:
        import asyncio

        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def deliver(response: Any) -> None:
            if response.final:
                loop.call_soon_threadsafe(future.set_result, response)

        parsed = self.submit(body, header_length, deliver)
        return self.encode(parsed, await future)


async def _serve_http(kind: str, full: HttpFull | None, port_file: Path) -> None:
    import asyncio

    headers, canned = _http_canned()
    stop = asyncio.Event()

    async def answer(body: bytes, header_length: str | None) -> tuple[dict[str, str], bytes]:
        if full is None:
            return headers, canned
        return await full.run(body, header_length)

    if kind in ("aiohttp-app", "aiohttp-server"):
        from aiohttp import web

        async def handle(request: web.BaseRequest) -> web.Response:
            h, b = await answer(
                await request.read(), request.headers.get("Inference-Header-Content-Length")
            )
            return web.Response(body=b, headers=h)

        if kind == "aiohttp-app":
            app = web.Application()
            app.router.add_post("/v2/models/simple/infer", handle)
            runner: Any = web.AppRunner(app)
        else:
            runner = web.ServerRunner(web.Server(handle, access_log=None))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
    elif kind == "uvicorn":
        import uvicorn

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            chunks = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            hl = None
            for key, value in scope["headers"]:
                if key == b"inference-header-content-length":
                    hl = value.decode()
            h, b = await answer(b"".join(chunks), hl)
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(k.encode(), v.encode()) for k, v in h.items()]
                    + [(b"content-length", str(len(b)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": b})

        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            loop="none",
            http="httptools",
            lifespan="off",
            access_log=False,
            log_level="warning",
        )
        server = uvicorn.Server(config)
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
    elif kind == "httptools":
        import httptools

        class Protocol(asyncio.Protocol):
            def __init__(self) -> None:
                self.parser = httptools.HttpRequestParser(self)
                self.body: list[bytes] = []
                self.hl: str | None = None
                self.tasks: set[Any] = set()

            def connection_made(self, transport: Any) -> None:
                self.transport = transport

            def data_received(self, data: bytes) -> None:
                self.parser.feed_data(data)

            def on_header(self, name: bytes, value: bytes) -> None:
                if name.lower() == b"inference-header-content-length":
                    self.hl = value.decode()

            def on_body(self, body: bytes) -> None:
                self.body.append(body)

            def on_message_complete(self) -> None:
                body, self.body = b"".join(self.body), []
                if full is None:
                    self.reply(headers, canned)
                else:
                    task = asyncio.ensure_future(self.run(body, self.hl))
                    self.tasks.add(task)
                    task.add_done_callback(self.tasks.discard)

            async def run(self, body: bytes, hl: str | None) -> None:
                self.reply(*await answer(body, hl))

            def reply(self, h: dict[str, str], b: bytes) -> None:
                head = "".join(f"{k}: {v}\r\n" for k, v in h.items())
                self.transport.write(
                    f"HTTP/1.1 200 OK\r\n{head}Content-Length: {len(b)}\r\n\r\n".encode() + b
                )

        server = await asyncio.get_running_loop().create_server(Protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
    elif kind == "frontend":
        from mock_server.frontends.http import HttpFrontend

        assert full is not None
        frontend = HttpFrontend(full.core, port=0)
        port = await frontend.start()
    else:
        raise ValueError(kind)
    port_file.write_text(json.dumps({"port": port}))
    await stop.wait()
    if kind == "uvicorn":
        await serving


def _serve_grpc(kind: str, full: bool, port_file: Path, use_uvloop: bool) -> None:
    import asyncio
    import threading
    from concurrent import futures

    import grpc

    from mock_server.core.dataplane import Dataplane
    from mock_server.frontends.grpc import GrpcFrontend, _serialize_infer
    from mock_server.frontends.grpc_support import parse_infer_request
    from tritonclient._codec import grpc_server

    canned = _grpc_canned()
    core = _core() if full else None

    def core_request(parts: Any) -> Any:
        assert core is not None
        request, raw = parts
        decoded = grpc_server.decode_infer_request(request, raw)
        return decoded, Dataplane(core).prepare(decoded).request

    if kind == "grpc-sync":

        def sync_infer(parts: Any, context: Any) -> Any:
            if core is None:
                return canned
            _, request = core_request(parts)
            done = threading.Event()
            box: list[Any] = []

            def deliver(response: Any) -> None:
                if response.final:
                    box.append(response)
                    done.set()

            request.response_callback = deliver
            core.infer(request)
            done.wait()
            return grpc_server.encode_infer_response_parts(box[0])

        handler = grpc.unary_unary_rpc_method_handler(
            sync_infer,
            request_deserializer=parse_infer_request if full else None,
            response_serializer=_serialize_infer if full else None,
        )
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=10))
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(_SERVICE, {"ModelInfer": handler})]
        )
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        port_file.write_text(json.dumps({"port": port}))
        server.wait_for_termination()
        return

    async def main() -> None:
        if kind == "grpc-frontend":
            frontend = GrpcFrontend(_core(), port=0)
            port = await frontend.start()
        else:

            async def aio_infer(parts: Any, context: Any) -> Any:
                if core is None:
                    return canned
                _, request = core_request(parts)
                loop = asyncio.get_running_loop()
                future = loop.create_future()

                def deliver(response: Any) -> None:
                    if response.final:
                        loop.call_soon_threadsafe(future.set_result, response)

                request.response_callback = deliver
                core.infer(request)
                return grpc_server.encode_infer_response_parts(await future)

            handler = grpc.unary_unary_rpc_method_handler(
                aio_infer,
                request_deserializer=parse_infer_request if full else None,
                response_serializer=_serialize_infer if full else None,
            )
            server = grpc.aio.server()
            server.add_generic_rpc_handlers(
                [grpc.method_handlers_generic_handler(_SERVICE, {"ModelInfer": handler})]
            )
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
        port_file.write_text(json.dumps({"port": port}))
        await asyncio.Event().wait()

    _run_loop(main(), use_uvloop)


_SERVICE = "inference.GRPCInferenceService"


def _run_loop(coro: Any, use_uvloop: bool) -> None:
    import asyncio

    if use_uvloop:
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)


def serve(name: str, port_file: Path) -> None:
    use_uvloop = name.endswith("+uvloop")
    name = name.removesuffix("+uvloop")
    if name.startswith("grpc"):
        kind, _, mode = name.rpartition("-")
        if mode == "frontend":
            kind = "grpc-frontend"
        _serve_grpc(kind, mode == "full", port_file, use_uvloop)
        return
    kind, _, mode = name.rpartition("-")
    if name == "frontend":
        kind, mode = "frontend", "full"
    if kind in ("uvicorn", "httptools"):
        use_uvloop = True  # these candidates are defined with uvloop
    full = HttpFull(_core()) if mode == "full" else None
    _run_loop(_serve_http(kind, full, port_file), use_uvloop)


# ---------------------------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _server(name: str) -> Any:
    tmp = tempfile.TemporaryDirectory(prefix="bench-engines-")
    port_file = Path(tmp.name) / "port.json"
    log = open(Path(tmp.name) / "server.log", "w+b")  # noqa: SIM115  (closed in finally)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", name, "--port-file", str(port_file)],
        cwd=bc.REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.stat().st_size):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"{name} did not start:\n{log.read().decode()[-3000:]}")
            time.sleep(0.05)
        yield proc, json.loads(port_file.read_text())["port"]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        tmp.cleanup()


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import tritonclient

    out: dict[str, Any] = {"module": tritonclient.__file__}
    if spec["case"] == "c1":
        out.update(bs.case_c1(spec["protocol"], spec["url"], spec["seconds"]))
    else:
        out.update(bc.case_aio(spec["protocol"], spec["url"], spec["seconds"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="comma-separated candidate names")
    parser.add_argument("--cases", default="c1,c8")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port-file", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        sys.path.insert(0, str(bc.REPO))
        serve(args.serve, Path(args.port_file))
        return 0
    if args.worker:
        json.dump(worker(json.loads(args.worker)), sys.stdout)
        return 0
    if args.quick:
        args.seconds, args.rounds = 0.5, 1
    names = args.only.split(",") if args.only else HTTP_CANDIDATES + GRPC_CANDIDATES
    cases = args.cases.split(",")
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(_server(name)) for name in names}
        for round_ in range(args.rounds):
            for name in names:
                proc, port = servers[name]
                protocol = "grpc" if name.startswith("grpc") else "http"
                for case in cases:
                    cpu0 = bs.tree_cpu_seconds(proc.pid)
                    res = bc.run_worker(
                        sys.executable,
                        {
                            "case": case,
                            "protocol": protocol,
                            "url": f"127.0.0.1:{port}",
                            "seconds": args.seconds,
                        },
                        True,
                        script=__file__,
                    )
                    cpu = bs.tree_cpu_seconds(proc.pid) - cpu0
                    results.setdefault((name, case), []).append(
                        (res["rps"], cpu / res["requests"] * 1e6)
                    )
            print(f"  round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"\nEngines, {args.rounds} interleaved round(s) of {args.seconds} s; medians")
    print(f"({os.cpu_count()} CPUs; this project's client; server CPU includes stub processes)")
    header = f"{'candidate':30}"
    for case in cases:
        header += f" {case + ' req/s':>11} {case + ' us CPU':>11}"
    print(header)
    for name in names:
        line = f"{name:30}"
        for case in cases:
            runs = results[(name, case)]
            line += f" {statistics.median(r[0] for r in runs):11.0f}"
            line += f" {statistics.median(r[1] for r in runs):11.0f}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
