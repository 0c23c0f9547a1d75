"""The HTTP clients' compatibility seams (``tritonclient.http._seams``): the private names
that tests written for NVIDIA's client patch.

The mock-stub cases follow Triton's own QA test ``qa/L0_http/http_client_plugin_test.py``
(NVIDIA's client passes it): the stub is replaced, ``_raise_if_error`` and ``InferResult``
are patched, and the calls must reach the stub with NVIDIA's arguments.  The other cases use
the seams against the bundled server and check that results and errors stay those of the
usual path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from unittest.mock import ANY, AsyncMock, MagicMock, patch

import numpy as np
import pytest

import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from mock_server.app import BUNDLED_MODELS, MockServer
from mock_server.core.server import ServerOptions
from tests.test_http_client import frontend, simple_inputs
from tritonclient.http import InferenceServerClientPlugin, _seams
from tritonclient.utils import InferenceServerException

HEADERS = {"MY-KEY": "MY-VALUE"}
#: Nothing listens there: a call that reached the network would fail to connect.
NOWHERE = "127.0.0.1:1"


class _Headers(InferenceServerClientPlugin):
    def __call__(self, request: Any) -> None:
        request.headers.update(HEADERS)


def _json_input() -> list[httpclient.InferInput]:
    data = np.arange(8, dtype=np.float32).reshape(1, -1)
    # binary_data=False: no Inference-Header-Content-Length, so the headers are the plugin's.
    return [httpclient.InferInput("INPUT0", [1, 8], "FP32").set_data_from_numpy(data, False)]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    # Client shared memory allowed, as Triton 2.73 is started for it: a test unregisters.
    options = ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True)
    with MockServer(options, frontend()) as server:
        yield server.http_url.split("://")[-1]


# -- a stub replaced by a mock (Triton's QA) ---------------------------------------------------


def test_sync_mock_stub_gets_nvidias_calls() -> None:
    client = httpclient.InferenceServerClient(NOWHERE)
    client._client_stub = MagicMock()
    client.register_plugin(_Headers())
    assert client.is_server_live() is False  # a mock's status is not 200
    client._client_stub.get.assert_called_with(ANY, headers=HEADERS)
    client.unregister_plugin()
    client.is_server_live()
    client._client_stub.get.assert_called_with(ANY, headers={})

    for headers in ({}, HEADERS):
        if headers:
            client.register_plugin(_Headers())
        with (
            patch("tritonclient.http._client._raise_if_error") as raise_if_error,
            patch("tritonclient.http._client.InferResult") as result_type,
        ):
            result = client.infer("onnx_zero_1_float32", _json_input())
        client._client_stub.post.assert_called_with(
            request_uri="/v2/models/onnx_zero_1_float32/infer", body=ANY, headers=headers
        )
        response = client._client_stub.post.return_value
        raise_if_error.assert_called_with(response)
        result_type.assert_called_with(response, False)
        assert result is result_type.return_value
        if headers:
            client.unregister_plugin()
    body = client._client_stub.post.call_args.kwargs["body"]
    assert b'"data":[0.0,1.0,2.0,3.0,4.0,5.0,6.0,7.0]' in body.replace(b" ", b"")
    stub = client._client_stub
    client.close()
    stub.close.assert_called_once_with()  # as NVIDIA's close() closes its stub


def test_aio_mock_stub_methods_get_nvidias_calls() -> None:
    async def main() -> None:
        client = aioclient.InferenceServerClient(NOWHERE)
        client._stub.get = AsyncMock()
        client.register_plugin(_Headers())
        assert await client.is_server_live() is False
        client._stub.get.assert_awaited_with(
            url=f"http://{NOWHERE}/v2/health/live", headers=HEADERS
        )
        client.unregister_plugin()
        await client.is_server_live()
        client._stub.get.assert_awaited_with(url=ANY, headers={})

        response = MagicMock()
        response.read = AsyncMock(return_value=b"body")
        client._stub.post = AsyncMock(return_value=response)
        for headers in (HEADERS, {}):
            if headers:
                client.register_plugin(_Headers())
            with (
                patch("tritonclient.http.aio._raise_if_error") as raise_if_error,
                patch("tritonclient.http.aio.InferResult") as result_type,
            ):
                result = await client.infer("onnx_zero_1_float32", _json_input())
            client._stub.post.assert_awaited_with(url=ANY, data=ANY, headers=headers)
            raise_if_error.assert_awaited_with(response)  # a coroutine function, as NVIDIA's
            result_type.from_response_body.assert_called_with(
                b"body", False, response.headers.get.return_value, ANY
            )
            assert result is result_type.from_response_body.return_value
            if headers:
                client.unregister_plugin()
        await client.close()

    asyncio.run(asyncio.wait_for(main(), 30))


# -- the seams against a real server -----------------------------------------------------------


class _Recorder:
    """A stub wrapping the client's own, as a user's test would."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def get(self, request_uri: str, headers: Any = None) -> Any:
        self.calls.append(f"GET {request_uri}")
        return self.inner.get(request_uri, headers=headers)

    def post(self, request_uri: str, body: Any = None, headers: Any = None) -> Any:
        self.calls.append(f"POST {request_uri}")
        return self.inner.post(request_uri, body=body, headers=headers)


