"""The sans-I/O gRPC codec: round trips, parameters, framing, Triton's error messages."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mock_server.core.errors import ErrorKind
from tests import grpc_requests
from tritonclient._codec import (
    checks,
    errors,
    grpc_client,
    grpc_common,
    grpc_framing,
    grpc_server,
    types,
)
from tritonclient.grpc import InferResult
from tritonclient.grpc import service_pb2 as pb
from tritonclient.utils import (
    InferenceServerException,
    InferenceServerProtocolError,
    InferenceServerUnavailableError,
)
from tritonclient.utils._dtypes import DATATYPES

FIXED = [name for name, info in DATATYPES.items() if info.byte_size is not None]


@dataclass
class Out:
    """A response tensor (what the core's ``Tensor`` offers the encoder)."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: np.ndarray


@dataclass
class Resp:
    """A response (what the core's ``InferResponse`` offers the encoder)."""

    model_name: str = "m"
    model_version: str = "1"
    id: str = "rid"
    outputs: list[Out] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and elements (bitwise for fixed-size types, so NaNs compare)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == np.object_:
        return bool(a.tolist() == b.tolist())
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def wire(request: pb.ModelInferRequest) -> pb.ModelInferRequest:
    return pb.ModelInferRequest.FromString(request.SerializeToString())


# -- strategies ------------------------------------------------------------------------------

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@st.composite
def tensors(draw: st.DrawFn, datatype: str) -> np.ndarray:
    shape = draw(shapes)
    if datatype == "BYTES":
        count = math.prod(shape)
        items = draw(
            st.lists(
                st.one_of(st.binary(max_size=8), st.text(max_size=5)),
                min_size=count,
                max_size=count,
            )
        )
        out = np.empty(count, dtype=np.object_)
        out[:] = [x.encode() if isinstance(x, str) else x for x in items]
        return out.reshape(shape)
    if datatype == "BF16":
        bits = draw(hnp.arrays(np.uint16, shape))
        return bits.view(ml_dtypes.bfloat16)
    return draw(hnp.arrays(np.dtype(DATATYPES[datatype].numpy_type), shape))


def roundtrip(arrays: dict[str, tuple[str, np.ndarray]], *, parts: bool) -> dict[str, np.ndarray]:
    """client build -> wire -> server decode -> server encode -> wire -> client decode."""
    inputs = [grpc_client.InputTensor(n, dt, a.shape, a) for n, (dt, a) in arrays.items()]
    if parts:
        message, raw = grpc_requests.request_parts("m", inputs, request_id="rid")
        request, views = grpc_framing.parse_infer_request(
            grpc_framing.serialize_infer_request(message, raw)
        )
        decoded = grpc_server.decode_infer_request(request, views)
    else:
        decoded = grpc_server.decode_infer_request(wire(grpc_requests.infer_request("m", inputs)))
    response = Resp(outputs=[Out(t.name, t.datatype, t.shape, t.data) for t in decoded.inputs])
    if parts:
        body, out_raw = grpc_server.encode_infer_response_parts(response)
        reply, out_views = grpc_framing.parse_infer_response(
            grpc_framing.serialize_infer_response(body, out_raw)
        )
        return {
            name: grpc_client.check_infer_response(reply, out_views).get(name)  # type: ignore[misc]
            for name in arrays
        }
    full = pb.ModelInferResponse.FromString(
        grpc_server.encode_infer_response(response).SerializeToString()
    )
    return {name: grpc_client.check_infer_response(full).get(name) for name in arrays}  # type: ignore[misc]


# -- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("datatype", list(DATATYPES))
@pytest.mark.parametrize("parts", [True, False], ids=["framed", "message"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_roundtrip_every_datatype_and_rank(datatype: str, parts: bool, data: st.DataObject) -> None:
    array = data.draw(tensors(datatype))
    out = roundtrip({"X": (datatype, array)}, parts=parts)["X"]
    assert same(out, array), (out, array)


def test_roundtrip_many_inputs_and_ranks() -> None:
    arrays = {
        "scalar": ("FP64", np.array(2.5)),
        "vec": ("INT8", np.array([-128, 0, 127], dtype=np.int8)),
        "mat": ("UINT16", np.arange(6, dtype=np.uint16).reshape(2, 3)),
        "cube": ("BOOL", np.ones((2, 1, 2), dtype=bool)),
        "empty": ("FP32", np.zeros((0, 3), dtype=np.float32)),
        "words": ("BYTES", np.array([["a", "bb"], ["", "ccc"]], dtype=np.object_)),
        "empty_words": ("BYTES", np.empty((2, 0), dtype=np.object_)),
    }
    expected = dict(arrays)
    expected["words"] = ("BYTES", np.array([[b"a", b"bb"], [b"", b"ccc"]], dtype=np.object_))
    for parts in (True, False):
        out = roundtrip(arrays, parts=parts)
        for name, (_, array) in expected.items():
            assert same(out[name], array), name


def test_raw_inputs_are_views_of_the_received_message() -> None:
    array = np.arange(1 << 16, dtype=np.float32)
    message, raw = grpc_requests.request_parts(
        "m", [grpc_client.InputTensor("X", "FP32", array.shape, array)]
    )
    assert isinstance(raw[0], memoryview) and raw[0].obj is not None  # no copy when building
    data = grpc_framing.serialize_infer_request(message, raw)
    request, views = grpc_framing.parse_infer_request(data)
    decoded = grpc_server.decode_infer_request(request, views)
    x = decoded.inputs[0].data
    assert not x.flags.writeable and not x.flags.owndata
    assert np.array_equal(x, array)


def test_non_contiguous_and_big_endian_inputs() -> None:
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    swapped = base.astype(">i4")
    for array in (base.T, base[:, ::2], swapped):
        out = roundtrip({"X": ("INT32", array)}, parts=True)["X"]
        assert np.array_equal(out, array) and out.dtype == np.int32


@pytest.mark.parametrize("datatype", [d for d in DATATYPES if d not in ("FP16", "BF16")])
def test_typed_contents_roundtrip(datatype: str) -> None:
    rng = np.random.default_rng(0)
    array: np.ndarray
    expected: np.ndarray
    if datatype == "BYTES":
        array = np.array([["é", b"\x00\xff"], [b"", "日本"]], dtype=np.object_)
        expected = np.array([["é".encode(), b"\x00\xff"], [b"", "日本".encode()]], np.object_)
    elif datatype == "BOOL":
        array = expected = rng.random((2, 3)) > 0.5
    else:
        dtype = np.dtype(DATATYPES[datatype].numpy_type)
        array = expected = (rng.random((2, 3)) * 100).astype(dtype)
    request = wire(
        grpc_requests.infer_request(
            "m", [grpc_client.InputTensor("X", datatype, array.shape, array)], typed_contents=True
        )
    )
    assert not request.raw_input_contents and request.inputs[0].HasField("contents")
    decoded = grpc_server.decode_infer_request(request)
    assert same(decoded.inputs[0].data, expected)
    # The client reads typed contents too (servers other than Triton may send them).
    response = pb.ModelInferResponse()
    out = response.outputs.add(name="X", datatype=datatype, shape=array.shape)
    out.contents.CopyFrom(request.inputs[0].contents)
    assert same(grpc_client.check_infer_response(response).get("X"), expected)  # type: ignore[arg-type]


def test_typed_contents_keep_the_low_order_bytes() -> None:
    request = pb.ModelInferRequest(model_name="m")
    tensor = request.inputs.add(name="X", datatype="UINT8", shape=[3])
    tensor.contents.uint_contents.extend([300, 255, 256])
    signed = request.inputs.add(name="Y", datatype="INT8", shape=[2])
    signed.contents.int_contents.extend([-1, 200])
    decoded = grpc_server.decode_infer_request(request)
    assert decoded.inputs[0].data.tolist() == [44, 255, 0]
    assert decoded.inputs[1].data.tolist() == [-1, -56]


def test_fp16_and_bf16_have_no_typed_contents() -> None:
    for datatype, dtype in (("FP16", np.float16), ("BF16", ml_dtypes.bfloat16)):
        array = np.zeros(2, dtype=dtype)
        with pytest.raises(InferenceServerException, match="no typed contents"):
            grpc_requests.infer_request(
                "m", [grpc_client.InputTensor("X", datatype, [2], array)], typed_contents=True
            )


def test_bytes_non_ascii_and_nul() -> None:
    words = np.array(["héllo", "日本語", "\x00", b"\xff\xfe", ""], dtype=np.object_)
    out = roundtrip({"W": ("BYTES", words)}, parts=True)["W"]
    assert out.tolist() == ["héllo".encode(), "日本語".encode(), b"\x00", b"\xff\xfe", b""]
    fixed = np.array([b"ab", b"c"], dtype=np.bytes_)
    assert roundtrip({"W": ("BYTES", fixed)}, parts=False)["W"].tolist() == [b"ab", b"c"]


def test_bf16_from_float32_and_bfloat16() -> None:
    as_bf16 = np.array([1.5, -2.0, 3.140625], dtype=ml_dtypes.bfloat16)
    out = roundtrip({"B": ("BF16", as_bf16)}, parts=True)["B"]
    assert out.dtype == ml_dtypes.bfloat16 and same(out, as_bf16)
    as_fp32 = np.array([1.5, -2.0, 3.14159], dtype=np.float32)  # truncated to the upper half
    out = roundtrip({"B": ("BF16", as_fp32)}, parts=True)["B"]
    assert out.astype(np.float32).tolist() == [1.5, -2.0, 3.140625]


def test_dtype_mismatch_is_a_client_error() -> None:
    with pytest.raises(InferenceServerException, match="unexpected numpy dtype"):
        grpc_requests.infer_request(
            "m", [grpc_client.InputTensor("X", "INT32", [2], np.zeros(2, dtype=np.int64))]
        )
    with pytest.raises(InferenceServerException, match="neither data nor"):
        grpc_requests.infer_request("m", [grpc_client.InputTensor("X", "INT32", [2])])


def test_raw_bytes_inputs_pass_through() -> None:
    request = grpc_requests.infer_request(
        "m", [grpc_client.InputTensor("X", "INT32", [2], b"\x01\x00\x00\x00\x02\x00\x00\x00")]
    )
    assert grpc_server.decode_infer_request(request).inputs[0].data.tolist() == [1, 2]


# -- request parameters --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sequence_id", "expected"),
    [(42, 42), ("corr-7", "corr-7"), (2**64 - 1, 2**64 - 1), (2**63, 2**63), (-1, 2**64 - 1)],
)
def test_sequence_ids(sequence_id: int | str, expected: int | str) -> None:
    request = wire(
        grpc_requests.infer_request(
            "m", [], sequence_id=sequence_id, sequence_start=True, sequence_end=False
        )
    )
    kind = request.parameters["sequence_id"].WhichOneof("parameter_choice")
    assert kind == ("string_param" if isinstance(sequence_id, str) else "int64_param")
    decoded = grpc_server.decode_infer_request(request)
    assert decoded.correlation_id == expected
    assert (decoded.sequence_start, decoded.sequence_end) == (True, False)


def test_no_sequence_parameters_for_id_zero() -> None:
    for sequence_id in (0, ""):
        request = grpc_requests.infer_request("m", [], sequence_id=sequence_id, sequence_start=True)
        assert "sequence_id" not in request.parameters
        assert "sequence_start" not in request.parameters


def test_reserved_request_parameters() -> None:
    request = wire(
        grpc_requests.infer_request(
            "m",
            [],
            priority=3,
            timeout=1500,
            enable_empty_final_response=True,
            parameters={"flag": True, "n": -5, "x": 0.25, "s": "text"},
        )
    )
    assert request.parameters["priority"].WhichOneof("parameter_choice") == "uint64_param"
    assert request.parameters["timeout"].WhichOneof("parameter_choice") == "int64_param"
    decoded = grpc_server.decode_infer_request(request)
    assert (decoded.priority, decoded.timeout_us) == (3, 1500)
    assert decoded.enable_empty_final_response
    assert decoded.parameters == {"flag": True, "n": -5, "x": 0.25, "s": "text"}
    assert isinstance(decoded.parameters["flag"], bool)


@pytest.mark.parametrize(
    "key", ["sequence_id", "priority", "timeout", "headers", "binary_data_output", "triton_x"]
)
def test_client_refuses_reserved_custom_parameters(key: str) -> None:
    with pytest.raises(InferenceServerException, match="reserved parameter"):
        grpc_requests.infer_request("m", [], parameters={key: 1})


param_values = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True),
    st.text(),
)


