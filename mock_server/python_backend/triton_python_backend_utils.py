"""``triton_python_backend_utils`` for models running on this server.

Models written for Triton's Python backend do ``import triton_python_backend_utils as pb_utils``;
importing :mod:`mock_server.python_backend` makes that name resolve to this module.  It provides
the documented API of the Python backend:

* tensors: :class:`Tensor` (numpy, DLPack, BF16 through ``ml_dtypes``);
* requests and responses: :class:`InferenceRequest` (what ``execute`` receives, and the
  business-logic-scripting (BLS) request with ``exec``/``async_exec``), :class:`InferenceResponse`,
  :class:`InferenceResponseSender`, :class:`ResponseIterator`, :class:`TritonError`,
  :class:`TritonModelException`;
* configuration: :class:`ModelConfig` for ``auto_complete_config`` and the ``get_*_by_name``
  helpers;
* model control: :func:`load_model`, :func:`unload_model`, :func:`is_model_ready`;
* :class:`Logger`, custom metrics (:class:`MetricFamily`, :class:`Metric`), and the
  ``TRITONSERVER_*`` constants.

Everything lives in host memory: ``Tensor.is_cpu()`` is always True and GPU ``PreferredMemory``
is accepted but has no effect.

Arguments are taken as Triton 2.51's bindings (pybind11) take them (:mod:`._pybind`): where
Triton takes a ``str`` (names, ids, messages) ``bytes`` are accepted too and read as UTF-8;
numbers, lists and enums are not converted from other types, and what Triton refuses with a
``TypeError`` is refused the same way.  ``tests/conformance/test_pb_utils_differential.py``
runs the same probes on both servers.

The API is written in modules by role, and this module re-exports it (the name models import
stays, with every public name): ``_pb_types`` (constants, datatype codes, errors),
``_pb_tensor`` (:class:`Tensor`), ``_pb_request`` and ``_pb_response`` (requests, responses and
their senders), ``_pb_bls`` (requests to other models), ``_pb_config`` (:class:`ModelConfig`
and the configuration helpers), ``_pb_control`` (model control, :func:`get_model_dir`),
``_pb_logging`` (:class:`Logger`) and :mod:`.metrics` (custom metrics).
"""

from __future__ import annotations

from tritonclient.utils import deserialize_bytes_tensor

from ._errors import TritonModelException
from ._pb_bls import ResponseIterator
from ._pb_config import (
    ModelConfig,
    get_input_config_by_name,
    get_output_config_by_name,
    numpy_to_triton_type,
    triton_string_to_numpy,
    triton_to_numpy_type,
    using_decoupled_model_transaction_policy,
)
from ._pb_control import get_model_dir, is_model_ready, load_model, unload_model
from ._pb_logging import Logger, LogLevel
from ._pb_request import InferenceRequest, InferenceTrace, PreferredMemory, get_input_tensor_by_name
from ._pb_response import InferenceResponse, InferenceResponseSender, get_output_tensor_by_name
from ._pb_tensor import Tensor, serialize_byte_tensor
from ._pb_tensor import _tensor_to_core as _tensor_to_core  # (tests build core tensors with it)
from ._pb_types import (
    TRITON_STRING_TO_NUMPY,
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_MEMORY_GPU,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_END,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
    TRITONSERVER_REQUEST_RELEASE_ALL,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    TRITONSERVER_RESPONSE_COMPLETE_FINAL,
    MemoryType,
    TritonError,
    TritonErrorCode,
)
from .metrics import Metric, MetricFamily, MetricKind

__all__ = [
    "TRITONSERVER_MEMORY_CPU",
    "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "TRITON_STRING_TO_NUMPY",
    "InferenceRequest",
    "InferenceResponse",
    "InferenceResponseSender",
    "InferenceTrace",
    "LogLevel",
    "Logger",
    "MemoryType",
    "Metric",
    "MetricFamily",
    "MetricKind",
    "ModelConfig",
    "PreferredMemory",
    "ResponseIterator",
    "Tensor",
    "TritonError",
    "TritonErrorCode",
    "TritonModelException",
    "deserialize_bytes_tensor",
    "get_input_config_by_name",
    "get_input_tensor_by_name",
    "get_model_dir",
    "get_output_config_by_name",
    "get_output_tensor_by_name",
    "is_model_ready",
    "load_model",
    "numpy_to_triton_type",
    "serialize_byte_tensor",
    "triton_string_to_numpy",
    "triton_to_numpy_type",
    "unload_model",
    "using_decoupled_model_transaction_policy",
]

# The classes written in the role modules are this module's, as they were when they were written
# here: their names show in what models print and pickle, and in Triton's error texts (see
# _inprocess._type_text).
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type) and _value.__module__.startswith(f"{__package__}._pb_"):
        _value.__module__ = __name__
del _name, _value
