"""BYTES tensor codec: round trips, layouts, errors, and agreement with an independent oracle."""

from __future__ import annotations

import json
import os
import struct
from fractions import Fraction
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
from tritonclient.utils import (
    _serialize as _codec,
)
from tritonclient.utils._serialize import json_number_text

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


@pytest.mark.parametrize("other", [3, None, 1.5, [b"x"]])
def test_other_elements_are_written_as_their_str(other: Any) -> None:
    """As NVIDIA's serialize_byte_tensor: an object element that is neither bytes nor str is
    written as ``str(element)`` in UTF-8."""
    arr = object_array([b"ok", "fine", other])
    decoded = deserialize_bytes_tensor(serialize_byte_tensor(arr).item()).tolist()
    assert decoded == [b"ok", b"fine", str(other).encode("utf-8")]


def test_element_whose_str_fails_is_reported() -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise ValueError("no text for this one")

    with pytest.raises(InferenceServerException, match="no text for this one"):
        serialize_byte_tensor(object_array([b"ok", Unprintable()]))


def test_packer_grows_past_its_first_guess() -> None:
    """The packer sizes its buffer from the first elements; larger ones later make it grow
    (and a guess too large is cut back), with the same bytes as a plain join."""
    values = [b"s"] * 100 + [bytes([i]) * 70_000 for i in range(20)] + ["t\u00e9"] * 3
    packed = serialize_byte_tensor(object_array(values)).item()
    expected = b"".join(
        len(v).to_bytes(4, "little") + v
        for v in (x if isinstance(x, bytes) else x.encode() for x in values)
    )
    assert packed == expected
    assert deserialize_bytes_tensor(packed).tolist() == [
        x if isinstance(x, bytes) else x.encode() for x in values
    ]
    big_first = [b"x" * 100_000] * 64 + [b""] * 1000
    assert (
        deserialize_bytes_tensor(serialize_byte_tensor(object_array(big_first))).tolist()
        == big_first
    )


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


# ---------------------------------------------------------------------------------------------
# JSON number text (json_number_text): C accelerator and numpy fallback
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def number_impl(codec_impl: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Route json_number_text through the implementation codec_impl selected."""
    if codec_impl == "c":
        monkeypatch.setattr(_codec, "_format_json_numbers", _codec._speedups.format_json_numbers)
    else:
        monkeypatch.setattr(_codec, "_format_json_numbers", _codec._py_format_json_numbers)
    return codec_impl


def float_edges(dtype: Any) -> np.ndarray:
    info = np.finfo(dtype)
    tiny_sub = np.array(1, dtype=np.uint32 if info.bits == 32 else np.uint64)
    values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        1 / 3,
        info.max,
        -info.max,
        info.tiny,  # smallest normal
        info.tiny * (1 - info.eps),  # largest subnormal
        info.eps,
        1e-5,
        1e-4,
        1e15,
        1e16,
        123456789,
        2.0**24 + 2,
        np.nan,
        np.inf,
        -np.inf,
    ]
    wide = np.array(values, dtype=np.float64)
    out = wide[~(np.abs(wide) > float(info.max)) | np.isinf(wide)].astype(dtype)
    smallest = tiny_sub.view(dtype) if info.bits in (32, 64) else np.array(info.smallest_subnormal)
    return np.concatenate([out, np.array([smallest, -smallest], dtype=dtype)])


def parse_text(text: bytes) -> list[Any]:
    parsed: list[Any] = json.loads(b"[" + text + b"]")
    return parsed


def same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical, except that any NaN equals any NaN."""
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and a[~nan].tobytes() == b[~nan].tobytes())


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("as_double", [False, True])
def test_json_floats_round_trip_exactly(number_impl: str, dtype: Any, as_double: bool) -> None:
    arr = float_edges(dtype)
    if dtype == np.float64 and not as_double:
        arr = np.concatenate(
            [arr, np.array([5e-324, 2.2250738585072014e-308, 1.7976931348623157e308])]
        )
    text = json_number_text(arr, float32_as_double=as_double)
    values = parse_text(text)
    # Through a double (Python, Triton's RapidJSON) and straight from the text.
    assert same_floats(np.array(values, dtype=np.float64).astype(dtype), arr)
    assert same_floats(np.array(text.decode().split(","), dtype=dtype), arr)
    assert text.count(b"NaN") == 1 and b",Infinity," in text and b",-Infinity" in text


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_json_floats_widened_to_double_match_json_dumps(number_impl: str, dtype: Any) -> None:
    arr = float_edges(dtype)
    expected = json.dumps(arr.astype(np.float64).tolist(), separators=(",", ":"))[1:-1]
    assert json_number_text(arr, float32_as_double=True) == expected.encode()


def test_json_float64_matches_json_dumps(number_impl: str) -> None:
    arr = np.concatenate([float_edges(np.float64), np.random.default_rng(3).standard_normal(500)])
    expected = json.dumps(arr.tolist(), separators=(",", ":"))[1:-1]
    assert json_number_text(arr) == expected.encode()
    assert json_number_text(arr, float32_as_double=True) == expected.encode()


