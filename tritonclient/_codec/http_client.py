"""The client side of the HTTP/REST protocol (sans-I/O).

:func:`encode_input`, :func:`encode_output` and :func:`encode_infer_request` build an inference
request body (chunks, zero-copy for numpy inputs, plus the JSON length for
``Inference-Header-Content-Length``); :func:`decode_infer_response` splits a response body,
checks it (every requested output present, data that fit datatype and shape) and turns outputs
into numpy arrays with :func:`numpy.frombuffer` over the received bytes;
:func:`error_from_response` maps a non-200 answer to the
:class:`~tritonclient.utils.InferenceServerException` subclass of its status.  The request
bodies of the other endpoints are here too (:func:`encode_load_request`, ...).
"""

from __future__ import annotations

import base64
import functools
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient.utils import (
    InferenceServerException,
    InferenceServerProtocolError,
    raise_error,
)
from tritonclient.utils._serialize import json_number_text

from .arguments import check_input_array, check_parameter_name
from .checks import (
    FIXED_DATATYPES,
    DecodedOutputs,
    Requested,
    decode_raw_output,
    known_datatype,
    response_fault,
    response_shape,
)
from .errors import HttpCodecError
from .http_body import HEADER_INFERENCE_HEADER_CONTENT_LENGTH, EncodedBody, decompress
from .jsontext import (
    NUMBER_TYPES,
    client_json,
    dumps,
    json_kind,
    json_output,
    number_text_list,
    tensor_to_json,
    with_data_text,
)
from .raw import tensor_to_buffer
from .types import NO_OPTIONS, Buffer, InferOptions, SharedMemoryRef

__all__ = [
    "DecodedResponse",
    "RequestInput",
    "RequestOutput",
    "decode_infer_response",
    "encode_cuda_shm_register",
    "encode_index_request",
    "encode_infer_request",
    "encode_input",
    "encode_input_raw",
    "encode_input_shm",
    "encode_load_request",
    "encode_output",
    "encode_system_shm_register",
    "encode_unload_request",
    "error_from_response",
]


def _request_parameters_json(options: InferOptions) -> dict[str, Any]:
    """The sequence, priority and timeout members of a request's ``parameters``, as
    ``tritonclient`` writes them (custom parameters are added after ``binary_data_output``)."""
    out: dict[str, Any] = {}
    if options.in_sequence:
        out["sequence_id"] = options.sequence_id
        out["sequence_start"] = bool(options.sequence_start)
        out["sequence_end"] = bool(options.sequence_end)
    if options.priority != 0:
        out["priority"] = options.priority
    if options.timeout is not None:
        out["timeout"] = options.timeout
    return out


def _custom_parameters_json(options: InferOptions) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (options.parameters or {}).items():
        check_parameter_name(key)
        out[key] = value
    return out


