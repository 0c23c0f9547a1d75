"""The in-process Python API of ``mock_server``, shaped like Triton's ``tritonserver`` package.

Code written for ``tritonserver`` runs against it with ``import mock_server as tritonserver``::

    import mock_server as tritonserver

    server = tritonserver.Server(model_repository="/workspace/models")
    server.start(wait_until_ready=True)
    for response in server.model("identity_bytes").infer(inputs={"INPUT0": [["hello"]]}):
        print(response.outputs["OUTPUT0"].to_string_array())
    server.stop()

:class:`Server` wraps :class:`mock_server.core.server.CoreServer`; models run in the same
process, on the core's threads.  Everything lives in host memory: GPU memory types raise
:class:`UnsupportedError`.  Options that configure mechanisms this server does not have (rate
limiter, memory pools, response cache, backend and repository-agent directories, ...) are
accepted and kept but have no effect; :class:`Options` marks them.

Note: Any methods, properties, or arguments prefixed with ``_`` are private.
"""

from __future__ import annotations

from ._enums import (
    DataType,
    DLDeviceType,
    InstanceGroupKind,
    LogFormat,
    MemoryType,
    MetricFormat,
    ModelBatchFlag,
    ModelControlMode,
    ModelTxnPropertyFlag,
    RateLimitMode,
    RequestFlag,
)
from ._errors import (
    AlreadyExistsError,
    CancelledError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    TritonError,
    UnavailableError,
    UnknownError,
    UnsupportedError,
)
from ._model import Model
from ._request import InferenceRequest
from ._response import AsyncResponseIterator, InferenceResponse, ResponseIterator
from ._server import ModelDictionary, ModelLoadDeviceLimit, Options, RateLimiterResource, Server
from ._tensor import DeviceOrMemoryType, MemoryAllocator, MemoryBuffer, Tensor

__all__ = [
    "AlreadyExistsError",
    "AsyncResponseIterator",
    "CancelledError",
    "DLDeviceType",
    "DataType",
    "DeviceOrMemoryType",
    "InferenceRequest",
    "InferenceResponse",
    "InstanceGroupKind",
    "InternalError",
    "InvalidArgumentError",
    "LogFormat",
    "MemoryAllocator",
    "MemoryBuffer",
    "MemoryType",
    "MetricFormat",
    "Model",
    "ModelBatchFlag",
    "ModelControlMode",
    "ModelDictionary",
    "ModelLoadDeviceLimit",
    "ModelTxnPropertyFlag",
    "NotFoundError",
    "Options",
    "RateLimitMode",
    "RateLimiterResource",
    "RequestFlag",
    "ResponseIterator",
    "Server",
    "Tensor",
    "TritonError",
    "UnavailableError",
    "UnknownError",
    "UnsupportedError",
]

# Tracebacks name the public module, as tritonserver's do.
for _error in (
    TritonError,
    UnknownError,
    InternalError,
    NotFoundError,
    InvalidArgumentError,
    UnavailableError,
    UnsupportedError,
    AlreadyExistsError,
    CancelledError,
):
    _error.__module__ = "mock_server"
del _error
