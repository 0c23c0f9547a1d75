"""CUDA shared memory end to end without a GPU: the client's helpers
(:mod:`tritonclient.utils.cuda_shared_memory`), the HTTP and gRPC clients and an in-process
server share the device memory of a fake CUDA runtime (:mod:`tests.fake_cuda`).

What this cannot check: real CUDA IPC between two processes, real device copies, and the
behaviour of a real driver (see the ``gpu``-marked tests in ``test_shm_client.py``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.cuda_shared_memory as cudashm
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from shm import cuda as shm_cuda
from tests.fake_cuda import FakeCudaRuntime, cudaMemcpyKind, fake_cudart
from tritonclient.utils import InferenceServerException, serialize_byte_tensor

__all__ = ["fake_cudart"]  # the fixture, used by name

PROTOCOLS = ["http", "grpc"]


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    options = ServerOptions(model_repository=[BUNDLED_MODELS], has_gpu=True, allow_client_shm=True)
    frontends = FrontendOptions(http_port=0, grpc_port=0, metrics_port=0)
    with MockServer(options, frontends) as srv:
        yield srv


@pytest.fixture
def fake(fake_cudart: FakeCudaRuntime) -> Iterator[FakeCudaRuntime]:
    """The fake runtime; every region is destroyed and every handle closed afterwards."""
    yield fake_cudart
    for handle in list(cudashm.allocated_shared_memory_regions()):
        cudashm.destroy_shared_memory_region(handle)
    assert fake_cudart.allocations == {}


@pytest.fixture(params=PROTOCOLS)
def client(request: pytest.FixtureRequest, server: MockServer, fake: FakeCudaRuntime) -> Any:
    if request.param == "http":
        c: Any = httpclient.InferenceServerClient(server.http_url)
    else:
        c = grpcclient.InferenceServerClient(server.grpc_url)
    c.protocol = request.param
    yield c
    c.unregister_cuda_shared_memory()
    c.close()
    assert fake.open_count() == 0  # unregistering closed every IPC handle


def _mod(client: Any) -> Any:
    return httpclient if client.protocol == "http" else grpcclient


def _status(client: Any, name: str = "") -> list[dict[str, int | str]]:
    """The CUDA status as ``[{"name", "device_id", "byte_size"}]`` for both protocols."""
    if client.protocol == "http":
        regions = client.get_cuda_shared_memory_status(name)
    else:
        regions = list(
            client.get_cuda_shared_memory_status(name, as_json=True).get("regions", {}).values()
        )
    return sorted(
        (
            {
                "name": r["name"],
                "device_id": int(r.get("device_id", 0)),
                "byte_size": int(r["byte_size"]),
            }
            for r in regions
        ),
        key=lambda r: str(r["name"]),
    )


def _register(client: Any, handle: cudashm.CudaSharedMemoryRegion, name: str = "") -> None:
    client.register_cuda_shared_memory(
        name or handle._triton_shm_name, cudashm.get_raw_handle(handle), 0, handle._byte_size
    )


def _simple_inputs(mod: Any, region: str, offset: int = 0) -> list[Any]:
    inputs = [
        mod.InferInput("INPUT0", [1, 16], "INT32"),
        mod.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_shared_memory(region, 64, offset=offset)
    inputs[1].set_shared_memory(region, 64, offset=offset + 64)
    return inputs


def _simple_outputs(mod: Any, region: str, offset: int = 0) -> list[Any]:
    outputs = [mod.InferRequestedOutput("OUTPUT0"), mod.InferRequestedOutput("OUTPUT1")]
    outputs[0].set_shared_memory(region, 64, offset=offset)
    outputs[1].set_shared_memory(region, 64, offset=offset + 64)
    return outputs


A = np.arange(16, dtype=np.int32)
B = np.full(16, 3, dtype=np.int32)


# -- end to end -------------------------------------------------------------------------------


def test_simple_inputs_and_outputs_in_cuda_regions(client: Any, fake: FakeCudaRuntime) -> None:
    """ "simple" with both inputs and both outputs in CUDA regions, at offsets."""
    mod = _mod(client)
    ip = cudashm.create_shared_memory_region("input_data", 16 + 128, 0)
    op = cudashm.create_shared_memory_region("output_data", 16 + 128 + 16, 0)
    sentinel = np.full(4, -7, dtype=np.int32)
    cudashm.set_shared_memory_region(ip, [A, B], offset=16)
    cudashm.set_shared_memory_region(op, [sentinel])
    cudashm.set_shared_memory_region(op, [sentinel], offset=144)
    _register(client, ip)
    _register(client, op)
    assert len(fake.opened) == 2 and all(flags == 1 for _, flags in fake.opened)
    fake.copies.clear()

    result = client.infer(
        "simple",
        _simple_inputs(mod, "input_data", 16),
        outputs=_simple_outputs(mod, "output_data", 16),
    )

    assert result.as_numpy("OUTPUT0") is None  # the data is in the region, not the response
    # The server copied each input device to host and each output host to device.
    assert sorted(fake.copies) == sorted(
        [(cudaMemcpyKind.cudaMemcpyDeviceToHost, 64)] * 2
        + [(cudaMemcpyKind.cudaMemcpyHostToDevice, 64)] * 2
    )
    out0 = result.get_output("OUTPUT0")
    shape = out0["shape"] if client.protocol == "http" else list(out0.shape)
    assert shape == [1, 16]
    np.testing.assert_array_equal(
        cudashm.get_contents_as_numpy(op, np.int32, shape, offset=16), (A + B).reshape(1, 16)
    )
    np.testing.assert_array_equal(
        cudashm.get_contents_as_numpy(op, "INT32", [1, 16], offset=80), (A - B).reshape(1, 16)
    )
    # Nothing was written outside the outputs' ranges.
    np.testing.assert_array_equal(cudashm.get_contents_as_numpy(op, np.int32, [4]), sentinel)
    np.testing.assert_array_equal(
        cudashm.get_contents_as_numpy(op, np.int32, [4], offset=144), sentinel
    )
    # The bytes really are in the fake device memory.
    raw = fake.device_bytes(op._base_addr + 16, 64)
    np.testing.assert_array_equal(np.frombuffer(raw, dtype=np.int32), A + B)


def test_cuda_input_with_outputs_in_the_response(client: Any, fake: FakeCudaRuntime) -> None:
    mod = _mod(client)
    ip = cudashm.create_shared_memory_region("in_only", 128, 0)
    cudashm.set_shared_memory_region(ip, [A * 2, B])
    _register(client, ip)
    result = client.infer(
        "simple", _simple_inputs(mod, "in_only"), outputs=[mod.InferRequestedOutput("OUTPUT0")]
    )
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), (A * 2 + B).reshape(1, 16))


def test_body_inputs_with_a_cuda_output(client: Any, fake: FakeCudaRuntime) -> None:
    mod = _mod(client)
    op = cudashm.create_shared_memory_region("out_only", 64, 0)
    _register(client, op)
    inputs = [
        mod.InferInput("INPUT0", [1, 16], "INT32"),
        mod.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(A.reshape(1, 16))
    inputs[1].set_data_from_numpy(B.reshape(1, 16))
    outputs = [mod.InferRequestedOutput("OUTPUT0"), mod.InferRequestedOutput("OUTPUT1")]
    outputs[1].set_shared_memory("out_only", 64)
    result = client.infer("simple", inputs, outputs=outputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), (A + B).reshape(1, 16))
    assert result.as_numpy("OUTPUT1") is None
    np.testing.assert_array_equal(
        cudashm.get_contents_as_numpy(op, np.int32, [1, 16]), (A - B).reshape(1, 16)
    )


def test_bytes_through_cuda_regions(client: Any, fake: FakeCudaRuntime) -> None:
    mod = _mod(client)
    strings = np.array([[b"hello", b""], [b"cuda", b"memory!"]], dtype=np.object_)
    size = len(serialize_byte_tensor(strings).item())
    ip = cudashm.create_shared_memory_region("bytes_in", size, 0)
    op = cudashm.create_shared_memory_region("bytes_out", 128, 0)
    cudashm.set_shared_memory_region(ip, [strings])
    _register(client, ip)
    _register(client, op)
    inp = mod.InferInput("INPUT0", [2, 2], "BYTES")
    inp.set_shared_memory("bytes_in", size)
    out = mod.InferRequestedOutput("OUTPUT0")
    out.set_shared_memory("bytes_out", 128)
    client.infer("identity_bytes", [inp], outputs=[out])
    assert cudashm.get_contents_as_numpy(op, np.object_, [2, 2]).tolist() == strings.tolist()


def test_status_and_unregister(client: Any, fake: FakeCudaRuntime) -> None:
    first = cudashm.create_shared_memory_region("first", 64, 0)
    second = cudashm.create_shared_memory_region("second", 128, 0)
    assert _status(client) == []
    _register(client, first)
    _register(client, second)
    assert _status(client) == [
        {"name": "first", "device_id": 0, "byte_size": 64},
        {"name": "second", "device_id": 0, "byte_size": 128},
    ]
    assert _status(client, "second") == [{"name": "second", "device_id": 0, "byte_size": 128}]
    assert fake.open_count() == 2
    client.unregister_cuda_shared_memory("first")
    assert fake.closed == [first._base_addr]  # its IPC handle was closed
    assert _status(client) == [{"name": "second", "device_id": 0, "byte_size": 128}]
    with pytest.raises(InferenceServerException, match="Unable to find cuda shared memory"):
        client.get_cuda_shared_memory_status("first")
    client.unregister_cuda_shared_memory("first")  # unknown names are fine
    _register(client, first)  # the name is free again
    client.unregister_cuda_shared_memory()
    assert _status(client) == [] and fake.open_count() == 0
    assert sorted(fake.closed) == sorted([first._base_addr] * 2 + [second._base_addr])


def test_bounds_errors(client: Any, fake: FakeCudaRuntime) -> None:
    mod = _mod(client)
    region = cudashm.create_shared_memory_region("small", 128, 0)
    cudashm.set_shared_memory_region(region, [A, B])
    _register(client, region)
    out_region = cudashm.create_shared_memory_region("small_out", 96, 0)
    _register(client, out_region)
    # An input ending past the region, one starting past it.
    with pytest.raises(InferenceServerException, match="Invalid offset \\+ byte size"):
        client.infer("simple", _simple_inputs(mod, "small", offset=4))
    with pytest.raises(InferenceServerException, match="Invalid offset for shared memory"):
        client.infer("simple", _simple_inputs(mod, "small", offset=128))
    # An output ending past its region (OUTPUT1: 64 bytes at offset 64 of 96).
    with pytest.raises(InferenceServerException, match="Invalid offset \\+ byte size"):
        client.infer(
            "simple", _simple_inputs(mod, "small"), outputs=_simple_outputs(mod, "small_out")
        )
    # An output region too small for the result.
    outputs = [mod.InferRequestedOutput("OUTPUT0")]
    outputs[0].set_shared_memory("small_out", 32)
    with pytest.raises(InferenceServerException, match="should be at least 64 bytes"):
        client.infer("simple", _simple_inputs(mod, "small"), outputs=outputs)
    # Nothing reached the output region.
    assert not any(fake.device_bytes(out_region._base_addr, 96))


def test_bad_handle_and_duplicate_names(client: Any, fake: FakeCudaRuntime) -> None:
    region = cudashm.create_shared_memory_region("dup", 64, 0)
    garbage = base64.b64encode(bytes(range(64)))
    with pytest.raises(InferenceServerException) as info:
        client.register_cuda_shared_memory("bad", garbage, 0, 64)
    assert "failed to register CUDA shared memory region 'bad'" in str(info.value)
    assert "invalid resource handle" in str(info.value)
    # A handle of freed memory is refused too.
    freed = cudashm.create_shared_memory_region("freed", 64, 0)
    stale = cudashm.get_raw_handle(freed)
    cudashm.destroy_shared_memory_region(freed)
    with pytest.raises(InferenceServerException, match="failed to open CUDA IPC handle"):
        client.register_cuda_shared_memory("freed", stale, 0, 64)
    with pytest.raises(InferenceServerException, match="invalid CUDA device id 3"):
        client.register_cuda_shared_memory("dev", cudashm.get_raw_handle(region), 3, 64)
    assert _status(client) == [] and fake.open_count() == 0

    _register(client, region)
    with pytest.raises(InferenceServerException, match="'dup' already in manager"):
        _register(client, region)
    other = cudashm.create_shared_memory_region("other", 64, 0)
    with pytest.raises(InferenceServerException, match="'dup' already in manager"):
        _register(client, other, name="dup")
    assert fake.open_count() == 1  # the refused registrations opened nothing
    assert _status(client) == [{"name": "dup", "device_id": 0, "byte_size": 64}]


def test_unregistered_region_then_still_serving(client: Any, fake: FakeCudaRuntime) -> None:
    mod = _mod(client)
    ip = cudashm.create_shared_memory_region("gone", 128, 0)
    cudashm.set_shared_memory_region(ip, [A, B])
    _register(client, ip)
    client.infer("simple", _simple_inputs(mod, "gone"))
    client.unregister_cuda_shared_memory("gone")
    with pytest.raises(InferenceServerException, match="Unable to find shared memory region"):
        client.infer("simple", _simple_inputs(mod, "gone"))
    # The server still serves, from the body and from a new registration of the region.
    inputs = [
        mod.InferInput("INPUT0", [1, 16], "INT32"),
        mod.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(A.reshape(1, 16))
    inputs[1].set_data_from_numpy(A.reshape(1, 16))
    result = client.infer("simple", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), (A * 2).reshape(1, 16))
    _register(client, ip, name="again")
    result = client.infer("simple", _simple_inputs(mod, "again"))
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), (A - B).reshape(1, 16))


def test_in_process_fallback_for_own_handles(client: Any, fake: FakeCudaRuntime) -> None:
    """Real CUDA refuses to open a handle in the process that exported it; the server then
    uses the exporter's buffer directly (and never closes what it did not open)."""
    fake.refuse_own_handles = True
    mod = _mod(client)
    ip = cudashm.create_shared_memory_region("own_in", 128, 0)
    op = cudashm.create_shared_memory_region("own_out", 128, 0)
    cudashm.set_shared_memory_region(ip, [A, B])
    _register(client, ip)
    _register(client, op)
    assert fake.opened == []
    client.infer("simple", _simple_inputs(mod, "own_in"), outputs=_simple_outputs(mod, "own_out"))
    np.testing.assert_array_equal(
        cudashm.get_contents_as_numpy(op, np.int32, [16], offset=64), A - B
    )
    with pytest.raises(InferenceServerException, match="exceed the exported CUDA buffer"):
        client.register_cuda_shared_memory("big", cudashm.get_raw_handle(ip), 0, 256)
    # The exporter frees its buffer while it is registered: a clear error, no stale access.
    cudashm.destroy_shared_memory_region(ip)
    with pytest.raises(InferenceServerException, match="freed by its owner"):
        client.infer("simple", _simple_inputs(mod, "own_in"))
    client.unregister_cuda_shared_memory()
    assert fake.closed == []


