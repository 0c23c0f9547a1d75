"""The generate extension (``/generate`` and ``/generate_stream``, server side).

:func:`parse_generate_request` maps the request's JSON object onto the model's inputs and
parameters as Triton does; :func:`encode_generate_response` writes one response as the
extension's flat JSON object; :func:`encode_sse_event` frames it as a Server-Sent Event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy.typing as npt

from .errors import HttpCodecError, http_bad, http_internal, json_type_text
from .http_server import ParsedInferRequest, ParsedInput, RequestParameters, custom_parameter
from .jsontext import dumps, member_object, parse_json_document, tensor_to_json
from .types import Buffer, ParamValue

__all__ = ["encode_generate_response", "encode_sse_event", "parse_generate_request"]


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


def parse_generate_request(
    body: Buffer, *, model_inputs: Mapping[str, tuple[str, Sequence[int]]]
) -> ParsedInferRequest:
    """Parse a generate / generate_stream request (server side) as Triton 2.51 does.

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

    Returns
    -------
    ParsedInferRequest

    Raises
    ------
    HttpCodecError
        500 for a body that is not JSON and for one that is not an object; 400 for an input
        whose value does not fit its shape, a ``parameters`` that is not an object, and
        parameter values of the wrong type.
    """
    request = member_object(parse_json_document(body))
    request_id = ""
    inputs: list[ParsedInput] = []
    params: dict[str, Any] = {}

    def convert(members: Mapping[str, Any], context: str) -> None:
        nonlocal request_id
        for key, value in members.items():
            if key == "id" and not context and isinstance(value, str):
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
                params[key] = value
                continue
            datatype, dims = found
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
