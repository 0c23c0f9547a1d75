"""BF16 codec."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tritonclient.utils import (
    InferenceServerException,
    deserialize_bf16_tensor,
    serialize_bf16_tensor,
)


def test_bfloat16_array_round_trips_bit_for_bit() -> None:
    values = np.array([[1.0, -2.5, 3.140625], [np.inf, -0.0, 65280.0]], dtype=ml_dtypes.bfloat16)
    encoded = serialize_bf16_tensor(values)
    assert encoded.shape == () and encoded.dtype == np.object_
    assert encoded.item() == values.view(np.uint16).astype("<u2").tobytes()
    decoded = deserialize_bf16_tensor(encoded.item())
    assert decoded.dtype == np.float32 and decoded.shape == (6,)
    assert np.array_equal(
        decoded.astype(ml_dtypes.bfloat16).view(np.uint16), values.ravel().view(np.uint16)
    )


def test_float32_is_truncated_to_upper_half() -> None:
    # 1.0078125 needs 8 mantissa bits: truncation (not rounding) drops the last one.
    values = np.array([1.0078125, 1.00390625, -1.0], dtype=np.float32)
    encoded = serialize_bf16_tensor(values).item()
    assert encoded == b"\x81\x3f\x80\x3f\x80\xbf"
    assert deserialize_bf16_tensor(encoded).tolist() == [1.0078125, 1.0, -1.0]


def test_fortran_and_strided_inputs_use_row_major_order() -> None:
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = serialize_bf16_tensor(values).item()
    assert serialize_bf16_tensor(np.asfortranarray(values)).item() == expected
    assert (
        serialize_bf16_tensor(values[:, ::2]).item()
        == serialize_bf16_tensor(values[:, ::2].copy()).item()
    )


def test_empty_and_errors() -> None:
    assert serialize_bf16_tensor(np.empty((2, 0), dtype=np.float32)).shape == (0,)
    assert deserialize_bf16_tensor(b"").shape == (0,)
    with pytest.raises(InferenceServerException, match="invalid datatype float64"):
        serialize_bf16_tensor(np.zeros(2, dtype=np.float64))
    with pytest.raises(InferenceServerException, match="3 bytes is not a whole number"):
        deserialize_bf16_tensor(b"\x00\x00\x01")


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(max_dims=3, max_side=5),
        elements=st.floats(width=32, allow_nan=False),
    )
)
def test_property_decode_equals_truncation(values: np.ndarray) -> None:
    decoded = deserialize_bf16_tensor(serialize_bf16_tensor(values))
    truncated = (values.ravel().view(np.uint32) & 0xFFFF0000).view(np.float32)
    assert np.array_equal(decoded.view(np.uint32), truncated.view(np.uint32))
