"""``triton_python_backend_utils`` on its own: tensors, DLPack, errors, config, logging, metrics."""

from __future__ import annotations

import gc
import json
import logging
import math
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mock_server.python_backend  # noqa: F401  (installs the module alias)
from mock_server.python_backend import collect_metrics
from mock_server.python_backend import triton_python_backend_utils as pb_utils
from mock_server.python_backend.triton_python_backend_utils import _tensor_to_core


def test_module_alias() -> None:
    import triton_python_backend_utils  # type: ignore[import-not-found]

    assert triton_python_backend_utils is pb_utils
    assert sys.modules["triton_python_backend_utils"] is pb_utils


def test_constants() -> None:
    assert pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL == 1
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START == 1
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END == 2
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE == 2
    assert pb_utils.TRITONSERVER_MEMORY_GPU != pb_utils.TRITONSERVER_MEMORY_CPU


# -- TritonError / TritonModelException ----------------------------------------------------------
def test_triton_error() -> None:
    error = pb_utils.TritonError("An Error Occurred")
    assert error.message() == "An Error Occurred" and str(error) == "An Error Occurred"
    assert error.code() == pb_utils.TritonError.INTERNAL
    codes = [
        pb_utils.TritonError.UNKNOWN,
        pb_utils.TritonError.INTERNAL,
        pb_utils.TritonError.NOT_FOUND,
        pb_utils.TritonError.INVALID_ARG,
        pb_utils.TritonError.UNAVAILABLE,
        pb_utils.TritonError.UNSUPPORTED,
        pb_utils.TritonError.ALREADY_EXISTS,
        pb_utils.TritonError.CANCELLED,
    ]
    assert [int(c) for c in codes] == list(range(8))
    found = pb_utils.TritonError("The file is not found", pb_utils.TritonError.NOT_FOUND)
    assert found.code() == pb_utils.TritonError.NOT_FOUND
    # As Triton's binding: bytes are a str, the code must be the enum.
    assert pb_utils.TritonError(b"from bytes").message() == "from bytes"
    arguments: tuple[Any, ...]
    for arguments in (("x", 99), ("x", 3), (3,), (None,)):
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            pb_utils.TritonError(*arguments)


def test_triton_model_exception() -> None:
    with pytest.raises(pb_utils.TritonModelException) as info:
        raise pb_utils.TritonModelException("An error occurred during finalize.")
    assert str(info.value) == "An error occurred during finalize."
    assert info.value.message() == "An error occurred during finalize."
    assert isinstance(info.value, Exception)


# -- Tensor --------------------------------------------------------------------------------------
def _data(tensor: pb_utils.Tensor) -> Any:
    """A tensor's array, BF16 included (``as_numpy()`` refuses BF16, as Triton's)."""
    return tensor._array


@pytest.mark.parametrize(
    ("dtype", "datatype", "code"),
    [
        (np.bool_, "BOOL", 1),
        (np.uint8, "UINT8", 2),
        (np.uint16, "UINT16", 3),
        (np.uint32, "UINT32", 4),
        (np.uint64, "UINT64", 5),
        (np.int8, "INT8", 6),
        (np.int16, "INT16", 7),
        (np.int32, "INT32", 8),
        (np.int64, "INT64", 9),
        (np.float16, "FP16", 10),
        (np.float32, "FP32", 11),
        (np.float64, "FP64", 12),
        (np.object_, "BYTES", 13),
        (ml_dtypes.bfloat16, "BF16", 14),
    ],
)
def test_tensor_datatypes(dtype: Any, datatype: str, code: int) -> None:
    array = np.zeros((2, 3), dtype=dtype)
    if dtype is np.object_:
        array[...] = b"x"
    tensor = pb_utils.Tensor("T", array)
    assert tensor.name() == "T"
    if datatype == "BF16":  # as Triton: numpy has no bfloat16, DLPack carries it
        with pytest.raises(pb_utils.TritonModelException, match="cannot be converted to NumPy"):
            tensor.as_numpy()
    else:
        assert tensor.as_numpy() is array
    assert _data(tensor) is array
    assert tensor.triton_dtype() == code
    assert tensor.shape() == [2, 3]
    assert tensor.is_cpu()
    core = _tensor_to_core(tensor)
    assert (core.name, core.datatype, core.shape) == ("T", datatype, (2, 3))
    assert pb_utils.triton_to_numpy_type(code) == np.dtype(dtype).type or (
        dtype is np.bool_ and pb_utils.triton_to_numpy_type(code) is bool
    )
    assert pb_utils.numpy_to_triton_type(dtype) == code


