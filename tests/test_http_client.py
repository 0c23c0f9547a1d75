"""``tritonclient.http`` (sync, gevent) against the bundled server, in process."""

from __future__ import annotations

import gc
import json
import shutil
import socket
import ssl
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tritonclient.http as httpclient
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ModelControlMode, ServerOptions
from shm import posix
from tests.tls import make_tls_files
from tritonclient._codec.types import InferOptions
from tritonclient.http.auth import BasicAuth
from tritonclient.utils import InferenceServerException

AUTH = "Basic " + __import__("base64").b64encode(b"user:secret").decode()


def frontend(**kw: Any) -> FrontendOptions:
    return FrontendOptions(
        http_port=0, grpc_port=0, metrics_port=0, allow_grpc=False, allow_metrics=False, **kw
    )


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True), frontend()
    ) as server:
        yield server.http_url.split("://")[-1]


@pytest.fixture
def client(url: str) -> Iterator[httpclient.InferenceServerClient]:
    with httpclient.InferenceServerClient(url, concurrency=4) as c:
        yield c
    assert c._transport._loop is not None and not c._transport._loop.is_alive()


def simple_inputs(binary: bool = True) -> tuple[list[httpclient.InferInput], np.ndarray]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    i0 = httpclient.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(a, binary)
    i1 = httpclient.InferInput("INPUT1", [1, 16], "INT32").set_data_from_numpy(b, binary)
    return [i0, i1], a


# -- health, metadata, config, statistics, settings ------------------------------------------


def test_health_and_metadata(client: httpclient.InferenceServerClient) -> None:
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("simple") and client.is_model_ready("simple", "1")
    assert not client.is_model_ready("nope")
    meta = client.get_server_metadata(headers={"x": "1"}, query_params={"a": [1, 2]})
    assert "binary_tensor_data" in meta["extensions"]
    model = client.get_model_metadata("simple", "1")
    assert model["name"] == "simple" and {i["name"] for i in model["inputs"]} == {
        "INPUT0",
        "INPUT1",
    }
    config = client.get_model_config("simple")
    assert config["name"] == "simple" and config["max_batch_size"] == 8
    with pytest.raises(InferenceServerException, match="model version must be a string"):
        client.get_model_metadata("simple", 1)  # type: ignore[arg-type]


def test_statistics_trace_log(client: httpclient.InferenceServerClient) -> None:
    client.infer("simple", simple_inputs()[0])
    stats = client.get_inference_statistics("simple")
    assert stats["model_stats"][0]["name"] == "simple"
    assert stats["model_stats"][0]["inference_count"] >= 1
    assert len(client.get_inference_statistics()["model_stats"]) > 1
    trace = client.get_trace_settings()
    assert "trace_level" in trace
    updated = client.update_trace_settings("simple", {"trace_rate": "7"})
    assert updated["trace_rate"] == "7"
    assert client.get_trace_settings("simple")["trace_rate"] == "7"
    client.update_trace_settings("simple", {"trace_rate": None})
    log = client.get_log_settings()
    assert "log_info" in log
    assert client.update_log_settings({"log_verbose_level": 1})["log_verbose_level"] == 1
    client.update_log_settings({"log_verbose_level": log["log_verbose_level"]})


def test_repository_index(client: httpclient.InferenceServerClient) -> None:
    index = client.get_model_repository_index()
    assert {"name": "simple", "version": "1", "state": "READY"} in [
        {k: m.get(k) for k in ("name", "version", "state")} for m in index
    ]


def test_load_unload_explicit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BUNDLED_MODELS / "simple", repo / "simple")
    shutil.copytree(BUNDLED_MODELS / "identity_int32", repo / "identity_int32")
    options = ServerOptions(model_repository=[repo], model_control_mode=ModelControlMode.EXPLICIT)
    with (
        MockServer(options, frontend()) as server,
        httpclient.InferenceServerClient(server.http_url.split("://")[-1]) as client,
    ):
        assert not client.is_model_ready("simple")
        client.load_model("simple")
        assert client.is_model_ready("simple")
        client.infer("simple", simple_inputs()[0])
        client.unload_model("simple", unload_dependents=True)
        deadline = time.monotonic() + 10
        while client.is_model_ready("simple") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not client.is_model_ready("simple")
        client.load_model("identity_int32")
        config = client.get_model_config("identity_int32")
        config["parameters"] = {"note": {"string_value": "override"}}
        model_py = (repo / "identity_int32" / "1" / "model.py").read_bytes()
        client.load_model(
            "identity_int32", config=json.dumps(config), files={"file:1/model.py": model_py}
        )
        assert client.is_model_ready("identity_int32")
        reloaded = client.get_model_config("identity_int32")
        assert reloaded["parameters"]["note"]["string_value"] == "override"
        with pytest.raises(InferenceServerException, match="missing") as info:
            client.load_model("missing")
        assert info.value.status() in ("400", "500")


# -- inference ---------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("binary_out", [True, False])
def test_infer_simple(
    client: httpclient.InferenceServerClient, binary: bool, binary_out: bool
) -> None:
    inputs, a = simple_inputs(binary)
    outputs = [
        httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary_out),
        httpclient.InferRequestedOutput("OUTPUT1", binary_data=binary_out),
    ]
    result = client.infer("simple", inputs, outputs=outputs, request_id="r1")
    assert np.array_equal(result.as_numpy("OUTPUT0"), a + 1)
    assert np.array_equal(result.as_numpy("OUTPUT1"), a - 1)
    assert result.get_response()["id"] == "r1"
    assert result.get_output("OUTPUT0")["datatype"] == "INT32"
    assert result.get_output("nope") is None and result.as_numpy("nope") is None


