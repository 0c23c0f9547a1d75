"""gRPC framing: inference messages with their raw tensor contents outside the protobuf object.

Serializing a ``ModelInferRequest`` with large ``raw_input_contents`` through protobuf copies
every buffer; here the message is written as its protobuf header followed by the raw contents
as length-delimited fields written from the buffers themselves, and parsed back into a message
without its raw contents plus ``memoryview`` slices of the received bytes (no copy).
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.message import DecodeError

from tritonclient._proto import service_pb2

from .raw import buffer_nbytes
from .types import Buffer

__all__ = [
    "RAW_INPUT_TAG",
    "REQUEST_INPUT_FIELD",
    "REQUEST_OUTPUT_FIELD",
    "SMALL_MESSAGE_BYTES",
    "WIRE_LEN",
    "len_field",
    "parse_infer_request",
    "parse_infer_response",
    "parse_stream_response",
    "serialize_infer_request",
    "serialize_infer_response",
    "serialize_stream_response",
    "varint",
]

_WIRE_VARINT, _WIRE_FIXED64, WIRE_LEN, _WIRE_FIXED32 = 0, 1, 2, 5


_REQUEST_RAW_FIELD = 7  # ModelInferRequest.raw_input_contents


_RESPONSE_RAW_FIELD = 6  # ModelInferResponse.raw_output_contents


_STREAM_RESPONSE_FIELD = 2  # ModelStreamInferResponse.infer_response


RAW_INPUT_TAG = bytes(((_REQUEST_RAW_FIELD << 3) | WIRE_LEN,))


_SMALL_VARINTS = [bytes((i,)) for i in range(0x80)]


def varint(value: int) -> bytes:
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
    tag = varint((field_number << 3) | WIRE_LEN)
    parts: list[Buffer] = []
    total = 0
    for buffer in buffers:
        size = buffer_nbytes(buffer)
        length = varint(size)
        parts += (tag, length, buffer)
        total += len(tag) + len(length) + size
    return parts, total


#: Messages up to this size are parsed by protobuf in one go (raw contents copied, which
#: costs less than splitting them off in Python); larger ones are split without copying.
SMALL_MESSAGE_BYTES = 64 * 1024


REQUEST_INPUT_FIELD = 5  # ModelInferRequest.inputs


REQUEST_OUTPUT_FIELD = 6  # ModelInferRequest.outputs


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
    return b"".join((varint((field_number << 3) | WIRE_LEN), varint(len(payload)), payload))


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
        elif wire == WIRE_LEN:
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
    header = varint((_STREAM_RESPONSE_FIELD << 3) | WIRE_LEN) + varint(len(inner) + size)
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
