"""Deprecated home of the shared-memory helpers (the package name of old tritonclient
releases): use :mod:`tritonclient.utils.shared_memory` and
:mod:`tritonclient.utils.cuda_shared_memory`."""

import warnings

warnings.warn(
    "The package `tritonshmutils` is deprecated and will be removed in a future version. "
    "Please use instead `tritonclient.utils`",
    DeprecationWarning,
    stacklevel=2,
)