@given(value=param_values)
def test_parameter_conversion_both_ways(value: Any) -> None:
    param = pb.InferParameter.FromString(grpc_common.to_infer_parameter(value).SerializeToString())
    back = grpc_common.from_infer_parameter(param)
    assert type(back) is type(value)
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(back)  # type: ignore[arg-type]
    else:
        assert back == value
    expected = {bool: "bool_param", float: "double_param", str: "string_param"}.get(type(value))
    if isinstance(value, int) and not isinstance(value, bool):
        expected = "int64_param" if value < 2**63 else "uint64_param"
    assert param.WhichOneof("parameter_choice") == expected


def test_parameter_conversion_edges() -> None:
    assert grpc_common.from_infer_parameter(pb.InferParameter()) is None
    assert grpc_common.to_infer_parameter(np.int16(3)).int64_param == 3
    assert grpc_common.to_infer_parameter(np.bool_(True)).bool_param is True
    for bad in (2**64, -(2**63) - 1, b"bytes", None, [1]):
        with pytest.raises(InferenceServerException):
            grpc_common.to_infer_parameter(bad)
    message = pb.ModelInferResponse()
    grpc_common.set_parameters(message.parameters, {"a": 1, "b": "x"})
    message.parameters["unset"].SetInParent()
    assert grpc_common.get_parameters(message.parameters) == {"a": 1, "b": "x"}