def test_tensor_rejects_unsupported_dtypes() -> None:
    with pytest.raises(pb_utils.TritonModelException, match="complex128"):
        pb_utils.Tensor("C", np.zeros(2, dtype=np.complex128))
    with pytest.raises(TypeError):
        pb_utils.Tensor(3, np.zeros(2))  # type: ignore[arg-type]


def test_tensor_takes_bytes_names_refuses_non_arrays_and_makes_arrays_contiguous() -> None:
    assert pb_utils.Tensor(b"B", np.zeros(1)).name() == "B"
    assert type(pb_utils.Tensor(np.str_("S"), np.zeros(1)).name()) is str
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb_utils.Tensor("L", [1, 2, 3])
    strided = np.arange(10, dtype=np.int32)[::2]
    tensor = pb_utils.Tensor("S", strided)
    assert tensor.as_numpy().flags.c_contiguous
    assert tensor.as_numpy().tolist() == [0, 2, 4, 6, 8]


@given(
    st.lists(
        st.one_of(st.binary(max_size=20), st.text(st.characters(codec="utf-8"), max_size=10)),
        min_size=0,
        max_size=12,
    )
)
def test_bytes_tensor_conversion_round_trip(items: list[Any]) -> None:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    core = _tensor_to_core(pb_utils.Tensor("B", array))
    assert core.datatype == "BYTES" and core.shape == (len(items),)
    expected = [x if isinstance(x, bytes) else x.encode("utf-8") for x in items]
    assert core.data.tolist() == expected


def test_helpers() -> None:
    config = {
        "input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [4]}],
        "output": [{"name": "OUT", "data_type": "TYPE_STRING", "dims": [1]}],
    }
    assert pb_utils.get_input_config_by_name(config, "IN") == config["input"][0]
    assert pb_utils.get_input_config_by_name(config, "OUT") is None
    assert pb_utils.get_output_config_by_name(config, "OUT") == config["output"][0]
    assert pb_utils.get_output_config_by_name({}, "OUT") is None
    assert pb_utils.triton_string_to_numpy("TYPE_FP32") is np.float32
    assert pb_utils.triton_string_to_numpy("TYPE_STRING") is np.object_
    assert pb_utils.triton_string_to_numpy("TYPE_BF16") is ml_dtypes.bfloat16
    with pytest.raises(KeyError):
        pb_utils.triton_string_to_numpy("TYPE_NOPE")
    assert pb_utils.TRITON_STRING_TO_NUMPY["TYPE_INT8"] is np.int8
    assert pb_utils.triton_to_numpy_type(99) is None
    assert pb_utils.numpy_to_triton_type(np.complex64) is None
    assert pb_utils.numpy_to_triton_type(np.bytes_) == 13
    assert not pb_utils.using_decoupled_model_transaction_policy(config)
    assert pb_utils.using_decoupled_model_transaction_policy(
        {"model_transaction_policy": {"decoupled": True}}
    )
    packed = pb_utils.serialize_byte_tensor(np.array([b"ab", "c"], dtype=object))
    assert pb_utils.deserialize_bytes_tensor(packed).tolist() == [b"ab", b"c"]


def test_get_tensor_by_name() -> None:
    out = pb_utils.Tensor("OUT", np.array([1.0]))
    response = pb_utils.InferenceResponse([out])
    assert pb_utils.get_output_tensor_by_name(response, "OUT") is out
    assert pb_utils.get_output_tensor_by_name(response, "NOPE") is None
    request = pb_utils.InferenceRequest(model_name="x", inputs=[out], requested_output_names=[])
    assert pb_utils.get_input_tensor_by_name(request, "OUT") is out
    assert pb_utils.get_input_tensor_by_name(request, "NOPE") is None


