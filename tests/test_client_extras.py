"""What the clients add to NVIDIA's package, against the bundled server.

Error subclasses per status, ``wait_until_ready``, the opt-in ``RetryPolicy``, gRPC
``channel_args`` merged with the defaults, round-robin load balancing over a URL list or an
``ipv4:`` target, HTTP request-size errors, and the ``triton_grpc_error`` stream header.
Every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import pickle
import queue
import socket
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from tritonclient._transport import grpc as grpc_common
from tritonclient.http import _common as http_common
from tritonclient.utils import (
    InferenceServerConnectionError,
    InferenceServerDeadlineExceededError,
    InferenceServerException,
    InferenceServerInvalidArgumentError,
    InferenceServerNotFoundError,
    InferenceServerUnavailableError,
    RetryPolicy,
)
from tritonclient.utils._errors import exception_for_status, specialize_exception

T = 20.0


def _options() -> tuple[ServerOptions, FrontendOptions]:
    return (
        ServerOptions(model_repository=[BUNDLED_MODELS]),
        FrontendOptions(http_port=0, grpc_port=0, metrics_port=0, allow_metrics=False),
    )


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(*_options()) as s:
        yield s


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _simple_inputs(mod: Any) -> list[Any]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    i0 = mod.InferInput("INPUT0", [1, 16], "INT32")
    i0.set_data_from_numpy(a)
    i1 = mod.InferInput("INPUT1", [1, 16], "INT32")
    i1.set_data_from_numpy(a)
    return [i0, i1]


# -- 1. error subclasses ------------------------------------------------------------------------


def test_exception_for_status_table() -> None:
    assert exception_for_status("StatusCode.NOT_FOUND") is InferenceServerNotFoundError
    assert exception_for_status("404") is InferenceServerNotFoundError
    assert exception_for_status("400") is InferenceServerInvalidArgumentError
    assert exception_for_status("StatusCode.UNAVAILABLE") is InferenceServerUnavailableError
    assert exception_for_status("418") is InferenceServerException
    assert exception_for_status(None) is InferenceServerException
    plain = InferenceServerException("gone", "StatusCode.NOT_FOUND", "dbg")
    special = specialize_exception(plain)
    assert type(special) is InferenceServerNotFoundError
    assert (special.message(), special.status(), special.debug_details(), str(special)) == (
        "gone",
        "StatusCode.NOT_FOUND",
        "dbg",
        "[StatusCode.NOT_FOUND] gone",
    )
    again = pickle.loads(pickle.dumps(special))
    assert type(again) is InferenceServerNotFoundError and again.status() == special.status()
    # connection and deadline errors are also the builtin exceptions NVIDIA's client leaks
    assert issubclass(InferenceServerConnectionError, ConnectionError)
    assert issubclass(InferenceServerDeadlineExceededError, TimeoutError)
    for name in ("InferenceServerNotFoundError", "RetryPolicy"):
        assert getattr(grpcclient, name) is getattr(httpclient, name)


def test_error_subclasses_grpc(server: MockServer) -> None:
    with grpcclient.InferenceServerClient(server.grpc_url) as c:
        with pytest.raises(InferenceServerNotFoundError) as info:
            c.get_model_metadata("nope", client_timeout=T)
        assert info.value.status() == "StatusCode.NOT_FOUND"
        with pytest.raises(InferenceServerInvalidArgumentError) as bad:
            c.infer("simple", _simple_inputs(grpcclient)[:1], client_timeout=T)
        assert bad.value.status() == "StatusCode.INVALID_ARGUMENT"

    async def run() -> None:
        async with grpcaio.InferenceServerClient(server.grpc_url) as c:
            with pytest.raises(InferenceServerNotFoundError):
                await c.get_model_config("nope", client_timeout=T)

    asyncio.run(asyncio.wait_for(run(), T))


def test_error_subclasses_http(server: MockServer) -> None:
    with httpclient.InferenceServerClient(server.http_url) as c:
        with pytest.raises(InferenceServerNotFoundError) as info:
            c.get_model_metadata("nope")
        assert info.value.status() == "404"
        with pytest.raises(InferenceServerInvalidArgumentError) as bad:
            c.infer("simple", _simple_inputs(httpclient)[:1])
        assert bad.value.status() == "400"

    async def run() -> None:
        async with httpaio.InferenceServerClient(server.http_url) as c:
            with pytest.raises(InferenceServerNotFoundError):
                await c.get_model_config("nope")

    asyncio.run(asyncio.wait_for(run(), T))


# -- 2. wait_until_ready --------------------------------------------------------------------------


def test_wait_until_ready_sync(server: MockServer) -> None:
    refused = f"127.0.0.1:{_free_port()}"
    for mod, url in ((grpcclient, server.grpc_url), (httpclient, server.http_url)):
        with mod.InferenceServerClient(url) as c:
            c.wait_until_ready(timeout=T)
            c.wait_until_ready("simple", timeout=T)
            start = time.monotonic()
            with pytest.raises(InferenceServerDeadlineExceededError, match="model 'nope'"):
                c.wait_until_ready("nope", timeout=0.5, interval=0.05)
            assert time.monotonic() - start < 5
        with (
            mod.InferenceServerClient(refused) as c,
            pytest.raises(InferenceServerDeadlineExceededError, match="server not ready"),
        ):
            c.wait_until_ready(timeout=0.5, interval=0.05)


def test_wait_until_ready_aio(server: MockServer) -> None:
    refused = f"127.0.0.1:{_free_port()}"

    async def run() -> None:
        for mod, url in ((grpcaio, server.grpc_url), (httpaio, server.http_url)):
            async with mod.InferenceServerClient(url) as c:
                await c.wait_until_ready("simple", timeout=T)
                with pytest.raises(InferenceServerDeadlineExceededError, match="model 'nope'"):
                    await c.wait_until_ready("nope", timeout=0.5, interval=0.05)
            async with mod.InferenceServerClient(refused) as c:
                with pytest.raises(InferenceServerDeadlineExceededError, match="server"):
                    await c.wait_until_ready(timeout=0.5, interval=0.05)

    asyncio.run(asyncio.wait_for(run(), T))


def test_wait_until_ready_server_starting_late() -> None:
    """The server comes up while the client waits (refused connections count as not ready)."""
    options, frontend = _options()
    holder: queue.Queue[MockServer] = queue.Queue()
    server = MockServer(options, frontend)

    def start() -> None:
        time.sleep(0.5)
        holder.put(server.start())

    import threading

    port_probe = threading.Thread(target=start, daemon=True)
    port_probe.start()
    try:
        started = holder.get(timeout=T)
        with grpcclient.InferenceServerClient(started.grpc_url) as c:
            c.wait_until_ready("simple", timeout=T)
    finally:
        port_probe.join(T)
        server.stop()


# -- 3. retry policy ----------------------------------------------------------------------------


def test_retry_policy_validation() -> None:
    with pytest.raises(InferenceServerException):
        RetryPolicy(max_attempts=0)
    policy = RetryPolicy(max_attempts=4, initial_backoff=0.1, max_backoff=0.25)
    assert [policy.backoff(n) for n in (1, 2, 3)] == [0.1, 0.2, 0.25]
    with pytest.raises(InferenceServerException):
        grpcclient.InferenceServerClient("localhost:1", retry_policy=3)  # type: ignore[arg-type]


def _elapsed(fn: Any) -> tuple[float, BaseException]:
    start = time.monotonic()
    try:
        fn()
    except BaseException as error:
        return time.monotonic() - start, error
    raise AssertionError("expected a failure")


def test_retry_policy_sync() -> None:
    refused = f"127.0.0.1:{_free_port()}"
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.3, max_backoff=1.0)
    with grpcclient.InferenceServerClient(refused, retry_policy=policy) as c:
        took, error = _elapsed(lambda: c.get_server_metadata(client_timeout=T))
        assert isinstance(error, InferenceServerUnavailableError) and took >= 0.85
        took, error = _elapsed(lambda: c.infer("simple", _simple_inputs(grpcclient)))
        assert isinstance(error, InferenceServerUnavailableError) and took < 0.85
    with grpcclient.InferenceServerClient(refused) as c:  # default: no retries
        took, error = _elapsed(lambda: c.get_server_metadata(client_timeout=T))
        assert isinstance(error, InferenceServerUnavailableError) and took < 0.85
    with httpclient.InferenceServerClient(refused, retry_policy=policy) as h:
        took, error = _elapsed(h.get_server_metadata)
        assert isinstance(error, InferenceServerConnectionError) and took >= 0.85
        took, error = _elapsed(lambda: h.infer("simple", _simple_inputs(httpclient)))
        assert isinstance(error, InferenceServerConnectionError) and took < 0.85
        assert isinstance(error, ConnectionRefusedError | ConnectionError)


def test_retry_policy_aio() -> None:
    refused = f"127.0.0.1:{_free_port()}"
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.3, max_backoff=1.0)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        async with grpcaio.InferenceServerClient(refused, retry_policy=policy) as c:
            start = loop.time()
            with pytest.raises(InferenceServerUnavailableError):
                await c.is_server_ready(client_timeout=T)
            assert loop.time() - start >= 0.85
        async with httpaio.InferenceServerClient(refused, retry_policy=policy) as h:
            start = loop.time()
            with pytest.raises(InferenceServerConnectionError):
                await h.get_model_repository_index()
            assert loop.time() - start >= 0.85
            start = loop.time()
            with pytest.raises(InferenceServerConnectionError):
                await h.infer("simple", _simple_inputs(httpaio))
            assert loop.time() - start < 0.85

    asyncio.run(asyncio.wait_for(run(), T))


# -- 4. gRPC channel arguments and load balancing ------------------------------------------


def test_channel_args_add_to_defaults() -> None:
    defaults = dict(grpc_common.channel_options(None, None))
    merged = grpc_common.channel_options(
        None, [("grpc.keepalive_time_ms", 1234), ("grpc.primary_user_agent", "me")]
    )
    as_dict = dict(merged)
    assert len(as_dict) == len(merged)  # each key once
    assert as_dict["grpc.keepalive_time_ms"] == 1234
    assert as_dict["grpc.primary_user_agent"] == "me"
    assert as_dict["grpc.max_receive_message_length"] == defaults["grpc.max_receive_message_length"]
    assert grpc_common.channel_target("localhost:8001") == ("localhost:8001", [])
    target, extra = grpc_common.channel_target(["127.0.0.1:1", "localhost:2"])
    assert target == "ipv4:127.0.0.1:1,127.0.0.1:2"
    assert ("grpc.lb_policy_name", "round_robin") in extra
    assert grpc_common.channel_target("dns:///svc:8001")[0] == "dns:///svc:8001"
    with pytest.raises(InferenceServerException):
        grpc_common.channel_target([])


def test_channel_args_keep_message_limits(server: MockServer) -> None:
    """With channel_args given, messages over gRPC's 4 MiB default still go through."""
    big = np.arange(2_000_000, dtype=np.float32).reshape(1, -1)  # 8 MB each way
    with grpcclient.InferenceServerClient(
        server.grpc_url, channel_args=[("grpc.primary_user_agent", "extras-test")]
    ) as c:
        tensor = grpcclient.InferInput("INPUT0", list(big.shape), "FP32")
        tensor.set_data_from_numpy(big)
        result = c.infer("identity_fp32", [tensor], client_timeout=T)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), big)
    # a user value for the same key wins
    with (
        grpcclient.InferenceServerClient(
            server.grpc_url, channel_args=[("grpc.max_receive_message_length", 1024)]
        ) as c,
        pytest.raises(InferenceServerException, match=r"(?i)larger than max|resource"),
    ):
        c.infer("identity_fp32", [tensor], client_timeout=T)


