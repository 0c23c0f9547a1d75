"""BYTES tensor codec: round trips, layouts, errors, and agreement with an independent oracle."""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tritonclient.utils import (
    HAVE_SPEEDUPS,
    InferenceServerException,
    deserialize_bytes_tensor,
    serialize_byte_tensor,
    serialized_byte_size,
)

pytestmark = pytest.mark.usefixtures("codec_impl")


def oracle(arr: np.ndarray) -> bytes:
    """Straightforward reference encoder, element by element (the spec, written plainly)."""
    out = bytearray()
    for item in arr.flatten(order="C").tolist():
        data = item.encode("utf-8") if isinstance(item, str) else bytes(item)
        out += struct.pack("<I", len(data)) + data
    return bytes(out)


def object_array(values: list[Any], shape: tuple[int, ...] | None = None) -> np.ndarray:
    arr = np.empty(len(values), dtype=np.object_)
    arr[:] = values
    return arr.reshape(shape if shape is not None else (len(values),))


def test_accelerator_is_built_where_required() -> None:
    # CI sets this so a silently failed C build cannot pass unnoticed.
    if os.environ.get("TRITONCLIENT_REQUIRE_SPEEDUPS"):
        assert HAVE_SPEEDUPS


def test_result_is_0d_object_array_holding_bytes() -> None:
    result = serialize_byte_tensor(object_array([b"ab", b""]))
    assert result.dtype == np.object_
    assert result.shape == ()
    assert result.item() == b"\x02\x00\x00\x00ab\x00\x00\x00\x00"


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 2, 2)])
def test_empty_tensor_gives_empty_object_array(shape: tuple[int, ...]) -> None:
    result = serialize_byte_tensor(np.empty(shape, dtype=np.object_))
    assert result.dtype == np.object_ and result.shape == (0,)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3), (2, 1, 3), (1, 2, 2, 2)])
def test_round_trip_every_rank(shape: tuple[int, ...]) -> None:
    n = int(np.prod(shape))
    values = [bytes([i]) * i for i in range(n)]
    arr = object_array(values, shape)
    encoded = serialize_byte_tensor(arr).item()
    assert encoded == oracle(arr)
    decoded = deserialize_bytes_tensor(encoded)
    assert decoded.shape == (n,)
    assert decoded.tolist() == values


def test_memory_orders_serialize_in_row_major_order() -> None:
    values = [f"e{i}".encode() for i in range(12)]
    c_order = object_array(values, (3, 4))
    expected = oracle(c_order)
    assert serialize_byte_tensor(np.asfortranarray(c_order)).item() == expected
    assert serialize_byte_tensor(c_order.T.copy().T).item() == expected
    assert serialize_byte_tensor(c_order[:, ::2]).item() == oracle(c_order[:, ::2].copy())
    assert serialize_byte_tensor(c_order[::-1]).item() == oracle(c_order[::-1].copy())


def test_str_elements_are_utf8() -> None:
    arr = object_array(["héllo", "日本", "", "🚀"])
    assert serialize_byte_tensor(arr).item() == oracle(arr)
    decoded = deserialize_bytes_tensor(serialize_byte_tensor(arr).item())
    assert [b.decode("utf-8") for b in decoded] == ["héllo", "日本", "", "🚀"]


def test_str_and_bytes_dtypes_are_accepted() -> None:
    unicode_arr = np.array([["a", "héllo"], ["", "xyz"]], dtype=np.str_)
    assert serialize_byte_tensor(unicode_arr).item() == oracle(unicode_arr.astype(object))
    bytes_arr = np.array([b"abc\x00", b"\x00x"], dtype=np.bytes_)
    # numpy drops trailing NULs of bytes_ items (as ndarray.item() does); leading ones stay.
    assert deserialize_bytes_tensor(serialize_byte_tensor(bytes_arr).item()).tolist() == [
        b"abc",
        b"\x00x",
    ]


def test_object_array_keeps_nul_bytes_and_bytes_subclasses() -> None:
    arr = object_array([b"a\x00", np.bytes_(b"np"), b"\x00"])
    assert deserialize_bytes_tensor(serialize_byte_tensor(arr).item()).tolist() == [
        b"a\x00",
        b"np",
        b"\x00",
    ]


@pytest.mark.parametrize(
    ("bad", "type_name"), [(3, "int"), (None, "NoneType"), (1.5, "float"), ([b"x"], "list")]
)
def test_element_of_wrong_type_is_named(bad: Any, type_name: str) -> None:
    arr = object_array([b"ok", "fine", bad])
    with pytest.raises(InferenceServerException) as info:
        serialize_byte_tensor(arr)
    assert "element 2" in str(info.value)
    assert f"'{type_name}'" in str(info.value)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.uint8])
def test_non_bytes_dtype_is_rejected(dtype: Any) -> None:
    with pytest.raises(InferenceServerException, match="invalid datatype"):
        serialize_byte_tensor(np.zeros(3, dtype=dtype))


