"""DLPack import and export for ``pb_utils.Tensor``, BF16 included.

numpy implements DLPack for its own dtypes only.  BF16 (``ml_dtypes.bfloat16``) travels as a
16-bit unsigned integer capsule whose DLPack dtype code is rewritten to ``kDLBfloat`` on export,
and back on import, with :mod:`ctypes` on the ``DLTensor`` inside the capsule.  Both the legacy
(``"dltensor"``) and the versioned (``"dltensor_versioned"``) capsule layouts are understood;
their structures are :mod:`shm.dlpack`'s.

Tensors on a GPU are imported by asking their producer for a host copy (the DLPack
``dl_device``/``copy`` protocol); this server's tensors always live in host memory.
"""

from __future__ import annotations

from typing import Any, cast

import ml_dtypes
import numpy as np
import numpy.typing as npt

from shm import dlpack

from ._errors import TritonModelException

__all__ = ["HOST_DEVICE", "export_array", "import_array"]

_HOST_DEVICES = (dlpack.KDL_CPU, dlpack.KDL_CUDA_HOST)
#: What ``__dlpack_device__`` reports for this server's tensors.
HOST_DEVICE = (dlpack.KDL_CPU, 0)

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _is_capsule(obj: object) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _dl_tensor(capsule: object) -> dlpack.DLTensor:
    """Return the (mutable) DLTensor inside an unconsumed DLPack capsule."""
    if dlpack.capsule_valid(capsule, dlpack.LEGACY):
        address = dlpack.capsule_pointer(capsule, dlpack.LEGACY)
        managed = dlpack.DLManagedTensor.from_address(address)
        return cast(dlpack.DLTensor, managed.dl_tensor)
    if dlpack.capsule_valid(capsule, dlpack.VERSIONED):
        address = dlpack.capsule_pointer(capsule, dlpack.VERSIONED)
        versioned = dlpack.DLManagedTensorVersioned.from_address(address)
        return cast(dlpack.DLTensor, versioned.dl_tensor)
    name = dlpack.capsule_name(capsule)
    if name in (b"used_dltensor", b"used_dltensor_versioned"):
        raise TritonModelException("the DLPack capsule was already consumed")
    raise TritonModelException(f"not a DLPack capsule (capsule name {name!r})")


class _CapsuleHolder:
    """Hands one capsule to :func:`numpy.from_dlpack`."""

    def __init__(self, capsule: object, device: tuple[int, int]) -> None:
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, **_kwargs: Any) -> object:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def export_array(
    array: npt.NDArray[Any],
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
) -> object:
    """Export a host array as a DLPack capsule (BF16 with the ``kDLBfloat`` dtype code).

    Parameters
    ----------
    array : numpy.ndarray
        A C-contiguous array of a fixed-size dtype.
    stream : object, optional
        The consumer's stream; must be None (host memory).
    max_version : tuple of int, optional
        The highest DLPack version the consumer understands; ``(1, x)`` gets a versioned capsule
        where numpy can produce one.

    Returns
    -------
    PyCapsule
        A ``"dltensor"`` (or ``"dltensor_versioned"``) capsule sharing the array's memory.
    """
    if array.dtype == np.object_:
        raise TritonModelException("DLPack cannot carry BYTES (object) tensors")
    versioned = max_version is not None and max_version[0] >= 1
    if not array.flags.writeable and not versioned:
        array = array.copy()  # legacy DLPack has no read-only flag
    bf16 = array.dtype == _BF16
    source = array.view(np.uint16) if bf16 else array
    kwargs: dict[str, Any] = {}
    if stream is not None:
        kwargs["stream"] = stream
    if versioned:
        kwargs["max_version"] = max_version
    try:
        capsule: object = source.__dlpack__(**kwargs)
    except TypeError:  # numpy before 2.1 has no max_version
        capsule = source.__dlpack__()
    if bf16:
        dtype = _dl_tensor(capsule).dtype
        dtype.code, dtype.bits, dtype.lanes = dlpack.KDL_BFLOAT, 16, 1
    return capsule


def _host_capsule(obj: object) -> tuple[object, tuple[int, int]]:
    """Get a host-memory DLPack capsule from a capsule or an object implementing ``__dlpack__``."""
    if _is_capsule(obj):
        device = _dl_tensor(obj).device
        if device.device_type not in _HOST_DEVICES:
            raise TritonModelException(
                f"DLPack capsule of a tensor on device type {device.device_type}: only host "
                "memory capsules are supported (pass the tensor object itself so that it can be "
                "copied to the host)"
            )
        return obj, (int(device.device_type), int(device.device_id))
    exporter = getattr(obj, "__dlpack__", None)
    if exporter is None:
        # Triton 2.51's words, the run of spaces (a C++ line continuation) included.
        raise TritonModelException(
            "Provided tensor is not supported. Tensor must be a DLPack capsule         or have "
            "`__dlpack__` and `__dlpack_device__` attributes"
        )
    device_of = getattr(obj, "__dlpack_device__", None)
    device = tuple(device_of()) if device_of is not None else HOST_DEVICE
    if int(device[0]) in _HOST_DEVICES:
        return exporter(), (int(device[0]), int(device[1]))
    try:
        capsule = exporter(stream=None, max_version=(1, 0), dl_device=HOST_DEVICE, copy=True)
    except (TypeError, BufferError, NotImplementedError, ValueError) as exc:
        raise TritonModelException(
            f"tensor of {type(obj).__name__} is on DLPack device {tuple(device)} and its "
            f"producer cannot copy it to the host ({exc}); this server keeps tensors in host "
            "memory"
        ) from exc
    return capsule, HOST_DEVICE


def import_array(obj: object) -> npt.NDArray[Any]:
    """Import a DLPack tensor as a numpy array sharing its memory.

    Parameters
    ----------
    obj : PyCapsule or object with ``__dlpack__``
        The tensor.

    Returns
    -------
    numpy.ndarray
        The array (``ml_dtypes.bfloat16`` for BF16 tensors).

    Raises
    ------
    TritonModelException
        If the tensor is not C-contiguous, has a dtype numpy cannot represent, or lives in device
        memory its producer cannot copy to the host.
    """
    capsule, device = _host_capsule(obj)
    dtype = _dl_tensor(capsule).dtype
    bf16 = dtype.code == dlpack.KDL_BFLOAT and dtype.bits == 16 and dtype.lanes == 1
    if bf16:
        dtype.code = dlpack.KDL_UINT
    try:
        array: npt.NDArray[Any] = np.from_dlpack(cast(Any, _CapsuleHolder(capsule, device)))
    except (BufferError, TypeError, ValueError, RuntimeError) as exc:
        raise TritonModelException(f"cannot import the DLPack tensor: {exc}") from exc
    if bf16:
        array = array.view(_BF16)
    if not array.flags.c_contiguous:
        raise TritonModelException(
            "from_dlpack supports only C-order contiguous tensors; make the tensor contiguous first"
        )
    return array