def test_without_gpu_registration_is_refused(fake_cudart: FakeCudaRuntime) -> None:
    options = ServerOptions(model_repository=[BUNDLED_MODELS], has_gpu=False, allow_client_shm=True)
    frontends = FrontendOptions(http_port=0, allow_grpc=False, allow_metrics=False)
    region = cudashm.create_shared_memory_region("nogpu", 64, 0)
    try:
        with MockServer(options, frontends) as srv:
            client = httpclient.InferenceServerClient(srv.http_url)
            with pytest.raises(InferenceServerException, match="invalid args"):
                _register(client, region)
            client.close()
    finally:
        cudashm.destroy_shared_memory_region(region)
    assert fake_cudart.opened == []


def test_the_fake_refuses_out_of_bounds_copies(fake_cudart: FakeCudaRuntime) -> None:
    """The fake itself catches copies past an allocation (so the tests above can fail)."""
    buffer = shm_cuda.DeviceBuffer(16, 0)
    try:
        imported = shm_cuda.ImportedBuffer(buffer.ipc_handle(), 32, 0)  # claims too much
        host = np.zeros(32, dtype=np.uint8)
        with pytest.raises(shm_cuda.CudaError, match="invalid argument"):
            imported.copy_out(host.ctypes.data, 32)
        imported.close()
        imported.close()  # idempotent
        assert fake_cudart.closed == [buffer.ptr]
    finally:
        buffer.free()


