"""The client side of the gRPC protocol (sans-I/O).

:func:`build_infer_request_parts` turns inputs and options into a request (the message without
its raw contents, plus the raw buffers: numpy inputs are not copied);
:func:`check_infer_response` checks a received response and decodes every output once;
:class:`StreamLedger` tracks which requests of a stream are still unanswered.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient._codec.arguments import check_parameter_name
from tritonclient._proto import service_pb2
from tritonclient.utils import (
    InferenceServerException,
    raise_error,
)
from tritonclient.utils._errors import (
    InferenceServerProtocolError,
    InferenceServerUnavailableError,
)

from .checks import (
    FIXED_DATATYPES,
    DecodedOutputs,
    Requested,
    decode_raw_output,
    known_datatype,
    response_fault,
    response_shape,
)
from .grpc_common import (
    EMPTY_FINAL_RESPONSE_PARAM,
    FINAL_RESPONSE_PARAM,
    contents_array,
    get_parameters,
    int64_value,
    out_of_range,
    set_parameters,
    to_infer_parameter,
)
from .grpc_framing import (
    _RESPONSE_RAW_FIELD,
    RAW_INPUT_TAG,
    REQUEST_INPUT_FIELD,
    REQUEST_OUTPUT_FIELD,
    WIRE_LEN,
    len_field,
    varint,
)
from .numbers import INT64_MAX, INT64_MIN, UINT64_MAX
from .raw import buffer_nbytes, tensor_to_buffer, wire_dtype
from .types import NO_OPTIONS, Buffer, InferOptions, ParamValue, SharedMemoryRef

__all__ = [
    "InputTensor",
    "RequestedOutput",
    "StreamLedger",
    "check_infer_response",
    "encode_infer_request",
    "encode_request_header",
    "input_tensor_field",
    "is_final_response",
    "known_infer_outputs",
    "raw_input_field_header",
    "remember_infer_layout",
    "request_message",
    "requested_output_field",
    "response_parameters",
    "stream_error_status",
    "streamed_infer_response",
    "tag_request",
]


@dataclass
class InputTensor:
    """An input of a request being built.

    Attributes
    ----------
    name : str
        Input name.
    datatype : str
        Protocol datatype.
    shape : sequence of int
        Shape.
    data : numpy.ndarray or bytes-like or None
        The values (converted with :func:`tensor_to_buffer`) or the raw contents already
        laid out; None when the input is in shared memory.
    shared_memory : SharedMemoryRef or None
        Shared-memory placement (then ``data`` is ignored).
    parameters : mapping
        Further tensor-level parameters.
    """

    name: str
    datatype: str
    shape: Sequence[int]
    data: npt.NDArray[Any] | Buffer | None = None
    shared_memory: SharedMemoryRef | None = None
    parameters: Mapping[str, ParamValue] = field(default_factory=dict)
    #: The entry's wire form when the caller keeps it (:func:`input_tensor_field`).
    wire: bytes | None = None


@dataclass
class RequestedOutput:
    """An output asked for in a request being built.

    Attributes
    ----------
    name : str
        Output name.
    class_count : int
        Top-K classification (0: the tensor itself).
    shared_memory : SharedMemoryRef or None
        Write the output into shared memory instead of the response.
    parameters : mapping
        Further tensor-level parameters.
    """

    name: str
    class_count: int = 0
    shared_memory: SharedMemoryRef | None = None
    parameters: Mapping[str, ParamValue] = field(default_factory=dict)
    #: The entry's wire form when the caller keeps it (:func:`requested_output_field`).
    wire: bytes | None = None


def _set_shm_parameters(
    params: MutableMapping[str, service_pb2.InferParameter], ref: SharedMemoryRef
) -> None:
    params["shared_memory_region"].string_param = ref.region
    params["shared_memory_byte_size"].int64_param = int64_value(ref.byte_size, "byte_size")
    if ref.offset:
        params["shared_memory_offset"].int64_param = int64_value(ref.offset, "offset")


def _header_message(
    model_name: str, model_version: str, options: InferOptions
) -> service_pb2.ModelInferRequest:
    """The request-level fields of a ``ModelInferRequest`` (no inputs or outputs)."""
    request = service_pb2.ModelInferRequest(
        model_name=model_name, model_version=model_version, id=options.request_id
    )
    params = request.parameters
    sequence_id = options.sequence_id
    if options.in_sequence:
        if isinstance(sequence_id, str):
            params["sequence_id"].string_param = sequence_id
        elif isinstance(sequence_id, int) and not isinstance(sequence_id, bool):
            if not INT64_MIN <= sequence_id <= UINT64_MAX:
                # NVIDIA's client refuses ids from 2**63 on too; Triton's correlation ids
                # are uint64, which the two's complement below reaches.
                raise out_of_range(
                    sequence_id, "sequence_id", "a 64-bit integer: -2**63 .. 2**64-1"
                )
            # The server reads int64 as uint64: ids >= 2**63 travel in two's complement.
            params["sequence_id"].int64_param = (
                sequence_id - 2**64 if sequence_id > INT64_MAX else sequence_id
            )
        else:
            raise_error(f"sequence_id must be an int or a str, got {type(sequence_id).__name__}")
        params["sequence_start"].bool_param = bool(options.sequence_start)
        params["sequence_end"].bool_param = bool(options.sequence_end)
    if options.priority:
        if not 0 <= options.priority <= UINT64_MAX:
            raise out_of_range(
                options.priority, "priority", "an unsigned 64-bit integer: 0 .. 2**64-1"
            )
        params["priority"].uint64_param = options.priority
    if options.timeout is not None:
        params["timeout"].int64_param = int64_value(options.timeout, "timeout")
    if options.enable_empty_final_response:
        params[EMPTY_FINAL_RESPONSE_PARAM].bool_param = True
    for key, value in (options.parameters or {}).items():
        check_parameter_name(key)
        to_infer_parameter(value, params[key], key, int64_only=True)
    return request


def encode_request_header(
    model_name: str, model_version: str = "", options: InferOptions = NO_OPTIONS
) -> bytes:
    """The request-level fields of a ``ModelInferRequest`` in wire form.

    The common case (plain ASCII names, no parameters, no sequence) is written directly,
    anything else through protobuf.

    Raises
    ------
    InferenceServerException
        For a sequence id or priority out of range, reserved or unsupported parameters.
    """
    plain = options is NO_OPTIONS
    if plain and type(model_name) is str and type(model_version) is str:
        cached = _PLAIN_HEADERS.get((model_name, model_version))
        if cached is not None:
            return cached
    if (
        (plain or options.plain)
        and _ascii(model_name)
        and _ascii(model_version)
        and _ascii(options.request_id)
    ):
        header = (
            _ascii_string_field(1, model_name)
            + _ascii_string_field(2, model_version)
            + _ascii_string_field(3, options.request_id)
        )
        if plain:
            if len(_PLAIN_HEADERS) >= _PLAIN_HEADERS_MAX:
                _PLAIN_HEADERS.clear()
            _PLAIN_HEADERS[model_name, model_version] = header
        return header
    header = _header_message(model_name, model_version, options).SerializeToString()
    return header


#: The header of a request without options, by (model name, version): the same few models
#: are called over and over.  Cleared when full (names are the caller's).
_PLAIN_HEADERS: dict[tuple[str, str], bytes] = {}
_PLAIN_HEADERS_MAX = 256


def _ascii(value: object) -> bool:
    return type(value) is str and value.isascii()


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
    set_parameters(message.parameters, tensor.parameters, int64_only=True)
    if tensor.shared_memory is not None:
        _set_shm_parameters(message.parameters, tensor.shared_memory)
    return len_field(REQUEST_INPUT_FIELD, message.SerializeToString())


def requested_output_field(output: RequestedOutput) -> bytes:
    """The ``ModelInferRequest.outputs`` entry of ``output`` in wire form (tag included)."""
    message = service_pb2.ModelInferRequest.InferRequestedOutputTensor(name=output.name)
    set_parameters(message.parameters, output.parameters, int64_only=True)
    if output.class_count:
        message.parameters["classification"].int64_param = int64_value(
            output.class_count, "class_count"
        )
    if output.shared_memory is not None:
        _set_shm_parameters(message.parameters, output.shared_memory)
    return len_field(REQUEST_OUTPUT_FIELD, message.SerializeToString())


def raw_input_field_header(nbytes: int) -> bytes:
    """Tag and length of a ``raw_input_contents`` entry of ``nbytes`` bytes."""
    return RAW_INPUT_TAG + varint(nbytes)


def _ascii_string_field(field_number: int, value: str) -> bytes:
    if not value:
        return b""
    return varint((field_number << 3) | WIRE_LEN) + varint(len(value)) + value.encode()


def encode_infer_request(
    model_name: str,
    inputs: Sequence[InputTensor],
    outputs: Sequence[RequestedOutput] | None = None,
    model_version: str = "",
    options: InferOptions = NO_OPTIONS,
) -> bytes:
    """A ``ModelInferRequest`` in wire form: the one request encoder of both gRPC clients.

    The request-level fields (:func:`encode_request_header`), each input's and output's entry
    (the ``wire`` it caches, or :func:`input_tensor_field` / :func:`requested_output_field`),
    then every input's raw contents, joined once.  Parsing the result with protobuf gives the
    message protobuf would have built for the same request.

    Raises
    ------
    InferenceServerException
        As :func:`encode_request_header`; for an input with neither data nor a shared-memory
        region; for data whose dtype does not match the input's datatype.
    """
    pieces: list[Buffer] = [encode_request_header(model_name, model_version, options)]
    raw: list[Buffer] = []
    for tensor in inputs:
        if tensor.shared_memory is None:
            data = tensor.data
            if data is None:
                raise_error(f"input '{tensor.name}' has neither data nor a shared-memory region")
            if isinstance(data, np.ndarray):
                data = tensor_to_buffer(tensor.datatype, data)
            raw += (raw_input_field_header(buffer_nbytes(data)), data)
        pieces.append(tensor.wire or input_tensor_field(tensor))
    for output in outputs or ():
        pieces.append(output.wire or requested_output_field(output))
    return b"".join(pieces + raw)


def request_message(data: Buffer) -> service_pb2.ModelInferRequest:
    """The message of an encoded request without its raw contents (for verbose output)."""
    message = service_pb2.ModelInferRequest.FromString(bytes(data))
    message.ClearField("raw_input_contents")
    return message


def response_parameters(response: service_pb2.ModelInferResponse) -> dict[str, ParamValue]:
    """The response-level parameters of a ``ModelInferResponse``.

    Parameters
    ----------
    response : ModelInferResponse
        The response.

    Returns
    -------
    dict
        Key to value (``triton_final_response`` included when present).
    """
    return get_parameters(response.parameters)


def is_final_response(response: service_pb2.ModelInferResponse) -> bool:
    """Whether a stream response is the last one for its request.

    Parameters
    ----------
    response : ModelInferResponse
        A response received on ``ModelStreamInfer``.

    Returns
    -------
    bool
        The ``triton_final_response`` parameter; False when absent (a decoupled model
        without the empty-final-response opt-in may never send an explicit end marker).
    """
    param = response.parameters.get(FINAL_RESPONSE_PARAM)
    return bool(param is not None and param.bool_param)


class StreamLedger:
    """Which requests of a ``ModelStreamInfer`` stream still wait for their final response.

    Sans-I/O bookkeeping shared by the sync and asyncio clients: :meth:`sent` for each
    request, :meth:`received` for each response, :meth:`ended` when the server ends the stream
    with OK.  Safe to use from two threads (the sync client sends in the caller's thread and
    receives in its stream thread).

    The rule (Triton 2.51, protocol section 5): the server ends a stream with OK only after the
    client closed its side and every request in flight completed; each response but the errors
    of refused requests carries ``triton_final_response``, true on a request's last one.  So

    * a stream the server ends while the client is still sending is a broken stream, whatever
      was pending;
    * after the client closed its side, a request sent with ``enable_empty_final_response``
      (a final response is then due, from a decoupled model or not) that got no final
      response was left unanswered;
    * a request sent without it is never reported then: a decoupled model may send no
      response at all for it, or never mark its last one, and nothing on the wire tells a
      decoupled model from another.  (Send requests with ``enable_empty_final_response=True``
      to have them checked.)

    Requests are told apart by id: a final response completes a request of its id, one sent
    with ``enable_empty_final_response`` first (so that such a request is never reported
    although it was answered: with shared ids the count may only err towards reporting less).
    A response counts as final when ``triton_final_response`` is true or absent (a refused
    request's error; servers that never set it).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: id -> requests sent with enable_empty_final_response still due a final response.
        self._due: dict[str, int] = {}
        #: id -> requests sent without it that have had no final response (yet, or ever: a
        #: decoupled model's).
        self._open: dict[str, int] = {}

    def sent(self, request_id: str, enable_empty_final_response: bool) -> None:
        """Record a request sent on the stream."""
        table = self._due if enable_empty_final_response else self._open
        with self._lock:
            table[request_id] = table.get(request_id, 0) + 1

    def received(self, message: service_pb2.ModelStreamInferResponse) -> None:
        """Record a response (or an error) received on the stream."""
        response = message.infer_response
        param = response.parameters.get(FINAL_RESPONSE_PARAM)
        if param is not None and not param.bool_param:
            return  # more responses of its request follow
        request_id = response.id
        with self._lock:
            if self._due.get(request_id):
                self._take(self._due, request_id)
            elif self._open.get(request_id):
                self._take(self._open, request_id)

    @staticmethod
    def _take(table: dict[str, int], request_id: str) -> None:
        left = table[request_id] - 1
        if left:
            table[request_id] = left
        else:
            del table[request_id]

    def pending(self) -> str:
        """The requests still waiting, for messages: ids with counts; "" when none."""
        with self._lock:
            counts = dict(self._due)
            for request_id, count in self._open.items():
                counts[request_id] = counts.get(request_id, 0) + count
        return _id_list(counts)

    def ended(self, client_done: bool, what: str) -> InferenceServerException | None:
        """The error for a stream the server ended with OK, or None when it was entitled to.

        Parameters
        ----------
        client_done : bool
            Whether the client had closed its side of the stream.
        what : str
            How the client closes its side, for the message (``"stop_stream() was called"``).

        Returns
        -------
        InferenceServerException or None
            :class:`InferenceServerUnavailableError` when the server ended the stream before
            ``what``; :class:`InferenceServerProtocolError` naming the requests that were due
            a final response and got none.
        """
        if not client_done:
            pending = self.pending()
            detail = f"; requests still without a final response: {pending}" if pending else ""
            return InferenceServerUnavailableError(
                f"the server ended the stream before {what}{detail}"
            )
        with self._lock:
            due = dict(self._due)
        if not due:
            return None
        return InferenceServerProtocolError(
            f"the server ended the stream with no final response for {sum(due.values())} "
            f"request(s) sent with enable_empty_final_response=True: {_id_list(due)}"
        )


def _id_list(counts: Mapping[str, int]) -> str:
    """``'a', 'b' (2 requests), '' (no id)`` for messages."""
    parts = []
    for request_id in sorted(counts):
        text = f"id {request_id!r}" if request_id else "no id"
        if counts[request_id] > 1:
            text += f" ({counts[request_id]} requests)"
        parts.append(text)
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# Unary inferences carried over one ModelStreamInfer stream (the clients' infer_over_stream)
# ---------------------------------------------------------------------------------------------

#: The request ``id`` field (ModelInferRequest.id = 3), written after the request's fields: of
#: a field given twice the last one counts (protobuf), so the server sees this one.
_ID_TAG = varint((3 << 3) | WIRE_LEN)

#: What Triton 2.51's unary ``ModelInfer`` answers, as a status, to the request errors it
#: reports on a stream as text only (docs/protocol.md, sections 8 and 10).  Matched at the
#: start of the message, after the ``[request id: ...]`` prefix.
_STREAM_ERROR_STATUS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), status)
    for pattern, status in (
        (r"Request for unknown model", "NOT_FOUND"),
        (
            r"unexpected inference (input|output) |expected (\d+|number of) inputs? |"
            r"inference input '.*' data-type is |inference request batch-size must be |"
            r"input '.*' batch size does not match |unexpected shape for input |"
            r"input byte size mismatch |expected \d+ string elements |incomplete string data |"
            r"input '.*' already exists in request|input '.*' has no shape |"
            r"inference request to model '.*' must specify a non-zero |"
            r"inference request for sequence .* must specify the START flag |"
            r"invalid value type for '.*' parameter",
            "INVALID_ARGUMENT",
        ),
        (r"Exceeds maximum queue size|Request timeout expired", "UNAVAILABLE"),
    )
)

