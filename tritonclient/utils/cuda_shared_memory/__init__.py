"""CUDA shared-memory helpers, API-compatible with NVIDIA's
``tritonclient.utils.cuda_shared_memory``.

Built on :mod:`shm.cuda` (cuda-python).  The module imports without cuda-python and without a
GPU; every call then raises :class:`CudaSharedMemoryException` saying what is missing.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from shm import cuda as _cuda

from .._dtypes import as_numpy_dtype, triton_to_np_dtype
from .._errors import with_note
from .._serialize import serialize_byte_tensor

__all__ = [
    "CudaSharedMemoryException",
    "CudaSharedMemoryRegion",
    "allocated_shared_memory_regions",
    "as_shared_memory_tensor",
    "create_shared_memory_region",
    "destroy_shared_memory_region",
    "get_contents_as_numpy",
    "get_raw_handle",
    "set_shared_memory_region",
    "set_shared_memory_region_from_dlpack",
]


class CudaSharedMemoryException(Exception):
    """Exception type for CUDA shared memory related errors."""


class CudaSharedMemoryRegion:
    """Handle of a CUDA shared-memory region (returned by :func:`create_shared_memory_region`)."""

    def __init__(self, triton_shm_name: str, buffer: _cuda.DeviceBuffer) -> None:
        self._triton_shm_name = triton_shm_name
        self._buffer = buffer
        self._base_addr = buffer.ptr
        self._byte_size = buffer.byte_size
        self._device_id = buffer.device_id

    def __repr__(self) -> str:
        return (
            f"CudaSharedMemoryRegion(name={self._triton_shm_name!r}, "
            f"byte_size={self._byte_size}, device_id={self._device_id})"
        )


allocated_shm_regions: list[CudaSharedMemoryRegion] = []


def _fail(message: str, ex: BaseException | str) -> CudaSharedMemoryException:
    """NVIDIA's exception (``message``) with what went wrong as an exception note."""
    return with_note(CudaSharedMemoryException(message), str(ex))


def _check_handle(handle: Any) -> CudaSharedMemoryRegion:
    if not isinstance(handle, CudaSharedMemoryRegion):
        raise CudaSharedMemoryException(
            f"expected a handle from create_shared_memory_region, got {type(handle).__name__}"
        )
    if not handle._buffer.ptr:
        raise CudaSharedMemoryException(
            f"cuda shared memory region '{handle._triton_shm_name}' has been destroyed"
        )
    return handle


def create_shared_memory_region(
    triton_shm_name: str, byte_size: int, device_id: int
) -> CudaSharedMemoryRegion:
    """Allocate ``byte_size`` bytes on GPU ``device_id`` and return its handle.

    Raises
    ------
    CudaSharedMemoryException
        If cuda-python is missing, there is no such device, or the allocation fails.
    """
    if byte_size < 0:
        raise CudaSharedMemoryException(f"invalid byte_size {byte_size}")
    try:
        buffer = _cuda.DeviceBuffer(byte_size, device_id)
    except _cuda.CudaError as ex:
        raise _fail("unable to create cuda shared memory handle", ex) from ex
    handle = CudaSharedMemoryRegion(triton_shm_name, buffer)
    allocated_shm_regions.append(handle)
    return handle


def get_raw_handle(cuda_shm_handle: CudaSharedMemoryRegion) -> bytes:
    """The raw serialized cudaIPC handle of the region, base64-encoded."""
    handle = _check_handle(cuda_shm_handle)
    try:
        return base64.b64encode(handle._buffer.ipc_handle())
    except _cuda.CudaError as ex:
        raise _fail("unable to get the cuda IPC handle", ex) from ex