def _success_count(url: str) -> int:
    with grpcclient.InferenceServerClient(url) as c:
        stats = c.get_inference_statistics("simple", as_json=True, client_timeout=T)
    return int(stats["model_stats"][0]["inference_stats"]["success"].get("count", 0))


def test_round_robin_over_two_servers() -> None:
    with MockServer(*_options()) as one, MockServer(*_options()) as two:
        urls = [one.grpc_url, two.grpc_url]
        for target in (urls, "ipv4:" + ",".join(urls)):
            before = [_success_count(u) for u in urls]
            with grpcclient.InferenceServerClient(target) as c:
                c.wait_until_ready("simple", timeout=T)
                for _ in range(20):
                    c.infer("simple", _simple_inputs(grpcclient), client_timeout=T)
            after = [_success_count(u) for u in urls]
            served = [a - b for a, b in zip(after, before, strict=True)]
            assert sum(served) == 20 and min(served) > 0, served

        async def run() -> None:
            async with grpcaio.InferenceServerClient(urls) as c:
                await c.wait_until_ready("simple", timeout=T)
                for _ in range(10):
                    await c.infer("simple", _simple_inputs(grpcclient), client_timeout=T)

        asyncio.run(asyncio.wait_for(run(), T))


# -- 5. HTTP limits -----------------------------------------------------------------------------


