"""tritonclient.utils.shared_memory and cuda_shared_memory: the helpers on their own and end
to end with the HTTP and gRPC clients against the bundled server."""

from __future__ import annotations

import builtins
import os
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.cuda_shared_memory as cudashm
import tritonclient.utils.shared_memory as shm
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from shm import cuda as shm_cuda
from tritonclient.utils import serialize_byte_tensor

PREFIX = "tcng_test_"


def _dev_shm() -> set[str]:
    """This module's entries in /dev/shm (other processes may create their own meanwhile)."""
    if not os.path.isdir("/dev/shm"):
        return set()
    return {name for name in os.listdir("/dev/shm") if name.startswith(PREFIX)}


@pytest.fixture(scope="module", autouse=True)
def no_leftovers() -> Iterator[None]:
    before = _dev_shm()
    yield
    assert shm.mapped_shared_memory_regions() == []
    assert _dev_shm() - before == set()


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    # The server started as a user starts Triton 2.73 for shared memory.
    options = ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True)
    frontends = FrontendOptions(http_port=0, grpc_port=0, metrics_port=0)
    with MockServer(options, frontends) as srv:
        yield srv


def _key() -> str:
    return f"/{PREFIX}{uuid.uuid4().hex[:12]}"


@pytest.fixture
def region() -> Iterator[shm.SharedMemoryRegion]:
    handle = shm.create_shared_memory_region("region", _key(), 256)
    yield handle
    shm.destroy_shared_memory_region(handle)


# -- helpers on their own -------------------------------------------------------------------


def test_roundtrip_is_a_zero_copy_view(region: shm.SharedMemoryRegion) -> None:
    data = np.arange(16, dtype=np.int32)
    shm.set_shared_memory_region(region, [data])
    view = shm.get_contents_as_numpy(region, np.int32, [16])
    np.testing.assert_array_equal(view, data)
    shm.set_shared_memory_region(region, [data * 2])
    np.testing.assert_array_equal(view, data * 2)  # the view sees the new contents
    np.testing.assert_array_equal(
        shm.get_contents_as_numpy(region, "INT32", [4, 4]), view.reshape(4, 4)
    )


def test_offsets_and_several_tensors(region: shm.SharedMemoryRegion) -> None:
    a = np.arange(4, dtype=np.float32)
    b = np.arange(6, dtype=np.int64).reshape(2, 3)
    shm.set_shared_memory_region(region, [a, b], offset=8)
    np.testing.assert_array_equal(shm.get_contents_as_numpy(region, np.float32, [4], 8), a)
    np.testing.assert_array_equal(shm.get_contents_as_numpy(region, np.int64, [2, 3], 24), b)


def test_bytes(region: shm.SharedMemoryRegion) -> None:
    strings = np.array([[b"a", b"bc"], [b"", "d\u00e9".encode()]], dtype=np.object_)
    shm.set_shared_memory_region(region, [strings], offset=4)
    out = shm.get_contents_as_numpy(region, np.object_, [2, 2], offset=4)
    assert out.tolist() == strings.tolist()
    # The serialized form (what NVIDIA's helpers take) is written as is; np.bytes_ reads too.
    serialized = serialize_byte_tensor(np.array([b"xyz", b"0"], dtype=np.object_))
    shm.set_shared_memory_region(region, [serialized])
    assert shm.get_contents_as_numpy(region, np.bytes_, [2]).tolist() == [b"xyz", b"0"]
    shm.set_shared_memory_region(region, [np.array(["p", "qr"], dtype=np.str_)])
    assert shm.get_contents_as_numpy(region, "BYTES", [2]).tolist() == [b"p", b"qr"]


def _notes(error: BaseException) -> str:
    return " ".join(getattr(error, "__notes__", []))