#: What the unary ``ModelInfer`` answers for a decoupled model (Triton 2.51).
DECOUPLED_UNARY_ERROR = "ModelInfer RPC doesn't support models with decoupled transaction policy"


def tag_request(data: Buffer, tag: str) -> bytes:
    """An encoded ``ModelInferRequest`` whose ``id`` is ``tag`` on the wire (the field is
    appended; the request's own id, if any, is overridden), to match its answer on a stream."""
    raw = tag.encode()
    return bytes(data) + _ID_TAG + varint(len(raw)) + raw


def _id_prefix(request_id: str) -> str:
    """Triton's prefix of an error about a request: ``[request id: x] ``, ``<id_unknown>`` for
    a request without an id (Triton 2.51)."""
    return f"[request id: {request_id or '<id_unknown>'}] "


def stream_error_status(message: str) -> str | None:
    """The status name (``"NOT_FOUND"``, ...) the unary call would have failed with, for an
    error Triton reported on a stream as ``message`` (text only); None when unknown."""
    if message.startswith("[request id: "):
        message = message.partition("] ")[2]
    for pattern, status in _STREAM_ERROR_STATUS:
        if pattern.match(message):
            return status
    return None


def streamed_infer_response(
    message: service_pb2.ModelStreamInferResponse, tag: str, request_id: str
) -> service_pb2.ModelInferResponse:
    """The ``ModelInferResponse`` the unary call would have answered, from the stream's answer
    to a request sent with id ``tag`` for the caller's ``request_id``.

    The caller's id goes back into the response and into an error's ``[request id: ...]``
    prefix; the stream's ``triton_final_response`` parameter is removed (the unary answer has
    none).

    Raises
    ------
    InferenceServerException
        The request's error, with the status the unary call gives where the message tells it
        (:func:`stream_error_status`; otherwise no status); for a decoupled model's response
        that is not its last, the unary call's UNIMPLEMENTED error (the model has run).
    """
    if message.error_message:
        text = message.error_message
        prefix = _id_prefix(tag)
        if text.startswith(prefix):
            text = _id_prefix(request_id) + text[len(prefix) :]
        status = stream_error_status(text)
        raise InferenceServerException(text, None if status is None else f"StatusCode.{status}")
    response = message.infer_response
    parameters = response.parameters
    if FINAL_RESPONSE_PARAM in parameters:
        if not parameters[FINAL_RESPONSE_PARAM].bool_param:
            raise InferenceServerException(DECOUPLED_UNARY_ERROR, "StatusCode.UNIMPLEMENTED")
        del parameters[FINAL_RESPONSE_PARAM]
    response.id = request_id
    return response


