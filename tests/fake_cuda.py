# ruff: noqa: N801, N815, N816 - the names mirror cuda-python's runtime module
"""A fake CUDA runtime for tests on machines without a GPU.

:class:`FakeCudaRuntime` implements the part of cuda-python's runtime module
(``cuda.bindings.runtime``) that :mod:`shm.cuda` uses, with "device memory" in host memory
(ctypes buffers).  Calls return cuda-python's ``(error, *values)`` tuples.  IPC handles are 64
bytes encoding the allocation's address and a random token; opening a handle checks both, so a
garbage handle or one of freed memory fails as on a GPU.  Copies are bounds-checked against the
fake allocations and recorded in :attr:`FakeCudaRuntime.copies`, so tests can tell which way
the bytes went.

The :func:`fake_cudart` fixture installs a fresh runtime as ``shm.cuda._cudart`` and restores
the previous one afterwards; import it into a test module to use it.
"""

from __future__ import annotations

import ctypes
import enum
import secrets
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from shm import cuda as shm_cuda

__all__ = ["FakeCudaRuntime", "cudaError_t", "cudaMemcpyKind", "fake_cudart"]

CUDA_IPC_HANDLE_SIZE = 64
cudaIpcMemLazyEnablePeerAccess = 1

_MAGIC = b"FAKECUDA"
_LAYOUT = struct.Struct("<8sQQi")  # magic, pointer, token, device


class cudaError_t(enum.IntEnum):
    """The error codes the fake returns (values as in the CUDA runtime)."""

    cudaSuccess = 0
    cudaErrorInvalidValue = 1
    cudaErrorMemoryAllocation = 2
    cudaErrorInvalidDevice = 101
    cudaErrorMapBufferObjectFailed = 205
    cudaErrorInvalidContext = 201
    cudaErrorInvalidResourceHandle = 400


_ERROR_TEXT = {
    cudaError_t.cudaSuccess: "no error",
    cudaError_t.cudaErrorInvalidValue: "invalid argument",
    cudaError_t.cudaErrorMemoryAllocation: "out of memory",
    cudaError_t.cudaErrorInvalidDevice: "invalid device ordinal",
    cudaError_t.cudaErrorMapBufferObjectFailed: "mapping of buffer object failed",
    cudaError_t.cudaErrorInvalidContext: "invalid device context",
    cudaError_t.cudaErrorInvalidResourceHandle: "invalid resource handle",
}


class cudaMemcpyKind(enum.IntEnum):
    """Directions of ``cudaMemcpy``."""

    cudaMemcpyHostToHost = 0
    cudaMemcpyHostToDevice = 1
    cudaMemcpyDeviceToHost = 2
    cudaMemcpyDeviceToDevice = 3
    cudaMemcpyDefault = 4


class cudaIpcMemHandle_t:
    """64 bytes at :meth:`getPtr`, with no ``reserved`` field (as in cuda-python 13.x)."""

    def __init__(self) -> None:
        self._storage = (ctypes.c_char * CUDA_IPC_HANDLE_SIZE)()

    def getPtr(self) -> int:
        """The address of the handle's bytes."""
        return ctypes.addressof(self._storage)


_Error = cudaError_t
_Kind = cudaMemcpyKind
_Handle = cudaIpcMemHandle_t


@dataclass
class _Allocation:
    buffer: Any  # ctypes array: the "device memory"
    size: int
    device: int
    token: int
    opened: int = 0


