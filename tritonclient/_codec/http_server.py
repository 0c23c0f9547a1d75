"""The server side of the HTTP/REST inference endpoint (sans-I/O).

:func:`parse_infer_request` (JSON plus the binary tensor extension) and
:func:`parse_raw_request` (``Inference-Header-Content-Length: 0``) read a request;
:func:`decode_input` turns an input's JSON data or raw bytes into numpy;
:func:`encode_infer_response` writes the answer.  Every problem is an
:class:`~tritonclient._codec.errors.HttpCodecError` carrying the HTTP status Triton answers with
(JSON parsing and typing failures are 500, validation failures 400, section 8), in Triton
2.51's words (section 10).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient.utils import (
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
    InferenceServerException,
)
from tritonclient.utils._dtypes import DATATYPES
from tritonclient.utils._serialize import (
    json_number_text,
)

from .errors import (
    HttpCodecError,
    http_bad,
    http_internal,
    json_missing,
    json_type_error,
    json_type_text,
    request_prefix,
)
from .http_body import EncodedBody
from .jsontext import (
    MAX_JSON_DEPTH,
    NUMBER_TYPES,
    dumps,
    is_int64,
    is_uint,
    members,
    parse_json_document,
    tensor_from_json,
    tensor_to_json,
    unread_tensor,
    with_data_text,
)
from .numbers import as_int64
from .raw import element_count, tensor_from_buffer, tensor_to_buffer
from .types import (
    Buffer,
    DecodedInferRequest,
    DecodedInput,
    DecodedOutput,
    ParamValue,
    SharedMemoryRef,
)

__all__ = [
    "ParsedInferRequest",
    "ParsedInput",
    "ParsedOutput",
    "RequestParameters",
    "ResponseOutput",
    "custom_parameter",
    "decode_infer_request",
    "decode_input",
    "encode_error",
    "encode_infer_response",
    "parse_infer_request",
    "parse_raw_request",
    "parse_request_parameters",
]


@dataclass
class RequestParameters:
    """The request-level ``parameters`` of an inference request, interpreted (section 7.1).

    Attributes
    ----------
    custom : dict
        Parameters passed to the model (every key that is not interpreted below).
    sequence_id : int or str
        Correlation id (0 / ``""``: none).
    sequence_start, sequence_end : bool
        Sequence flags.
    priority : int
        Priority level (0: the model's default).
    timeout : int or None
        Queue timeout in microseconds.
    binary_data_output : bool or None
        Default binary/JSON choice for outputs the request does not list.
    """

    custom: dict[str, ParamValue] = field(default_factory=dict)
    sequence_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    timeout: int | None = None
    binary_data_output: bool | None = None


def custom_parameter(key: str, value: Any) -> ParamValue:
    if isinstance(value, (bool, str)):
        return value
    if type(value) is int:
        return value if is_int64(value) else float(value)
    if type(value) is float:
        return value
    raise http_bad(
        f"parameter '{key}' has invalid type. It should be either 'int', 'bool', or 'string'."
    )


def parse_request_parameters(parameters: Any) -> RequestParameters:
    """Interpret a request's ``parameters`` object (server side).

    Parameters
    ----------
    parameters : Any
        The parsed JSON value of ``parameters`` (None when absent).

    Returns
    -------
    RequestParameters
        Reserved parameters parsed into fields, the rest in ``custom``.

    Raises
    ------
    HttpCodecError
        500 for a reserved parameter of the wrong JSON type (Triton's ``Unable to parse
        'sequence_id': ...``); 400 for ``triton_``-prefixed keys and custom values that are
        objects, arrays or null.
    """
    result = RequestParameters()
    if parameters is None:
        return result
    if not isinstance(parameters, dict):
        raise json_type_error("parameters", "object")
    for key, value in parameters.items():
        if key.startswith(TRITON_RESERVED_REQUEST_PARAMS_PREFIX):
            raise http_bad(
                f"parameter keys starting with '{TRITON_RESERVED_REQUEST_PARAMS_PREFIX}' are "
                "reserved for Triton usage and should not be specified."
            )
        if key == "sequence_id":
            if not (is_uint(value) or isinstance(value, str)):
                raise json_type_error("sequence_id", "string")
            result.sequence_id = value
        elif key in ("sequence_start", "sequence_end", "binary_data_output"):
            if not isinstance(value, bool):
                raise json_type_error(key, "boolean")
            setattr(result, key, value)
        elif key in ("priority", "timeout"):
            if not is_uint(value):
                raise json_type_error(key, "unsigned-integer")
            setattr(result, key, value)
        else:
            result.custom[key] = custom_parameter(key, value)
    return result


#: The name Triton gives the input of a raw binary request (``EVBufferToRawInput``).
RAW_INPUT_NAME = "raw_input"


@dataclass
class ParsedInput:
    """One input of a parsed inference request (server side).

    Attributes
    ----------
    name, datatype : str
        Input name and datatype (not yet checked against the table for binary inputs).
    shape : list of int
        The shape.
    parameters : dict
        The input's ``parameters`` as sent.
    data : Any
        The JSON ``data`` (nested or flat), when the input is JSON.
    raw : memoryview or None
        The input's binary chunk (a view of the body), when it used ``binary_data_size``.
    shared_memory : SharedMemoryRef or None
        The placement, when the input is in shared memory.
    """

    name: str
    datatype: str
    shape: list[int]
    parameters: dict[str, Any] = field(default_factory=dict)
    data: Any = None
    raw: memoryview | None = None
    shared_memory: SharedMemoryRef | None = None


@dataclass
class ParsedOutput:
    """One requested output of a parsed inference request (server side).

    Attributes
    ----------
    name : str
        Output name.
    binary_data : bool
        Return it with the binary extension.
    class_count : int
        Classification top-K (0: off).
    shared_memory : SharedMemoryRef or None
        Write it to this region.
    parameters : dict
        The output's ``parameters`` as sent.
    """

    name: str
    binary_data: bool = False
    class_count: int = 0
    shared_memory: SharedMemoryRef | None = None
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParsedInferRequest:
    """A parsed inference request (server side).

    Attributes
    ----------
    id : str
        Request id ("" when absent).
    inputs : list of ParsedInput
        The inputs in request order.
    outputs : list of ParsedOutput
        The requested outputs (empty: every output).
    parameters : RequestParameters
        Interpreted request parameters.
    raw_binary : bool
        True for a raw binary request (``Inference-Header-Content-Length: 0``): every output
        is returned in binary.
    """

    id: str = ""
    inputs: list[ParsedInput] = field(default_factory=list)
    outputs: list[ParsedOutput] = field(default_factory=list)
    parameters: RequestParameters = field(default_factory=RequestParameters)
    raw_binary: bool = False

    def output_binary(self, name: str) -> bool:
        """Whether output ``name`` goes back in binary (section 3.8.3).

        A listed output is binary only when its own ``binary_data`` is true; with no
        ``outputs`` listed the request-level ``binary_data_output`` decides; a raw binary
        request returns everything in binary.
        """
        if self.raw_binary:
            return True
        if self.outputs:
            for output in self.outputs:
                if output.name == name:
                    return output.binary_data
            return False
        return bool(self.parameters.binary_data_output)

    def output(self, name: str) -> ParsedOutput | None:
        """The requested output ``name``, or None when not listed."""
        for output in self.outputs:
            if output.name == name:
                return output
        return None


def _opt_str(obj: Mapping[str, Any], key: str, default: str = "") -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise json_type_error(key, "string")
    return value


def _req_str(obj: Mapping[str, Any], key: str) -> str:
    if key not in obj:
        raise json_missing(key)
    return _opt_str(obj, key)


def _req_array(obj: Mapping[str, Any], key: str) -> list[Any]:
    """TritonJson's ``MemberAsArray``, with the ``Unable to parse '<key>'`` prefix."""
    if key not in obj:
        raise json_missing(key)
    value = obj[key]
    if not isinstance(value, list):
        raise json_type_error(key, "array")
    return value


def _shape_of(obj: Mapping[str, Any]) -> list[int]:
    """An input's ``shape``: unsigned integers, kept as ``int64`` as Triton keeps them
    (``IndexAsUInt`` into a ``std::vector<int64_t>``, src/http_server.cc:2589-2599 at 2.73.0,
    the same at v2.51.0), so that ``2**64 - 1`` is the wildcard ``-1`` its checks name."""
    shape = _req_array(obj, "shape")
    if not all(is_uint(d) for d in shape):
        raise json_type_error("shape", "unsigned-integer")
    return [as_int64(int(d)) for d in shape]


def _tensor_parameters(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A tensor's ``parameters`` members (none when absent or not an object, as TritonJson's
    ``Find`` sees it)."""
    return members(obj.get("parameters"))


def _shared_memory_of(parameters: Mapping[str, Any]) -> SharedMemoryRef | None:
    """Triton's ``CheckSharedMemoryData``: region, offset and byte size, each read if present
    (an absent byte size is 0, which the region's bounds check then refuses)."""
    if "shared_memory_region" not in parameters:
        return None
    region = _opt_str(parameters, "shared_memory_region")
    for key in ("shared_memory_offset", "shared_memory_byte_size"):
        if key in parameters and not is_uint(parameters[key]):
            raise json_type_error(key, "unsigned-integer")
    return SharedMemoryRef(
        region,
        int(parameters.get("shared_memory_byte_size", 0)),
        int(parameters.get("shared_memory_offset", 0)),
    )


def _check_input_sources(obj: Mapping[str, Any]) -> None:
    """Triton's ``ValidateInputContentType``: exactly one of data, binary, shared memory."""
    parameters = _tensor_parameters(obj)
    present = [
        label
        for label, found in (
            ("data", "data" in obj),
            ("binary_data_size", "binary_data_size" in parameters),
            ("shared_memory_region", "shared_memory_region" in parameters),
        )
        if found
    ]
    if len(present) != 1:
        detail = "no field is set" if not present else "set " + " ".join(f"'{s}'" for s in present)
        raise http_bad(
            "Input must set only one of the following fields: 'data', 'binary_data_size' in "
            "'parameters', 'shared_memory_region' in 'parameters'. But " + detail
        )


def _parse_input(element: Any) -> ParsedInput:
    """One element of ``inputs``, read in the order Triton's ``ParseJsonTritonIO`` reads it."""
    obj = members(element)
    _check_input_sources(obj)
    name = _req_str(obj, "name")
    datatype = _req_str(obj, "datatype")
    shape = _shape_of(obj)
    parameters = _tensor_parameters(obj)
    parsed = ParsedInput(name, datatype, shape, parameters)
    if "binary_data_size" in parameters:
        if not is_uint(parameters["binary_data_size"]):
            raise json_type_error("binary_data_size", "unsigned-integer")
        return parsed
    parsed.shared_memory = _shared_memory_of(parameters)
    if parsed.shared_memory is None:
        parsed.data = obj["data"]
        # No dimension counts 0 elements in Triton (GetElementCount): 'data' is not read.
        if shape and element_count(shape) and not isinstance(parsed.data, list):
            raise json_type_error("data", "array")
    return parsed


def _parse_output(element: Any) -> ParsedOutput:
    """One element of ``outputs``, read in the order Triton's ``ParseJsonTritonIO`` reads it."""
    obj = members(element)
    parameters = _tensor_parameters(obj)
    if "shared_memory_region" in parameters:
        if "classification" in parameters:
            raise http_bad("Output can't set both 'shared_memory_region' and 'classification'")
        if "binary_data" in parameters:
            if not isinstance(parameters["binary_data"], bool):
                raise http_internal(f"Unable to set 'binary_data': {json_type_text('boolean')}")
            if parameters["binary_data"]:
                raise http_bad("Output can't set both 'shared_memory_region' and 'binary_data'")
    name = _req_str(obj, "name")
    class_count = parameters.get("classification", 0)
    if not is_uint(class_count):
        raise json_type_error("classification", "unsigned-integer", verb="set")
    placement = _shared_memory_of(parameters)
    binary = False
    if placement is None:
        binary = parameters.get("binary_data", False)
        if not isinstance(binary, bool):
            raise json_type_error("binary_data", "boolean")
    return ParsedOutput(name, binary, int(class_count), placement, parameters)


def parse_infer_request(
    body: Buffer, header_length: int | None = None, *, model_name: str = ""
) -> ParsedInferRequest:
    """Parse an inference request body (JSON, optionally followed by binary input data).

    The fields are read in the order Triton's HTTP frontend reads them (``id``, then
    ``parameters``, then each input and its data, then ``outputs``), so that a request with
    several faults gets the message Triton gives for it.

    Parameters
    ----------
    body : bytes-like
        The decompressed body.
    header_length : int or None, optional
        The JSON length (``Inference-Header-Content-Length``); None: the whole body is JSON.
        For 0 (raw binary requests) use :func:`parse_raw_request`.
    model_name : str, optional
        For error messages.

    Returns
    -------
    ParsedInferRequest
        Binary inputs hold ``memoryview`` slices of ``body`` (no copy).

    Raises
    ------
    HttpCodecError
        500 for malformed JSON and JSON typing errors; 400 for the validation failures of
        sections 3.7 and 3.8 (data sources, JSON FP16/BF16, binary chunk accounting,
        ``triton_`` parameters, ...).
    """
    view = memoryview(body).cast("B") if not isinstance(body, memoryview) else body.cast("B")
    size = len(view) if header_length is None else header_length
    if not 0 < size <= len(view) and not (size == 0 and len(view) == 0):
        raise http_bad(f"inference header size should be in range (0, {len(view)}), got: {size}")
    request = members(parse_json_document(view[:size]))
    request_id = _opt_str(request, "id")
    raw_parameters = request.get("parameters")
    if "parameters" in request and not isinstance(raw_parameters, dict):
        raise http_internal("failed to get request params.: attempt to get members for non-object")
    parameters = parse_request_parameters(raw_parameters)
    raw_inputs = _req_array(request, "inputs")
    inputs: list[ParsedInput] = []
    offset = size
    for element in raw_inputs:
        each = _parse_input(element)
        inputs.append(each)
        if "binary_data_size" not in each.parameters:
            continue
        declared = int(each.parameters["binary_data_size"])
        available = len(view) - offset
        if declared and size == 0:
            raise http_bad(
                "must specify valid 'Infer-Header-Content-Length' in request header and "
                "'binary_data_size' when passing inputs in binary data format"
            )
        if available < declared:
            raise http_bad(
                f"unexpected size for input '{each.name}', expecting {declared - available} "
                f"additional bytes for model '{model_name}'"
            )
        each.raw = view[offset : offset + declared]
        offset += declared
    if offset != len(view):
        raise http_bad(f"unexpected additional input data for model '{model_name}'")
    outputs: list[ParsedOutput] = []
    if "outputs" in request:
        outputs = [_parse_output(each) for each in _req_array(request, "outputs")]
    return ParsedInferRequest(request_id, inputs, outputs, parameters)


def parse_raw_request(
    body: Buffer,
    *,
    model_name: str,
    inputs: Sequence[tuple[str, str, Sequence[int]]],
    max_batch_size: int = 0,
) -> ParsedInferRequest:
    """Parse a raw binary request (``Inference-Header-Content-Length: 0``, section 3.9).

    The body is the raw bytes of the model's single input, whose shape Triton deduces from
    the model's dims: a batching model gets a batch dimension of 1, and the one variable
    dimension (at most one) takes the byte count divided by the size of the rest (rounded
    down: a count that does not fit is left to the server's byte-size check, which names the
    input).  A BYTES input must have dims ``[1]``; the whole body is its one element.  Every
    output is returned in binary.

    Parameters
    ----------
    body : bytes-like
        The decompressed body.
    model_name : str
        The model.
    inputs : sequence of (name, datatype, dims)
        The model's inputs from its configuration (dims without the batch dimension).
    max_batch_size : int, optional
        The model's ``max_batch_size``.

    Returns
    -------
    ParsedInferRequest
        One input named as the model's, ``raw`` a view of ``body`` (for BYTES: the body
        behind its 4-byte length); ``raw_binary`` True.

    Raises
    ------
    HttpCodecError
        400, with Triton's messages, when the model does not have exactly one input or the
        shape cannot be deduced.
    """
    view = memoryview(body).cast("B") if not isinstance(body, memoryview) else body.cast("B")
    prefix = request_prefix("")
    if len(inputs) != 1:
        raise http_bad(
            f"{prefix}Raw request must only have 1 input (found 1) to be deduced but got "
            f"{len(inputs)} inputs in '{model_name}' model configuration"
        )
    name, datatype, dims = inputs[0]
    shape = [1] if max_batch_size != 0 else []
    variable = -1
    fixed = 1
    for dim in (int(d) for d in dims):
        if dim == -1:
            if variable != -1:
                raise http_bad(
                    f"{prefix}The shape of the raw input '{name}' can not be deduced because "
                    "there are more than one variable-sized dimension"
                )
            variable = len(shape)
        else:
            fixed *= dim
        shape.append(dim)
    raw: Buffer = view
    if datatype == "BYTES":
        if variable != -1 or fixed != 1:
            raise http_bad(
                f"{prefix}For BYTE datatype raw input '{name}', the model must have input shape [1]"
            )
        raw = memoryview(struct.pack("<I", len(view)) + bytes(view))
    elif variable != -1:
        info = DATATYPES.get(datatype)
        size = info.byte_size if info is not None and info.byte_size else 0
        shape[variable] = len(view) // fixed // size if fixed and size else 0
    parsed = ParsedInput(name, datatype, shape, {"binary_data_size": len(raw)}, raw=memoryview(raw))
    return ParsedInferRequest("", [parsed], [], RequestParameters(), raw_binary=True)


def _decode_data(
    parsed: ParsedInput,
    source: Buffer | None,
    model_name: str,
    request_id: str,
    max_json_depth: int | None,
    element_count_2_73: bool,
    max_json_bytes: int | None,
) -> npt.NDArray[Any]:
    """An input's binary (``source``) or JSON data decoded (see :func:`decode_input`)."""
    if source is not None:
        return tensor_from_buffer(
            parsed.datatype,
            parsed.shape,
            source,
            name=parsed.name,
            model_name=model_name,
            request_id=request_id,
        )
    return tensor_from_json(
        parsed.datatype,
        parsed.shape,
        parsed.data,
        name=parsed.name,
        max_depth=max_json_depth,
        element_count_2_73=element_count_2_73,
        max_bytes=max_json_bytes,
    )


def decode_input(
    parsed: ParsedInput,
    buffer: Buffer | None = None,
    *,
    model_name: str = "",
    request_id: str = "",
    max_json_depth: int | None = MAX_JSON_DEPTH,
    element_count_2_73: bool = False,
    max_json_bytes: int | None = None,
) -> npt.NDArray[Any]:
    """The numpy value of a parsed input.

    Parameters
    ----------
    parsed : ParsedInput
        The input.
    buffer : bytes-like, optional
        The input's bytes when they are not in the body (the shared-memory view); by default
        its binary chunk or JSON data is decoded.
    model_name, request_id : str, optional
        For error messages.
    max_json_depth : int or None, optional
        How deep JSON ``data`` may nest (see :func:`tensor_from_json`).
    element_count_2_73 : bool, optional
        Count JSON data's elements as Triton 2.73 and refuse invalid, overflowing or
        oversized shapes (see :func:`tensor_from_json`).
    max_json_bytes : int or None, optional
        The largest byte size of JSON data (see ``max_bytes`` of :func:`tensor_from_json`).

    Returns
    -------
    numpy.ndarray
        Shaped as the input; raw data is not copied (BYTES excepted).

    Raises
    ------
    HttpCodecError
        As :func:`tensor_from_buffer` and :func:`tensor_from_json`.
    """
    source = buffer if buffer is not None else parsed.raw
    if source is not None and any(d < 0 for d in parsed.shape):
        # Triton's HTTP frontend never sizes binary or shared-memory data: the core refuses a
        # wildcard or negative dimension before it looks at them ("All input dimensions
        # should be specified ...", "unexpected shape ...").
        return unread_tensor(parsed.datatype)
    args = (model_name, request_id, max_json_depth, element_count_2_73, max_json_bytes)
    if not parsed.shape:
        # Triton reads no data for a shape of no dimension: GetElementCount counts 0
        # elements (src/common.cc:109-135 at 2.73.0, :79-97 at v2.51.0;
        # src/http_server.cc:2702-2707), binary data are not sized, and the core refuses the
        # shape before it looks at them ("... has no shape but model requires batch
        # dimension", "unexpected shape ...").  Data that make a scalar are decoded (this
        # server's core may be asked about one); what would fail to decode is not reported.
        try:
            return _decode_data(parsed, source, *args)
        except HttpCodecError:
            return unread_tensor(parsed.datatype)
    return _decode_data(parsed, source, *args)


def decode_infer_request(
    parsed: ParsedInferRequest,
    model_name: str,
    model_version: int = -1,
    *,
    shm_resolver: Callable[[str, SharedMemoryRef], Buffer] | None = None,
    max_json_depth: int | None = MAX_JSON_DEPTH,
    element_count_2_73: bool = False,
    max_json_bytes: int | None = None,
) -> DecodedInferRequest:
    """A parsed request's tensors decoded, in the form both protocols' decoders hand on.

    Parameters
    ----------
    parsed : ParsedInferRequest
        From :func:`parse_infer_request` or :func:`parse_raw_request`.
    model_name : str
        The model the URL names (also for error messages).
    model_version : int, optional
        The version the URL names; -1 for the server's choice.
    shm_resolver : callable, optional
        ``shm_resolver(input_name, ref)`` returns the buffer of a shared-memory input (and
        raises to refuse it).  Without one, shared-memory inputs are refused.
    max_json_depth : int or None, optional
        How deep an input's JSON ``data`` may nest (see :func:`tensor_from_json`).
    element_count_2_73 : bool, optional
        Count JSON data's elements as Triton 2.73 (see :func:`tensor_from_json`).
    max_json_bytes : int or None, optional
        The largest byte size of an input's JSON data (see :func:`tensor_from_json`).

    Returns
    -------
    DecodedInferRequest
        Inputs without tensor parameters (over HTTP they only say where the data are);
        outputs with ``classification`` when asked for.

    Raises
    ------
    HttpCodecError
        As :func:`decode_input`; whatever ``shm_resolver`` raises passes through.
    """
    inputs = []
    for each in parsed.inputs:
        ref = each.shared_memory
        buffer = None
        if ref is not None:
            if shm_resolver is None:
                raise http_bad("shared-memory inputs are not supported by this decoder")
            buffer = shm_resolver(each.name, ref)
        data = decode_input(
            # Triton adds a raw binary body as the input "raw_input" (EVBufferToRawInput),
            # the name its byte-size check reports.
            replace(each, name=RAW_INPUT_NAME) if parsed.raw_binary else each,
            buffer,
            model_name=model_name,
            request_id=parsed.id,
            max_json_depth=max_json_depth,
            element_count_2_73=element_count_2_73,
            max_json_bytes=max_json_bytes,
        )
        inputs.append(DecodedInput(each.name, each.datatype, tuple(each.shape), data, {}, ref))
    outputs = []
    for wanted in parsed.outputs:
        parameters: dict[str, ParamValue] = {}
        if wanted.class_count:
            parameters["classification"] = wanted.class_count
        outputs.append(DecodedOutput(wanted.name, parameters, wanted.shared_memory))
    interpreted = parsed.parameters
    return DecodedInferRequest(
        model_name=model_name,
        model_version=model_version,
        id=parsed.id,
        inputs=inputs,
        outputs=outputs,
        parameters=dict(interpreted.custom),
        correlation_id=interpreted.sequence_id,
        sequence_start=interpreted.sequence_start,
        sequence_end=interpreted.sequence_end,
        priority=interpreted.priority,
        timeout_us=interpreted.timeout or 0,
    )


@dataclass
class ResponseOutput:
    """One output of a response being built (server side).

    Attributes
    ----------
    name, datatype : str
        Output name and datatype.
    shape : sequence of int
        The full shape.
    data : numpy.ndarray or None
        The values; None for an output written to shared memory (only name, datatype and
        shape are reported then).
    binary : bool
        Send with the binary extension rather than as JSON ``data``.
    """

    name: str
    datatype: str
    shape: Sequence[int]
    data: npt.NDArray[Any] | None
    binary: bool = False


def encode_infer_response(
    model_name: str,
    model_version: str,
    outputs: Iterable[ResponseOutput],
    *,
    request_id: str = "",
    parameters: Mapping[str, ParamValue] | None = None,
) -> EncodedBody:
    """Build an inference response body (section 3.7.2 key order; binary data in output order).

    Parameters
    ----------
    model_name, model_version : str
        The model and version that answered.
    outputs : iterable of ResponseOutput
        The outputs, in the order the model produced them.
    request_id : str, optional
        Echoed when non-empty.
    parameters : mapping, optional
        Response parameters (omitted when empty).

    Returns
    -------
    EncodedBody
        ``json_size`` set when binary data follows the JSON (an empty binary output alone
        leaves the body plain JSON, as in Triton).  Binary chunks of fixed-size outputs are
        views of the arrays (no copy).

    Raises
    ------
    HttpCodecError
        400 for an FP16/BF16 output requested as JSON (the whole request fails, as in
        Triton).
    """
    response: dict[str, Any] = {}
    if request_id:
        response["id"] = request_id
    response["model_name"] = model_name
    response["model_version"] = model_version
    if parameters:
        response["parameters"] = dict(parameters)
    entries: list[bytes] = []
    chunks: list[Buffer] = []
    binary = False
    for output in outputs:
        entry: dict[str, Any] = {
            "name": output.name,
            "datatype": output.datatype,
            "shape": [int(d) for d in output.shape],
        }
        if output.data is not None:
            if output.binary:
                raw = tensor_to_buffer(output.datatype, output.data)
                size = memoryview(raw).nbytes
                entry["parameters"] = {"binary_data_size": size}
                if size:
                    # Triton marks a body binary only when some binary data follows the JSON.
                    binary = True
                    chunks.append(raw)
            else:
                text = _response_number_text(output.datatype, output.data)
                if text is not None:
                    entries.append(with_data_text(dumps(entry, raw_strings=True), text))
                    continue
                try:
                    entry["data"] = tensor_to_json(
                        output.datatype, output.data, bytes_as="surrogateescape"
                    )
                except HttpCodecError:
                    raise
                except InferenceServerException as exc:
                    raise http_internal(str(exc.message())) from None
        entries.append(dumps(entry, raw_strings=True))
    # "outputs" is the last member: splice the entries (already JSON) into its place.
    response["outputs"] = []
    head = dumps(response, raw_strings=True)
    header = b"".join((head[:-3], b"[", b",".join(entries), b"]}"))
    return EncodedBody([header, *chunks], len(header) if binary else None)


def _response_number_text(datatype: str, data: Any) -> bytes | None:
    """JSON number text of an output sent as JSON, or None where :func:`tensor_to_json`
    must make the list (BYTES, FP16/BF16 errors, values not in the datatype's dtype).

    The text equals ``json.dumps`` of :func:`tensor_to_json`'s list: FP32 values are
    widened to double, as Triton writes them."""
    if datatype not in NUMBER_TYPES or datatype == "FP16" or not isinstance(data, np.ndarray):
        return None
    if data.dtype != DATATYPES[datatype].numpy_type:
        return None
    return json_number_text(data, float32_as_double=True)


def encode_error(message: str) -> bytes:
    """The error body ``{"error": "<message>"}``."""
    return dumps({"error": message}, raw_strings=True)
