"""``tritonclient.http.aio`` (aiohttp) against the bundled server, in process."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tritonclient.http.aio as aioclient
from mock_server.app import BUNDLED_MODELS, MockServer
from mock_server.core.server import ModelControlMode, ServerOptions
from shm import posix
from tests.test_http_client import AUTH, IDENTITY, _RawServer, frontend, simple_inputs, slow_input
from tests.tls import make_tls_files
from tritonclient.http.aio.auth import BasicAuth
from tritonclient.utils import InferenceServerException


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True), frontend()
    ) as server:
        yield server.http_url.split("://")[-1]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_exports() -> None:
    for name in ("InferInput", "InferRequestedOutput", "InferResult", "InferenceServerException"):
        assert hasattr(aioclient, name)
    assert aioclient.InferInput is __import__("tritonclient.http").http.InferInput


def test_endpoints(url: str) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(url) as client:
            assert await client.is_server_live() and await client.is_server_ready()
            assert await client.is_model_ready("simple", "1")
            assert not await client.is_model_ready("nope")
            meta = await client.get_server_metadata(query_params={"a": 1})
            assert "binary_tensor_data" in meta["extensions"]
            assert (await client.get_model_metadata("simple"))["name"] == "simple"
            assert (await client.get_model_config("simple"))["max_batch_size"] == 8
            assert isinstance(await client.get_model_repository_index(), list)
            stats = await client.get_inference_statistics("simple", "1")
            assert stats["model_stats"][0]["name"] == "simple"
            assert "trace_level" in await client.get_trace_settings()
            assert (await client.update_trace_settings(settings={"trace_rate": "3"}))[
                "trace_rate"
            ] == "3"
            await client.update_trace_settings(settings={"trace_rate": None})
            log = await client.get_log_settings()
            assert (await client.update_log_settings({"log_info": log["log_info"]}))[
                "log_info"
            ] == (log["log_info"])
            assert await client.get_cuda_shared_memory_status() == []
            await client.unregister_cuda_shared_memory()
            with pytest.raises(InferenceServerException):
                await client.register_cuda_shared_memory("c", b"eHh4", 0, 3)

    run(main())


def test_load_unload(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BUNDLED_MODELS / "simple", repo / "simple")
    options = ServerOptions(model_repository=[repo], model_control_mode=ModelControlMode.EXPLICIT)

    async def main(url: str) -> None:
        async with aioclient.InferenceServerClient(url) as client:
            assert not await client.is_model_ready("simple")
            await client.load_model("simple")
            assert await client.is_model_ready("simple")
            config = await client.get_model_config("simple")
            await client.load_model("simple", config=json.dumps(config))
            await client.unload_model("simple", unload_dependents=True)
            for _ in range(500):
                if not await client.is_model_ready("simple"):
                    break
                await asyncio.sleep(0.02)
            assert not await client.is_model_ready("simple")

    with MockServer(options, frontend()) as server:
        run(main(server.http_url.split("://")[-1]))


def test_infer_all_kinds(url: str) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(url) as client:
            for binary in (True, False):
                inputs, a = simple_inputs(binary)
                out = [aioclient.InferRequestedOutput("OUTPUT0", binary_data=binary)]
                result = await client.infer("simple", inputs, outputs=out, request_id="q")
                assert np.array_equal(result.as_numpy("OUTPUT0"), a + 1)
                assert result.get_response()["id"] == "q"
            for datatype, array in IDENTITY:
                inp = aioclient.InferInput("INPUT0", list(array.shape), datatype)
                inp.set_data_from_numpy(array)
                got = (await client.infer(f"identity_{datatype.lower()}", [inp])).as_numpy(
                    "OUTPUT0"
                )
                if datatype == "BYTES":
                    assert list(got.ravel()) == list(array.ravel())
                else:
                    np.testing.assert_array_equal(got, array)
            values = [0, 11, 7, 5, 3, 2, 0, 1]
            got_seq = []
            sequence_id = f"aio-{uuid.uuid4()}"
            for i, v in enumerate(values):
                inp = aioclient.InferInput("INPUT", [1, 1], "INT32")
                inp.set_data_from_numpy(np.array([[v]], dtype=np.int32))
                r = await client.infer(
                    "simple_sequence",
                    [inp],
                    sequence_id=sequence_id,
                    sequence_start=i == 0,
                    sequence_end=i == len(values) - 1,
                )
                got_seq.append(int(r.as_numpy("OUTPUT")[0][0]))
            assert got_seq == [1, 11, 7, 5, 3, 2, 0, 1]
            cls = aioclient.InferRequestedOutput("OUTPUT0", class_count=2)
            r = await client.infer("simple", simple_inputs()[0], outputs=[cls])
            assert list(r.as_numpy("OUTPUT0").ravel()) == [b"16:15", b"15:14"]
            for req in (None, "gzip", "deflate"):
                for resp in (None, "gzip", "deflate"):
                    inputs, a = simple_inputs()
                    r = await client.infer(
                        "simple",
                        inputs,
                        request_compression_algorithm=req,
                        response_compression_algorithm=resp,
                    )
                    assert np.array_equal(r.as_numpy("OUTPUT1"), a - 1)

    run(main())


def test_errors(url: str) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(url) as client:
            with pytest.raises(InferenceServerException) as info:
                await client.infer("nope", simple_inputs()[0])
            assert info.value.status() == "404"
            bad = aioclient.InferInput("INPUT0", [1, 16], "FP32")
            bad.set_data_from_numpy(np.zeros((1, 16), np.float32))
            with pytest.raises(InferenceServerException) as info:
                await client.infer("simple", [bad, simple_inputs()[0][1]])
            assert info.value.status() == "400"
            with pytest.raises(InferenceServerException, match="version must be a string"):
                await client.is_model_ready("simple", 1)  # type: ignore[arg-type]
        with pytest.raises(InferenceServerException, match="closed"):
            await client.is_server_live()
        for status, body, match in (
            (500, b"<html>oops</html>", "oops"),
            (503, b"", "empty response"),
        ):
            with _RawServer(status, body) as raw_url:
                async with aioclient.InferenceServerClient(raw_url) as raw:
                    with pytest.raises(InferenceServerException, match=match) as info:
                        await raw.get_server_metadata()
                    assert info.value.status() == str(status)

    run(main())


def test_many_parallel(url: str) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(url, conn_limit=16) as client:
            inputs, _ = simple_inputs()
            results = await asyncio.gather(
                *[client.infer("simple", inputs, request_id=str(i)) for i in range(64)]
            )
            assert [r.get_response()["id"] for r in results] == [str(i) for i in range(64)]
            started = time.monotonic()
            slow = await asyncio.gather(*[client.infer("slow", slow_input(50)) for _ in range(4)])
            assert [int(r.as_numpy("OUTPUT0")[0]) for r in slow] == [50] * 4
            assert time.monotonic() - started < 30

    run(main())


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # the first loop's socket, at GC
def test_constructed_outside_loop_and_reused_across_loops(url: str) -> None:
    client = aioclient.InferenceServerClient(url)
    assert asyncio.run(client.is_server_live())
    assert asyncio.run(client.is_server_ready())  # a second event loop
    asyncio.run(client.close())


def test_plugin_and_basic_auth() -> None:
    options = frontend(http_restricted_api={"model-repository": ("authorization", AUTH)})

    async def main(url: str) -> None:
        async with aioclient.InferenceServerClient(url) as client:
            with pytest.raises(InferenceServerException, match="restricted"):
                await client.get_model_repository_index()
            client.register_plugin(BasicAuth("user", "secret"))
            assert isinstance(await client.get_model_repository_index(), list)
            client.unregister_plugin()
            await client.get_model_repository_index(headers={"authorization": AUTH})

    with MockServer(ServerOptions(model_repository=[BUNDLED_MODELS]), options) as server:
        run(main(server.http_url.split("://")[-1]))


def test_https(tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path)
    options = frontend(http_ssl_cert=str(tls.server_cert), http_ssl_key=str(tls.server_key))

    async def main(url: str) -> None:
        context = ssl.create_default_context(cafile=str(tls.ca_cert))
        async with aioclient.InferenceServerClient(url, ssl=True, ssl_context=context) as client:
            assert await client.is_server_live()
            inputs, a = simple_inputs()
            result = await client.infer("simple", inputs)
            assert np.array_equal(result.as_numpy("OUTPUT0"), a + 1)
        async with aioclient.InferenceServerClient(url, ssl=True) as client:
            with pytest.raises(Exception, match="certificate"):
                await client.is_server_live()

    with MockServer(ServerOptions(model_repository=[BUNDLED_MODELS]), options) as server:
        run(main(server.http_url.split("://")[-1]))


def test_system_shared_memory(url: str) -> None:
    key = f"/tc_aio_{uuid.uuid4().hex[:8]}"
    region = posix.create(key, 256)

    async def main() -> None:
        a = np.arange(16, dtype=np.int32)
        region.buffer[:64] = a.tobytes()
        region.buffer[64:128] = np.ones(16, np.int32).tobytes()
        async with aioclient.InferenceServerClient(url) as client:
            await client.register_system_shared_memory("aio_region", key, 256)
            try:
                status = await client.get_system_shared_memory_status("aio_region")
                assert status[0]["byte_size"] == 256
                i0 = aioclient.InferInput("INPUT0", [1, 16], "INT32")
                i0.set_shared_memory("aio_region", 64)
                i1 = aioclient.InferInput("INPUT1", [1, 16], "INT32")
                i1.set_shared_memory("aio_region", 64, offset=64)
                o0 = aioclient.InferRequestedOutput("OUTPUT0")
                o0.set_shared_memory("aio_region", 64, offset=128)
                result = await client.infer("simple", [i0, i1], outputs=[o0])
                assert result.as_numpy("OUTPUT0") is None
                got = np.frombuffer(bytes(region.buffer[128:192]), np.int32)
                assert np.array_equal(got, a + 1)
            finally:
                await client.unregister_system_shared_memory("aio_region")
            assert await client.get_system_shared_memory_status() == []

    try:
        run(main())
    finally:
        region.close()
        posix.unlink(key)
    assert not Path("/dev/shm" + key).exists()


def test_large_binary_round_trip_and_concurrent_results(url: str) -> None:
    out = [aioclient.InferRequestedOutput("OUTPUT0", binary_data=True)]

    def identity(nbytes: int, seed: int) -> tuple[aioclient.InferInput, np.ndarray]:
        x = np.random.default_rng(seed).integers(0, 256, (1, nbytes), dtype=np.uint8)
        inp = aioclient.InferInput("INPUT0", list(x.shape), "UINT8").set_data_from_numpy(x)
        return inp, x

    async def main() -> None:
        async with aioclient.InferenceServerClient(url, conn_limit=4) as client:
            inp, x = identity((6 << 20) + 3, 0)
            got = (await client.infer("identity_uint8", [inp], outputs=out)).as_numpy("OUTPUT0")
            np.testing.assert_array_equal(got, x)
            pairs = [identity(500 + 31 * i, i) for i in range(24)]
            results = await asyncio.gather(
                *[client.infer("identity_uint8", [p[0]], outputs=out) for p in pairs]
            )
            for result, (_, x) in zip(results, pairs, strict=True):
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)

    run(main())


def test_timeout_bounds_the_call(url: str) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(url, conn_timeout=0.3) as client:
            started = time.monotonic()
            with pytest.raises(InferenceServerException) as info:
                await client.infer("slow", slow_input(1500))
            assert isinstance(info.value, TimeoutError)
            assert time.monotonic() - started < 1.4
            result = await client.infer("slow", slow_input(10))
            assert int(result.as_numpy("OUTPUT0")[0]) == 10

    run(main())


def test_a_large_body_is_sent_from_its_buffers_with_its_length() -> None:
    # The aio transport writes the JSON header and each input's buffer as they are; the
    # request must still carry a Content-Length (Triton does not take chunked bodies).
    import asyncio

    from tritonclient.http import _common

    heads: list[bytes] = []
    sizes: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        length = int(
            next(
                line.split(b":", 1)[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
        )
        sizes.append(len(await reader.readexactly(length)))
        writer.write(b'HTTP/1.1 400 Bad Request\r\nContent-Length: 17\r\n\r\n{"error":"nope"}\n')
        await writer.drain()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            client = aioclient.InferenceServerClient(f"127.0.0.1:{port}")
            data = np.zeros(_common._CHUNKS_FROM, dtype=np.uint8)
            item = aioclient.InferInput("X", [data.size], "UINT8")
            item.set_data_from_numpy(data)
            with pytest.raises(InferenceServerException, match="nope"):
                await asyncio.wait_for(client.infer("m", [item]), 30)
            await client.close()

    asyncio.run(main())
    (head,) = heads
    assert b"transfer-encoding" not in head.lower()
    assert sizes[0] > _common._CHUNKS_FROM


# -- the lean path: plain-HTTP requests with a body of one piece, on asyncio protocols ---------


class _CountingServer:
    """Answers ``POST``/``GET`` with an empty 200 after ``delay`` seconds; counts connections,
    the most open at once, and (with ``close_after``) closes each connection after that many
    answers."""

    def __init__(self, delay: float = 0.0, close_after: int | None = None) -> None:
        self.delay = delay
        self.close_after = close_after
        self.connections = 0
        self.open = 0
        self.most_open = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        answered = 0
        try:
            while self.close_after is None or answered < self.close_after:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                self.requests.append(head.split(b" ", 1)[0])
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":", 1)[1]))
                await asyncio.sleep(self.delay)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                answered += 1
        finally:
            self.open -= 1
            writer.close()


def _with_counting_server(counting: _CountingServer, conn_limit: int, work: Any) -> None:
    """Run ``await work(client)`` with a client of a counting server on a free port."""

    async def main() -> None:
        server = await asyncio.start_server(counting.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with (
            server,
            aioclient.InferenceServerClient(f"127.0.0.1:{port}", conn_limit=conn_limit) as client,
        ):
            await work(client)

    run(main())


def test_lean_path_keeps_connections_and_their_limit() -> None:
    counting = _CountingServer(delay=0.05)

    async def work(client: aioclient.InferenceServerClient) -> None:
        await asyncio.gather(*[client.unload_model("m") for _ in range(8)])
        for _ in range(4):  # one after another: the kept-alive connections again
            await client.unload_model("m")

    _with_counting_server(counting, 2, work)
    assert counting.most_open == 2  # never more than conn_limit at once
    assert counting.connections == 2  # and kept alive between requests
    assert len(counting.requests) == 12


def test_lean_path_replaces_connections_the_server_closed() -> None:
    counting = _CountingServer(close_after=1)

    async def work(client: aioclient.InferenceServerClient) -> None:
        for _ in range(3):
            await client.unload_model("m")  # POST: the closed connection is not used
            await asyncio.sleep(0.05)
        assert await client.is_server_live()  # GET

    _with_counting_server(counting, 100, work)
    assert counting.requests == [b"POST", b"POST", b"POST", b"GET"]
    assert counting.connections == 4


def test_lean_path_cancelled_request_leaves_the_client_usable() -> None:
    counting = _CountingServer(delay=0.5)

    async def work(client: aioclient.InferenceServerClient) -> None:
        task = asyncio.ensure_future(client.unload_model("m"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the cancelled request's connection is closed, its slot free again
        counting.delay = 0.0
        await asyncio.wait_for(client.unload_model("m"), 5)

    _with_counting_server(counting, 1, work)
    assert counting.connections == 2


def test_lean_path_reads_a_large_answer_into_one_buffer() -> None:
    """A small request whose answer is large (more than 1 MiB, in many reads): the body is
    read into one buffer, byte for byte; a body cut short is an error, not a result."""
    payload = bytes(range(256)) * (3 << 12)  # 3 MiB
    cut = [False]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload))
            for start in range(0, len(payload), 100_000):
                if cut[0] and start > len(payload) // 2:
                    writer.close()
                    return
                writer.write(payload[start : start + 100_000])
                await writer.drain()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, aioclient.InferenceServerClient(f"127.0.0.1:{port}") as client:
            call = client._c_get("/v2", None, None, lambda reply: reply)
            reply = await client._transport.send(call)
            assert reply.status == 200 and bytes(reply.body) == payload
            cut[0] = True
            with pytest.raises(InferenceServerException, match="connection"):
                await client._transport.send(client._c_get("/v2", None, None, lambda r: r))

    run(main())