@dataclass
class FakeCudaRuntime:
    """The fake runtime module (see the module docstring).

    Parameters
    ----------
    devices : int
        How many devices ``cudaGetDeviceCount`` reports.
    refuse_own_handles : bool
        Make ``cudaIpcOpenMemHandle`` fail as real CUDA does for a handle exported by the
        calling process (everything here is one process), to exercise the in-process
        fallback of :class:`shm.cuda.ImportedBuffer`.
    """

    devices: int = 1
    refuse_own_handles: bool = False
    current: int = 0
    allocations: dict[int, _Allocation] = field(default_factory=dict)
    #: ``(kind, nbytes)`` of every copy made.
    copies: list[tuple[_Kind, int]] = field(default_factory=list)
    #: ``(pointer, flags)`` of every successful ``cudaIpcOpenMemHandle``.
    opened: list[tuple[int, int]] = field(default_factory=list)
    #: Pointers passed to successful ``cudaIpcCloseMemHandle`` calls.
    closed: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    cudaError_t: ClassVar[type[_Error]] = _Error
    cudaMemcpyKind: ClassVar[type[_Kind]] = _Kind
    cudaIpcMemHandle_t: ClassVar[type[_Handle]] = _Handle
    CUDA_IPC_HANDLE_SIZE: ClassVar[int] = CUDA_IPC_HANDLE_SIZE
    cudaIpcMemLazyEnablePeerAccess: ClassVar[int] = cudaIpcMemLazyEnablePeerAccess

    # -- errors and devices ----------------------------------------------------------------
    @staticmethod
    def cudaGetErrorName(err: _Error) -> tuple[_Error, bytes]:
        return _Error.cudaSuccess, _Error(err).name.encode()

    @staticmethod
    def cudaGetErrorString(err: _Error) -> tuple[_Error, bytes]:
        return _Error.cudaSuccess, _ERROR_TEXT[_Error(err)].encode()

    def cudaGetDeviceCount(self) -> tuple[_Error, int]:
        return _Error.cudaSuccess, self.devices

    def cudaGetDevice(self) -> tuple[_Error, int]:
        return _Error.cudaSuccess, self.current

    def cudaSetDevice(self, device: int) -> tuple[_Error]:
        if not 0 <= device < self.devices:
            return (_Error.cudaErrorInvalidDevice,)
        self.current = device
        return (_Error.cudaSuccess,)

    # -- memory ----------------------------------------------------------------------------
    def cudaMalloc(self, size: int) -> tuple[_Error, int]:
        buffer = (ctypes.c_char * size)()
        ptr = ctypes.addressof(buffer)
        with self.lock:
            self.allocations[ptr] = _Allocation(
                buffer, size, self.current, secrets.randbits(63) or 1
            )
        return _Error.cudaSuccess, ptr

    def cudaFree(self, ptr: int) -> tuple[_Error]:
        with self.lock:
            if self.allocations.pop(int(ptr), None) is None:
                return (_Error.cudaErrorInvalidValue,)
        return (_Error.cudaSuccess,)

    def _on_device(self, ptr: int, nbytes: int) -> bool:
        """Whether ``nbytes`` at ``ptr`` lie inside one fake allocation."""
        for start, allocation in self.allocations.items():
            if start <= ptr and ptr + nbytes <= start + allocation.size:
                return True
        return False

    def cudaMemcpy(self, dst: int, src: int, count: int, kind: _Kind) -> tuple[_Error]:
        kind = _Kind(kind)
        dst, src, count = int(dst), int(src), int(count)
        with self.lock:
            device_dst = kind in (
                _Kind.cudaMemcpyHostToDevice,
                _Kind.cudaMemcpyDeviceToDevice,
            )
            device_src = kind in (
                _Kind.cudaMemcpyDeviceToHost,
                _Kind.cudaMemcpyDeviceToDevice,
            )
            if (device_dst and not self._on_device(dst, count)) or (
                device_src and not self._on_device(src, count)
            ):
                return (_Error.cudaErrorInvalidValue,)
            if kind in (
                _Kind.cudaMemcpyDeviceToHost,
                _Kind.cudaMemcpyHostToHost,
            ) and self._on_device(dst, count):
                return (_Error.cudaErrorInvalidValue,)
            if kind in (
                _Kind.cudaMemcpyHostToDevice,
                _Kind.cudaMemcpyHostToHost,
            ) and self._on_device(src, count):
                return (_Error.cudaErrorInvalidValue,)
            ctypes.memmove(dst, src, count)
            self.copies.append((kind, count))
        return (_Error.cudaSuccess,)

    # -- IPC -------------------------------------------------------------------------------
    def cudaIpcGetMemHandle(self, ptr: int) -> tuple[_Error, _Handle | None]:
        with self.lock:
            allocation = self.allocations.get(int(ptr))
            if allocation is None:
                return _Error.cudaErrorInvalidValue, None
            handle = _Handle()
            packed = _LAYOUT.pack(_MAGIC, int(ptr), allocation.token, allocation.device)
            ctypes.memmove(handle.getPtr(), packed, len(packed))
        return _Error.cudaSuccess, handle

    def cudaIpcOpenMemHandle(self, handle: _Handle, flags: int) -> tuple[_Error, int | None]:
        if not isinstance(handle, _Handle) or flags != cudaIpcMemLazyEnablePeerAccess:
            return _Error.cudaErrorInvalidValue, None
        raw = bytes((ctypes.c_char * CUDA_IPC_HANDLE_SIZE).from_address(handle.getPtr()))
        magic, ptr, token, _device = _LAYOUT.unpack_from(raw)
        if raw[_LAYOUT.size :] != bytes(CUDA_IPC_HANDLE_SIZE - _LAYOUT.size):
            magic = b""
        with self.lock:
            allocation = self.allocations.get(ptr)
            if magic != _MAGIC or allocation is None or allocation.token != token:
                return _Error.cudaErrorInvalidResourceHandle, None
            if self.refuse_own_handles:
                return _Error.cudaErrorInvalidContext, None
            allocation.opened += 1
            self.opened.append((ptr, flags))
        return _Error.cudaSuccess, ptr

    def cudaIpcCloseMemHandle(self, ptr: int) -> tuple[_Error]:
        with self.lock:
            allocation = self.allocations.get(int(ptr))
            if allocation is None or allocation.opened == 0:
                return (_Error.cudaErrorInvalidValue,)
            allocation.opened -= 1
            self.closed.append(int(ptr))
        return (_Error.cudaSuccess,)

    # -- helpers for tests -------------------------------------------------------------------
    def open_count(self) -> int:
        """How many IPC mappings are open now."""
        with self.lock:
            return sum(a.opened for a in self.allocations.values())

    def device_bytes(self, ptr: int, nbytes: int) -> bytes:
        """``nbytes`` of fake device memory at ``ptr`` (read directly, no copy recorded)."""
        with self.lock:
            assert self._on_device(ptr, nbytes), "not fake device memory"
        return ctypes.string_at(ptr, nbytes)


@pytest.fixture
def fake_cudart() -> Iterator[FakeCudaRuntime]:
    """A fresh :class:`FakeCudaRuntime` installed as ``shm.cuda._cudart``."""
    previous = shm_cuda._cudart
    exported = set(shm_cuda._local_exports)
    fake = FakeCudaRuntime()
    shm_cuda._cudart = fake
    try:
        yield fake
    finally:
        shm_cuda._cudart = previous
        for raw in set(shm_cuda._local_exports) - exported:  # buffers a test did not free
            del shm_cuda._local_exports[raw]
