"""``tritonclient.http`` and ``tritonclient.http.aio`` against the REAL Triton server.

``scripts/peers.sh`` installs the server; a missing one fails these tests (tests/peers.py).
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from shm import posix
from tests.peers import (
    RunningTritonServer,
    copy_repository_for_triton,
    find_tritonserver,
    run_tritonserver,
)
from tests.test_http_client import simple_inputs
from tritonclient.utils import InferenceServerException

INSTALL = find_tritonserver()
pytestmark = pytest.mark.triton_peer

REPO = Path(__file__).resolve().parent.parent / "mock_server" / "models"
MODELS = ["simple", "simple_string", "identity_bf16", "identity_bytes", "simple_sequence", "slow"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTritonServer]:
    assert INSTALL is not None
    repo = copy_repository_for_triton(REPO, tmp_path_factory.mktemp("triton") / "models")
    args = ["--model-control-mode=explicit", *[f"--load-model={m}" for m in MODELS]]
    with run_tritonserver(INSTALL, repo, args, startup_timeout=120) as running:
        yield running


@pytest.fixture
def client(server: RunningTritonServer) -> Iterator[httpclient.InferenceServerClient]:
    with httpclient.InferenceServerClient(server.http_url, concurrency=4, network_timeout=30) as c:
        yield c


def test_health_metadata_repository(client: httpclient.InferenceServerClient) -> None:
    assert client.is_server_live() and client.is_server_ready()
    assert client.get_server_metadata()["name"] == "triton"
    assert client.get_model_metadata("simple")["name"] == "simple"
    assert client.get_model_config("simple")["max_batch_size"] == 8
    names = {m["name"] for m in client.get_model_repository_index()}
    assert set(MODELS) <= names
    assert client.get_inference_statistics("simple")["model_stats"][0]["name"] == "simple"
    assert "log_info" in client.get_log_settings()
    assert "trace_level" in client.get_trace_settings()
    client.load_model("identity_int32")
    assert client.is_model_ready("identity_int32")
    client.unload_model("identity_int32")


@pytest.mark.parametrize("binary", [True, False])
def test_infer_simple(client: httpclient.InferenceServerClient, binary: bool) -> None:
    inputs, a = simple_inputs(binary)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)]
    result = client.infer("simple", inputs, outputs=outputs, request_id="t")
    assert np.array_equal(result.as_numpy("OUTPUT0"), a + 1)
    assert result.get_response()["id"] == "t"


def test_infer_types_and_sequence(client: httpclient.InferenceServerClient) -> None:
    bf16 = np.array([[1.0, -2.5]], dtype=ml_dtypes.bfloat16)
    inp = httpclient.InferInput("INPUT0", [1, 2], "BF16").set_data_from_numpy(bf16)
    np.testing.assert_array_equal(client.infer("identity_bf16", [inp]).as_numpy("OUTPUT0"), bf16)
    raw = np.array([[b"a", b"\x00\xff"]], dtype=np.object_)
    inp = httpclient.InferInput("INPUT0", [1, 2], "BYTES").set_data_from_numpy(raw)
    got = client.infer("identity_bytes", [inp]).as_numpy("OUTPUT0")
    assert list(got.ravel()) == [b"a", b"\x00\xff"]
    values = [0, 11, 7, 5, 3, 2, 0, 1]
    seq = []
    for i, v in enumerate(values):
        inp = httpclient.InferInput("INPUT", [1, 1], "INT32")
        inp.set_data_from_numpy(np.array([[v]], dtype=np.int32))
        r = client.infer(
            "simple_sequence",
            [inp],
            sequence_id=4242,
            sequence_start=i == 0,
            sequence_end=i == len(values) - 1,
        )
        seq.append(int(r.as_numpy("OUTPUT")[0][0]))
    assert seq == [1, 11, 7, 5, 3, 2, 0, 1]


def test_errors_compression_async(client: httpclient.InferenceServerClient) -> None:
    with pytest.raises(InferenceServerException) as info:
        client.infer("nope", simple_inputs()[0])
    assert info.value.status() in ("400", "404")
    bad = httpclient.InferInput("INPUT0", [1, 16], "FP32")
    bad.set_data_from_numpy(np.zeros((1, 16), np.float32))
    with pytest.raises(InferenceServerException) as info:
        client.infer("simple", [bad, simple_inputs()[0][1]])
    assert info.value.status() == "400"
    for algorithm in ("gzip", "deflate"):
        inputs, a = simple_inputs()
        result = client.infer(
            "simple",
            inputs,
            request_compression_algorithm=algorithm,
            response_compression_algorithm=algorithm,
        )
        assert np.array_equal(result.as_numpy("OUTPUT1"), a - 1)
    handles = [client.async_infer("simple", simple_inputs()[0]) for _ in range(20)]
    assert all(h.get_result(timeout=30).as_numpy("OUTPUT0") is not None for h in handles)


def _slow_input(delay_ms: int) -> list[httpclient.InferInput]:
    value, delay = np.array([7], np.int32), np.array([delay_ms], np.uint32)
    return [
        httpclient.InferInput("INPUT0", [1], "INT32").set_data_from_numpy(value),
        httpclient.InferInput("DELAY_MS", [1], "UINT32").set_data_from_numpy(delay),
    ]


def test_network_timeouts_as_nvidias(server: RunningTritonServer) -> None:
    """Triton's ``qa/L0_client_timeout/client_infer_timeout_test.py`` (HTTP cases): a request
    that outlives ``network_timeout`` raises ``socket.timeout`` ("timed out"), from ``infer``
    and from ``async_infer(...).get_result()``; the asyncio client's ``conn_timeout`` raises
    a ``TimeoutError``."""
    with httpclient.InferenceServerClient(server.http_url, network_timeout=1.0) as client:
        with pytest.raises(socket.timeout, match="timed out"):
            client.infer("slow", _slow_input(3000))
        with pytest.raises(socket.timeout, match="timed out"):
            client.async_infer("slow", _slow_input(3000)).get_result(timeout=30)
    with httpclient.InferenceServerClient(server.http_url, network_timeout=30) as client:
        result = client.async_infer("slow", _slow_input(0)).get_result(timeout=30)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [7])

    async def main() -> None:
        async with aioclient.InferenceServerClient(server.http_url, conn_timeout=1.0) as client:
            with pytest.raises(TimeoutError):
                await client.infer("slow", _slow_input(3000))

    asyncio.run(asyncio.wait_for(main(), 60))


def test_bytes_of_python_objects_as_json(client: httpclient.InferenceServerClient) -> None:
    """With ``binary_data=False`` a BYTES element that is not bytes or str is sent as its
    ``str()``, as NVIDIA's client sends it (Triton's QA sends object arrays of ints)."""
    data = np.array([[1, -2, 2**70, None, 1.5, b"b", "s"]], dtype=np.object_)
    inp = httpclient.InferInput("INPUT0", [1, 7], "BYTES").set_data_from_numpy(data, False)
    expected = ["1", "-2", str(2**70), "None", "1.5", "b", "s"]
    assert inp._get_tensor()["data"] == expected
    out = client.infer("identity_bytes", [inp]).as_numpy("OUTPUT0")
    assert out is not None and out.reshape(-1).tolist() == [e.encode() for e in expected]


def test_system_shared_memory(client: httpclient.InferenceServerClient) -> None:
    key = f"/tc_triton_{uuid.uuid4().hex[:8]}"
    region = posix.create(key, 192)
    try:
        a = np.arange(16, dtype=np.int32)
        region.buffer[:64] = a.tobytes()
        region.buffer[64:128] = np.ones(16, np.int32).tobytes()
        try:
            client.register_system_shared_memory("triton_region", key, 192)
        except InferenceServerException as exc:  # newer Triton: disabled by default
            pytest.skip(f"client shared memory refused: {exc}")
        try:
            i0 = httpclient.InferInput("INPUT0", [1, 16], "INT32")
            i0.set_shared_memory("triton_region", 64)
            i1 = httpclient.InferInput("INPUT1", [1, 16], "INT32")
            i1.set_shared_memory("triton_region", 64, offset=64)
            out = httpclient.InferRequestedOutput("OUTPUT0")
            out.set_shared_memory("triton_region", 64, offset=128)
            client.infer("simple", [i0, i1], outputs=[out])
            got = np.frombuffer(bytes(region.buffer[128:192]), np.int32)
            assert np.array_equal(got, a + 1)
        finally:
            client.unregister_system_shared_memory("triton_region")
    finally:
        region.close()
        posix.unlink(key)


def test_aio(server: RunningTritonServer) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(server.http_url) as client:
            assert await client.is_server_live()
            assert await client.is_model_ready("simple")
            inputs, a = simple_inputs()
            results = await asyncio.gather(*[client.infer("simple", inputs) for _ in range(16)])
            assert all(np.array_equal(r.as_numpy("OUTPUT0"), a + 1) for r in results)
            with pytest.raises(InferenceServerException):
                await client.infer("nope", inputs)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_url_list_probes_and_calls_a_real_triton(server: RunningTritonServer) -> None:
    # The replica machinery against Triton's own readiness endpoint and answers.
    from tritonclient.utils import BalancingPolicy

    policy = BalancingPolicy(health_check_interval=0.1)
    with httpclient.InferenceServerClient([server.http_url], load_balancing=policy) as c:
        for _ in range(5):
            inputs, a = simple_inputs()
            np.testing.assert_array_equal(c.infer("simple", inputs).as_numpy("OUTPUT0"), a + 1)
        assert c.get_server_metadata()["name"] == "triton"
        stats = c.replica_stats()
        assert [(s.address, s.requests, s.failures) for s in stats] == [(server.http_url, 6, 0)]
        # In service exactly when Triton says it is ready (earlier tests of this module may
        # have left a model that failed to load, which makes Triton not ready).
        with httpclient.InferenceServerClient(server.http_url) as single:
            ready = single.is_server_ready()
        deadline = time.monotonic() + 10
        while c.replica_stats()[0].in_service != ready:
            assert time.monotonic() < deadline, f"in service should be {ready}"
            c.is_server_live()  # probes are started by calls
            time.sleep(0.05)
