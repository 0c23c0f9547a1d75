"""Deprecated alias of :mod:`tritonclient.utils` (the module name of old tritonclient releases)."""

import warnings

warnings.warn(
    "The package `tritonclientutils` is deprecated and will be removed in a future version. "
    "Please use instead `tritonclient.utils`",
    DeprecationWarning,
    stacklevel=2,
)

from tritonclient.utils import *  # noqa: E402, F403