def check_infer_response(
    response: service_pb2.ModelInferResponse,
    raw_output_contents: Sequence[Buffer] | None = None,
    requested: Requested | None = None,
) -> DecodedOutputs:
    """Check a ``ModelInferResponse`` a client received and decode every output, once.

    Each output must have a protocol datatype and a shape of non-negative integers, and data
    that are exactly what they need: a raw entry of the right size (BYTES: that many
    well-formed elements) or typed ``contents`` of the right count.  Raw entries are
    index-aligned with the outputs, one each, or absent (typed contents).  An empty raw entry
    for an output with elements is how Triton answers an output it wrote to shared memory:
    right for an output requested there, a broken answer for any other.

    Parameters
    ----------
    response : ModelInferResponse
        The response.
    raw_output_contents : sequence of bytes-like, optional
        The raw contents when they were split off the message (:func:`parse_infer_response`);
        by default the message's own.
    requested : Requested, optional
        The outputs the request asked for: each must be present, and only those requested in
        shared memory may come without data.  None when unknown (a stream response): an
        output without data is then taken as written to shared memory.

    Returns
    -------
    DecodedOutputs
        The arrays, by output name (None for those in shared memory).

    Raises
    ------
    InferenceServerProtocolError
        Naming the output, what was expected and what came.
    """
    raw = response.raw_output_contents if raw_output_contents is None else raw_output_contents
    outputs = response.outputs
    if raw and len(raw) != len(outputs):
        raise response_fault(
            f"it has {len(raw)} raw_output_contents entries for {len(outputs)} outputs "
            "(expected one entry per output)"
        )
    arrays: dict[str, npt.NDArray[Any] | None] = {}
    fixed_types = FIXED_DATATYPES
    prod = math.prod
    for index, output in enumerate(outputs):
        name = output.name
        if name in arrays:
            continue  # as_numpy() reads the first one
        if raw:
            entry = raw[index]
            # Inline for the usual output (a fixed-size datatype whose shape needs exactly
            # the bytes it has); anything else goes through decode_raw_output's checks.
            fixed = fixed_types.get(output.datatype)
            if fixed is not None and type(entry) is bytes:
                dims = tuple(output.shape)
                count = prod(dims)
                if count and count * fixed[1] == len(entry) and min(dims, default=0) >= 0:
                    arrays[name] = np.ndarray(dims, fixed[0], entry)
                    continue
            if buffer_nbytes(entry) or not math.prod(response_shape(name, output.shape)):
                arrays[name] = decode_raw_output(name, output.datatype, output.shape, entry)
                continue
        elif output.HasField("contents"):
            arrays[name] = _checked_contents(name, output)
            continue
        known_datatype(name, output.datatype)
        dims = response_shape(name, output.shape)
        if not math.prod(dims):  # no raw contents at all, and nothing to carry
            arrays[name] = np.empty(dims, dtype=wire_dtype(output.datatype))
            continue
        # No data for an output with elements: written to shared memory, or a broken answer.
        if requested is not None and "shared_memory_region" not in output.parameters:
            requested.no_data(name, output.datatype, dims)
        arrays[name] = None
    if requested is not None:
        requested.check_present(arrays)
    return DecodedOutputs(arrays)


