"""The sans-I/O HTTP codec: client build -> server parse -> server build -> client parse."""

from __future__ import annotations

import concurrent.futures
import gzip
import json
import math
import zlib
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.http_requests import encode_request
from tritonclient._codec import (
    checks,
    errors,
    generate,
    http_body,
    http_client,
    http_control,
    http_server,
    jsontext,
    raw,
    types,
)
from tritonclient.utils import InferenceServerException, InferenceServerProtocolError
from tritonclient.utils._dtypes import DATATYPES

FIXED = [name for name, info in DATATYPES.items() if info.byte_size is not None]
JSON_OK = [name for name in DATATYPES if name not in ("FP16", "BF16")]


def np_dtype(datatype: str) -> np.dtype[Any]:
    return np.dtype(DATATYPES[datatype].numpy_type)


def same(a: np.ndarray, b: np.ndarray, *, bits: bool = True) -> bool:
    """Equal shape, dtype and values.  ``bits``: byte-identical (binary paths); otherwise NaN
    equals NaN whatever its payload (JSON has one NaN) and -0.0 still differs from 0.0."""
    if a.shape != b.shape:
        return False
    if a.dtype == np.object_ or b.dtype == np.object_:
        return a.tolist() == b.tolist()
    if a.dtype != b.dtype:
        return False
    if bits or a.dtype.kind != "f":
        return a.tobytes() == b.tobytes()
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))))


def to_bytes_elements(array: np.ndarray) -> np.ndarray:
    """BYTES as the server sees them: ``bytes`` elements."""
    out = np.empty(array.shape, dtype=np.object_)
    for index, item in np.ndenumerate(array):
        out[index] = item.encode("utf-8") if isinstance(item, str) else bytes(item)
    return out


def round_trip(
    inputs: list[http_client.RequestInput], binary_out: bool, **kw: Any
) -> tuple[http_server.ParsedInferRequest, list[np.ndarray], http_client.DecodedResponse]:
    """Client encode -> server parse/decode -> server encode (identity) -> client decode."""
    body = encode_request(inputs, **kw)
    wire = body.tobytes()
    header = body.headers().get(http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH)
    parsed = http_server.parse_infer_request(
        wire, http_body.parse_header_length(header, len(wire)), model_name="m"
    )
    arrays = [
        http_server.decode_input(p, model_name="m", request_id=parsed.id) for p in parsed.inputs
    ]
    outputs = [
        http_server.ResponseOutput(p.name, p.datatype, p.shape, a, binary_out)
        for p, a in zip(parsed.inputs, arrays, strict=True)
    ]
    response = http_server.encode_infer_response("m", "1", outputs, request_id=parsed.id)
    decoded = http_client.decode_infer_response(response.tobytes(), response.json_size)
    return parsed, arrays, decoded


# ---------------------------------------------------------------------------------------------
# Round trips, property-based
# ---------------------------------------------------------------------------------------------

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def fixed_arrays(datatype: str) -> st.SearchStrategy[np.ndarray]:
    if datatype == "BF16":
        return hnp.arrays(np.float32, shapes).map(lambda a: a.astype(ml_dtypes.bfloat16))
    return hnp.arrays(np_dtype(datatype), shapes)


@pytest.mark.parametrize("datatype", FIXED)
@pytest.mark.parametrize("binary_in", [True, False])
@pytest.mark.parametrize("binary_out", [True, False])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fixed_size_round_trip(
    datatype: str, binary_in: bool, binary_out: bool, data: st.DataObject
) -> None:
    array = data.draw(fixed_arrays(datatype))
    if datatype in ("FP16", "BF16") and not (binary_in and binary_out):
        return  # JSON is refused for these; see the error tests
    item = http_client.encode_input("IN", datatype, array.shape, array, binary_data=binary_in)
    parsed, arrays, decoded = round_trip([item], binary_out, request_id="rid")
    assert parsed.id == "rid"
    assert same(arrays[0], array, bits=binary_in)
    assert same(decoded.as_numpy("IN"), array, bits=binary_in and binary_out)
    assert decoded.response["id"] == "rid"


text_elements = st.text(max_size=8)
raw_elements = st.binary(max_size=8)


@pytest.mark.parametrize("binary_out", [True, False])
@settings(max_examples=40, deadline=None)
@given(shape=shapes, data=st.data())
def test_bytes_round_trip_text(binary_out: bool, shape: tuple[int, ...], data: Any) -> None:
    """UTF-8 text (non-ASCII included) survives JSON and binary, both directions."""
    count = math.prod(shape)
    items = data.draw(st.lists(text_elements, min_size=count, max_size=count))
    array = np.empty(count, dtype=np.object_)
    array[:] = items
    array = array.reshape(shape)
    for binary_in in (True, False):
        item = http_client.encode_input("S", "BYTES", shape, array, binary_data=binary_in)
        _, arrays, decoded = round_trip([item], binary_out)
        assert same(arrays[0], to_bytes_elements(array))
        out = decoded.as_numpy("S")
        assert out is not None and out.shape == shape
        if binary_out:
            assert same(out, to_bytes_elements(array))
        else:  # JSON outputs come back as str, as tritonclient returns them
            assert same(out, array)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, data=st.data())
def test_bytes_round_trip_arbitrary_bytes(shape: tuple[int, ...], data: Any) -> None:
    """Arbitrary bytes in binary; as JSON output they are written raw (as Triton does): the
    client reads them back when they are UTF-8 and refuses a body that is not (JSON is UTF-8),
    with the hint to ask for binary data."""
    count = math.prod(shape)
    items = data.draw(st.lists(raw_elements, min_size=count, max_size=count))
    array = np.empty(count, dtype=np.object_)
    array[:] = items
    array = array.reshape(shape)
    item = http_client.encode_input("S", "BYTES", shape, array)
    _, arrays, decoded = round_trip([item], True)
    assert same(arrays[0], array) and same(decoded.as_numpy("S"), array)
    try:
        text = [bytes(b).decode("utf-8") for b in items]
    except UnicodeDecodeError:
        with pytest.raises(InferenceServerProtocolError, match="not valid UTF-8") as info:
            round_trip([item], False)
        assert info.value.hint is not None and "binary_data=True" in info.value.hint
        return
    _, _, decoded = round_trip([item], False)
    out = decoded.as_numpy("S")
    assert out is not None and out.reshape(-1).tolist() == text


def test_non_utf8_json_output_is_raw_in_the_body() -> None:
    words = np.array([b"\xff\xfe", b'q"\\'], dtype=np.object_)
    body = http_server.encode_infer_response(
        "m", "1", [http_server.ResponseOutput("S", "BYTES", [2], words, False)]
    ).tobytes()
    assert b'"data":["\xff\xfe","q\\"\\\\"]' in body
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")


def test_mixed_binary_and_json_inputs_keep_order() -> None:
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.array([[True, False]])
    c = np.array([b"x", b"yz"], dtype=np.object_)
    d = np.linspace(0, 1, 4, dtype=np.float64)
    inputs = [
        http_client.encode_input("A", "INT32", a.shape, a),
        http_client.encode_input("B", "BOOL", b.shape, b, binary_data=False),
        http_client.encode_input("C", "BYTES", c.shape, c),
        http_client.encode_input("D", "FP64", d.shape, d, binary_data=False),
    ]
    body = encode_request(inputs)
    header = json.loads(body.chunks[0])
    assert header["parameters"] == {"binary_data_output": True}
    assert body.json_size == len(body.chunks[0]) and len(body.chunks) == 3
    parsed, arrays, _ = round_trip(inputs, True)
    assert [p.name for p in parsed.inputs] == ["A", "B", "C", "D"]
    assert parsed.inputs[1].raw is None and parsed.inputs[1].data == [True, False]
    for original, got in zip([a, b, c, d], arrays, strict=True):
        assert same(got, original)
    assert parsed.output_binary("A")  # nothing listed: binary_data_output decides