# -- on a real GPU (skipped without one) -------------------------------------------------------


def _has_gpu() -> bool:
    if isinstance(shm_cuda._cudart, FakeCudaRuntime):  # pragma: no cover - fixture leak
        return False
    try:
        return shm_cuda.device_count() > 0
    except shm_cuda.CudaError:
        return False


def _open_in_child(raw_handle: bytes, size: int, results: Any) -> None:
    """In another process: open the handle, read it, write it back reversed."""
    try:
        imported = shm_cuda.ImportedBuffer(raw_handle, size, 0)
        host = np.empty(size, dtype=np.uint8)
        imported.copy_out(host.ctypes.data, size)
        reversed_ = np.ascontiguousarray(host[::-1])
        imported.copy_in(reversed_.ctypes.data, size)
        imported.close()
        results.put(host.tobytes())
    except BaseException as exc:  # report, don't hang the parent
        results.put(repr(exc))


@pytest.mark.gpu
def test_real_ipc_between_processes() -> None:
    """What the fake cannot show: a real IPC handle opened in a second process."""
    if not _has_gpu():
        pytest.skip("no CUDA device")
    import multiprocessing

    region = cudashm.create_shared_memory_region("ipc", 64, 0)
    try:
        data = np.arange(64, dtype=np.uint8)
        cudashm.set_shared_memory_region(region, [data])
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        raw = base64.b64decode(cudashm.get_raw_handle(region))
        child = context.Process(target=_open_in_child, args=(raw, 64, results))
        child.start()
        got = results.get(timeout=120)
        child.join(timeout=60)
        assert got == data.tobytes(), got
        np.testing.assert_array_equal(
            cudashm.get_contents_as_numpy(region, np.uint8, [64]), data[::-1]
        )
    finally:
        cudashm.destroy_shared_memory_region(region)