def test_errors(region: shm.SharedMemoryRegion) -> None:
    # NVIDIA's messages; what went wrong is in the exception's note.
    with pytest.raises(shm.SharedMemoryException) as info:
        shm.set_shared_memory_region(region, [np.zeros(65, dtype=np.int32)])
    assert str(info.value) == "unable to set the shared memory region"
    assert "260 bytes at offset 0 exceed its 256 bytes" in _notes(info.value)
    with pytest.raises(shm.SharedMemoryException, match=r"^unable to set the shared memory"):
        shm.set_shared_memory_region(region, [np.zeros(4, dtype=np.int32)], offset=250)
    with pytest.raises(shm.SharedMemoryException, match="list/tuple"):
        shm.set_shared_memory_region(region, np.zeros(4))  # type: ignore[arg-type]
    with pytest.raises(shm.SharedMemoryException, match="numpy array"):
        shm.set_shared_memory_region(region, [[1, 2]])  # type: ignore[list-item]
    with pytest.raises(shm.SharedMemoryException, match="cannot hold"):
        shm.get_contents_as_numpy(region, np.int64, [33])
    with pytest.raises(shm.SharedMemoryException, match="BYTES"):
        shm.get_contents_as_numpy(region, np.object_, [1], offset=254)
    with pytest.raises(shm.SharedMemoryException) as info:
        shm.create_shared_memory_region("bad", "/a/b", 16)
    assert str(info.value) == "unable to create the shared memory region"
    assert "invalid shared memory key" in _notes(info.value)
    with pytest.raises(shm.SharedMemoryException) as info:
        shm.create_shared_memory_region("dup", region._shm_key, 16, create_only=True)
    assert str(info.value) == "unable to create the shared memory region"
    assert "already exists" in _notes(info.value)
    empty_key = _key()
    with pytest.raises(shm.SharedMemoryException, match=r"^unable to create the shared memory"):
        shm.create_shared_memory_region("empty", empty_key, 0)
    assert not os.path.exists("/dev/shm" + empty_key)
    assert shm.mapped_shared_memory_regions() == [region._shm_key]


def test_reopening_a_key_never_grows_it() -> None:
    """As NVIDIA's 2.73 (its test_shared_memory.py): a second create on an existing key maps
    the object at its own size, warns when that is smaller than asked, and writes past it
    fail."""
    key = _key()
    first = shm.create_shared_memory_region("a", key, 8)
    try:
        with pytest.warns(UserWarning, match=r"region size is 8 instead of requested 16"):
            second = shm.create_shared_memory_region("b", key, 16)
        try:
            assert os.stat("/dev/shm" + key).st_size == 8
            with pytest.raises(shm.SharedMemoryException, match=r"^unable to set the shared"):
                shm.set_shared_memory_region(second, [np.arange(4, dtype=np.int32)])
            shm.set_shared_memory_region(second, [np.arange(2, dtype=np.int32)])
            assert shm.get_contents_as_numpy(first, np.int32, [2]).tolist() == [0, 1]
            smaller = shm.create_shared_memory_region("c", key, 4)  # no warning, still 8
            shm.set_shared_memory_region(smaller, [np.array([5, 6], dtype=np.int32)])
            assert shm.get_contents_as_numpy(first, np.int32, [2]).tolist() == [5, 6]
            shm.destroy_shared_memory_region(smaller)
        finally:
            shm.destroy_shared_memory_region(second)
        assert os.path.exists("/dev/shm" + key)  # `first` created it and still holds it
    finally:
        shm.destroy_shared_memory_region(first)
    assert not os.path.exists("/dev/shm" + key)


def test_create_only_makes_a_new_region() -> None:
    key = _key()
    handle = shm.create_shared_memory_region("a", key, 16, create_only=True)
    try:
        shm.set_shared_memory_region(handle, [np.arange(4, dtype=np.int32)])
        with pytest.raises(shm.SharedMemoryException, match=r"^unable to create"):
            shm.create_shared_memory_region("b", key, 16, create_only=True)
    finally:
        shm.destroy_shared_memory_region(handle)
    assert not os.path.exists("/dev/shm" + key)


