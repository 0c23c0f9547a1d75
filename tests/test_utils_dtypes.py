"""Datatype tables."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from tritonclient.grpc import model_config_pb2
from tritonclient.utils import (
    InferenceServerException,
    config_to_triton_dtype,
    np_to_triton_dtype,
    triton_dtype_byte_size,
    triton_to_config_dtype,
    triton_to_np_dtype,
)

TABLE = [
    ("BOOL", bool, 1),
    ("UINT8", np.uint8, 1),
    ("UINT16", np.uint16, 2),
    ("UINT32", np.uint32, 4),
    ("UINT64", np.uint64, 8),
    ("INT8", np.int8, 1),
    ("INT16", np.int16, 2),
    ("INT32", np.int32, 4),
    ("INT64", np.int64, 8),
    ("FP16", np.float16, 2),
    ("FP32", np.float32, 4),
    ("FP64", np.float64, 8),
    ("BYTES", np.object_, None),
    ("BF16", ml_dtypes.bfloat16, 2),
]


@pytest.mark.parametrize(("name", "np_type", "size"), TABLE)
def test_table(name: str, np_type: Any, size: int | None) -> None:
    assert triton_to_np_dtype(name) is np_type
    assert np_to_triton_dtype(np_type) == name
    assert np_to_triton_dtype(np.dtype(np_type)) == name
    assert triton_dtype_byte_size(name) == size
    if size is not None:
        assert np.dtype(np_type).itemsize == size


@pytest.mark.parametrize(
    "np_dtype", [np.bytes_, np.str_, np.dtype("S7"), np.dtype("<U3"), np.object_]
)
def test_string_like_dtypes_are_bytes(np_dtype: Any) -> None:
    assert np_to_triton_dtype(np_dtype) == "BYTES"


def test_byte_order_does_not_change_the_datatype() -> None:
    assert np_to_triton_dtype(np.dtype(">i4")) == "INT32"
    assert np_to_triton_dtype(np.array([1.0], dtype=">f8").dtype) == "FP64"


@pytest.mark.parametrize("np_dtype", [np.complex64, np.dtype("M8[s]"), "not-a-dtype", np.void])
def test_unknown_numpy_dtypes_map_to_none(np_dtype: Any) -> None:
    assert np_to_triton_dtype(np_dtype) is None


@pytest.mark.parametrize("name", ["STRING", "bytes", "TYPE_FP32", "FLOAT", ""])
def test_unknown_datatype_strings(name: str) -> None:
    assert triton_to_np_dtype(name) is None
    assert triton_to_config_dtype(name) is None
    with pytest.raises(InferenceServerException, match=f"unknown datatype '{name}'"):
        triton_dtype_byte_size(name)


def test_config_enum_names_cover_the_proto_enum() -> None:
    names = [n for n in model_config_pb2.DataType.keys() if n != "TYPE_INVALID"]  # noqa: SIM118
    assert sorted(config_to_triton_dtype(n) for n in names) == sorted(t[0] for t in TABLE)
    for name, _, _ in TABLE:
        assert config_to_triton_dtype(triton_to_config_dtype(name) or "") == name
    assert triton_to_config_dtype("BYTES") == "TYPE_STRING"
    assert config_to_triton_dtype("TYPE_INVALID") is None


@pytest.mark.parametrize(("name", "np_type", "size"), [t for t in TABLE if t[2] is not None])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 1, 2), (1, 2, 0, 2)])
def test_raw_layout_round_trip_every_dtype_and_rank(
    name: str, np_type: Any, size: int, shape: tuple[int, ...]
) -> None:
    # The table's numpy type and byte size reproduce the raw wire layout (little-endian,
    # row-major, densely packed) for every fixed-size datatype and rank.
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, int(np.prod(shape)) * size, dtype=np.uint8).tobytes()
    dtype = np.dtype(triton_to_np_dtype(name)).newbyteorder("<")
    if name == "BOOL":
        raw = bytes(b & 1 for b in raw)
    tensor = np.frombuffer(raw, dtype=dtype).reshape(shape)
    assert np_to_triton_dtype(tensor.dtype) == name
    assert tensor.nbytes == len(raw) == tensor.size * size
    assert np.asfortranarray(tensor).tobytes(order="C") == raw
