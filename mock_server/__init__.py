"""The bundled reference server for the KServe v2 / Triton protocol.

``mock_server.core`` is the wire-independent server (repository, model lifecycle,
schedulers, validation, statistics, shared memory, the dataplane); ``mock_server.python_backend``
runs models written for Triton's Python backend; ``mock_server.frontends`` (HTTP, gRPC, the
metrics port) serve the core over the network, and ``python -m mock_server`` is the command
line (``mock_server.app`` puts them together; ``mock_server.compose`` gives the core its
backends).

The package also is the in-process Python API, shaped like Triton's ``tritonserver`` package
(:mod:`mock_server.api`, re-exported here and imported on first use)::

    import mock_server as tritonserver

    server = tritonserver.Server(model_repository="/workspace/models").start()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
    from .api import AlreadyExistsError as AlreadyExistsError
    from .api import AsyncResponseIterator as AsyncResponseIterator
    from .api import CancelledError as CancelledError
    from .api import DataType as DataType
    from .api import DeviceOrMemoryType as DeviceOrMemoryType
    from .api import DLDeviceType as DLDeviceType
    from .api import InferenceRequest as InferenceRequest
    from .api import InferenceResponse as InferenceResponse
    from .api import InstanceGroupKind as InstanceGroupKind
    from .api import InternalError as InternalError
    from .api import InvalidArgumentError as InvalidArgumentError
    from .api import LogFormat as LogFormat
    from .api import MemoryAllocator as MemoryAllocator
    from .api import MemoryBuffer as MemoryBuffer
    from .api import MemoryType as MemoryType
    from .api import MetricFormat as MetricFormat
    from .api import Model as Model
    from .api import ModelBatchFlag as ModelBatchFlag
    from .api import ModelControlMode as ModelControlMode
    from .api import ModelDictionary as ModelDictionary
    from .api import ModelLoadDeviceLimit as ModelLoadDeviceLimit
    from .api import ModelTxnPropertyFlag as ModelTxnPropertyFlag
    from .api import NotFoundError as NotFoundError
    from .api import Options as Options
    from .api import RateLimiterResource as RateLimiterResource
    from .api import RateLimitMode as RateLimitMode
    from .api import RequestFlag as RequestFlag
    from .api import ResponseIterator as ResponseIterator
    from .api import Server as Server
    from .api import Tensor as Tensor
    from .api import TritonError as TritonError
    from .api import UnavailableError as UnavailableError
    from .api import UnknownError as UnknownError
    from .api import UnsupportedError as UnsupportedError

#: The in-process API names re-exported here (see :mod:`mock_server.api`).
_API_NAMES = frozenset(
    {
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
    }
)

__all__ = ["__version__", *sorted(_API_NAMES)]


def __getattr__(name: str) -> object:
    # The API pulls in numpy, protobuf and the core: import it on first use only.
    if name in _API_NAMES:
        from . import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    if name == "_api":
        # tritonserver's own name for its API package: code written for it (Triton's OpenAI
        # frontend) names types as tritonserver._api._response.InferenceResponse.
        from . import api

        return api
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API_NAMES)