def test_infer_simple_string(client: httpclient.InferenceServerClient) -> None:
    a = np.array([str(i).encode() for i in range(16)], dtype=np.object_).reshape(1, 16)
    b = np.array([b"1"] * 16, dtype=np.object_).reshape(1, 16)
    for binary in (True, False):
        inputs = [
            httpclient.InferInput("INPUT0", [1, 16], "BYTES").set_data_from_numpy(a, binary),
            httpclient.InferInput("INPUT1", [1, 16], "BYTES").set_data_from_numpy(b, binary),
        ]
        result = client.infer("simple_string", inputs)
        out0 = result.as_numpy("OUTPUT0")
        assert [int(x) for x in out0.ravel()] == [i + 1 for i in range(16)]


IDENTITY = [
    ("BOOL", np.array([[True, False, True]])),
    ("INT8", np.array([[-128, 0, 127]], dtype=np.int8)),
    ("INT16", np.array([[-3, 0, 3]], dtype=np.int16)),
    ("INT32", np.array([[-(2**31), 0, 2**31 - 1]], dtype=np.int32)),
    ("INT64", np.array([[-(2**63), 0, 2**63 - 1]], dtype=np.int64)),
    ("UINT8", np.array([[0, 1, 255]], dtype=np.uint8)),
    ("UINT16", np.array([[0, 1, 65535]], dtype=np.uint16)),
    ("UINT32", np.array([[0, 1, 2**32 - 1]], dtype=np.uint32)),
    ("UINT64", np.array([[0, 1, 2**64 - 1]], dtype=np.uint64)),
    ("FP16", np.array([[0.5, -1.0, 65504]], dtype=np.float16)),
    ("FP32", np.array([[0.1, -1.5, np.inf]], dtype=np.float32)),
    ("FP64", np.array([[0.1, -1e308, np.nan]], dtype=np.float64)),
    ("BF16", np.array([[1.0, -2.5, 3.0]], dtype=ml_dtypes.bfloat16)),
    ("BYTES", np.array([[b"a", b"\x00\xff", b""]], dtype=np.object_)),
]


@pytest.mark.parametrize(("datatype", "array"), IDENTITY, ids=[d for d, _ in IDENTITY])
@pytest.mark.parametrize("binary", [True, False])
def test_identity(
    client: httpclient.InferenceServerClient, datatype: str, array: np.ndarray, binary: bool
) -> None:
    model = f"identity_{datatype.lower()}"
    inp = httpclient.InferInput("INPUT0", list(array.shape), datatype)
    if not binary and datatype == "BF16":
        with pytest.raises(InferenceServerException, match="BF16 inputs must be sent as binary"):
            inp.set_data_from_numpy(array, binary_data=False)
        return
    if not binary and datatype == "BYTES":
        with pytest.raises(InferenceServerException, match="UTF-8"):
            inp.set_data_from_numpy(array, binary_data=False)
        array = np.array([["a", "é", ""]], dtype=np.object_)
    inp.set_data_from_numpy(array, binary_data=binary)
    out = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary or datatype in ("FP16",))]
    if not binary and datatype == "FP16":
        with pytest.raises(InferenceServerException) as info:
            client.infer(model, [inp], outputs=out)
        assert info.value.status() == "400" and "FP16" in str(info.value)
        return
    got = client.infer(model, [inp], outputs=out).as_numpy("OUTPUT0")
    assert got is not None and got.shape == array.shape
    if datatype == "BYTES":
        expect = [x if isinstance(x, bytes) else x.encode() for x in array.ravel()]
        assert [x if isinstance(x, bytes) else x.encode() for x in got.ravel()] == expect
    else:
        assert got.dtype == array.dtype
        np.testing.assert_array_equal(got, array)


def test_sequence(client: httpclient.InferenceServerClient) -> None:
    values = [0, 11, 7, 5, 3, 2, 0, 1]
    for seq_id, sign, offset in ((1000, 1, 0), (str(uuid.uuid4()), -1, 100)):
        got = []
        for i, value in enumerate(values):
            v = offset if i == 0 else sign * value
            inp = httpclient.InferInput("INPUT", [1, 1], "INT32")
            inp.set_data_from_numpy(np.array([[v]], dtype=np.int32))
            result = client.infer(
                "simple_sequence",
                [inp],
                sequence_id=seq_id,
                sequence_start=i == 0,
                sequence_end=i == len(values) - 1,
            )
            got.append(int(result.as_numpy("OUTPUT")[0][0]))
        assert got == [offset + 1] + [sign * v for v in values[1:]]


def test_classification(client: httpclient.InferenceServerClient) -> None:
    for binary in (True, False):
        out = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary, class_count=3)
        result = client.infer("simple", simple_inputs()[0], outputs=[out])
        got = [
            x if isinstance(x, bytes) else x.encode() for x in result.as_numpy("OUTPUT0").ravel()
        ]
        assert got == [b"16:15", b"15:14", b"14:13"]
    with pytest.raises(InferenceServerException, match="classification"):
        out.set_shared_memory("r", 64)


def test_parameters_and_priority(client: httpclient.InferenceServerClient) -> None:
    result = client.infer(
        "simple", simple_inputs()[0], parameters={"custom": "x", "n": 3}, priority=1, timeout=10**7
    )
    assert result.as_numpy("OUTPUT0") is not None
    with pytest.raises(InferenceServerException, match="reserved"):
        client.infer("simple", simple_inputs()[0], parameters={"sequence_id": 1})


