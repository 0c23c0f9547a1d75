"""gRPC framing: inference messages with their raw tensor contents outside the protobuf object.

Serializing a ``ModelInferRequest`` with large ``raw_input_contents`` through protobuf copies
every buffer; here the message is written as its protobuf header followed by the raw contents
as length-delimited fields written from the buffers themselves, and parsed back into a message
without its raw contents plus ``memoryview`` slices of the received bytes (no copy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf.message import DecodeError

from tritonclient._proto import service_pb2

from .grpc_client import InputTensor, RequestedOutput, _build_request, _set_shm_parameters
from .grpc_common import set_parameters
from .raw import buffer_nbytes
from .types import Buffer

__all__ = [
    "SMALL_MESSAGE_BYTES",
    "encode_request_header",
    "input_tensor_field",
    "len_field",
    "parse_infer_request",
    "parse_infer_response",
    "parse_stream_response",
    "raw_input_field_header",
    "requested_output_field",
    "serialize_infer_request",
    "serialize_infer_response",
    "serialize_stream_response",
]

_WIRE_VARINT, _WIRE_FIXED64, _WIRE_LEN, _WIRE_FIXED32 = 0, 1, 2, 5


_REQUEST_RAW_FIELD = 7  # ModelInferRequest.raw_input_contents


_RESPONSE_RAW_FIELD = 6  # ModelInferResponse.raw_output_contents


_STREAM_RESPONSE_FIELD = 2  # ModelStreamInferResponse.infer_response


_RAW_INPUT_TAG = bytes(((_REQUEST_RAW_FIELD << 3) | _WIRE_LEN,))


_SMALL_VARINTS = [bytes((i,)) for i in range(0x80)]


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _read_varint(view: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(view):
            raise ValueError("truncated protobuf message (varint)")
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("malformed protobuf varint")


def _len_fields(field_number: int, buffers: Sequence[Buffer]) -> tuple[list[Buffer], int]:
    """Wire form of ``buffers`` as occurrences of a length-delimited field, and its size."""
    tag = _varint((field_number << 3) | _WIRE_LEN)
    parts: list[Buffer] = []
    total = 0
    for buffer in buffers:
        size = buffer_nbytes(buffer)
        length = _varint(size)
        parts += (tag, length, buffer)
        total += len(tag) + len(length) + size
    return parts, total


#: Messages up to this size are parsed by protobuf in one go (raw contents copied, which
#: costs less than splitting them off in Python); larger ones are split without copying.
SMALL_MESSAGE_BYTES = 64 * 1024


_REQUEST_INPUT_FIELD = 5  # ModelInferRequest.inputs


_REQUEST_OUTPUT_FIELD = 6  # ModelInferRequest.outputs


def len_field(field_number: int, payload: bytes) -> bytes:
    """One occurrence of a length-delimited field: tag, length and ``payload``.

    Parameters
    ----------
    field_number : int
        The field number.
    payload : bytes
        The serialized value (a sub-message, string or bytes).

    Returns
    -------
    bytes
        The wire form; appended to a serialized message it adds (or, for a singular
        sub-message, merges) the value.
    """
    return b"".join((_varint((field_number << 3) | _WIRE_LEN), _varint(len(payload)), payload))


def input_tensor_field(tensor: InputTensor) -> bytes:
    """The ``ModelInferRequest.inputs`` entry of ``tensor`` in wire form (tag included).

    Everything but the data: name, datatype, shape, parameters and the shared-memory
    placement.  Concatenated in order with :func:`encode_request_header`, the
    :func:`requested_output_field` entries and the :func:`raw_input_field_header` framed
    contents, it gives the bytes :func:`serialize_infer_request` gives for the same request.

    Raises
    ------
    InferenceServerException
        For unsupported parameter values.
    """
    message = service_pb2.ModelInferRequest.InferInputTensor(
        name=tensor.name, datatype=tensor.datatype
    )
    message.shape.extend(int(d) for d in tensor.shape)
    set_parameters(message.parameters, tensor.parameters)
    if tensor.shared_memory is not None:
        _set_shm_parameters(message.parameters, tensor.shared_memory)
    return len_field(_REQUEST_INPUT_FIELD, message.SerializeToString())


def requested_output_field(output: RequestedOutput) -> bytes:
    """The ``ModelInferRequest.outputs`` entry of ``output`` in wire form (tag included)."""
    message = service_pb2.ModelInferRequest.InferRequestedOutputTensor(name=output.name)
    set_parameters(message.parameters, output.parameters)
    if output.class_count:
        message.parameters["classification"].int64_param = output.class_count
    if output.shared_memory is not None:
        _set_shm_parameters(message.parameters, output.shared_memory)
    return len_field(_REQUEST_OUTPUT_FIELD, message.SerializeToString())


def raw_input_field_header(nbytes: int) -> bytes:
    """Tag and length of a ``raw_input_contents`` entry of ``nbytes`` bytes."""
    return _RAW_INPUT_TAG + _varint(nbytes)


def _ascii_string_field(field_number: int, value: str) -> bytes:
    if not value:
        return b""
    return _varint((field_number << 3) | _WIRE_LEN) + _varint(len(value)) + value.encode()


def encode_request_header(
    model_name: str,
    *,
    model_version: str = "",
    request_id: str = "",
    sequence_id: int | str = 0,
    sequence_start: bool = False,
    sequence_end: bool = False,
    priority: int = 0,
    timeout: int | None = None,
    parameters: Mapping[str, Any] | None = None,
    enable_empty_final_response: bool = False,
) -> bytes:
    """The request-level fields of a ``ModelInferRequest`` in wire form.

    Same encoding and errors as :func:`build_infer_request_parts` (without inputs and
    outputs); the common case (plain ASCII names, no parameters, no sequence) is written
    directly instead of through protobuf.
    """
    if (
        type(model_name) is str
        and type(model_version) is str
        and type(request_id) is str
        and not parameters
        and (sequence_id == 0 or sequence_id == "")
        and not priority
        and timeout is None
        and not enable_empty_final_response
        and model_name.isascii()
        and model_version.isascii()
        and request_id.isascii()
    ):
        return (
            _ascii_string_field(1, model_name)
            + _ascii_string_field(2, model_version)
            + _ascii_string_field(3, request_id)
        )
    request, _ = _build_request(
        model_name,
        (),
        None,
        model_version,
        request_id,
        sequence_id,
        sequence_start,
        sequence_end,
        priority,
        timeout,
        parameters,
        enable_empty_final_response,
        False,
    )
    header: bytes = request.SerializeToString()
    return header


def _split_field(data: Buffer, field_number: int) -> tuple[list[memoryview], list[memoryview]]:
    """Split the top-level occurrences of a length-delimited field off a serialized message.

    Returns the spans of every other field (in order) and the payloads of the field, all
    as views of ``data``.
    """
    view = memoryview(data).cast("B")
    size = len(view)
    rest: list[memoryview] = []
    values: list[memoryview] = []
    pos = span = 0
    while pos < size:
        start = pos
        key, pos = _read_varint(view, pos)
        number, wire = key >> 3, key & 7
        if wire == _WIRE_VARINT:
            _, pos = _read_varint(view, pos)
        elif wire == _WIRE_FIXED64:
            pos += 8
        elif wire == _WIRE_FIXED32:
            pos += 4
        elif wire == _WIRE_LEN:
            length, pos = _read_varint(view, pos)
            end = pos + length
            if end > size:
                raise ValueError("truncated protobuf message (length-delimited field)")
            if number == field_number:
                if start > span:
                    rest.append(view[span:start])
                values.append(view[pos:end])
                span = end
            pos = end
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > size:
            raise ValueError("truncated protobuf message")
    if span < size:
        rest.append(view[span:size])
    return rest, values


def serialize_infer_request(
    request: service_pb2.ModelInferRequest, raw_input_contents: Sequence[Buffer] = ()
) -> bytes:
    """Serialize a request, appending raw input contents kept outside the message.

    Parameters
    ----------
    request : ModelInferRequest
        The message (any raw contents it holds come first).
    raw_input_contents : sequence of bytes-like, optional
        Further ``raw_input_contents`` entries, e.g. from :func:`build_infer_request_parts`.

    Returns
    -------
    bytes
        The wire form of the request with every raw entry (the buffers are copied once).
    """
    parts, _ = _len_fields(_REQUEST_RAW_FIELD, raw_input_contents)
    return b"".join([request.SerializeToString(), *parts])


def parse_infer_request(data: Buffer) -> tuple[service_pb2.ModelInferRequest, list[memoryview]]:
    """Parse a serialized request, splitting off the raw input contents without copying.

    Parameters
    ----------
    data : bytes-like
        The wire form of a ``ModelInferRequest``.

    Returns
    -------
    tuple of (ModelInferRequest, list of memoryview)
        The message without ``raw_input_contents``, and those entries as views of ``data``.

    Raises
    ------
    ValueError
        If ``data`` is not a well-formed message (``google.protobuf.message.DecodeError``
        is a subclass).
    """
    if len(data) <= SMALL_MESSAGE_BYTES:
        try:
            request = service_pb2.ModelInferRequest.FromString(
                data if isinstance(data, bytes) else bytes(data)
            )
        except DecodeError as exc:
            raise ValueError(str(exc)) from exc
        if not request.raw_input_contents:
            return request, []
        small = [memoryview(b) for b in request.raw_input_contents]
        request.ClearField("raw_input_contents")
        return request, small
    rest, raw = _split_field(data, _REQUEST_RAW_FIELD)
    return service_pb2.ModelInferRequest.FromString(b"".join(rest)), raw


def serialize_infer_response(
    response: service_pb2.ModelInferResponse, raw_output_contents: Sequence[Buffer] = ()
) -> bytes:
    """Serialize a response, appending raw output contents kept outside the message.

    Parameters
    ----------
    response : ModelInferResponse
        The message.
    raw_output_contents : sequence of bytes-like, optional
        Further ``raw_output_contents`` entries, e.g. from
        :func:`encode_infer_response_parts`.

    Returns
    -------
    bytes
        The wire form (the buffers are copied once).
    """
    parts, _ = _len_fields(_RESPONSE_RAW_FIELD, raw_output_contents)
    return b"".join([response.SerializeToString(), *parts])


def parse_infer_response(
    data: Buffer,
) -> tuple[service_pb2.ModelInferResponse, list[memoryview]]:
    """Parse a serialized response, splitting off the raw output contents without copying.

    Parameters
    ----------
    data : bytes-like
        The wire form of a ``ModelInferResponse``.

    Returns
    -------
    tuple of (ModelInferResponse, list of memoryview)
        The message without ``raw_output_contents``, and those entries as views of ``data``
        (pass them to :func:`output_to_numpy`).

    Raises
    ------
    ValueError
        If ``data`` is not a well-formed message.
    """
    rest, raw = _split_field(data, _RESPONSE_RAW_FIELD)
    return service_pb2.ModelInferResponse.FromString(b"".join(rest)), raw


def serialize_stream_response(
    response: service_pb2.ModelStreamInferResponse, raw_output_contents: Sequence[Buffer] = ()
) -> bytes:
    """Serialize a stream response whose ``infer_response`` raw contents are kept outside.

    Parameters
    ----------
    response : ModelStreamInferResponse
        The message.
    raw_output_contents : sequence of bytes-like, optional
        Further ``infer_response.raw_output_contents`` entries, e.g. from
        :func:`encode_stream_response_parts`.

    Returns
    -------
    bytes
        The wire form (the buffers are copied once).
    """
    if not raw_output_contents:
        return response.SerializeToString()
    outer = service_pb2.ModelStreamInferResponse(error_message=response.error_message)
    inner = response.infer_response.SerializeToString()
    parts, size = _len_fields(_RESPONSE_RAW_FIELD, raw_output_contents)
    header = _varint((_STREAM_RESPONSE_FIELD << 3) | _WIRE_LEN) + _varint(len(inner) + size)
    return b"".join([outer.SerializeToString(), header, inner, *parts])


def parse_stream_response(
    data: Buffer,
) -> tuple[service_pb2.ModelStreamInferResponse, list[memoryview]]:
    """Parse a serialized stream response, splitting off the raw output contents.

    Parameters
    ----------
    data : bytes-like
        The wire form of a ``ModelStreamInferResponse``.

    Returns
    -------
    tuple of (ModelStreamInferResponse, list of memoryview)
        The message without ``infer_response.raw_output_contents``, and those entries as
        views of ``data``.

    Raises
    ------
    ValueError
        If ``data`` is not a well-formed message.
    """
    rest, inner_payloads = _split_field(data, _STREAM_RESPONSE_FIELD)
    message = service_pb2.ModelStreamInferResponse.FromString(b"".join(rest))
    raw: list[memoryview] = []
    if inner_payloads:
        inner_rest: list[Buffer] = []
        for payload in inner_payloads:
            spans, entries = _split_field(payload, _RESPONSE_RAW_FIELD)
            inner_rest.extend(spans)
            raw.extend(entries)
        message.infer_response.SetInParent()
        message.infer_response.MergeFromString(b"".join(inner_rest))
    return message, raw
