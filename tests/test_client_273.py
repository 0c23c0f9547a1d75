"""What NVIDIA's client changed from 2.51 to 2.73, and ours follows: reserved request
parameters, the text of an HTTP error whose body is not JSON, CUDA IPC handles read through
``cuda.bindings.runtime`` (``getPtr()`` on cuda-bindings 13, ``reserved`` on older ones), and
the names the aio modules re-export. (BF16 and system shared memory have their own tests in
``test_utils_bf16.py`` and ``test_shm_client.py``; the client differential suite compares all
of it with NVIDIA's package.)
"""

from __future__ import annotations

import asyncio
import base64
import ctypes
import http.server
import json
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
import tritonclient.utils.cuda_shared_memory as cudashm
from shm import cuda as shm_cuda
from tests.fake_cuda import CUDA_IPC_HANDLE_SIZE, FakeCudaRuntime, fake_cudart
from tritonclient.utils import (
    TRITON_RESERVED_REQUEST_PARAMS,
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
    InferenceServerException,
)

__all__ = ["fake_cudart"]  # the fixture, used by name

CLOSED = "127.0.0.1:1"  # the checks below fail before anything is sent

# -- reserved request parameters --------------------------------------------------------------


def _inputs(module: Any) -> list[Any]:
    item = module.InferInput("INPUT0", [1, 16], "INT32")
    item.set_data_from_numpy(np.zeros((1, 16), np.int32))
    return [item]


def _infer_error(flavour: str, parameters: dict[str, Any]) -> InferenceServerException:
    module = {"grpc": grpcclient, "http": httpclient, "grpc.aio": grpcaio, "http.aio": httpaio}
    mod = module[flavour]

    async def call_aio() -> Any:
        client = mod.InferenceServerClient(CLOSED)
        try:
            return await client.infer("simple", _inputs(mod), parameters=parameters)
        finally:
            await client.close()

    with pytest.raises(InferenceServerException) as info:
        if flavour.endswith("aio"):
            asyncio.run(call_aio())
        else:
            client = mod.InferenceServerClient(CLOSED)
            try:
                client.infer("simple", _inputs(mod), parameters=parameters)
            finally:
                client.close()
    return info.value


def test_reserved_names_are_those_of_273() -> None:
    assert {"timeout", "headers"} <= set(TRITON_RESERVED_REQUEST_PARAMS)
    assert TRITON_RESERVED_REQUEST_PARAMS_PREFIX == "triton_"


@pytest.mark.parametrize("flavour", ["grpc", "grpc.aio", "http", "http.aio"])
@pytest.mark.parametrize(
    "key", [*TRITON_RESERVED_REQUEST_PARAMS, "triton_x", "triton_enable_empty_final_response"]
)
def test_reserved_parameters_are_refused_with_nvidias_message(flavour: str, key: str) -> None:
    error = _infer_error(flavour, {key: 1})
    assert error.message() == f'Parameter "{key}" is a reserved parameter and cannot be specified.'
    assert error.status() is None and error.hint


@pytest.mark.parametrize("flavour", ["grpc", "http"])
def test_other_parameters_pass_the_check(flavour: str) -> None:
    # Not refused by the check: the call goes on and fails on the closed port instead.
    error = _infer_error(flavour, {"my_timeout": 1, "xtriton_": "a"})
    assert "reserved" not in (error.message() or "")


# -- HTTP error bodies that are not JSON ------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # the name http.server calls
        self.send_response(500)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def error_server() -> Iterator[Callable[[bytes], str]]:
    """A server answering every GET with status 500 and the body set by the returned call."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def answer(body: bytes) -> str:
        _Handler.body = body
        return f"127.0.0.1:{server.server_address[1]}"

    try:
        yield answer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _nvidia_error(body: bytes) -> tuple[str, str | None]:
    """The message and debug details NVIDIA's 2.73 _get_error makes of ``body``."""
    text: str | None = None
    try:
        text = body.decode("utf-8")
        if not text:
            return "client received an empty response from the server.", None
        return json.loads(text)["error"], None
    except Exception as exc:
        return (
            f"an exception occurred in the client while decoding the response: {exc}\n"
            f"response: {text}",
            text,
        )