# -- DLPack --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dtype", [np.float32, np.int64, np.uint8, np.bool_, np.float16, ml_dtypes.bfloat16]
)
def test_dlpack_round_trip_shares_memory(dtype: Any) -> None:
    array = np.arange(12).reshape(3, 4).astype(dtype)
    tensor = pb_utils.Tensor("IN", array)
    capsule = tensor.to_dlpack()
    assert type(capsule).__name__ == "PyCapsule"
    back = pb_utils.Tensor.from_dlpack("OUT", capsule)
    assert back.name() == "OUT" and back.triton_dtype() == tensor.triton_dtype()
    np.testing.assert_array_equal(_data(back), array)
    assert np.shares_memory(_data(back).view(np.uint8), array.view(np.uint8))
    with pytest.raises(pb_utils.TritonModelException, match="already consumed"):
        pb_utils.Tensor.from_dlpack("AGAIN", capsule)


def test_dlpack_protocol_objects() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    from_numpy = pb_utils.Tensor.from_dlpack("N", array)  # numpy implements __dlpack__
    assert np.shares_memory(from_numpy.as_numpy(), array)
    tensor = pb_utils.Tensor("T", array)
    assert tensor.__dlpack_device__() == (1, 0)
    consumed = np.from_dlpack(tensor)  # pb_utils.Tensor implements __dlpack__ too
    assert np.shares_memory(consumed, array)
    bf16 = pb_utils.Tensor("B", array.astype(ml_dtypes.bfloat16))
    again = pb_utils.Tensor.from_dlpack("B2", bf16)
    assert _data(again).dtype == ml_dtypes.bfloat16


def test_dlpack_of_read_only_input() -> None:
    array = np.frombuffer(np.arange(4, dtype=np.int32).tobytes(), dtype=np.int32)
    assert not array.flags.writeable
    back = pb_utils.Tensor.from_dlpack("X", pb_utils.Tensor("X", array).to_dlpack())
    assert back.as_numpy().tolist() == [0, 1, 2, 3]


def test_dlpack_rejects_non_contiguous_bytes_and_junk() -> None:
    with pytest.raises(pb_utils.TritonModelException, match="C-order contiguous"):
        pb_utils.Tensor.from_dlpack("X", np.arange(10)[::2])
    with pytest.raises(pb_utils.TritonModelException, match="C-order contiguous"):
        pb_utils.Tensor.from_dlpack("X", np.ones((3, 4), np.float32).T)
    with pytest.raises(pb_utils.TritonModelException, match="BYTES"):
        pb_utils.Tensor("S", np.array([b"a"], dtype=object)).to_dlpack()
    with pytest.raises(pb_utils.TritonModelException, match="__dlpack__"):
        pb_utils.Tensor.from_dlpack("X", [1, 2, 3])


class _FakeDeviceTensor:
    """A producer on a (pretend) CUDA device that can copy itself to the host when asked."""

    def __init__(self, array: np.ndarray[Any, Any], can_copy: bool) -> None:
        self.array = array
        self.can_copy = can_copy
        self.kwargs: dict[str, Any] = {}

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.kwargs = kwargs
        if not self.can_copy:
            raise BufferError("cannot copy to host")
        return pb_utils.Tensor("x", self.array).__dlpack__(max_version=kwargs.get("max_version"))


def test_dlpack_device_tensors_are_copied_to_the_host_by_their_producer() -> None:
    array = np.arange(4, dtype=ml_dtypes.bfloat16)
    producer = _FakeDeviceTensor(array, can_copy=True)
    tensor = pb_utils.Tensor.from_dlpack("G", producer)
    assert producer.kwargs["dl_device"] == (1, 0) and producer.kwargs["copy"] is True
    np.testing.assert_array_equal(_data(tensor), array)
    assert tensor.is_cpu()
    with pytest.raises(pb_utils.TritonModelException, match="host"):
        pb_utils.Tensor.from_dlpack("G", _FakeDeviceTensor(array, can_copy=False))