def test_json_only_request_has_no_header_length() -> None:
    a = np.array([1, 2], dtype=np.int64)
    body = encode_request([http_client.encode_input("A", "INT64", [2], a, binary_data=False)])
    assert body.json_size is None and len(body.chunks) == 1
    assert http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH not in body.headers()
    assert body.headers()["Content-Type"] == "application/json"


def test_zero_copy_both_ways() -> None:
    array = np.arange(1024, dtype=np.float32).reshape(32, 32)
    item = http_client.encode_input("A", "FP32", array.shape, array)
    assert isinstance(item.raw, memoryview)
    assert np.shares_memory(np.frombuffer(item.raw, dtype=np.float32), array)
    body = bytearray(encode_request([item]).tobytes())
    parsed = http_server.parse_infer_request(body, len(body) - array.nbytes)
    decoded = http_server.decode_input(parsed.inputs[0])
    assert np.shares_memory(decoded, np.frombuffer(body, dtype=np.uint8))
    response = http_server.encode_infer_response(
        "m", "1", [http_server.ResponseOutput("A", "FP32", array.shape, decoded, True)]
    )
    assert np.shares_memory(np.frombuffer(response.chunks[1], dtype=np.float32), decoded)
    wire = bytearray(response.tobytes())
    out = http_client.decode_infer_response(wire, response.json_size).as_numpy("A")
    assert out is not None and np.shares_memory(out, np.frombuffer(wire, dtype=np.uint8))


def test_non_contiguous_and_big_endian_inputs() -> None:
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    strided = base[:, ::2]
    big = np.arange(4, dtype=">i4")
    _, arrays, _ = round_trip(
        [
            http_client.encode_input("S", "INT32", strided.shape, strided),
            http_client.encode_input("B", "INT32", big.shape, big),
        ],
        True,
    )
    assert arrays[0].tolist() == strided.tolist()
    assert arrays[1].tolist() == [0, 1, 2, 3]


def test_bf16_takes_bfloat16_refuses_float32_and_returns_bfloat16() -> None:
    values = np.array([1.5, -2.0, 3.140625], dtype=np.float32)
    with pytest.raises(InferenceServerException, match=r"expected BF16\. Since r26\.06"):
        http_client.encode_input("X", "BF16", [3], values)
    bf16 = values.astype(ml_dtypes.bfloat16)
    _, arrays, decoded = round_trip([http_client.encode_input("X", "BF16", [3], bf16)], True)
    assert arrays[0].dtype == ml_dtypes.bfloat16
    assert decoded.as_numpy("X").astype(np.float32).tolist() == values.tolist()


def test_json_number_rules() -> None:
    # wider values wrap modulo 2**bits (Triton's behaviour), uint64 beyond 2**63 is exact
    assert jsontext.tensor_from_json("INT8", [2], [300, -129]).tolist() == [44, 127]
    assert jsontext.tensor_from_json("UINT64", [1], [2**64 - 1]).tolist() == [2**64 - 1]
    assert jsontext.tensor_from_json("INT64", [1], [-(2**63)]).tolist() == [-(2**63)]
    assert jsontext.tensor_from_json("FP32", [3], [1, 0.5, -0.0]).tolist() == [1.0, 0.5, -0.0]
    nested = jsontext.tensor_from_json("INT32", [2, 2], [[1, 2], [3, 4]])
    assert nested.tolist() == [[1, 2], [3, 4]]
    assert jsontext.tensor_from_json("INT32", [0], []).shape == (0,)
    special = jsontext.tensor_from_json("FP64", [3], [math.nan, math.inf, -math.inf])
    assert np.isnan(special[0]) and special[1] == math.inf and special[2] == -math.inf
    # FP32 outputs are widened to double and printed shortest-round-trip
    assert jsontext.tensor_to_json("FP32", np.array([0.1, 1.0], np.float32)) == [
        0.10000000149011612,
        1.0,
    ]
    body = http_server.encode_infer_response(
        "m",
        "1",
        [http_server.ResponseOutput("X", "FP64", [3], np.array([math.nan, math.inf, -math.inf]))],
    ).tobytes()
    assert b"[NaN,Infinity,-Infinity]" in body
    big = http_server.encode_infer_response(
        "m", "1", [http_server.ResponseOutput("X", "INT64", [1], np.array([2**63 - 1]))]
    ).tobytes()
    assert b"[9223372036854775807]" in big


@pytest.mark.parametrize(
    ("datatype", "data", "status", "message"),
    [
        ("BOOL", [1], 500, "non-boolean as boolean"),
        ("INT32", [1.5], 500, "non-signed-integer as signed-integer"),
        ("INT32", [True], 500, "non-signed-integer as signed-integer"),
        ("INT64", [2**63], 500, "non-signed-integer as signed-integer"),
        ("UINT8", [-1], 500, "non-unsigned-integer as unsigned-integer"),
        ("UINT64", [2**64], 500, "non-unsigned-integer as unsigned-integer"),
        ("FP32", ["1"], 500, "non-number as number"),
        ("BYTES", [1], 500, "Unable to parse JSON bytes array"),
        ("INT32", [1, 2, 3], 500, "Shape does not match true shape of 'data' field"),
        ("FP16", [1.0, 2.0], 400, "receiving FP16 data via JSON is not supported"),
        ("BF16", [1.0, 2.0], 400, "receiving BF16 data via JSON is not supported"),
        ("FLOAT", [1.0, 2.0], 400, "invalid datatype for input X"),
    ],
)
def test_json_data_errors(datatype: str, data: list[Any], status: int, message: str) -> None:
    shape = [2] if "Shape" in message else [len(data)]
    with pytest.raises(errors.HttpCodecError) as info:
        jsontext.tensor_from_json(datatype, shape, data, name="X")
    assert info.value.http_status == status and message in str(info.value.message())
    assert info.value.status() == str(status)


