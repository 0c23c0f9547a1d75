"""POSIX shared-memory primitives, the server's region registry, trace and log settings."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.settings import LogSettings, TraceSettings
from mock_server.core.shm import COPY_BELOW, SharedMemoryRegistry
from shm import posix


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
    registry = SharedMemoryRegistry()
    registry.register_system("r", key, 8, 16)
    assert registry.system_status() == [{"name": "r", "key": key, "offset": 8, "byte_size": 16}]
    with pytest.raises(ServerError) as info:
        registry.register_system("r", key, 0, 4)
    assert info.value.kind is ErrorKind.ALREADY_EXISTS
    with pytest.raises(ServerError) as info:
        registry.register_system("bad", "/does_not_exist_xyz", 0, 4)
    assert info.value.kind is ErrorKind.INTERNAL and "Unable to open" in info.value.message
    with pytest.raises(ServerError, match="invalid args"):
        registry.register_system("big", key, 16, 32)
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
    registry = SharedMemoryRegistry(copy_inputs=copy_inputs)
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
    registry = SharedMemoryRegistry()
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
    registry = SharedMemoryRegistry(has_gpu=False)
    with pytest.raises(ServerError, match="valid base64 encoded cudaIpcMemHandle_t"):
        registry.register_cuda("c", b"short", 0, 16)
    with pytest.raises(ServerError, match="GPUs not supported"):
        registry.register_cuda("c", bytes(64), 0, 16)
    assert registry.cuda_status() == []


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
