"""Deprecated alias of :mod:`tritonclient.http` (the module name of old tritonclient releases)."""

import warnings

warnings.warn(
    "The package `tritonhttpclient` is deprecated and will be removed in a future version. "
    "Please use instead `tritonclient.http`",
    DeprecationWarning,
    stacklevel=2,
)

from tritonclient.http import *  # noqa: E402, F403
