"""Tensors, memory buffers and allocators of the in-process API.

A :class:`Tensor` is a datatype, a shape and a :class:`MemoryBuffer` (pointer, size, memory type
and the object owning the memory), as in ``tritonserver``.  BYTES tensors hold the serialized
form (each element a 4-byte little-endian length followed by its bytes); every other datatype
holds its elements in C order.

This server keeps every tensor in host memory: GPU targets (``to_device("gpu")``, an
``output_memory_type`` of ``MemoryType.GPU`` without an allocator) raise
:class:`UnsupportedError`, and DLPack producers on a device are asked for a host copy.
"""

from __future__ import annotations

import abc
import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from tritonclient.utils import (
    InferenceServerException,
    deserialize_bytes_tensor,
    np_to_triton_dtype,
    serialize_byte_tensor,
    triton_to_np_dtype,
)

from ..core.types import Tensor as CoreTensor
from ..python_backend._dlpack import export_array, import_array
from ..python_backend._errors import TritonModelException
from ._enums import DataType, DLDeviceType, MemoryType
from ._errors import InvalidArgumentError, UnsupportedError

__all__ = [
    "DeviceOrMemoryType",
    "MemoryAllocator",
    "MemoryBuffer",
    "Tensor",
    "parse_device_or_memory_type",
]

#: A target device: ``"cpu"``, ``"gpu:0"``, a :class:`MemoryType`, ``(MemoryType, id)`` or
#: ``(DLDeviceType, id)``.
DeviceOrMemoryType: TypeAlias = tuple[MemoryType, int] | MemoryType | tuple[DLDeviceType, int] | str

_HOST = (MemoryType.CPU, MemoryType.CPU_PINNED)
_DLPACK_TO_MEMORY = {
    DLDeviceType.kDLCPU: MemoryType.CPU,
    DLDeviceType.kDLCUDAHost: MemoryType.CPU_PINNED,
    DLDeviceType.kDLCUDA: MemoryType.GPU,
}
_NAMED_DEVICES = {
    "cpu": MemoryType.CPU,
    "cpu_pinned": MemoryType.CPU_PINNED,
    "pinned": MemoryType.CPU_PINNED,
    "gpu": MemoryType.GPU,
    "cuda": MemoryType.GPU,
}


def parse_device_or_memory_type(device: DeviceOrMemoryType) -> tuple[MemoryType, int]:
    """Normalize a device given in any accepted form to ``(MemoryType, memory_type_id)``.

    Parameters
    ----------
    device : DeviceOrMemoryType
        ``"cpu"``, ``"cpu_pinned"``, ``"gpu"``/``"cuda"`` (optionally ``":<id>"``), a
        :class:`MemoryType`, ``(MemoryType, id)`` or ``(DLDeviceType, id)``.

    Returns
    -------
    tuple of (MemoryType, int)
        The memory type and its id.

    Raises
    ------
    InvalidArgumentError
        If ``device`` is not one of the accepted forms.
    """
    if isinstance(device, str):
        kind, _, index = device.strip().lower().partition(":")
        memory_type = _NAMED_DEVICES.get(kind)
        if memory_type is None or (index and not index.isdigit()):
            raise InvalidArgumentError(
                f"invalid device '{device}'; expected 'cpu', 'cpu_pinned', 'gpu' or 'cuda', "
                "optionally followed by ':<id>'"
            )
        return memory_type, int(index or 0)
    if isinstance(device, DLDeviceType):
        device = (device, 0)
    if isinstance(device, MemoryType):
        return device, 0
    if isinstance(device, tuple) and len(device) == 2 and isinstance(device[1], int):
        kind_value, index_value = device
        if isinstance(kind_value, DLDeviceType):
            found = _DLPACK_TO_MEMORY.get(kind_value)
            if found is None:
                raise InvalidArgumentError(f"unsupported DLPack device type {kind_value!r}")
            return found, index_value
        try:
            return MemoryType(kind_value), index_value
        except ValueError:
            pass
    raise InvalidArgumentError(
        f"invalid device {device!r}; expected a string, a MemoryType, (MemoryType, id) or "
        "(DLDeviceType, id)"
    )


def _gpu_unsupported(what: str) -> UnsupportedError:
    return UnsupportedError(
        f"{what}: GPU memory is not supported; mock_server keeps tensors in host (CPU) memory"
    )


