"""System (POSIX) shared-memory helpers, API-compatible with NVIDIA's
``tritonclient.utils.shared_memory``.

A region is created (or reused) by key, filled with numpy arrays, registered with the server
(``register_system_shared_memory``) and read back as zero-copy numpy views::

    handle = create_shared_memory_region("input", "/input_key", 64)
    set_shared_memory_region(handle, [array])
    ...
    destroy_shared_memory_region(handle)   # unmaps and unlinks: nothing is left in /dev/shm

BYTES tensors (``np.object_``/``np.bytes_``/``np.str_`` arrays) are written in Triton's
length-prefixed serialization, and read back deserialized.
"""

from __future__ import annotations

import contextlib
import math
import struct
import warnings
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from shm import posix
from shm.copy import copy_into

from .._dtypes import as_numpy_dtype
from .._errors import with_note
from .._serialize import serialize_byte_tensor

__all__ = [
    "SharedMemoryException",
    "SharedMemoryRegion",
    "create_shared_memory_region",
    "destroy_shared_memory_region",
    "get_contents_as_numpy",
    "mapped_shared_memory_regions",
    "set_shared_memory_region",
]


class SharedMemoryException(Exception):
    """Exception type for shared memory related errors."""


class SharedMemoryRegion:
    """Handle of a mapped system shared-memory region (returned by
    :func:`create_shared_memory_region`)."""

    def __init__(self, triton_shm_name: str, shm_key: str, region: posix.MappedRegion) -> None:
        self._triton_shm_name = triton_shm_name
        self._shm_key = shm_key
        self._region: posix.MappedRegion | None = region
        self._byte_size = region.byte_size

    def __repr__(self) -> str:
        return (
            f"SharedMemoryRegion(name={self._triton_shm_name!r}, key={self._shm_key!r}, "
            f"byte_size={self._byte_size})"
        )

    def _buffer(self) -> memoryview:
        if self._region is None:
            raise SharedMemoryException(
                f"shared memory region '{self._triton_shm_name}' has been destroyed"
            )
        return self._region.buffer


# key -> {"needs_unlink": bool, "active_handle_count": int}, as in NVIDIA's module
_key_mapping: dict[str, dict[str, Any]] = {}


def _error(message: str, detail: str) -> SharedMemoryException:
    """NVIDIA's exception (``message``) with what went wrong as an exception note."""
    return with_note(SharedMemoryException(message), detail)


def create_shared_memory_region(
    triton_shm_name: str, shm_key: str, byte_size: int, create_only: bool = False
) -> SharedMemoryRegion:
    """Return a handle of the system shared memory region with the specified name and size.

    Parameters
    ----------
    triton_shm_name : str
        The unique name of the shared memory region to be created.
    shm_key : str
        The unique key of the shared memory object (a POSIX shm name such as ``"/key"``).
    byte_size : int
        The size in bytes of the shared memory region to be created.
    create_only : bool
        Whether a new shared memory object must be created. If False and an object with the
        same key exists, a handle to it is returned: its size is the existing object's, which
        can differ from ``byte_size`` (never resized; a warning says so when it is smaller).

    Returns
    -------
    SharedMemoryRegion
        The handle for the system shared memory region.

    Raises
    ------
    SharedMemoryException
        If unable to create the shared memory region: an invalid key, a size that is not
        positive, or (with ``create_only``) a key that already exists.
    """
    region: posix.MappedRegion | None = None
    if not create_only:
        with contextlib.suppress(posix.SharedMemoryError):
            region = posix.open_existing(shm_key)
    created = region is None
    if region is None:
        if not isinstance(byte_size, (int, np.integer)) or byte_size <= 0:
            raise _error(
                "unable to create the shared memory region",
                f"byte_size must be a positive integer, got {byte_size!r}",
            )
        try:
            region = posix.create(shm_key, int(byte_size), create_only=True)
        except posix.SharedMemoryError as ex:
            raise _error(
                "unable to create the shared memory region",
                f"region '{triton_shm_name}' with key '{shm_key}': {ex}",
            ) from ex
    entry = _key_mapping.setdefault(shm_key, {"needs_unlink": False, "active_handle_count": 0})
    if created:
        entry["needs_unlink"] = True
    entry["active_handle_count"] += 1
    if byte_size > region.byte_size:
        warnings.warn(
            f"reusing shared memory region with key '{shm_key}', region size is "
            f"{region.byte_size} instead of requested {byte_size}",
            stacklevel=2,
        )
    return SharedMemoryRegion(triton_shm_name, shm_key, region)


