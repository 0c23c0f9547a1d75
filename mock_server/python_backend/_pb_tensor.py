"""``pb_utils.Tensor``: numpy arrays, DLPack and BF16, BYTES tensors, and their core form.

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient.utils import (
    np_to_triton_dtype,
)

from ..core.types import Tensor as CoreTensor
from . import _dlpack, _pybind
from ._errors import TritonModelException
from ._pb_types import _TRITON_TYPE_CODES


class Tensor:
    """A named tensor: an input of a request or an output of a response.

    Parameters
    ----------
    name : str
        Tensor name (``bytes`` are read as UTF-8).
    numpy_array : numpy.ndarray
        The data, a numpy array (as in Triton, other objects are refused).  Any dtype with a
        protocol datatype: bool, (u)int8..64, float16/32/64, ``ml_dtypes.bfloat16`` (BF16), and
        for BYTES ``object`` arrays of ``bytes``/``str``, or ``numpy.bytes_``/``numpy.str_``
        arrays (str is sent UTF-8 encoded); non-contiguous arrays are made C-contiguous.

    Raises
    ------
    TypeError
        If the name is not text or the data not a numpy array.
    TritonModelException
        If the dtype has no protocol datatype.
    """

    __slots__ = ("_array", "_datatype", "_name")

    def __init__(self, name: str, numpy_array: Any) -> None:
        text = _pybind.text_arg(name)
        if text is None or not isinstance(numpy_array, np.ndarray):
            raise _pybind.incompatible(
                "__init__",
                "Tensor(arg0: str, arg1: numpy.ndarray)",
                (name, numpy_array),
                constructor=True,
            )
        name = text
        array = numpy_array
        datatype = np_to_triton_dtype(array.dtype)
        if datatype is None:
            raise TritonModelException(
                f"tensor '{name}': numpy dtype {array.dtype} has no Triton datatype; use bool, "
                "(u)int8-64, float16/32/64, ml_dtypes.bfloat16, or object/bytes_/str_ for BYTES"
            )
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self._name = name
        self._array: npt.NDArray[Any] = array
        self._datatype = datatype

    @classmethod
    def _wrap(cls, name: str, datatype: str, array: npt.NDArray[Any]) -> Tensor:
        tensor = cls.__new__(cls)
        tensor._name = name
        tensor._datatype = datatype
        tensor._array = array
        return tensor

    def name(self) -> str:
        """Return the tensor's name."""
        return self._name

    def as_numpy(self) -> npt.NDArray[Any]:
        """Return the data as a numpy array (no copy).

        BYTES tensors are ``object`` arrays (of ``bytes`` for inputs).

        Raises
        ------
        TritonModelException
            For a BF16 tensor, as Triton's (numpy has no bfloat16): use :meth:`to_dlpack` and
            :meth:`from_dlpack` (e.g. with torch) instead.
        """
        if self._datatype == "BF16":
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and "
                "from_dlpack() instead."
            )
        return self._array

    def triton_dtype(self) -> int:
        """Return the ``TRITONSERVER_DataType`` number of the tensor's datatype."""
        return _TRITON_TYPE_CODES[self._datatype]

    def shape(self) -> list[int]:
        """Return the tensor's shape."""
        return [int(d) for d in self._array.shape]

    def is_cpu(self) -> bool:
        """Whether the tensor is in CPU memory (always True on this server)."""
        return True

    def to_dlpack(self) -> Any:
        """Return a DLPack capsule sharing the tensor's memory (BF16 included).

        Raises
        ------
        TritonModelException
            For BYTES tensors, which DLPack cannot carry.
        """
        return _dlpack.export_array(self._array)

    @staticmethod
    def from_dlpack(name: str, dlpack_tensor: Any) -> Tensor:
        """Create a tensor from a DLPack capsule or an object implementing ``__dlpack__``.

        Parameters
        ----------
        name : str
            Tensor name (``bytes`` are read as UTF-8).
        dlpack_tensor : PyCapsule or object with ``__dlpack__``
            The tensor to wrap, C-order contiguous; its memory is shared, not copied (tensors in
            GPU memory are copied to the host by their producer).

        Returns
        -------
        Tensor

        Raises
        ------
        TritonModelException
            If the tensor is not C-contiguous or its dtype has no Triton datatype.
        """
        if _pybind.text_arg(name) == "":  # checked first, as Triton's binding does
            raise TritonModelException("Tensor name cannot be an empty string.")
        return Tensor(name, _dlpack.import_array(dlpack_tensor))

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any:
        """DLPack protocol: export the tensor (host memory)."""
        if dl_device is not None and tuple(dl_device) != _dlpack.HOST_DEVICE:
            raise BufferError("pb_utils.Tensor lives in host memory; cannot export to a device")
        if copy:
            return _dlpack.export_array(self._array.copy(), stream, max_version)
        return _dlpack.export_array(self._array, stream, max_version)

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack protocol: the tensor's device (``kDLCPU``, 0)."""
        return _dlpack.HOST_DEVICE

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, {self._datatype}, shape={list(self._array.shape)})"


def _bytes_element(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytearray, memoryview)):
        return bytes(item)
    return str(item).encode("utf-8")


def _bytes_array(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An object array of ``bytes`` with the data of a BYTES-typed array."""
    if array.dtype == np.object_:
        flat = array.reshape(-1)
        if all(type(item) is bytes for item in flat):
            return array
        items = [_bytes_element(item) for item in flat]
    else:  # bytes_ / str_
        items = [_bytes_element(item) for item in array.reshape(-1).tolist()]
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out.reshape(array.shape)


def _tensor_to_core(tensor: Tensor) -> CoreTensor:
    array = tensor._array
    if tensor._datatype == "BYTES":
        try:
            array = _bytes_array(array)
        except UnicodeEncodeError as exc:
            raise TritonModelException(
                f"tensor '{tensor._name}': a str element cannot be encoded as UTF-8 ({exc})"
            ) from exc
    return CoreTensor(tensor._name, tensor._datatype, tuple(int(d) for d in array.shape), array)


def _tensor_from_core(tensor: CoreTensor) -> Tensor:
    return Tensor._wrap(tensor.name, tensor.datatype, tensor.data)


def serialize_byte_tensor(input_tensor: npt.NDArray[Any]) -> bytes | tuple[()] | None:
    """Serialize a BYTES tensor as the Python backend's helper does.

    Parameters
    ----------
    input_tensor : numpy.ndarray
        An ``object`` array (``bytes`` elements as they are, anything else as the UTF-8 of its
        ``str()``) or a ``numpy.bytes_`` array.

    Returns
    -------
    bytes or tuple or None
        Each element in C order as a 4-byte little-endian length and its bytes; an empty
        tuple for an empty array and None for an array of another dtype (as Triton's
        ``triton_python_backend_utils`` returns; ``tritonclient.utils``' version differs).
    """
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype != np.object_ and input_tensor.dtype.type is not np.bytes_:
        return None
    parts: list[bytes] = []
    for item in input_tensor.ravel(order="C").tolist():
        data = item if type(item) is bytes else str(item).encode("utf-8")
        parts += (struct.pack("<I", len(data)), data)
    return b"".join(parts)