@dataclass
class MemoryBuffer:
    """Memory allocated for a Tensor.

    This object does not own the memory but holds a reference to the owner.

    Parameters
    ----------
    data_ptr : int
        Pointer to the allocated memory.
    memory_type : MemoryType
        memory type
    memory_type_id : int
        memory type id (typically the same as device id)
    size : int
        Size of the allocated memory in bytes.
    owner : Any
        Object that owns or manages the memory buffer.  Allocated memory must not be freed
        while a reference to the owner is held.

    Examples
    --------
    >>> buffer = MemoryBuffer.from_dlpack(numpy.array([100], dtype=numpy.uint8))
    """

    data_ptr: int
    memory_type: MemoryType
    memory_type_id: int
    size: int
    owner: Any

    @staticmethod
    def from_dlpack(owner: Any) -> MemoryBuffer:
        """Describe the memory of a DLPack-compatible object.

        Parameters
        ----------
        owner : Any
            An object implementing ``__dlpack__`` (a numpy array, a CPU torch tensor, ...).
            A numpy array is used as it is (copied first only if it is not C-contiguous); other
            objects are imported through DLPack, and the imported view becomes the owner (it
            keeps ``owner`` alive).  Producers on a device are asked for a host copy.

        Returns
        -------
        MemoryBuffer
            A CPU buffer.

        Raises
        ------
        InvalidArgumentError
            If the object cannot be imported.
        """
        return MemoryBuffer._from_host_array(_import_host_array(owner))

    @staticmethod
    def _from_host_array(array: npt.NDArray[Any]) -> MemoryBuffer:
        return MemoryBuffer(
            data_ptr=int(array.__array_interface__["data"][0]),
            memory_type=MemoryType.CPU,
            memory_type_id=0,
            size=int(array.nbytes),
            owner=array,
        )


class MemoryAllocator(abc.ABC):
    """Abstract interface to allow for custom memory allocation strategies.

    Classes implementing the MemoryAllocator interface have to provide an allocate method
    returning MemoryBuffer objects.  A memory allocator implementation does not need to match
    the requested memory type or memory type id.  Here, returned buffers must be host memory
    (``MemoryType.CPU`` or ``CPU_PINNED``): the server copies each output into the buffer.

    Examples
    --------
    >>> class NumpyAllocator(MemoryAllocator):
    ...     def allocate(self, size, memory_type, memory_type_id):
    ...         return MemoryBuffer.from_dlpack(numpy.empty(size, dtype=numpy.uint8))
    """

    @abc.abstractmethod
    def allocate(self, size: int, memory_type: MemoryType, memory_type_id: int) -> MemoryBuffer:
        """Allocate memory buffer for tensor.

        Note: A memory allocator implementation does not need to honor the requested memory
        type or memory type id.

        Parameters
        ----------
        size : int
            number of bytes requested
        memory_type : MemoryType
            type of memory requested (CPU, GPU, etc.)
        memory_type_id : int
            memory type id requested (typically device id)

        Returns
        -------
        MemoryBuffer
            memory buffer with requested size

        Examples
        --------
        memory_buffer = allocator.allocate(100, MemoryType.CPU, 0)
        """


class _BufferView:
    """Exposes a host :class:`MemoryBuffer` as a ``uint8`` array, keeping its owner alive."""

    def __init__(self, buffer: MemoryBuffer) -> None:
        self.buffer = buffer
        self.__array_interface__ = {
            "version": 3,
            "shape": (buffer.size,),
            "typestr": "|u1",
            "data": (buffer.data_ptr, False),
        }


def _host_bytes(buffer: MemoryBuffer) -> npt.NDArray[np.uint8]:
    """The buffer's bytes as a ``uint8`` array sharing its memory."""
    if buffer.memory_type not in _HOST:
        raise _gpu_unsupported("reading a tensor in GPU memory")
    if buffer.size == 0:
        return np.empty(0, dtype=np.uint8)
    owner = buffer.owner
    if (
        isinstance(owner, np.ndarray)
        and owner.flags.c_contiguous
        and owner.dtype != np.object_
        and int(owner.__array_interface__["data"][0]) == buffer.data_ptr
        and owner.nbytes >= buffer.size
    ):
        flat: npt.NDArray[np.uint8] = owner.reshape(-1).view(np.uint8)
        return flat[: buffer.size]
    return np.asarray(_BufferView(buffer))