def test_tensor_parameters_and_outputs() -> None:
    ref = types.SharedMemoryRef("region", 64, 16)
    request = wire(
        grpc_requests.infer_request(
            "m",
            [
                grpc_client.InputTensor("A", "INT32", [16], shared_memory=ref),
                grpc_client.InputTensor(
                    "B", "INT32", [1], np.zeros(1, np.int32), parameters={"custom": 5}
                ),
            ],
            [
                grpc_client.RequestedOutput("O0", class_count=3),
                grpc_client.RequestedOutput("O1", shared_memory=types.SharedMemoryRef("out", 8)),
            ],
        )
    )
    assert len(request.raw_input_contents) == 1
    assert "shared_memory_offset" not in request.outputs[1].parameters  # only when non-zero
    seen: list[tuple[str, types.SharedMemoryRef]] = []

    def resolver(name: str, where: types.SharedMemoryRef) -> bytes:
        seen.append((name, where))
        return bytes(64)

    decoded = grpc_server.decode_infer_request(request, shm_resolver=resolver)
    assert seen == [("A", ref)]
    a, b = decoded.inputs
    assert a.shared_memory == ref and a.data.tolist() == [0] * 16 and a.parameters == {}
    assert b.parameters == {"custom": 5} and b.shared_memory is None
    assert decoded.outputs[0].parameters == {"classification": 3}
    assert decoded.outputs[1].shared_memory == types.SharedMemoryRef("out", 8, 0)


# -- server-side errors (Triton's messages) -------------------------------------------------


