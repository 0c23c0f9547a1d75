"""The server side of the gRPC protocol (sans-I/O).

:func:`decode_infer_request` reads a ``ModelInferRequest`` (raw contents split off by
:mod:`~tritonclient._codec.grpc_framing`) into plain data, with Triton's checks and messages
(:class:`~tritonclient._codec.errors.GrpcCodecError`); :func:`encode_infer_response_parts` and
the stream encoders write answers.  The encoders take any object shaped like
:class:`ResponseLike`, so the codec never imports server types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any, Protocol

import numpy.typing as npt

from tritonclient._proto import service_pb2
from tritonclient.utils import (
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
    InferenceServerException,
)

from .errors import GrpcCodecError, grpc_invalid, grpc_wrong_type, request_prefix
from .grpc_common import (
    CONTENTS_FIELD_TYPES,
    EMPTY_FINAL_RESPONSE_PARAM,
    FINAL_RESPONSE_PARAM,
    contents_array,
    from_infer_parameter,
    to_infer_parameter,
)
from .numbers import UINT64_MAX, stol
from .raw import element_count, raw_input_array, tensor_to_buffer
from .settings import trace_changes
from .types import (
    Buffer,
    DecodedInferRequest,
    DecodedInput,
    DecodedOutput,
    ParamValue,
    SharedMemoryRef,
)

__all__ = [
    "DecodedInferRequest",
    "DecodedInput",
    "DecodedOutput",
    "OutputTensorLike",
    "ResponseLike",
    "decode_infer_request",
    "encode_empty_final_response",
    "encode_infer_response",
    "encode_infer_response_parts",
    "encode_stream_error",
    "encode_stream_response_parts",
    "parse_log_settings_request",
    "parse_model_version",
    "parse_trace_setting_request",
]


def parse_model_version(version: str, model_name: str) -> int:
    """Parse a model version string as the server reads it.

    Parameters
    ----------
    version : str
        The version from a request; "" selects the server's choice.
    model_name : str
        The model (for the message).

    Returns
    -------
    int
        The version (read as ``std::stol`` reads it: ``"3abc"`` is 3), or -1 for "".

    Raises
    ------
    GrpcCodecError
        ``INVALID_ARG`` for a string that does not start with a number or is negative, with
        Triton's messages.
    """
    if version == "":
        return -1
    try:
        number = stol(version)
    except (ValueError, OverflowError):
        # Triton quotes the C++ exception's what(), which is "stol" for both failures.
        raise grpc_invalid(
            f"failed to get model version from specified version string '{version}' "
            "(details: stol), version should be an integral value > 0"
        ) from None
    if number < 0:
        raise grpc_invalid(
            f"invalid model version specified '{version}' , version should be an integral value > 0"
        )
    return number


def parse_trace_setting_request(request: service_pb2.TraceSettingRequest) -> dict[str, Any]:
    """The changes of a ``TraceSetting`` request, read as Triton 2.51 reads them (server side).

    Only ``trace_file``, ``trace_level``, ``trace_rate``, ``trace_count`` and
    ``log_frequency`` are read, other keys are ignored; a setting with no values clears it
    (None).  Levels other than ``OFF``, ``TIMESTAMPS`` and ``TENSORS`` are ignored; numbers
    are parsed with ``std::stoi`` (a negative rate or frequency wraps to unsigned).

    Returns
    -------
    dict
        ``{setting: value}``: levels as a list, numbers as decimal strings.

    Raises
    ------
    GrpcCodecError
        ``INVALID_ARG`` with Triton's messages: several values for a single-valued setting,
        ``OFF`` with another level, numbers that do not parse or are out of range.
    """
    settings = request.settings

    def read(key: str) -> Any:
        values = list(settings[key].value)
        if key == "trace_level" or not values:
            return values or None
        if len(values) != 1:
            raise grpc_invalid(f"expect only 1 value for '{key}'")
        return values[0]

    try:
        return trace_changes(settings, read, got="got: ")
    except ValueError as exc:
        raise grpc_invalid(str(exc)) from None


_LOG_SETTINGS = (
    ("log_file", "string_param", "string"),
    ("log_info", "bool_param", "boolean"),
    ("log_warning", "bool_param", "boolean"),
    ("log_error", "bool_param", "boolean"),
    ("log_verbose_level", "uint32_param", "int32"),
    ("log_format", "string_param", "string"),
)


def parse_log_settings_request(request: service_pb2.LogSettingsRequest) -> dict[str, Any]:
    """The changes of a ``LogSettings`` request, read as Triton 2.51 reads them (server side).

    Only the six settings are read (other keys are ignored); each must hold its own kind of
    value.

    Returns
    -------
    dict
        ``{setting: value}``.

    Raises
    ------
    GrpcCodecError
        ``INVALID_ARG`` ``expect <type> for '<setting>'`` for a value of the wrong kind, and
        ``invalid argument for log_format, got: <value>``.
    """
    changes: dict[str, Any] = {}
    for key, field_name, kind in _LOG_SETTINGS:
        if key not in request.settings:
            continue
        entry = request.settings[key]
        if entry.WhichOneof("parameter_choice") != field_name:
            raise grpc_invalid(f"expect {kind} for '{key}'")
        value = getattr(entry, field_name)
        if key == "log_format" and value not in ("default", "ISO8601"):
            raise grpc_invalid(f"invalid argument for log_format, got: {value}")
        changes[key] = value
    return changes


def _decode_request_parameters(
    params: Mapping[str, service_pb2.InferParameter], out: DecodedInferRequest
) -> None:
    for key in sorted(params):
        param = params[key]
        which = param.WhichOneof("parameter_choice")
        if key == "sequence_id":
            if which == "int64_param":
                out.correlation_id = param.int64_param & UINT64_MAX
            elif which == "string_param":
                out.correlation_id = param.string_param
            else:
                raise grpc_wrong_type(key, "int64_param or string_param")
        elif key in ("sequence_start", "sequence_end"):
            if which != "bool_param":
                raise grpc_wrong_type(key, "bool_param")
            setattr(out, key, param.bool_param)
        elif key == "priority":
            if which == "int64_param":
                if param.int64_param < 0:
                    raise grpc_invalid("invalid value for 'priority', expected value >= 0.")
                out.priority = param.int64_param
            elif which == "uint64_param":
                out.priority = param.uint64_param
            else:
                raise grpc_wrong_type(key, "int64_param or uint64_param")
        elif key == "timeout":
            if which != "int64_param":
                raise grpc_wrong_type(key, "int64_param")
            # Triton (2.51 and 2.73, src/grpc/infer_handler.cc) hands the int64 to
            # TRITONSERVER_InferenceRequestSetTimeoutMicroseconds, a uint64: a negative one
            # is accepted and wraps (no timeout shorter than the model's default then).
            out.timeout_us = param.int64_param & UINT64_MAX
        elif key == EMPTY_FINAL_RESPONSE_PARAM:
            if which != "bool_param":
                raise grpc_wrong_type(key, "bool_param")
            out.enable_empty_final_response = param.bool_param
        elif key.startswith(TRITON_RESERVED_REQUEST_PARAMS_PREFIX):
            raise grpc_invalid(
                f"parameter keys starting with '{TRITON_RESERVED_REQUEST_PARAMS_PREFIX}' are "
                "reserved for Triton usage. Only the following keys starting with "
                f"'{TRITON_RESERVED_REQUEST_PARAMS_PREFIX}' are allowed: "
                f"{EMPTY_FINAL_RESPONSE_PARAM}"
            )
        elif which in ("bool_param", "int64_param", "string_param", "double_param"):
            out.parameters[key] = getattr(param, which)
        else:
            raise grpc_wrong_type(key, "int64_param, bool_param, or string_param")


def _decode_tensor_parameters(
    params: Mapping[str, service_pb2.InferParameter], tensor: str
) -> tuple[dict[str, ParamValue], SharedMemoryRef | None]:
    """Split tensor parameters into the shared-memory placement and the rest."""
    region: str | None = None
    sizes: dict[str, int] = {}
    rest: dict[str, ParamValue] = {}
    for key in sorted(params):
        param = params[key]
        which = param.WhichOneof("parameter_choice")
        if key == "shared_memory_region":
            if which != "string_param":
                raise grpc_wrong_type(key, "string_param", tensor)
            region = param.string_param
        elif key in ("shared_memory_byte_size", "shared_memory_offset"):
            if which != "int64_param":
                raise grpc_wrong_type(key, "int64_param", tensor)
            if param.int64_param < 0:
                raise grpc_invalid(
                    f"invalid value for '{key}' parameter for tensor '{tensor}', expected "
                    "value >= 0"
                )
            sizes[key] = param.int64_param
        else:
            value = from_infer_parameter(param)
            if value is not None:
                rest[key] = value
    if region is None:
        for key in ("shared_memory_byte_size", "shared_memory_offset"):
            if key in sizes:
                raise grpc_invalid(
                    f"'{key}' can not be specified without 'shared_memory_region' parameter "
                    f"for tensor '{tensor}'"
                )
        return rest, None
    if "shared_memory_byte_size" not in sizes:
        raise grpc_invalid(
            "'shared_memory_byte_size' must be specified along with 'shared_memory_region' "
            f"parameter for tensor '{tensor}'"
        )
    return rest, SharedMemoryRef(
        region, sizes["shared_memory_byte_size"], sizes.get("shared_memory_offset", 0)
    )


def decode_infer_request(
    request: service_pb2.ModelInferRequest,
    raw_input_contents: Sequence[Buffer] | None = None,
    *,
    shm_resolver: Callable[[str, SharedMemoryRef], Buffer] | None = None,
) -> DecodedInferRequest:
    """Decode a ``ModelInferRequest`` for the server core (protocol sections 4.5, 7).

    Tensor data come from ``raw_input_contents`` (the k-th entry belongs to the k-th input
    that is neither in shared memory nor typed), from typed ``contents``, or from shared
    memory through ``shm_resolver``.  Checks done here, with Triton's messages
    (``INVALID_ARG``): request and tensor parameter types, reserved ``triton_*`` keys,
    ``contents`` together with raw contents, ``contents`` together with shared memory, typed
    contents of another datatype, an input with no data, shared-memory parameter
    combinations, a raw buffer that is not a whole number of elements, truncated BYTES
    data, ``classification`` values, and an output with both shared memory and
    classification.  Element counts against the shape, datatypes, shapes and everything
    model-related are left to the core's validation (arrays are left flat when the count
    does not match).  Extra raw entries are ignored, as Triton 2.51 does.

    Parameters
    ----------
    request : ModelInferRequest
        The request.
    raw_input_contents : sequence of bytes-like, optional
        The raw contents when they were split off the message (:func:`parse_infer_request`);
        by default the message's own ``raw_input_contents``.
    shm_resolver : callable, optional
        ``shm_resolver(input_name, ref)`` returns the buffer of a shared-memory input (and
        raises to refuse it).  Without one, shared-memory inputs are refused
        (``UNSUPPORTED``).

    Returns
    -------
    DecodedInferRequest
        The decoded request.

    Raises
    ------
    GrpcCodecError
        For the problems above; whatever ``shm_resolver`` raises passes through.
    """
    model = request.model_name
    decoded = DecodedInferRequest(
        model_name=model,
        model_version=parse_model_version(request.model_version, model),
        model_version_str=request.model_version,
        id=request.id,
    )
    _decode_request_parameters(request.parameters, decoded)
    prefix = request_prefix(request.id)
    raw = request.raw_input_contents if raw_input_contents is None else raw_input_contents
    raw_count = len(raw)
    next_raw = 0
    for message in request.inputs:
        name = message.name
        shape = tuple(int(d) for d in message.shape)
        params, shm = _decode_tensor_parameters(message.parameters, name)
        has_contents = message.HasField("contents")
        if shm is not None:
            if has_contents:
                raise grpc_invalid(
                    "unexpected 'content' provided when using shared memory for input tensor "
                    f"'{name}' for model '{model}'"
                )
            if shm_resolver is None:
                raise GrpcCodecError(
                    "UNSUPPORTED", "shared-memory inputs are not supported by this decoder"
                )
            buffer = shm_resolver(name, shm)
            data = raw_input_array(buffer, message.datatype, shape, name, model, prefix)
        elif has_contents:
            if raw_count:
                raise grpc_invalid(
                    "contents field must not be specified when using raw_input_contents for "
                    f"'{name}' for model '{model}'"
                )
            array, wrong = contents_array(message.contents, message.datatype)
            if array is None:
                assert wrong is not None
                raise grpc_invalid(
                    f"unexpected explicit tensor data for input tensor '{name}' for model "
                    f"'{model}' of type '{CONTENTS_FIELD_TYPES[wrong][1]}', expected "
                    f"datatype '{message.datatype}'"
                )
            count = element_count(shape)
            valid_shape = all(d >= 0 for d in shape)
            data = array.reshape(shape) if valid_shape and array.size == count else array
        elif next_raw < raw_count:
            data = raw_input_array(raw[next_raw], message.datatype, shape, name, model, prefix)
            next_raw += 1
        else:
            raise grpc_invalid(
                f"unable to find data for input tensor '{name}' for model '{model}' in request."
            )
        decoded.inputs.append(DecodedInput(name, message.datatype, shape, data, params, shm))
    for wanted in request.outputs:
        params, shm = _decode_tensor_parameters(wanted.parameters, wanted.name)
        if "classification" in wanted.parameters:
            which = wanted.parameters["classification"].WhichOneof("parameter_choice")
            if which != "int64_param":
                raise grpc_invalid(
                    "invalid value type for 'classification' parameter, expected int64_param"
                )
            if int(params["classification"]) <= 0:
                raise grpc_invalid("invalid value for 'classification' parameter, expected >= 0")
            if shm is not None:
                raise grpc_invalid(
                    "output can't set both 'shared_memory_region' and 'classification'"
                )
        decoded.outputs.append(DecodedOutput(wanted.name, params, shm))
    return decoded


class OutputTensorLike(Protocol):
    """What the encoder reads of an output tensor (the core's ``Tensor`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def datatype(self) -> str: ...

    @property
    def shape(self) -> Sequence[int]: ...

    @property
    def data(self) -> npt.NDArray[Any]: ...


class ResponseLike(Protocol):
    """What the encoder reads of a response (the core's ``InferResponse`` fits)."""

    @property
    def model_name(self) -> str: ...

    @property
    def model_version(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def outputs(self) -> Sequence[OutputTensorLike]: ...

    @property
    def parameters(self) -> Mapping[str, Any]: ...


def _set_response_parameters(
    target: MutableMapping[str, service_pb2.InferParameter], values: Mapping[str, Any]
) -> None:
    for key, value in values.items():
        try:
            to_infer_parameter(value, target[key])
        except InferenceServerException:
            raise GrpcCodecError(
                "UNSUPPORTED",
                f"response parameter '{key}' has unsupported type "
                f"'{type(value).__name__}'; expected bool, int, float or str",
            ) from None


def encode_infer_response_parts(
    response: ResponseLike,
    *,
    shm_outputs: Mapping[str, SharedMemoryRef] | None = None,
    final: bool | None = None,
) -> tuple[service_pb2.ModelInferResponse, list[Buffer]]:
    """Encode a response with its raw output contents kept out of the message.

    Parameters
    ----------
    response : ResponseLike
        The core response (model name and version, id, outputs, parameters).
    shm_outputs : mapping of str to SharedMemoryRef, optional
        Outputs already written to shared memory: they get an empty raw entry (and, as in
        Triton, no parameters).
    final : bool, optional
        When given, sets the ``triton_final_response`` response parameter (stream).

    Returns
    -------
    tuple of (ModelInferResponse, list of bytes-like)
        The message and one raw entry per output (index-aligned, empty ones included).
        Send them with :func:`serialize_infer_response`.

    Raises
    ------
    GrpcCodecError
        ``UNSUPPORTED`` for a response parameter of an unsupported type.
    InferenceServerException
        For an output whose data do not match its datatype.
    """
    message = service_pb2.ModelInferResponse(
        model_name=response.model_name, model_version=response.model_version, id=response.id
    )
    _set_response_parameters(message.parameters, response.parameters)
    if final is not None:
        message.parameters[FINAL_RESPONSE_PARAM].bool_param = final
    raw: list[Buffer] = []
    shm = shm_outputs or {}
    for tensor in response.outputs:
        output = message.outputs.add(name=tensor.name, datatype=tensor.datatype)
        output.shape.extend(int(d) for d in tensor.shape)
        if tensor.name in shm:
            raw.append(b"")  # Triton sends no data and no parameters for it
        else:
            raw.append(tensor_to_buffer(tensor.datatype, tensor.data))
    return message, raw


def encode_infer_response(
    response: ResponseLike,
    *,
    shm_outputs: Mapping[str, SharedMemoryRef] | None = None,
    final: bool | None = None,
) -> service_pb2.ModelInferResponse:
    """Encode a complete ``ModelInferResponse`` (raw contents inside the message).

    Same parameters and errors as :func:`encode_infer_response_parts`.

    Returns
    -------
    ModelInferResponse
        With one ``raw_output_contents`` entry per output.
    """
    message, raw = encode_infer_response_parts(response, shm_outputs=shm_outputs, final=final)
    message.raw_output_contents.extend(b if isinstance(b, bytes) else bytes(b) for b in raw)
    return message


def encode_stream_response_parts(
    response: ResponseLike,
    *,
    final: bool,
    shm_outputs: Mapping[str, SharedMemoryRef] | None = None,
) -> tuple[service_pb2.ModelStreamInferResponse, list[Buffer]]:
    """Encode a successful stream response (``triton_final_response`` set to ``final``).

    Parameters
    ----------
    response : ResponseLike
        The core response.
    final : bool
        Whether it is the last response of its request.
    shm_outputs : mapping of str to SharedMemoryRef, optional
        As for :func:`encode_infer_response_parts`.

    Returns
    -------
    tuple of (ModelStreamInferResponse, list of bytes-like)
        The message and the raw output contents of its ``infer_response``; send them with
        :func:`serialize_stream_response`.
    """
    inner, raw = encode_infer_response_parts(response, shm_outputs=shm_outputs, final=final)
    message = service_pb2.ModelStreamInferResponse()
    message.infer_response.CopyFrom(inner)
    return message, raw


def encode_stream_error(
    error_message: str,
    *,
    request_id: str,
    model_name: str = "",
    model_version: str = "",
    final: bool | None = None,
) -> service_pb2.ModelStreamInferResponse:
    """Encode a failed request on the stream (protocol section 5.3).

    Parameters
    ----------
    error_message : str
        The error text.
    request_id : str
        The request's id.
    model_name, model_version : str, optional
        Set for errors the model returned (copied from the request); empty for requests
        refused before execution.
    final : bool, optional
        For model errors, whether the request is complete (``triton_final_response``).

    Returns
    -------
    ModelStreamInferResponse
        ``error_message`` plus an ``infer_response`` carrying the id (and the rest above).
    """
    message = service_pb2.ModelStreamInferResponse(error_message=error_message)
    inner = message.infer_response
    inner.id = request_id
    inner.model_name = model_name
    inner.model_version = model_version
    if final is not None:
        inner.parameters[FINAL_RESPONSE_PARAM].bool_param = final
    return message


def encode_empty_final_response(
    *, request_id: str, model_name: str, model_version: str
) -> service_pb2.ModelStreamInferResponse:
    """Encode the empty final response of a decoupled request (protocol section 5.2).

    Parameters
    ----------
    request_id : str
        The request's id.
    model_name, model_version : str
        Copied from the request (so the version is often "").

    Returns
    -------
    ModelStreamInferResponse
        No outputs, ``triton_final_response = true``.
    """
    message = service_pb2.ModelStreamInferResponse()
    inner = message.infer_response
    inner.id = request_id
    inner.model_name = model_name
    inner.model_version = model_version
    inner.parameters[FINAL_RESPONSE_PARAM].bool_param = True
    return message