def _numpy_dtype(data_type: DataType) -> np.dtype[Any]:
    found = triton_to_np_dtype(data_type.name)
    if found is None:
        raise InvalidArgumentError(f"invalid tensor data type {data_type!r}")
    dtype: np.dtype[Any] = np.dtype(found)
    return dtype


def _datatype_of(dtype: np.dtype[Any]) -> DataType:
    name = np_to_triton_dtype(dtype)
    if name is None:
        raise InvalidArgumentError(f"numpy dtype {dtype} has no Triton data type")
    return DataType[name]


def _import_host_array(obj: Any) -> npt.NDArray[Any]:
    """A C-contiguous host numpy array for a numpy array or any DLPack producer."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "OSU":
            raise InvalidArgumentError(
                f"numpy arrays of dtype {obj.dtype} cannot travel through DLPack; use "
                "Tensor.from_bytes_array() or Tensor.from_string_array()"
            )
        return np.ascontiguousarray(obj)
    if not hasattr(obj, "__dlpack__") and type(obj).__name__ != "PyCapsule":
        raise InvalidArgumentError(
            f"object of type {type(obj).__name__} does not implement __dlpack__"
        )
    try:
        return import_array(obj)
    except TritonModelException as exc:
        raise InvalidArgumentError(str(exc)) from None


def _as_bytes_array(value: Any) -> npt.NDArray[Any]:
    """``value`` as a numpy array holding BYTES elements (object, bytes_ or str_)."""
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, (list, tuple)):
        try:
            array = np.array(value, dtype=np.object_)
        except ValueError as exc:  # ragged nesting
            raise InvalidArgumentError(f"cannot convert {type(value).__name__}: {exc}") from None
    else:
        raise InvalidArgumentError(
            f"cannot convert {type(value).__name__} to a BYTES tensor; expected a list or a "
            "numpy array of str or bytes"
        )
    if array.dtype.kind not in "OSU":
        raise InvalidArgumentError(
            f"Unsupported conversion from an array of dtype {array.dtype} to Triton BYTES Tensor"
        )
    return array


@dataclass
class Tensor:
    """Class representing a Tensor.

    Parameters
    ----------
    data_type : DataType
        Data type of the tensor.
    shape : Sequence[int]
        Shape of the tensor.
    memory_buffer : MemoryBuffer
        Memory buffer containing the tensor data.
    """

    data_type: DataType
    shape: Sequence[int]
    memory_buffer: MemoryBuffer

    @property
    def data_ptr(self) -> int:
        """Get the pointer to the tensor's data.

        Returns
        -------
        int
            The pointer to the tensor's data.
        """
        return self.memory_buffer.data_ptr

    @property
    def memory_type(self) -> MemoryType:
        """Get the memory type of the tensor.

        Returns
        -------
        MemoryType
            The memory type of the tensor.
        """
        return self.memory_buffer.memory_type

    @property
    def memory_type_id(self) -> int:
        """Get the ID representing the memory type of the tensor.

        Returns
        -------
        int
            The ID representing the memory type of the tensor.
        """
        return self.memory_buffer.memory_type_id

    @property
    def size(self) -> int:
        """Get the size of the tensor's data in bytes.

        Returns
        -------
        int
            The size of the tensor's data in bytes.
        """
        return self.memory_buffer.size

    # -- DLPack ------------------------------------------------------------------------------
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Convert the tensor to a DLPack-compatible object.

        Parameters
        ----------
        stream : Any, optional
            The consumer's stream; must be None or 0 (host memory).
        max_version : tuple of int, optional
            The highest DLPack version the consumer supports.
        dl_device : tuple of int, optional
            The device the consumer wants; only the CPU is possible.
        copy : bool, optional
            True to export a copy instead of sharing the memory.

        Returns
        -------
        Any
            A DLPack capsule sharing (or copying) the tensor's memory.

        Raises
        ------
        UnsupportedError
            For BYTES tensors (DLPack has no variable-size type) and non-host streams.
        BufferError
            If ``dl_device`` is not the CPU.
        """
        if stream not in (None, 0):
            raise UnsupportedError(
                f"DLPack stream synchronization on memory type {self.memory_type!r} and "
                f"stream {stream!r} not supported"
            )
        if dl_device is not None and tuple(int(v) for v in dl_device) != (
            int(DLDeviceType.kDLCPU),
            0,
        ):
            raise BufferError(f"cannot export a host tensor to DLPack device {dl_device}")
        array = self._numeric_array()
        if copy:
            array = array.copy()
        return export_array(array, None, max_version)

    def __dlpack_device__(self) -> tuple[DLDeviceType, int]:
        """Get the DLPack device information for the tensor.

        Returns
        -------
        tuple[DLDeviceType, int]
            A tuple representing the DLPack device information (device type, device ID).
        """
        if self.memory_type is MemoryType.GPU:
            return DLDeviceType.kDLCUDA, self.memory_type_id
        if self.memory_type is MemoryType.CPU_PINNED:
            return DLDeviceType.kDLCUDAHost, 0
        return DLDeviceType.kDLCPU, 0

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]:
        """The tensor as a numpy array (BYTES tensors as an object array of ``bytes``)."""
        array = self._host_array()
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        return array.copy() if copy else array

    # -- BYTES -------------------------------------------------------------------------------
    def to_bytes_array(self) -> npt.NDArray[np.object_]:
        """Deserialize Triton BYTES Tensor into numpy array.

        If memory is not on the host the tensor data will be copied to the host before
        deserialization. For more details on the format of Triton BYTES Tensors please see
        Triton Inference Server documentation.

        Returns
        -------
        numpy.ndarray
            A numpy array of objects representing the BYTES tensor.

        Raises
        ------
        InvalidArgumentError
            If the tensor is not of type BYTES or its buffer is malformed.

        Examples
        --------
        numpy_ndarray = response.outputs["text_output"].to_bytes_array()
        """
        if self.data_type is not DataType.BYTES:
            raise InvalidArgumentError(
                f"Tensor has data type {self.data_type!r} not {DataType.BYTES!r}"
            )
        return self._bytes_elements()

    def to_string_array(self) -> npt.NDArray[np.str_]:
        """Deserialize Triton BYTES Tensor into numpy array of strings.

        If memory is not on the host the tensor data will be copied to the host before
        deserialization. For more details on the format of Triton BYTES Tensors please see
        Triton Inference Server documentation.  Elements are decoded as UTF-8.

        Returns
        -------
        numpy.ndarray
            A numpy array of strings (dtype ``str_``) representing the BYTES tensor.

        Raises
        ------
        InvalidArgumentError
            If the tensor is not of type BYTES or an element is not valid UTF-8.

        Examples
        --------
        numpy_ndarray = response.outputs["text_output"].to_string_array()
        """
        elements = self.to_bytes_array()
        try:
            decoded = [item.decode("utf-8") for item in elements.reshape(-1).tolist()]
        except UnicodeDecodeError as exc:
            raise InvalidArgumentError(f"BYTES element is not valid UTF-8: {exc}") from None
        if not decoded:
            return np.empty(elements.shape, dtype=np.str_)
        return np.array(decoded, dtype=np.str_).reshape(elements.shape)

    @staticmethod
    def from_bytes_array(
        bytes_array: list[str] | list[bytes] | list[Any] | npt.NDArray[Any],
    ) -> Tensor:
        """Create Triton BYTES Tensor from numpy array or list.

        Creates a Triton tensor of type BYTES from a list of strings, bytes or a numpy array of
        type ``object_``, ``bytes_``, or ``str_``. The method allocates new host memory to store
        the serialized tensor. For more details on the format of Triton BYTES Tensors please
        see Triton Inference Server documentation.

        Parameters
        ----------
        bytes_array : list[str | bytes] | numpy.ndarray
            an array like object to convert (nested lists give more dimensions)

        Returns
        -------
        Tensor

        Raises
        ------
        InvalidArgumentError
            If the given object can not be converted.

        Examples
        --------
        tensor = Tensor.from_bytes_array(numpy.array(["hello"]))

        tensor = Tensor.from_bytes_array(["hello"])
        """
        array = _as_bytes_array(bytes_array)
        try:
            packed = serialize_byte_tensor(array)
        except InferenceServerException as exc:
            raise InvalidArgumentError(str(exc.message())) from None
        if array.size == 0:
            data = np.empty(0, dtype=np.uint8)
        else:
            data = np.frombuffer(packed.item(), dtype=np.uint8)
        return Tensor(
            DataType.BYTES, [int(d) for d in array.shape], MemoryBuffer._from_host_array(data)
        )

    @staticmethod
    def from_string_array(string_array: list[str] | list[Any] | npt.NDArray[Any]) -> Tensor:
        """Create Triton BYTES Tensor from numpy array of strings or list of strings.

        Creates a Triton tensor of type BYTES from a list of strings, or numpy array of type
        ``str_``. The method allocates new host memory to store the serialized tensor. For more
        details on the format of Triton BYTES Tensors please see Triton Inference Server
        documentation.  Strings are encoded as UTF-8.

        Parameters
        ----------
        string_array : list[str] | numpy.ndarray
            an array like object to convert (nested lists give more dimensions)

        Returns
        -------
        Tensor

        Raises
        ------
        InvalidArgumentError
            If the given object can not be converted.

        Examples
        --------
        tensor = Tensor.from_string_array(numpy.array(["hello"]))

        tensor = Tensor.from_string_array(["hello"])
        """
        return Tensor.from_bytes_array(string_array)

    # -- other constructors / moves ----------------------------------------------------------
    @staticmethod
    def from_dlpack(obj: Any) -> Tensor:
        """Create a tensor from a DLPack-compatible object.

        Parameters
        ----------
        obj : Any
            The DLPack-compatible object (numpy arrays, CPU torch tensors, ...).  The tensor
            shares its memory; device tensors are copied to the host by their producer.

        Returns
        -------
        Tensor
            A new tensor created from the DLPack-compatible object.

        Raises
        ------
        InvalidArgumentError
            If the object cannot be imported or its dtype has no Triton data type.

        Examples
        --------
        tensor = Tensor.from_dlpack(numpy.array([0,1,2], dtype=numpy.float16))

        tensor = Tensor.from_dlpack(torch.zeros(100, dtype=torch.float16))
        """
        array = _import_host_array(obj)
        return Tensor._from_host_array(array)

    def to_host(self) -> Tensor:
        """Move the tensor to CPU memory from device memory.

        Returns
        -------
        Tensor
            The tensor moved to the CPU (this tensor: it is always in host memory here).

        Examples
        --------
        numpy_nd_array = numpy.array(tensor.to_host())
        """
        return self.to_device("cpu")

    def to_device(self, device: DeviceOrMemoryType) -> Tensor:
        """Move the tensor to the specified device.

        Parameters
        ----------
        device : DeviceOrMemoryType
            The target device. Device can be specified as a string, MemoryType, tuple
            [MemoryType, memory_type__id], or tuple[DLDeviceType, device_id].

        Returns
        -------
        Tensor
            The tensor moved to the specified device.  Host targets (``"cpu"``,
            ``MemoryType.CPU``, ``MemoryType.CPU_PINNED``) return this tensor.

        Raises
        ------
        UnsupportedError
            For GPU targets: this server keeps tensors in host memory.
        InvalidArgumentError
            If ``device`` is malformed.

        Examples
        --------
        tensor_cpu = tensor.to_device("cpu")

        ndarray_cpu = numpy.from_dlpack(tensor_cpu)
        """
        memory_type, _ = parse_device_or_memory_type(device)
        if memory_type in _HOST and self.memory_type in _HOST:
            return self
        raise _gpu_unsupported(f"Tensor.to_device({device!r})")

    # -- internals ---------------------------------------------------------------------------
    @staticmethod
    def _from_host_array(array: npt.NDArray[Any]) -> Tensor:
        """A tensor sharing a C-contiguous host array of a fixed-size dtype."""
        return Tensor(
            _datatype_of(array.dtype),
            [int(d) for d in array.shape],
            MemoryBuffer._from_host_array(array),
        )

    @staticmethod
    def _from_object(value: Any) -> Tensor:
        """Convert an input value: a Tensor, list, numpy array or DLPack producer."""
        if isinstance(value, Tensor):
            return value
        if isinstance(value, (list, tuple, bool, int, float, str, bytes, np.generic)):
            try:
                value = np.array(value)
            except ValueError as exc:  # ragged nesting
                raise InvalidArgumentError(
                    f"cannot convert {type(value).__name__} to a tensor: {exc}"
                ) from None
        if isinstance(value, np.ndarray):
            if value.dtype.kind in "OSU":
                return Tensor.from_bytes_array(value)
            return Tensor._from_host_array(np.ascontiguousarray(value))
        if hasattr(value, "__dlpack__"):
            return Tensor.from_dlpack(value)
        raise InvalidArgumentError(
            f"Input type {type(value).__name__} not supported. Must be a Tensor, a list, a "
            "numpy.ndarray or an object implementing __dlpack__"
        )

    def _element_count(self) -> int:
        return math.prod(int(d) for d in self.shape)

    def _numeric_array(self) -> npt.NDArray[Any]:
        """The elements of a fixed-size tensor as a host array sharing its memory."""
        if self.data_type is DataType.BYTES:
            raise UnsupportedError(
                "BYTES tensors cannot be exported through DLPack; use to_bytes_array() or "
                "to_string_array()"
            )
        dtype = _numpy_dtype(self.data_type)
        expected = self._element_count() * dtype.itemsize
        if expected != self.size:
            raise InvalidArgumentError(
                f"tensor of shape {list(self.shape)} and data type {self.data_type.name} needs "
                f"{expected} bytes, its buffer has {self.size}"
            )
        raw = _host_bytes(self.memory_buffer)
        return raw.view(dtype).reshape([int(d) for d in self.shape])

    def _bytes_elements(self) -> npt.NDArray[np.object_]:
        """The elements of a BYTES tensor as an object array of ``bytes``."""
        raw = _host_bytes(self.memory_buffer)
        try:
            elements = deserialize_bytes_tensor(raw)
        except InferenceServerException as exc:
            raise InvalidArgumentError(f"malformed BYTES tensor: {exc.message()}") from None
        count = self._element_count()
        if elements.size != count:
            raise InvalidArgumentError(
                f"BYTES tensor of shape {list(self.shape)} holds {elements.size} elements, "
                f"expected {count}"
            )
        return elements.reshape([int(d) for d in self.shape])

    def _host_array(self) -> npt.NDArray[Any]:
        if self.data_type is DataType.BYTES:
            return self._bytes_elements()
        return self._numeric_array()

    def _to_core(self, name: str) -> CoreTensor:
        """The core tensor named ``name`` holding this tensor's values."""
        if not isinstance(self.data_type, DataType) or self.data_type is DataType.INVALID:
            raise InvalidArgumentError(f"input '{name}' has invalid data type {self.data_type!r}")
        try:
            shape = tuple(int(d) for d in self.shape)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"input '{name}' has invalid shape {self.shape!r}") from None
        if any(d < 0 for d in shape):
            raise InvalidArgumentError(f"input '{name}' has negative dimensions {list(shape)}")
        return CoreTensor(name, self.data_type.name, shape, self._host_array())

    @staticmethod
    def _from_core(tensor: CoreTensor) -> Tensor:
        """A tensor holding a core tensor's values (BYTES serialized into a new buffer)."""
        if tensor.datatype not in DataType.__members__:
            raise InvalidArgumentError(f"output '{tensor.name}' has unknown datatype")
        data_type = DataType[tensor.datatype]
        shape = [int(d) for d in tensor.shape]
        if data_type is DataType.BYTES:
            result = Tensor.from_bytes_array(np.asarray(tensor.data, dtype=np.object_))
            result.shape = shape
            return result
        array = np.ascontiguousarray(tensor.data, dtype=_numpy_dtype(data_type))
        return Tensor(data_type, shape, MemoryBuffer._from_host_array(array))

    def _copy_into(self, buffer: MemoryBuffer) -> Tensor:
        """This tensor's bytes copied into ``buffer`` (from a :class:`MemoryAllocator`)."""
        if not isinstance(buffer, MemoryBuffer):
            raise InvalidArgumentError(
                f"MemoryAllocator.allocate() returned {type(buffer).__name__}, not MemoryBuffer"
            )
        if buffer.memory_type not in _HOST:
            raise _gpu_unsupported("copying an output into an allocator's buffer")
        if buffer.size < self.size:
            raise InvalidArgumentError(
                f"MemoryAllocator.allocate() returned {buffer.size} bytes, {self.size} requested"
            )
        if self.size:
            source = _host_bytes(self.memory_buffer)
            ctypes.memmove(buffer.data_ptr, int(source.__array_interface__["data"][0]), self.size)
        placed = MemoryBuffer(
            buffer.data_ptr,
            MemoryType(buffer.memory_type),
            buffer.memory_type_id,
            self.size,
            buffer.owner,
        )
        return Tensor(self.data_type, list(self.shape), placed)
