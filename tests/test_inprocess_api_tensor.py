"""In-process API without a server: Tensor, MemoryBuffer, DLPack, enums, errors, exports."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import mock_server as tritonserver
from mock_server import api
from mock_server.core.errors import ErrorKind, ServerError
from tritonclient.utils._dtypes import DATATYPES

Tensor = tritonserver.Tensor
DataType = tritonserver.DataType
MemoryType = tritonserver.MemoryType


def test_every_public_name_is_exported_lazily() -> None:
    for name in api.__all__:
        assert getattr(tritonserver, name) is getattr(api, name), name
    assert set(api.__all__) <= set(tritonserver.__all__)
    assert set(api.__all__) <= set(dir(tritonserver))
    assert tritonserver.__version__ == "0.1.0"
    with pytest.raises(AttributeError):
        _ = tritonserver.NoSuchThing
    # Importing the package alone does not import the API (numpy, protobuf, the core).
    code = "import sys, mock_server; assert 'mock_server.api' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_datatype_members_follow_the_shared_table() -> None:
    assert {m.name for m in DataType} == set(DATATYPES) | {"INVALID"}
    # Triton's TRITONSERVER_DataType numbering.
    assert (DataType.INVALID, DataType.BOOL, DataType.BYTES, DataType.BF16) == (0, 1, 13, 14)
    assert str(DataType.FP32) == "DataType.FP32"
    assert (MemoryType.CPU, MemoryType.CPU_PINNED, MemoryType.GPU) == (0, 1, 2)
    mode = tritonserver.ModelControlMode
    assert (mode.NONE, mode.POLL, mode.EXPLICIT) == (0, 1, 2)
    assert int(tritonserver.RequestFlag.SEQUENCE_START) == 1
    assert int(tritonserver.RequestFlag.SEQUENCE_END) == 2
    assert int(tritonserver.ModelTxnPropertyFlag.DECOUPLED) == 2
    assert int(tritonserver.ModelBatchFlag.FIRST_DIM) == 2


def test_errors_translate_every_core_kind() -> None:
    expected = {
        ErrorKind.UNKNOWN: tritonserver.UnknownError,
        ErrorKind.INTERNAL: tritonserver.InternalError,
        ErrorKind.NOT_FOUND: tritonserver.NotFoundError,
        ErrorKind.INVALID_ARG: tritonserver.InvalidArgumentError,
        ErrorKind.UNAVAILABLE: tritonserver.UnavailableError,
        ErrorKind.UNSUPPORTED: tritonserver.UnsupportedError,
        ErrorKind.ALREADY_EXISTS: tritonserver.AlreadyExistsError,
        ErrorKind.CANCELLED: tritonserver.CancelledError,
    }
    assert set(expected) == set(ErrorKind)
    for kind, cls in expected.items():
        error = api._errors.to_triton_error(ServerError(kind, f"boom {kind.name}"))
        assert type(error) is cls and isinstance(error, tritonserver.TritonError)
        assert str(error) == f"boom {kind.name}"
    with pytest.raises(tritonserver.NotFoundError, match="gone"), api._errors.translate_errors():
        raise ServerError.not_found("gone")


def test_numeric_tensor_shares_memory_and_round_trips_through_dlpack() -> None:
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    tensor = Tensor.from_dlpack(array)
    assert tensor.data_type is DataType.FP32
    assert list(tensor.shape) == [3, 4]
    assert tensor.size == 48
    assert tensor.data_ptr == array.ctypes.data
    assert (tensor.memory_type, tensor.memory_type_id) == (MemoryType.CPU, 0)
    assert tensor.__dlpack_device__() == (tritonserver.DLDeviceType.kDLCPU, 0)
    back = np.from_dlpack(tensor)
    assert back.dtype == np.float32 and back.shape == (3, 4)
    assert np.array_equal(back, array)
    array[0, 0] = 42.0  # shared, not copied
    assert np.from_dlpack(tensor)[0, 0] == 42.0
    from mock_server.python_backend._dlpack import import_array

    copied = import_array(tensor.__dlpack__(copy=True))
    array[0, 0] = -1.0
    assert copied[0, 0] == 42.0 and np.from_dlpack(tensor)[0, 0] == -1.0
    with pytest.raises(BufferError):
        tensor.__dlpack__(dl_device=(2, 0))
    with pytest.raises(tritonserver.UnsupportedError, match="stream"):
        tensor.__dlpack__(stream=5)
    assert np.asarray(tensor).tolist() == array.tolist()


@pytest.mark.parametrize("name", [n for n in DATATYPES if n != "BYTES"])
def test_every_fixed_size_datatype_converts(name: str) -> None:
    dtype = np.dtype(DATATYPES[name].numpy_type)
    array = np.ones((2, 3), dtype=dtype)
    tensor = Tensor.from_dlpack(array)
    assert tensor.data_type is tritonserver.DataType[name]
    assert tensor.size == array.nbytes
    assert np.asarray(tensor).dtype == dtype
    assert np.array_equal(np.asarray(tensor).astype(np.float64), np.ones((2, 3)))


def test_bf16_exports_with_the_dlpack_bfloat_code() -> None:
    from mock_server.python_backend._dlpack import import_array

    array = np.array([[1.5, -2.0]], dtype=ml_dtypes.bfloat16)
    tensor = Tensor.from_dlpack(array)
    assert tensor.data_type is DataType.BF16
    back = import_array(tensor)  # reads the capsule's dtype code: kDLBfloat, 16 bits
    assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    assert back.astype(np.float32).tolist() == [[1.5, -2.0]]


def test_bytes_tensor_is_serialized_and_deserialized() -> None:
    tensor = Tensor.from_string_array([["hello", "é"]])
    assert tensor.data_type is DataType.BYTES
    assert list(tensor.shape) == [1, 2]
    assert tensor.size == 4 + 5 + 4 + 2  # length prefixes + UTF-8 bytes
    raw = bytes(np.asarray(tensor.memory_buffer.owner, dtype=np.uint8))
    assert raw == b"\x05\x00\x00\x00hello\x02\x00\x00\x00\xc3\xa9"
    assert tensor.to_bytes_array().tolist() == [[b"hello", "é".encode()]]
    strings = tensor.to_string_array()
    assert strings.dtype.kind == "U" and strings.tolist() == [["hello", "é"]]
    exact = Tensor.from_bytes_array(np.array([b"a\x00", b""], dtype=np.object_))
    assert exact.to_bytes_array().tolist() == [b"a\x00", b""]
    assert Tensor.from_bytes_array(np.array(["x", "yz"])).to_string_array().tolist() == ["x", "yz"]
    empty = Tensor.from_string_array(np.empty((0, 2), dtype=np.str_))
    assert empty.size == 0 and empty.to_string_array().shape == (0, 2)


def test_bytes_conversion_errors() -> None:
    with pytest.raises(tritonserver.InvalidArgumentError):
        Tensor.from_bytes_array(np.array([1, 2]))
    with pytest.raises(tritonserver.InvalidArgumentError):
        Tensor.from_bytes_array("not a list")  # type: ignore[arg-type]
    with pytest.raises(tritonserver.InvalidArgumentError):
        Tensor.from_dlpack(np.array(["a"]))
    with pytest.raises(tritonserver.InvalidArgumentError):
        Tensor.from_dlpack(np.arange(3)).to_bytes_array()
    with pytest.raises(tritonserver.UnsupportedError):
        np.from_dlpack(Tensor.from_string_array(["a"]))
    with pytest.raises(tritonserver.InvalidArgumentError, match="UTF-8"):
        Tensor.from_bytes_array([b"\xff"]).to_string_array()


def test_memory_buffer_and_allocator_interface() -> None:
    array = np.array([100], dtype=np.uint8)
    buffer = tritonserver.MemoryBuffer.from_dlpack(array)
    assert (buffer.data_ptr, buffer.size, buffer.memory_type, buffer.memory_type_id) == (
        array.ctypes.data,
        1,
        MemoryType.CPU,
        0,
    )
    assert buffer.owner is array
    strided = np.arange(10, dtype=np.int16)[::2]
    assert tritonserver.MemoryBuffer.from_dlpack(strided).size == 10
    with pytest.raises(tritonserver.InvalidArgumentError):
        tritonserver.MemoryBuffer.from_dlpack(object())
    with pytest.raises(TypeError):
        tritonserver.MemoryAllocator()  # type: ignore[abstract]


def test_tensor_over_a_foreign_buffer_keeps_its_owner() -> None:
    owner = np.arange(6, dtype=np.int32)
    buffer = tritonserver.MemoryBuffer(
        data_ptr=owner.ctypes.data + 8,
        memory_type=MemoryType.CPU,
        memory_type_id=0,
        size=16,
        owner=bytearray(b"unrelated"),  # not an ndarray at that address: read through the pointer
    )
    tensor = Tensor(DataType.INT32, [2, 2], buffer)
    assert np.from_dlpack(tensor).tolist() == [[2, 3], [4, 5]]
    bad = Tensor(DataType.INT32, [3, 3], buffer)
    with pytest.raises(tritonserver.InvalidArgumentError, match="needs 36 bytes"):
        np.asarray(bad)


def test_to_device_and_device_parsing() -> None:
    tensor = Tensor.from_dlpack(np.zeros(3, dtype=np.float16))
    assert tensor.to_host() is tensor
    host: list[tritonserver.DeviceOrMemoryType] = [
        "cpu",
        "CPU:0",
        MemoryType.CPU,
        (MemoryType.CPU_PINNED, 0),
        (tritonserver.DLDeviceType.kDLCPU, 0),
    ]
    for device in host:
        assert tensor.to_device(device) is tensor
    gpu: list[tritonserver.DeviceOrMemoryType] = [
        "gpu",
        "cuda:1",
        MemoryType.GPU,
        (tritonserver.DLDeviceType.kDLCUDA, 0),
    ]
    for device in gpu:
        with pytest.raises(tritonserver.UnsupportedError, match="GPU memory is not supported"):
            tensor.to_device(device)
    invalid: list[Any] = ["tpu", "gpu:x", (tritonserver.DLDeviceType.kDLMetal, 0), ("cpu", "0")]
    for bad in invalid:
        with pytest.raises(tritonserver.InvalidArgumentError):
            tensor.to_device(bad)
    parse = api._tensor.parse_device_or_memory_type
    assert parse("cuda:3") == (MemoryType.GPU, 3)
    assert parse((tritonserver.DLDeviceType.kDLCUDAHost, 0)) == (MemoryType.CPU_PINNED, 0)


def test_input_values_are_converted_like_tritonserver() -> None:
    convert = Tensor._from_object
    assert convert([[1, 2, 3]]).data_type is DataType.INT64
    assert convert([[1.0]]).data_type is DataType.FP64
    assert convert([True, False]).data_type is DataType.BOOL
    words = convert([["hello world!"]])
    assert words.data_type is DataType.BYTES and list(words.shape) == [1, 1]
    assert convert(np.array([b"x"], dtype=np.object_)).data_type is DataType.BYTES
    fortran = np.asfortranarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    assert np.from_dlpack(convert(fortran)).tolist() == [[0, 1, 2], [3, 4, 5]]
    same = convert(words)
    assert same is words
    with pytest.raises(tritonserver.InvalidArgumentError):
        convert([[1, 2], [3]])
    with pytest.raises(tritonserver.InvalidArgumentError):
        convert(object())
    with pytest.raises(tritonserver.InvalidArgumentError):
        convert(np.array([1 + 2j]))  # complex has no Triton datatype