@pytest.mark.parametrize("request_algo", [None, "gzip", "deflate"])
@pytest.mark.parametrize("response_algo", [None, "gzip", "deflate"])
def test_compression(
    client: httpclient.InferenceServerClient, request_algo: str | None, response_algo: str | None
) -> None:
    inputs, a = simple_inputs()
    result = client.infer(
        "simple",
        inputs,
        request_compression_algorithm=request_algo,
        response_compression_algorithm=response_algo,
    )
    assert np.array_equal(result.as_numpy("OUTPUT0"), a + 1)


def test_compression_unknown(client: httpclient.InferenceServerClient) -> None:
    with pytest.raises(InferenceServerException, match="expected 'gzip' or 'deflate'"):
        client.infer("simple", simple_inputs()[0], request_compression_algorithm="br")


def test_generate_and_parse_body(client: httpclient.InferenceServerClient) -> None:
    inputs, a = simple_inputs()
    body, json_size = httpclient.InferenceServerClient.generate_request_body(inputs, request_id="x")
    assert json_size is not None and json.loads(body[:json_size])["id"] == "x"
    assert len(body) == json_size + 128
    json_body, size = httpclient.InferenceServerClient.generate_request_body(
        simple_inputs(False)[0]
    )
    assert size is None and json.loads(json_body)["inputs"][0]["data"][:2] == [0, 1]
    result = client.infer("simple", inputs)
    response = json.dumps(result.get_response()).encode()
    parsed = httpclient.InferenceServerClient.parse_response_body(
        response + a.tobytes() + a.tobytes(), header_length=len(response)
    )
    assert np.array_equal(parsed.as_numpy("OUTPUT1"), a)
    direct = httpclient.InferResult.from_response_body(
        response + a.tobytes() + a.tobytes(), False, str(len(response))
    )
    assert np.array_equal(direct.as_numpy("OUTPUT0"), a)


# -- errors ----------------------------------------------------------------------------------


def test_errors(client: httpclient.InferenceServerClient) -> None:
    with pytest.raises(InferenceServerException) as info:
        client.infer("nope", simple_inputs()[0])
    assert info.value.status() == "404" and "nope" in info.value.message()
    with pytest.raises(InferenceServerException) as info:
        client.get_model_metadata("nope")
    assert info.value.status() in ("400", "404")
    bad = httpclient.InferInput("INPUT0", [1, 16], "FP32").set_data_from_numpy(
        np.zeros((1, 16), np.float32)
    )
    with pytest.raises(InferenceServerException) as info:
        client.infer("simple", [bad, simple_inputs()[0][1]])
    assert info.value.status() == "400" and "FP32" in info.value.message()
    wrong_shape = httpclient.InferInput("INPUT0", [1, 8], "INT32").set_data_from_numpy(
        np.zeros((1, 8), np.int32)
    )
    with pytest.raises(InferenceServerException) as info:
        client.infer("simple", [wrong_shape, simple_inputs()[0][1]])
    assert info.value.status() == "400"
    with pytest.raises(InferenceServerException, match="unexpected datatype"):
        httpclient.InferInput("X", [2], "INT32").set_data_from_numpy(np.zeros(2, np.float32))
    with pytest.raises(InferenceServerException, match="unexpected numpy array shape"):
        httpclient.InferInput("X", [3], "INT32").set_data_from_numpy(np.zeros(2, np.int32))
    with pytest.raises(InferenceServerException, match="Transfer-Encoding"):
        client.is_server_live(headers={"Transfer-Encoding": "chunked"})
    with pytest.raises(InferenceServerException, match="scheme"):
        httpclient.InferenceServerClient("http://localhost:8000")