#: Wire forms of ``ModelInferResponse`` messages checked before, by length: the bytes before
#: the raw output contents, each raw entry's tag and length with where it starts, and each
#: output's name, dtype, shape and the offset of its data.  The same model answers call after
#: call with the same message but for the raw bytes (bar a request id), and a message whose
#: bytes are those of one checked before, but for the raw entries' payloads of the same
#: sizes, passes the same checks: its arrays are views of the wire bytes at the same offsets.
_KNOWN_INFER: dict[
    int,
    tuple[bytes, tuple[tuple[int, bytes], ...], tuple[tuple[str, Any, tuple[int, ...], int], ...]],
] = {}
_KNOWN_INFER_MAX = 64
#: Heads longer than this are not kept (they are not the usual small answer's).
_KNOWN_HEAD_MAX = 4096


def known_infer_outputs(data: bytes, requested: Requested | None) -> DecodedOutputs | None:
    """The outputs of a ``ModelInferResponse`` whose wire form is one
    :func:`remember_infer_layout` kept but for the raw payloads (see :data:`_KNOWN_INFER`),
    as :func:`check_infer_response` decodes them; None for any other message.

    Raises
    ------
    InferenceServerProtocolError
        When an output ``requested`` asked for is not in the response.
    """
    known = _KNOWN_INFER.get(len(data))
    if known is None:
        return None
    head, marks, layout = known
    if not data.startswith(head):
        return None
    for at, mark in marks:
        if not data.startswith(mark, at):
            return None
    ndarray = np.ndarray
    arrays: dict[str, npt.NDArray[Any] | None] = {
        name: ndarray(shape, dtype, data, offset) for name, dtype, shape, offset in layout
    }
    if requested is not None:
        wanted = requested.outputs
        if wanted and not wanted.keys() <= arrays.keys():
            requested.check_present(arrays)
    return DecodedOutputs(arrays)


