"""Deprecated alias of :mod:`tritonclient.grpc.service_pb2_grpc` (the module name of old tritonclient releases)."""

import warnings

warnings.warn(
    "The package `tritongrpcclient.grpc_service_pb2_grpc` is deprecated and will be removed in a future version. "
    "Please use instead `tritonclient.grpc.service_pb2_grpc`",
    DeprecationWarning,
    stacklevel=2,
)

from tritonclient.grpc.service_pb2_grpc import *  # noqa: E402, F403