@pytest.mark.gpu
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_real_gpu_simple_in_process(server: MockServer, protocol: str) -> None:
    """ "simple" through real device memory, the server in this process (where CUDA refuses
    to open the process's own handles, so the server uses the exporter's buffer)."""
    if not _has_gpu():
        pytest.skip("no CUDA device")
    mod = httpclient if protocol == "http" else grpcclient
    client: Any = (
        httpclient.InferenceServerClient(server.http_url)
        if protocol == "http"
        else grpcclient.InferenceServerClient(server.grpc_url)
    )
    ip = cudashm.create_shared_memory_region("gpu_in", 128, 0)
    op = cudashm.create_shared_memory_region("gpu_out", 128, 0)
    try:
        cudashm.set_shared_memory_region(ip, [A, B])
        _register(client, ip)
        _register(client, op)
        client.infer(
            "simple", _simple_inputs(mod, "gpu_in"), outputs=_simple_outputs(mod, "gpu_out")
        )
        np.testing.assert_array_equal(cudashm.get_contents_as_numpy(op, np.int32, [16]), A + B)
        np.testing.assert_array_equal(
            cudashm.get_contents_as_numpy(op, np.int32, [16], offset=64), A - B
        )
    finally:
        client.unregister_cuda_shared_memory()
        client.close()
        cudashm.destroy_shared_memory_region(ip)
        cudashm.destroy_shared_memory_region(op)


