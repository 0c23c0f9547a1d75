"""Failure behaviour of the four clients against fault-injecting servers (``tests/faults.py``).

The rule under test (issue 13): for every client (``grpc``, ``grpc.aio``, ``http``,
``http.aio``) and call style (``infer``; ``async_infer`` with a callback or ``get_result``;
a stream with its callback or async iterator; a non-inference method), every failure reaches
the caller **exactly once**, as an ``InferenceServerException`` subclass whose message names
what was wrong, within the call's timeout; a broken answer never passes for a result.

The matrix is every fault that applies to a protocol, times every client of that protocol and
call style: :data:`HTTP_FAULTS` x :data:`HTTP_STYLES` and :data:`GRPC_FAULTS` x
:data:`GRPC_STYLES`, each case asserting the exception class and a message fragment.  Each
probe collects *every* error the style delivers (a raised exception, each callback call, each
error an iterator yields or raises) and the test asserts there is one.  Every wait is bounded
(pytest-timeout marks, and explicit timeouts inside the probes), so that a regression fails
instead of hanging.  Tests after the matrix cover what a matrix cell cannot: the connection
after a lying answer, ``stop_stream()`` with its defaults against a stalled server, streams that
end with requests unanswered, streams and their threads ending with the client.
"""

from __future__ import annotations

import asyncio
import gc
import queue
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc._client as grpc_sync_module
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from tests.faults import (
    GrpcFaultServer,
    HttpFaultServer,
    LoopThread,
    T,
    TcpProxy,
    free_port,
)
from tests.tls import TlsFiles, make_tls_files
from tritonclient.utils import (
    InferenceServerCancelledError,
    InferenceServerConnectionError,
    InferenceServerDeadlineExceededError,
    InferenceServerException,
    InferenceServerInternalError,
    InferenceServerProtocolError,
    InferenceServerSSLError,
    InferenceServerUnavailableError,
)

SHORT = 0.5  # the client timeout of the cases whose server never answers
LONG = 10.0  # the client timeout of the others (never reached)
#: How long a probe waits, after a stream style delivered its error, for a second one.
SETTLE = 0.3

pytestmark = pytest.mark.timeout(60)

# -- servers -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def http_server(loop: LoopThread) -> Iterator[HttpFaultServer]:
    server = HttpFaultServer(loop)
    yield server
    server.close()


@pytest.fixture(scope="module")
def https_server(loop: LoopThread, tls_files: TlsFiles) -> Iterator[HttpFaultServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls_files.server_cert, tls_files.server_key)
    server = HttpFaultServer(loop, context)
    yield server
    server.close()


@pytest.fixture(scope="module")
def grpc_server(loop: LoopThread) -> Iterator[GrpcFaultServer]:
    server = GrpcFaultServer(loop)
    yield server
    server.close()


@pytest.fixture(scope="module")
def grpcs_server(loop: LoopThread, tls_files: TlsFiles) -> Iterator[GrpcFaultServer]:
    credentials = grpc.ssl_server_credentials(
        [(tls_files.server_key.read_bytes(), tls_files.server_cert.read_bytes())]
    )
    server = GrpcFaultServer(loop, credentials)
    yield server
    server.close()


@pytest.fixture
def grpc_proxy(loop: LoopThread, grpc_server: GrpcFaultServer) -> Iterator[TcpProxy]:
    """A proxy in front of the gRPC fault server, killed by the ``kill`` scenario."""
    proxy = TcpProxy(loop, grpc_server.port)
    grpc_server.on_kill = proxy.kill_now
    grpc_server.entered.clear()
    yield proxy
    grpc_server.on_kill = lambda: None
    proxy.close()


@pytest.fixture
def http_proxy(loop: LoopThread, http_server: HttpFaultServer) -> Iterator[TcpProxy]:
    proxy = TcpProxy(loop, http_server.port)
    yield proxy
    proxy.close()


@pytest.fixture
def silent(loop: LoopThread) -> Iterator[TcpProxy]:
    """A server that accepts connections and never says anything."""
    proxy = TcpProxy(loop, None)
    yield proxy
    proxy.close()


