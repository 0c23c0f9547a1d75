"""POSIX shared-memory primitives, the server's region registry, trace and log settings."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from mock_server.core.compat import TRITON_2_51, TRITON_2_73, TritonCompat
from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.settings import LogSettings, TraceSettings
from mock_server.core.shm import (
    COPY_BELOW,
    CudaRegionStatus,
    SharedMemoryRegistry,
    SystemRegionStatus,
)
from shm import cuda as shm_cuda
from shm import posix
from tests.fake_cuda import FakeCudaRuntime, cudaMemcpyKind, fake_cudart
from tritonclient._codec.types import SharedMemoryRef

__all__ = ["fake_cudart"]  # the fixture, used by name


@pytest.fixture
def key() -> Iterator[str]:
    name = f"/test_{uuid.uuid4().hex[:12]}"
    yield name
    posix.unlink(name)
    assert not os.path.exists("/dev/shm" + name)


def test_create_open_view_unlink(key: str) -> None:
    region = posix.create(key, 64)
    region.buffer[:4] = b"abcd"
    other = posix.open_region(key, 2, 10)
    assert bytes(other.view(0, 2)) == b"cd"
    other.view(2, 3)[:] = b"xyz"
    assert bytes(region.buffer[4:7]) == b"xyz"
    with pytest.raises(posix.SharedMemoryError, match="exceed"):
        other.view(8, 4)
    with pytest.raises(posix.SharedMemoryError, match="already exists"):
        posix.create(key, 64, create_only=True)
    other.close()
    region.close()
    posix.unlink(key)
    with pytest.raises(posix.SharedMemoryError, match="unable to open"):
        posix.open_region(key, 0, 1)


def test_open_beyond_object_size(key: str) -> None:
    posix.create(key, 16).close()
    with pytest.raises(posix.SharedMemoryError, match="exceed"):
        posix.open_region(key, 8, 16)


def test_registry_system_regions(key: str) -> None:
    region = posix.create(key, 32)
    registry = SharedMemoryRegistry(allow_client_shm=True)
    registry.register_system("r", key, 8, 16)
    assert registry.system_status() == [SystemRegionStatus("r", key, 8, 16)]
    with pytest.raises(ServerError) as info:
        registry.register_system("r", key, 0, 4)
    assert info.value.kind is ErrorKind.ALREADY_EXISTS
    with pytest.raises(ServerError) as info:
        registry.register_system("bad", "/does_not_exist_xyz", 0, 4)
    assert info.value.kind is ErrorKind.INTERNAL and "Unable to open" in info.value.message
    # Triton 2.51 refuses a second region on a key it registered already.
    with pytest.raises(ServerError, match=f"Invalid shared memory region: '{key}'"):
        registry.register_system("again", key, 0, 4)
    other = posix.create(key + "_big", 32)
    with pytest.raises(ServerError, match="invalid args"):
        registry.register_system("big", key + "_big", 16, 32)
    with pytest.raises(ServerError, match="unable to process address spaceInvalid argument"):
        registry.register_system("empty", key + "_big", 0, 0)
    other.close()
    posix.unlink(key + "_big")
    view = registry.view("r", 4, 4)
    view[:] = b"\x01\x02\x03\x04"
    assert bytes(region.buffer[12:16]) == b"\x01\x02\x03\x04"
    with pytest.raises(ServerError, match="exceed"):
        registry.view("r", 10, 10)
    with pytest.raises(ServerError) as info:
        registry.system_status("nope")
    assert info.value.kind is ErrorKind.NOT_FOUND
    registry.unregister_system("nope")  # unknown names are fine
    registry.unregister_system()
    assert registry.system_status() == []
    region.close()


@pytest.mark.parametrize("copy_inputs", [False, True])
def test_registry_read_views_large_inputs_copies_small(key: str, copy_inputs: bool) -> None:
    size = 2 * COPY_BELOW
    region = posix.create(key, size)
    base = np.frombuffer(region.buffer, dtype=np.uint8)
    base[:] = np.arange(size, dtype=np.uint64).astype(np.uint8)
    registry = SharedMemoryRegistry(allow_client_shm=True, copy_inputs=copy_inputs)
    registry.register_system("r", key, 0, size)
    large = registry.read("r", 16, COPY_BELOW)
    small = registry.read("r", 16, COPY_BELOW - 1)
    assert large.readonly and small.readonly
    assert bytes(large) == base[16 : 16 + COPY_BELOW].tobytes()
    assert bytes(small) == base[16 : 16 + COPY_BELOW - 1].tobytes()
    # Zero-copy unless asked to copy (a write by the owner shows through); small inputs are
    # always copies.
    base[16:20] = [201, 202, 203, 204]
    assert (bytes(large[:4]) == bytes([201, 202, 203, 204])) is not copy_inputs
    assert bytes(small[:4]) == bytes([16, 17, 18, 19])
    # A view outlives unregistering its region (the mapping stays alive with it).
    registry.unregister_system("r")
    assert registry.system_status() == []
    assert len(bytes(large)) == COPY_BELOW
    del large
    region.close()


def test_registry_read_refuses_a_truncated_object(key: str) -> None:
    size = 2 * COPY_BELOW
    region = posix.create(key, size)
    registry = SharedMemoryRegistry(allow_client_shm=True)
    registry.register_system("r", key, 0, size)
    fd = os.open("/dev/shm" + key, os.O_RDWR)
    try:
        os.ftruncate(fd, COPY_BELOW)
    finally:
        os.close(fd)
    with pytest.raises(ServerError, match="truncated by its owner"):
        registry.read("r", COPY_BELOW - 8, 16)
    assert bytes(registry.read("r", 0, COPY_BELOW)) == bytes(COPY_BELOW)  # what is left works
    registry.close()
    region.close()


def test_registry_cuda_without_gpu() -> None:
    registry = SharedMemoryRegistry(has_gpu=False, allow_client_shm=True)
    # What Triton's GPU build answers when it cannot open a handle (no GPU, or no handle).
    with pytest.raises(ServerError, match="failed to register shared memory region: invalid args"):
        registry.register_cuda("c", b"short", 0, 16)
    with pytest.raises(ServerError, match="failed to register shared memory region: invalid args"):
        registry.register_cuda("c", bytes(64), 0, 16)
    assert registry.cuda_status() == []


def test_registry_cuda_regions(fake_cudart: FakeCudaRuntime, key: str) -> None:
    """Register, read (a host copy), write (to the device), bounds, status and unregister."""
    device = shm_cuda.DeviceBuffer(64, 0)
    host = np.arange(64, dtype=np.uint8)
    device.copy_in(host.ctypes.data, 64)
    registry = SharedMemoryRegistry(has_gpu=True, allow_client_shm=True)
    registry.register_cuda("c", device.ipc_handle(), 0, 48)
    assert fake_cudart.opened == [(device.ptr, 1)]
    assert registry.cuda_status() == [CudaRegionStatus("c", 0, 48)]
    with pytest.raises(ServerError, match="registered as CUDA shared memory"):
        registry.system_status("c")
    fake_cudart.copies.clear()
    data = registry.read("c", 8, 16)
    assert data.readonly and bytes(data) == bytes(range(8, 24))
    assert fake_cudart.copies == [(cudaMemcpyKind.cudaMemcpyDeviceToHost, 16)]
    registry.write("c", 40, b"\xff" * 8)
    assert fake_cudart.device_bytes(device.ptr, 64) == bytes(range(40)) + b"\xff" * 8 + bytes(
        range(48, 64)
    )
    assert bytes(registry.read("c", 0, 0)) == b""
    # The same bounds errors as a system region, checked against the registered size.
    for offset, size in ((40, 16), (48, 1), (-1, 4), (0, -1)):
        with pytest.raises(ServerError, match="exceed the region's 48 bytes") as info:
            registry.read("c", offset, size)
        assert info.value.kind is ErrorKind.INVALID_ARG
        with pytest.raises(ServerError, match="exceed the region's 48 bytes"):
            registry.check("c", offset, size)
    with pytest.raises(ServerError, match="exceed the region's 48 bytes"):
        registry.write("c", 44, b"12345")
    registry.check("c", 0, 48)
    with pytest.raises(ServerError, match="no host view"):
        registry.view("c", 0, 4)
    # One namespace with system regions.
    posix.create(key, 16).close()
    with pytest.raises(ServerError) as info:
        registry.register_system("c", key, 0, 16)
    assert info.value.kind is ErrorKind.ALREADY_EXISTS
    registry.register_system("s", key, 0, 16)
    with pytest.raises(ServerError) as info:
        registry.register_cuda("s", device.ipc_handle(), 0, 16)
    assert info.value.kind is ErrorKind.ALREADY_EXISTS
    with pytest.raises(ServerError, match="registered as system shared memory"):
        registry.cuda_status("s")
    assert fake_cudart.open_count() == 1
    # Unregistering closes the handle; the region is gone from the data path.
    registry.unregister_cuda("c")
    assert fake_cudart.closed == [device.ptr] and fake_cudart.open_count() == 0
    with pytest.raises(ServerError, match="Unable to find shared memory region: 'c'"):
        registry.read("c", 0, 4)
    registry.unregister_cuda("c")  # unknown names are fine
    registry.close()
    device.free()


def test_registry_cuda_errors(fake_cudart: FakeCudaRuntime) -> None:
    device = shm_cuda.DeviceBuffer(32, 0)
    registry = SharedMemoryRegistry(has_gpu=True, allow_client_shm=True)
    with pytest.raises(ServerError) as info:
        registry.register_cuda("bad", b"\x01" * 64, 0, 32)
    assert info.value.kind is ErrorKind.INTERNAL
    assert info.value.message == (
        "failed to register CUDA shared memory region 'bad': failed to open CUDA IPC handle: "
        "cudaErrorInvalidResourceHandle: invalid resource handle"
    )
    with pytest.raises(ServerError, match="invalid CUDA device id 1"):
        registry.register_cuda("dev", device.ipc_handle(), 1, 32)
    with pytest.raises(ServerError, match="invalid args"):
        registry.register_cuda("neg", device.ipc_handle(), 0, -1)
    assert registry.cuda_status() == [] and fake_cudart.open_count() == 0
    registry.register_cuda("c", device.ipc_handle(), 0, 32)
    with pytest.raises(ServerError, match="'c' already in manager"):
        registry.register_cuda("c", device.ipc_handle(), 0, 32)
    assert fake_cudart.open_count() == 1
    # A region closed under a request on its way: "not found", not a copy into a closed map.
    region = registry._cuda["c"]
    region.buffer.close()
    with pytest.raises(ServerError, match="Unable to find shared memory region: 'c'"):
        registry.read("c", 0, 4)
    with pytest.raises(ServerError, match="Unable to find shared memory region: 'c'"):
        registry.write("c", 0, b"1234")
    registry.unregister_cuda("c")  # closing twice is harmless
    # A failing copy is an internal error naming the region.
    registry.register_cuda("d", device.ipc_handle(), 0, 32)
    fake_cudart.allocations[device.ptr].size = 8  # the device memory shrank under it
    with pytest.raises(ServerError, match="failed to copy data for CUDA shared memory region 'd'"):
        registry.read("d", 0, 16)
    # A handle that fails to close: reported, the region is unregistered all the same.
    registry.register_cuda("e", device.ipc_handle(), 0, 8)
    fake_cudart.allocations[device.ptr].opened = 0
    with pytest.raises(ServerError, match="failed to unregister CUDA shared memory region"):
        registry.unregister_cuda()
    assert registry.cuda_status() == []
    registry.register_cuda("f", device.ipc_handle(), 0, 8)
    registry.close()  # closes every handle
    assert fake_cudart.open_count() == 0 and registry.cuda_status() == []
    device.free()


def test_imported_buffer(fake_cudart: FakeCudaRuntime) -> None:
    device = shm_cuda.DeviceBuffer(16, 0)
    with pytest.raises(shm_cuda.CudaError, match="64 bytes, not 3"):
        shm_cuda.ImportedBuffer(b"abc", 16, 0)
    imported = shm_cuda.ImportedBuffer(device.ipc_handle(), 16, 0)
    source = np.arange(8, dtype=np.uint8)
    imported.copy_in(source.ctypes.data, 8, offset=4)
    target = np.zeros(12, dtype=np.uint8)
    imported.copy_out(target.ctypes.data, 12, offset=2)
    assert target.tolist() == [0, 0, *range(8), 0, 0]
    with pytest.raises(shm_cuda.CudaError, match="exceed the CUDA buffer of 16 bytes"):
        imported.copy_out(target.ctypes.data, 12, offset=8)
    with pytest.raises(shm_cuda.CudaError, match="exceed"):
        imported.copy_in(source.ctypes.data, 1, offset=-1)
    assert not imported.closed
    imported.close()
    imported.close()
    assert imported.closed and fake_cudart.closed == [device.ptr]
    with pytest.raises(shm_cuda.CudaError, match="closed"):
        imported.copy_out(target.ctypes.data, 1)
    device.free()
    assert shm_cuda._local_exports == {}


def test_trace_settings() -> None:
    trace = TraceSettings()
    assert trace.get() == {
        "trace_level": ["OFF"],
        "trace_rate": "1000",
        "trace_count": "-1",
        "log_frequency": "0",
        "trace_file": "",
        "trace_mode": "triton",
    }
    with pytest.raises(ServerError, match="trace file name is not given"):
        trace.update({"trace_level": ["TIMESTAMPS"]})
    with pytest.raises(ServerError, match="only one trace level 'OFF'"):
        trace.update({"trace_level": ["OFF", "TENSORS"]})
    with pytest.raises(ServerError) as info:
        trace.update({"trace_file": "/tmp/x"})
    assert info.value.kind is ErrorKind.UNSUPPORTED
    assert trace.update({"trace_rate": "5"}, model="m")["trace_rate"] == "5"
    assert trace.get()["trace_rate"] == "1000"  # global untouched
    assert trace.update({"trace_rate": None}, model="m")["trace_rate"] == "1000"
    with pytest.raises(ServerError, match="Unable to parse 'trace_count'"):
        trace.update({"trace_count": "many"})
    with_file = TraceSettings(trace_file="/tmp/trace.json")
    assert with_file.update({"trace_level": ["TIMESTAMPS", "TENSORS"]})["trace_level"] == [
        "TIMESTAMPS",
        "TENSORS",
    ]


def test_clearing_trace_settings_restores_the_start_up_ones() -> None:
    """As Triton's L0_trace QA (trace_endpoint_test.py, test_*_clear_settings) expects: a
    global setting cleared (None) goes back to its start-up value, a model's follows the
    global one again."""
    trace = TraceSettings(
        "/tmp/global_unittest.log", {"trace_level": ["TIMESTAMPS"], "trace_rate": "1"}
    )
    start = trace.get()
    trace.update({"trace_rate": "12", "log_frequency": "34"}, model="simple")
    trace.update({"trace_rate": "56", "trace_count": "78", "trace_level": ["OFF"]})
    cleared = trace.update({"trace_rate": None, "trace_count": None})
    assert cleared == dict(start, trace_level=["OFF"])
    assert trace.get("simple") == dict(
        start, trace_level=["OFF"], trace_rate="12", log_frequency="34"
    )
    assert trace.update({"trace_rate": None, "trace_level": None}, model="simple") == dict(
        start, trace_level=["OFF"], log_frequency="34"
    )
    assert trace.get() == dict(start, trace_level=["OFF"])
    assert trace.update({"trace_level": None}) == start


def test_log_settings_apply_to_logger() -> None:
    logs = LogSettings()
    try:
        assert logs.get()["log_format"] == "default"
        logs.update({"log_info": False})
        assert logging.getLogger("mock_server").level == logging.WARNING
        logs.update({"log_verbose_level": 1})
        assert logging.getLogger("mock_server").level == logging.DEBUG
        with pytest.raises(ServerError, match="expect boolean for 'log_error'"):
            logs.update({"log_error": "yes"})
        with pytest.raises(ServerError, match="invalid argument for log_format, got: xml"):
            logs.update({"log_format": "xml"})
        with pytest.raises(ServerError) as info:
            logs.update({"log_file": "/tmp/log"})
        assert info.value.kind is ErrorKind.UNSUPPORTED
        assert logs.update({"log_file": None, "log_format": "ISO8601"})["log_format"] == "ISO8601"
    finally:
        LogSettings()  # restore defaults on the shared logger


# -- unregistering a region a request holds (the profile's deferred_shm_unregister) -----------


def _mapped_by_this_process(key: str) -> bool:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return any(line.rstrip().endswith("/dev/shm" + key) for line in maps)


def test_registry_defers_unregistering_a_held_region(key: str) -> None:
    """Triton 2.73 (src/shared_memory_manager.cc:675-719, ``UnregisterHelper``): a region a
    request holds is marked ``awaiting_unregister_`` and the unregister succeeds; it stays
    listed and its name taken, later requests may still use it, and the last request to let
    go releases it (src/http_server.h:294-315: the request's release calls ``Unregister``
    again)."""
    posix.create(key, 64).close()
    registry = SharedMemoryRegistry(allow_client_shm=True)
    registry.register_system("r", key, 0, 64)
    first, second = registry.holds(), registry.holds()
    assert bytes(first.read_input("INPUT0", SharedMemoryRef("r", 4, 0))) == bytes(4)
    registry.unregister_system("r")
    status = [SystemRegionStatus("r", key, 0, 64)]
    assert registry.system_status() == status
    with pytest.raises(ServerError, match="shared memory region 'r' already in manager") as info:
        registry.register_system("r", key, 0, 64)
    assert info.value.kind is ErrorKind.ALREADY_EXISTS
    second.check_outputs([SharedMemoryRef("r", 8, 16)])  # a later request still finds it
    first.release()
    assert registry.system_status() == status and _mapped_by_this_process(key)
    second.release()
    second.release()  # once only
    assert registry.system_status() == [] and not _mapped_by_this_process(key)
    registry.register_system("r", key, 0, 64)  # the name is free again
    registry.close()
    assert not _mapped_by_this_process(key)


def test_registry_unregister_all_defers_only_held_regions(key: str) -> None:
    """``UnregisterAll`` (src/shared_memory_manager.cc:628-673, 2.73.0) runs
    ``UnregisterHelper`` on each region: idle ones go at once, held ones when released; a
    request dropped without an explicit release lets go once it is collected (Triton releases
    in a destructor, src/http_server.h:287-316)."""
    posix.create(key, 64).close()
    registry = SharedMemoryRegistry(allow_client_shm=True)
    registry.register_system("held", key, 0, 32)
    # Triton 2.51 refuses a second region on one key (see register_system): another key.
    posix.create(key + "_idle", 8).close()
    registry.register_system("idle", key + "_idle", 0, 8)
    holds = registry.holds()
    holds.check_outputs([SharedMemoryRef("held", 4, 0)])
    registry.unregister_system()
    assert [s.name for s in registry.system_status()] == ["held"]
    # Collected while the registry's lock is held (the garbage collector may run anywhere):
    # no deadlock; the registry's next call lets go.
    with registry._lock:
        del holds
    assert registry.system_status() == [] and not _mapped_by_this_process(key)
    posix.unlink(key + "_idle")


def test_registry_2_51_refuses_unregistering_a_held_region(key: str) -> None:
    """Triton 2.51 (src/shared_memory_manager.cc:682-695 at v2.51.0): INTERNAL "Cannot
    unregister shared memory region 'r', it is currently in use."; unregistering all fails
    naming the held regions (:634-678) after unregistering the others; the held region stays
    registered after its request is done."""
    posix.create(key, 64).close()
    posix.create(key + "_b", 64).close()
    registry = SharedMemoryRegistry(compat=TRITON_2_51)
    assert registry.allowed  # 2.51 has no gate
    registry.register_system("r", key, 0, 64)
    registry.register_system("s", key + "_b", 0, 64)
    holds = registry.holds()
    holds.read_input("INPUT0", SharedMemoryRef("r", 4, 0))
    with pytest.raises(ServerError) as info:
        registry.unregister_system("r")
    assert info.value.kind is ErrorKind.INTERNAL
    assert info.value.message == (
        "Cannot unregister shared memory region 'r', it is currently in use."
    )
    with pytest.raises(ServerError) as info:
        registry.unregister_system()
    assert info.value.message == (
        "Failed to unregister the following system shared memory regions: r ,"
    )
    assert [s.name for s in registry.system_status()] == ["r"]
    holds.release()
    assert [s.name for s in registry.system_status()] == ["r"]
    registry.unregister_system("r")
    assert registry.system_status() == [] and not _mapped_by_this_process(key)
    posix.unlink(key + "_b")


@pytest.mark.parametrize("compat", [TRITON_2_73, TRITON_2_51])
def test_registry_held_cuda_region(fake_cudart: FakeCudaRuntime, compat: TritonCompat) -> None:
    """A CUDA region goes through the same ``UnregisterHelper`` (src/shared_memory_manager.cc:
    675-719, 2.73.0): its IPC handle is closed when the last request holding it lets go
    (2.73), or the unregister is refused (2.51, "cuda shared memory regions" when all)."""
    device = shm_cuda.DeviceBuffer(64, 0)
    registry = SharedMemoryRegistry(has_gpu=True, compat=compat, allow_client_shm=True)
    registry.register_cuda("c", device.ipc_handle(), 0, 64)
    holds = registry.holds()
    assert bytes(holds.read_input("INPUT0", SharedMemoryRef("c", 8, 0))) == bytes(8)
    if compat.deferred_shm_unregister:
        registry.unregister_cuda()
        assert registry.cuda_status() == [CudaRegionStatus("c", 0, 64)]
        assert fake_cudart.open_count() == 1
        holds.release()
    else:
        with pytest.raises(ServerError) as info:
            registry.unregister_cuda()
        assert info.value.message == (
            "Failed to unregister the following cuda shared memory regions: c ,"
        )
        holds.release()
        assert fake_cudart.open_count() == 1
        registry.unregister_cuda("c")
    assert registry.cuda_status() == [] and fake_cudart.open_count() == 0
    assert fake_cudart.closed == [device.ptr]
    registry.close()
    device.free()