class _RawServer:
    """A tiny HTTP server answering every request with a fixed status and body."""

    def __init__(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
        import http.server

        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(outer.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            do_GET = _answer  # noqa: N815 - http.server's naming
            do_POST = _answer  # noqa: N815 - http.server's naming

            def log_message(self, *args: Any) -> None:
                pass

        self.status, self.body = status, body
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.mark.parametrize(
    ("status", "body", "match"),
    [
        (500, b"<html>Internal Server Error</html>", "Internal Server Error"),
        (502, b"", "empty response"),
        (400, b'{"error": "custom failure"}', "custom failure"),
        (404, b'{"nope": 1}', "decoding the response"),
    ],
)
def test_non_json_error_bodies(status: int, body: bytes, match: str) -> None:
    with _RawServer(status, body) as url, httpclient.InferenceServerClient(url) as client:
        with pytest.raises(InferenceServerException, match=match) as info:
            client.get_server_metadata()
        assert info.value.status() == str(status)
        with pytest.raises(InferenceServerException, match=match):
            client.infer("simple", simple_inputs()[0])
        assert client.is_server_live() is False


def test_non_json_200_body() -> None:
    with _RawServer(200, b"not json") as url, httpclient.InferenceServerClient(url) as client:
        with pytest.raises(InferenceServerException, match="not JSON"):
            client.get_server_metadata()
        with pytest.raises(InferenceServerException, match="inference response is not JSON"):
            client.infer("simple", simple_inputs()[0])


def test_connection_refused() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with (
        httpclient.InferenceServerClient(f"127.0.0.1:{port}", connection_timeout=2) as client,
        pytest.raises(OSError),
    ):
        client.is_server_live()


# -- async, concurrency, threads ---------------------------------------------------------------


def slow_input(delay_ms: int) -> list[httpclient.InferInput]:
    value = httpclient.InferInput("INPUT0", [1], "INT32").set_data_from_numpy(
        np.array([delay_ms], dtype=np.int32)
    )
    delay = httpclient.InferInput("DELAY_MS", [1], "UINT32").set_data_from_numpy(
        np.array([delay_ms], dtype=np.uint32)
    )
    return [value, delay]


def test_async_infer(client: httpclient.InferenceServerClient) -> None:
    inputs, a = simple_inputs()
    started = time.monotonic()
    handles = [client.async_infer("simple", inputs, request_id=str(i)) for i in range(100)]
    assert time.monotonic() - started < 0.9  # NVIDIA's sleeps 10 ms per call: >= 1 s
    for i, handle in enumerate(handles):
        result = handle.get_result(timeout=30)
        assert result.get_response()["id"] == str(i)
        assert np.array_equal(result.as_numpy("OUTPUT0"), a + 1)
    with pytest.raises(InferenceServerException) as info:
        client.async_infer("nope", inputs).get_result(timeout=30)
    assert info.value.status() == "404"


def test_async_get_result_timeout(client: httpclient.InferenceServerClient) -> None:
    handle = client.async_infer("slow", slow_input(500))
    with pytest.raises(InferenceServerException, match="failed to obtain inference response"):
        handle.get_result(block=False)
    with pytest.raises(InferenceServerException, match="failed to obtain inference response"):
        handle.get_result(timeout=0.05)
    assert handle.get_result(timeout=30).as_numpy("OUTPUT0")[0] == 500
    assert handle.get_result(block=False).as_numpy("OUTPUT0")[0] == 500


def test_concurrency_parallel(url: str) -> None:
    with httpclient.InferenceServerClient(url, concurrency=8) as client:
        started = time.monotonic()
        handles = [client.async_infer("slow", slow_input(300)) for _ in range(8)]
        assert [h.get_result(timeout=30).as_numpy("OUTPUT0")[0] for h in handles] == [300] * 8
        # The slow model runs one request at a time per instance; what matters here is that
        # all requests were on the wire together and every one completed.
        assert time.monotonic() - started < 30


def test_max_greenlets(url: str) -> None:
    with httpclient.InferenceServerClient(url, concurrency=2, max_greenlets=2) as client:
        handles = [client.async_infer("simple", simple_inputs()[0]) for _ in range(20)]
        assert all(h.get_result(timeout=30).as_numpy("OUTPUT0") is not None for h in handles)


def test_threads_share_client_and_close_elsewhere(url: str) -> None:
    client = httpclient.InferenceServerClient(url, concurrency=4)
    errors: list[BaseException] = []
    results: list[bool] = []

    def work() -> None:
        try:
            for _ in range(10):
                inputs, a = simple_inputs()
                ok = np.array_equal(client.infer("simple", inputs).as_numpy("OUTPUT0"), a + 1)
                results.append(ok and client.is_server_live())
                results.append(
                    client.async_infer("simple", inputs).get_result(timeout=30) is not None
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 160 and all(results)
    closer = threading.Thread(target=client.close)
    closer.start()
    closer.join(30)
    assert not closer.is_alive()
    assert client._transport._loop is not None and not client._transport._loop.is_alive()
    client.close()  # twice is fine
    with pytest.raises(InferenceServerException, match="closed"):
        client.is_server_live()


def test_gc_from_other_thread_and_unclosed(url: str) -> None:
    unraisable: list[Any] = []
    old_hook = __import__("sys").unraisablehook
    __import__("sys").unraisablehook = unraisable.append
    try:
        holder: list[httpclient.InferenceServerClient] = []

        def make() -> None:
            holder.append(httpclient.InferenceServerClient(url))
            holder[0].infer("simple", simple_inputs()[0])

        t = threading.Thread(target=make)
        t.start()
        t.join(30)
        loop = holder[0]._transport._loop
        assert loop is not None
        pending = holder[0].async_infer("slow", slow_input(100))
        holder.clear()  # last reference dropped in this (another) thread
        gc.collect()
        assert pending.get_result(timeout=30).as_numpy("OUTPUT0")[0] == 100
        deadline = time.monotonic() + 10
        while loop.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not loop.is_alive()
    finally:
        __import__("sys").unraisablehook = old_hook
    assert not unraisable


def test_monkey_patch_free_program(url: str) -> None:
    import gevent.monkey

    assert not gevent.monkey.is_module_patched("socket")
    with httpclient.InferenceServerClient(url) as client:
        assert client.is_server_live()
    assert not gevent.monkey.is_module_patched("socket")


def test_base_path_and_verbose(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with httpclient.InferenceServerClient(url + "/", verbose=True) as client:
        client.infer("simple", simple_inputs()[0])
        assert client.is_server_live()
    out = capsys.readouterr().out
    assert "POST /v2/models/simple/infer" in out and "GET /v2/health/live" in out


# -- plugins, auth, TLS ----------------------------------------------------------------------


class HeaderPlugin(httpclient.InferenceServerClientPlugin):
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def __call__(self, request: httpclient.Request) -> None:
        self.seen.append(dict(request.headers))
        request.headers["authorization"] = AUTH


def test_plugins_and_basic_auth() -> None:
    options = frontend(
        http_restricted_api={"model-repository": ("authorization", AUTH), "health": ("k", "v")}
    )
    with (
        MockServer(ServerOptions(model_repository=[BUNDLED_MODELS]), options) as server,
        httpclient.InferenceServerClient(server.http_url.split("://")[-1]) as client,
    ):
        with pytest.raises(InferenceServerException) as info:
            client.get_model_repository_index()
        assert "restricted" in info.value.message()
        assert client.plugin() is None
        client.register_plugin(BasicAuth("user", "secret"))
        assert isinstance(client.plugin(), BasicAuth)
        assert isinstance(client.get_model_repository_index(), list)
        with pytest.raises(InferenceServerException, match="already registered"):
            client.register_plugin(BasicAuth("a", "b"))
        client.unregister_plugin()
        with pytest.raises(InferenceServerException, match="No plugin"):
            client.unregister_plugin()
        plugin = HeaderPlugin()
        client.register_plugin(plugin)
        user_headers = {"x-user": "1"}
        client.get_model_repository_index(headers=user_headers)
        assert plugin.seen == [{"x-user": "1"}] and user_headers == {"x-user": "1"}
        client.unregister_plugin()
        assert client.is_server_live(headers={"k": "v"})
        assert not client.is_server_live()


def test_https(tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path)
    options = frontend(http_ssl_cert=str(tls.server_cert), http_ssl_key=str(tls.server_key))
    with MockServer(ServerOptions(model_repository=[BUNDLED_MODELS]), options) as server:
        url = server.http_url.split("://")[-1]
        with httpclient.InferenceServerClient(
            url, ssl=True, ssl_options={"ca_certs": str(tls.ca_cert)}
        ) as client:
            assert client.is_server_live()
            inputs, a = simple_inputs()
            assert np.array_equal(client.infer("simple", inputs).as_numpy("OUTPUT0"), a + 1)

        def factory() -> ssl.SSLContext:
            return ssl.create_default_context(cafile=str(tls.ca_cert))

        with httpclient.InferenceServerClient(url, ssl=True, ssl_context_factory=factory) as client:
            assert client.is_server_ready()
        options = {"ca_certs": str(tls.ca_cert)}
        with httpclient.InferenceServerClient(
            url, ssl=True, insecure=True, ssl_options=options
        ) as client:
            assert client.is_server_live()
        with (
            httpclient.InferenceServerClient(url, ssl=True) as client,  # unknown CA
            pytest.raises(ssl.SSLError),
        ):
            client.is_server_live()


# -- shared memory ---------------------------------------------------------------------------


def test_system_shared_memory(client: httpclient.InferenceServerClient) -> None:
    key = f"/tc_http_{uuid.uuid4().hex[:8]}"
    out_key = key + "_out"
    region_in = posix.create(key, 128)
    region_out = posix.create(out_key, 128)
    try:
        a = np.arange(16, dtype=np.int32)
        region_in.buffer[:64] = a.tobytes()
        region_in.buffer[64:128] = np.ones(16, np.int32).tobytes()
        client.register_system_shared_memory("in", key, 128)
        client.register_system_shared_memory("out", out_key, 128)
        status = client.get_system_shared_memory_status()
        assert {r["name"] for r in status} >= {"in", "out"}
        assert client.get_system_shared_memory_status("in")[0]["key"] == key
        i0 = httpclient.InferInput("INPUT0", [1, 16], "INT32").set_shared_memory("in", 64)
        i1 = httpclient.InferInput("INPUT1", [1, 16], "INT32").set_shared_memory("in", 64, 64)
        o0 = httpclient.InferRequestedOutput("OUTPUT0")
        o0.set_shared_memory("out", 64)
        o1 = httpclient.InferRequestedOutput("OUTPUT1")
        o1.set_shared_memory("out", 64, offset=64)
        result = client.infer("simple", [i0, i1], outputs=[o0, o1])
        assert result.as_numpy("OUTPUT0") is None
        got0 = np.frombuffer(bytes(region_out.buffer[:64]), np.int32)
        got1 = np.frombuffer(bytes(region_out.buffer[64:]), np.int32)
        assert np.array_equal(got0, a + 1) and np.array_equal(got1, a - 1)
        o0.unset_shared_memory()
        assert "shared_memory_region" not in o0._get_tensor()["parameters"]
        client.unregister_system_shared_memory("in")
        assert [r["name"] for r in client.get_system_shared_memory_status()] == ["out"]
        client.unregister_system_shared_memory()
        assert client.get_system_shared_memory_status() == []
        with pytest.raises(InferenceServerException):
            client.register_system_shared_memory("bad", "/tc_http_missing_region", 64)
    finally:
        client.unregister_system_shared_memory()
        for region, k in ((region_in, key), (region_out, out_key)):
            region.close()
            posix.unlink(k)
    assert not Path("/dev/shm" + key).exists() and not Path("/dev/shm" + out_key).exists()


def test_cuda_shared_memory_endpoints(client: httpclient.InferenceServerClient) -> None:
    assert client.get_cuda_shared_memory_status() == []
    with pytest.raises(InferenceServerException):
        client.register_cuda_shared_memory("c", __import__("base64").b64encode(b"x" * 64), 0, 64)
    with pytest.raises(InferenceServerException, match="base64"):
        client.register_cuda_shared_memory("c", b"not base64!", 0, 64)
    client.unregister_cuda_shared_memory()
    client.unregister_cuda_shared_memory("c")


def test_network_timeout_and_close_waits(url: str) -> None:
    with (
        httpclient.InferenceServerClient(url, network_timeout=0.2) as client,
        pytest.raises(TimeoutError),
    ):
        client.infer("slow", slow_input(1500))
    client = httpclient.InferenceServerClient(url, concurrency=2)
    handles = [client.async_infer("slow", slow_input(100)) for _ in range(3)]
    client.close()  # finishes the requests in progress first, as NVIDIA's close() does
    assert [int(h.get_result(block=False).as_numpy("OUTPUT0")[0]) for h in handles] == [100] * 3
    with pytest.raises(InferenceServerException, match="closed"):
        client.async_infer("simple", simple_inputs()[0])


@pytest.mark.parametrize(
    ("blocked", "statement"),
    [
        ("geventhttpclient", "from tritonclient.http import InferenceServerClient"),
        ("aiohttp", "import tritonclient.http.aio"),
    ],
)
def test_missing_transport_library(blocked: str, statement: str) -> None:
    import subprocess
    import sys

    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "import tritonclient.http\n"
        "try:\n"
        f"    {statement}\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert out.returncode == 0, out.stderr
    assert "pip install tritonclient-ng[http]" in out.stdout


# -- the direct transport: large bodies, concurrency, snapshots ---------------------------------


def _identity_uint8(nbytes: int, seed: int) -> tuple[httpclient.InferInput, np.ndarray]:
    x = np.random.default_rng(seed).integers(0, 256, (1, nbytes), dtype=np.uint8)
    inp = httpclient.InferInput("INPUT0", list(x.shape), "UINT8").set_data_from_numpy(x)
    return inp, x


@pytest.mark.parametrize("nbytes", [3 << 20, (9 << 20) + 7])
def test_large_binary_round_trip(url: str, nbytes: int) -> None:
    out = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
    with httpclient.InferenceServerClient(url) as client:
        kept = []
        for seed in range(3):  # the server reuses its body buffer: earlier results must hold
            inp, x = _identity_uint8(nbytes, seed)
            got = client.infer("identity_uint8", [inp], outputs=out).as_numpy("OUTPUT0")
            assert got is not None and got.shape == x.shape
            np.testing.assert_array_equal(got, x)
            kept.append((got, x))
        for got, x in kept:
            np.testing.assert_array_equal(got, x)
        # the same through the gevent thread (async_infer)
        inp, x = _identity_uint8(nbytes, 7)
        got = client.async_infer("identity_uint8", [inp], outputs=out).get_result(timeout=60)
        np.testing.assert_array_equal(got.as_numpy("OUTPUT0"), x)


def test_threads_get_their_own_results(url: str) -> None:
    """Many threads on one client (direct transport, fewer connections than threads)."""
    errors: list[BaseException] = []
    out = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
    with httpclient.InferenceServerClient(url, concurrency=3) as client:

        def work(seed: int) -> None:
            try:
                for i in range(15):
                    inp, x = _identity_uint8(1000 + 97 * seed + i, seed * 100 + i)
                    got = client.infer("identity_uint8", [inp], outputs=out).as_numpy("OUTPUT0")
                    assert np.array_equal(got, x), (seed, i)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:3]


def test_call_bounded_by_timeouts_on_direct_path(url: str) -> None:
    with httpclient.InferenceServerClient(
        url, connection_timeout=0.1, network_timeout=0.3
    ) as client:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            client.infer("slow", slow_input(1500))
        assert time.monotonic() - started < 1.4
        # the connection that timed out is not reused: the next call is answered correctly
        assert client.infer("slow", slow_input(10)).as_numpy("OUTPUT0")[0] == 10


def test_close_waits_for_calls_in_other_threads(url: str) -> None:
    client = httpclient.InferenceServerClient(url)
    results: list[int] = []
    t = threading.Thread(
        target=lambda: results.append(
            int(client.infer("slow", slow_input(300)).as_numpy("OUTPUT0")[0])
        )
    )
    t.start()
    time.sleep(0.1)
    client.close()  # waits for the call in progress, which succeeds
    t.join(10)
    assert results == [300]
    with pytest.raises(InferenceServerException, match="closed"):
        client.infer("simple", simple_inputs()[0])


def test_mutation_after_set_data_is_not_sent(url: str) -> None:
    out = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
    with httpclient.InferenceServerClient(url) as client:
        for nbytes in (64, 2 << 20):
            inp, x = _identity_uint8(nbytes, 1)
            original = x.copy()
            x[:] = 0  # after set_data_from_numpy: NVIDIA sends the values set before
            got = client.infer("identity_uint8", [inp], outputs=out).as_numpy("OUTPUT0")
            np.testing.assert_array_equal(got, original)


# -- the direct path: calls run in the calling thread, with that thread's own HTTPClient --------


def _thread_entry(client: httpclient.InferenceServerClient) -> Any:
    from tritonclient._transport import gevent as impl

    return impl._registry.stubs.get(client._transport._shared)


def test_direct_path_does_not_hand_off(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with httpclient.InferenceServerClient(url) as client:
        assert client._transport._loop is not None

        def no_hand_off(fn: Any) -> Any:
            raise AssertionError("a plain call was handed to the hub thread")

        monkeypatch.setattr(client._transport._loop, "submit", no_hand_off)
        inputs, a = simple_inputs()
        assert np.array_equal(client.infer("simple", inputs).as_numpy("OUTPUT0"), a + 1)
        assert client.is_server_live() and client.get_server_metadata()["name"]
        entry = _thread_entry(client)
        assert entry is not None and entry.conn is not None and entry.active == 0
        assert not entry.has_stub  # a plain thread takes the lean path: no HTTPClient made
        monkeypatch.undo()
        assert client.async_infer("simple", inputs).get_result(timeout=30) is not None
    assert _thread_entry(client) is None  # close() closed this thread's HTTPClient


def test_lean_path_replaces_connections_the_server_closed() -> None:
    """A kept-alive connection the server closed is not taken for a broken call: noticed
    before sending after an idle pause (a POST), or retried once on a new connection when it
    fails before any answer (a GET, which may be repeated)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    accepted: list[bytes] = []

    def serve() -> None:  # one answer per connection, then the server closes it
        with listener:
            for _ in range(3):
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.settimeout(10)
                    data = b""
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(65536)
                    accepted.append(data.split(b" ", 1)[0])
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    port = listener.getsockname()[1]
    with httpclient.InferenceServerClient(f"127.0.0.1:{port}", network_timeout=10) as client:
        client.unload_model("m")  # POST, on a new connection
        time.sleep(1.2)
        client.unload_model("m")  # POST: the idle connection is seen closed before sending
        assert client.is_server_live()  # GET: fails before any answer, sent again once
    server.join(10)
    assert accepted == [b"POST", b"POST", b"GET"]


def test_known_heads_read_as_llhttp_reads_them() -> None:
    """An answer whose head llhttp parsed before is read without parsing it again only when
    it is whole and exact: the same status, headers and keep-alive as llhttp's reading; a
    truncated body, bytes after it, or a head that llhttp did not read as a whole final 200
    answer with a Content-Length is left to llhttp."""
    from tritonclient._transport import http11

    tag = uuid.uuid4().hex.encode()  # a head no other test made known
    whole = b"HTTP/1.1 200 OK\r\nX-Tag: " + tag + b"\r\nContent-Length: 5\r\n\r\nhello"
    assert http11.known_answer(whole) is None
    answer = http11.start_answer(whole)
    http11.remember_answer(whole, answer)
    reading = (200, {"x-tag": tag.decode(), "content-length": "5"}, b"hello", True)
    got = http11.known_answer(whole)
    assert got == reading
    assert got is not None
    got[1]["x-tag"] = "changed"  # each answer has headers of its own
    assert http11.known_answer(whole) == reading
    assert http11.known_answer(whole[:-1]) is None  # truncated
    assert http11.known_answer(whole + b"H") is None  # bytes after the answer
    closing = whole.replace(b"X-Tag:", b"Connection: close\r\nX-Tag:")
    http11.remember_answer(closing, http11.start_answer(closing))
    assert http11.known_answer(closing) == (
        200,
        {**reading[1], "connection": "close"},
        b"hello",
        False,
    )

    def not_kept(data: bytes) -> None:
        http11.remember_answer(data, http11.start_answer(data))
        assert http11.known_answer(data) is None

    not_kept(whole.replace(b"200 OK", b"404 Not Found"))
    not_kept(
        whole.replace(
            b"Content-Length: 5\r\n\r\nhello",
            b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        )
    )
    not_kept(b"HTTP/1.1 100 Continue\r\n\r\n" + whole.replace(tag, tag[::-1]))


def test_a_known_head_with_a_broken_body_is_reported_once() -> None:
    """After answers with the same head, a truncated one is still an error (once), and the
    next call on a new connection reads its answer."""
    body = b'{"model_name":"m","outputs":[]}'
    good = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
        body
    )
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve() -> None:
        with listener:
            for answers in ((good + body, good + body, good + body[:-3]), (good + body,)):
                conn, _ = listener.accept()
                with conn:
                    conn.settimeout(10)
                    for answer in answers:
                        data = b""
                        while b"\r\n\r\n" not in data:
                            data += conn.recv(65536)
                        head, _, rest = data.partition(b"\r\n\r\n")
                        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                        while len(rest) < length:
                            rest += conn.recv(65536)
                        conn.sendall(answer)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    port = listener.getsockname()[1]
    inputs = [httpclient.InferInput("IN", [1], "INT32").set_data_from_numpy(np.ones(1, np.int32))]
    with httpclient.InferenceServerClient(f"127.0.0.1:{port}", network_timeout=10) as client:
        for _ in range(2):
            assert client.infer("m", inputs).get_response()["model_name"] == "m"
        with pytest.raises(InferenceServerException, match="closed before the end"):
            client.infer("m", inputs)
        assert client.infer("m", inputs).get_response()["model_name"] == "m"
    server.join(10)


def test_threads_use_their_own_http_clients(url: str) -> None:
    errors: list[BaseException] = []
    stubs: dict[int, Any] = {}
    with httpclient.InferenceServerClient(url, concurrency=2) as client:
        barrier = threading.Barrier(6)

        def work(seed: int) -> None:
            try:
                barrier.wait(10)
                for i in range(20):
                    inputs, a = simple_inputs()
                    inputs[1].set_data_from_numpy(np.full((1, 16), seed * 100 + i, np.int32))
                    got = client.infer("simple", inputs).as_numpy("OUTPUT0")
                    assert np.array_equal(got, a + seed * 100 + i), (seed, i)
                stubs[seed] = _thread_entry(client).conn
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[:3]
        assert len({id(s) for s in stubs.values()}) == 6  # never shared between threads


def test_close_elsewhere_then_owner_call_raises_and_sweeps(url: str) -> None:
    client = httpclient.InferenceServerClient(url)
    assert client.is_server_live()
    entry = _thread_entry(client)
    assert entry is not None
    closer = threading.Thread(target=client.close)
    closer.start()
    closer.join(30)
    assert not closer.is_alive()
    # another thread's connection is left to its own thread
    assert not entry.closed and entry.conn is not None
    with pytest.raises(InferenceServerException, match="closed"):
        client.infer("simple", simple_inputs()[0])
    with httpclient.InferenceServerClient(url) as other:
        assert other.is_server_live()  # any call of this thread closes the closed one's
    assert _thread_entry(client) is None and entry.closed and entry.conn is None


def _drop_client_made_elsewhere(url: str, creator_exits_first: bool) -> None:
    holder: list[httpclient.InferenceServerClient] = []
    made = threading.Event()
    release = threading.Event()
    entries: list[Any] = []
    swept: list[bool] = []

    def make() -> None:
        client = httpclient.InferenceServerClient(url, concurrency=2)
        assert client.infer("simple", simple_inputs()[0]) is not None
        entries.append(_thread_entry(client))
        holder.append(client)
        del client
        made.set()
        release.wait(30)
        # a later call of this thread (through another client) closes the dead one's
        with httpclient.InferenceServerClient(url) as other:
            assert other.is_server_live()
        swept.append(entries[0].closed)

    t = threading.Thread(target=make)
    t.start()
    assert made.wait(30)
    if creator_exits_first:
        release.set()
        t.join(30)
    loop = holder[0]._transport._loop
    assert loop is not None
    holder.clear()  # last reference dropped in this (another) thread
    gc.collect()
    release.set()
    t.join(30)
    assert not t.is_alive()
    assert swept == [not creator_exits_first]
    deadline = time.monotonic() + 10
    while loop.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not loop.is_alive()


def test_gc_from_other_thread_creator_alive_and_exited(url: str) -> None:
    unraisable: list[Any] = []
    old_hook = __import__("sys").unraisablehook
    __import__("sys").unraisablehook = unraisable.append
    try:
        _drop_client_made_elsewhere(url, creator_exits_first=False)
        _drop_client_made_elsewhere(url, creator_exits_first=True)
        # a thread that exits with an unclosed client closes its HTTPClient as it ends
        kept: list[Any] = []

        def use_and_exit() -> None:
            client = httpclient.InferenceServerClient(url)
            assert client.is_server_live()
            entry = _thread_entry(client)
            kept.append((client, entry.conn, weakref.ref(entry)))

        t = threading.Thread(target=use_and_exit)
        t.start()
        t.join(30)
        gc.collect()
        client, conn, entry_ref = kept.pop()
        assert entry_ref() is None and conn.closed
        client.close()
        del client, conn
        gc.collect()
    finally:
        __import__("sys").unraisablehook = old_hook
    assert not unraisable


def test_greenlets_share_the_thread_client(url: str) -> None:
    import gevent

    with httpclient.InferenceServerClient(url, concurrency=2) as client:
        started = time.monotonic()
        jobs = [
            gevent.spawn(lambda: int(client.infer("slow", slow_input(300)).as_numpy("OUTPUT0")[0]))
            for _ in range(2)
        ]
        gevent.joinall(jobs, timeout=30, raise_error=True)
        assert [j.value for j in jobs] == [300, 300]
        assert time.monotonic() - started < 30
        # close() in one greenlet waits (cooperatively) for a call in another
        pending = gevent.spawn(
            lambda: int(client.infer("slow", slow_input(200)).as_numpy("OUTPUT0")[0])
        )
        gevent.sleep(0.05)
        client.close()
        assert pending.get(timeout=30) == 200
    assert _thread_entry(client) is None


def test_call_from_a_hub_callback_is_handed_over(url: str) -> None:
    import gevent

    with httpclient.InferenceServerClient(url) as client:
        got: list[bool] = []
        gevent.get_hub().loop.run_callback(lambda: got.append(client.is_server_live()))
        gevent.sleep(0.01)
        assert got == [True]


def test_cached_request_json_follows_every_change() -> None:
    import json

    def body(inputs: list[Any], outputs: list[Any]) -> dict[str, Any]:
        raw, json_size = httpclient.InferenceServerClient.generate_request_body(
            inputs, outputs=outputs
        )
        return json.loads(raw[:json_size] if json_size is not None else raw)

    item = httpclient.InferInput("INPUT0", [1, 2], "INT32")
    item.set_data_from_numpy(np.array([[1, 2]], dtype=np.int32), binary_data=False)
    out = httpclient.InferRequestedOutput("OUTPUT0", binary_data=False)
    first = body([item], [out])
    assert first["inputs"][0]["data"] == [1, 2] and first == body([item], [out])
    item.set_data_from_numpy(np.array([[3, 4]], dtype=np.int32), binary_data=False)
    assert body([item], [out])["inputs"][0]["data"] == [3, 4]
    item.set_shape([2, 1])
    item.set_data_from_numpy(np.array([[5], [6]], dtype=np.int32), binary_data=False)
    assert body([item], [out])["inputs"][0]["shape"] == [2, 1]
    item.set_shape([1, 2])  # the shape alone changes what is sent
    assert body([item], [out])["inputs"][0]["shape"] == [1, 2]
    out.set_shared_memory("region", 8, offset=4)
    params = body([item], [out])["outputs"][0]["parameters"]
    assert params["shared_memory_region"] == "region" and params["shared_memory_offset"] == 4
    out.unset_shared_memory()
    assert "shared_memory_region" not in body([item], [out])["outputs"][0]["parameters"]
    item.set_shared_memory("in_region", 8)
    sent = body([item], [out])["inputs"][0]
    assert "data" not in sent and sent["parameters"]["shared_memory_region"] == "in_region"


def test_small_bodies_are_one_buffer_large_ones_are_sent_from_theirs() -> None:
    # A small request written in two parts would wait for the server's delayed ACK.
    client = httpclient.InferenceServerClient("127.0.0.1:1")
    try:
        for nbytes, parts in ((4096, None), (4 << 20, 2)):
            inp, x = _identity_uint8(nbytes, 1)
            call = client._c_infer(
                "identity_uint8", [inp], "", None, InferOptions(), None, None, None, None
            )
            if parts is None:
                assert call.chunks is None and isinstance(call.body, bytes)
            else:
                assert call.body is None and call.chunks is not None
                assert len(call.chunks) == parts
                assert np.shares_memory(np.frombuffer(call.chunks[1], np.uint8), inp._input.raw)
            payload = call.payload()
            assert payload is not None and payload.endswith(x.tobytes())
    finally:
        client.close()
