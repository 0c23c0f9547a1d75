"""CUDA device memory through cuda-python: allocation, IPC handles, copies and DLPack export.

:class:`DeviceBuffer` allocates device memory and exports it as a CUDA IPC handle (the client
side of CUDA shared memory); :class:`ImportedBuffer` opens such a handle (the server side) and
copies between it and host memory.

Imports without cuda-python and without a GPU; :func:`runtime` then raises :class:`CudaError`
with the fix.  Works with cuda-python 12.x and 13.x (``cuda.bindings.runtime``) and with older
releases (``from cuda import cudart``).  Tests replace the runtime by setting ``_cudart``.
"""

from __future__ import annotations

import ctypes
import math
import threading
from typing import Any

from . import dlpack

__all__ = [
    "IPC_HANDLE_SIZE",
    "CudaError",
    "DLPackTensor",
    "DeviceBuffer",
    "ImportedBuffer",
    "device_count",
    "runtime",
]

#: sizeof(cudaIpcMemHandle_t)
IPC_HANDLE_SIZE = 64

INSTALL_HINT = "cuda-python is not installed: pip install tritonclient-ng[cuda]"


class CudaError(RuntimeError):
    """A CUDA call failed, cuda-python is missing, or there is no CUDA device."""


_cudart: Any = None


def runtime() -> Any:
    """The cuda-python runtime module (``cudart``)."""
    global _cudart
    if _cudart is None:
        try:
            import cuda.bindings.runtime as cudart
        except ImportError:
            try:
                from cuda import cudart
            except ImportError:
                raise CudaError(INSTALL_HINT) from None
        _cudart = cudart
    return _cudart