def test_sync_wrapped_stub_keeps_results_and_errors(url: str) -> None:
    with httpclient.InferenceServerClient(url) as client:
        inputs, a = simple_inputs()
        usual = client.infer("simple", inputs).as_numpy("OUTPUT0")
        with pytest.raises(InferenceServerException) as usual_error:
            client.infer("nope", inputs)
        client._client_stub = recorder = _Recorder(client._client_stub)
        assert client.is_server_live() and client.is_model_ready("simple")
        assert not client.is_model_ready("nope")
        assert client.get_model_metadata("simple")["name"] == "simple"
        result = client.infer("simple", inputs, headers={"x-one": "1"})
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), usual)
        np.testing.assert_array_equal(
            client.async_infer("simple", inputs).get_result(timeout=30).as_numpy("OUTPUT0"),
            a + 1,
        )
        with pytest.raises(InferenceServerException, match="unknown model") as error:
            client.infer("nope", inputs)
        assert (error.value.status(), str(error.value)) == (
            usual_error.value.status(),
            str(usual_error.value),
        )
        client.unregister_system_shared_memory()  # a POST without a body
        assert recorder.calls[:3] == [
            "GET /v2/health/live",
            "GET /v2/models/simple/ready",
            "GET /v2/models/nope/ready",
        ]
        assert recorder.calls.count("POST /v2/models/simple/infer") == 2
        assert recorder.calls[-1] == "POST /v2/systemsharedmemory/unregister"


def test_patched_module_functions_without_a_stub(url: str) -> None:
    """Patched alone, ``_raise_if_error`` sees every answer (a 200 one too, as in NVIDIA's
    client) and ``InferResult`` makes every result, on the client's usual transport."""
    inputs, a = simple_inputs()
    with httpclient.InferenceServerClient(url) as client:
        with patch(
            "tritonclient.http._client._raise_if_error", side_effect=_seams.raise_if_error
        ) as spy:
            result = client.infer("simple", inputs)
            with pytest.raises(InferenceServerException, match="unknown model"):
                client.infer("nope", inputs)
            job = client.async_infer("simple", inputs)
            np.testing.assert_array_equal(job.get_result(timeout=30).as_numpy("OUTPUT0"), a + 1)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + 1)
        assert [c.args[0].status_code for c in spy.call_args_list] == [200, 404, 200]
        with patch("tritonclient.http._client.InferResult") as result_type:
            assert client.infer("simple", inputs) is result_type.return_value
        assert client.infer("simple", inputs).as_numpy("OUTPUT0") is not None  # unpatched


def test_aio_wrapped_stub_keeps_results_and_errors(url: str) -> None:
    async def main() -> None:
        inputs, a = simple_inputs()
        async with aioclient.InferenceServerClient(url) as client:
            seen: list[str] = []
            inner_get, inner_post = client._stub.get, client._stub.post

            async def get(url: str, headers: Any = None) -> Any:
                seen.append("GET " + url.split("/", 3)[3])
                return await inner_get(url=url, headers=headers)

            async def post(url: str, data: Any = None, headers: Any = None) -> Any:
                seen.append("POST " + url.split("/", 3)[3])
                return await inner_post(url=url, data=data, headers=headers)

            client._stub.get, client._stub.post = get, post
            assert await client.is_server_ready()
            assert (await client.get_model_config("simple"))["name"] == "simple"
            result = await client.infer("simple", inputs)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + 1)
            with pytest.raises(InferenceServerException, match="unknown model") as error:
                await client.infer("nope", inputs)
            assert error.value.status() == "404"  # the bundled server's answer
            with patch(
                "tritonclient.http.aio._raise_if_error", side_effect=_seams.aio_raise_if_error
            ) as spy:
                await client.infer("simple", inputs)
            assert spy.await_count == 1
            assert seen == [
                "GET v2/health/ready",
                "GET v2/models/simple/config",
                "POST v2/models/simple/infer",
                "POST v2/models/nope/infer",
                "POST v2/models/simple/infer",
            ]

    asyncio.run(asyncio.wait_for(main(), 60))


def test_unused_seams_leave_the_usual_path(url: str) -> None:
    """A client whose seams nobody touched has no stub and reads answers its own way."""
    with httpclient.InferenceServerClient(url) as client:
        inputs, _ = simple_inputs()
        client.infer("simple", inputs)
        assert client._seam is None