def _nested(levels: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``levels`` arrays: the leaf sits at depth ``levels``."""
    value: Any = leaf
    for _ in range(levels):
        value = [value]
    return value


def test_json_nesting_limit() -> None:
    """Triton 2.73 refuses a value nested ``HTTP_MAX_JSON_NESTING_DEPTH`` (100) deep in an
    input's ``data`` (the array itself at depth 0): src/http_server.cc:533-540
    (``ReadDataFromJsonHelper``, under "Unable to parse 'data'" at :727-730) and :485-491
    (``JsonBytesArrayByteSize`` for BYTES); without a limit (2.51) any depth is read."""
    limit = jsontext.MAX_JSON_DEPTH
    with pytest.raises(errors.HttpCodecError) as info:
        jsontext.tensor_from_json("INT32", [1], _nested(limit))
    assert info.value.http_status == 400
    assert info.value.message() == (
        "Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)"
    )
    with pytest.raises(errors.HttpCodecError) as info:
        jsontext.tensor_from_json("BYTES", [1], _nested(limit, "a"))
    assert info.value.message() == "JSON nesting depth exceeds maximum allowed limit (100)"
    assert jsontext.tensor_from_json("INT32", [1], _nested(limit - 1)).tolist() == [1]
    assert jsontext.tensor_from_json("INT32", [2], [_nested(limit - 2), 2]).tolist() == [1, 2]
    deep = _nested(2000)
    assert jsontext.tensor_from_json("INT32", [1], deep, max_depth=None).tolist() == [1]


# ---------------------------------------------------------------------------------------------
# Request parsing errors
# ---------------------------------------------------------------------------------------------


def parse(obj: Any, tail: bytes = b"") -> http_server.ParsedInferRequest:
    header = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    body = header + tail
    return http_server.parse_infer_request(body, len(header) if tail else None, model_name="m")


def input_json(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "X", "shape": [2], "datatype": "INT32", "data": [1, 2]}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize(
    ("request_obj", "status", "message"),
    [
        (b"{not json", 500, "failed to parse the request JSON buffer"),
        # TritonJson finds no members in a JSON value that is not an object.
        (b"[1]", 500, "Unable to parse 'inputs': attempt to access non-existing object member"),
        (b'{"inputs": []} x', 500, "must not be followed by other values."),
        ({}, 500, "Unable to parse 'inputs': attempt to access non-existing object member"),
        ({"inputs": {}}, 500, "Unable to parse 'inputs'"),
        ({"id": 5, "inputs": []}, 500, "Unable to parse 'id'"),
        ({"inputs": [input_json(shape=[-2])]}, 500, "non-unsigned-integer as unsigned-integer"),
        ({"inputs": [input_json(name=None)]}, 500, "Unable to parse 'name'"),
        ({"inputs": [input_json(data=None)]}, 400, "But no field is set"),
        (
            {"inputs": [input_json(parameters={"binary_data_size": 8})]},
            400,
            "But set 'data' 'binary_data_size'",
        ),
        (
            {"inputs": [input_json(parameters={"shared_memory_region": "r"})]},
            400,
            "But set 'data' 'shared_memory_region'",
        ),
        (
            {"inputs": [], "parameters": {"triton_enable_empty_final_response": True}},
            400,
            "reserved for Triton usage",
        ),
        ({"inputs": [], "parameters": {"custom": [1]}}, 400, "parameter 'custom' has invalid"),
        ({"inputs": [], "parameters": {"custom": None}}, 400, "parameter 'custom' has invalid"),
        ({"inputs": [], "parameters": {"sequence_id": 1.5}}, 500, "Unable to parse 'sequence_id'"),
        ({"inputs": [], "parameters": {"sequence_id": -1}}, 500, "Unable to parse 'sequence_id'"),
        ({"inputs": [], "parameters": {"sequence_start": 1}}, 500, "'sequence_start'"),
        ({"inputs": [], "parameters": {"priority": -1}}, 500, "Unable to parse 'priority'"),
        ({"inputs": [], "parameters": {"timeout": "1"}}, 500, "Unable to parse 'timeout'"),
        ({"inputs": [], "parameters": {"binary_data_output": 1}}, 500, "'binary_data_output'"),
        ({"inputs": [], "outputs": [{"name": "Y", "parameters": {"binary_data": 1}}]}, 500, ""),
        (
            {"inputs": [], "outputs": [{"name": "Y", "parameters": {"classification": -1}}]},
            500,
            "Unable to set 'classification'",
        ),
        (
            {
                "inputs": [],
                "outputs": [
                    {
                        "name": "Y",
                        "parameters": {
                            "classification": 2,
                            "shared_memory_region": "r",
                            "shared_memory_byte_size": 4,
                        },
                    }
                ],
            },
            400,
            "Output can't set both 'shared_memory_region' and 'classification'",
        ),
        (
            {
                "inputs": [],
                "outputs": [
                    {
                        "name": "Y",
                        "parameters": {
                            "binary_data": True,
                            "shared_memory_region": "r",
                            "shared_memory_byte_size": 4,
                        },
                    }
                ],
            },
            400,
            "Output can't set both 'shared_memory_region' and 'binary_data'",
        ),
    ],
)
def test_request_errors(request_obj: Any, status: int, message: str) -> None:
    with pytest.raises(errors.HttpCodecError) as info:
        parse(request_obj)
    assert info.value.http_status == status
    assert message in str(info.value.message())


@pytest.mark.parametrize(
    ("datatype", "message"),
    [
        ("STRING", "invalid datatype for input X"),
        ("FP16", "receiving FP16 data via JSON is not supported"),
    ],
)
def test_json_data_errors_come_when_the_data_are_read(datatype: str, message: str) -> None:
    parsed = parse({"inputs": [input_json(datatype=datatype, data=[1.0, 2.0])]})
    with pytest.raises(errors.HttpCodecError, match=message) as info:
        http_server.decode_input(parsed.inputs[0])
    assert info.value.http_status == 400
    # An empty tensor's data are never read (Triton reads none), so no error for it.
    empty = parse({"inputs": [input_json(datatype=datatype, shape=[0], data=[])]})
    assert http_server.decode_input(empty.inputs[0]).size == 0


def test_shared_memory_input_without_byte_size_has_size_zero() -> None:
    # Triton reads an absent shared_memory_byte_size as 0; the region's bounds check refuses
    # it then ("Invalid offset + byte size for shared memory region").
    parsed = parse({"inputs": [input_json(data=None, parameters={"shared_memory_region": "r"})]})
    assert parsed.inputs[0].shared_memory == types.SharedMemoryRef("r", 0, 0)


def test_request_parameters_are_interpreted() -> None:
    parsed = parse(
        {
            "inputs": [],
            "parameters": {
                "sequence_id": "abc",
                "sequence_start": True,
                "sequence_end": False,
                "priority": 2,
                "timeout": 100,
                "binary_data_output": True,
                "i": 2**63,
                "s": "x",
                "b": False,
                "f": 0.5,
                "headers": "kept",
            },
        }
    )
    p = parsed.parameters
    assert (p.sequence_id, p.sequence_start, p.priority, p.timeout) == ("abc", True, 2, 100)
    assert p.binary_data_output is True
    assert p.custom == {"i": float(2**63), "s": "x", "b": False, "f": 0.5, "headers": "kept"}
    assert parse({"inputs": [], "parameters": {"sequence_id": 2**64 - 1}}).parameters.sequence_id


def test_binary_chunk_accounting() -> None:
    header = {"inputs": [input_json(data=None, parameters={"binary_data_size": 8})]}
    assert http_server.decode_input(parse(header, bytes(8)).inputs[0]).tolist() == [0, 0]
    # Triton says how many bytes are missing, not how many the input needs.
    with pytest.raises(errors.HttpCodecError, match="expecting 3 additional bytes for model 'm'"):
        parse(header, bytes(5))
    with pytest.raises(errors.HttpCodecError, match="unexpected additional input data for model"):
        parse(header, bytes(9))
    # without the header the whole body is the JSON part: bytes after it are a JSON error...
    wire = json.dumps(header).encode() + b"x" * 8
    with pytest.raises(errors.HttpCodecError, match="must not be followed by other values") as info:
        http_server.parse_infer_request(wire, None, model_name="m")
    assert info.value.http_status == 500
    # ...except after a NUL, which ends rapidjson's input: then the binary data are missing
    wire = json.dumps(header).encode() + bytes(8)
    with pytest.raises(errors.HttpCodecError, match="expecting 8 additional bytes") as info:
        http_server.parse_infer_request(wire, None, model_name="m")
    assert info.value.http_status == 400
    short = {"inputs": [input_json(data=None, parameters={"binary_data_size": 4})]}
    with pytest.raises(errors.HttpCodecError) as info:
        http_server.decode_input(parse(short, bytes(4)).inputs[0], model_name="m", request_id="r")
    assert info.value.http_status == 400
    assert str(info.value.message()) == (
        "[request id: r] input byte size mismatch for input 'X' for model 'm'. Expected 8, got 4"
    )
    zero = {"inputs": [input_json(shape=[0], data=None, parameters={"binary_data_size": 0})]}
    assert http_server.decode_input(parse(zero, b"").inputs[0]).shape == (0,)


def test_header_length_parsing() -> None:
    # Triton reads the header with atoi: absent means the whole body, text that starts with no
    # number means 0 (a raw binary request), a number ends at its first non-digit.
    assert http_body.parse_header_length(None, 10) == 10
    assert http_body.parse_header_length("0", 10) == 0
    assert http_body.parse_header_length(" 7 ", 10) == 7
    assert http_body.parse_header_length("x", 10) == 0
    assert http_body.parse_header_length("1.5", 10) == 1
    for bad in ("-1", "11", str(2**31)):  # 2**31 wraps to a negative int
        with pytest.raises(
            errors.HttpCodecError, match=rf"should be in range \(0, 10\), got: {bad}"
        ):
            http_body.parse_header_length(bad, 10)


@pytest.mark.parametrize(
    ("buffer", "message"),
    [
        (b"\x01\x00\x00\x00a", "expected 2 string elements for inference input 'S' for model 'm'"),
        (
            b"\x01\x00\x00\x00a\x00\x00\x00\x00\x00\x00\x00\x00",
            "unexpected number of string elements 3 for inference input 'S'",
        ),
        (b"\x05\x00\x00\x00ab", "expecting string of length 5 but only 2 bytes available"),
        (b"\x01\x00\x00\x00a\x01\x00", "expecting 4 bytes but only 2 bytes available"),
    ],
)
def test_bytes_buffer_errors(buffer: bytes, message: str) -> None:
    with pytest.raises(errors.HttpCodecError, match=message):
        raw.tensor_from_buffer("BYTES", [2], buffer, name="S", model_name="m")


# ---------------------------------------------------------------------------------------------
# Outputs: selection, shared memory, classification, FP16
# ---------------------------------------------------------------------------------------------


def test_output_selection_rules() -> None:
    outputs = [
        http_client.encode_output("A"),
        http_client.encode_output("B", binary_data=False),
        http_client.encode_output("C", class_count=3),
        http_client.encode_output("D", shared_memory=types.SharedMemoryRef("r", 64, 8)),
    ]
    body = encode_request([], outputs, priority=1, timeout=5, parameters={"k": "v"})
    header = json.loads(body.tobytes())
    assert header["parameters"] == {"priority": 1, "timeout": 5, "k": "v"}
    assert header["outputs"][3]["parameters"] == {
        "binary_data": False,
        "shared_memory_region": "r",
        "shared_memory_byte_size": 64,
        "shared_memory_offset": 8,
    }
    parsed = http_server.parse_infer_request(body.tobytes())
    assert [o.binary_data for o in parsed.outputs] == [True, False, True, False]
    assert parsed.outputs[2].class_count == 3
    assert parsed.outputs[3].shared_memory == types.SharedMemoryRef("r", 64, 8)
    assert not parsed.output_binary("E")  # unlisted while others are listed: JSON
    listed = parse(
        {"inputs": [], "outputs": [{"name": "A"}], "parameters": {"binary_data_output": True}}
    )
    assert not listed.output_binary("A")  # request-level flag does not flip a listed output


def test_shared_memory_input_and_output() -> None:
    region = bytearray(64)
    values = np.arange(4, dtype=np.int32)
    region[16:32] = values.tobytes()
    item = http_client.encode_input_shm("X", "INT32", [4], "reg", 16, 16)
    assert item.parameters == {
        "shared_memory_region": "reg",
        "shared_memory_byte_size": 16,
        "shared_memory_offset": 16,
    }
    body = encode_request([item])
    assert body.json_size is None
    parsed = http_server.parse_infer_request(body.tobytes())
    ref = parsed.inputs[0].shared_memory
    assert ref == types.SharedMemoryRef("reg", 16, 16)
    view = memoryview(region)[ref.offset : ref.offset + ref.byte_size]
    array = http_server.decode_input(parsed.inputs[0], view)
    assert array.tolist() == [0, 1, 2, 3] and np.shares_memory(
        array, np.frombuffer(region, np.uint8)
    )
    response = http_server.encode_infer_response(
        "m", "1", [http_server.ResponseOutput("Y", "INT32", [4], None)]
    )
    decoded = http_client.decode_infer_response(response.tobytes(), response.json_size)
    assert decoded.get_output("Y") == {"name": "Y", "datatype": "INT32", "shape": [4]}
    assert decoded.as_numpy("Y") is None and decoded.as_numpy("missing") is None


def test_classification_output_round_trip() -> None:
    classes = np.array([[b"3.300000:1:dog", b"2.400000:3:fish"]], dtype=np.object_)
    for binary in (True, False):
        response = http_server.encode_infer_response(
            "m", "1", [http_server.ResponseOutput("P", "BYTES", [1, 2], classes, binary)]
        )
        decoded = http_client.decode_infer_response(response.tobytes(), response.json_size)
        out = decoded.as_numpy("P")
        assert out is not None
        assert [x if isinstance(x, bytes) else x.encode() for x in out.ravel()] == [
            b"3.300000:1:dog",
            b"2.400000:3:fish",
        ]


@pytest.mark.parametrize("datatype", ["FP16", "BF16"])
def test_half_precision_output_as_json_is_refused(datatype: str) -> None:
    array = np.zeros(0, dtype=np_dtype(datatype))
    with pytest.raises(errors.HttpCodecError) as info:
        http_server.encode_infer_response(
            "m", "1", [http_server.ResponseOutput("Y", datatype, [0], array)]
        )
    assert info.value.http_status == 400
    assert f"sending {datatype} data via JSON is not supported" in str(info.value.message())


def test_response_key_order_and_parameters() -> None:
    response = http_server.encode_infer_response(
        "m",
        "3",
        [http_server.ResponseOutput("Y", "INT32", [1], np.array([7], np.int32))],
        request_id="42",
        parameters={"p": 1},
    )
    text = response.tobytes().decode()
    assert text == (
        '{"id":"42","model_name":"m","model_version":"3","parameters":{"p":1},'
        '"outputs":[{"name":"Y","datatype":"INT32","shape":[1],"data":[7]}]}'
    )
    without_id = http_server.encode_infer_response("m", "1", []).tobytes()
    assert without_id == b'{"model_name":"m","model_version":"1","outputs":[]}'


# ---------------------------------------------------------------------------------------------
# Client-side errors
# ---------------------------------------------------------------------------------------------


def test_client_encoding_errors() -> None:
    a = np.zeros((2, 2), np.float32)
    with pytest.raises(InferenceServerException, match="unexpected datatype FP32"):
        http_client.encode_input("X", "INT32", [2, 2], a)
    with pytest.raises(InferenceServerException, match="unexpected numpy array shape"):
        http_client.encode_input("X", "FP32", [4], a)
    with pytest.raises(InferenceServerException, match="must be a numpy array"):
        http_client.encode_input("X", "FP32", [2], [1.0, 2.0])  # type: ignore[arg-type]
    bf = np.zeros(2, ml_dtypes.bfloat16)
    with pytest.raises(InferenceServerException, match="BF16 inputs must be sent as binary"):
        http_client.encode_input("X", "BF16", [2], bf, binary_data=False)
    raw = np.array([b"\xff"], dtype=np.object_)
    with pytest.raises(InferenceServerException, match="UTF-8"):
        http_client.encode_input("X", "BYTES", [1], raw, binary_data=False)
    for key in ("sequence_id", "binary_data_output", "triton_x", "headers"):
        with pytest.raises(InferenceServerException, match="reserved parameter"):
            encode_request([], parameters={key: 1})
    # FP16 as JSON goes out as numbers (tritonclient does the same; the server refuses it)
    half = http_client.encode_input(
        "X", "FP16", [2], np.array([1.5, 2], np.float16), binary_data=False
    )
    assert half.data == [1.5, 2.0]


def test_sequence_parameters_as_tritonclient_writes_them() -> None:
    body = encode_request([], [http_client.encode_output("Y")], sequence_id="s1")
    assert json.loads(body.tobytes())["parameters"] == {
        "sequence_id": "s1",
        "sequence_start": False,
        "sequence_end": False,
    }
    body = encode_request([], [http_client.encode_output("Y")], sequence_id=0)
    assert "parameters" not in json.loads(body.tobytes())


def test_raw_input_and_requests_of_raw_bytes() -> None:
    item = http_client.encode_input_raw("X", "INT32", [2], b"\x01\x00\x00\x00\x02\x00\x00\x00")
    _, arrays, _ = round_trip([item], True)
    assert arrays[0].tolist() == [1, 2]


def test_error_from_response() -> None:
    assert http_client.error_from_response(200, b"") is None
    error = http_client.error_from_response(404, b'{"error":"Not Found"}')
    assert error is not None and error.status() == "404" and error.message() == "Not Found"
    empty = http_client.error_from_response(400, b"")
    assert empty is not None and empty.status() == "400"
    garbage = http_client.error_from_response(502, b"<html>")
    assert garbage is not None and garbage.debug_details() == "<html>"


def test_decode_response_errors() -> None:
    with pytest.raises(InferenceServerProtocolError, match="is not JSON"):
        http_client.decode_infer_response(b"{", None)
    with pytest.raises(InferenceServerProtocolError, match="outside the body"):
        http_client.decode_infer_response(b"{}", 9)
    body = (
        b'{"outputs":[{"name":"Y","datatype":"INT32","shape":[1],'
        b'"parameters":{"binary_data_size":4}}]}'
    )
    with pytest.raises(
        InferenceServerProtocolError, match=r"declare 4 bytes .* 3 bytes are missing"
    ):
        http_client.decode_infer_response(body + b"\x00", len(body))
    with pytest.raises(InferenceServerProtocolError, match="2 bytes trail them"):
        http_client.decode_infer_response(body + bytes(6), len(body))


def test_decode_response_of_a_json_seen_before() -> None:
    """A JSON decoded again (the same model's next answer) gives the same arrays over the new
    body, a JSON object of its own, and the checks that depend on the call or the bytes after
    the JSON."""
    header = (
        b'{"model_name":"m","outputs":[{"name":"Y","datatype":"INT32","shape":[1,2],'
        b'"parameters":{"binary_data_size":8}},{"name":"Z","datatype":"FP32","shape":[1],'
        b'"parameters":{"binary_data_size":4}}]}'
    )
    for values in ([1, 2], [3, 4], [5, 6]):
        data = np.array(values, dtype=np.int32).tobytes() + np.float32(0.5).tobytes()
        decoded = http_client.decode_infer_response(header + data, len(header))
        assert decoded.as_numpy("Y").tolist() == [values]  # type: ignore[union-attr]
        assert decoded.as_numpy("Z").tolist() == [0.5]  # type: ignore[union-attr]
        assert bytes(decoded.output_buffer("Z") or b"") == np.float32(0.5).tobytes()
        decoded.response["mutated"] = True  # each result has a JSON object of its own
        assert (
            "mutated" not in http_client.decode_infer_response(header + data, len(header)).response
        )
    again = http_client.decode_infer_response(header + data, len(header))
    assert again.get_output("Z") == {  # the JSON, parsed when first asked for
        "name": "Z",
        "datatype": "FP32",
        "shape": [1],
        "parameters": {"binary_data_size": 4},
    }
    assert again.response is again.response
    late = http_client.decode_infer_response(header + data, len(header))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:  # one dict, whoever asks first
        assert len({id(r) for r in pool.map(lambda _: late.response, range(8))}) == 1
    with pytest.raises(InferenceServerProtocolError, match="1 bytes are missing"):
        http_client.decode_infer_response(header + bytes(11), len(header))
    with pytest.raises(InferenceServerProtocolError, match=r"no output 'P'"):
        http_client.decode_infer_response(
            header + bytes(12), len(header), requested=checks.Requested({"Y": False, "P": False})
        )


def _json_response(*outputs: dict[str, Any]) -> bytes:
    return json.dumps({"model_name": "m", "outputs": list(outputs)}).encode()


def test_decode_response_json_data() -> None:
    body = _json_response(
        {"name": "N", "datatype": "INT64", "shape": [2, 2], "data": [[1, 2], [3, 2**62]]},
        {"name": "F", "datatype": "FP32", "shape": [3], "data": [1, 0.5, "NaN"]},
        {"name": "B", "datatype": "BOOL", "shape": [1], "data": [True]},
        {"name": "S", "datatype": "BYTES", "shape": [1], "data": ["x"]},
    ).replace(b'"NaN"', b"NaN")
    decoded = http_client.decode_infer_response(body)
    nested = decoded.as_numpy("N")
    assert nested is not None and nested.tolist() == [[1, 2], [3, 2**62]]
    floats = decoded.as_numpy("F")
    assert floats is not None and floats.dtype == np.float32 and math.isnan(floats[2])
    assert decoded.as_numpy("B").tolist() == [True]  # type: ignore[union-attr]
    first = decoded.as_numpy("S")
    assert first is not None and first.tolist() == ["x"]
    assert decoded.as_numpy("S") is not first  # writable: each later call gets a copy


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        ({"datatype": "BOOL", "shape": [1], "data": [1]}, "number 1 at index 0"),
        ({"datatype": "INT32", "shape": [1], "data": [True]}, "boolean True at index 0"),
        ({"datatype": "UINT8", "shape": [1], "data": [-1]}, "outside the UINT8 range"),
        ({"datatype": "INT64", "shape": [1], "data": [2**63]}, "outside the INT64 range"),
        ({"datatype": "FP32", "shape": [1], "data": [1e300]}, "beyond the FP32 range"),
        ({"datatype": "FP64", "shape": [1], "data": [10**400]}, "beyond FP64"),
        ({"datatype": "BYTES", "shape": [1], "data": [None]}, "null None at index 0"),
        ({"datatype": "INT32", "shape": [2], "data": 1}, "'data' of type number"),
        ({"datatype": "INT32", "shape": [1.0], "data": [1]}, "shape [1.0]"),
        ({"datatype": "INT32", "shape": [1], "data": [1], "parameters": []}, "parameters of"),
    ],
)
def test_decode_response_json_faults(output: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InferenceServerProtocolError, match="invalid inference response") as info:
        http_client.decode_infer_response(_json_response({"name": "O", **output}))
    assert fragment in str(info.value)


def test_decode_response_requested_outputs() -> None:
    shm = _json_response({"name": "O", "datatype": "INT32", "shape": [2]})
    assert http_client.decode_infer_response(shm).as_numpy("O") is None  # nothing known: shm
    asked = checks.Requested({"O": True})
    assert http_client.decode_infer_response(shm, requested=asked).as_numpy("O") is None
    with pytest.raises(InferenceServerProtocolError, match="came without data"):
        http_client.decode_infer_response(shm, requested=checks.Requested(None))
    with pytest.raises(InferenceServerProtocolError, match=r"no output 'P', .* \['O'\]"):
        http_client.decode_infer_response(shm, requested=checks.Requested({"O": True, "P": False}))
    empty = _json_response({"name": "O", "datatype": "INT32", "shape": [0]})
    assert (
        http_client.decode_infer_response(empty, requested=checks.Requested(None)).as_numpy("O")
        is None
    )


def test_client_json_is_strict() -> None:
    assert jsontext.client_json(b'{"a": [1, NaN]}', "x")["a"][0] == 1
    with pytest.raises(InferenceServerProtocolError, match="x is not JSON"):
        jsontext.client_json(b'{"a": 1}\0', "x")  # unlike rapidjson, a NUL does not end it
    with pytest.raises(InferenceServerProtocolError, match="x is not valid UTF-8: byte 0xc3"):
        jsontext.client_json(b'"\xc3"', "x")


# ---------------------------------------------------------------------------------------------
# Raw binary requests
# ---------------------------------------------------------------------------------------------


def test_raw_request_deduces_shape() -> None:
    body = np.arange(8, dtype=np.float32).tobytes()
    parsed = http_server.parse_raw_request(
        body, model_name="m", inputs=[("IN", "FP32", [-1, 4])], max_batch_size=8
    )
    assert parsed.raw_binary and parsed.output_binary("anything")
    assert parsed.inputs[0].shape == [1, 2, 4]
    assert http_server.decode_input(parsed.inputs[0]).reshape(-1).tolist() == list(range(8))
    fixed = http_server.parse_raw_request(body, model_name="m", inputs=[("IN", "FP32", [8])])
    assert fixed.inputs[0].shape == [8]
    # A BYTES input's one element is the whole body (Triton puts the length in front of it).
    strings = http_server.parse_raw_request(b"hi", model_name="m", inputs=[("S", "BYTES", [1])])
    assert http_server.decode_input(strings.inputs[0]).tolist() == [b"hi"]


@pytest.mark.parametrize(
    ("inputs", "body", "message"),
    [
        ([("A", "FP32", [4]), ("B", "FP32", [4])], bytes(16), "must only have 1 input"),
        ([("A", "FP32", [-1, -1])], bytes(16), "raw input 'A' can not be deduced"),
        ([("A", "BYTES", [-1])], bytes(16), "raw input 'A', the model must have input shape [1]"),
    ],
)
def test_raw_request_errors(inputs: list[Any], body: bytes, message: str) -> None:
    with pytest.raises(errors.HttpCodecError) as info:
        http_server.parse_raw_request(body, model_name="m", inputs=inputs)
    assert info.value.http_status == 400
    assert str(info.value.message()).startswith("[request id: <id_unknown>] ")
    assert message in str(info.value.message())


@pytest.mark.parametrize(
    ("dims", "size", "expected"),
    [([4], 125, "Expected 16, got 125"), ([-1], 5, "Expected 4, got 5")],
)
def test_raw_request_byte_count_that_does_not_fit(
    dims: list[int], size: int, expected: str
) -> None:
    # The variable dimension takes the byte count rounded down; the byte-size check then
    # names the model's input, as Triton's does.
    parsed = http_server.parse_raw_request(
        bytes(size), model_name="m", inputs=[("A", "FP32", dims)]
    )
    with pytest.raises(errors.HttpCodecError) as info:
        http_server.decode_input(parsed.inputs[0], model_name="m")
    assert f"input byte size mismatch for input 'A' for model 'm'. {expected}" in str(
        info.value.message()
    )


# ---------------------------------------------------------------------------------------------
# Compression
# ---------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(chunks=st.lists(st.binary(max_size=300), max_size=5))
def test_compression_round_trip(chunks: list[bytes]) -> None:
    joined = b"".join(chunks)
    for algorithm in http_body.SUPPORTED_ENCODINGS:
        packed = http_body.compress(chunks, algorithm)
        assert bytes(http_body.decompress(packed, algorithm)) == joined
    assert gzip.decompress(http_body.compress(chunks, "gzip")) == joined
    assert zlib.decompress(http_body.compress(chunks, "deflate")) == joined


@pytest.mark.parametrize(
    ("size", "window_bits"),
    [(0, 9), (512, 9), (513, 10), (4096, 12), (32 << 10, 15), (1 << 20, 15)],
)
def test_compression_window_fits_the_body(size: int, window_bits: int) -> None:
    # zlib allocates and clears the window and a hash table of as many entries for every
    # stream: a small response gets a small window (the zlib header's CINFO tells it).
    data = np.random.default_rng(size).integers(0, 4, size, dtype=np.uint8).tobytes()
    packed = http_body.compress([data[: size // 3], data[size // 3 :]], "deflate")
    assert packed[0] >> 4 == window_bits - 8 and zlib.decompress(packed) == data
    assert gzip.decompress(http_body.compress(data, "gzip")) == data


def test_decompress_rules() -> None:
    data = b"x" * 1000
    assert (
        http_body.decompress(data, None) is data and http_body.decompress(data, "identity") is data
    )
    raw_deflate = zlib.compressobj(wbits=-15)
    packed = raw_deflate.compress(data) + raw_deflate.flush()
    assert http_body.decompress(packed, "deflate") == data
    assert http_body.decompress(gzip.compress(data), "deflate") == data  # auto-detected
    with pytest.raises(errors.HttpCodecError) as info:
        http_body.decompress(data, "br")
    assert info.value.http_status == 501 and info.value.message() == "Unsupported compression type"
    with pytest.raises(errors.HttpCodecError) as info:
        http_body.decompress(b"not gzip", "gzip")
    assert info.value.http_status == 500
    with pytest.raises(errors.HttpCodecError, match="exceeds the maximum"):
        http_body.decompress(gzip.compress(data), "gzip", max_size=100)
    with pytest.raises(InferenceServerException, match="unsupported compression"):
        http_body.compress(data, "br")


def test_compressed_body_keeps_json_size() -> None:
    a = np.arange(100, dtype=np.int64)
    body = encode_request([http_client.encode_input("A", "INT64", [100], a)])
    packed = body.compressed("gzip")
    assert packed.json_size == body.json_size and packed.headers()["Content-Encoding"] == "gzip"
    parsed = http_server.parse_infer_request(
        http_body.decompress(packed.tobytes(), "gzip"), body.json_size
    )
    assert http_server.decode_input(parsed.inputs[0]).tolist() == a.tolist()
    assert body.compressed(None) is body


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("gzip", "gzip"),
        ("deflate", "deflate"),
        ("identity", None),
        ("br", None),
        ("gzip;q=0.5, deflate;q=0.8", "deflate"),
        ("deflate, gzip", "deflate"),
        ("gzip;q=0, deflate;q=0", None),
        ("br;q=1.0, gzip;q=0.1", "gzip"),
        ("identity;q=1, gzip;q=0.5", None),
    ],
)
def test_negotiate_encoding(header: str | None, expected: str | None) -> None:
    assert http_body.negotiate_encoding(header) == expected


# ---------------------------------------------------------------------------------------------
# Generate, other endpoints
# ---------------------------------------------------------------------------------------------


def test_generate_request_and_response() -> None:
    body = json.dumps(
        {
            "id": "g1",
            "IN": [1, 2, 3],
            "WAIT": 5,
            "temperature": 0.5,
            "parameters": {"DELAY": [0, 0, 0], "mode": "x", "sequence_id": 7},
        }
    ).encode()
    model_inputs = {"IN": ("INT32", [-1]), "DELAY": ("UINT32", [-1]), "WAIT": ("UINT32", [1])}
    parsed = generate.parse_generate_request(body, model_inputs=model_inputs)
    assert parsed.id == "g1"
    shapes = {p.name: p.shape for p in parsed.inputs}
    assert shapes == {"IN": [3], "WAIT": [1], "DELAY": [3]}
    assert http_server.decode_input(parsed.inputs[1]).tolist() == [5]
    # Every other key is a plain parameter, reserved names included (as in Triton).
    assert parsed.parameters.custom == {"temperature": 0.5, "mode": "x", "sequence_id": 7}
    payload = generate.encode_generate_response(
        "m",
        "1",
        [
            ("OUT", "INT32", np.array([4])),
            ("V", "INT32", np.array([1, 2])),
            ("S", "BYTES", np.array([b"hi"], np.object_)),
        ],
        request_id="g1",
    )
    # One object, members in byte order of their names (Triton builds it from a std::map).
    assert payload == b'{"OUT":4,"S":"hi","V":[1,2],"id":"g1","model_name":"m","model_version":"1"}'
    assert generate.encode_sse_event(b"{}") == b"data: {}\n\n"
    with pytest.raises(errors.HttpCodecError) as info:
        generate.parse_generate_request(b"", model_inputs={})
    assert info.value.http_status == 500


@pytest.mark.parametrize(
    ("value", "dims", "shape"),
    [
        (list(range(16)), [-1, 16], [1, 16]),  # a batching model's 1-D input gets batch 1
        ("hello", [-1, -1], [1, 1]),
        ([1, 2, 3, 4], [-1, 2], [2, 2]),
        ([1, 2, 3], [-1, -1], [1, 3]),
    ],
)
def test_generate_input_shapes(value: Any, dims: list[int], shape: list[int]) -> None:
    body = json.dumps({"X": value}).encode()
    parsed = generate.parse_generate_request(body, model_inputs={"X": ("INT32", dims)})
    assert parsed.inputs[0].shape == shape


def test_generate_input_that_does_not_fit() -> None:
    body = json.dumps({"X": [[1, 2]]}).encode()
    with pytest.raises(errors.HttpCodecError, match="can not convert input 'X' to tensor"):
        generate.parse_generate_request(body, model_inputs={"X": ("INT32", [-1, 16])})


def _generate_limit_error(consumed: int, name: str, size: int, limit: int) -> str:
    # src/http_server.cc:3728-3740 (ExactMappingInput), 2.73.0
    return (
        f"request size of {consumed} bytes with input '{name}' of size {size} bytes exceeds "
        f"the maximum allowed input size of {limit}. Use --http-max-input-size to increase "
        "the limit."
    )


def test_generate_input_size_limit() -> None:
    """Triton 2.73 adds up a generate request's input bytes in document order and refuses the
    input that takes them past ``--http-max-input-size`` (``ExactMappingInput``,
    src/http_server.cc:3691-3741, 2.73.0): a typed input counts its top-level elements times
    its datatype's size, a BYTES one 4 bytes and the UTF-8 of each string, nested lists
    included (``JsonBytesArrayByteSize``, :479-516); an empty one is added without being
    counted (:3718-3724); the limit itself is allowed (:3726-3741); the check comes before
    the shape is converted (:3743-3793) and before the input is added (a repeated name)."""
    inputs = {"X": ("INT32", [-1]), "Y": ("INT32", [-1]), "S": ("BYTES", [-1]), "F": ("INT32", [4])}

    def parse(body: str, limit: int | None) -> Any:
        return generate.parse_generate_request(
            body.encode(), model_inputs=inputs, max_input_size=limit
        )

    assert [p.shape for p in parse('{"X":[1,2],"Y":[3,4]}', 16).inputs] == [[2], [2]]
    with pytest.raises(errors.HttpCodecError) as info:
        parse('{"X":[1,2],"Y":[3,4,5]}', 16)
    assert info.value.http_status == 400
    assert info.value.message() == _generate_limit_error(8, "Y", 12, 16)
    # A scalar is one element; an empty list is not counted.
    assert len(parse('{"X":[],"Y":7,"S":[]}', 4).inputs) == 3
    # é is 2 bytes of UTF-8: (4 + 2) + (4 + 1).
    assert len(parse('{"S":["\u00e9",["c"]]}', 11).inputs) == 1
    with pytest.raises(errors.HttpCodecError) as info:
        parse('{"S":["\u00e9",["c"]]}', 10)
    assert info.value.message() == _generate_limit_error(0, "S", 11, 10)
    # The size is checked before the shape ([4] cannot take 5 elements) and before a
    # repeated name is refused.
    with pytest.raises(errors.HttpCodecError) as info:
        parse('{"F":[1,2,3,4,5]}', 16)
    assert info.value.message() == _generate_limit_error(0, "F", 20, 16)
    with pytest.raises(errors.HttpCodecError) as info:
        parse('{"X":[1,2],"X":[1,2]}', 12)
    assert info.value.message() == _generate_limit_error(8, "X", 8, 12)
    # "parameters" is converted by a call of its own, with its own count.
    assert len(parse('{"X":[1,2,3],"parameters":{"Y":[1,2,3]}}', 12).inputs) == 2
    with pytest.raises(errors.HttpCodecError) as info:
        parse('{"X":[1],"parameters":{"Y":[1,2],"S":["abcde"]}}', 12)
    assert info.value.message() == (
        "Converting keyword: 'parameters': " + _generate_limit_error(8, "S", 9, 12)
    )
    # No limit (Triton 2.51): the shape is what is refused.
    with pytest.raises(errors.HttpCodecError, match="can not convert input 'F'"):
        parse('{"F":[1,2,3,4,5]}', None)


def test_generate_empty_input() -> None:
    """Triton 2.73 adds a generate input of no bytes with no dimension
    (src/http_server.cc:3718-3724, 2.73.0); 2.51 spreads it over the model's dims."""
    inputs = {"X": ("INT32", [-1]), "S": ("BYTES", [-1, 2])}
    body = b'{"X":[],"S":[]}'
    parsed = generate.parse_generate_request(body, model_inputs=inputs, empty_unshaped=True)
    assert [(p.name, p.shape) for p in parsed.inputs] == [("X", []), ("S", [])]
    parsed = generate.parse_generate_request(body, model_inputs=inputs)
    assert [(p.name, p.shape) for p in parsed.inputs] == [("X", [0]), ("S", [0, 2])]


def test_repository_bodies() -> None:
    assert http_client.encode_index_request() == b""
    assert http_control.parse_index_request(b"") is False
    assert http_control.parse_index_request(http_client.encode_index_request(True)) is True
    with pytest.raises(errors.HttpCodecError) as info:
        http_control.parse_index_request(b'{"ready": 1}')
    assert info.value.http_status == 500  # Triton 2.51
    body = http_client.encode_load_request('{"name":"m"}', {"file:1/model.py": b"\x00code"})
    assert http_control.parse_load_request(body) == (
        '{"name":"m"}',
        {"file:1/model.py": b"\x00code"},
    )
    assert http_control.parse_load_request(b"") == (None, {})
    assert http_control.parse_load_request(http_client.encode_load_request()) == (None, {})
    for bad, message in [
        (b'{"parameters":{"other":"x"}}', "unexpected error on creating Triton parameter"),
        (b'{"parameters":{"config":1}}', "attempt to access JSON non-string as string"),
    ]:
        with pytest.raises(errors.HttpCodecError, match=message) as info:
            http_control.parse_load_request(bad)
        assert info.value.http_status == 500
    # Base64 is decoded as Triton's libb64 decodes it: characters outside the alphabet skip.
    assert http_control.parse_load_request(b'{"parameters":{"file:1/a":"!!QU*JD"}}')[1] == {
        "file:1/a": b"ABC"
    }
    assert http_control.parse_unload_request(http_client.encode_unload_request(True)) is True
    assert http_control.parse_unload_request(b"") is False
    # Triton 2.51 ignores an unload_dependents that is not a bool.
    assert http_control.parse_unload_request(b'{"parameters":{"unload_dependents":"yes"}}') is False


def test_shared_memory_bodies_and_paths() -> None:
    body = http_client.encode_system_shm_register("/k", 8, 64)
    assert http_control.parse_system_shm_register(body) == ("/k", 8, 64)
    assert http_control.parse_system_shm_register(b'{"key":"/k","byte_size":4}') == ("/k", 0, 4)
    for bad, message in [
        (b'{"byte_size":4}', "has no 'key' field"),
        (b'{"key":"/k"}', "has no 'byte_size' field"),
    ]:
        with pytest.raises(errors.HttpCodecError, match=message) as info:
            http_control.parse_system_shm_register(bad)
        assert info.value.http_status == 400
    handle = bytes(range(64))
    assert http_control.parse_cuda_shm_register(
        http_client.encode_cuda_shm_register(handle, 1, 32)
    ) == (
        handle,
        1,
        32,
    )
    with pytest.raises(errors.HttpCodecError, match="valid base64 encoded cudaIpcMemHandle_t"):
        http_control.parse_cuda_shm_register(
            b'{"raw_handle":{"b64":"%%"},"device_id":0,"byte_size":1}'
        )
    assert http_body.system_shm_path("status") == "/v2/systemsharedmemory/status"
    assert (
        http_body.system_shm_path("register", "a b")
        == "/v2/systemsharedmemory/region/a%20b/register"
    )
    assert http_body.cuda_shm_path("unregister", "r") == "/v2/cudasharedmemory/region/r/unregister"
    assert http_body.encode_query({"a": 1, "b": ["x y", "z"]}) == "a=1&b=x+y&b=z"
    assert http_body.encode_query(None) == ""
    assert http_body.model_path("simple") == "/v2/models/simple"
    assert http_body.model_path("a b", "2", "infer") == "/v2/models/a%20b/versions/2/infer"


def test_json_bytes_elements_of_other_types_go_as_their_str() -> None:
    """NVIDIA's client sends a BYTES element that is not bytes as ``str(element)`` with
    ``binary_data=False`` (Triton's QA sends object arrays of Python ints); the server's rule
    (``bytes_as="surrogateescape"``, model outputs) still refuses them."""
    data = np.array([[1, -2, 2**70, None, 1.5, np.int64(3), b"b", "s"]], dtype=np.object_)
    encoded = http_client.encode_input("X", "BYTES", [1, 8], data, binary_data=False)
    expected = ["1", "-2", str(2**70), "None", "1.5", "3", "b", "s"]
    assert encoded.data == expected
    doc = json.loads(encode_request([encoded]).tobytes())
    assert doc["inputs"][0]["data"] == expected
    with pytest.raises(InferenceServerException, match="cannot be sent as JSON"):
        jsontext.tensor_to_json("BYTES", data, bytes_as="surrogateescape")


def test_codec_error_pickles() -> None:
    import pickle

    error = errors.HttpCodecError("bad", 501)
    again = pickle.loads(pickle.dumps(error))
    assert again.http_status == 501 and again.message() == "bad" and again.status() == "501"


# ---------------------------------------------------------------------------------------------
# JSON data written as number text
# ---------------------------------------------------------------------------------------------

NUMBER_TYPES = [name for name in FIXED if name not in ("BF16",)]


def edge_values(datatype: str) -> np.ndarray:
    dtype = np_dtype(datatype)
    if dtype.kind == "b":
        return np.array([True, False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.max, 0, 1, info.max // 3], dtype=dtype)
    finfo = np.finfo(dtype)
    values = [0.0, -0.0, 0.1, -1.5, float(finfo.max), -float(finfo.max), float(finfo.tiny)]
    values += [float(finfo.smallest_subnormal), math.nan, math.inf, -math.inf]
    return np.array(values, dtype=dtype)


@pytest.mark.parametrize("datatype", NUMBER_TYPES)
def test_json_input_numbers_are_exact_and_list_is_lazy(datatype: str) -> None:
    array = edge_values(datatype).reshape(1, -1)
    encoded = http_client.encode_input("X", datatype, list(array.shape), array, binary_data=False)
    assert encoded.text is not None and encoded.raw is None
    body = encode_request([encoded], [http_client.encode_output("Y")], request_id="r")
    assert body.json_size is None
    doc = json.loads(body.tobytes())
    assert list(doc) == ["id", "inputs", "outputs"]
    entry = doc["inputs"][0]
    assert list(entry) == ["name", "shape", "datatype", "data"]
    wide = np.float64 if array.dtype.kind == "f" else array.dtype
    back = np.array(entry["data"], dtype=wide).astype(array.dtype)
    assert same(back, array.reshape(-1), bits=False)
    # The list (tritonclient keeps one) is made on demand, as before: widened values.
    expected = array.reshape(-1).astype(np.float64 if datatype == "FP16" else array.dtype)
    assert encoded.data is not None
    assert json.dumps(encoded.data) == json.dumps(tensor_list(datatype, expected))
    assert encoded.to_json()["data"] == encoded.data


def tensor_list(datatype: str, flat: np.ndarray) -> list[Any]:
    if datatype in ("FP16", "FP32"):
        return flat.astype(np.float64).tolist()  # type: ignore[no-any-return]
    return jsontext.tensor_to_json(datatype, flat)


def test_json_input_body_matches_plain_json_dumps() -> None:
    rng = np.random.default_rng(2)
    ints = rng.integers(-50, 50, (2, 3)).astype(np.int32)
    floats = rng.standard_normal(7).astype(np.float64)
    inputs = [
        http_client.encode_input("I", "INT32", [2, 3], ints, binary_data=False),
        http_client.encode_input("B", "BOOL", [2], np.array([True, False]), binary_data=False),
        http_client.encode_input("F", "FP64", [7], floats, binary_data=False),
        http_client.encode_input(
            "S", "BYTES", [1], np.array([b"x"], np.object_), binary_data=False
        ),
        http_client.encode_input("R", "INT8", [2], np.array([1, 2], np.int8)),
    ]
    body = encode_request(inputs, sequence_id=3, parameters={"p": "v"})
    expected = {
        "inputs": [each.to_json() for each in inputs],
        "parameters": {"sequence_id": 3, "sequence_start": False, "sequence_end": False},
    }
    expected["parameters"].update({"binary_data_output": True, "p": "v"})
    header = jsontext.dumps(expected)
    assert body.tobytes()[: body.json_size] == header and body.json_size == len(header)


def test_json_input_is_a_snapshot() -> None:
    array = np.arange(4, dtype=np.float32)
    encoded = http_client.encode_input("X", "FP32", [4], array, binary_data=False)
    array[:] = 9
    assert json.loads(encode_request([encoded]).tobytes())["inputs"][0]["data"] == [
        0.0,
        1.0,
        2.0,
        3.0,
    ]


def test_json_input_float32_text_is_short() -> None:
    array = np.array([0.1, 2.5, -3e-7], np.float32)
    encoded = http_client.encode_input("X", "FP32", [3], array, binary_data=False)
    assert b'"data":[0.1,2.5,-3e-07]' in encode_request([encoded]).tobytes()
    assert encoded.data == array.astype(np.float64).tolist()


def test_json_input_non_contiguous_and_empty() -> None:
    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    view = base[::2, ::-3]
    encoded = http_client.encode_input("X", "INT64", [2, 2], view, binary_data=False)
    doc = json.loads(encode_request([encoded]).tobytes())
    assert doc["inputs"][0]["data"] == view.reshape(-1).tolist()
    empty = http_client.encode_input(
        "E", "FP32", [0, 3], np.zeros((0, 3), np.float32), binary_data=False
    )
    doc = json.loads(encode_request([empty]).tobytes())
    assert doc["inputs"][0]["data"] == [] and doc["inputs"][0]["shape"] == [0, 3]


def test_infer_input_keeps_its_json_data() -> None:
    import tritonclient.http as httpclient

    array = np.array([[1.25, -0.0, 3.0]], np.float32)
    inp = httpclient.InferInput("X", [1, 3], "FP32").set_data_from_numpy(array, binary_data=False)
    assert inp._get_tensor()["data"] == [1.25, -0.0, 3.0]
    inp.set_shape([3])
    body, size = httpclient.InferenceServerClient.generate_request_body([inp])
    assert size is None
    entry = json.loads(body)["inputs"][0]
    assert entry["shape"] == [3] and entry["data"] == [1.25, -0.0, 3.0]
    assert math.copysign(1, entry["data"][1]) == -1


@pytest.mark.parametrize("datatype", [name for name in NUMBER_TYPES if name != "FP16"])
def test_json_output_text_is_unchanged(datatype: str) -> None:
    array = edge_values(datatype)
    outputs = [
        http_server.ResponseOutput("A", datatype, [array.size], array),
        http_server.ResponseOutput("B", "BYTES", [1], np.array([b"\xc3\xa9z"], np.object_)),
        http_server.ResponseOutput("C", datatype, [array.size], array, True),
        http_server.ResponseOutput("D", datatype, [array.size], array[::-1]),
    ]
    body = http_server.encode_infer_response("m", "1", outputs, request_id="q", parameters={"k": 1})
    entries = []
    for each in outputs:
        entry: dict[str, Any] = {"name": each.name, "datatype": datatype, "shape": [array.size]}
        if each.binary:
            entry["parameters"] = {"binary_data_size": array.nbytes}
        else:
            entry["data"] = jsontext.tensor_to_json(
                each.datatype, each.data, bytes_as="surrogateescape"
            )  # type: ignore[arg-type]
        entry["datatype"] = each.datatype
        entries.append(entry)
    entries[1]["shape"] = [1]
    expected = jsontext.dumps(
        {
            "id": "q",
            "model_name": "m",
            "model_version": "1",
            "parameters": {"k": 1},
            "outputs": entries,
        },
        raw_strings=True,
    )
    assert body.tobytes()[: body.json_size] == expected
    decoded = http_client.decode_infer_response(body.tobytes(), str(body.json_size))
    assert same(decoded.as_numpy("A"), array, bits=False)  # type: ignore[arg-type]
