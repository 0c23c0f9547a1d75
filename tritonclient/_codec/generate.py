"""The generate extension (``/generate`` and ``/generate_stream``), both sides.

Server side: :func:`parse_generate_request` maps the request's JSON object onto the model's
inputs and parameters as Triton does; :func:`encode_generate_response` writes one response as
the extension's flat JSON object; :func:`encode_sse_event` frames it as a Server-Sent Event.

Client side: :func:`encode_generate_request` writes the request object,
:func:`decode_generate_response` reads ``/generate``'s answer and
:func:`decode_generate_event` one event of ``/generate_stream`` (its SSE framing is
:mod:`tritonclient._codec.sse`), raising the extension's error object as an exception.

The extension (Triton's ``docs/protocol/extension_generate.md``, provisional upstream):
``{"text_input": ..., "parameters": {...}}`` where any other top-level member is an input or a
parameter by the model's metadata; the answer is one flat object (``model_name``,
``model_version``, every output by name); a failure is ``{"error": "<message>"}``, with an
error status before inference starts, and as an event of a 200 stream after it has begun.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient.utils import InferenceServerException, raise_error
from tritonclient.utils._dtypes import DATATYPES
from tritonclient.utils._errors import (
    InferenceServerProtocolError,
    server_error_with_hint,
)

from .errors import HttpCodecError, http_bad, http_internal, json_type_text
from .http_body import model_path
from .http_client import error_from_response
from .http_server import ParsedInferRequest, ParsedInput, RequestParameters, custom_parameter
from .jsontext import (
    Members,
    client_json,
    dumps,
    json_kind,
    member_object,
    parse_json_document,
    tensor_to_json,
)
from .sse import SseParser
from .types import Buffer, ParamValue

__all__ = [
    "EVENT_STREAM",
    "GenerateStreamDecoder",
    "decode_generate_event",
    "decode_generate_response",
    "encode_generate_request",
    "encode_generate_response",
    "encode_sse_event",
    "generate_error",
    "generate_path",
    "is_event_stream",
    "parse_generate_request",
    "stream_open_error",
]

#: The Content-Type of ``/generate_stream``'s answer (Triton adds ``; charset=utf-8``).
EVENT_STREAM = "text/event-stream"


def _generate_shape(name: str, value: Any, dims: Sequence[int]) -> list[int]:
    """The shape Triton gives a generate input: the value's element count (a list's length,
    else 1) spread over the model's metadata dims, fixed ones first from the innermost, then
    the innermost variable one takes what is left and the others 1."""
    count = len(value) if isinstance(value, list) else 1
    shape = [int(d) for d in dims]
    refused = http_bad(f"The schema can not convert input '{name}' to tensor with proper shape")
    for dim in reversed(shape):
        if dim != -1:
            if dim <= 0 or count % dim:
                raise refused
            count //= dim
    for index in reversed(range(len(shape))):
        if shape[index] == -1:
            shape[index] = count
            count = 1
    if count != 1:
        raise refused
    return shape


def _generate_byte_size(datatype: str, value: Any) -> int | None:
    """The byte size Triton 2.73 gives a generate input's value before converting it
    (``ExactMappingInput``, src/http_server.cc:3691-3716, 2.73.0): a BYTES value's strings,
    nested lists included, 4 bytes and the UTF-8 of each (``JsonBytesArrayByteSize``,
    :479-516); a typed value's top-level element count (a list's length, else 1) times its
    datatype's size.  None where the value is not one Triton sizes (a BYTES leaf that is not
    a string, an unknown datatype): the conversion that follows reports it."""
    if datatype == "BYTES":
        stack, size = [value], 0
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str):
                try:
                    size += 4 + len(item.encode("utf-8", "surrogateescape"))
                except UnicodeEncodeError:
                    return None
            else:
                return None
        return size
    info = DATATYPES.get(datatype)
    if info is None or not info.byte_size:
        return None
    return (len(value) if isinstance(value, list) else 1) * info.byte_size


def _check_generate_size(
    name: str, byte_size: int | None, consumed: int, max_input_size: int | None
) -> int:
    """The running total of a generate request's input bytes after input ``name``, refused
    past ``--http-max-input-size`` with Triton 2.73's words (src/http_server.cc:3718-3741,
    2.73.0): an empty input is not counted, and the limit itself is allowed."""
    if max_input_size is None or not byte_size:
        return consumed
    if byte_size + consumed > max_input_size:
        raise http_bad(
            f"request size of {consumed} bytes with input '{name}' of size {byte_size} bytes "
            f"exceeds the maximum allowed input size of {max_input_size}. Use "
            "--http-max-input-size to increase the limit."
        )
    return consumed + byte_size


def parse_generate_request(
    body: Buffer,
    *,
    model_inputs: Mapping[str, tuple[str, Sequence[int]]],
    max_input_size: int | None = None,
    empty_unshaped: bool = False,
) -> ParsedInferRequest:
    """Parse a generate / generate_stream request (server side) as Triton 2.51 does, or as
    2.73 with ``max_input_size`` and ``empty_unshaped``.

    Each top-level key named like a model input becomes a JSON input: its datatype and shape
    come from the model's metadata (see :func:`_generate_shape`: a list's length, or 1 for a
    scalar, spread over the metadata dims).  The members of a ``parameters`` object are read
    the same way.  ``id`` sets the request id; any other key becomes a request parameter.

    Parameters
    ----------
    body : bytes-like
        The body.
    model_inputs : mapping of str to (str, sequence of int)
        The model's input names, with each datatype and metadata shape (a batching model's
        shape starts with ``-1``).
    max_input_size : int or None, optional
        Triton 2.73's ``--http-max-input-size``: the inputs' byte sizes (see
        :func:`_generate_byte_size`) are added up in document order, the top-level ones and
        those of ``parameters`` each in their own total (Triton converts ``parameters`` in a
        call of its own, with its own count), and an input that takes the total past it is
        refused (400, "request size of N bytes with input 'X' of size M bytes exceeds the
        maximum allowed input size of L. Use --http-max-input-size to increase the limit.")
        before its shape is converted.  None: no limit (Triton 2.51).
    empty_unshaped : bool, optional
        Triton 2.73: an input of no bytes (an empty list) is added with no dimension and no
        data, without its shape being converted (src/http_server.cc:3718-3724, 2.73.0), for
        the core to refuse that shape.  Triton 2.51 spreads it over the model's dims (a
        ``[-1]`` input becomes ``[0]``).

    Returns
    -------
    ParsedInferRequest

    Raises
    ------
    HttpCodecError
        500 for a body that is not JSON and for one that is not an object; 400 for an input
        whose value does not fit its shape or takes the inputs past ``max_input_size``, a
        ``parameters`` that is not an object, and parameter values of the wrong type.
    """
    request = member_object(parse_json_document(body, keep_duplicates=True))
    request_id = ""
    inputs: list[ParsedInput] = []
    params: dict[str, Any] = {}

    def convert(members: Mapping[str, Any], context: str) -> None:
        nonlocal request_id
        # The bytes of this object's inputs so far: Triton's consumed_input_size is local to
        # each ConvertGenerateRequest call, so "parameters" starts its own count.
        consumed = 0
        # Every member in document order, a repeated name included: Triton adds each input
        # as it meets it, and refuses one it has already added.
        pairs = members.pairs if isinstance(members, Members) else list(members.items())
        for key, value in pairs:
            if key == "id" and not context:
                if not isinstance(value, str):
                    raise http_internal(
                        "Unable to parse 'id': attempt to access JSON non-string as string"
                    )
                request_id = value
                continue
            if key == "parameters" and not context:
                if key in model_inputs:
                    raise http_bad(
                        "Keyword 'parameters' for nested schema also given as input tensor name"
                    )
                if not isinstance(value, dict):
                    raise http_internal(
                        "Expected JSON object for keyword: 'parameters': "
                        + json_type_text("object")
                    )
                try:
                    convert(value, "parameters")
                except HttpCodecError as exc:
                    raise HttpCodecError(
                        f"Converting keyword: 'parameters': {exc.message()}", exc.http_status
                    ) from None
                continue
            found = model_inputs.get(key)
            if found is None:
                if context:
                    # Triton checks a member of "parameters" as it converts it, so its error
                    # carries the "Converting keyword" prefix; top-level ones are checked later.
                    custom_parameter(key, value)
                params[key] = value
                continue
            datatype, dims = found
            # Triton sizes the input and checks the limit before it converts the shape or
            # adds the input (a repeated name is refused after this).
            size = _generate_byte_size(datatype, value)
            consumed = _check_generate_size(key, size, consumed, max_input_size)
            if any(given.name == key for given in inputs):
                raise http_bad(
                    f"[request id: {request_id or '<id_unknown>'}] input '{key}' already "
                    "exists in request"
                )
            if empty_unshaped and size == 0:
                # 2.73 adds an input of no bytes as it is, with no dimension.
                inputs.append(ParsedInput(key, datatype, [], {}, data=[]))
                continue
            shape = _generate_shape(key, value, dims)
            data = value if isinstance(value, list) else [value]
            inputs.append(ParsedInput(key, datatype, shape, {}, data=data))

    convert(request, "")
    parameters = RequestParameters()
    for key, value in params.items():
        parameters.custom[key] = custom_parameter(key, value)
    return ParsedInferRequest(request_id, inputs, [], parameters)


def encode_generate_response(
    model_name: str,
    model_version: str,
    outputs: Iterable[tuple[str, str, npt.NDArray[Any]]],
    *,
    request_id: str = "",
    parameters: Mapping[str, ParamValue] | None = None,
) -> bytes:
    """The JSON object of one generate response, as Triton 2.51 writes it.

    Every output, the response parameters, ``id`` (when non-empty), ``model_name`` and
    ``model_version`` are members of one object, in the byte order of their names (Triton
    collects them in a ``std::map``); an output of one element is written as a scalar, others
    as flat lists.

    Parameters
    ----------
    model_name, model_version : str
        The model that answered.
    outputs : iterable of (name, datatype, array)
        The outputs.
    request_id : str, optional
        Echoed as ``id`` when non-empty.
    parameters : mapping, optional
        The response's parameters.

    Returns
    -------
    bytes

    Raises
    ------
    HttpCodecError
        400 for an FP16/BF16 output (Triton sends those only as binary data).
    """
    members: dict[str, Any] = {}
    for name, datatype, array in outputs:
        values = tensor_to_json(datatype, array, bytes_as="surrogateescape")
        members.setdefault(name, values[0] if len(values) == 1 else values)
    for key, value in (parameters or {}).items():
        members.setdefault(key, value)
    if request_id:
        members.setdefault("id", request_id)
    members.setdefault("model_name", model_name)
    members.setdefault("model_version", model_version)
    ordered = {key: members[key] for key in sorted(members, key=lambda k: k.encode())}
    return dumps(ordered, raw_strings=True)


def encode_sse_event(payload: bytes) -> bytes:
    """One server-sent event carrying ``payload`` (``data: <payload>\\n\\n``)."""
    return b"data: " + payload + b"\n\n"


# -- client side ---------------------------------------------------------------------------


def generate_path(model_name: str, model_version: str, stream: bool) -> str:
    """``/v2/models/<m>[/versions/<v>]/generate[_stream]`` (names quoted as in every path)."""
    return model_path(model_name, model_version, "generate_stream" if stream else "generate")


def _json_value(value: Any, where: str) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays become Python values."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise_error(f"{where}: bytes that are not UTF-8 cannot travel in JSON")
    if isinstance(value, float) and not math.isfinite(value):
        raise_error(f"{where}: {value} is not a JSON number")
    if isinstance(value, list | tuple):
        return [_json_value(item, where) for item in value]
    if isinstance(value, Mapping):  # e.g. a "parameters" object given among the inputs
        return {str(k): _json_value(v, f"{where}['{k}']") for k, v in value.items()}
    if value is None or isinstance(value, str | bool | int | float):
        return value
    raise_error(
        f"{where}: a {type(value).__name__} is not a JSON value (expected a str, number, "
        "bool, or a list or object of them)"
    )


def _json_members(members: Any, what: str, kind: str) -> dict[str, Any]:
    """``members``, a mapping of str names, with its values as JSON; ``what`` names it in the
    errors, ``kind`` says what it must be."""
    if not isinstance(members, Mapping):
        raise_error(f"{what} must be {kind}, not {type(members).__name__}")
    converted: dict[str, Any] = {}
    for key, value in members.items():
        if not isinstance(key, str):
            raise_error(f"{what}: the name {key!r} is not a str")
        converted[key] = _json_value(value, f"{what}['{key}']")
    return converted


def encode_generate_request(
    inputs: Mapping[str, Any], parameters: Mapping[str, Any] | None = None
) -> bytes:
    """The body of a generate / generate_stream request (client side).

    Parameters
    ----------
    inputs : mapping of str to value
        The request object's members: each model input by name (a scalar or a list; numpy
        values are converted), and any other member the model takes as a parameter.
    parameters : mapping of str to str, number or bool, optional
        The request object's ``parameters`` member.

    Returns
    -------
    bytes

    Raises
    ------
    InferenceServerException
        For a member that is not JSON, a non-string name, or ``parameters`` given both in
        ``inputs`` and as the argument.
    """
    body = _json_members(
        inputs, "inputs", "a mapping of names to values (the generate request object)"
    )
    if parameters is not None:
        if "parameters" in body:
            raise_error("'parameters' is given both in inputs and as the parameters argument")
        params = _json_members(parameters, "parameters", "a mapping")
        for key, converted in params.items():
            if not isinstance(converted, str | bool | int | float):
                raise_error(
                    f"parameters['{key}']: a parameter is a str, number or bool "
                    f"(the generate extension's $parameter), not {type(parameters[key]).__name__}"
                )
        body["parameters"] = params
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _error_object(value: Any) -> str | None:
    """The message of the extension's error object ``{"error": "<message>"}``, else None (a
    model may have an output named ``error``: then the object has other members too)."""
    if isinstance(value, dict) and len(value) == 1:
        message = value.get("error")
        if isinstance(message, str):
            return message
    return None


def generate_error(message: str) -> InferenceServerException:
    """The exception for the extension's error object met in a 200 answer or in the stream.

    It carries no status of its own; Triton answers ``/generate`` with 400 for any failure of
    the inference (the status of its first response), so it is raised as the same error that
    ``generate()`` raises for it: status ``"400"``, ``InferenceServerInvalidArgumentError``.
    """
    return server_error_with_hint(InferenceServerException(msg=message, status="400"))


def decode_generate_response(body: Buffer) -> dict[str, Any]:
    """``/generate``'s 200 answer: the response object.

    Raises
    ------
    InferenceServerException
        The extension's error object (Triton answers a decoupled model that gave other than
        one response with it, status 200); :class:`InferenceServerProtocolError` for a body
        that is not a JSON object.
    """
    value = client_json(body, "the generate response")
    message = _error_object(value)
    if message is not None:
        raise generate_error(message)
    if not isinstance(value, dict):
        raise InferenceServerProtocolError(
            f"the generate response is a JSON {json_kind(value)}, expected an object"
        )
    return value


def decode_generate_event(data: str) -> dict[str, Any]:
    """One event of ``/generate_stream``: its response object.

    Parameters
    ----------
    data : str
        The event's data (:attr:`SseEvent.data`).

    Raises
    ------
    InferenceServerException
        For the extension's error object (see :func:`generate_error`);
        :class:`InferenceServerProtocolError` for data that is not a JSON object.
    """
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InferenceServerProtocolError(
            f"an event of the generate stream is not JSON ({exc}): {data[:200]!r}",
            debug_details=data[:200],
        ) from None
    if type(value) is dict:
        if "error" in value:
            message = _error_object(value)
            if message is not None:
                raise generate_error(message)
        return value
    raise InferenceServerProtocolError(
        f"an event of the generate stream is a JSON {json_kind(value)}, expected an object"
    )


_raw_decode = json.JSONDecoder().raw_decode


class GenerateStreamDecoder:
    """``/generate_stream``'s body, fed as it arrives, handed out one response at a time.

    Both HTTP clients drive it the same way: :meth:`feed` what the transport read, take the
    responses with :meth:`next` until it returns None, read more; :meth:`end` when the body
    has ended.  An error event is raised by :meth:`next` in its place, after every response
    that came before it; nothing after it is decoded.
    """

    __slots__ = ("_error", "_sse", "ready")

    def __init__(self) -> None:
        self._sse = SseParser()
        #: The responses decoded and not taken yet (a caller may pop them itself).
        self.ready: deque[dict[str, Any]] = deque()
        self._error: InferenceServerException | None = None

    def feed(self, chunk: bytes) -> None:
        """Parse the next bytes of the body (ignored after an error event)."""
        if self._error is not None:
            return
        ready = self.ready
        for event in self._sse.feed(chunk):
            data = event.data
            # The usual event first: one compact JSON object that is not the error object
            # (json.loads would add two whitespace scans per event); anything else takes
            # the full path, which raises what it must.
            try:
                value, end = _raw_decode(data)
            except ValueError:
                end = -1
            if end == len(data) and type(value) is dict and "error" not in value:
                ready.append(value)
                continue
            try:
                ready.append(decode_generate_event(data))
            except InferenceServerException as error:
                self._error = error
                return

    def next(self) -> dict[str, Any] | None:
        """The next response, or None until more bytes are fed.

        Raises
        ------
        InferenceServerException
            The stream's error event, once the responses before it have been taken.
        """
        if self.ready:
            return self.ready.popleft()
        error = self._error
        if error is not None:
            raise error
        return None

    def end(self) -> None:
        """The body has ended: it must have ended between two events.

        Raises
        ------
        InferenceServerProtocolError
            If part of an event was left without its blank line.
        """
        if self._error is None:
            self._sse.close()


def stream_open_error(status: int, content_type: str | None, body: Buffer) -> Exception:
    """The exception for a ``/generate_stream`` answer that is not an event stream: the error
    status and JSON error object of a request refused before inference started, or a 200
    answer of the wrong type."""
    error = error_from_response(status, body)
    if error is not None:
        return server_error_with_hint(error)
    return InferenceServerProtocolError(
        f"the generate stream was answered with Content-Type {content_type!r}, expected "
        f"{EVENT_STREAM!r}"
    )


def is_event_stream(content_type: str | None) -> bool:
    """Whether a Content-Type is ``text/event-stream`` (any parameters)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == EVENT_STREAM