def test_http_request_over_limits(server: MockServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON request part beyond the protocol's 32-bit length is a clear error."""
    monkeypatch.setattr(http_common, "MAX_INFERENCE_HEADER_SIZE", 64)
    inputs = _simple_inputs(httpclient)
    with (
        httpclient.InferenceServerClient(server.http_url) as c,
        pytest.raises(InferenceServerException, match="JSON part of the inference request"),
    ):
        c.infer("simple", inputs)


# -- triton_grpc_error --------------------------------------------------------------------------


def test_triton_grpc_error_header(server: MockServer) -> None:
    def bad_request(c: grpcclient.InferenceServerClient) -> None:
        c.async_stream_infer("simple", _simple_inputs(grpcclient)[:1])

    # default: the error arrives in-band and the stream stays open
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with grpcclient.InferenceServerClient(server.grpc_url) as c:
        c.start_stream(lambda result, error: got.put((result, error)))
        bad_request(c)
        _, error = got.get(timeout=T)
        assert isinstance(error, InferenceServerException) and error.status() is None
        c.async_stream_infer("simple", _simple_inputs(grpcclient))
        result, error = got.get(timeout=T)
        assert error is None and result is not None
        c.stop_stream()

    # triton_grpc_error: a request the server refuses is still reported in-band (Triton 2.51),
    # an error the model sends ends the stream with a real gRPC status
    got = queue.Queue()
    with grpcclient.InferenceServerClient(server.grpc_url) as c:
        c.start_stream(
            lambda result, error: got.put((result, error)),
            headers={"triton_grpc_error": "true"},
        )
        bad_request(c)
        _, error = got.get(timeout=T)
        assert isinstance(error, InferenceServerException) and error.status() is None
        strings = np.array([[b"x"] * 16], dtype=np.object_)
        failing = [grpcclient.InferInput(n, [1, 16], "BYTES") for n in ("INPUT0", "INPUT1")]
        for each in failing:
            each.set_data_from_numpy(strings)
        c.async_stream_infer("simple_string", failing)
        _, error = got.get(timeout=T)
        assert isinstance(error, InferenceServerInvalidArgumentError)
        assert error.status() == "StatusCode.INVALID_ARGUMENT"
        deadline = time.monotonic() + T
        while True:
            try:
                c.async_stream_infer("simple", _simple_inputs(grpcclient))
            except InferenceServerException as closed:
                assert "no longer in valid state" in str(closed)
                break
            assert time.monotonic() < deadline
            time.sleep(0.02)
        c.stop_stream()
