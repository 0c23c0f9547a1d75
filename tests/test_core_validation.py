"""Tests of :mod:`mock_server.core.validation`: one test (or a small group) per rule."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from google.protobuf import text_format

from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.types import InferRequest, RequestedOutput, Tensor
from mock_server.core.validation import (
    PASSED_THROUGH_PARAMS,
    batch_size_of,
    effective_priority,
    implicit_input_names,
    log_request_prefix,
    validate_request,
)
from tritonclient.grpc.model_config_pb2 import ModelConfig
from tritonclient.utils import TRITON_RESERVED_REQUEST_PARAMS
from tritonclient.utils._dtypes import DATATYPES


def config(text: str) -> ModelConfig:
    """Parse a ``config.pbtxt``-style text into a ``ModelConfig``."""
    return text_format.Parse(text, ModelConfig())


BATCHED = config(
    """
    name: "batched"
    max_batch_size: 8
    input [
      { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
      { name: "INPUT1" data_type: TYPE_INT32 dims: [ -1, 2 ] }
    ]
    output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
    """
)

NOBATCH = config(
    """
    name: "nobatch"
    max_batch_size: 0
    input [ { name: "IN" data_type: TYPE_INT64 dims: [ 2, -1 ] } ]
    output [ { name: "OUT" data_type: TYPE_INT64 dims: [ 2, -1 ] } ]
    """
)

OPTIONAL = config(
    """
    name: "opt"
    max_batch_size: 0
    input [
      { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] },
      { name: "INPUT1" data_type: TYPE_FP32 dims: [ 1 ] },
      { name: "INPUT2" data_type: TYPE_FP32 dims: [ 1 ] },
      { name: "INPUT3" data_type: TYPE_FP32 dims: [ 1 ] optional: true }
    ]
    output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
    """
)

ALL_REQUIRED = config(
    """
    name: "input_all_required"
    max_batch_size: 0
    input [
      { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] },
      { name: "INPUT1" data_type: TYPE_FP32 dims: [ 1 ] },
      { name: "INPUT2" data_type: TYPE_FP32 dims: [ 1 ] }
    ]
    output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
    """
)

STRINGS = config(
    """
    name: "strings"
    max_batch_size: 4
    input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
    output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] } ]
    """
)

SEQUENCE = config(
    """
    name: "seq"
    max_batch_size: 4
    input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
    output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
    sequence_batching {
      control_input [
        { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
        { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
        { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
      ]
      state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32
                dims: [ 1 ] } ]
    }
    """
)


def seq_config(corrid_type: str | None, *, iterative: bool = False) -> ModelConfig:
    """A non-batching sequence model, with a CORRID control of ``corrid_type`` if given."""
    controls = ""
    if corrid_type is not None:
        controls = (
            'control_input [ { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID '
            f"data_type: {corrid_type} }} ] }} ]"
        )
    return config(
        f"""
        name: "seq_{corrid_type}"
        max_batch_size: 0
        input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
        output [ {{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
        sequence_batching {{ {controls} iterative_sequence: {str(iterative).lower()} }}
        """
    )


PRIORITY = config(
    """
    name: "prio"
    max_batch_size: 8
    input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
    output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
    dynamic_batching { priority_levels: 3 default_priority_level: 2 }
    """
)


def tensor(name: str, datatype: str, shape: tuple[int, ...], data: Any = None) -> Tensor:
    """A tensor whose data matches ``shape`` unless ``data`` is given."""
    if data is None:
        count = int(np.prod(shape)) if all(d >= 0 for d in shape) else 0
        if datatype == "BYTES":
            flat = np.array([b"x"] * count, dtype=np.object_)
        else:
            flat = np.zeros(count, dtype=DATATYPES[datatype].numpy_type)
        data = flat.reshape(shape) if all(d >= 0 for d in shape) else flat
    return Tensor(name, datatype, shape, np.asarray(data))


def batched_request(batch: int = 2, **kwargs: Any) -> InferRequest:
    return InferRequest(
        "batched",
        inputs=[
            tensor("INPUT0", "FP32", (batch, 4)),
            tensor("INPUT1", "INT32", (batch, 3, 2)),
        ],
        **kwargs,
    )


def reject(request: InferRequest, cfg: ModelConfig, *, version: int = 1, **kwargs: Any) -> str:
    """Validate, expect INVALID_ARG, return the message."""
    with pytest.raises(ServerError) as info:
        validate_request(request, cfg, version=version, **kwargs)
    assert info.value.kind is ErrorKind.INVALID_ARG, info.value
    return info.value.message


# -- a valid request of each kind passes -------------------------------------------------


def test_valid_batched_request_passes() -> None:
    validate_request(batched_request(), BATCHED, version=1)
    assert batch_size_of(batched_request(3), BATCHED) == 3


def test_valid_nobatch_request_with_wildcard_passes() -> None:
    request = InferRequest("nobatch", inputs=[tensor("IN", "INT64", (2, 7))])
    validate_request(request, NOBATCH, version=1)
    assert batch_size_of(request, NOBATCH) == 1


def test_zero_element_tensor_is_valid() -> None:
    request = InferRequest("nobatch", inputs=[tensor("IN", "INT64", (2, 0))])
    validate_request(request, NOBATCH, version=1)


# -- names --------------------------------------------------------------------------------


def test_unexpected_input_name() -> None:
    request = batched_request()
    request.inputs[1] = tensor("BOGUS", "INT32", (2, 3, 2))
    message = reject(request, BATCHED)
    assert message == "unexpected inference input 'BOGUS' for model 'batched'"


def test_extra_unknown_input_reports_the_count_as_triton_does() -> None:
    request = batched_request()
    request.inputs.append(tensor("BOGUS", "INT32", (2, 1)))
    message = reject(request, BATCHED)
    assert "expected 2 inputs but got 3 inputs for model 'batched'" in message
    # Triton lists them in its std::unordered_map's order (checked on Triton 2.51), and
    # writes the empty missing list as "]".
    assert "Got input(s) ['BOGUS','INPUT1','INPUT0'], but missing required input(s) ]." in message


def test_missing_required_inputs_message_matches_triton() -> None:
    request = InferRequest("input_all_required", inputs=[tensor("INPUT0", "FP32", (1,))], id="abc")
    message = reject(request, ALL_REQUIRED)
    assert message == (
        "[request id: abc] expected 3 inputs but got 1 inputs for model 'input_all_required'. "
        "Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1','INPUT2']. "
        "Please provide all required input(s)."
    )


def test_no_inputs_at_all() -> None:
    message = reject(InferRequest("input_all_required"), ALL_REQUIRED)
    assert message.endswith(
        "expected 3 inputs but got 0 inputs for model 'input_all_required'. Got input(s) [], "
        "but missing required input(s) ['INPUT0','INPUT1','INPUT2']. Please provide all "
        "required input(s)."
    )
    assert message.startswith("[request id: <id_unknown>] ")


def test_optional_input_may_be_absent_or_present() -> None:
    three = [tensor(f"INPUT{i}", "FP32", (1,)) for i in range(3)]
    validate_request(InferRequest("opt", inputs=list(three)), OPTIONAL, version=1)
    four = [*three, tensor("INPUT3", "FP32", (1,))]
    validate_request(InferRequest("opt", inputs=four), OPTIONAL, version=1)


def test_missing_required_input_with_optional_inputs_gives_range_message() -> None:
    request = InferRequest("opt", inputs=[tensor("INPUT0", "FP32", (1,))])
    message = reject(request, OPTIONAL)
    assert "expected number of inputs between 3 and 4 but got 1 inputs for model 'opt'" in message
    assert "missing required input(s) ['INPUT1','INPUT2']" in message


def test_input_count_within_range_is_accepted_even_without_a_required_input() -> None:
    # Triton 2.51 checks only the count: 3 is within [3, 4], so a request that sends the
    # optional INPUT3 instead of the required INPUT2 reaches the model (conformance case
    # http/infer/optional-model-input0-input1-input3).
    inputs = [tensor(n, "FP32", (1,)) for n in ("INPUT0", "INPUT1", "INPUT3")]
    validate_request(InferRequest("opt", inputs=inputs), OPTIONAL, version=1)


def test_duplicate_input_name() -> None:
    request = batched_request()
    request.inputs.append(tensor("INPUT0", "FP32", (2, 4)))
    assert "input 'INPUT0' already exists in request" in reject(request, BATCHED)


def test_requested_unknown_output() -> None:
    request = batched_request(outputs=[RequestedOutput("OUTPUT0"), RequestedOutput("NOPE")])
    assert reject(request, BATCHED) == "unexpected inference output 'NOPE' for model 'batched'"


def test_requested_known_output_passes() -> None:
    validate_request(batched_request(outputs=[RequestedOutput("OUTPUT0")]), BATCHED, version=1)


def test_duplicate_requested_output_counts_once() -> None:
    # Triton 2.51 keeps requested outputs in a set: a repeated name is not an error there
    # (the 2.51 profile); 2.73 refuses it (#8741, tests/test_compat.py).
    request = batched_request(outputs=[RequestedOutput("OUTPUT0"), RequestedOutput("OUTPUT0")])
    validate_request(request, BATCHED, version=1, duplicate_outputs=False)
    assert reject(request, BATCHED) == (
        "[request id: <id_unknown>] output 'OUTPUT0' already exists in request"
    )


# -- datatype -----------------------------------------------------------------------------


def test_datatype_mismatch() -> None:
    request = batched_request(id="r1")
    request.inputs[0] = tensor("INPUT0", "INT32", (2, 4))
    assert reject(request, BATCHED) == (
        "[request id: r1] inference input 'INPUT0' data-type is 'INT32', but model 'batched' "
        "expects 'FP32'"
    )


def test_unknown_datatype_string_is_reported_as_invalid() -> None:
    request = batched_request()
    request.inputs[0] = Tensor("INPUT0", "FLOAT", (2, 4), np.zeros((2, 4), np.float32))
    assert "data-type is '<invalid>', but model 'batched' expects 'FP32'" in reject(
        request, BATCHED
    )


def test_bytes_matches_type_string_config() -> None:
    request = InferRequest("strings", inputs=[tensor("TEXT", "BYTES", (1, 3))])
    validate_request(request, STRINGS, version=1)
    request.inputs[0] = tensor("TEXT", "INT8", (1, 3))
    assert "data-type is 'INT8', but model 'strings' expects 'BYTES'" in reject(request, STRINGS)


# -- batch dimension ----------------------------------------------------------------------


def test_batched_model_requires_batch_dimension() -> None:
    request = batched_request()
    request.inputs[0] = Tensor("INPUT0", "FP32", (), np.zeros((), np.float32))
    assert "input 'INPUT0' has no shape but model requires batch dimension for 'batched'" in reject(
        request, BATCHED
    )


def test_batch_size_above_max() -> None:
    message = reject(batched_request(9), BATCHED)
    assert message.endswith("inference request batch-size must be <= 8 for 'batched'")


def test_batch_size_at_max_passes() -> None:
    validate_request(batched_request(8), BATCHED, version=1)


def test_batch_size_zero_is_sized_as_triton_sizes_it() -> None:
    # Triton 2.51 sizes a batch of 0 as if the request had no batch dimension, and names the
    # first input of its map order (INPUT1, then INPUT0).
    message = reject(batched_request(0), BATCHED)
    assert "input byte size mismatch for input 'INPUT1' for model 'batched'. Expected" in message


def test_mixed_batch_sizes() -> None:
    request = batched_request(2)
    request.inputs[1] = tensor("INPUT1", "INT32", (3, 3, 2))
    # Triton visits INPUT1 first (its map order), so INPUT0 is the one that does not match.
    assert "input 'INPUT0' batch size does not match other inputs for 'batched'" in reject(
        request, BATCHED
    )


def test_batch_dim_omitted_is_a_shape_error_with_triton_note() -> None:
    request = batched_request()
    # [2] is read as batch 2 with no element dims, as Triton reads it.
    request.inputs[0] = tensor("INPUT0", "FP32", (2,))
    message = reject(request, BATCHED)
    assert "unexpected shape for input 'INPUT0' for model 'batched'. Expected [-1,4], got [2]" in (
        message
    )
    assert "NOTE: Setting a non-zero max_batch_size" in message


def test_shape_tensor_keeps_its_full_shape() -> None:
    cfg = config(
        """
        name: "shape_tensor"
        max_batch_size: 8
        input [
          { name: "DATA" data_type: TYPE_FP32 dims: [ -1 ] },
          { name: "SHAPE" data_type: TYPE_INT32 dims: [ 2 ] is_shape_tensor: true }
        ]
        output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
        """
    )
    request = InferRequest(
        "shape_tensor", inputs=[tensor("DATA", "FP32", (3, 5)), tensor("SHAPE", "INT32", (2,))]
    )
    validate_request(request, cfg, version=1)
    assert batch_size_of(request, cfg) == 3


# -- shape ----------------------------------------------------------------------------------


def test_wildcard_dims_accept_any_size() -> None:
    for n in (1, 5, 100):
        request = batched_request()
        request.inputs[1] = tensor("INPUT1", "INT32", (2, n, 2))
        validate_request(request, BATCHED, version=1)


def test_fixed_dim_mismatch() -> None:
    request = batched_request()
    request.inputs[1] = tensor("INPUT1", "INT32", (2, 3, 3))
    assert "Expected [-1,-1,2], got [2,3,3]" in reject(request, BATCHED)


def test_rank_mismatch() -> None:
    request = InferRequest("nobatch", inputs=[tensor("IN", "INT64", (2, 3, 1))])
    message = reject(request, NOBATCH)
    assert "unexpected shape for input 'IN' for model 'nobatch'. Expected [2,-1], got [2,3,1]" in (
        message
    )


def test_wildcard_in_request_shape() -> None:
    request = InferRequest("nobatch", inputs=[tensor("IN", "INT64", (2, -1))])
    assert "All input dimensions should be specified for input 'IN' for model 'nobatch', " in (
        reject(request, NOBATCH)
    )


def test_negative_dimension() -> None:
    request = InferRequest("nobatch", inputs=[tensor("IN", "INT64", (2, -3))])
    message = reject(request, NOBATCH)
    assert "dimensions must be non-negative, got [2,-3]" in message


def test_negative_batch_dimension() -> None:
    request = batched_request()
    request.inputs[0] = tensor("INPUT0", "FP32", (-2, 4))
    request.inputs[1] = tensor("INPUT1", "INT32", (-2, 3, 2))
    assert "non-negative" in reject(request, BATCHED)


# -- data -----------------------------------------------------------------------------------


def test_fixed_size_element_count_mismatch_reports_bytes() -> None:
    request = batched_request()
    request.inputs[0] = tensor("INPUT0", "FP32", (2, 4), np.zeros(10, np.float32))
    assert (
        "input byte size mismatch for input 'INPUT0' for model 'batched'. Expected 32, got 40"
        in reject(request, BATCHED)
    )


def test_bytes_too_few_elements() -> None:
    data = np.array([b"a", b"b"], dtype=np.object_)
    request = InferRequest("strings", inputs=[tensor("TEXT", "BYTES", (1, 3), data)])
    assert "expected 3 string elements for inference input 'TEXT' for model 'strings', got 2" in (
        reject(request, STRINGS)
    )


def test_bytes_too_many_elements() -> None:
    data = np.array([b"a"] * 5, dtype=np.object_)
    request = InferRequest("strings", inputs=[tensor("TEXT", "BYTES", (1, 3), data)])
    assert (
        "unexpected number of string elements 5 for inference input 'TEXT' for model "
        "'strings', expecting 3" in reject(request, STRINGS)
    )


def test_bytes_needs_object_array() -> None:
    data = np.array([b"a", b"b", b"c"])  # dtype S1, not object
    request = InferRequest("strings", inputs=[tensor("TEXT", "BYTES", (1, 3), data)])
    assert "numpy dtype '|S1'" in reject(request, STRINGS)


def test_numpy_dtype_must_match_datatype() -> None:
    request = batched_request()
    request.inputs[0] = tensor("INPUT0", "FP32", (2, 4), np.zeros((2, 4), np.float64))
    message = reject(request, BATCHED)
    assert "numpy dtype 'float64'" in message and "datatype 'FP32'" in message


def test_bool_and_bf16_arrays_are_accepted() -> None:
    cfg = config(
        """
        name: "mixed"
        max_batch_size: 0
        input [
          { name: "B" data_type: TYPE_BOOL dims: [ 2 ] },
          { name: "H" data_type: TYPE_BF16 dims: [ 2 ] }
        ]
        output [ { name: "O" data_type: TYPE_BOOL dims: [ 2 ] } ]
        """
    )
    request = InferRequest(
        "mixed",
        inputs=[
            Tensor("B", "BOOL", (2,), np.array([True, False])),
            Tensor("H", "BF16", (2,), np.zeros(2, ml_dtypes.bfloat16)),
        ],
    )
    validate_request(request, cfg, version=1)


def test_non_native_byte_order_is_accepted() -> None:
    request = batched_request()
    request.inputs[0] = tensor("INPUT0", "FP32", (2, 4), np.zeros((2, 4), ">f4"))
    validate_request(request, BATCHED, version=1)


# -- parameters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", [k for k in TRITON_RESERVED_REQUEST_PARAMS if k not in PASSED_THROUGH_PARAMS]
)
def test_reserved_parameter_names(key: str) -> None:
    message = reject(batched_request(parameters={key: 1}), BATCHED)
    assert message == f"parameter '{key}' is reserved for Triton usage and should not be specified."


@pytest.mark.parametrize("key", sorted(PASSED_THROUGH_PARAMS))
def test_headers_and_binary_data_output_reach_the_model(key: str) -> None:
    # A real Triton server delivers these reserved names as custom parameters.
    validate_request(batched_request(parameters={key: "x"}), BATCHED, version=1)


def test_triton_prefix_is_reserved() -> None:
    message = reject(batched_request(parameters={"triton_foo": True}), BATCHED)
    assert message == (
        "parameter keys starting with 'triton_' are reserved for Triton usage and should not "
        "be specified."
    )


def test_custom_and_allowed_triton_parameters_pass() -> None:
    params: dict[str, bool | int | float | str] = {
        "my_param": "x",
        "n": 3,
        "triton_enable_empty_final_response": True,
    }
    validate_request(batched_request(parameters=params), BATCHED, version=1)


# -- sequences ------------------------------------------------------------------------------


def seq_request(corr_id: int | str, batch: int = 1, **kwargs: Any) -> InferRequest:
    return InferRequest(
        "seq", inputs=[tensor("INPUT", "INT32", (batch, 1))], correlation_id=corr_id, **kwargs
    )


def test_control_and_state_inputs_are_not_required() -> None:
    assert implicit_input_names(SEQUENCE) == {"START", "READY", "CORRID", "STATE_IN"}
    validate_request(seq_request(7, sequence_start=True), SEQUENCE, version=1)


def test_control_inputs_listed_under_input_are_not_required() -> None:
    # Some configs (e.g. auto-completed Python-backend ones) also list them under input.
    cfg = config(
        """
        name: "seq_listed"
        max_batch_size: 0
        input [
          { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] },
          { name: "START" data_type: TYPE_INT32 dims: [ 1 ] },
          { name: "CORRID" data_type: TYPE_UINT64 dims: [ 1 ] },
          { name: "STATE_IN" data_type: TYPE_INT32 dims: [ 1 ] }
        ]
        output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
        sequence_batching {
          control_input [
            { name: "START"
              control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
            { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
          ]
          state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32
                    dims: [ 1 ] } ]
        }
        """
    )
    request = InferRequest("seq_listed", inputs=[tensor("INPUT", "INT32", (1,))], correlation_id=3)
    validate_request(request, cfg, version=1)
    request.inputs.append(tensor("START", "INT32", (1,)))
    assert "expected 1 inputs but got 2 inputs for model 'seq_listed'" in reject(request, cfg)


def test_control_inputs_may_not_be_sent() -> None:
    request = seq_request(7)
    request.inputs.append(tensor("START", "INT32", (1, 1)))
    message = reject(request, SEQUENCE)
    assert "expected 1 inputs but got 2 inputs" in message


@pytest.mark.parametrize("corr_id", [0, ""])
def test_sequence_model_needs_correlation_id(corr_id: int | str) -> None:
    assert reject(seq_request(corr_id), SEQUENCE) == (
        "inference request to model 'seq' must specify a non-zero or non-empty correlation ID"
    )


def test_iterative_sequence_model_needs_no_correlation_id() -> None:
    cfg = seq_config(None, iterative=True)
    request = InferRequest(cfg.name, inputs=[tensor("INPUT", "INT32", (1,))])
    validate_request(request, cfg, version=1)


def test_sequence_batch_size_must_be_one() -> None:
    assert reject(seq_request(7, batch=2), SEQUENCE) == (
        "inference request to model 'seq' must specify batch-size 1 due to requirements of "
        "sequence batcher"
    )


def test_string_correlation_id_with_numeric_corrid_control() -> None:
    message = reject(seq_request("abc"), SEQUENCE)
    assert (
        "sequence batching control 'CORRID' data-type is 'BYTES', but model 'seq' expects "
        "'UINT64'" in message
    )


def test_integer_correlation_id_with_string_corrid_control() -> None:
    cfg = seq_config("TYPE_STRING")
    request = InferRequest(cfg.name, inputs=[tensor("INPUT", "INT32", (1,))], correlation_id=5)
    message = reject(request, cfg)
    assert "data-type is 'UINT64', but model 'seq_TYPE_STRING' expects 'BYTES'" in message
    request.correlation_id = "five"
    validate_request(request, cfg, version=1)


@pytest.mark.parametrize("corrid_type", ["TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32"])
def test_integer_correlation_id_with_numeric_corrid_controls(corrid_type: str) -> None:
    cfg = seq_config(corrid_type)
    request = InferRequest(cfg.name, inputs=[tensor("INPUT", "INT32", (1,))], correlation_id=2**40)
    validate_request(request, cfg, version=1)


def test_any_correlation_id_without_corrid_control() -> None:
    cfg = seq_config(None)
    for corr_id in (3, "s"):
        request = InferRequest(
            cfg.name, inputs=[tensor("INPUT", "INT32", (1,))], correlation_id=corr_id
        )
        validate_request(request, cfg, version=1)


def test_correlation_id_out_of_uint64_range() -> None:
    assert "invalid correlation ID -1" in reject(seq_request(-1), SEQUENCE)
    assert "invalid correlation ID" in reject(seq_request(2**64), SEQUENCE)


def test_correlation_id_on_non_sequence_model_is_ignored() -> None:
    validate_request(batched_request(correlation_id="xyz"), BATCHED, version=1)
    validate_request(batched_request(correlation_id=5, sequence_start=True), BATCHED, version=1)


# -- priority -------------------------------------------------------------------------------


def prio_request(priority: int) -> InferRequest:
    return InferRequest("prio", inputs=[tensor("X", "FP32", (1, 1))], priority=priority)


def test_priority_out_of_range_falls_back_like_triton() -> None:
    validate_request(prio_request(7), PRIORITY, version=1)
    assert effective_priority(prio_request(7), PRIORITY) == 2
    assert effective_priority(prio_request(0), PRIORITY) == 2
    assert effective_priority(prio_request(1), PRIORITY) == 1
    assert effective_priority(prio_request(3), PRIORITY) == 3
    assert effective_priority(prio_request(3), BATCHED) == 0


def test_priority_out_of_range_strict() -> None:
    message = reject(prio_request(4), PRIORITY, strict_priority=True)
    assert "priority 4 is out of range for model 'prio'" in message
    validate_request(prio_request(3), PRIORITY, version=1, strict_priority=True)
    # Models without priority levels accept anything, even when strict.
    validate_request(batched_request(priority=99), BATCHED, version=1, strict_priority=True)


def test_negative_priority() -> None:
    assert "expected value >= 0" in reject(prio_request(-1), PRIORITY)


# -- misc -----------------------------------------------------------------------------------


def test_version_mismatch_is_internal() -> None:
    with pytest.raises(ServerError) as info:
        validate_request(batched_request(model_version=2), BATCHED, version=1)
    assert info.value.kind is ErrorKind.INTERNAL
    validate_request(batched_request(model_version=1), BATCHED, version=1)
    validate_request(batched_request(model_version=-1), BATCHED, version=3)


def test_log_request_prefix() -> None:
    assert log_request_prefix(InferRequest("m", id="7")) == "[request id: 7] "
    assert log_request_prefix(InferRequest("m")) == "[request id: <id_unknown>] "


def test_batch_size_of_with_no_batched_input() -> None:
    cfg = config(
        """
        name: "all_optional"
        max_batch_size: 4
        input [ { name: "A" data_type: TYPE_FP32 dims: [ 1 ] optional: true } ]
        output [ { name: "B" data_type: TYPE_FP32 dims: [ 1 ] } ]
        """
    )
    request = InferRequest("all_optional")
    validate_request(request, cfg, version=1)
    assert batch_size_of(request, cfg) == 1
