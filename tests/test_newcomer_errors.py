"""Errors a newcomer meets name the fix: no server at the URL, the wrong port for the client,
an unknown model, a datatype or shape that does not match the model's metadata.

The fix is in the exception's ``hint`` and in its traceback (an exception note); its
``message()``, ``status()`` and ``str()`` stay exactly NVIDIA's.
"""

from __future__ import annotations

import asyncio
import socket
import traceback
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from mock_server.app import MockServer
from mock_server.testing import serve
from tritonclient.utils import InferenceServerException
from tritonclient.utils._errors import connection_hint, server_error_with_hint

SYNC = {"grpc": grpcclient, "http": httpclient}
AIO = {"grpc": grpcaio, "http": httpaio}


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with serve(startup_models=["simple"], model_control_mode="explicit") as running:
        yield running


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"  # nothing listens once closed


def shown(error: BaseException) -> str:
    """What a traceback of ``error`` shows (its notes included)."""
    return "".join(traceback.format_exception(error))


def _call(protocol: str, url: str, method: str, *args: Any) -> InferenceServerException:
    client = SYNC[protocol].InferenceServerClient(url)
    try:
        with pytest.raises(InferenceServerException) as info:
            getattr(client, method)(*args)
    finally:
        client.close()
    return info.value


def _call_aio(protocol: str, url: str, method: str, *args: Any) -> InferenceServerException:
    async def main() -> InferenceServerException:
        client = AIO[protocol].InferenceServerClient(url)
        try:
            with pytest.raises(InferenceServerException) as info:
                await getattr(client, method)(*args)
        finally:
            await client.close()
        return info.value

    return asyncio.run(main())


@pytest.mark.parametrize("protocol", ["grpc", "http"])
@pytest.mark.parametrize("call", [_call, _call_aio])
def test_nothing_listening_names_the_fix(protocol: str, call: Any) -> None:
    error = call(protocol, _closed_port(), "is_server_live")
    text = shown(error)
    assert error.hint and error.hint in text
    assert "no server is listening" not in str(error)
    assert "no server is listening" in text and "python -m mock_server" in text
    assert ("8001" if protocol == "grpc" else "8000") in text


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_wrong_port_for_the_client_names_the_fix(server: MockServer, protocol: str) -> None:
    other_url = server.http_url if protocol == "grpc" else server.grpc_url
    text = shown(_call(protocol, other_url, "is_server_live"))
    name, other = ("gRPC", "HTTP") if protocol == "grpc" else ("HTTP", "gRPC")
    assert f"does not speak {name}: is this its {other} port?" in text


def _inputs(module: Any, datatype: str, array: np.ndarray) -> list[Any]:
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        item = module.InferInput(name, list(array.shape), datatype)
        item.set_data_from_numpy(array)
        inputs.append(item)
    return inputs


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_server_errors_a_newcomer_meets_name_the_fix(server: MockServer, protocol: str) -> None:
    url = server.grpc_url if protocol == "grpc" else server.http_url
    module = SYNC[protocol]
    ints = np.zeros((1, 16), dtype=np.int32)

    unknown = _call(protocol, url, "infer", "simple_string", _inputs(module, "INT32", ints))
    assert "unknown model" in shown(unknown) and "load_model()" in shown(unknown)
    assert "load_model()" not in str(unknown) and "load_model()" not in unknown.message()

    floats = np.zeros((1, 16), dtype=np.float32)
    mismatch = _call(protocol, url, "infer", "simple", _inputs(module, "FP32", floats))
    assert "expects 'INT32'" in str(mismatch)
    assert "create the InferInput with datatype 'INT32'" in shown(mismatch)
    assert "get_model_metadata('simple')" in str(mismatch.hint)
    assert (mismatch.message() or "").endswith("expects 'INT32'")

    short = np.zeros((1, 8), dtype=np.int32)
    shape = _call(protocol, url, "infer", "simple", _inputs(module, "INT32", short))
    assert "unexpected shape" in str(shape) and "get_model_metadata()" in shown(shape)
    assert "get_model_metadata()" not in str(shape)


def test_hints_only_where_they_apply() -> None:
    assert connection_hint("Connection refused", "http", "h:1").startswith(
        "no server is listening at h:1"
    )
    assert connection_hint("Trying to connect an http1.x server", "grpc") != ""
    assert connection_hint("Trying to connect an http1.x server", "http") == ""
    assert connection_hint("deadline exceeded", "grpc") == ""
    plain = InferenceServerException("something else failed", "StatusCode.INTERNAL")
    kept = server_error_with_hint(plain)
    assert kept.message() == "something else failed" and kept.hint is None
    assert type(kept).__name__ == "InferenceServerInternalError"
    hinted = server_error_with_hint(
        InferenceServerException("Request for unknown model: 'x' is not found", "400")
    )
    assert hinted.message() == "Request for unknown model: 'x' is not found"
    assert str(hinted) == "[400] Request for unknown model: 'x' is not found"
    assert hinted.status() == "400"
    assert hinted.hint is not None and hinted.hint.startswith("the server has no such model")
    assert f"hint: {hinted.hint}" in shown(hinted)


def test_hint_survives_pickling_and_status_subclassing() -> None:
    import pickle

    error = InferenceServerException("m", "StatusCode.NOT_FOUND").with_hint("do this")
    again = pickle.loads(pickle.dumps(error))
    assert (again.message(), again.status(), again.hint) == ("m", "StatusCode.NOT_FOUND", "do this")
    assert "hint: do this" in shown(again)
    assert server_error_with_hint(error).hint == "do this"