class RequestInput:
    """One input of a request being built (client side).

    Parameters
    ----------
    name, datatype : str
        Input name and protocol datatype.
    shape : list of int
        The shape.
    parameters : dict, optional
        Tensor parameters (``binary_data_size``, shared-memory placement).
    data : list, optional
        JSON ``data`` (flat), when sent as JSON.
    raw : bytes-like, optional
        The binary chunk, when sent with the binary tensor extension.
    text : bytes, optional
        JSON ``data`` of a numeric tensor as pre-formatted number text (the inside of the
        array, see :func:`tritonclient.utils._codec.json_number_text`); the body is built
        from it and :attr:`data` is derived from it only when asked for.

    Attributes
    ----------
    name, datatype, shape, parameters, raw
        As given.
    """

    __slots__ = ("_data", "_json", "_text", "datatype", "name", "parameters", "raw", "shape")

    def __init__(
        self,
        name: str,
        datatype: str,
        shape: list[int],
        parameters: dict[str, Any] | None = None,
        data: list[Any] | None = None,
        raw: Buffer | None = None,
        *,
        text: bytes | None = None,
    ) -> None:
        self.name = name
        self.datatype = datatype
        self.shape = shape
        self.parameters: dict[str, Any] = {} if parameters is None else parameters
        self.raw = raw
        self._data = data
        self._text = None if data is not None else text
        self._json: bytes | None = None  # to_json_bytes(), made once

    @property
    def data(self) -> list[Any] | None:
        """JSON ``data`` (flat) when sent as JSON, else None (made from the number text on
        first use)."""
        if self._data is None and self._text is not None:
            self._data = number_text_list(self.datatype, self._text)
        return self._data

    @data.setter
    def data(self, value: list[Any] | None) -> None:
        self._data = value
        self._text = None
        self._json = None

    @property
    def text(self) -> bytes | None:
        """JSON ``data`` as pre-formatted number text, or None."""
        return self._text

    def replace(self, name: str, datatype: str, shape: list[int]) -> RequestInput:
        """A copy with another name, datatype and shape (same data, parameters copied).

        Parameters
        ----------
        name, datatype : str
            The new name and datatype.
        shape : list of int
            The new shape.

        Returns
        -------
        RequestInput
        """
        return RequestInput(
            name, datatype, shape, dict(self.parameters), self._data, self.raw, text=self._text
        )

    def to_json(self) -> dict[str, Any]:
        """The ``$request_input`` object."""
        out: dict[str, Any] = {"name": self.name, "shape": self.shape, "datatype": self.datatype}
        if self.parameters:
            out["parameters"] = self.parameters
        data = self.data
        if data is not None:
            out["data"] = data
        return out

    def to_json_bytes(self) -> bytes:
        """The ``$request_input`` object as JSON text (number text spliced in as is).

        Made on the first call and kept: the object is not to be changed once it is used
        in a request (the clients make a new one when an input changes).
        """
        if self._json is not None:
            return self._json
        if self._text is None:
            text = dumps(self.to_json())
        else:
            out: dict[str, Any] = {
                "name": self.name,
                "shape": self.shape,
                "datatype": self.datatype,
            }
            if self.parameters:
                out["parameters"] = self.parameters
            text = with_data_text(dumps(out), self._text)
        self._json = text
        return text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequestInput):
            return NotImplemented
        header = (self.name, self.datatype, self.shape, self.parameters, self.raw)
        if header != (other.name, other.datatype, other.shape, other.parameters, other.raw):
            return False
        if self._text is not None and other._text is not None:
            return self._text == other._text
        return self.data == other.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        data = repr(self._data) if self._text is None else f"<{len(self._text)} bytes of text>"
        return (
            f"RequestInput(name={self.name!r}, datatype={self.datatype!r}, "
            f"shape={self.shape!r}, parameters={self.parameters!r}, data={data}, "
            f"raw={self.raw!r})"
        )


def encode_input(
    name: str,
    datatype: str,
    shape: Sequence[int],
    tensor: npt.NDArray[Any],
    *,
    binary_data: bool = True,
) -> RequestInput:
    """Describe an input whose values come from a numpy array (``set_data_from_numpy``).

    Parameters
    ----------
    name : str
        Input name.
    datatype : str
        Protocol datatype; must match the array's dtype (BF16 also takes float32, truncated).
    shape : sequence of int
        The input shape; must equal the array's shape.
    tensor : numpy.ndarray
        The values.
    binary_data : bool, optional
        Send the values with the binary tensor extension (default, zero-copy for contiguous
        arrays) rather than as JSON.

    Returns
    -------
    RequestInput

    Raises
    ------
    InferenceServerException
        If the dtype or shape does not match, or the values cannot be sent as JSON (BF16;
        BYTES elements that are not UTF-8).
    """
    check_input_array(name, datatype, shape, tensor)
    array = tensor
    shape_list = [int(d) for d in shape]
    if not binary_data:
        if datatype == "BF16":
            raise_error(
                "BF16 inputs must be sent as binary data over HTTP. Please set binary_data=True"
            )
        if datatype in NUMBER_TYPES:
            # FP16 included: JSON has no FP16; send the numbers and let the server answer
            # (Triton: 400).  The text is made now, so later changes to the array do not
            # show, as with tritonclient's list.
            text = json_number_text(array)
            return RequestInput(name, datatype, shape_list, {}, None, None, text=text)
        return RequestInput(name, datatype, shape_list, {}, tensor_to_json(datatype, array))
    raw = tensor_to_buffer(datatype, array)
    return RequestInput(
        name, datatype, shape_list, {"binary_data_size": memoryview(raw).nbytes}, None, raw
    )