# -- requests and responses ----------------------------------------------------------------------
def test_inference_response() -> None:
    out = pb_utils.Tensor("OUT", np.array([1]))
    response = pb_utils.InferenceResponse(output_tensors=[out], parameters={"a": 1, "b": "x"})
    assert response.output_tensors() == [out]
    assert not response.has_error() and response.error() is None
    assert json.loads(response.parameters()) == {"a": 1, "b": "x"}
    assert pb_utils.InferenceResponse((out,)).output_tensors() == [out]
    failed = pb_utils.InferenceResponse(error=pb_utils.TritonError("bad"))
    assert failed.has_error() and failed.error().message() == "bad"  # type: ignore[union-attr]
    for bad in (out, [np.array([1])]):
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            pb_utils.InferenceResponse(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb_utils.InferenceResponse(error="bad")  # type: ignore[arg-type]
    # The Python backend's checks and words (PyParametersToJSON).
    for parameters, message in (
        ('{"k": true}', "Expect N8pybind114dictE, got <class 'str'>"),
        ({1: "x"}, "Expect parameters keys to have type str, found type <class 'int'>"),
        (
            {"x": 0.5},
            "Expect parameters values to have type bool/int/str, found type <class 'float'>",
        ),
    ):
        with pytest.raises(pb_utils.TritonModelException) as info:
            pb_utils.InferenceResponse([], parameters=parameters)  # type: ignore[arg-type]
        assert str(info.value) == message


def test_bls_request_construction() -> None:
    tensor = pb_utils.Tensor("IN", np.array([1], np.int32))
    request = pb_utils.InferenceRequest(
        model_name="target",
        requested_output_names=["OUT"],
        inputs=[tensor],
        request_id="1",
        correlation_id=4,
        model_version=2,
        flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
        timeout=5,
        preferred_memory=pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_GPU, 0),
        parameters={"key": "value"},
    )
    assert request.model_name() == "target" and request.model_version() == 2
    assert request.inputs() == [tensor] and request.requested_output_names() == {"OUT"}
    assert (request.request_id(), request.correlation_id(), request.flags()) == ("1", 4, 1)
    assert request.timeout() == 5 and json.loads(request.parameters()) == {"key": "value"}
    assert not request.is_cancelled()
    assert request.trace().get_context() is None
    request.set_flags(3)
    assert request.flags() == 3
    with pytest.raises(pb_utils.TritonModelException, match="response sender"):
        request.get_response_sender()
    with pytest.raises(pb_utils.TritonModelException):
        request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb_utils.InferenceRequest(inputs=[], requested_output_names=[])
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb_utils.InferenceRequest(model_name="x", requested_output_names=[])
    with pytest.raises(pb_utils.TritonModelException, match="values to have type"):
        pb_utils.InferenceRequest(
            model_name="x", inputs=[], requested_output_names=[], parameters={"k": None}
        )
    with pytest.raises(RuntimeError, match="Unable to cast Python instance"):
        pb_utils.InferenceRequest(
            model_name="x", inputs=[], requested_output_names=[], correlation_id=-1
        )
    string_id = pb_utils.InferenceRequest(
        model_name="x", inputs=[], requested_output_names=[], correlation_id="ex-4"
    )
    assert string_id.correlation_id() == "ex-4"


def test_bls_request_takes_bytes_where_triton_takes_str() -> None:
    """Triton's binding takes bytes for its str arguments (a name read from a BYTES input is
    passed as is) and hands back str."""
    request = pb_utils.InferenceRequest(
        model_name=b"target",
        request_id=bytearray(b"rid"),
        requested_output_names=(b"OUT", "OTHER"),
        inputs=[],
        correlation_id=True,
    )
    assert (request.model_name(), request.request_id()) == ("target", "rid")
    assert request.requested_output_names() == {"OUT", "OTHER"}
    assert request.correlation_id() == 1 and type(request.correlation_id()) is int
    assert request._core_request().model_name == "target"
    for bad in (
        {"model_name": 5},
        {"request_id": 3},
        {"requested_output_names": "OUT"},
        {"requested_output_names": [3]},
        {"model_version": "1"},
        {"flags": "1"},
        {"timeout": -1},
        {"correlation_id": None},  # Triton's qa argument_validation expects TypeError
    ):
        arguments: dict[str, Any] = {
            "model_name": "x",
            "inputs": [],
            "requested_output_names": [],
            **bad,
        }
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            pb_utils.InferenceRequest(**arguments)
    for correlation_id in (b"cid", 1.5):
        with pytest.raises(pb_utils.TritonModelException) as info:
            pb_utils.InferenceRequest(
                model_name="x", inputs=[], requested_output_names=[], correlation_id=correlation_id
            )
        assert str(info.value) == "Correlation ID must be integer or string"