def remember_infer_layout(
    data: bytes, response: service_pb2.ModelInferResponse, outputs: DecodedOutputs
) -> None:
    """Keep the layout of a checked ``ModelInferResponse`` (``data`` its wire form,
    ``outputs`` what :func:`check_infer_response` made of it) for
    :func:`known_infer_outputs`, when every output is a fixed-size one with its data in its
    raw entry (in order, one each, names unique) and the raw entries are the message's last
    fields; other messages are checked every time."""
    raw = response.raw_output_contents
    names = [output.name for output in response.outputs]
    if not raw or len(raw) != len(names) or len(set(names)) != len(names):
        return
    arrays = [outputs.peek(name) for name in names]
    tag = varint((_RESPONSE_RAW_FIELD << 3) | WIRE_LEN)
    end = len(data) - sum(len(tag) + len(varint(len(entry))) + len(entry) for entry in raw)
    if not 0 < end <= _KNOWN_HEAD_MAX:
        return
    marks: list[tuple[int, bytes]] = []
    layout: list[tuple[str, Any, tuple[int, ...], int]] = []
    at = end
    for name, array, entry in zip(names, arrays, raw, strict=True):
        if array is None or array.flags.writeable or array.dtype.hasobject:
            return  # (a writable array is not a view of the wire bytes: decoded otherwise)
        if not array.size or array.nbytes != len(entry):
            return
        mark = tag + varint(len(entry))
        if data[at : at + len(mark) + len(entry)] != mark + entry:
            return  # the raw entries are not the message's last fields, in order
        marks.append((at, mark))
        layout.append((name, array.dtype, array.shape, at + len(mark)))
        at += len(mark) + len(entry)
    if len(_KNOWN_INFER) >= _KNOWN_INFER_MAX:
        _KNOWN_INFER.clear()
    _KNOWN_INFER[len(data)] = (data[:end], tuple(marks), tuple(layout))


def _checked_contents(
    name: str, output: service_pb2.ModelInferResponse.InferOutputTensor
) -> npt.NDArray[Any]:
    """An output's typed contents as an array, checked against its datatype and shape."""
    known_datatype(name, output.datatype)
    dims = response_shape(name, output.shape)
    array, wrong = contents_array(output.contents, output.datatype)
    if array is None:
        raise response_fault(
            f"output '{name}' ({output.datatype}) has typed contents in '{wrong}', which is "
            f"not the field of its datatype"
        )
    if array.size != math.prod(dims):
        raise response_fault(
            f"output '{name}' ({output.datatype}, shape {list(dims)}) needs "
            f"{math.prod(dims)} elements, its typed contents have {array.size}"
        )
    return array.reshape(dims)