def encode_input_raw(name: str, datatype: str, shape: Sequence[int], raw: Buffer) -> RequestInput:
    """Describe an input given as raw bytes in the wire layout (section 2.2).

    Parameters
    ----------
    name, datatype : str
        Input name and datatype.
    shape : sequence of int
        The shape.
    raw : bytes-like
        The tensor's bytes (BYTES: length-prefixed elements); sent as is.

    Returns
    -------
    RequestInput
    """
    return RequestInput(
        name,
        datatype,
        [int(d) for d in shape],
        {"binary_data_size": memoryview(raw).nbytes},
        None,
        raw,
    )


def encode_input_shm(
    name: str, datatype: str, shape: Sequence[int], region: str, byte_size: int, offset: int = 0
) -> RequestInput:
    """Describe an input whose data is in a registered shared-memory region.

    Parameters
    ----------
    name, datatype : str
        Input name and datatype.
    shape : sequence of int
        The shape.
    region : str
        Registered region name.
    byte_size : int
        Bytes of the tensor in the region.
    offset : int, optional
        Offset in the region (default 0; only sent when non-zero).

    Returns
    -------
    RequestInput
    """
    placement = SharedMemoryRef(region, byte_size, offset)
    return RequestInput(name, datatype, [int(d) for d in shape], placement.to_parameters())


