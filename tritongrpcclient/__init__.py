"""Deprecated alias of :mod:`tritonclient.grpc` (the module name of old tritonclient releases)."""

import warnings

warnings.warn(
    "The package `tritongrpcclient` is deprecated and will be removed in a future version. "
    "Please use instead `tritonclient.grpc`",
    DeprecationWarning,
    stacklevel=2,
)

from tritonclient.grpc import *  # noqa: E402, F403
