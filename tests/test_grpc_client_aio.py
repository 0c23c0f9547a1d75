"""``tritonclient.grpc.aio.InferenceServerClient`` end to end against the bundled server."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import ml_dtypes
import numpy as np
import pytest

import tritonclient.grpc.aio as aioclient
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from shm import posix
from tritonclient.utils import InferenceServerException

T = 20.0
R = TypeVar("R")


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    frontend = FrontendOptions(
        http_port=0, grpc_port=0, metrics_port=0, allow_http=False, allow_metrics=False
    )
    with MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True), frontend
    ) as s:
        yield s


def run(server: MockServer, body: Callable[[aioclient.InferenceServerClient], Awaitable[R]]) -> R:
    async def main() -> R:
        async with aioclient.InferenceServerClient(server.grpc_url) as client:
            return await asyncio.wait_for(body(client), T)

    return asyncio.run(main())


def _simple_inputs(a: np.ndarray | None = None) -> list[aioclient.InferInput]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16) if a is None else a
    b = np.ones((1, 16), dtype=np.int32)
    return [
        aioclient.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(a),
        aioclient.InferInput("INPUT1", [1, 16], "INT32").set_data_from_numpy(b),
    ]


def _repeat_inputs(values: list[int], delay_ms: int = 0) -> list[aioclient.InferInput]:
    return [
        aioclient.InferInput("IN", [len(values)], "INT32").set_data_from_numpy(
            np.array(values, np.int32)
        ),
        aioclient.InferInput("DELAY", [len(values)], "UINT32").set_data_from_numpy(
            np.full(len(values), delay_ms, np.uint32)
        ),
        aioclient.InferInput("WAIT", [1], "UINT32").set_data_from_numpy(np.zeros(1, np.uint32)),
    ]


def test_unary_methods(server: MockServer) -> None:
    async def body(c: aioclient.InferenceServerClient) -> None:
        assert await c.is_server_live() is True
        assert await c.is_server_ready(client_timeout=T) is True
        assert await c.is_model_ready("simple") is True
        assert (await c.get_server_metadata()).name == "triton"
        assert (await c.get_model_metadata("simple", as_json=True))["name"] == "simple"
        assert (await c.get_model_config("simple")).config.max_batch_size == 8
        index = await c.get_model_repository_index(as_json=True)
        assert any(m["name"] == "simple" for m in index["models"])
        await c.infer("simple", _simple_inputs())
        stats = await c.get_inference_statistics("simple")
        assert stats.model_stats[0].inference_count >= 1
        assert "settings" in await c.get_trace_settings(as_json=True)
        updated = await c.update_trace_settings("simple", {"trace_rate": "5"})
        assert list(updated.settings["trace_rate"].value) == ["5"]
        await c.update_trace_settings("simple", {"trace_rate": None})
        logs = await c.update_log_settings({"log_verbose_level": 1}, as_json=True)
        assert logs["settings"]["log_verbose_level"]["uint32_param"] == 1
        await c.update_log_settings({"log_verbose_level": 0})
        assert "settings" in await c.get_log_settings(as_json=True)
        assert (await c.get_cuda_shared_memory_status(as_json=True)).get("regions", {}) == {}
        with pytest.raises(InferenceServerException):
            await c.register_cuda_shared_memory("c", base64.b64encode(b"\0" * 64), 0, 64)
        await c.unregister_cuda_shared_memory()
        with pytest.raises(InferenceServerException) as e:
            await c.get_model_config("no_such_model")
        assert e.value.status() == "StatusCode.NOT_FOUND"

    run(server, body)


def test_infer_datatypes(server: MockServer) -> None:
    cases = {
        "bf16": ("BF16", np.array([[1.5, -2.0]], ml_dtypes.bfloat16)),
        "bytes": ("BYTES", np.array([[b"x", b"\x00y"]], np.object_)),
        "uint64": ("UINT64", np.array([[2**64 - 1, 0]], np.uint64)),
        "bool": ("BOOL", np.array([[True, False]])),
    }

    async def body(c: aioclient.InferenceServerClient) -> None:
        for model, (datatype, data) in cases.items():
            inp = aioclient.InferInput("INPUT0", list(data.shape), datatype)
            inp.set_data_from_numpy(data)
            result = await c.infer(f"identity_{model}", [inp], compression_algorithm="gzip")
            out = result.as_numpy("OUTPUT0")
            assert out is not None and out.dtype == data.dtype
            np.testing.assert_array_equal(out, data)

    run(server, body)


def test_large_infer_goes_as_a_one_message_stream(
    server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both gRPC clients send a large request as a one-message client stream (released once
    # sent); the answer is the same as for a unary call.
    from tritonclient._transport import grpc as transport

    n = transport.LARGE_REQUEST_BYTES + 3
    x = np.random.default_rng(2).integers(0, 256, (1, n), dtype=np.uint8)
    used: list[str] = []

    async def body(c: aioclient.InferenceServerClient) -> None:
        methods = c._transport._methods
        original = methods.infer_stream_unary

        def spy(*args: Any, **kwargs: Any) -> Any:
            used.append("stream_unary")
            return original(*args, **kwargs)

        monkeypatch.setattr(methods, "infer_stream_unary", spy)
        inp = aioclient.InferInput("INPUT0", [1, n], "UINT8").set_data_from_numpy(x)
        result = await c.infer("identity_uint8", [inp])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
        small = aioclient.InferInput("INPUT0", [1, 4], "UINT8")
        small.set_data_from_numpy(x[:, :4].copy())
        await c.infer("identity_uint8", [small])

    run(server, body)
    assert used == ["stream_unary"]


def test_sequence_string_id(server: MockServer) -> None:
    async def body(c: aioclient.InferenceServerClient) -> list[int]:
        got = []
        values = [0, 11, 7, 5, 3, 2, 0, 1]
        for n, v in enumerate(values):
            inp = aioclient.InferInput("INPUT", [1, 1], "INT32")
            inp.set_data_from_numpy(np.array([[v]], np.int32))
            r = await c.infer(
                "simple_sequence",
                [inp],
                sequence_id="aio-seq",
                sequence_start=n == 0,
                sequence_end=n == len(values) - 1,
            )
            got.append(int(r.as_numpy("OUTPUT")[0][0]))  # type: ignore[index]
        return got

    assert run(server, body) == [1, 11, 7, 5, 3, 2, 0, 1]


def test_client_timeout(server: MockServer) -> None:
    async def body(c: aioclient.InferenceServerClient) -> None:
        i0 = aioclient.InferInput("INPUT0", [1], "INT32").set_data_from_numpy(
            np.array([1], np.int32)
        )
        d = aioclient.InferInput("DELAY_MS", [1], "UINT32").set_data_from_numpy(
            np.array([3000], np.uint32)
        )
        with pytest.raises(InferenceServerException) as e:
            await c.infer("slow", [i0, d], client_timeout=0.2)
        assert e.value.message() == "Deadline Exceeded"
        assert e.value.status() == "StatusCode.DEADLINE_EXCEEDED"

    run(server, body)


def test_stream_infer_decoupled(server: MockServer) -> None:
    async def body(c: aioclient.InferenceServerClient) -> list[Any]:
        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {
                "model_name": "repeat_int32",
                "inputs": _repeat_inputs([1, 2, 3]),
                "request_id": "x",
                "enable_empty_final_response": True,
            }
            yield {"model_name": "no_such_model", "inputs": _simple_inputs(), "request_id": "e"}
            yield {"model_name": "simple", "inputs": _simple_inputs(), "request_id": "s"}

        items = []
        async for result, error in c.stream_infer(requests(), stream_timeout=T):
            items.append((result, error))
        return items

    items = run(server, body)
    assert len(items) == 6
    errors = [e for _, e in items if e is not None]
    assert len(errors) == 1 and "no_such_model" in str(errors[0])
    by_id: dict[str, list[Any]] = {}
    for r, _ in items:
        if r is not None:
            by_id.setdefault(r.get_response().id, []).append(r)
    assert [int(r.as_numpy("OUT")[0]) for r in by_id["x"][:3]] == [1, 2, 3]
    assert by_id["x"][3].get_response().parameters["triton_final_response"].bool_param
    assert by_id["s"][0].as_numpy("OUTPUT0") is not None


def test_stream_infer_bad_iterator_raises_its_error(server: MockServer) -> None:
    async def body(c: aioclient.InferenceServerClient) -> None:
        async def requests() -> AsyncIterator[Any]:
            yield {"model_name": "simple", "inputs": _simple_inputs()}
            raise ValueError("broken input source")

        with pytest.raises(ValueError, match="broken input source"):
            async for _ in c.stream_infer(requests()):
                pass

        async def wrong() -> AsyncIterator[Any]:
            yield ["not", "a", "dict"]

        with pytest.raises(InferenceServerException, match="not yielding a dict"):
            async for _ in c.stream_infer(wrong()):
                pass

    run(server, body)


def test_stream_infer_cancel(server: MockServer) -> None:
    async def body(c: aioclient.InferenceServerClient) -> int:
        stop = asyncio.Event()

        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {"model_name": "repeat_int32", "inputs": _repeat_inputs(list(range(50)), 100)}
            await stop.wait()

        responses = c.stream_infer(requests())
        count = 0
        # As NVIDIA's: the read after a successful cancel() raises CancelledError (Triton's
        # QA, L0_request_cancellation), the next one ends the iteration.
        with pytest.raises(asyncio.CancelledError):
            async for _result, error in responses:
                assert error is None
                count += 1
                if count == 2:
                    assert responses.cancel()
        with pytest.raises(StopAsyncIteration):
            await responses.__anext__()
        assert not responses.cancel()  # already cancelled: nothing more to cancel
        stop.set()
        return count

    assert run(server, body) == 2


def test_plugin_and_system_shared_memory(server: MockServer) -> None:
    key = f"/grpc_aio_test_{uuid.uuid4().hex[:8]}"
    region = posix.create(key, 128)
    try:

        async def body(c: aioclient.InferenceServerClient) -> None:
            c.register_plugin(aioclient.auth.BasicAuth("u", "p"))
            assert isinstance(c.plugin(), aioclient.auth.BasicAuth)
            await c.register_system_shared_memory("r", key, 128)
            status = await c.get_system_shared_memory_status("r", as_json=True)
            assert status["regions"]["r"]["key"] == key
            np.frombuffer(region.buffer, np.int32, count=32)[:] = 7
            i0 = aioclient.InferInput("INPUT0", [1, 16], "INT32").set_shared_memory("r", 64)
            i1 = aioclient.InferInput("INPUT1", [1, 16], "INT32").set_shared_memory(
                "r", 64, offset=64
            )
            out = (await c.infer("simple", [i0, i1])).as_numpy("OUTPUT0")
            np.testing.assert_array_equal(out, np.full((1, 16), 14, np.int32))
            await c.unregister_system_shared_memory("r")
            assert not (await c.get_system_shared_memory_status()).regions
            c.unregister_plugin()

        run(server, body)
    finally:
        region.close()
        posix.unlink(key)