def test_json_float32_short_text(number_impl: str) -> None:
    arr = np.array(
        [0.1, 1.5, -2.0, 3.14, 1e-45, 3.4028235e38, 1e-5, 1e16, 1e15, 100.0, 0.0001, 2.5e-7],
        dtype=np.float32,
    )
    assert json_number_text(arr) == (
        b"0.1,1.5,-2.0,3.14,1e-45,3.4028235e+38,1e-05,1e+16,1000000000000000.0,100.0,0.0001,2.5e-07"
    )
    assert json_number_text(np.array([0.0, -0.0, np.nan, -np.inf], np.float32)) == (
        b"0.0,-0.0,NaN,-Infinity"
    )


def test_json_float32_random_bit_patterns(number_impl: str) -> None:
    bits = np.random.default_rng(11).integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    arr = bits.view(np.float32)
    text = json_number_text(arr)
    tokens = text.split(b",")
    assert len(tokens) == arr.size
    assert same_floats(np.array(parse_text(text), dtype=np.float64).astype(np.float32), arr)
    # At most 9 significant digits; more than numpy's shortest only where that lies exactly
    # on the rounding boundary (a tie, which the text avoids on purpose).
    finite = np.flatnonzero(np.isfinite(arr) & (arr != 0))[:1500]
    for i in finite.tolist():
        mantissa = tokens[i].lstrip(b"-").split(b"e")[0].replace(b".", b"")
        ours = len(mantissa.strip(b"0"))
        shortest = np.format_float_scientific(arr[i], unique=True)
        digits = len(shortest.lstrip("-").split("e")[0].replace(".", "").rstrip("0"))
        assert ours <= 9, tokens[i]
        if ours > digits:
            value = Fraction(float(arr[i]))
            target = Fraction(shortest)
            toward = np.inf if target > value else -np.inf
            half_gap = abs(Fraction(float(np.nextafter(arr[i], np.float32(toward)))) - value) / 2
            assert abs(target - value) == half_gap, (tokens[i], shortest)


@pytest.mark.skipif(not HAVE_SPEEDUPS, reason="the C accelerator is not built")
@pytest.mark.parametrize("kind", ["f", "d"])
def test_json_c_and_fallback_give_identical_text(kind: str) -> None:
    rng = np.random.default_rng(5)
    arr = np.concatenate(
        [
            float_edges(np.float32),
            rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32).view(np.float32),
            rng.standard_normal(5000).astype(np.float32),
            (rng.integers(-1000, 1000, 2000) / 8).astype(np.float32),
        ]
    )
    fast = _codec._speedups.format_json_numbers(arr, kind)
    assert fast == _codec._py_format_json_numbers(arr, kind)
    wide = np.concatenate([float_edges(np.float64), rng.standard_normal(2000) * 1e300])
    assert _codec._speedups.format_json_numbers(wide, "d") == _codec._py_format_json_numbers(
        wide, "d"
    )


@pytest.mark.parametrize(
    "dtype",
    [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_],
)
def test_json_integers_and_bools_are_exact(number_impl: str, dtype: Any) -> None:
    if dtype == np.bool_:
        arr = np.array([True, False, False, True])
    else:
        info = np.iinfo(dtype)
        arr = np.array([info.min, info.max, 0, 1, info.max // 3, info.min // 7], dtype=dtype)
    text = json_number_text(arr)
    assert text == json.dumps(arr.tolist(), separators=(",", ":"))[1:-1].encode()
    assert np.array_equal(np.array(parse_text(text), dtype=dtype), arr)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint64, np.bool_])
def test_json_layouts_and_shapes(number_impl: str, dtype: Any) -> None:
    base = (np.arange(24).reshape(2, 3, 4) * 1.25 - 7).astype(dtype)
    expected = json_number_text(base.reshape(-1).copy())
    assert expected.count(b",") == 23
    assert json_number_text(base) == expected
    assert json_number_text(np.asfortranarray(base)) == expected
    assert (
        json_number_text(base.astype(base.dtype.newbyteorder(">" if np.little_endian else "<")))
        == expected
    )
    strided = base[:, ::2, ::-1]
    assert json_number_text(strided) == json_number_text(strided.copy())
    assert json_number_text(base[..., :0]) == b""
    assert json_number_text(np.array(base.reshape(-1)[5])) == json_number_text(
        base.reshape(-1)[5:6]
    )


@pytest.mark.parametrize("dtype", [np.object_, np.complex64, np.dtype("U3"), "bfloat16"])
def test_json_other_dtypes_are_refused(number_impl: str, dtype: Any) -> None:
    if dtype == "bfloat16":
        import ml_dtypes

        dtype = ml_dtypes.bfloat16
    with pytest.raises(TypeError, match="cannot write"):
        json_number_text(np.zeros(2, dtype=dtype))


@settings(max_examples=100, deadline=None)
@given(
    arr=hnp.arrays(
        dtype=st.sampled_from([np.float16, np.float32, np.float64]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    )
)
def test_property_json_floats_round_trip(arr: np.ndarray) -> None:
    text = json_number_text(arr)
    flat = arr.reshape(-1)
    back = np.array(parse_text(text), dtype=np.float64).astype(arr.dtype)
    assert same_floats(back, flat)
    if HAVE_SPEEDUPS:
        kind = "d" if arr.dtype == np.float64 else "f"
        flat32 = flat.astype(np.float64 if kind == "d" else np.float32)
        assert _codec._speedups.format_json_numbers(flat32, kind) == (
            _codec._py_format_json_numbers(flat32, kind)
        )