def fails(request: pb.ModelInferRequest, match: str, kind: str = "INVALID_ARG", **kw: Any) -> None:
    with pytest.raises(errors.GrpcCodecError, match=match) as info:
        grpc_server.decode_infer_request(request, **kw)
    assert info.value.kind == kind


def two_inputs(*raw: bytes) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="m")
    request.inputs.add(name="A", datatype="INT32", shape=[2])
    request.inputs.add(name="B", datatype="INT32", shape=[2])
    request.raw_input_contents.extend(raw)
    return request


def test_count_mismatch() -> None:
    fails(two_inputs(bytes(8)), r"unable to find data for input tensor 'B' for model 'm'")
    fails(two_inputs(), r"unable to find data for input tensor 'A' for model 'm' in request\.")
    # Extra raw entries are ignored, as Triton 2.51 does.
    assert len(grpc_server.decode_infer_request(two_inputs(bytes(8), bytes(8), b"x")).inputs) == 2


def test_size_mismatch() -> None:
    fails(
        two_inputs(bytes(8), bytes(7)),
        r"\[request id: <id_unknown>\] input byte size mismatch for input 'B' for model 'm'\. "
        r"Expected 8, got 7",
    )
    # A whole number of elements that does not match the shape is left to the core's check.
    decoded = grpc_server.decode_infer_request(two_inputs(bytes(8), bytes(12)))
    assert decoded.inputs[1].data.shape == (3,)


def test_raw_and_contents_together() -> None:
    request = two_inputs(bytes(8))
    request.inputs[1].contents.int_contents.extend([1, 2])
    fails(request, r"contents field must not be specified when using raw_input_contents for 'B'")


def test_contents_of_the_wrong_type() -> None:
    request = pb.ModelInferRequest(model_name="m")
    request.inputs.add(name="X", datatype="FP32", shape=[1]).contents.int_contents.append(1)
    fails(
        request,
        r"unexpected explicit tensor data for input tensor 'X' for model 'm' of type 'INT32', "
        r"expected datatype 'FP32'",
    )


def test_shared_memory_parameter_errors() -> None:
    request = pb.ModelInferRequest(model_name="m")
    tensor = request.inputs.add(name="X", datatype="INT32", shape=[1])
    tensor.parameters["shared_memory_region"].string_param = "r"
    fails(request, r"'shared_memory_byte_size' must be specified along with")
    tensor.parameters["shared_memory_byte_size"].int64_param = 4
    tensor.contents.int_contents.append(1)
    fails(request, r"unexpected 'content' provided when using shared memory for input tensor 'X'")
    tensor.ClearField("contents")
    fails(request, r"not supported", kind="UNSUPPORTED")
    tensor.parameters["shared_memory_region"].int64_param = 1
    fails(request, r"'shared_memory_region' parameter for tensor 'X', expected string_param\.")
    del tensor.parameters["shared_memory_region"]
    fails(request, r"'shared_memory_byte_size' can not be specified without 'shared_memory_region'")


def test_request_parameter_type_errors() -> None:
    cases: list[tuple[str, Callable[[pb.InferParameter], None], str]] = [
        ("sequence_id", lambda p: setattr(p, "bool_param", True), "expected int64_param or"),
        ("sequence_start", lambda p: setattr(p, "int64_param", 1), "expected bool_param"),
        ("priority", lambda p: setattr(p, "int64_param", -1), "expected value >= 0"),
        ("priority", lambda p: setattr(p, "string_param", "1"), "int64_param or uint64_param"),
        ("timeout", lambda p: setattr(p, "uint64_param", 1), "expected int64_param"),
        ("custom", lambda p: setattr(p, "uint64_param", 1), "int64_param, bool_param, or string"),
        ("custom", lambda p: p.SetInParent(), "int64_param, bool_param, or string"),
        ("triton_enable_empty_final_response", lambda p: setattr(p, "int64_param", 1), "bool"),
        ("triton_other", lambda p: setattr(p, "bool_param", True), "reserved for Triton usage"),
    ]
    for key, setter, match in cases:
        request = pb.ModelInferRequest(model_name="m")
        setter(request.parameters[key])
        fails(request, match)


def test_classification_errors() -> None:
    request = pb.ModelInferRequest(model_name="m")
    output = request.outputs.add(name="O")
    output.parameters["classification"].string_param = "2"
    fails(request, r"invalid value type for 'classification' parameter, expected int64_param")
    output.parameters["classification"].int64_param = 0
    fails(request, r"invalid value for 'classification' parameter")
    output.parameters["classification"].int64_param = 2
    output.parameters["shared_memory_region"].string_param = "r"
    output.parameters["shared_memory_byte_size"].int64_param = 8
    fails(request, r"output can't set both 'shared_memory_region' and 'classification'")


def test_truncated_bytes() -> None:
    request = pb.ModelInferRequest(model_name="m")
    request.inputs.add(name="S", datatype="BYTES", shape=[1])
    request.raw_input_contents.append(b"\x05\x00\x00\x00ab")
    fails(
        request,
        r"incomplete string data for inference input 'S', expecting string of length 5 but "
        r"only 2 bytes available",
    )
    request.raw_input_contents[0] = b"\x01\x00\x00\x00a\x01\x00"
    fails(request, r"incomplete string length indicator for inference input 'S'")


