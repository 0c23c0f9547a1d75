"""The gRPC clients against NVIDIA's real Triton server (scripts/peers.sh installs it).

See ``tests/peers.py`` for how the peer server is found and run.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tests.peers import (
    RunningTritonServer,
    copy_repository_for_triton,
    find_tritonserver,
    run_tritonserver,
)
from tritonclient.utils import InferenceServerException

INSTALL = find_tritonserver()
pytestmark = pytest.mark.triton_peer
REPO = Path(__file__).resolve().parent.parent / "mock_server" / "models"
T = 30.0


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTritonServer]:
    assert INSTALL is not None
    repo = copy_repository_for_triton(REPO, tmp_path_factory.mktemp("triton") / "models")
    with run_tritonserver(INSTALL, repo, startup_timeout=120) as running:
        yield running


def _simple_inputs() -> list[grpcclient.InferInput]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    return [
        grpcclient.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(a),
        grpcclient.InferInput("INPUT1", [1, 16], "INT32").set_data_from_numpy(np.ones_like(a)),
    ]


def _repeat_inputs(values: list[int]) -> list[grpcclient.InferInput]:
    n = len(values)
    return [
        grpcclient.InferInput("IN", [n], "INT32").set_data_from_numpy(np.array(values, np.int32)),
        grpcclient.InferInput("DELAY", [n], "UINT32").set_data_from_numpy(np.zeros(n, np.uint32)),
        grpcclient.InferInput("WAIT", [1], "UINT32").set_data_from_numpy(np.zeros(1, np.uint32)),
    ]


def test_health_metadata_infer(triton: RunningTritonServer) -> None:
    with grpcclient.InferenceServerClient(triton.grpc_url) as c:
        assert c.is_server_live(client_timeout=T) and c.is_server_ready(client_timeout=T)
        assert c.is_model_ready("simple")
        assert c.get_server_metadata().name == "triton"
        assert c.get_model_config("simple", as_json=True)["config"]["name"] == "simple"
        result = c.infer("simple", _simple_inputs(), client_timeout=T)
        np.testing.assert_array_equal(
            result.as_numpy("OUTPUT0"), np.arange(16, dtype=np.int32).reshape(1, 16) + 1
        )
        with pytest.raises(InferenceServerException) as e:
            c.infer("no_such_model", _simple_inputs())
        assert str(e.value.status()).startswith("StatusCode.")


@pytest.mark.parametrize(
    ("model", "datatype", "data"),
    [
        ("identity_bf16", "BF16", np.array([[1.5, -2.0]], ml_dtypes.bfloat16)),
        ("identity_bytes", "BYTES", np.array([[b"a", b"\x00b"]], np.object_)),
        ("identity_fp16", "FP16", np.array([[1.5, -2.0]], np.float16)),
    ],
)
def test_identity(triton: RunningTritonServer, model: str, datatype: str, data: Any) -> None:
    with grpcclient.InferenceServerClient(triton.grpc_url) as c:
        inp = grpcclient.InferInput("INPUT0", list(data.shape), datatype)
        inp.set_data_from_numpy(data)
        out = c.infer(model, [inp], client_timeout=T).as_numpy("OUTPUT0")
        assert out is not None and out.dtype == data.dtype
        np.testing.assert_array_equal(out, data)


def test_stream_empty_final_response(triton: RunningTritonServer) -> None:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with grpcclient.InferenceServerClient(triton.grpc_url) as c:
        c.start_stream(lambda result, error: got.put((result, error)), stream_timeout=T)
        c.async_stream_infer(
            "repeat_int32", _repeat_inputs([3, 4]), request_id="r", enable_empty_final_response=True
        )
        items = [got.get(timeout=T) for _ in range(3)]
        c.stop_stream()
    assert all(e is None for _, e in items)
    assert [int(r.as_numpy("OUT")[0]) for r, _ in items[:2]] == [3, 4]
    assert items[2][0].get_response().parameters["triton_final_response"].bool_param


def test_aio_infer_and_stream(triton: RunningTritonServer) -> None:
    async def main() -> list[Any]:
        async with aioclient.InferenceServerClient(triton.grpc_url) as c:
            assert await c.is_server_live()
            r = await c.infer("simple", _simple_inputs(), client_timeout=T)
            assert r.as_numpy("OUTPUT1") is not None

            async def requests() -> AsyncIterator[dict[str, Any]]:
                yield {"model_name": "repeat_int32", "inputs": _repeat_inputs([5])}

            return [item async for item in c.stream_infer(requests(), stream_timeout=T)]

    items = asyncio.run(asyncio.wait_for(main(), 2 * T))
    assert len(items) == 1 and items[0][1] is None
    assert int(items[0][0].as_numpy("OUT")[0]) == 5


def _slow_inputs(delay_ms: int) -> list[grpcclient.InferInput]:
    value = np.array([7], np.int32)
    delay = np.array([delay_ms], np.uint32)
    return [
        grpcclient.InferInput("INPUT0", [1], "INT32").set_data_from_numpy(value),
        grpcclient.InferInput("DELAY_MS", [1], "UINT32").set_data_from_numpy(delay),
    ]


def _assert_nvidias_deadline_error(item: Any) -> None:
    # Triton's QA tells errors from results with an exact type comparison.
    assert type(item) == InferenceServerException  # noqa: E721 - what the QA test compares
    assert item.status() == "StatusCode.DEADLINE_EXCEEDED"
    assert item.message() == "Deadline Exceeded"


def test_deadlines_reach_the_callbacks_as_nvidias(triton: RunningTritonServer) -> None:
    """Triton's ``qa/L0_client_timeout/client_infer_timeout_test.py``: a request that takes
    longer than ``client_timeout`` (``async_infer``) or ``stream_timeout`` (the stream) gives
    the callback NVIDIA's "Deadline Exceeded" error, and a request in time its result."""
    completed: queue.Queue[Any] = queue.Queue()

    def callback(result: Any, error: Any) -> None:
        completed.put(error if error else result)

    with grpcclient.InferenceServerClient(triton.grpc_url) as c:
        c.async_infer("slow", _slow_inputs(3000), callback, client_timeout=2.0)
        _assert_nvidias_deadline_error(completed.get(timeout=T))
        c.start_stream(callback, stream_timeout=1)
        c.async_stream_infer("slow", _slow_inputs(3000))
        _assert_nvidias_deadline_error(completed.get(timeout=T))
        c.stop_stream()
        c.async_infer("slow", _slow_inputs(0), callback, client_timeout=T)
        result = completed.get(timeout=T)
        assert type(result) != InferenceServerException  # noqa: E721
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [7])
        with pytest.raises(InferenceServerException) as raised:
            c.infer("slow", _slow_inputs(3000), client_timeout=0.5)
        _assert_nvidias_deadline_error(raised.value)

    async def aio() -> None:
        async with aioclient.InferenceServerClient(triton.grpc_url) as c:
            with pytest.raises(InferenceServerException) as raised:
                await c.infer("slow", _slow_inputs(3000), client_timeout=0.5)
            _assert_nvidias_deadline_error(raised.value)

            async def requests() -> AsyncIterator[dict[str, Any]]:
                yield {"model_name": "slow", "inputs": _slow_inputs(3000)}

            with pytest.raises(InferenceServerException) as raised:
                async for _ in c.stream_infer(requests(), stream_timeout=0.5):
                    pytest.fail("a response after the stream's deadline")
            _assert_nvidias_deadline_error(raised.value)

    asyncio.run(asyncio.wait_for(aio(), 2 * T))


