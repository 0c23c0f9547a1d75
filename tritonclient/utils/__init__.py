"""Utilities shared by every client: datatype tables, tensor codecs and the exception type.

Drop-in compatible with ``tritonclient.utils`` of NVIDIA's package: the same names,
signatures and results.
"""

from __future__ import annotations

from . import _errors

# Clients over several replicas (not in NVIDIA's package).
from ._balancing import BalancingPolicy, ReplicaStats
from ._dtypes import (
    config_to_triton_dtype,
    np_to_triton_dtype,
    triton_dtype_byte_size,
    triton_to_config_dtype,
    triton_to_np_dtype,
)
from ._errors import *  # noqa: F403 - the names of _errors.__all__, re-exported
from ._serialize import (
    HAVE_SPEEDUPS,
    TRITON_RESERVED_REQUEST_PARAMS,
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
    deserialize_bf16_tensor,
    deserialize_bytes_tensor,
    serialize_bf16_tensor,
    serialize_byte_tensor,
    serialized_byte_size,
)

__all__ = [
    "HAVE_SPEEDUPS",
    "TRITON_RESERVED_REQUEST_PARAMS",
    "TRITON_RESERVED_REQUEST_PARAMS_PREFIX",
    "BalancingPolicy",
    "ReplicaStats",
    "config_to_triton_dtype",
    "deserialize_bf16_tensor",
    "deserialize_bytes_tensor",
    "np_to_triton_dtype",
    "serialize_bf16_tensor",
    "serialize_byte_tensor",
    "serialized_byte_size",
    "triton_dtype_byte_size",
    "triton_to_config_dtype",
    "triton_to_np_dtype",
]
__all__ += _errors.__all__