def test_element_count_mismatch_is_left_to_the_core() -> None:
    request = pb.ModelInferRequest(model_name="m")
    request.inputs.add(name="S", datatype="BYTES", shape=[3])
    request.raw_input_contents.append(b"\x01\x00\x00\x00a\x00\x00\x00\x00")
    assert grpc_server.decode_infer_request(request).inputs[0].data.tolist() == [b"a", b""]


def test_unknown_datatype_and_negative_dims_are_left_to_the_core() -> None:
    request = pb.ModelInferRequest(model_name="m")
    request.inputs.add(name="A", datatype="FLOAT", shape=[2])
    request.inputs.add(name="B", datatype="INT32", shape=[-3])
    request.raw_input_contents.extend([bytes(8), bytes(12)])
    a, b = grpc_server.decode_infer_request(request).inputs
    assert a.data.size == 0 and b.data.size == 0 and b.shape == (-3,)


def test_model_versions() -> None:
    assert grpc_server.parse_model_version("", "m") == -1
    assert grpc_server.parse_model_version("3", "m") == 3
    with pytest.raises(errors.GrpcCodecError, match="failed to get model version from specified"):
        grpc_server.parse_model_version("x", "m")
    with pytest.raises(errors.GrpcCodecError, match="invalid model version specified '-1'"):
        grpc_server.parse_model_version("-1", "m")
    fails(pb.ModelInferRequest(model_name="m", model_version="v2"), "version string 'v2'")


# -- responses --------------------------------------------------------------------------------


def test_response_encoding() -> None:
    response = Resp(
        outputs=[
            Out("O", "INT32", (2,), np.array([1, 2], dtype=np.int32)),
            Out("Z", "FP32", (0,), np.zeros(0, dtype=np.float32)),
            Out("S", "INT32", (4,), np.zeros(4, dtype=np.int32)),
        ],
        parameters={"p": 1.5, "q": "x"},
    )
    shm = {"S": types.SharedMemoryRef("out", 16, 8)}
    message = grpc_server.encode_infer_response(response, shm_outputs=shm)
    assert (message.model_name, message.model_version, message.id) == ("m", "1", "rid")
    assert list(message.raw_output_contents) == [b"\x01\x00\x00\x00\x02\x00\x00\x00", b"", b""]
    assert grpc_client.response_parameters(message) == {"p": 1.5, "q": "x"}
    # Triton marks an output written to shared memory with nothing but its empty entry.
    assert grpc_common.get_parameters(message.outputs[2].parameters) == {}
    assert grpc_client.check_infer_response(message).get("S") is None  # data are in shared memory
    assert grpc_client.check_infer_response(message).get("Z").shape == (0,)  # type: ignore[union-attr]
    assert grpc_client.check_infer_response(message).get("missing") is None
    assert not grpc_client.is_final_response(message)
    with pytest.raises(errors.GrpcCodecError) as info:
        grpc_server.encode_infer_response(Resp(parameters={"b": b"raw"}))
    assert info.value.kind == "UNSUPPORTED"


def test_result_made_from_a_message_is_checked_as_the_clients_check() -> None:
    response = pb.ModelInferResponse()
    response.outputs.add(name="O", datatype="INT32", shape=[2])
    # No data for an output with elements: taken as written to shared memory.
    assert grpc_client.check_infer_response(response).get("O") is None
    response.raw_output_contents.append(b"\x00" * 6)
    with pytest.raises(InferenceServerException, match="needs 8 bytes of data, the response has 6"):
        InferResult(response).as_numpy("O")


def _response(*outputs: tuple[str, str, list[int]], raw: list[bytes] | None = None) -> Any:
    response = pb.ModelInferResponse(model_name="m")
    for name, datatype, shape in outputs:
        response.outputs.add(name=name, datatype=datatype, shape=shape)
    response.raw_output_contents.extend(raw or [])
    return response


def test_check_infer_response_decodes_once() -> None:
    data = np.array([1, 2], np.int32).tobytes()
    message = _response(("O", "INT32", [2]), ("B", "BYTES", [1]), raw=[data, b"\x01\0\0\0x"])
    outputs = grpc_client.check_infer_response(message, requested=checks.Requested(None))
    first, again = outputs.get("O"), outputs.get("O")
    assert first is not None and first.tolist() == [1, 2] and not first.flags.writeable
    assert again is first  # a read-only view is shared
    names = outputs.get("B")
    assert names is not None and names.tolist() == [b"x"]
    copy = outputs.get("B")  # a writable array: each later call gets its own
    assert copy is not names and copy is not None and copy.tolist() == [b"x"]
    assert outputs.get("missing") is None