def test_non_array_input_is_rejected() -> None:
    with pytest.raises(InferenceServerException, match=r"expected a numpy\.ndarray, got list"):
        serialize_byte_tensor([b"a"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "container", [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, dtype=np.uint8)]
)
def test_deserialize_accepts_any_buffer(container: Any) -> None:
    encoded = oracle(object_array([b"x", b"", b"yz"]))
    assert deserialize_bytes_tensor(container(encoded)).tolist() == [b"x", b"", b"yz"]


def test_deserialize_accepts_serialize_output_directly() -> None:
    arr = object_array([b"q", b"rs"])
    assert deserialize_bytes_tensor(serialize_byte_tensor(arr)).tolist() == [b"q", b"rs"]
    assert deserialize_bytes_tensor(b"").shape == (0,)


@pytest.mark.parametrize(
    ("buffer", "fragment"),
    [
        (b"\x05\x00", "element 0 at byte offset 0 needs a 4-byte length prefix but only 2"),
        (b"\x05\x00\x00\x00abc", "element 0 at byte offset 0 declares 5 byte(s) but only 3"),
        (
            b"\x01\x00\x00\x00a\x02\x00\x00\x00bcX",
            "element 2 at byte offset 11 needs a 4-byte length prefix but only 1",
        ),
        (
            b"\x00\x00\x00\x00\xff\xff\xff\xff",
            "element 1 at byte offset 4 declares 4294967295 byte(s) but only 0",
        ),
    ],
)
def test_corrupt_buffer_names_the_offset(buffer: bytes, fragment: str) -> None:
    with pytest.raises(InferenceServerException) as info:
        deserialize_bytes_tensor(buffer)
    assert fragment in str(info.value)
    assert "truncated BYTES tensor" in str(info.value)


def test_large_tensor_round_trip() -> None:
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 65, 200_000)
    blob = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8).tobytes()
    ends = np.cumsum(lengths)
    values = [blob[e - n : e] for e, n in zip(ends.tolist(), lengths.tolist(), strict=True)]
    arr = object_array(values)
    encoded = serialize_byte_tensor(arr).item()
    assert len(encoded) == 4 * len(values) + len(blob)
    assert deserialize_bytes_tensor(encoded).tolist() == values


def test_serialized_byte_size_counts_content_bytes() -> None:
    assert serialized_byte_size(object_array([b"abc", "é", b""])) == 5
    assert serialized_byte_size(np.empty(0, dtype=np.object_)) == 0
    with pytest.raises(InferenceServerException, match=r"np\.object_"):
        serialized_byte_size(np.array([b"a"], dtype=np.bytes_))


elements = st.one_of(st.binary(max_size=80), st.text(max_size=40))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(elements, max_size=60), data=st.data())
def test_property_matches_oracle_and_round_trips(values: list[Any], data: st.DataObject) -> None:
    n = len(values)
    # Pick a shape with n elements: n itself, or split into two factors when possible.
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [1]
    d = data.draw(st.sampled_from(divisors))
    shape = (d, n // d) if n else (0,)
    arr = object_array(values, shape)
    if data.draw(st.booleans()):
        arr = np.asfortranarray(arr)
    encoded = serialize_byte_tensor(arr)
    if n == 0:
        assert encoded.shape == (0,)
        return
    assert encoded.item() == oracle(arr)
    expected = [v.encode("utf-8") if isinstance(v, str) else v for v in arr.ravel().tolist()]
    assert deserialize_bytes_tensor(encoded.item()).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(
    arr=hnp.arrays(
        dtype=st.sampled_from([np.dtype("S8"), np.dtype("U6")]),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    )
)
def test_property_fixed_width_dtypes(arr: np.ndarray) -> None:
    try:
        expected = oracle(arr)
    except UnicodeEncodeError:
        with pytest.raises(InferenceServerException, match="cannot be encoded as UTF-8"):
            serialize_byte_tensor(arr)
    else:
        assert serialize_byte_tensor(arr).item() == expected


@pytest.mark.parametrize("container", [np.str_, np.object_])
def test_unencodable_str_is_named(container: Any) -> None:
    arr = np.array(["ok", "b\ud800d"], dtype=container)
    with pytest.raises(InferenceServerException, match=r"element 1 .* cannot be encoded as UTF-8"):
        serialize_byte_tensor(arr)


@settings(max_examples=300, deadline=None)
@given(buffer=st.binary(max_size=64))
def test_property_arbitrary_buffers_decode_or_raise_cleanly(buffer: bytes) -> None:
    try:
        decoded = deserialize_bytes_tensor(buffer)
    except InferenceServerException as exc:
        assert "truncated BYTES tensor" in str(exc)
        assert "byte offset" in str(exc)
    else:
        # Whatever decodes must re-encode to exactly the same bytes.
        assert oracle(decoded) == buffer