def test_bls_without_a_server_raises() -> None:
    request = pb_utils.InferenceRequest(model_name="x", inputs=[], requested_output_names=[])
    from mock_server.python_backend import _context

    saved = _context._fallback
    _context._fallback = None
    try:
        with pytest.raises(pb_utils.TritonModelException, match="no server"):
            request.exec()
        with pytest.raises(pb_utils.TritonModelException, match="no server"):
            pb_utils.load_model("x")
    finally:
        _context._fallback = saved


# -- ModelConfig ---------------------------------------------------------------------------------
def test_model_config_api() -> None:
    config = pb_utils.ModelConfig(json.dumps({"name": "m", "max_batch_size": 0}))
    assert config.as_dict()["input"] == [] and config.as_dict()["output"] == []
    config.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    config.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [4]})  # same: no-op
    config.add_output({"name": "B", "data_type": "TYPE_INT32", "dims": [-1]})
    config.set_max_batch_size(4)
    config.set_max_batch_size(8)
    config.set_dynamic_batching()
    config.set_model_transaction_policy({"decoupled": False})
    config.set_model_transaction_policy({"decoupled": False})
    assert config.as_dict() == {
        "name": "m",
        "max_batch_size": 8,
        "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [4], "optional": True}],
        "output": [{"name": "B", "data_type": "TYPE_INT32", "dims": [-1]}],
        "dynamic_batching": {},
        "model_transaction_policy": {"decoupled": False},
    }
    with pytest.raises(ValueError, match="missing 'name' property"):
        config.add_input({"data_type": "TYPE_FP32", "dims": [1]})
    with pytest.raises(ValueError, match="missing 'dims' property"):
        config.add_output({"name": "C", "data_type": "TYPE_FP32"})
    with pytest.raises(ValueError, match="other than 'name', 'data_type' and 'dims'"):
        config.add_output({"name": "C", "data_type": "TYPE_FP32", "dims": [1], "optional": True})
    with pytest.raises(ValueError, match="specified max_batch_size 2"):
        config.set_max_batch_size(2)


# -- Logger --------------------------------------------------------------------------------------
def test_logger_levels(caplog: pytest.LogCaptureFixture) -> None:
    logger = pb_utils.Logger
    with caplog.at_level(logging.DEBUG, logger="mock_server.model"):
        logger.log_info("Info Msg!")
        logger.log_warn("Warning Msg!")
        logger.log_error("Error Msg!")
        logger.log_verbose("Verbose Msg!")
        logger.log("Specific Msg!", logger.WARNING)
        logger.log("Default Msg!")
        logger.log("Enum Msg!", pb_utils.LogLevel.ERROR)
    got = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert got == [
        ("mock_server.model", logging.INFO, "Info Msg!"),
        ("mock_server.model", logging.WARNING, "Warning Msg!"),
        ("mock_server.model", logging.ERROR, "Error Msg!"),
        ("mock_server.model", logging.DEBUG, "Verbose Msg!"),
        ("mock_server.model", logging.WARNING, "Specific Msg!"),
        ("mock_server.model", logging.INFO, "Default Msg!"),
        ("mock_server.model", logging.ERROR, "Enum Msg!"),
    ]
    # The records point at the caller, not at the Logger.
    assert all(r.filename == "test_python_backend_utils.py" for r in caplog.records)
    assert logger.LogLevel is pb_utils.LogLevel
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="mock_server.model"):
        logger.log_warn(b"bytes Msg!")  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records] == ["bytes Msg!"]
    with pytest.raises(TypeError, match="incompatible function arguments"):
        logger.log("x", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="incompatible function arguments"):
        logger.log_info(5)  # type: ignore[arg-type]


# -- metrics -------------------------------------------------------------------------------------
def _family(name: str) -> Any:
    for family in collect_metrics():
        if family.name == name:
            return family
    return None