def _check_handle(shm_handle: Any) -> SharedMemoryRegion:
    if not isinstance(shm_handle, SharedMemoryRegion):
        raise SharedMemoryException(
            f"expected a handle from create_shared_memory_region, got {type(shm_handle).__name__}"
        )
    return shm_handle


def _is_bytes_dtype(dtype: np.dtype[Any]) -> bool:
    return dtype == np.object_ or dtype.type in (np.bytes_, np.str_)


def _as_bytes(value: npt.NDArray[Any]) -> bytes | None:
    """The serialized bytes of a BYTES array, or None for a fixed-size dtype."""
    if not _is_bytes_dtype(value.dtype):
        return None
    # A 0-d object array holding bytes is the output of serialize_byte_tensor (what
    # NVIDIA's helpers expect): written as is.
    if value.dtype == np.object_ and value.ndim == 0 and isinstance(value.item(), bytes):
        return bytes(value.item())
    serialized = serialize_byte_tensor(value)
    if serialized.size == 0:
        return b""
    return bytes(serialized.item())


def set_shared_memory_region(
    shm_handle: SharedMemoryRegion, input_values: Sequence[npt.NDArray[Any]], offset: int = 0
) -> None:
    """Copy the contents of the numpy arrays into the system shared memory region, one after
    the other, starting at ``offset``.

    Parameters
    ----------
    shm_handle : SharedMemoryRegion
        The handle for the system shared memory region.
    input_values : list
        The list of numpy arrays to be copied into the shared memory region.  BYTES arrays
        (object, bytes or str dtype) are serialized; an already serialized array (the output
        of ``serialize_byte_tensor``) is written as is.
    offset : int
        The offset, in bytes, into the region where the first array is copied.

    Raises
    ------
    SharedMemoryException
        If the arguments are invalid or the values do not fit in the region.
    """
    handle = _check_handle(shm_handle)
    if not isinstance(input_values, (list, tuple)):
        raise SharedMemoryException(
            "input_values must be specified as a list/tuple of numpy arrays"
        )
    for input_value in input_values:
        if not isinstance(input_value, np.ndarray):
            raise SharedMemoryException("each element of input_values must be a numpy array")
    if offset < 0:
        raise SharedMemoryException(f"invalid offset {offset}: must not be negative")
    buffer = handle._buffer()
    # Serialize and check every size first: nothing is written if anything does not fit.
    payloads: list[bytes | npt.NDArray[Any]] = []
    total = 0
    for input_value in input_values:
        data = _as_bytes(input_value)
        payload: bytes | npt.NDArray[Any] = (
            data if data is not None else np.ascontiguousarray(input_value)
        )
        payloads.append(payload)
        total += len(payload) if isinstance(payload, bytes) else payload.nbytes
    if offset + total > handle._byte_size:
        raise _error(
            "unable to set the shared memory region",
            f"region '{handle._triton_shm_name}': {total} bytes at offset {offset} exceed "
            f"its {handle._byte_size} bytes",
        )
    position = offset
    for payload in payloads:
        if isinstance(payload, bytes):
            size = len(payload)
            buffer[position : position + size] = payload
        else:
            size = payload.nbytes
            if size:
                target = np.ndarray(payload.shape, payload.dtype, buffer=buffer, offset=position)
                copy_into(target, payload)  # on several cores when large
        position += size