def test_parse_infer_of_a_message_seen_before() -> None:
    """A response whose wire form is one checked before but for the raw payloads gives the
    arrays over its own bytes and the same checks; any other message is checked again."""
    from tritonclient.grpc._common import parse_infer

    model = f"m{np.random.randint(1 << 30)}"  # a message no other test made known

    def wire(a: list[int], b: float, model_name: str = model) -> bytes:
        message = _response(("O", "INT32", [1, 2]), ("F", "FP32", [1]))
        message.model_name = model_name
        message.raw_output_contents.extend(
            [np.array(a, np.int32).tobytes(), np.float32(b).tobytes()]
        )
        data: bytes = message.SerializeToString()
        return data

    requested = checks.Requested({"O": False, "F": False})
    first = wire([1, 2], 0.5)
    assert grpc_client.known_infer_outputs(first, requested) is None
    parse_infer(first, requested)
    for values in ([3, 4], [5, 6]):
        data = wire(values, 1.5)
        known = grpc_client.known_infer_outputs(data, requested)
        assert known is not None and known.peek("O").tolist() == [values]  # type: ignore[union-attr]
        result = parse_infer(data, requested)
        assert result.as_numpy("O").tolist() == [values]  # type: ignore[union-attr]
        assert result.as_numpy("F").tolist() == [1.5]  # type: ignore[union-attr]
        assert not result.as_numpy("O").flags.writeable  # type: ignore[union-attr]
        assert result.get_response().model_name == model
    with pytest.raises(InferenceServerProtocolError, match=r"no output 'P'"):
        parse_infer(first, checks.Requested({"O": False, "P": False}))
    other = wire([1, 2], 0.5, model[:-1] + "x")  # same length, another head
    assert grpc_client.known_infer_outputs(other, requested) is None
    bytes_output = _response(("B", "BYTES", [1]), raw=[b"\x01\0\0\0x"]).SerializeToString()
    parse_infer(bytes_output)
    assert grpc_client.known_infer_outputs(bytes_output, None) is None  # checked every time


def test_check_infer_response_typed_contents() -> None:
    message = _response(("O", "INT16", [2]))
    message.outputs[0].contents.int_contents.extend([1, -2])
    array = grpc_client.check_infer_response(message).get("O")
    assert array is not None and array.dtype == np.int16 and array.tolist() == [1, -2]
    message.outputs[0].contents.int_contents.append(3)
    with pytest.raises(InferenceServerProtocolError, match="needs 2 elements, its typed"):
        grpc_client.check_infer_response(message)
    wrong = _response(("O", "INT16", [1]))
    wrong.outputs[0].contents.fp32_contents.append(1.0)
    with pytest.raises(InferenceServerProtocolError, match="'fp32_contents'"):
        grpc_client.check_infer_response(wrong)


@pytest.mark.parametrize(
    ("message", "requested", "fragment"),
    [
        (_response(("O", "INT32", [-1]), raw=[b""]), None, "shape [-1]"),
        # Negative dimensions whose product matches the data: refused all the same.
        (_response(("O", "INT32", [-1, -2]), raw=[bytes(8)]), None, "shape [-1, -2]"),
        (_response(("O", "FP128", [1]), raw=[bytes(16)]), None, "datatype 'FP128'"),
        (_response(("O", "INT32", [2]), raw=[bytes(9)]), None, "needs 8 bytes"),
        (_response(("O", "BYTES", [2]), raw=[b"\0\0\0\0"]), None, "needs 2 elements"),
        (_response(("O", "INT32", [1])), None, "came without data"),
        (_response(("O", "INT32", [1]), raw=[bytes(4), b""]), None, "2 raw_output_contents"),
        (_response(("O", "INT32", [1]), raw=[b""]), {"O": False}, "not requested in shared"),
        (_response(("O", "INT32", [1]), raw=[bytes(4)]), {"P": False}, "no output 'P'"),
    ],
)
def test_check_infer_response_faults(
    message: Any, requested: dict[str, bool] | None, fragment: str
) -> None:
    with pytest.raises(InferenceServerProtocolError, match="invalid inference response") as info:
        grpc_client.check_infer_response(message, requested=checks.Requested(requested))
    assert fragment in str(info.value)


def test_check_infer_response_shared_memory() -> None:
    """An empty entry for an output with elements: in shared memory when requested there (or
    when nothing is known: a stream); a zero-element output needs no data at all."""
    message = _response(("S", "INT32", [4]), ("Z", "FP32", [0]), raw=[b"", b""])
    outputs = grpc_client.check_infer_response(message, requested=checks.Requested({"S": True}))
    assert outputs.get("S") is None
    zero = outputs.get("Z")
    assert zero is not None and zero.shape == (0,)
    assert grpc_client.check_infer_response(message).get("S") is None
    marked = _response(("S", "INT32", [4]))  # other servers: a parameter, no raw at all
    marked.outputs[0].parameters["shared_memory_region"].string_param = "r"
    assert (
        grpc_client.check_infer_response(marked, requested=checks.Requested(None)).get("S") is None
    )