def test_aio_stream_cancelled_raises_cancelled_error(triton: RunningTritonServer) -> None:
    """Triton's ``qa/L0_request_cancellation/grpc_cancellation_test.py``
    (``test_aio_grpc_stream_infer``): once ``cancel()`` returned True, iterating the responses
    raises ``asyncio.CancelledError``; the next read ends the iteration, as with NVIDIA's."""

    async def main() -> None:
        async with aioclient.InferenceServerClient(triton.grpc_url) as c:
            release = asyncio.Event()

            async def requests() -> AsyncIterator[dict[str, Any]]:
                yield {"model_name": "slow", "inputs": _slow_inputs(3000)}
                await release.wait()

            responses = c.stream_infer(requests())
            assert responses.cancel()
            with pytest.raises(asyncio.CancelledError):
                async for _ in responses:
                    pytest.fail("a response after cancel()")
            with pytest.raises(StopAsyncIteration):
                await responses.__anext__()
            release.set()
            result = await c.infer("slow", _slow_inputs(0), client_timeout=T)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [7])

    asyncio.run(asyncio.wait_for(main(), 2 * T))


def test_infer_over_stream_equals_the_unary_calls(triton: RunningTritonServer) -> None:
    """``infer_over_stream`` (issue 33) on Triton 2.51: the results and errors of the unary
    calls, the caller's request id included (``tests/test_grpc_client_over_stream.py`` has the
    cases; Triton prefixes errors with the request id it saw, ``<id_unknown>`` for none)."""
    from tests.test_grpc_client_over_stream import CALLS, ERRORS, _same_result, _sequence_kwargs

    with (
        grpcclient.InferenceServerClient(triton.grpc_url) as unary,
        grpcclient.InferenceServerClient(triton.grpc_url, infer_over_stream=True) as streamed,
    ):
        for model, inputs, kwargs in CALLS:
            extra = _sequence_kwargs(model, 51)
            u = unary.infer(model, inputs(), client_timeout=T, **kwargs, **extra)
            s = streamed.infer(model, inputs(), client_timeout=T, **kwargs, **extra)
            _same_result(u, s)
        for model, inputs, kwargs in ERRORS:
            with pytest.raises(InferenceServerException) as u_error:
                unary.infer(model, inputs(), client_timeout=T, **kwargs)
            with pytest.raises(InferenceServerException) as s_error:
                streamed.infer(model, inputs(), client_timeout=T, **kwargs)
            u_, s_ = u_error.value, s_error.value
            assert (type(s_), s_.status(), str(s_)) == (type(u_), u_.status(), str(u_))
        with pytest.raises(InferenceServerException) as raised:
            streamed.infer("slow", _slow_inputs(1000), client_timeout=0.2)
        _assert_nvidias_deadline_error(raised.value)
        result = streamed.infer("slow", _slow_inputs(0), request_id="next", client_timeout=T)
        assert result.get_response().id == "next"

    async def aio() -> None:
        async with aioclient.InferenceServerClient(triton.grpc_url, infer_over_stream=True) as c:
            results = await asyncio.gather(
                *[c.infer("simple", _simple_inputs(), request_id=str(i)) for i in range(16)]
            )
            assert [r.get_response().id for r in results] == [str(i) for i in range(16)]
            with pytest.raises(InferenceServerException) as raised:
                await c.infer("no_such_model", _simple_inputs())
            assert raised.value.status() == "StatusCode.NOT_FOUND"

    asyncio.run(asyncio.wait_for(aio(), 2 * T))


def test_balanced_channel_against_a_real_triton(triton: RunningTritonServer) -> None:
    # Triton 2.51 answers grpc.health.v1 Check but not Watch: gRPC's health checking then
    # takes the replica as healthy (it logs one line), and calls go through.  A sequence's
    # unary calls go over a channel of their own to the replica.
    with grpcclient.InferenceServerClient(f"ipv4:{triton.grpc_url}") as c:
        for _ in range(3):
            result = c.infer("simple", _simple_inputs(), client_timeout=T)
            np.testing.assert_array_equal(
                result.as_numpy("OUTPUT0"), np.arange(16, dtype=np.int32).reshape(1, 16) + 1
            )
        for k in range(3):
            item = grpcclient.InferInput("INPUT", [1, 1], "INT32")
            item.set_data_from_numpy(np.array([[k + 5]], dtype=np.int32))
            result = c.infer(
                "simple_sequence",
                [item],
                sequence_id=4242,
                sequence_start=k == 0,
                sequence_end=k == 2,
            )
            assert int(result.as_numpy("OUTPUT")[0][0]) == k + 5 + (k == 0)
        stats = c.replica_stats()
        assert [s.address for s in stats] == [triton.grpc_url] and stats[0].in_service
        assert stats[0].requests >= 3