def test_reuse_and_destroy() -> None:
    key = _key()
    first = shm.create_shared_memory_region("a", key, 64)
    second = shm.create_shared_memory_region("b", key, 64)  # reuses the object
    assert shm.mapped_shared_memory_regions().count(key) == 1
    shm.set_shared_memory_region(first, [np.array([7], dtype=np.int32)])
    assert shm.get_contents_as_numpy(second, np.int32, [1])[0] == 7
    shm.destroy_shared_memory_region(first)
    assert os.path.exists("/dev/shm" + key)  # still used by `second`
    shm.destroy_shared_memory_region(second)
    shm.destroy_shared_memory_region(second)  # twice is harmless
    assert key not in shm.mapped_shared_memory_regions()
    assert not os.path.exists("/dev/shm" + key)
    with pytest.raises(shm.SharedMemoryException, match="destroyed"):
        shm.get_contents_as_numpy(second, np.int32, [1])


# -- end to end -------------------------------------------------------------------------------


def _client(server: MockServer, protocol: str) -> Any:
    if protocol == "http":
        return httpclient.InferenceServerClient(server.http_url)
    return grpcclient.InferenceServerClient(server.grpc_url)


def _module(protocol: str) -> Any:
    return httpclient if protocol == "http" else grpcclient


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_simple_through_shm(server: MockServer, protocol: str) -> None:
    """Inputs and outputs of "simple" in two regions, each holding two tensors at offsets."""
    mod, client = _module(protocol), _client(server, protocol)
    in_key, out_key = _key(), _key()
    ip = shm.create_shared_memory_region("input_data", in_key, 16 + 128)
    op = shm.create_shared_memory_region("output_data", out_key, 16 + 128)
    try:
        a = np.arange(16, dtype=np.int32)
        b = np.full(16, 3, dtype=np.int32)
        shm.set_shared_memory_region(ip, [a, b], offset=16)
        client.unregister_system_shared_memory()
        client.register_system_shared_memory("input_data", in_key, 16 + 128)
        client.register_system_shared_memory("output_data", out_key, 16 + 128)
        inputs = [
            mod.InferInput("INPUT0", [1, 16], "INT32"),
            mod.InferInput("INPUT1", [1, 16], "INT32"),
        ]
        inputs[0].set_shared_memory("input_data", 64, offset=16)
        inputs[1].set_shared_memory("input_data", 64, offset=80)
        outputs = [mod.InferRequestedOutput("OUTPUT0"), mod.InferRequestedOutput("OUTPUT1")]
        outputs[0].set_shared_memory("output_data", 64, offset=16)
        outputs[1].set_shared_memory("output_data", 64, offset=80)
        result = client.infer("simple", inputs, outputs=outputs)
        assert result.as_numpy("OUTPUT0") is None
        out0 = result.get_output("OUTPUT0")
        shape = out0["shape"] if protocol == "http" else list(out0.shape)
        np.testing.assert_array_equal(
            shm.get_contents_as_numpy(op, np.int32, shape, offset=16), (a + b).reshape(1, 16)
        )
        np.testing.assert_array_equal(
            shm.get_contents_as_numpy(op, np.int32, [1, 16], offset=80), (a - b).reshape(1, 16)
        )
    finally:
        client.unregister_system_shared_memory()
        client.close()
        shm.destroy_shared_memory_region(ip)
        shm.destroy_shared_memory_region(op)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_bytes_through_shm(server: MockServer, protocol: str) -> None:
    mod, client = _module(protocol), _client(server, protocol)
    strings = np.array([[b"hello", b""], [b"shared", b"memory!"]], dtype=np.object_)
    size = len(serialize_byte_tensor(strings).item())
    in_key, out_key = _key(), _key()
    ip = shm.create_shared_memory_region("bytes_in", in_key, size)
    op = shm.create_shared_memory_region("bytes_out", out_key, 128)
    try:
        shm.set_shared_memory_region(ip, [strings])
        client.register_system_shared_memory("bytes_in", in_key, size)
        client.register_system_shared_memory("bytes_out", out_key, 128)
        inp = mod.InferInput("INPUT0", [2, 2], "BYTES")
        inp.set_shared_memory("bytes_in", size)
        out = mod.InferRequestedOutput("OUTPUT0")
        out.set_shared_memory("bytes_out", 128)
        client.infer("identity_bytes", [inp], outputs=[out])
        got = shm.get_contents_as_numpy(op, np.object_, [2, 2])
        assert got.tolist() == strings.tolist()
    finally:
        client.unregister_system_shared_memory("bytes_in")
        client.unregister_system_shared_memory("bytes_out")
        client.close()
        shm.destroy_shared_memory_region(ip)
        shm.destroy_shared_memory_region(op)


