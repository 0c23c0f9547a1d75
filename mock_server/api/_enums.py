"""Enumerations of the in-process API, numbered as Triton's C API numbers them.

:class:`DataType` members are named by the protocol datatype strings; conversions to and from
those strings and numpy dtypes go through :mod:`tritonclient.utils` (the project's single
datatype table), see :mod:`mock_server.api._tensor`.
"""

from __future__ import annotations

import enum

from tritonclient.utils._dtypes import DATATYPES

__all__ = [
    "DLDeviceType",
    "DataType",
    "InstanceGroupKind",
    "LogFormat",
    "MemoryType",
    "MetricFormat",
    "ModelBatchFlag",
    "ModelControlMode",
    "ModelTxnPropertyFlag",
    "RateLimitMode",
    "RequestFlag",
]


class _IntEnum(enum.IntEnum):
    """An ``IntEnum`` printed as ``Class.MEMBER`` (``int``'s ``str`` would print the number)."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class DataType(_IntEnum):
    """Tensor datatypes (``TRITONSERVER_DataType``).

    Member names are the protocol datatype strings (``DataType["FP32"]``, ``dtype.name``);
    values are the C API's.
    """

    INVALID = 0
    BOOL = 1
    UINT8 = 2
    UINT16 = 3
    UINT32 = 4
    UINT64 = 5
    INT8 = 6
    INT16 = 7
    INT32 = 8
    INT64 = 9
    FP16 = 10
    FP32 = 11
    FP64 = 12
    BYTES = 13
    BF16 = 14


# Every protocol datatype of the shared table has a member, and every member but INVALID is one.
if {member.name for member in DataType} - {"INVALID"} != set(DATATYPES):  # pragma: no cover
    raise ImportError("mock_server.api.DataType is out of step with tritonclient.utils' table")


class MemoryType(_IntEnum):
    """Where a buffer lives (``TRITONSERVER_MemoryType``)."""

    CPU = 0
    CPU_PINNED = 1
    GPU = 2


class DLDeviceType(_IntEnum):
    """DLPack device types (``DLDeviceType`` of ``dlpack.h``)."""

    kDLCPU = 1  # noqa: N815
    kDLCUDA = 2  # noqa: N815
    kDLCUDAHost = 3  # noqa: N815
    kDLOpenCL = 4  # noqa: N815
    kDLVulkan = 7  # noqa: N815
    kDLMetal = 8  # noqa: N815
    kDLVPI = 9  # noqa: N815
    kDLROCM = 10  # noqa: N815
    kDLROCMHost = 11  # noqa: N815
    kDLExtDev = 12  # noqa: N815
    kDLCUDAManaged = 13  # noqa: N815
    kDLOneAPI = 14  # noqa: N815
    kDLWebGPU = 15  # noqa: N815
    kDLHexagon = 16  # noqa: N815


class ModelControlMode(_IntEnum):
    """How the set of loaded models is decided (``TRITONSERVER_ModelControlMode``)."""

    NONE = 0
    POLL = 1
    EXPLICIT = 2


class InstanceGroupKind(_IntEnum):
    """Kind of a model instance group (``TRITONSERVER_InstanceGroupKind``)."""

    AUTO = 0
    CPU = 1
    GPU = 2
    MODEL = 3


class LogFormat(_IntEnum):
    """Log line format (``TRITONSERVER_LogFormat``)."""

    DEFAULT = 0
    ISO8601 = 1


class MetricFormat(_IntEnum):
    """Format of :meth:`Server.metrics` (``TRITONSERVER_MetricFormat``)."""

    PROMETHEUS = 0


class RateLimitMode(_IntEnum):
    """Rate limiter mode (``TRITONSERVER_RateLimitMode``)."""

    OFF = 0
    EXEC_COUNT = 1


class ModelBatchFlag(_IntEnum):
    """Batch property of a model (``TRITONSERVER_ModelBatchFlag``)."""

    UNKNOWN = 1
    FIRST_DIM = 2


class ModelTxnPropertyFlag(_IntEnum):
    """Transaction property of a model (``TRITONSERVER_ModelTxnPropertyFlag``)."""

    ONE_TO_ONE = 1
    DECOUPLED = 2


class RequestFlag(enum.IntFlag):
    """Flags of :attr:`InferenceRequest.flags` (``TRITONSERVER_RequestFlag``)."""

    SEQUENCE_START = 1
    SEQUENCE_END = 2