def check(result: Any) -> Any:
    """Unpack a cuda-python ``(error, *values)`` tuple, raising :class:`CudaError` on failure."""
    rt = runtime()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != rt.cudaError_t.cudaSuccess:
        _, name = rt.cudaGetErrorName(err)
        _, text = rt.cudaGetErrorString(err)
        raise CudaError(f"{_text(name)}: {_text(text)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def device_count() -> int:
    """Number of usable CUDA devices (0 when there is no driver or device)."""
    rt = runtime()
    err, count = rt.cudaGetDeviceCount()
    if err != rt.cudaError_t.cudaSuccess:
        return 0
    return int(count)


def require_device(device_id: int) -> Any:
    """The runtime module, after checking that ``device_id`` exists."""
    rt = runtime()
    count = device_count()
    if count == 0:
        raise CudaError("no CUDA device available")
    if not 0 <= device_id < count:
        raise CudaError(f"invalid CUDA device id {device_id}: {count} device(s) available")
    return rt


class _OnDevice:
    """Make ``device_id`` current for the duration of a ``with`` block."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.previous: int | None = None

    def __enter__(self) -> Any:
        rt = require_device(self.device_id)
        self.previous = int(check(rt.cudaGetDevice()))
        check(rt.cudaSetDevice(self.device_id))
        return rt

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None and self.previous != self.device_id:
            runtime().cudaSetDevice(self.previous)


class DeviceBuffer:
    """``byte_size`` bytes of device memory on ``device_id`` (freed by :meth:`free`)."""

    def __init__(self, byte_size: int, device_id: int) -> None:
        self.byte_size = int(byte_size)
        self.device_id = int(device_id)
        with _OnDevice(self.device_id) as rt:
            self.ptr: int = int(check(rt.cudaMalloc(max(self.byte_size, 1))))
            try:
                self._ipc = check(rt.cudaIpcGetMemHandle(self.ptr))
            except CudaError:
                rt.cudaFree(self.ptr)
                raise
        self._raw_handle = self.ipc_handle()
        _local_exports[self._raw_handle] = self

    def ipc_handle(self) -> bytes:
        """The raw ``cudaIpcMemHandle_t`` bytes (``CUDA_IPC_HANDLE_SIZE`` of them)."""
        rt = runtime()
        size = int(getattr(rt, "CUDA_IPC_HANDLE_SIZE", IPC_HANDLE_SIZE))
        if hasattr(self._ipc, "getPtr"):
            return bytes((ctypes.c_char * size).from_address(int(self._ipc.getPtr())))
        return bytes(self._ipc.reserved)  # pragma: no cover - old cuda-python

    def _check_range(self, offset: int, nbytes: int) -> None:
        if offset < 0 or nbytes < 0 or offset + nbytes > self.byte_size:
            raise CudaError(
                f"{nbytes} bytes at offset {offset} exceed the CUDA buffer of "
                f"{self.byte_size} bytes"
            )

    def copy_in(self, src_ptr: int, nbytes: int, offset: int = 0) -> None:
        """Copy ``nbytes`` from ``src_ptr`` (host or device, unified addressing) to the buffer."""
        self._check_range(offset, nbytes)
        if nbytes:
            with _OnDevice(self.device_id) as rt:
                check(
                    rt.cudaMemcpy(
                        self.ptr + offset, src_ptr, nbytes, rt.cudaMemcpyKind.cudaMemcpyDefault
                    )
                )

    def copy_out(self, dst_ptr: int, nbytes: int, offset: int = 0) -> None:
        """Copy ``nbytes`` from the buffer at ``offset`` to ``dst_ptr`` (host or device)."""
        self._check_range(offset, nbytes)
        if nbytes:
            with _OnDevice(self.device_id) as rt:
                check(
                    rt.cudaMemcpy(
                        dst_ptr, self.ptr + offset, nbytes, rt.cudaMemcpyKind.cudaMemcpyDefault
                    )
                )

    def free(self) -> None:
        """Release the device memory (idempotent)."""
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            if _local_exports.get(self._raw_handle) is self:
                del _local_exports[self._raw_handle]
            with _OnDevice(self.device_id) as rt:
                check(rt.cudaFree(ptr))


# Buffers this process allocated, by raw IPC handle.  CUDA refuses to open an IPC handle in the
# process that exported it, so a server running in the client's process (``MockServer`` in a
# test) falls back to the exporter's own pointer when opening the handle fails.
_local_exports: dict[bytes, DeviceBuffer] = {}


def _ipc_handle_struct(rt: Any, raw_handle: bytes) -> Any:
    """A ``cudaIpcMemHandle_t`` holding ``raw_handle``.

    cuda-python 13.x exposes no ``reserved`` field: the bytes are written at the struct's
    address (``getPtr()``, present in 12.x too); older releases take ``reserved``.
    """
    handle = rt.cudaIpcMemHandle_t()
    if hasattr(handle, "getPtr"):
        ctypes.memmove(int(handle.getPtr()), raw_handle, len(raw_handle))
    else:  # pragma: no cover - old cuda-python
        handle.reserved = raw_handle
    return handle


class ImportedBuffer:
    """Device memory exported by another process, opened from its raw IPC handle.

    Opened with ``cudaIpcOpenMemHandle(handle, cudaIpcMemLazyEnablePeerAccess)`` on
    ``device_id``, as Triton does; :meth:`close` releases the mapping
    (``cudaIpcCloseMemHandle``).  Copies and :meth:`close` are serialized, so a copy never
    runs on a closed mapping.

    Parameters
    ----------
    raw_handle : bytes
        The ``cudaIpcMemHandle_t`` bytes (:data:`IPC_HANDLE_SIZE` of them).
    byte_size : int
        Size of the region the exporter declares; copies are checked against it.
    device_id : int
        The CUDA device the memory lives on.

    Raises
    ------
    CudaError
        If the handle is malformed, the device does not exist or the handle cannot be opened.
    """

    def __init__(self, raw_handle: bytes, byte_size: int, device_id: int) -> None:
        raw_handle = bytes(raw_handle)
        if len(raw_handle) != IPC_HANDLE_SIZE:
            raise CudaError(f"a CUDA IPC handle has {IPC_HANDLE_SIZE} bytes, not {len(raw_handle)}")
        if byte_size < 0:
            raise CudaError(f"invalid byte size {byte_size}")
        self.byte_size = int(byte_size)
        self.device_id = int(device_id)
        self._lock = threading.Lock()
        self._local: DeviceBuffer | None = None
        with _OnDevice(self.device_id) as rt:
            handle = _ipc_handle_struct(rt, raw_handle)
            try:
                self.ptr: int = int(
                    check(rt.cudaIpcOpenMemHandle(handle, rt.cudaIpcMemLazyEnablePeerAccess))
                )
            except CudaError:
                local = _local_exports.get(raw_handle)
                if local is None or not local.ptr:
                    raise
                if self.byte_size > local.byte_size:
                    raise CudaError(
                        f"{self.byte_size} bytes exceed the exported CUDA buffer of "
                        f"{local.byte_size} bytes"
                    ) from None
                self._local = local
                self.ptr = local.ptr

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return not self.ptr

    def _source(self, offset: int, nbytes: int) -> int:
        """The device address of ``nbytes`` at ``offset`` (call with the lock held)."""
        if not self.ptr:
            raise CudaError("the CUDA IPC buffer is closed")
        if self._local is not None and not self._local.ptr:
            raise CudaError("the exported CUDA buffer was freed by its owner")
        if offset < 0 or nbytes < 0 or offset + nbytes > self.byte_size:
            raise CudaError(
                f"{nbytes} bytes at offset {offset} exceed the CUDA buffer of "
                f"{self.byte_size} bytes"
            )
        return self.ptr + offset

    def copy_out(self, dst_ptr: int, nbytes: int, offset: int = 0) -> None:
        """Copy ``nbytes`` at ``offset`` of the buffer to host memory at ``dst_ptr``.

        Raises
        ------
        CudaError
            If the range exceeds the buffer, the buffer is closed or the copy fails.
        """
        with self._lock:
            src = self._source(offset, nbytes)
            if nbytes:
                with _OnDevice(self.device_id) as rt:
                    kind = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
                    check(rt.cudaMemcpy(dst_ptr, src, nbytes, kind))

    def copy_in(self, src_ptr: int, nbytes: int, offset: int = 0) -> None:
        """Copy ``nbytes`` of host memory at ``src_ptr`` to ``offset`` of the buffer.

        Raises
        ------
        CudaError
            If the range exceeds the buffer, the buffer is closed or the copy fails.
        """
        with self._lock:
            dst = self._source(offset, nbytes)
            if nbytes:
                with _OnDevice(self.device_id) as rt:
                    kind = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
                    check(rt.cudaMemcpy(dst, src_ptr, nbytes, kind))

    def close(self) -> None:
        """Close the IPC mapping (idempotent).

        Raises
        ------
        CudaError
            If ``cudaIpcCloseMemHandle`` fails (the buffer counts as closed all the same).
        """
        with self._lock:
            if not self.ptr:
                return
            ptr, self.ptr = self.ptr, 0
            if self._local is not None:
                self._local = None  # the exporter's own memory: nothing was opened
                return
            with _OnDevice(self.device_id) as rt:
                check(rt.cudaIpcCloseMemHandle(ptr))


# -- DLPack export ---------------------------------------------------------------------------

# Live exports: id -> (managed tensor, shape array, owner); dropped by the deleter.
_exports: dict[int, tuple[Any, Any, Any]] = {}
_next_id = [1]


def _release_managed(managed: Any) -> None:
    _exports.pop(int(managed.contents.manager_ctx or 0), None)


_managed_deleter = dlpack.DELETER(_release_managed)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _release_capsule(capsule: int) -> None:
    # The capsule is being deallocated: it is passed as a raw pointer, never as an object.
    # Still named "dltensor": never consumed, so the producer releases it.
    if dlpack.raw_capsule_valid(capsule, dlpack.LEGACY):
        address = dlpack.raw_capsule_pointer(capsule, dlpack.LEGACY)
        managed = dlpack.DLManagedTensor.from_address(address)
        _exports.pop(int(managed.manager_ctx or 0), None)


_capsule_destructor = _CAPSULE_DESTRUCTOR(_release_capsule)


class DLPackTensor:
    """A DLPack view of ``shape``/``dtype`` data at ``ptr`` on a CUDA device (or the host when
    ``device_id`` is -1), consumable by ``torch.from_dlpack``, ``cupy.from_dlpack`` and, for
    host memory, ``numpy.from_dlpack``.  ``owner`` is kept alive while a view exists."""

    def __init__(
        self, ptr: int, dtype: Any, shape: list[int], device_id: int, owner: Any = None
    ) -> None:
        import numpy as np

        self.ptr = int(ptr)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind not in dlpack.NUMPY_KIND_CODES:
            raise CudaError(f"DLPack cannot carry tensors of dtype {self.dtype}")
        self.shape = [int(d) for d in shape]
        self.device_id = int(device_id)
        self.owner = owner

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.device_id < 0:
            return (dlpack.KDL_CPU, 0)
        return (dlpack.KDL_CUDA, self.device_id)

    def __dlpack__(self, stream: Any = None, **_kwargs: Any) -> Any:
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        managed = dlpack.DLManagedTensor()
        tensor = managed.dl_tensor
        tensor.data = self.ptr or None
        device_type, device_id = self.__dlpack_device__()
        tensor.device = dlpack.DLDevice(device_type, device_id)
        tensor.ndim = ndim
        bits = self.dtype.itemsize * 8
        tensor.dtype = dlpack.DLDataType(dlpack.NUMPY_KIND_CODES[self.dtype.kind], bits, 1)
        tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        tensor.strides = ctypes.POINTER(ctypes.c_int64)()  # NULL: compact row-major
        tensor.byte_offset = 0
        ident = _next_id[0]
        _next_id[0] += 1
        managed.manager_ctx = ident
        managed.deleter = _managed_deleter
        _exports[ident] = (managed, shape, self.owner)
        return dlpack.capsule_new(
            ctypes.addressof(managed),
            dlpack.LEGACY,
            ctypes.cast(_capsule_destructor, ctypes.c_void_p),
        )

    @property
    def nbytes(self) -> int:
        return int(math.prod(self.shape)) * int(self.dtype.itemsize)