def _host_bytes(value: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if value.dtype == np.object_ or value.dtype.type in (np.bytes_, np.str_):
        if value.dtype == np.object_ and value.ndim == 0 and isinstance(value.item(), bytes):
            data = bytes(value.item())
        else:
            serialized = serialize_byte_tensor(value)
            data = bytes(serialized.item()) if serialized.size else b""
        return np.frombuffer(data, dtype=np.uint8)
    return np.ascontiguousarray(value)


def set_shared_memory_region(
    cuda_shm_handle: CudaSharedMemoryRegion,
    input_values: Sequence[npt.NDArray[Any]],
    offset: int = 0,
) -> None:
    """Copy the numpy arrays one after the other into the region (BYTES serialized).

    Raises
    ------
    CudaSharedMemoryException
        If the arguments are invalid, the values do not fit, or the copy fails.
    """
    if not isinstance(input_values, (list, tuple)):
        # NVIDIA's text (its two messages are the other way round from what each checks)
        raise CudaSharedMemoryException("input_values must be specified as a numpy array")
    for value in input_values:
        if not isinstance(value, np.ndarray):
            raise CudaSharedMemoryException(
                "input_values must be specified as a list/tuple of numpy arrays"
            )
    handle = _check_handle(cuda_shm_handle)
    arrays = [_host_bytes(v) for v in input_values]
    total = sum(a.nbytes for a in arrays)
    if offset < 0 or offset + total > handle._byte_size:
        raise _fail(
            "unable to set values in cuda shared memory",
            f"{total} bytes at offset {offset} exceed the region's {handle._byte_size} bytes",
        )
    try:
        for array in arrays:
            handle._buffer.copy_in(array.ctypes.data, array.nbytes, offset)
            offset += array.nbytes
    except _cuda.CudaError as ex:
        raise _fail("unable to set values in cuda shared memory", ex) from ex


def set_shared_memory_region_from_dlpack(
    cuda_shm_handle: CudaSharedMemoryRegion, input_values: Sequence[Any], offset: int = 0
) -> None:
    """Copy DLPack tensors (torch, CuPy, numpy, ... on the host or a GPU) one after the other
    into the region, device to device where they live on a GPU.

    Raises
    ------
    CudaSharedMemoryException
        If a tensor is not C-contiguous, is on an unsupported device, or does not fit.
    """
    handle = _check_handle(cuda_shm_handle)
    for value in input_values:
        if not hasattr(value, "__dlpack__"):
            raise CudaSharedMemoryException(
                f"object of type {type(value).__name__} does not implement __dlpack__"
            )
    try:
        for value in input_values:
            ptr, nbytes = _dlpack_span(value)
            if offset + nbytes > handle._byte_size:
                raise CudaSharedMemoryException(
                    f"unable to set values in cuda shared memory: {nbytes} bytes at offset "
                    f"{offset} exceed the region's {handle._byte_size} bytes"
                )
            handle._buffer.copy_in(ptr, nbytes, offset)
            offset += nbytes
    except _cuda.CudaError as ex:
        raise _fail("unable to set values in cuda shared memory", ex) from ex


def _dlpack_span(value: Any) -> tuple[int, int]:
    """Data pointer and byte size of a C-contiguous tensor exposing ``__dlpack__``."""
    device_type, _ = value.__dlpack_device__()
    if int(device_type) not in (1, 2, 3):  # kDLCPU, kDLCUDA, kDLCUDAHost
        raise CudaSharedMemoryException(f"DLPack device type {device_type} is not supported")
    if int(device_type) == 1 and isinstance(value, np.ndarray):
        if not value.flags.c_contiguous:
            raise CudaSharedMemoryException(
                "DLPack tensor is not contiguous: only C-contiguous tensors are supported"
            )
        return int(value.ctypes.data), int(value.nbytes)
    # Objects such as torch or CuPy tensors expose data_ptr()/nbytes or the CUDA array
    # interface; prefer those to parsing capsules.
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        shape = [int(d) for d in interface["shape"]]
        itemsize = np.dtype(interface["typestr"]).itemsize
        strides = interface.get("strides")
        if strides is not None and list(strides) != _c_strides(shape, itemsize):
            raise CudaSharedMemoryException(
                "DLPack tensor is not contiguous: only C-contiguous tensors are supported"
            )
        return int(interface["data"][0]), math.prod(shape) * itemsize
    if hasattr(value, "data_ptr") and hasattr(value, "is_contiguous"):
        if not value.is_contiguous():
            raise CudaSharedMemoryException(
                "DLPack tensor is not contiguous: only C-contiguous tensors are supported"
            )
        return int(value.data_ptr()), int(value.numel() * value.element_size())
    array = np.from_dlpack(value)
    if not array.flags.c_contiguous:
        raise CudaSharedMemoryException(
            "DLPack tensor is not contiguous: only C-contiguous tensors are supported"
        )
    return int(array.ctypes.data), int(array.nbytes)


def _c_strides(shape: list[int], itemsize: int) -> list[int]:
    strides, step = [], itemsize
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return strides[::-1]


def get_contents_as_numpy(
    cuda_shm_handle: CudaSharedMemoryRegion, datatype: Any, shape: Sequence[int], offset: int = 0
) -> npt.NDArray[Any]:
    """Copy the region's contents to the host as a numpy array (BYTES deserialized).

    Raises
    ------
    CudaSharedMemoryException
        If the requested array does not fit in the region or the copy fails.
    """
    handle = _check_handle(cuda_shm_handle)
    dtype = as_numpy_dtype(datatype)
    shape = [int(d) for d in shape]
    count = math.prod(shape)
    bytes_type = dtype == np.object_ or dtype.type == np.bytes_
    needed = handle._byte_size - offset if bytes_type else count * dtype.itemsize
    if offset < 0 or needed < 0 or offset + needed > handle._byte_size:
        raise CudaSharedMemoryException(
            "The size of the shared memory region is insufficient to provide numpy array "
            "with requested size"
        )
    host = np.empty(needed, dtype=np.uint8)
    try:
        handle._buffer.copy_out(host.ctypes.data, needed, offset)
    except _cuda.CudaError as ex:
        raise _fail("failed to read cuda shared memory results", ex) from ex
    if not bytes_type:
        return cast("npt.NDArray[Any]", host.view(dtype).reshape(shape))
    strs: list[bytes] = []
    position = 0
    raw = host.tobytes()
    for _ in range(count):
        if position + 4 > len(raw):
            raise CudaSharedMemoryException("truncated BYTES element in cuda shared memory")
        (length,) = struct.unpack_from("<I", raw, position)
        position += 4
        strs.append(raw[position : position + length])
        position += length
    result = np.empty(count, dtype=np.object_)
    result[:] = strs
    return cast("npt.NDArray[Any]", result.reshape(shape))


def as_shared_memory_tensor(
    cuda_shm_handle: CudaSharedMemoryRegion, datatype: str, shape: Sequence[int]
) -> _cuda.DLPackTensor:
    """A DLPack view of the region on its device (``torch.from_dlpack``, ``cupy.from_dlpack``).

    ``datatype`` is a Triton datatype name ("FP32", ...); BYTES cannot be viewed.
    """
    handle = _check_handle(cuda_shm_handle)
    dtype = triton_to_np_dtype(datatype) if isinstance(datatype, str) else datatype
    if dtype is None or np.dtype(dtype) == np.object_:
        raise CudaSharedMemoryException(f"datatype {datatype!r} cannot be viewed through DLPack")
    try:
        tensor = _cuda.DLPackTensor(
            handle._base_addr, dtype, list(shape), handle._device_id, owner=handle
        )
    except _cuda.CudaError as ex:
        raise CudaSharedMemoryException(str(ex)) from ex
    if tensor.nbytes > handle._byte_size:
        raise CudaSharedMemoryException(
            "The size of the shared memory region is insufficient to provide a tensor "
            "with requested size"
        )
    return tensor


def allocated_shared_memory_regions() -> list[CudaSharedMemoryRegion]:
    """All CUDA shared memory regions allocated and not yet destroyed."""
    return allocated_shm_regions


def destroy_shared_memory_region(cuda_shm_handle: CudaSharedMemoryRegion) -> None:
    """Free the region's device memory (destroying twice is a no-op)."""
    if not isinstance(cuda_shm_handle, CudaSharedMemoryRegion):
        raise CudaSharedMemoryException(
            f"expected a handle from create_shared_memory_region, "
            f"got {type(cuda_shm_handle).__name__}"
        )
    if cuda_shm_handle in allocated_shm_regions:
        allocated_shm_regions.remove(cuda_shm_handle)
    try:
        cuda_shm_handle._buffer.free()
    except _cuda.CudaError as ex:
        raise _fail("unable to free cuda shared memory", ex) from ex
