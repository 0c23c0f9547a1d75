"""The gRPC clients' ``infer_over_stream`` option (issue 33): ``infer`` calls carried over one
persistent ``ModelStreamInfer`` stream must give what the unary call gives, for results and
errors, from any number of threads or tasks; a stream that breaks or a client that closes
must fail the waiting calls, never leave them hanging.

Against the bundled server; ``tests/test_grpc_client_triton.py`` compares the same with
Triton 2.51.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from tests.faults import LoopThread, TcpProxy
from tritonclient.grpc.auth import BasicAuth
from tritonclient.utils import InferenceServerException

T = 30.0  # the longest wait of any call


def _frontend() -> FrontendOptions:
    return FrontendOptions(
        http_port=0, grpc_port=0, metrics_port=0, allow_http=False, allow_metrics=False
    )


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(ServerOptions(model_repository=[BUNDLED_MODELS]), _frontend()) as s:
        yield s


@pytest.fixture(scope="module")
def pair(server: MockServer) -> Iterator[tuple[Any, Any]]:
    """A unary client and one with ``infer_over_stream``."""
    with (
        grpcclient.InferenceServerClient(server.grpc_url) as unary,
        grpcclient.InferenceServerClient(server.grpc_url, infer_over_stream=True) as streamed,
    ):
        yield unary, streamed


def _input(name: str, datatype: str, data: Any) -> grpcclient.InferInput:
    return grpcclient.InferInput(name, list(data.shape), datatype).set_data_from_numpy(data)


def _simple(a: Any = None) -> list[grpcclient.InferInput]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16) if a is None else a
    return [_input("INPUT0", "INT32", a), _input("INPUT1", "INT32", np.ones((1, 16), np.int32))]


def _slow(delay_ms: int, value: int = 7) -> list[grpcclient.InferInput]:
    return [
        _input("INPUT0", "INT32", np.array([value], np.int32)),
        _input("DELAY_MS", "UINT32", np.array([delay_ms], np.uint32)),
    ]


#: (model, inputs, keyword arguments of infer): every kind of answer the codec reads.
CALLS: list[tuple[str, Callable[[], list[Any]], dict[str, Any]]] = [
    ("simple", _simple, {}),
    ("simple", _simple, {"request_id": "my-id", "parameters": {"p": 1, "q": "x"}}),
    ("simple", _simple, {"outputs": [grpcclient.InferRequestedOutput("OUTPUT1")]}),
    ("simple", _simple, {"outputs": [grpcclient.InferRequestedOutput("OUTPUT0", class_count=2)]}),
    (
        "identity_bytes",
        lambda: [_input("INPUT0", "BYTES", np.array([[b"a", b"\x00b", "\u00e9"]], np.object_))],
        {"request_id": "b"},
    ),
    (
        "identity_bf16",
        lambda: [_input("INPUT0", "BF16", np.array([[1.5, -2.0]], ml_dtypes.bfloat16))],
        {},
    ),
    (  # a large answer: its raw contents are split off the message
        "identity_fp32",
        lambda: [_input("INPUT0", "FP32", np.arange(300_000, dtype=np.float32).reshape(2, -1))],
        {},
    ),
    ("simple_sequence", lambda: [_input("INPUT", "INT32", np.array([[5]], np.int32))], {}),
]


def _sequence_kwargs(model: str, sequence_id: int) -> dict[str, Any]:
    if model != "simple_sequence":
        return {}
    return {"sequence_id": sequence_id, "sequence_start": True, "sequence_end": True}


def _same_result(unary: Any, streamed: Any) -> None:
    assert streamed.get_response() == unary.get_response()
    assert streamed.get_response(as_json=True) == unary.get_response(as_json=True)
    for output in unary.get_response().outputs:
        u, s = unary.as_numpy(output.name), streamed.as_numpy(output.name)
        assert s.dtype == u.dtype and s.shape == u.shape
        assert s.tobytes() == u.tobytes() or np.array_equal(s, u)


@pytest.mark.parametrize(("model", "inputs", "kwargs"), CALLS)
def test_results_equal_the_unary_calls(
    pair: tuple[Any, Any], model: str, inputs: Callable[[], list[Any]], kwargs: dict[str, Any]
) -> None:
    unary, streamed = pair
    u = unary.infer(model, inputs(), client_timeout=T, **kwargs, **_sequence_kwargs(model, 41))
    s = streamed.infer(model, inputs(), client_timeout=T, **kwargs, **_sequence_kwargs(model, 42))
    _same_result(u, s)
    assert s.get_response().id == kwargs.get("request_id", "")


def _failure(call: Callable[[], Any]) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as raised:
        call()
    return raised.value


ERRORS: list[tuple[str, Callable[[], list[Any]], dict[str, Any]]] = [
    ("no_such_model", _simple, {}),
    ("simple", lambda: _simple(np.zeros((1, 16), np.float32)), {"request_id": "r"}),
    ("simple", lambda: _simple(np.zeros((1, 16), np.float32)), {}),
    ("simple", lambda: _simple()[:1], {}),
    ("simple", lambda: _simple(np.zeros((1, 8), np.int32)), {}),
    ("repeat_int32", lambda: _repeat([1, 2]), {}),  # decoupled: the unary call refuses it
]


def _repeat(values: list[int]) -> list[grpcclient.InferInput]:
    n = len(values)
    return [
        _input("IN", "INT32", np.array(values, np.int32)),
        _input("DELAY", "UINT32", np.zeros(n, np.uint32)),
        _input("WAIT", "UINT32", np.zeros(1, np.uint32)),
    ]


@pytest.mark.parametrize(("model", "inputs", "kwargs"), ERRORS)
def test_errors_equal_the_unary_calls(
    pair: tuple[Any, Any], model: str, inputs: Callable[[], list[Any]], kwargs: dict[str, Any]
) -> None:
    unary, streamed = pair
    u = _failure(lambda: unary.infer(model, inputs(), client_timeout=T, **kwargs))
    s = _failure(lambda: streamed.infer(model, inputs(), client_timeout=T, **kwargs))
    assert (type(s), s.status(), s.message(), str(s)) == (type(u), u.status(), u.message(), str(u))
    # The stream goes on: the next call is answered.
    assert streamed.infer("simple", _simple(), client_timeout=T).as_numpy("OUTPUT0") is not None


def test_client_timeout_fails_the_call_and_drops_its_late_answer(pair: tuple[Any, Any]) -> None:
    unary, streamed = pair
    u = _failure(lambda: unary.infer("slow", _slow(1000), client_timeout=0.2))
    s = _failure(lambda: streamed.infer("slow", _slow(1000, 1), client_timeout=0.2))
    assert (type(s), s.status(), str(s)) == (type(u), u.status(), str(u))
    # The first request's answer comes later on the same stream: never this call's.
    result = streamed.infer("slow", _slow(0, 2), request_id="next", client_timeout=T)
    assert result.get_response().id == "next" and result.as_numpy("OUTPUT0").tolist() == [2]


def test_threads_share_one_stream(pair: tuple[Any, Any]) -> None:
    _, streamed = pair
    streamed.infer("simple", _simple(), client_timeout=T)
    stream = streamed._infer_stream._stream
    failures: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(25):
                a = np.full((1, 16), k * 100 + i, np.int32)
                result = streamed.infer(
                    "simple", _simple(a), request_id=f"{k}-{i}", client_timeout=T
                )
                assert result.get_response().id == f"{k}-{i}"
                assert result.as_numpy("OUTPUT0").tolist() == (a + 1).tolist()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(T)
    assert not failures and not any(t.is_alive() for t in threads)
    assert streamed._infer_stream._stream is stream  # one stream carried them all


def test_headers_compression_and_plugins(server: MockServer) -> None:
    with grpcclient.InferenceServerClient(server.grpc_url, infer_over_stream=True) as client:
        client.infer("simple", _simple(), client_timeout=T)
        first = client._infer_stream._stream
        # Per-call headers and compression go unary; the stream stays as it is.
        client.infer("simple", _simple(), headers={"x-a": "1"}, client_timeout=T)
        client.infer("simple", _simple(), compression_algorithm="gzip", client_timeout=T)
        assert client._infer_stream._stream is first
        # A plugin's headers are the stream's: a new stream carries them.
        client.register_plugin(BasicAuth("user", "secret"))
        result = client.infer("simple", _simple(), client_timeout=T)
        assert result.as_numpy("OUTPUT0") is not None
        assert client._infer_stream._stream is not first
        assert ("authorization", "Basic dXNlcjpzZWNyZXQ=") in client._infer_stream._stream.metadata


def test_a_broken_stream_fails_its_calls_and_the_next_call_opens_another(
    server: MockServer,
) -> None:
    loop = LoopThread()
    proxy = TcpProxy(loop, int(server.grpc_url.rpartition(":")[2]))
    client = grpcclient.InferenceServerClient(proxy.url, infer_over_stream=True)
    try:
        assert client.infer("slow", _slow(0), client_timeout=T).as_numpy("OUTPUT0") == [7]
        errors: list[InferenceServerException] = []

        def waiting() -> None:
            try:
                client.infer("slow", _slow(1000), client_timeout=T)
            except InferenceServerException as error:
                errors.append(error)

        thread = threading.Thread(target=waiting)
        thread.start()
        time.sleep(0.2)  # let it reach the server (the test holds either way)
        proxy.drop_connections()
        thread.join(T)
        assert not thread.is_alive() and len(errors) == 1  # failed, not left hanging
        assert errors[0].status() == "StatusCode.UNAVAILABLE"
        deadline = time.monotonic() + T
        while True:  # gRPC reconnects with a backoff
            try:
                result = client.infer("slow", _slow(0, 3), client_timeout=T)
                break
            except InferenceServerException as error:
                if error.status() != "StatusCode.UNAVAILABLE" or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert result.as_numpy("OUTPUT0").tolist() == [3]
    finally:
        client.close()
        proxy.close()
        loop.close()


def test_close_fails_the_waiting_calls(server: MockServer) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url, infer_over_stream=True)
    client.infer("slow", _slow(0), client_timeout=T)
    errors: list[InferenceServerException] = []

    def waiting() -> None:
        try:
            client.infer("slow", _slow(3000), client_timeout=T)
        except InferenceServerException as error:
            errors.append(error)

    thread = threading.Thread(target=waiting)
    thread.start()
    time.sleep(0.2)
    client.close()
    thread.join(T)
    assert not thread.is_alive() and len(errors) == 1
    assert errors[0].status() == "StatusCode.CANCELLED"
    with pytest.raises(InferenceServerException):
        client.infer("slow", _slow(0), client_timeout=T)


def test_refused_for_several_replicas() -> None:
    with pytest.raises(InferenceServerException, match="infer_over_stream=True needs one server"):
        grpcclient.InferenceServerClient(["127.0.0.1:1", "127.0.0.1:2"], infer_over_stream=True)

    async def aio() -> None:  # grpc.aio makes its channel in the running loop
        with pytest.raises(InferenceServerException, match="needs one server"):
            aioclient.InferenceServerClient("ipv4:127.0.0.1:1,127.0.0.1:2", infer_over_stream=True)

    asyncio.run(asyncio.wait_for(aio(), T))


# -- asyncio ------------------------------------------------------------------------------------


def test_aio_results_errors_deadlines_and_close(server: MockServer) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(server.grpc_url) as unary:
            streamed = aioclient.InferenceServerClient(server.grpc_url, infer_over_stream=True)
            for model, inputs, kwargs in CALLS:
                extra = _sequence_kwargs(model, 43)
                u = await unary.infer(model, inputs(), client_timeout=T, **kwargs, **extra)
                s = await streamed.infer(model, inputs(), client_timeout=T, **kwargs, **extra)
                _same_result(u, s)
            for model, inputs, kwargs in ERRORS:
                with pytest.raises(InferenceServerException) as u_error:
                    await unary.infer(model, inputs(), client_timeout=T, **kwargs)
                with pytest.raises(InferenceServerException) as s_error:
                    await streamed.infer(model, inputs(), client_timeout=T, **kwargs)
                u_, s_ = u_error.value, s_error.value
                assert (type(s_), s_.status(), str(s_)) == (type(u_), u_.status(), str(u_))
            # Tasks at once: each gets its own answer.
            values = [np.full((1, 16), i, np.int32) for i in range(40)]
            results = await asyncio.gather(
                *[
                    streamed.infer("simple", _simple(v), request_id=str(i))
                    for i, v in enumerate(values)
                ]
            )
            for i, result in enumerate(results):
                assert result.get_response().id == str(i)
                assert result.as_numpy("OUTPUT0").tolist() == (values[i] + 1).tolist()
            # A deadline fails the call as the unary one; the late answer is dropped.
            with pytest.raises(InferenceServerException) as u_error:
                await unary.infer("slow", _slow(1000), client_timeout=0.2)
            with pytest.raises(InferenceServerException) as s_error:
                await streamed.infer("slow", _slow(1000, 1), client_timeout=0.2)
            assert (type(s_error.value), str(s_error.value)) == (
                type(u_error.value),
                str(u_error.value),
            )
            result = await streamed.infer("slow", _slow(0, 2), request_id="next", client_timeout=T)
            assert result.get_response().id == "next" and result.as_numpy("OUTPUT0") == [2]
            # Closing fails a call still waiting, at once.
            waiting = asyncio.ensure_future(streamed.infer("slow", _slow(3000)))
            await asyncio.sleep(0.2)
            await streamed.close()
            with pytest.raises(InferenceServerException) as closed:
                await asyncio.wait_for(waiting, T)
            assert closed.value.status() == "StatusCode.CANCELLED"

    asyncio.run(asyncio.wait_for(main(), 4 * T))


def test_aio_cancelled_task_leaves_the_stream_usable(server: MockServer) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(
            server.grpc_url, infer_over_stream=True
        ) as client:
            task = asyncio.ensure_future(client.infer("slow", _slow(500)))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            result = await client.infer("slow", _slow(0, 4), request_id="after", client_timeout=T)
            assert result.get_response().id == "after" and result.as_numpy("OUTPUT0") == [4]

    asyncio.run(asyncio.wait_for(main(), 2 * T))