def test_counter_and_gauge() -> None:
    counter_family = pb_utils.MetricFamily(
        name="pbu_counter", description="a counter", kind=pb_utils.MetricFamily.COUNTER
    )
    counter = counter_family.Metric(labels={"model": "m", "version": "1"})
    counter.increment(5)
    counter.increment(2.5)
    assert counter.value() == 7.5
    with pytest.raises(pb_utils.TritonModelException) as info:
        counter.increment(-1)
    assert str(info.value) == (
        "Failed to increment metric value: Failed to process the request for model '', "
        "message: TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
        "non-negative values."
    )
    with pytest.raises(pb_utils.TritonModelException, match="COUNTER does not support Set"):
        counter.set(3)
    with pytest.raises(pb_utils.TritonModelException, match="COUNTER does not support Observe"):
        counter.observe(3)
    gauge_family = pb_utils.MetricFamily("pbu_gauge", "a gauge", pb_utils.MetricFamily.GAUGE)
    gauge = gauge_family.Metric()
    gauge.set(10)
    gauge.increment(-4)
    assert gauge.value() == 6
    snap = _family("pbu_counter")
    assert (snap.description, snap.kind) == ("a counter", "counter")
    assert [(m.labels, m.value) for m in snap.metrics] == [({"model": "m", "version": "1"}, 7.5)]
    assert [(m.labels, m.value) for m in _family("pbu_gauge").metrics] == [({}, 6.0)]


def test_histogram() -> None:
    family = pb_utils.MetricFamily("pbu_hist", "latency", pb_utils.MetricFamily.HISTOGRAM)
    with pytest.raises(pb_utils.TritonModelException) as info:
        family.Metric(labels={"a": "b"})
    assert str(info.value) == "Failed to create metric. Missing required buckets."
    with pytest.raises(pb_utils.TritonModelException, match="must be strictly sorted"):
        family.Metric(labels={"a": "b"}, buckets=[2.0, 1.0])
    with pytest.raises(pb_utils.TritonModelException, match="Buckets must be a list"):
        family.Metric(labels={"a": "b"}, buckets=(1.0,))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="Unable to cast"):
        family.Metric(labels={"a": "b"}, buckets=["1"])  # type: ignore[list-item]
    metric = family.Metric(labels={"a": "b"}, buckets=[1.0, 5.0, 10.0])
    for value in (0.5, 1.0, 3, 7, 100):
        metric.observe(value)
    with pytest.raises(pb_utils.TritonModelException, match="HISTOGRAM does not support Value"):
        metric.value()
    with pytest.raises(pb_utils.TritonModelException, match="does not support Increment"):
        metric.increment(1)
    (sample,) = _family("pbu_hist").metrics
    assert sample.value is None
    assert sample.buckets == ((1.0, 2), (5.0, 3), (10.0, 4), (math.inf, 5))
    assert (sample.sum, sample.count) == (111.5, 5)
    # The same labels name the same metric, whatever buckets are asked for again.
    family.Metric(labels={"a": "b"}, buckets=[1.0]).observe(2)
    (sample,) = _family("pbu_hist").metrics
    assert sample.count == 6 and len(sample.buckets or ()) == 4


def test_shared_families_and_metrics_and_their_lifetime() -> None:
    first = pb_utils.MetricFamily("pbu_shared", "shared", pb_utils.MetricFamily.COUNTER)
    # Same name and kind: the same family, its first description kept.
    second = pb_utils.MetricFamily("pbu_shared", "other text", pb_utils.MetricFamily.COUNTER)
    assert second.description() == "shared"
    with pytest.raises(pb_utils.TritonModelException) as info:
        pb_utils.MetricFamily("pbu_shared", "shared", pb_utils.MetricFamily.GAUGE)
    assert str(info.value) == (
        "Error when creating MetricFamily: Failed to process the request for model '', "
        "message: Family name already exists with different type"
    )
    one = first.Metric(labels={"k": "v"})
    two = second.Metric(labels={"k": "v"})
    one.increment(1)
    two.increment(1)
    assert one.value() == two.value() == 2
    # A metric lives as long as its family, not as long as its Metric object.
    first.Metric(labels={"k": "w"}).increment(3)
    gc.collect()
    assert first.Metric(labels={"k": "w"}).value() == 3
    assert len(_family("pbu_shared").metrics) == 2
    del one, first
    gc.collect()
    assert two.value() == 2
    del second
    gc.collect()
    assert _family("pbu_shared") is None
    with pytest.raises(pb_utils.TritonModelException) as info:
        two.increment(1)
    assert str(info.value) == (
        "Failed to increment metric value: Invalid metric operation as the corresponding "
        "'MetricFamily' has been deleted. The 'MetricFamily' object should be deleted AFTER its "
        "corresponding 'Metric' objects have been deleted."
    )