# -- unregistering a CUDA region while a request uses it (Triton #7743) -----------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("profile", ["2.73", "2.51"])
def test_unregister_held_cuda_region(fake: FakeCudaRuntime, profile: str, protocol: str) -> None:
    """A CUDA region goes through the same ``UnregisterHelper`` as a system one
    (src/shared_memory_manager.cc:675-719, 2.73.0): unregistering the regions of a request in
    flight succeeds, they stay listed and their IPC handles open until the request is done,
    then the handles are closed (``cudaIpcCloseMemHandle``, :695) without another unregister;
    the request's result is right.  Under 2.51 (:682-695 and :634-678 at v2.51.0) it is
    refused: "Failed to unregister the following cuda shared memory regions: in ,out ,".
    The request is held as in :mod:`tests.test_shm_deferred_unregister`."""
    from tests.test_shm_deferred_unregister import DATA, NBYTES, _hold, _wait_until

    options = ServerOptions(
        model_repository=[BUNDLED_MODELS],
        has_gpu=True,
        allow_client_shm=True,
        triton_compat=profile,
    )
    with MockServer(options, FrontendOptions(http_port=0, grpc_port=0, metrics_port=0)) as srv:
        info = {"http": srv.http_port, "grpc": srv.grpc_port, "metrics": srv.metrics_port}
        client: Any = (
            httpclient.InferenceServerClient(srv.http_url, concurrency=4)
            if protocol == "http"
            else grpcclient.InferenceServerClient(srv.grpc_url)
        )
        client.protocol = protocol
        regions = {
            name: cudashm.create_shared_memory_region(name, NBYTES, 0) for name in ("in", "out")
        }
        try:
            cudashm.set_shared_memory_region(regions["in"], [DATA])
            for name, handle in regions.items():
                client.register_cuda_shared_memory(name, cudashm.get_raw_handle(handle), 0, NBYTES)
            blocker, held = _hold(info, client, protocol)
            if profile == "2.73":
                client.unregister_cuda_shared_memory("in")
                client.unregister_cuda_shared_memory()
            else:
                with pytest.raises(InferenceServerException) as refused:
                    client.unregister_cuda_shared_memory()
                assert refused.value.message() == (
                    "Failed to unregister the following cuda shared memory regions: in ,out ,"
                )
            assert [r["name"] for r in _status(client)] == ["in", "out"]
            assert fake.open_count() == 2
            assert blocker()[1] is None and held()[1] is None
            output = cudashm.get_contents_as_numpy(regions["out"], np.int32, [16])
            assert output.tolist() == DATA.tolist()
            if profile == "2.51":
                assert [r["name"] for r in _status(client)] == ["in", "out"]
                client.unregister_cuda_shared_memory()
            _wait_until(lambda: not _status(client), "the regions are released")
            _wait_until(lambda: fake.open_count() == 0, "the IPC handles are closed")
        finally:
            client.unregister_cuda_shared_memory()
            client.close()
            for handle in regions.values():
                cudashm.destroy_shared_memory_region(handle)
