"""gRPC client for Triton / KServe v2 inference servers (``tritonclient.grpc``).

Drop-in compatible with NVIDIA's ``tritonclient.grpc``: :class:`InferenceServerClient`,
:class:`InferInput`, :class:`InferRequestedOutput`, :class:`InferResult`,
:class:`KeepAliveOptions`, plugins (:class:`InferenceServerClientPlugin`,
:mod:`tritonclient.grpc.auth`), the utilities of :mod:`tritonclient.utils`, and the protocol
modules generated from ``proto/``: :mod:`tritonclient.grpc.service_pb2`,
:mod:`tritonclient.grpc.service_pb2_grpc` and :mod:`tritonclient.grpc.model_config_pb2`.
The asyncio client is :mod:`tritonclient.grpc.aio`.
"""

from __future__ import annotations

try:
    import google.protobuf  # noqa: F401
    import grpc
except ImportError as _error:
    raise ImportError(
        f"tritonclient.grpc needs grpcio and protobuf ({_error}); install them with "
        "`pip install tritonclient-ng[grpc]`"
    ) from _error

from tritonclient._plugin import InferenceServerClientPlugin, Request
from tritonclient._proto import model_config_pb2, service_pb2, service_pb2_grpc
from tritonclient._transport.grpc import INT32_MAX, MAX_GRPC_MESSAGE_SIZE, KeepAliveOptions
from tritonclient.utils import (
    TRITON_RESERVED_REQUEST_PARAMS,
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
    _errors,
    config_to_triton_dtype,
    deserialize_bf16_tensor,
    deserialize_bytes_tensor,
    np_to_triton_dtype,
    serialize_bf16_tensor,
    serialize_byte_tensor,
    serialized_byte_size,
    triton_dtype_byte_size,
    triton_to_config_dtype,
    triton_to_np_dtype,
)
from tritonclient.utils._errors import *  # noqa: F403 - the names of _errors.__all__, re-exported

from ._client import CallContext, InferenceServerClient
from ._tensors import InferInput, InferRequestedOutput, InferResult


def raise_error_grpc(rpc_error: grpc.RpcError) -> None:
    """Raise an :class:`InferenceServerException` for a gRPC error.

    Parameters
    ----------
    rpc_error : grpc.RpcError
        The gRPC error.

    Raises
    ------
    InferenceServerException
        With the error's details as message and ``str(code)`` as status.
    """
    from tritonclient._transport.grpc import error_from_rpc

    raise error_from_rpc(rpc_error) from None


__all__ = [
    "INT32_MAX",
    "MAX_GRPC_MESSAGE_SIZE",
    "TRITON_RESERVED_REQUEST_PARAMS",
    "TRITON_RESERVED_REQUEST_PARAMS_PREFIX",
    "CallContext",
    "InferInput",
    "InferRequestedOutput",
    "InferResult",
    "InferenceServerClient",
    "InferenceServerClientPlugin",
    "KeepAliveOptions",
    "Request",
    "config_to_triton_dtype",
    "deserialize_bf16_tensor",
    "deserialize_bytes_tensor",
    "model_config_pb2",
    "np_to_triton_dtype",
    "raise_error_grpc",
    "serialize_bf16_tensor",
    "serialize_byte_tensor",
    "serialized_byte_size",
    "service_pb2",
    "service_pb2_grpc",
    "triton_dtype_byte_size",
    "triton_to_config_dtype",
    "triton_to_np_dtype",
]
__all__ += _errors.__all__