def test_reused_inputs_and_outputs_encode_what_they_hold_now() -> None:
    """The clients keep what they give the encoder for each input and output; every change
    (data, shape, shared memory) is seen by the next request."""
    from tritonclient.grpc import InferInput, InferRequestedOutput
    from tritonclient.grpc._common import encode_infer

    def request(*args: Any) -> Any:
        return pb.ModelInferRequest.FromString(encode_infer(*args))

    tensor = InferInput("I", [1, 2], "INT32")
    output = InferRequestedOutput("O")
    tensor.set_data_from_numpy(np.array([[1, 2]], dtype=np.int32))
    first = request("m", [tensor], "", [output])
    tensor.set_shape([2])
    tensor.set_data_from_numpy(np.array([3, 4], dtype=np.int32))
    second = request("m", [tensor], "", [output])
    assert list(first.inputs[0].shape) == [1, 2] and list(second.inputs[0].shape) == [2]
    assert first.raw_input_contents[0] == np.array([1, 2], dtype=np.int32).tobytes()
    assert second.raw_input_contents[0] == np.array([3, 4], dtype=np.int32).tobytes()
    tensor.set_shared_memory("in", 8)
    output.set_shared_memory("out", 8)
    third = request("m", [tensor], "", [output])
    assert not third.raw_input_contents
    assert third.inputs[0].parameters["shared_memory_region"].string_param == "in"
    assert third.outputs[0].parameters["shared_memory_region"].string_param == "out"
    output.unset_shared_memory()
    tensor.set_data_from_numpy(np.array([5, 6], dtype=np.int32))
    fourth = request("m", [tensor], "", [output])
    assert not fourth.outputs[0].parameters and not fourth.inputs[0].parameters
    assert fourth.raw_input_contents[0] == np.array([5, 6], dtype=np.int32).tobytes()


def test_request_headers_of_each_model_and_options() -> None:
    """The header of a request without options is kept per model and version: each call
    still gets its own model's, and options are never mixed in."""

    def header(*args: Any) -> Any:
        return pb.ModelInferRequest.FromString(grpc_client.encode_request_header(*args))

    for _ in range(2):
        assert header("a").model_name == "a" and header("a").model_version == ""
        assert header("b", "2").model_name == "b" and header("b", "2").model_version == "2"
    with_id = header("a", "", types.InferOptions(request_id="x"))
    assert with_id.id == "x" and header("a").id == ""
    accented = header("modèle", "1")
    assert (accented.model_name, accented.model_version) == ("modèle", "1")


def _stream_reply(request_id: str, final: bool | None, error: str = "") -> Any:
    message = pb.ModelStreamInferResponse(error_message=error)
    message.infer_response.id = request_id
    if final is not None:
        message.infer_response.parameters[grpc_common.FINAL_RESPONSE_PARAM].bool_param = final
    return message


def test_stream_ledger() -> None:
    ledger = grpc_client.StreamLedger()
    ledger.sent("a", True)
    ledger.sent("a", True)
    ledger.sent("", False)
    ledger.sent("d", False)
    ledger.received(_stream_reply("a", False))  # not final: both "a" still due
    ledger.received(_stream_reply("", None, error="refused"))  # an error completes
    assert ledger.pending() == "id 'a' (2 requests), id 'd'"
    early = ledger.ended(False, "stop_stream() was called")
    assert isinstance(early, InferenceServerUnavailableError)
    assert "before stop_stream() was called" in str(early) and "id 'd'" in str(early)
    ledger.received(_stream_reply("a", True))
    late = ledger.ended(True, "")
    assert isinstance(late, InferenceServerProtocolError)
    assert "for 1 request(s) sent with enable_empty_final_response=True: id 'a'" in str(late)
    assert "'d'" not in str(late)  # no flag: a decoupled model may never answer it
    ledger.received(_stream_reply("a", True))
    ledger.received(_stream_reply("zzz", True))  # an id nobody sent: ignored
    assert ledger.ended(True, "") is None


def test_stream_ledger_shared_ids_never_over_report() -> None:
    """With one id for a flagged and an unflagged request, a final response is the flagged
    one's: the flagged request is never reported although it was answered."""
    ledger = grpc_client.StreamLedger()
    ledger.sent("", False)  # a decoupled request that never marks its end
    ledger.sent("", True)
    ledger.received(_stream_reply("", False))
    ledger.received(_stream_reply("", True))
    assert ledger.ended(True, "") is None


def test_stream_messages() -> None:
    body, raw = grpc_server.encode_stream_response_parts(
        Resp(outputs=[Out("O", "UINT8", (3,), np.array([1, 2, 3], np.uint8))]), final=False
    )
    data = grpc_framing.serialize_stream_response(body, raw)
    full = pb.ModelStreamInferResponse.FromString(data)
    assert list(full.infer_response.raw_output_contents) == [b"\x01\x02\x03"]
    assert not grpc_client.is_final_response(full.infer_response)
    parsed, views = grpc_framing.parse_stream_response(data)
    assert parsed.infer_response.id == "rid" and not parsed.infer_response.raw_output_contents
    assert grpc_client.check_infer_response(parsed.infer_response, views).get("O").tolist() == [
        1,
        2,
        3,
    ]  # type: ignore[union-attr]

    error = grpc_server.encode_stream_error("boom", request_id="r1")
    assert error.error_message == "boom" and error.infer_response.id == "r1"
    assert not error.infer_response.parameters and not error.infer_response.model_name
    model_error = grpc_server.encode_stream_error(
        "bad", request_id="r2", model_name="m", model_version="", final=True
    )
    assert grpc_client.is_final_response(model_error.infer_response)
    empty = grpc_server.encode_empty_final_response(
        request_id="r3", model_name="m", model_version=""
    )
    assert grpc_client.is_final_response(empty.infer_response) and not empty.infer_response.outputs
    exc = grpc_common.exception_from_stream_error(error.error_message)
    assert exc.message() == "boom" and exc.status() is None
    parsed, views = grpc_framing.parse_stream_response(empty.SerializeToString())
    assert parsed == empty and views == []


# -- framing ----------------------------------------------------------------------------------


