"""Byte-for-byte agreement with NVIDIA's package on committed golden vectors.

The vectors were produced by running ``tests/golden/make_golden.py`` with NVIDIA's
``tritonclient`` (see that file for the exact commands and versions).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np
import pytest

from tritonclient.utils import (
    deserialize_bf16_tensor,
    deserialize_bytes_tensor,
    serialize_bf16_tensor,
    serialize_byte_tensor,
)

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, GOLDEN)
from make_golden import build_array  # noqa: E402


def load(name: str) -> list[dict[str, Any]]:
    with open(os.path.join(GOLDEN, name), encoding="utf-8") as f:
        data = json.load(f)
    assert data["producer"].startswith("NVIDIA tritonclient")
    return data["cases"]  # type: ignore[no-any-return]


BYTES_CASES = load("bytes_vectors.json")
BF16_CASES = load("bf16_vectors.json")


@pytest.mark.usefixtures("codec_impl")
@pytest.mark.parametrize("case", BYTES_CASES, ids=[c["name"] for c in BYTES_CASES])
def test_bytes_vectors(case: dict[str, Any]) -> None:
    result = serialize_byte_tensor(build_array(case))
    assert list(result.shape) == case["result_shape"]
    assert result.dtype == np.object_
    if case["serialized"] is None:
        assert result.size == 0
        return
    assert result.item().hex() == case["serialized"]
    back = deserialize_bytes_tensor(bytes.fromhex(case["serialized"]))
    assert [b.hex() for b in back.tolist()] == case["deserialized"]


@pytest.mark.parametrize("case", BF16_CASES, ids=[c["name"] for c in BF16_CASES])
def test_bf16_vectors(case: dict[str, Any]) -> None:
    result = serialize_bf16_tensor(build_array(case))
    if case["serialized"] is None:
        assert result.size == 0
        return
    assert result.item().hex() == case["serialized"]
    back = deserialize_bf16_tensor(bytes.fromhex(case["serialized"]))
    assert [f"{v:08x}" for v in back.view(np.uint32).tolist()] == case["deserialized"]