@pytest.fixture(autouse=True)
def no_stream_thread_left() -> Iterator[None]:
    """No test leaves a stream thread of the sync gRPC client behind (bounded wait)."""
    yield
    deadline = time.monotonic() + T
    while any(t.name == "tritonclient-grpc-stream" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a stream thread outlived its client"
        time.sleep(0.02)


# -- what a call sends -------------------------------------------------------------------------


def _inputs(mod: Any) -> list[Any]:
    tensor = mod.InferInput("IN", [2], "INT32")
    tensor.set_data_from_numpy(np.array([1, 2], dtype=np.int32))
    return [tensor]


def _outputs(mod: Any) -> list[Any]:
    return [mod.InferRequestedOutput("OUT")]


# -- probes: one call in one style, every error it delivers ---------------------------------------


@dataclass
class Target:
    """Where a probe goes and how long it lets a call take."""

    url: str
    timeout: float = LONG
    ssl: bool = False


def _http_sync(target: Target) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(
        target.url,
        connection_timeout=target.timeout,
        network_timeout=target.timeout,
        ssl=target.ssl,
        insecure=True,
    )


def _http_aio(target: Target) -> httpaio.InferenceServerClient:
    context = None
    if target.ssl:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return httpaio.InferenceServerClient(
        target.url, conn_timeout=target.timeout, ssl=target.ssl, ssl_context=context
    )


def probe_http_infer(target: Target, scenario: str) -> list[BaseException]:
    with _http_sync(target) as client:
        try:
            client.infer(scenario, _inputs(httpclient), outputs=_outputs(httpclient))
        except BaseException as error:
            return [error]
    return []


def probe_http_async_infer(target: Target, scenario: str) -> list[BaseException]:
    with _http_sync(target) as client:
        request = client.async_infer(scenario, _inputs(httpclient), outputs=_outputs(httpclient))
        try:
            request.get_result(timeout=T)
        except BaseException as error:
            return [error]
    return []


def probe_http_other(target: Target, scenario: str) -> list[BaseException]:
    with _http_sync(target) as client:
        try:
            client.get_model_metadata(scenario)
        except BaseException as error:
            return [error]
    return []


def _run_aio(body: Callable[[], Any]) -> list[BaseException]:
    async def main() -> list[BaseException]:
        try:
            await body()
        except BaseException as error:
            return [error]
        return []

    return asyncio.run(asyncio.wait_for(main(), T))


def probe_http_aio_infer(target: Target, scenario: str) -> list[BaseException]:
    async def body() -> None:
        async with _http_aio(target) as client:
            await client.infer(scenario, _inputs(httpaio), outputs=_outputs(httpaio))

    return _run_aio(body)


def probe_http_aio_other(target: Target, scenario: str) -> list[BaseException]:
    async def body() -> None:
        async with _http_aio(target) as client:
            await client.get_model_metadata(scenario)

    return _run_aio(body)


def _grpc_sync(target: Target) -> grpcclient.InferenceServerClient:
    return grpcclient.InferenceServerClient(target.url, ssl=target.ssl)


def probe_grpc_infer(target: Target, scenario: str) -> list[BaseException]:
    with _grpc_sync(target) as client:
        try:
            client.infer(
                scenario,
                _inputs(grpcclient),
                outputs=_outputs(grpcclient),
                client_timeout=target.timeout,
            )
        except BaseException as error:
            return [error]
    return []


def _drain(got: queue.Queue[tuple[Any, Any]], first: float) -> list[tuple[Any, Any]]:
    """What a callback received: the first delivery (within ``first`` s), then any more
    arriving within :data:`SETTLE` s."""
    items = [got.get(timeout=first)]
    while True:
        try:
            items.append(got.get(timeout=SETTLE))
        except queue.Empty:
            return items


def probe_grpc_async_infer(target: Target, scenario: str) -> list[BaseException]:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with _grpc_sync(target) as client:
        client.async_infer(
            scenario,
            _inputs(grpcclient),
            lambda result, error: got.put((result, error)),
            outputs=_outputs(grpcclient),
            client_timeout=target.timeout,
        )
        items = _drain(got, T)
    return [error for _, error in items if error is not None]


def _is_final(result: Any) -> bool:
    param = result.get_response().parameters.get("triton_final_response")
    return bool(param is not None and param.bool_param)


def probe_grpc_stream(target: Target, scenario: str) -> list[BaseException]:
    """start_stream + async_stream_infer; the errors the callback got until stop_stream()."""
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with _grpc_sync(target) as client:
        client.start_stream(
            lambda result, error: got.put((result, error)), stream_timeout=target.timeout
        )
        try:
            client.async_stream_infer(
                scenario,
                _inputs(grpcclient),
                outputs=_outputs(grpcclient),
                request_id="r1",
                enable_empty_final_response=True,
            )
        except InferenceServerException as refused:
            # The stream failed before the request went out (nothing listens): the failure
            # went to the callback, and the request is refused pointing there.
            assert "reported through provided callback" in str(refused)
        deadline = time.monotonic() + T
        errors: list[BaseException] = []
        while time.monotonic() < deadline:  # until an error, or the request's final response
            try:
                result, error = got.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if error is not None:
                errors.append(error)
                break
            if _is_final(result):
                break
        start = time.monotonic()
        client.stop_stream(timeout=SHORT)
        assert time.monotonic() - start < SHORT + 6
    while not got.empty():  # nothing may come after the thread is gone
        error = got.get_nowait()[1]
        if error is not None:
            errors.append(error)
    return errors


def probe_grpc_other(target: Target, scenario: str) -> list[BaseException]:
    with _grpc_sync(target) as client:
        try:
            client.get_model_metadata(scenario, client_timeout=target.timeout)
        except BaseException as error:
            return [error]
    return []


def _grpc_aio(target: Target) -> grpcaio.InferenceServerClient:
    return grpcaio.InferenceServerClient(target.url, ssl=target.ssl)


def probe_grpc_aio_infer(target: Target, scenario: str) -> list[BaseException]:
    async def body() -> None:
        async with _grpc_aio(target) as client:
            await client.infer(
                scenario,
                _inputs(grpcaio),
                outputs=_outputs(grpcaio),
                client_timeout=target.timeout,
            )

    return _run_aio(body)


def probe_grpc_aio_stream(target: Target, scenario: str) -> list[BaseException]:
    """stream_infer with an inputs iterator that stays open: every error it yields or raises."""

    async def main() -> list[BaseException]:
        errors: list[BaseException] = []

        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {
                "model_name": scenario,
                "inputs": _inputs(grpcaio),
                "outputs": _outputs(grpcaio),
                "request_id": "r1",
                "enable_empty_final_response": True,
            }
            await asyncio.sleep(3600)  # the client's side stays open

        async with _grpc_aio(target) as client:
            iterator = client.stream_infer(requests(), stream_timeout=target.timeout)
            try:
                async for result, error in iterator:
                    if error is not None:
                        errors.append(error)
                        break
                    if _is_final(result):
                        break
            except BaseException as error:
                errors.append(error)
            else:
                # After an error the stream may go on (a bad response): it must not raise.
                try:
                    await asyncio.wait_for(iterator.__anext__(), SETTLE)
                except (asyncio.TimeoutError, StopAsyncIteration):
                    pass
                except BaseException as error:
                    errors.append(error)
            finally:
                iterator.cancel()
        return errors

    return asyncio.run(asyncio.wait_for(main(), T))


def probe_grpc_aio_other(target: Target, scenario: str) -> list[BaseException]:
    async def body() -> None:
        async with _grpc_aio(target) as client:
            await client.get_model_metadata(scenario, client_timeout=target.timeout)

    return _run_aio(body)


Probe = Callable[[Target, str], list[BaseException]]

HTTP_STYLES: dict[str, Probe] = {
    "http/infer": probe_http_infer,
    "http/async_infer": probe_http_async_infer,
    "http/other": probe_http_other,
    "http.aio/infer": probe_http_aio_infer,
    "http.aio/other": probe_http_aio_other,
}
GRPC_STYLES: dict[str, Probe] = {
    "grpc/infer": probe_grpc_infer,
    "grpc/async_infer": probe_grpc_async_infer,
    "grpc/stream": probe_grpc_stream,
    "grpc/other": probe_grpc_other,
    "grpc.aio/infer": probe_grpc_aio_infer,
    "grpc.aio/stream": probe_grpc_aio_stream,
    "grpc.aio/other": probe_grpc_aio_other,
}
INFER_STYLES = ("infer", "async_infer", "stream")  # the styles that read outputs

# -- the faults ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One fault: which server, which scenario, what the caller must get.

    Attributes
    ----------
    server : str
        The fixture of the server (or ``refused``: nothing listens).
    scenario : str
        The model name sent.
    error : type
        The exception class every style must deliver (exactly once).
    fragment : str or tuple of str
        A part of its message (``str(e)``), or parts of which one is (where the clients
        meet the fault at different stages).
    timeout : float
        The client timeout of the call.
    styles : tuple of str
        The call styles (by suffix) the fault applies to; all by default.
    ssl : bool
        Whether the client uses TLS.
    """

    server: str
    scenario: str
    error: type[InferenceServerException]
    fragment: str | tuple[str, ...]
    timeout: float = LONG
    styles: tuple[str, ...] | None = None
    ssl: bool = False


OUTPUT_STYLES = ("infer", "async_infer")  # the request's own outputs are known there

HTTP_FAULTS: dict[str, Fault] = {
    "refused": Fault("refused", "m", InferenceServerConnectionError, "connection failed"),
    "killed mid-call": Fault("http_server", "kill", InferenceServerConnectionError, "connection"),
    "killed mid-body (truncated body)": Fault(
        "http_server", "killed_mid_body", InferenceServerConnectionError, "connection"
    ),
    "killed mid-body, large answer": Fault(
        "http_server", "killed_mid_large_body", InferenceServerConnectionError, "connection"
    ),
    "stalled mid-body": Fault(
        "http_server",
        "stalled_mid_body",
        InferenceServerDeadlineExceededError,
        "timed out",
        SHORT,
    ),
    "silent": Fault(
        "http_server", "silent", InferenceServerDeadlineExceededError, "timed out", SHORT
    ),
    "silent socket": Fault("silent", "m", InferenceServerDeadlineExceededError, "timed out", SHORT),
    "Content-Length beyond the body": Fault(
        "http_server",
        "content_length_long",
        InferenceServerDeadlineExceededError,
        "timed out",
        SHORT,
    ),
    "Content-Length short of the body": Fault(
        "http_server",
        "content_length_short",
        InferenceServerProtocolError,
        # what a client reads of it: a truncated JSON, or bytes where a response should end
        ("is not JSON", "invalid response from the server"),
    ),
    "malformed JSON": Fault(
        "http_server", "malformed_json", InferenceServerProtocolError, "is not JSON"
    ),
    "invalid UTF-8": Fault(
        "http_server", "invalid_utf8", InferenceServerProtocolError, "not valid UTF-8"
    ),
    "error body not JSON": Fault(
        "http_server", "error_not_json", InferenceServerInternalError, "upstream exploded"
    ),
    "not HTTP": Fault(
        "http_server", "garbage", InferenceServerException, "invalid response from the server"
    ),
    "TLS client, plain server": Fault(
        "http_server", "ok", InferenceServerSSLError, "TLS failed", ssl=True
    ),
    "plain client, TLS server": Fault(
        "https_server", "ok", InferenceServerConnectionError, "connection"
    ),
    "gRPC on the port": Fault("grpc_server", "ok", InferenceServerException, "/v2/models/ok"),
    "data do not fit the shape": Fault(
        "http_server",
        "shape_lie",
        InferenceServerProtocolError,
        "output 'OUT' (INT32, shape [3]) needs 3 elements, its 'data' has 2",
        styles=("infer", "async_infer"),
    ),
    "integer beyond the datatype": Fault(
        "http_server",
        "datatype_range",
        InferenceServerProtocolError,
        "element 300 in its 'data', outside the INT8 range",
        styles=OUTPUT_STYLES,
    ),
    "strings for numbers": Fault(
        "http_server",
        "datatype_kind",
        InferenceServerProtocolError,
        "string '1' at index 0 of its 'data', expected integers",
        styles=OUTPUT_STYLES,
    ),
    "unknown datatype": Fault(
        "http_server",
        "unknown_datatype",
        InferenceServerProtocolError,
        "datatype 'FP128'",
        styles=OUTPUT_STYLES,
    ),
    "requested output missing": Fault(
        "http_server",
        "missing_output",
        InferenceServerProtocolError,
        "no output 'OUT', which the request asked for",
        styles=OUTPUT_STYLES,
    ),
    "output without data": Fault(
        "http_server",
        "no_data",
        InferenceServerProtocolError,
        "output 'OUT' (INT32, shape [2]) came without data",
        styles=OUTPUT_STYLES,
    ),
    "binary data missing bytes": Fault(
        "http_server",
        "binary_missing",
        InferenceServerProtocolError,
        "4 bytes are missing",
        styles=OUTPUT_STYLES,
    ),
    "binary data with trailing bytes": Fault(
        "http_server",
        "binary_trailing",
        InferenceServerProtocolError,
        "5 bytes trail them",
        styles=OUTPUT_STYLES,
    ),
    "binary data do not fit the shape": Fault(
        "http_server",
        "binary_shape_lie",
        InferenceServerProtocolError,
        "output 'OUT' (INT32, shape [4]) needs 16 bytes of data, the response has 8",
        styles=OUTPUT_STYLES,
    ),
    "malformed BYTES": Fault(
        "http_server",
        "bytes_lie",
        InferenceServerProtocolError,
        "output 'OUT' (BYTES, shape [1]) is not a valid BYTES buffer",
        styles=OUTPUT_STYLES,
    ),
    "JSON length beyond the body": Fault(
        "http_server",
        "header_length_beyond_body",
        InferenceServerProtocolError,
        "Inference-Header-Content-Length 172 is outside the body of 122 bytes",
        styles=OUTPUT_STYLES,
    ),
    "corrupt compression": Fault(
        "http_server",
        "zlib_corrupt",
        InferenceServerProtocolError,
        "deflate",
        styles=OUTPUT_STYLES,
    ),
}

GRPC_FAULTS: dict[str, Fault] = {
    "refused": Fault("refused", "ok", InferenceServerUnavailableError, "failed to connect"),
    "killed mid-call": Fault(
        "grpc_proxy",
        "kill",
        InferenceServerUnavailableError,
        "",
        styles=("infer", "async_infer", "other"),  # streams: "killed mid-stream"
    ),
    "stalled": Fault(
        "grpc_server", "stall", InferenceServerDeadlineExceededError, "Deadline Exceeded", SHORT
    ),
    "silent socket": Fault(
        "silent", "ok", InferenceServerDeadlineExceededError, "Deadline Exceeded", SHORT
    ),
    "malformed protobuf": Fault(
        "grpc_server", "malformed", InferenceServerProtocolError, "message does not parse"
    ),
    "truncated protobuf": Fault(
        "grpc_server", "truncated", InferenceServerProtocolError, "message does not parse"
    ),
    "invalid UTF-8": Fault("grpc_server", "invalid_utf8", InferenceServerProtocolError, "UTF-8"),
    "server error": Fault("grpc_server", "error", InferenceServerInternalError, "model exploded"),
    "TLS client, plain server": Fault(
        "grpc_server", "ok", InferenceServerUnavailableError, "", ssl=True
    ),
    "plain client, TLS server": Fault("grpcs_server", "ok", InferenceServerUnavailableError, ""),
    "HTTP/1 on the port": Fault(
        "http_server", "ok", InferenceServerUnavailableError, "http1.x server"
    ),
    "data do not fit the shape": Fault(
        "grpc_server",
        "shape_lie",
        InferenceServerProtocolError,
        "output 'OUT' (INT32, shape [2]) needs 8 bytes of data, the response has 3",
        styles=INFER_STYLES,
    ),
    "unknown datatype": Fault(
        "grpc_server",
        "unknown_datatype",
        InferenceServerProtocolError,
        "datatype 'FP128'",
        styles=INFER_STYLES,
    ),
    "malformed BYTES": Fault(
        "grpc_server",
        "bytes_lie",
        InferenceServerProtocolError,
        "output 'OUT' (BYTES, shape [1]) is not a valid BYTES buffer",
        styles=INFER_STYLES,
    ),
    "raw entries do not match the outputs": Fault(
        "grpc_server",
        "raw_count",
        InferenceServerProtocolError,
        "2 raw_output_contents entries for 1 outputs",
        styles=INFER_STYLES,
    ),
    "requested output missing": Fault(
        "grpc_server",
        "missing_output",
        InferenceServerProtocolError,
        "no output 'OUT', which the request asked for",
        styles=OUTPUT_STYLES,
    ),
    "empty output not requested in shared memory": Fault(
        "grpc_server",
        "empty_raw",
        InferenceServerProtocolError,
        "output 'OUT' (INT32, shape [2]) came without data, and it was not requested in "
        "shared memory",
        styles=OUTPUT_STYLES,
    ),
    "killed mid-stream": Fault(
        "grpc_proxy", "kill", InferenceServerUnavailableError, "", styles=("stream",)
    ),
    "stream ended early": Fault(
        "grpc_server",
        "early_end",
        InferenceServerUnavailableError,
        "the server ended the stream before",
        styles=("stream",),
    ),
}


def _cases(faults: dict[str, Fault], styles: dict[str, Probe]) -> list[Any]:
    cases = []
    for fault_name, fault in faults.items():
        for style in styles:
            if fault.styles is None or style.split("/")[1] in fault.styles:
                cases.append(pytest.param(fault_name, style, id=f"{fault_name}-{style}"))
    return cases


HTTP_CASES = _cases(HTTP_FAULTS, HTTP_STYLES)
GRPC_CASES = _cases(GRPC_FAULTS, GRPC_STYLES)


def _target(request: pytest.FixtureRequest, fault: Fault) -> Target:
    if fault.server == "refused":
        url = f"127.0.0.1:{free_port()}"
    else:
        url = request.getfixturevalue(fault.server).url
    return Target(url, fault.timeout, fault.ssl)


def _check(errors: list[BaseException], fault: Fault, bound: float, elapsed: float) -> None:
    assert len(errors) == 1, f"expected exactly one error, got {errors!r}"
    error = errors[0]
    assert isinstance(error, fault.error), f"{type(error).__name__}: {error}"
    fragments = (fault.fragment,) if isinstance(fault.fragment, str) else fault.fragment
    assert any(fragment in str(error) for fragment in fragments), str(error)
    assert elapsed < bound, f"took {elapsed:.1f} s"


@pytest.mark.parametrize(("fault_name", "style"), HTTP_CASES)
def test_http_fault_matrix(request: pytest.FixtureRequest, fault_name: str, style: str) -> None:
    fault = HTTP_FAULTS[fault_name]
    target = _target(request, fault)
    start = time.monotonic()
    errors = HTTP_STYLES[style](target, fault.scenario)
    # the client's timeout bounds the connection and the answer (2x), plus scheduling slack
    _check(errors, fault, 2 * fault.timeout + 5, time.monotonic() - start)


@pytest.mark.parametrize(("fault_name", "style"), GRPC_CASES)
def test_grpc_fault_matrix(request: pytest.FixtureRequest, fault_name: str, style: str) -> None:
    fault = GRPC_FAULTS[fault_name]
    target = _target(request, fault)
    start = time.monotonic()
    errors = GRPC_STYLES[style](target, fault.scenario)
    _check(errors, fault, fault.timeout + 8, time.monotonic() - start)


def test_matrix_size() -> None:
    """The matrix covers every fault with every client and call style it applies to."""
    assert len(HTTP_CASES) + len(GRPC_CASES) >= 190
    clients = {style.split("/")[0] for style in [*HTTP_STYLES, *GRPC_STYLES]}
    assert clients == {"grpc", "grpc.aio", "http", "http.aio"}


# -- the same scenarios answered correctly: the fault servers and probes are honest ----------------


@pytest.mark.parametrize("style", list(HTTP_STYLES))
def test_http_probes_succeed_on_a_correct_answer(http_server: HttpFaultServer, style: str) -> None:
    assert HTTP_STYLES[style](Target(http_server.url), "ok") == []


@pytest.mark.parametrize("style", list(GRPC_STYLES))
def test_grpc_probes_succeed_on_a_correct_answer(grpc_server: GrpcFaultServer, style: str) -> None:
    assert GRPC_STYLES[style](Target(grpc_server.url), "ok") == []


# -- beyond one call ---------------------------------------------------------------------------


def test_http_lying_content_length_does_not_poison_the_next_call(
    http_server: HttpFaultServer,
) -> None:
    """The bytes past a short Content-Length are not read as the next answer."""
    with _http_sync(Target(http_server.url)) as client:
        for _ in range(2):
            with pytest.raises(InferenceServerProtocolError):
                client.infer("content_length_short", _inputs(httpclient))
            result = client.infer("ok", _inputs(httpclient), outputs=_outputs(httpclient))
            assert result.as_numpy("OUT").tolist() == [1, 2]

    async def run() -> None:
        async with _http_aio(Target(http_server.url)) as client:
            for _ in range(2):
                with pytest.raises(InferenceServerProtocolError):
                    await client.infer("content_length_short", _inputs(httpaio))
                result = await client.infer("ok", _inputs(httpaio), outputs=_outputs(httpaio))
                assert result.as_numpy("OUT").tolist() == [1, 2]

    asyncio.run(asyncio.wait_for(run(), T))


def test_grpc_stream_goes_on_after_a_bad_response(grpc_server: GrpcFaultServer) -> None:
    """A response whose outputs lie is that request's error; the stream stays usable."""
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with _grpc_sync(Target(grpc_server.url)) as client:
        client.start_stream(lambda result, error: got.put((result, error)))
        client.async_stream_infer("shape_lie", _inputs(grpcclient), request_id="bad")
        client.async_stream_infer("ok", _inputs(grpcclient), request_id="good")
        first, second = got.get(timeout=T), got.get(timeout=T)
        client.stop_stream()
    assert isinstance(first[1], InferenceServerProtocolError)
    assert "request id 'bad'" in "".join(getattr(first[1], "__notes__", []))
    assert second[1] is None and second[0].as_numpy("OUT").tolist() == [1, 2]
    assert got.empty()


@pytest.mark.parametrize("cancel", [False, True])
def test_grpc_stop_stream_default_is_bounded(
    grpc_server: GrpcFaultServer, monkeypatch: pytest.MonkeyPatch, cancel: bool
) -> None:
    """stop_stream() with its defaults against a server that stalls the stream returns after
    a bounded wait, cancels, and the callback gets one CANCELLED error naming what was
    pending."""
    monkeypatch.setattr(grpc_sync_module, "STOP_STREAM_TIMEOUT", 1.0)
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with _grpc_sync(Target(grpc_server.url)) as client:
        client.start_stream(lambda result, error: got.put((result, error)))
        client.async_stream_infer("stall", _inputs(grpcclient), request_id="slow")
        assert got.get(timeout=T)[1] is None  # the first response
        start = time.monotonic()
        client.stop_stream(cancel_requests=cancel)
        elapsed = time.monotonic() - start
    assert elapsed < (1.0 if cancel else 1.0 + 5)
    if not cancel:
        assert elapsed >= 0.9
    errors = [error for _, error in _drain(got, T)]
    assert len(errors) == 1 and isinstance(errors[0], InferenceServerCancelledError)
    assert "id 'slow'" in "".join(getattr(errors[0], "__notes__", []))


def test_grpc_stop_stream_default_follows_stream_timeout(grpc_server: GrpcFaultServer) -> None:
    """With a stream_timeout, the stream's own deadline bounds stop_stream()."""
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with _grpc_sync(Target(grpc_server.url)) as client:
        client.start_stream(lambda result, error: got.put((result, error)), stream_timeout=1.0)
        client.async_stream_infer("stall", _inputs(grpcclient))
        assert got.get(timeout=T)[1] is None
        start = time.monotonic()
        client.stop_stream()
        assert time.monotonic() - start < 5
    errors = [error for _, error in _drain(got, T)]
    assert len(errors) == 1 and isinstance(errors[0], InferenceServerDeadlineExceededError)


def test_grpc_close_and_gc_end_the_stream(grpc_server: GrpcFaultServer) -> None:
    """A stream stalled by the server ends with close(), and with the client's collection."""
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client = _grpc_sync(Target(grpc_server.url))
    client.start_stream(lambda result, error: got.put((result, error)))
    client.async_stream_infer("stall", _inputs(grpcclient))
    assert got.get(timeout=T)[1] is None
    del client  # no close(): garbage collection cancels the stream
    gc.collect()
    errors = [error for _, error in _drain(got, T)]
    assert len(errors) == 1 and isinstance(errors[0], InferenceServerCancelledError)
    # (the autouse fixture checks that the stream thread is gone)

    async def run() -> InferenceServerException:
        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {"model_name": "stall", "inputs": _inputs(grpcaio)}
            await asyncio.sleep(3600)

        client = _grpc_aio(Target(grpc_server.url))
        iterator = client.stream_infer(requests())
        _, error = await iterator.__anext__()
        assert error is None
        await client.close()
        with pytest.raises(InferenceServerCancelledError) as info:
            await iterator.__anext__()
        with pytest.raises(StopAsyncIteration):  # exactly once
            await iterator.__anext__()
        return info.value

    assert "client was closed" in str(asyncio.run(asyncio.wait_for(run(), T)))


def test_grpc_stream_unanswered_requests(grpc_server: GrpcFaultServer) -> None:
    """The client closes its side; the server ends the stream (OK) without the final response
    due to a request sent with enable_empty_final_response: an error names its id.  A request
    without the flag is not reported (a decoupled model may answer nothing)."""
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with _grpc_sync(Target(grpc_server.url)) as client:
        client.start_stream(lambda result, error: got.put((result, error)))
        client.async_stream_infer(
            "unanswered", _inputs(grpcclient), request_id="lost", enable_empty_final_response=True
        )
        client.async_stream_infer("ok", _inputs(grpcclient), request_id="fine")
        assert got.get(timeout=T)[1] is None
        client.stop_stream()
    errors = [error for _, error in _drain(got, T) if error is not None]
    assert len(errors) == 1 and isinstance(errors[0], InferenceServerProtocolError)
    assert "no final response for 1 request(s)" in str(errors[0])
    assert "id 'lost'" in str(errors[0]) and "fine" not in str(errors[0])

    got = queue.Queue()
    with _grpc_sync(Target(grpc_server.url)) as client:  # no flag: nothing to report
        client.start_stream(lambda result, error: got.put((result, error)))
        client.async_stream_infer("unanswered", _inputs(grpcclient), request_id="quiet")
        client.stop_stream()
    assert got.empty()

    async def run(flag: bool) -> list[Any]:
        async def requests() -> AsyncIterator[dict[str, Any]]:
            for name, rid in (("unanswered", "lost"), ("ok", "fine")):
                yield {
                    "model_name": name,
                    "inputs": _inputs(grpcaio),
                    "request_id": rid,
                    "enable_empty_final_response": flag,
                }

        seen: list[Any] = []
        async with _grpc_aio(Target(grpc_server.url)) as client:
            try:
                async for result, error in client.stream_infer(requests()):
                    seen.append(error if error is not None else result.get_response().id)
            except InferenceServerException as error:
                seen.append(error)
        return seen

    seen = asyncio.run(asyncio.wait_for(run(True), T))
    assert seen[0] == "fine" and len(seen) == 2
    assert isinstance(seen[1], InferenceServerProtocolError) and "id 'lost'" in str(seen[1])
    assert asyncio.run(asyncio.wait_for(run(False), T)) == ["fine"]


def test_grpc_aio_stream_early_end_names_pending_ids(grpc_server: GrpcFaultServer) -> None:
    async def run() -> list[Any]:
        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {"model_name": "unanswered", "inputs": _inputs(grpcaio), "request_id": "a"}
            yield {"model_name": "early_end", "inputs": _inputs(grpcaio), "request_id": "b"}
            await asyncio.sleep(3600)

        seen: list[Any] = []
        async with _grpc_aio(Target(grpc_server.url)) as client:
            iterator = client.stream_infer(requests())
            try:
                async for result, error in iterator:
                    seen.append(error if error is not None else result.get_response().id)
            except InferenceServerException as error:
                seen.append(error)
            with pytest.raises(StopAsyncIteration):
                await iterator.__anext__()
        return seen

    seen = asyncio.run(asyncio.wait_for(run(), T))
    assert seen[0] == "b" and len(seen) == 2
    error = seen[1]
    assert isinstance(error, InferenceServerUnavailableError)
    assert "inputs iterator was exhausted" in str(error) and "id 'a'" in str(error)


def test_http_server_killed_while_the_client_waits(http_proxy: TcpProxy) -> None:
    """An HTTP call whose server dies (every connection dropped) while it waits fails once,
    promptly."""

    def kill_soon() -> None:
        time.sleep(0.3)
        http_proxy.close()

    killer = threading.Thread(target=kill_soon)
    killer.start()
    try:
        errors = probe_http_infer(Target(http_proxy.url), "silent")
    finally:
        killer.join(T)
    assert len(errors) == 1 and isinstance(errors[0], InferenceServerConnectionError)