def test_framing_matches_protobuf() -> None:
    message = grpc_requests.infer_request(
        "m",
        [
            grpc_client.InputTensor("A", "INT32", [2], np.array([1, 2], np.int32)),
            grpc_client.InputTensor("B", "BYTES", [1], np.array([b"x" * 300], np.object_)),
        ],
        request_id="id",
        parameters={"k": "v"},
    )
    data = message.SerializeToString()
    parsed, views = grpc_framing.parse_infer_request(data)
    assert [bytes(v) for v in views] == list(message.raw_input_contents)
    parsed.raw_input_contents.extend(bytes(v) for v in views)
    assert parsed == message
    # Raw entries first, or interleaved, parse the same way.
    head = pb.ModelInferRequest(raw_input_contents=[b"first"]).SerializeToString()
    parsed, views = grpc_framing.parse_infer_request(head + data)
    assert [bytes(v) for v in views] == [b"first", *message.raw_input_contents]
    # The framed form is what protobuf reads as the complete message.
    body, raw = grpc_requests.request_parts(
        "m", [grpc_client.InputTensor("A", "INT32", [2], np.array([1, 2], np.int32))]
    )
    framed = grpc_framing.serialize_infer_request(body, raw)
    assert pb.ModelInferRequest.FromString(framed) == grpc_requests.infer_request(
        "m", [grpc_client.InputTensor("A", "INT32", [2], np.array([1, 2], np.int32))]
    )


def test_framing_rejects_malformed_data() -> None:
    good = grpc_requests.infer_request(
        "m", [grpc_client.InputTensor("A", "INT32", [1], np.zeros(1, np.int32))]
    ).SerializeToString()
    for bad in (good[:-2], b"\x3a\xff", b"\xff" * 11, b"\x0b\x00"):
        with pytest.raises(ValueError):
            grpc_framing.parse_infer_request(bad)


# -- status codes and exceptions --------------------------------------------------------------


def test_error_kinds_map_to_grpc_status_codes() -> None:
    expected = {
        "UNKNOWN": "UNKNOWN",
        "INTERNAL": "INTERNAL",
        "NOT_FOUND": "NOT_FOUND",
        "INVALID_ARG": "INVALID_ARGUMENT",
        "UNAVAILABLE": "UNAVAILABLE",
        "UNSUPPORTED": "UNIMPLEMENTED",
        "ALREADY_EXISTS": "ALREADY_EXISTS",
        "CANCELLED": "CANCELLED",
    }
    assert {kind.name for kind in ErrorKind} == set(grpc_common.ERROR_KIND_TO_STATUS)
    for kind, status in expected.items():
        assert grpc_common.status_for_error_kind(kind) == status
        assert grpc_common.error_kind_for_status(grpc.StatusCode[status]) == kind
    for code in grpc.StatusCode:
        assert grpc_common.GRPC_STATUS_CODES[code.name] == code.value[0]
        assert grpc_common.status_name(code) == code.name
        assert grpc_common.status_name(code.value[0]) == code.name
        assert grpc_common.status_name(str(code)) == code.name
    assert grpc_common.error_kind_for_status("DEADLINE_EXCEEDED") == "UNKNOWN"
    assert grpc_common.status_for_error_kind("NOPE") == "UNKNOWN"
    assert grpc_common.status_name(99) == grpc_common.status_name("nope") == "UNKNOWN"


def test_exceptions_from_grpc_errors() -> None:
    exc = grpc_common.exception_from_status(grpc.StatusCode.NOT_FOUND, "no model", "debug")
    assert exc.status() == str(grpc.StatusCode.NOT_FOUND) == "StatusCode.NOT_FOUND"
    assert (exc.message(), exc.debug_details()) == ("no model", "debug")
    assert str(exc) == "[StatusCode.NOT_FOUND] no model"

    class FakeRpcError(Exception):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.DEADLINE_EXCEEDED

        def details(self) -> str:
            return "Deadline Exceeded"

        def debug_error_string(self) -> str:
            return "dbg"

    exc = grpc_common.exception_from_rpc_error(FakeRpcError())
    assert exc.status() == "StatusCode.DEADLINE_EXCEEDED" and exc.message() == "Deadline Exceeded"
    assert exc.debug_details() == "dbg"
    exc = grpc_common.exception_from_rpc_error(RuntimeError("odd"))
    assert exc.status() == "StatusCode.UNKNOWN" and exc.message() == "odd"


@pytest.mark.parametrize("count", [3, 40_000])
def test_parse_infer_request_small_and_large_alike(count: int) -> None:
    values = np.arange(count, dtype=np.int32)
    request = grpc_requests.infer_request(
        "m",
        [
            grpc_client.InputTensor("A", "INT32", [count], values),
            grpc_client.InputTensor("B", "INT32", [count], values[::-1].copy()),
        ],
    )
    data = request.SerializeToString()
    assert (len(data) <= grpc_framing.SMALL_MESSAGE_BYTES) == (count == 3)
    message, raw = grpc_framing.parse_infer_request(data)
    assert not message.raw_input_contents
    assert [bytes(b) for b in raw] == list(request.raw_input_contents)
    assert all(isinstance(b, memoryview) for b in raw)
    request.ClearField("raw_input_contents")
    assert message == request