# -- CUDA -------------------------------------------------------------------------------------


def _has_gpu() -> bool:
    try:
        return shm_cuda.device_count() > 0
    except shm_cuda.CudaError:
        return False


def test_cuda_without_device_raises_clearly() -> None:
    if _has_gpu():
        pytest.skip("a CUDA device is present")
    with pytest.raises(cudashm.CudaSharedMemoryException, match="no CUDA device available"):
        cudashm.create_shared_memory_region("cuda", 64, 0)
    assert cudashm.allocated_shared_memory_regions() == []
    with pytest.raises(cudashm.CudaSharedMemoryException, match="expected a handle"):
        cudashm.get_raw_handle(object())  # type: ignore[arg-type]


def test_cuda_without_cuda_python(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_cuda(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "cuda" or name.startswith("cuda."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(shm_cuda, "_cudart", None)
    for name in [m for m in sys.modules if m == "cuda" or m.startswith("cuda.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(builtins, "__import__", no_cuda)
    with pytest.raises(
        cudashm.CudaSharedMemoryException,
        match=r"cuda-python is not installed: pip install tritonclient-ng\[cuda\]",
    ):
        cudashm.create_shared_memory_region("cuda", 64, 0)


def test_dlpack_view_of_host_memory() -> None:
    data = np.arange(12, dtype=np.float32)
    tensor = shm_cuda.DLPackTensor(data.ctypes.data, np.float32, [3, 4], -1, owner=data)
    view = np.from_dlpack(tensor)
    np.testing.assert_array_equal(view, data.reshape(3, 4))
    data[0] = 42
    assert view[0, 0] == 42
    del view
    tensor.__dlpack__()  # an unconsumed capsule is released by its destructor
    assert shm_cuda._exports == {}


@pytest.mark.gpu
def test_cuda_roundtrip() -> None:
    if not _has_gpu():
        pytest.skip("no CUDA device")
    handle = cudashm.create_shared_memory_region("cuda", 256, 0)
    try:
        assert len(__import__("base64").b64decode(cudashm.get_raw_handle(handle))) == 64
        a = np.arange(16, dtype=np.float32)
        strings = np.array([b"x", b"yz"], dtype=np.object_)
        cudashm.set_shared_memory_region(handle, [a])
        np.testing.assert_array_equal(cudashm.get_contents_as_numpy(handle, np.float32, [16]), a)
        cudashm.set_shared_memory_region(handle, [strings], offset=64)
        got = cudashm.get_contents_as_numpy(handle, np.object_, [2], offset=64)
        assert got.tolist() == [b"x", b"yz"]
        cudashm.set_shared_memory_region_from_dlpack(handle, [a * 2])
        np.testing.assert_array_equal(cudashm.get_contents_as_numpy(handle, "FP32", [16]), a * 2)
        tensor = cudashm.as_shared_memory_tensor(handle, "FP32", [16])
        assert tensor.__dlpack_device__() == (2, 0)
        with pytest.raises(cudashm.CudaSharedMemoryException, match="exceed"):
            cudashm.set_shared_memory_region(handle, [np.zeros(65, dtype=np.float32)])
        try:
            import torch
        except ImportError:
            return
        t = torch.from_dlpack(tensor)
        assert t.device.type == "cuda"
        np.testing.assert_array_equal(t.cpu().numpy(), a * 2)
        cudashm.set_shared_memory_region_from_dlpack(handle, [t + 1])
        np.testing.assert_array_equal(
            cudashm.get_contents_as_numpy(handle, "FP32", [16]), a * 2 + 1
        )
    finally:
        cudashm.destroy_shared_memory_region(handle)
    assert cudashm.allocated_shared_memory_regions() == []