def test_metric_argument_validation() -> None:
    for name in ("bad name", "__reserved", "1st", ""):
        with pytest.raises(pb_utils.TritonModelException, match="message: Invalid metric name"):
            pb_utils.MetricFamily(name, "x", pb_utils.MetricFamily.COUNTER)
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb_utils.MetricFamily("pbu_kind", "x", 0)  # type: ignore[arg-type]
    bytes_family = pb_utils.MetricFamily(b"pbu_bytes", b"from bytes", pb_utils.MetricFamily.GAUGE)  # type: ignore[arg-type]
    assert (bytes_family.name(), bytes_family.description()) == ("pbu_bytes", "from bytes")
    family = pb_utils.MetricFamily("pbu_labels", "x", pb_utils.MetricFamily.GAUGE)
    for labels in ({"bad-label": "x"}, {"__name__": "x"}, {1: "x"}):
        with pytest.raises(pb_utils.TritonModelException, match="message: Invalid label name"):
            family.Metric(labels=labels)  # type: ignore[arg-type]
    with pytest.raises(pb_utils.TritonModelException, match="JSON non-string as string"):
        family.Metric(labels={"good": 1})  # type: ignore[dict-item]
    # The labels travel as JSON: bytes fail as json.dumps fails.
    with pytest.raises(TypeError, match="not JSON serializable"):
        family.Metric(labels={"good": b"x"})  # type: ignore[dict-item]
    with pytest.raises(pb_utils.TritonModelException, match="Labels must be a dictionary"):
        family.Metric(labels=[("a", "b")])  # type: ignore[arg-type]
    with pytest.raises(pb_utils.TritonModelException, match="Unexpected buckets found"):
        family.Metric(labels={}, buckets=[1.0])
    metric = pb_utils.Metric(family, labels={"x": "y"})
    with pytest.raises(TypeError, match="incompatible function arguments"):
        metric.set("high")  # type: ignore[arg-type]
    metric.set(np.float32(1.5))  # type: ignore[arg-type]
    assert metric.value() == 1.5
    assert family.name() == "pbu_labels" and family.kind() == pb_utils.MetricFamily.GAUGE


def test_a_family_freed_while_metrics_are_collected_does_not_break_the_collection() -> None:
    """The garbage collector may free a family's last object while ``collect`` runs, on the
    same thread (the lock is re-entrant): the collection goes on without it."""
    from mock_server.python_backend import metrics as pb_metrics

    doomed = pb_utils.MetricFamily(
        name="pbu_doomed", description="d", kind=pb_utils.MetricFamily.COUNTER
    )
    doomed.Metric(labels={"k": "v"}).increment(1)
    keeper = pb_utils.MetricFamily(
        name="pbu_keeper", description="k", kind=pb_utils.MetricFamily.COUNTER
    )
    keeper.Metric(labels={"k": "v"}).increment(2)
    state = pb_metrics._families["pbu_keeper"]

    class Freeing(dict):  # type: ignore[type-arg]
        """Metrics whose reading frees the other family, as a collection would."""

        def values(self):  # type: ignore[no-untyped-def,override]
            nonlocal doomed
            doomed = None  # the last reference: its family is released here and now
            return super().values()

    state.metrics = Freeing(state.metrics)
    try:
        names = [family.name for family in collect_metrics()]
    finally:
        state.metrics = dict(state.metrics)
    assert "pbu_keeper" in names and doomed is None
    assert "pbu_doomed" not in [family.name for family in collect_metrics()]
    del keeper