def get_contents_as_numpy(
    shm_handle: SharedMemoryRegion, datatype: Any, shape: Sequence[int], offset: int = 0
) -> npt.NDArray[Any]:
    """Generate a numpy array from the data stored in the system shared memory region.

    Parameters
    ----------
    shm_handle : SharedMemoryRegion
        The handle for the system shared memory region.
    datatype : np.dtype
        The datatype of the array to be returned (``np.object_`` or ``np.bytes_`` for BYTES;
        a Triton datatype name such as ``"INT32"`` is accepted too).
    shape : list
        The list of int describing the shape of the array to be returned.
    offset : int
        The offset, in bytes, into the region where the array starts.

    Returns
    -------
    np.array
        For fixed-size datatypes a zero-copy view of the region (it sees later writes);
        for BYTES a deserialized object array.

    Raises
    ------
    SharedMemoryException
        If the requested array does not fit in the region.
    """
    handle = _check_handle(shm_handle)
    dtype = as_numpy_dtype(datatype)
    shape = [int(d) for d in shape]
    buffer = handle._buffer()
    if offset < 0 or offset > handle._byte_size:
        raise SharedMemoryException(
            f"invalid offset {offset} for shared memory region '{handle._triton_shm_name}' "
            f"of {handle._byte_size} bytes"
        )
    count = math.prod(shape)
    if not _is_bytes_dtype(dtype):
        needed = count * dtype.itemsize
        if offset + needed > handle._byte_size:
            raise SharedMemoryException(
                f"the shared memory region '{handle._triton_shm_name}' of {handle._byte_size} "
                f"bytes cannot hold {needed} bytes at offset {offset}"
            )
        if needed == 0:
            return np.empty(shape, dtype=dtype)
        view: npt.NDArray[Any] = np.ndarray(shape, dtype, buffer=buffer, offset=offset)
        return view
    strs: list[bytes] = []
    position = offset
    end = handle._byte_size
    try:
        for _ in range(count):
            if position + 4 > end:
                raise SharedMemoryException("truncated length prefix")
            (length,) = struct.unpack_from("<I", buffer, position)
            position += 4
            if position + length > end:
                raise SharedMemoryException(f"element of {length} bytes runs past the region")
            strs.append(bytes(buffer[position : position + length]))
            position += length
    except SharedMemoryException as ex:
        raise SharedMemoryException(
            f"unable to read {count} BYTES elements at offset {offset} from shared memory "
            f"region '{handle._triton_shm_name}': {ex}"
        ) from None
    result = np.empty(count, dtype=np.object_)
    result[:] = strs
    return cast("npt.NDArray[Any]", result.reshape(shape))


def mapped_shared_memory_regions() -> list[str]:
    """Return the keys of all system shared memory regions mapped but not yet destroyed."""
    return list(_key_mapping.keys())


def destroy_shared_memory_region(shm_handle: SharedMemoryRegion) -> None:
    """Release the handle; unlink the shared memory object when this is the last handle to a
    region this process created.  Destroying a handle twice is a no-op.

    Raises
    ------
    SharedMemoryException
        If unable to unlink the shared memory region.
    """
    handle = _check_handle(shm_handle)
    if handle._region is None:
        return
    region, handle._region = handle._region, None
    region.close()
    entry = _key_mapping.get(handle._shm_key)
    if entry is None:
        return
    entry["active_handle_count"] -= 1
    if entry["active_handle_count"] > 0:
        return
    # Forget the key first: a failed unlink must not leave a region reported as valid.
    _key_mapping.pop(handle._shm_key, None)
    if entry["needs_unlink"]:
        try:
            posix.unlink(handle._shm_key)
        except posix.SharedMemoryError as ex:
            raise SharedMemoryException(str(ex)) from ex