@dataclass
class RequestOutput:
    """One requested output (client side).

    Attributes
    ----------
    name : str
        Output name.
    parameters : dict
        ``binary_data``, ``classification``, shared-memory placement.
    """

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``$request_output`` object."""
        out: dict[str, Any] = {"name": self.name}
        if self.parameters:
            out["parameters"] = self.parameters
        return out

    @functools.cached_property
    def json_bytes(self) -> bytes:
        """:meth:`to_json` as JSON text, made once (the object is not to be changed once it
        is used in a request)."""
        return dumps(self.to_json())


def encode_output(
    name: str,
    *,
    binary_data: bool = True,
    class_count: int = 0,
    shared_memory: SharedMemoryRef | None = None,
) -> RequestOutput:
    """Describe a requested output (``InferRequestedOutput``).

    Parameters
    ----------
    name : str
        Output name.
    binary_data : bool, optional
        Return the output with the binary tensor extension (default True).  Ignored with
        ``shared_memory`` (sent as ``false`` then, as ``tritonclient`` does).
    class_count : int, optional
        Return the top ``class_count`` classes instead of the tensor (0: off).
    shared_memory : SharedMemoryRef, optional
        Write the output into this registered region.

    Returns
    -------
    RequestOutput
    """
    parameters: dict[str, Any] = {}
    if class_count:
        parameters["classification"] = class_count
    if shared_memory is not None:
        parameters["binary_data"] = False
        parameters.update(shared_memory.to_parameters())
    else:
        parameters["binary_data"] = binary_data
    return RequestOutput(name, parameters)


def encode_infer_request(
    inputs: Iterable[RequestInput],
    outputs: Iterable[RequestOutput] | None = None,
    options: InferOptions = NO_OPTIONS,
) -> EncodedBody:
    """Build an inference request body: JSON header, then each binary input's bytes.

    The options are written as ``tritonclient``'s ``infer()`` writes them (section 7.1): the
    sequence parameters only when ``sequence_id`` is non-zero/non-empty, ``priority`` only
    when non-zero, ``timeout`` only when given; without ``outputs`` the request asks for every
    output in binary (``binary_data_output: true``).

    Parameters
    ----------
    inputs : iterable of RequestInput
        The inputs, in order (binary chunks follow in this order).
    outputs : iterable of RequestOutput, optional
        The outputs to return; None or empty returns every output.
    options : InferOptions, optional
        The request id and the other request-level options.

    Returns
    -------
    EncodedBody
        ``json_size`` is set when at least one input is binary.

    Raises
    ------
    InferenceServerException
        For a reserved custom parameter name.
    """
    inputs = list(inputs)
    # The JSON is assembled from pieces so that number text is spliced in without being
    # parsed; the members are those (and in the order) json.dumps of the request would give.
    # Each input's and output's JSON text is made once and kept by its object.
    parts: list[bytes] = [b"{"]
    if options.request_id != "":
        parts += [b'"id":', dumps(options.request_id), b","]
    params = {} if options is NO_OPTIONS else _request_parameters_json(options)
    parts += [b'"inputs":[', b",".join([each.to_json_bytes() for each in inputs]), b"]"]
    output_list = outputs if type(outputs) is list else list(outputs or [])
    if output_list:
        parts += [b',"outputs":[', b",".join([o.json_bytes for o in output_list]), b"]"]
    else:
        params["binary_data_output"] = True
    if options.parameters:
        params.update(_custom_parameters_json(options))
    if params:
        parts += [b',"parameters":', dumps(params)]
    parts.append(b"}")
    header = b"".join(parts)
    chunks: list[Buffer] = [header]
    binary = False
    size = len(header)
    for each in inputs:
        raw = each.raw
        if raw is not None:
            binary = True
            length = len(raw) if type(raw) is bytes else memoryview(raw).nbytes
            if length:
                chunks.append(raw)
                size += length
    return EncodedBody(chunks, len(header) if binary else None, None, size)


class DecodedResponse:
    """An inference response body split into its JSON and its binary outputs, checked and
    decoded (client side).

    Every output is checked and decoded here, once, so that a broken answer fails before it is
    handed out rather than at :meth:`as_numpy`: its name, datatype and shape; binary data of
    exactly the size its datatype and shape need, the sizes adding up to the bytes after the
    JSON (none missing, none trailing); JSON ``data`` with shape's number of elements, each of
    the datatype's JSON type and within its range.  Fixed-size binary outputs cost a
    :func:`numpy.frombuffer` view each.

    Parameters
    ----------
    response : dict
        The parsed JSON (``$inference_response``).
    buffer : bytes-like
        The body, the binary outputs from ``start`` on.
    requested : Requested, optional
        The outputs the request asked for: each must be in the response, and only those
        requested in shared memory may come without data.  None (a body parsed on its own,
        as by ``parse_response_body``): an output without data is taken as written to shared
        memory.

    start : int, optional
        Where the binary outputs start in ``buffer`` (the JSON's length; default 0).

    Raises
    ------
    InferenceServerProtocolError
        For a response that does not hold what it says (see :func:`decode_infer_response`).
    """

    def __init__(
        self,
        response: dict[str, Any],
        buffer: Buffer,
        requested: Requested | None = None,
        start: int = 0,
    ) -> None:
        self._response = response
        self._buffer = buffer
        self._start = start
        self._slices: dict[str, tuple[int, int]] = {}
        arrays: dict[str, npt.NDArray[Any] | None] = {}
        outputs = response.get("outputs")
        if outputs is None:
            outputs = []
        elif type(outputs) is not list:
            raise response_fault(f"'outputs' is a {json_kind(outputs)}, expected an array")
        offset = 0
        binary: list[tuple[str, Any, Any, int, int]] = []  # name, datatype, shape, at, size
        slices = self._slices
        for output in outputs:
            if type(output) is not dict:
                raise response_fault(
                    f"an element of 'outputs' is a {json_kind(output)}, expected an object"
                )
            name = output.get("name")
            if type(name) is not str:
                raise response_fault(f"an output has name {name!r}; expected a string")
            if name in arrays:
                continue  # get_output() and as_numpy() see the first one, as before
            parameters = output.get("parameters")
            size = None
            if parameters is not None:
                if type(parameters) is not dict:
                    raise response_fault(
                        f"output '{name}' has parameters of type {json_kind(parameters)}, "
                        "expected an object"
                    )
                size = parameters.get("binary_data_size")
            if size is not None:
                if type(size) is not int or size < 0:
                    raise response_fault(
                        f"output '{name}' has binary_data_size {size!r}; expected a "
                        "non-negative integer"
                    )
                slices[name] = (offset, size)
                binary.append((name, output.get("datatype"), output.get("shape"), offset, size))
                offset += size
                arrays[name] = None
            elif "data" in output:
                arrays[name] = json_output(
                    name, output.get("datatype"), output.get("shape"), output["data"]
                )
            else:
                datatype = output.get("datatype")
                known_datatype(name, datatype)
                dims = response_shape(name, output.get("shape"))
                if requested is not None:
                    requested.no_data(name, datatype, dims)
                arrays[name] = None  # in shared memory
        available = (len(buffer) if type(buffer) is bytes else memoryview(buffer).nbytes) - start
        if offset != available:
            if offset > available:
                detail = f"{offset - available} bytes are missing"
            else:
                detail = f"{available - offset} bytes trail them"
            raise response_fault(
                f"its outputs declare {offset} bytes of binary data (binary_data_size) and "
                f"{available} bytes follow its JSON: {detail}"
            )
        fixed_types = FIXED_DATATYPES
        layout: list[tuple[str, Any, tuple[int, ...], int]] = []
        for name, datatype, shape, at, size in binary:
            # Inline for the usual output (a fixed-size datatype, a list of dimensions that
            # needs exactly the bytes it has); anything else, broken answers included, goes
            # through decode_raw_output's checks and messages.
            fixed = fixed_types.get(datatype) if type(datatype) is str else None
            if fixed is not None and type(shape) is list:
                count = 1
                for dim in shape:
                    if type(dim) is not int or dim < 0:
                        break
                    count *= dim
                else:
                    if count * fixed[1] == size:
                        arrays[name] = np.ndarray(shape, fixed[0], buffer, start + at)
                        layout.append((name, fixed[0], tuple(shape), at))
                        continue
            arrays[name] = decode_raw_output(name, datatype, shape, buffer, start + at, size)
        if requested is not None and requested.outputs:
            requested.check_present(arrays)
        self._outputs = DecodedOutputs(arrays)
        #: When every output is a fixed-size binary one on the inline path: how to decode
        #: the same JSON again (see :func:`decode_infer_response`).
        self.layout = (tuple(layout), slices) if len(layout) == len(arrays) else None

    #: The parsed JSON; None until first read in a response made by :meth:`known`.
    _response: dict[str, Any] | None
    #: The JSON text of a response made by :meth:`known`, parsed when first asked for.
    _text: bytes = b""

    @classmethod
    def known(
        cls,
        text: bytes,
        buffer: Buffer,
        requested: Requested | None,
        start: int,
        layout: tuple[tuple[tuple[str, Any, tuple[int, ...], int], ...], dict[str, Any]],
    ) -> DecodedResponse:
        """The response whose JSON ``text`` was decoded once before, with the same number
        of binary bytes after it: every check on it came out the same (they read nothing
        else), so only the arrays are made, and the requested outputs checked.  The JSON is
        parsed only when :attr:`response` is read (the same bytes parsed before: it cannot
        fail), so that a caller that reads only the arrays does not pay for it."""
        self = cls.__new__(cls)
        self._response = None
        self._text = text
        self._buffer = buffer
        self._start = start
        outputs, slices = layout
        self._slices = slices  # (the offsets are only read)
        ndarray = np.ndarray
        arrays: dict[str, npt.NDArray[Any] | None] = {
            name: ndarray(shape, dtype, buffer, start + at) for name, dtype, shape, at in outputs
        }
        if requested is not None:
            wanted = requested.outputs
            if wanted and not wanted.keys() <= slices.keys():  # (all outputs are in slices)
                requested.check_present(arrays)
        self._outputs = DecodedOutputs(arrays)
        self.layout = layout
        return self

    @property
    def response(self) -> dict[str, Any]:
        """The parsed JSON of the response."""
        response = self._response
        if response is None:
            with _PARSING:  # one dict per response, also when threads ask at once
                response = self._response
                if response is None:
                    response = self._response = client_json(self._text, "the inference response")
        return response

    def get_output(self, name: str) -> dict[str, Any] | None:
        """The ``$response_output`` object of output ``name``, or None."""
        for output in self.response.get("outputs") or []:
            if output.get("name") == name:
                return output  # type: ignore[no-any-return]
        return None

    def output_buffer(self, name: str) -> memoryview | None:
        """The binary bytes of output ``name`` (a view of the body), or None if it has none."""
        found = self._slices.get(name)
        if found is None:
            return None
        offset, size = found
        offset += self._start
        return memoryview(self._buffer).cast("B")[offset : offset + size]

    def as_numpy(self, name: str) -> npt.NDArray[Any] | None:
        """Output ``name`` as a numpy array shaped as the response says.

        Binary fixed-size outputs are :func:`numpy.frombuffer` views of the body (no copy; the
        array is read-only when the body is ``bytes``).  BYTES outputs hold ``bytes`` when
        binary and ``str`` when sent as JSON (as ``tritonclient`` returns them).  Each call
        returns an array of its own where the array is writable (the first call gets the one
        decoded with the response).

        Parameters
        ----------
        name : str
            Output name.

        Returns
        -------
        numpy.ndarray or None
            None when there is no such output, or it was written to shared memory.
        """
        return self._outputs.get(name)


def decode_infer_response(
    body: Buffer,
    header_length: int | str | None = None,
    content_encoding: str | None = None,
    requested: Requested | None = None,
) -> DecodedResponse:
    """Parse and check an inference response body (client side).

    Parameters
    ----------
    body : bytes-like
        The body as received.
    header_length : int or str, optional
        The ``Inference-Header-Content-Length`` header (None: the whole body is JSON).
    content_encoding : str, optional
        The ``Content-Encoding`` header; the body is decompressed first.
    requested : Requested, optional
        The outputs the request asked for (see :class:`DecodedResponse`).

    Returns
    -------
    DecodedResponse

    Raises
    ------
    InferenceServerProtocolError
        If the body is not a valid response: corrupt compression, a header length outside the
        body, JSON that is not UTF-8 or not one JSON object, an output whose data do not fit
        its datatype and shape, binary data missing or trailing, a requested output missing.
    """
    data: Buffer = body
    if content_encoding:
        try:
            data = decompress(body, content_encoding)
        except HttpCodecError as exc:
            raise InferenceServerProtocolError(str(exc.message())) from None
    if type(data) is not bytes:
        data = memoryview(data).cast("B")
    total = len(data)
    if header_length is None:
        size = total
    else:
        try:
            size = int(header_length)
        except ValueError:
            raise response_fault(
                f"invalid {HEADER_INFERENCE_HEADER_CONTENT_LENGTH}: {header_length!r}"
            ) from None
        if not 0 <= size <= total:
            raise response_fault(
                f"{HEADER_INFERENCE_HEADER_CONTENT_LENGTH} {size} is outside the body of "
                f"{total} bytes"
            )
    text = data if size == total else data[:size]
    key = None
    if type(text) is bytes:
        # The same model answers with the same JSON call after call (bar a request id): its
        # checks and layout are kept, keyed by the JSON's bytes and the binary bytes after it.
        key = (text, total - size)
        layout = _LAYOUTS.get(key)
        if layout is not None:
            return DecodedResponse.known(text, data, requested, size, layout)
    parsed = client_json(text, "the inference response")
    if type(parsed) is not dict:
        raise response_fault(f"the JSON is a {json_kind(parsed)}, expected an object")
    decoded = DecodedResponse(parsed, data, requested, size)
    if key is None:
        return decoded
    if decoded.layout is not None and len(text) <= _LAYOUT_JSON_MAX:
        if len(_LAYOUTS) >= _LAYOUTS_MAX:
            _LAYOUTS.clear()
        _LAYOUTS[key] = decoded.layout
    return decoded


#: Held while a response made by :meth:`DecodedResponse.known` parses its JSON.
_PARSING = threading.Lock()

#: (response JSON, binary bytes after it) -> the layout of its outputs, for responses whose
#: outputs are all fixed-size binary ones (:attr:`DecodedResponse.layout`).  Bounded:
#: cleared when full (request ids make every JSON new).
_LAYOUTS: dict[tuple[bytes, int], Any] = {}
_LAYOUTS_MAX = 256
_LAYOUT_JSON_MAX = 4096


def error_from_response(status: int, body: Buffer) -> InferenceServerException | None:
    """The exception for a non-200 response, or None for 200.

    Parameters
    ----------
    status : int
        HTTP status code.
    body : bytes-like
        The (decompressed) body: ``{"error": "..."}``, possibly empty or not JSON.

    Returns
    -------
    InferenceServerException or None
        With ``status()`` the HTTP status as a string and the message from ``error``.
    """
    if status == 200:
        return None
    # As NVIDIA's 2.73 clients: a body that is not UTF-8 JSON with an "error" key is quoted
    # in the message (with the decoding error), and kept as the debug details.
    text: str | None = None
    try:
        text = bytes(body).decode("utf-8")
        if not text:
            return InferenceServerException(
                msg="client received an empty response from the server.", status=str(status)
            )
        message = json.loads(text)["error"]
    except Exception as exc:  # what NVIDIA's client catches: any decoding failure
        return InferenceServerException(
            msg=f"an exception occurred in the client while decoding the response: {exc}\n"
            f"response: {text}",
            status=str(status),
            debug_details=text,
        )
    return InferenceServerException(msg=message, status=str(status))


def encode_index_request(ready: bool | None = None) -> bytes:
    """Body of ``POST /v2/repository/index`` (empty unless ``ready`` is given)."""
    return b"" if ready is None else dumps({"ready": bool(ready)})


def encode_load_request(
    config: str | None = None, files: Mapping[str, bytes] | None = None
) -> bytes:
    """Body of ``POST /v2/repository/models/<m>/load``.

    Parameters
    ----------
    config : str, optional
        A JSON ``ModelConfig`` to use instead of the model's ``config.pbtxt``.
    files : mapping of str to bytes, optional
        ``{"file:<version>/<path>": content}``; contents are sent base64-encoded.

    Returns
    -------
    bytes
        ``{}`` or ``{"parameters": {...}}``.
    """
    parameters: dict[str, str] = {}
    if config is not None:
        parameters["config"] = config
    for path, content in (files or {}).items():
        parameters[path] = base64.b64encode(bytes(content)).decode("ascii")
    return dumps({"parameters": parameters} if parameters else {})


def encode_unload_request(unload_dependents: bool = False) -> bytes:
    """Body of ``POST /v2/repository/models/<m>/unload`` (as ``tritonclient`` sends it)."""
    return dumps({"parameters": {"unload_dependents": bool(unload_dependents)}})


def encode_system_shm_register(key: str, offset: int, byte_size: int) -> bytes:
    """Body of a system shared-memory register request."""
    return dumps({"key": key, "offset": int(offset), "byte_size": int(byte_size)})


def encode_cuda_shm_register(raw_handle: bytes, device_id: int, byte_size: int) -> bytes:
    """Body of a CUDA shared-memory register request (``raw_handle`` is base64-encoded)."""
    return dumps(
        {
            "raw_handle": {"b64": base64.b64encode(bytes(raw_handle)).decode("ascii")},
            "device_id": int(device_id),
            "byte_size": int(byte_size),
        }
    )