@pytest.mark.parametrize(
    "body",
    [
        b"upstream proxy failed",
        b'{"no_error_key": 1}',
        b"[1, 2]",
        b"\xff\xfe not utf-8",
        b"",
        b'{"error": "a JSON error"}',
    ],
)
@pytest.mark.parametrize("aio", [False, True])
def test_http_error_bodies_as_nvidia_273(
    error_server: Callable[[bytes], str], body: bytes, aio: bool
) -> None:
    url = error_server(body)

    async def call_aio() -> None:
        client = httpaio.InferenceServerClient(url)
        try:
            await client.get_server_metadata()
        finally:
            await client.close()

    with pytest.raises(InferenceServerException) as info:
        if aio:
            asyncio.run(call_aio())
        else:
            client = httpclient.InferenceServerClient(url)
            try:
                client.get_server_metadata()
            finally:
                client.close()
    message, details = _nvidia_error(body)
    assert info.value.message() == message
    assert info.value.debug_details() == details
    assert info.value.status() == "500"


# -- CUDA IPC handles -------------------------------------------------------------------------


def test_runtime_is_cuda_bindings_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """As NVIDIA's 2.73 (``import cuda.bindings.runtime as cudart``)."""
    fake = types.ModuleType("cuda.bindings.runtime")
    bindings = types.ModuleType("cuda.bindings")
    bindings.runtime = fake  # type: ignore[attr-defined]
    package = types.ModuleType("cuda")
    package.bindings = bindings  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", package)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.runtime", fake)
    monkeypatch.setattr(shm_cuda, "_cudart", None)
    assert shm_cuda.runtime() is fake


def test_raw_handle_read_through_getptr(fake_cudart: FakeCudaRuntime) -> None:
    """cuda-bindings 13: the handle has no ``reserved`` field, only ``getPtr()``."""
    region = cudashm.create_shared_memory_region("r", 64, 0)
    try:
        raw = base64.b64decode(cudashm.get_raw_handle(region))
        assert len(raw) == CUDA_IPC_HANDLE_SIZE
        # The fake opens exactly the handles it made: the bytes are the handle's own.
        handle = type(fake_cudart.cudaIpcGetMemHandle(region._buffer.ptr)[1])()
        ctypes.memmove(handle.getPtr(), raw, len(raw))
        err, ptr = fake_cudart.cudaIpcOpenMemHandle(handle, 1)
        assert int(err) == 0 and ptr == region._buffer.ptr
        fake_cudart.cudaIpcCloseMemHandle(ptr)
    finally:
        cudashm.destroy_shared_memory_region(region)


def test_raw_handle_of_older_cuda_python(fake_cudart: FakeCudaRuntime) -> None:
    """cuda-python before 13: a handle without ``getPtr()`` is read from ``reserved``."""
    region = cudashm.create_shared_memory_region("r", 64, 0)
    try:
        expected = region._buffer.ipc_handle()
        region._buffer._ipc = types.SimpleNamespace(reserved=expected)
        assert base64.b64decode(cudashm.get_raw_handle(region)) == expected
    finally:
        cudashm.destroy_shared_memory_region(region)


# -- names the aio modules export -------------------------------------------------------------


def test_aio_modules_export_nvidias_names() -> None:
    assert grpcaio.MAX_GRPC_MESSAGE_SIZE == grpcclient.MAX_GRPC_MESSAGE_SIZE
    assert grpcaio.raise_error_grpc is grpcclient.raise_error_grpc
    assert issubclass(grpcaio.InferenceServerClient, grpcaio.InferenceServerClientBase)
    assert issubclass(httpaio.InferenceServerClient, httpaio.InferenceServerClientBase)
    assert httpaio.InferAsyncRequest is httpclient.InferAsyncRequest
