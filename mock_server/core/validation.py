"""Validation of inference requests against a model configuration.

:func:`validate_request` applies the checks that Triton's core applies before a request
reaches a model (``InferenceRequest::Normalize`` and the byte-size checks), plus the
checks its sequence batcher applies on enqueue, in the same order and with the same
messages where Triton has one (see ``docs/protocol.md`` section 10).  Every failure is a
:class:`~mock_server.core.errors.ServerError`, almost always of kind ``INVALID_ARG``.

Request-id prefix
    Triton prefixes the messages it builds with ``InferenceRequest::LogRequest()``,
    ``"[request id: <id>] "``, and uses ``<id_unknown>`` when the request has no id
    (observed: ``[request id: <id_unknown>] input byte size mismatch ...``).  The messages
    Triton builds without it are reproduced without it: unknown input/output names (they
    come from the model, not the request), the sequence-batcher messages and the
    frontend-level parameter messages.

Decisions where Triton is silent or undefined
    * Negative dimensions are rejected (2.51's gRPC path let them through); ``-1`` gets
      Triton's "All input dimensions should be specified" message.
    * Inputs are checked in the order Triton's ``std::unordered_map`` visits them
      (:mod:`._input_order`), so the input a message names is the one Triton names.
    * A batch dimension of 0 is sized as Triton sizes it (as if there were no batch
      dimension), which gives its "input byte size mismatch" message.
    * Inputs fed by the sequence batcher (``sequence_batching.control_input`` names and
      implicit ``state`` input names) are never required and may not be sent by clients
      (Triton reports them as unexpected inputs, since they are not in ``input``).
    * A string correlation id to a model whose CORRID control is numeric, or an integer
      id to one whose CORRID control is ``TYPE_STRING``, is rejected with current
      Triton's message (2.51 accepted it and fed garbage to the model).  Integer ids with
      a 32-bit CORRID control are accepted (the batcher truncates them, as Triton does).
    * ``priority`` above ``dynamic_batching.priority_levels`` falls back to the default
      level, as in Triton; pass ``strict_priority=True`` to reject it instead.
      :func:`effective_priority` gives the level a scheduler should use.
    * ``triton_enable_empty_final_response`` is allowed to remain in ``parameters`` (the
      request type has no field for it; only the gRPC stream frontend may accept it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tritonclient._proto.model_config_pb2 import DataType, ModelConfig, ModelSequenceBatching
from tritonclient.utils import (
    TRITON_RESERVED_REQUEST_PARAMS,
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
)
from tritonclient.utils._dtypes import DATATYPES

from ._input_order import triton_input_order
from .config import datatype_of
from .errors import ServerError
from .types import InferRequest, ParamValue, Tensor

__all__ = [
    "ALLOWED_TRITON_PARAMS",
    "HeaderForward",
    "RequestChecks",
    "batch_size_of",
    "compile_forward_pattern",
    "effective_priority",
    "forwarded_headers",
    "implicit_input_names",
    "log_request_prefix",
    "validate_request",
]

#: ``triton_``-prefixed request parameters that may reach the core (gRPC streaming only).
ALLOWED_TRITON_PARAMS: frozenset[str] = frozenset({"triton_enable_empty_final_response"})

#: The largest correlation id the protocol can carry (ids are uint64).
_MAX_CORRELATION_ID = 2**64 - 1

#: Appended by Triton to every shape-mismatch message.
_SHAPE_NOTE = (
    "NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension "
    "to be prepended to each input shape. If you want to specify the full shape including "
    "the batch dim in your input dims config, try setting max_batch_size to zero. See the "
    "model configuration docs for more info on max_batch_size."
)

_CORRID = ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID
_NUMERIC_CORRID_TYPES = frozenset(
    {DataType.TYPE_UINT64, DataType.TYPE_INT64, DataType.TYPE_UINT32, DataType.TYPE_INT32}
)


def log_request_prefix(request: InferRequest) -> str:
    """Return Triton's ``LogRequest()`` prefix for ``request``.

    Parameters
    ----------
    request : InferRequest
        The request.

    Returns
    -------
    str
        ``"[request id: <id>] "``, with ``<id_unknown>`` when the request has no id.
    """
    return f"[request id: {request.id or '<id_unknown>'}] "


def _dims_str(dims: Iterable[int]) -> str:
    """Format dims as Triton's ``DimsListToString`` does: ``[1,3]``."""
    return "[" + ",".join(str(d) for d in dims) + "]"


def _names_str(names: Sequence[str]) -> str:
    """Format a name list as Triton does in input-count messages: ``['A','B']``."""
    return "[" + ",".join(f"'{n}'" for n in names) + "]"


def _config_protocol_dtype(data_type: int) -> str:
    """Protocol datatype for a config ``DataType`` value; ``<invalid>`` if it has none."""
    try:
        return datatype_of(data_type)
    except ServerError:
        return "<invalid>"


def implicit_input_names(config: ModelConfig) -> frozenset[str]:
    """Names of the inputs the server feeds itself, never sent by clients.

    Parameters
    ----------
    config : ModelConfig
        The model configuration.

    Returns
    -------
    frozenset of str
        The sequence batcher's control-input names and implicit-state input names (empty
        for a model without ``sequence_batching``).
    """
    if not config.HasField("sequence_batching"):
        return frozenset()
    batching = config.sequence_batching
    names = {control.name for control in batching.control_input}
    names.update(state.input_name for state in batching.state)
    return frozenset(names)


def _corrid_data_type(config: ModelConfig) -> int | None:
    """The ``data_type`` of the model's CORRID control, or None when it has none."""
    for control_input in config.sequence_batching.control_input:
        for control in control_input.control:
            if control.kind == _CORRID:
                return int(control.data_type)
    return None


def _element_count(shape: Sequence[int]) -> int:
    """The product of ``shape``, checked as it goes: past the int64 range it stops
    multiplying (the partial product is already larger than any tensor)."""
    if 0 in shape:
        return 0
    count = 1
    for dim in shape:
        count *= int(dim)
        if not -(2**63) < count < 2**63:
            return count
    return count


@dataclass(frozen=True)
class _InputFacts:
    datatype: str  # protocol datatype, "<invalid>" when the config type has none
    dims: tuple[int, ...]
    is_shape_tensor: bool


class RequestChecks:
    """What :func:`validate_request` needs of one model configuration, derived once.

    Reading protobuf fields costs more than the checks themselves, so a model version builds
    one of these when it loads and validates every request with it.  The configuration must
    not change afterwards (loaded configurations never do).

    Parameters
    ----------
    config : ModelConfig
        The complete configuration of a model version.
    """

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.name = config.name
        self.max_batch_size = int(config.max_batch_size)
        implicit = implicit_input_names(config)
        self.inputs = {
            i.name: _InputFacts(
                _config_protocol_dtype(i.data_type),
                tuple(int(d) for d in i.dims),
                bool(i.is_shape_tensor),
            )
            for i in config.input
        }
        client_inputs = [i for i in config.input if i.name not in implicit]
        self.expected_inputs = len(client_inputs)
        self.required_inputs = tuple(i.name for i in client_inputs if not i.optional)
        self.client_input_names = frozenset(i.name for i in client_inputs)
        self.output_names = frozenset(o.name for o in config.output)
        self.shape_tensors = frozenset(i.name for i in config.input if i.is_shape_tensor)
        self.has_sequence_batching = config.HasField("sequence_batching")
        self.has_dynamic_batching = config.HasField("dynamic_batching")

    def batch_size_of(self, request: InferRequest) -> int:
        """:func:`batch_size_of` for this configuration."""
        if self.max_batch_size <= 0:
            return 1
        for tensor in request.inputs:
            if tensor.name not in self.shape_tensors and len(tensor.shape) > 0:
                return int(tensor.shape[0])
        return 1


def batch_size_of(request: InferRequest, config: ModelConfig) -> int:
    """Return the batch size of a (validated) request.

    Parameters
    ----------
    request : InferRequest
        The request; assumed to have passed :func:`validate_request`.
    config : ModelConfig
        The model configuration.

    Returns
    -------
    int
        1 for a model with ``max_batch_size == 0``; otherwise the first dimension shared
        by the request's inputs (shape tensors excluded), or 1 when no input carries one
        (e.g. every input is optional and absent).
    """
    return RequestChecks(config).batch_size_of(request)


def effective_priority(request: InferRequest, config: ModelConfig) -> int:
    """Return the priority level a scheduler should use for ``request``.

    Parameters
    ----------
    request : InferRequest
        The request.
    config : ModelConfig
        The model configuration.

    Returns
    -------
    int
        0 when the model has no priority levels (``dynamic_batching.priority_levels`` unset
        or 0).  Otherwise the request's level, or ``default_priority_level`` when the
        request gives 0 or a level above ``priority_levels`` (Triton's rule).
    """
    if not config.HasField("dynamic_batching"):
        return 0
    levels = int(config.dynamic_batching.priority_levels)
    if levels == 0:
        return 0
    if request.priority <= 0 or request.priority > levels:
        return int(config.dynamic_batching.default_priority_level)
    return request.priority


def compile_forward_pattern(pattern: str) -> re.Pattern[str]:
    """A header-forward pattern as ``tritonserver`` compiles it: an RE2 expression matched
    anywhere in the header's name (``PartialMatch``), case-insensitively unless the pattern
    says otherwise (Triton puts ``(?i)`` before it; RE2's ``(?-i)`` turns that off for the rest
    of its group, which Python's ``re`` writes as a scoped ``(?-i:...)``).

    Raises
    ------
    ValueError
        For a pattern that is not a valid expression.
    """
    try:
        return re.compile(_scoped_flags(pattern), re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"invalid header forward pattern {pattern!r}: {exc}") from None


_INLINE_FLAGS = re.compile(r"\(\?([imsU]*(?:-[imsU]*)?)\)")


def _scoped_flags(pattern: str) -> str:
    """RE2's flag settings ``(?flags)`` anywhere in a group, as Python's scoped groups: the
    rest of the enclosing group goes into ``(?flags:...)``."""
    out: list[str] = []
    closers: list[int] = [0]  # per open group: how many scoped groups to close at its end
    i = 0
    in_class = False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            match = _INLINE_FLAGS.match(pattern, i)
            if match:
                out.append(f"(?{match.group(1).replace('U', '')}:")
                closers[-1] += 1
                i = match.end()
                continue
            closers.append(0)
        elif char == ")" and len(closers) > 1:
            out.append(")" * closers.pop())
        elif char == "|":  # a flag setting reaches only to the end of its alternative
            out.append(")" * closers[-1])
            closers[-1] = 0
        out.append(char)
        i += 1
    out.append(")" * closers[0])
    return "".join(out)


@dataclass(frozen=True)
class HeaderForward:
    """What ``--http-header-forward-pattern`` / ``--grpc-header-forward-pattern`` forward.

    Attributes
    ----------
    pattern : re.Pattern
        The compiled pattern (:func:`compile_forward_pattern`).
    refuse_reserved : bool
        Whether a matching header named like a reserved parameter (Triton's
        ``kReservedParameterKeys``) or starting ``triton_`` is refused, as Triton 2.73 does;
        Triton 2.51 forwards it (the compatibility profile's ``refuse_reserved_headers``).
    """

    pattern: re.Pattern[str]
    refuse_reserved: bool = True


def forwarded_headers(
    forward: HeaderForward | None, headers: Iterable[tuple[str, Any]]
) -> dict[str, ParamValue]:
    """Request headers whose name matches the forward pattern, as request parameters.

    Triton's ``--http-header-forward-pattern`` / ``--grpc-header-forward-pattern``: a
    matching header (gRPC metadata with a text value) reaches the model as a string
    parameter.

    Parameters
    ----------
    forward : HeaderForward or None
        The forward pattern and its reserved-name rule (None: nothing is forwarded).
    headers : iterable of (str, value)
        The request's headers or metadata.

    Returns
    -------
    dict

    Raises
    ------
    ServerError
        ``INVALID_ARG`` when a matching name is reserved for Triton (and ``forward`` refuses
        reserved names).  Triton compares the name as it was received: ``Triton_x`` is not
        reserved.
    """
    if forward is None:
        return {}
    out: dict[str, ParamValue] = {}
    for key, value in headers:
        if not isinstance(value, str) or not forward.pattern.search(key):
            continue
        if forward.refuse_reserved and (
            key in TRITON_RESERVED_REQUEST_PARAMS
            or key.startswith(TRITON_RESERVED_REQUEST_PARAMS_PREFIX)
        ):
            raise _invalid(f"Header '{key}' is reserved for Triton usage and cannot be forwarded.")
        out[str(key)] = value
    return out


def _invalid(message: str) -> ServerError:
    return ServerError.invalid_arg(message)


#: Reserved names a real Triton server still delivers to the model as custom parameters.
PASSED_THROUGH_PARAMS: frozenset[str] = frozenset({"headers", "binary_data_output"})


def _check_parameters(request: InferRequest) -> None:
    reserved = set(TRITON_RESERVED_REQUEST_PARAMS) - PASSED_THROUGH_PARAMS
    for key in request.parameters:
        if key.startswith(TRITON_RESERVED_REQUEST_PARAMS_PREFIX):
            if key in ALLOWED_TRITON_PARAMS:
                continue
            raise _invalid(
                f"parameter keys starting with '{TRITON_RESERVED_REQUEST_PARAMS_PREFIX}' are "
                "reserved for Triton usage and should not be specified."
            )
        if key in reserved:
            raise _invalid(
                f"parameter '{key}' is reserved for Triton usage and should not be specified."
            )


def _check_duplicates(request: InferRequest, what: str, names: Iterable[str]) -> None:
    """Triton's "input 'X' already exists in request" (and, in 2.73, the same for outputs)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            prefix = log_request_prefix(request)
            raise _invalid(f"{prefix}{what} '{name}' already exists in request")
        seen.add(name)


def _in_triton_order(request: InferRequest) -> list[Tensor]:
    """The request's inputs in the order Triton visits them (see :mod:`._input_order`)."""
    if len(request.inputs) < 2:
        return list(request.inputs)
    by_name = {tensor.name: tensor for tensor in request.inputs}
    return [by_name[name] for name in triton_input_order([t.name for t in request.inputs])]


def _check_outputs(request: InferRequest, checks: RequestChecks) -> None:
    # Triton keeps requested outputs in a std::set: a repeated name counts once (where it is
    # not refused), and the names are checked in sorted order.
    for name in sorted({output.name for output in request.outputs}):
        if name not in checks.output_names:
            raise _invalid(f"unexpected inference output '{name}' for model '{checks.name}'")


def _unknown_input(tensor: Tensor, checks: RequestChecks) -> ServerError:
    return _invalid(f"unexpected inference input '{tensor.name}' for model '{checks.name}'")


def _check_input_count(request: InferRequest, checks: RequestChecks, ordered: list[Tensor]) -> None:
    """Triton's input-count check; its lists are written the way Triton writes them (the
    missing list of a request that misses nothing comes out as ``]``)."""
    count = len(request.inputs)
    required = len(checks.required_inputs)
    if required <= count <= checks.expected_inputs:
        return
    present = {tensor.name for tensor in request.inputs}
    missing = [name for name in checks.required_inputs if name not in present]
    missing_text = _names_str(missing) if missing else "]"
    if checks.expected_inputs == required:
        head = f"expected {checks.expected_inputs} inputs"
    else:
        head = f"expected number of inputs between {required} and {checks.expected_inputs}"
    raise _invalid(
        f"{log_request_prefix(request)}{head} but got {count} inputs for model "
        f"'{checks.name}'. Got input(s) {_names_str([t.name for t in ordered])}, but missing "
        f"required input(s) {missing_text}. Please provide all required input(s)."
    )


def _check_batch(request: InferRequest, checks: RequestChecks, ordered: list[Tensor]) -> int:
    """Triton's batch loop (batching models only); returns the batch size (0: none)."""
    if checks.max_batch_size <= 0:
        return 0
    name = checks.name
    batch_size = 0
    for tensor in ordered:
        if tensor.name not in checks.client_input_names:
            raise _unknown_input(tensor, checks)
        if tensor.name in checks.shape_tensors:
            continue
        if len(tensor.shape) == 0:
            raise _invalid(
                f"{log_request_prefix(request)}input '{tensor.name}' has no shape but model "
                f"requires batch dimension for '{name}'"
            )
        if batch_size == 0:
            batch_size = int(tensor.shape[0])
        elif tensor.shape[0] != batch_size:
            raise _invalid(
                f"{log_request_prefix(request)}input '{tensor.name}' batch size does not "
                f"match other inputs for '{name}'"
            )
    if batch_size > checks.max_batch_size:
        raise _invalid(
            f"{log_request_prefix(request)}inference request batch-size must be <= "
            f"{checks.max_batch_size} for '{name}'"
        )
    return batch_size


def _check_datatype_and_shape(
    request: InferRequest, checks: RequestChecks, ordered: list[Tensor], batch_size: int
) -> None:
    prefix = log_request_prefix(request)
    for tensor in ordered:
        if tensor.name not in checks.client_input_names:
            raise _unknown_input(tensor, checks)
        facts = checks.inputs[tensor.name]
        if tensor.datatype != facts.datatype:
            got_dtype = tensor.datatype if tensor.datatype in DATATYPES else "<invalid>"
            if got_dtype != facts.datatype:
                raise _invalid(
                    f"{prefix}inference input '{tensor.name}' data-type is '{got_dtype}', but "
                    f"model '{checks.name}' expects '{facts.datatype}'"
                )
        batched = checks.max_batch_size > 0 and not facts.is_shape_tensor
        dims = tuple(tensor.shape[1:]) if batched else tuple(tensor.shape)
        config_dims = facts.dims
        # Triton walks the dimensions in order (``InferenceRequest::Normalize``, core
        # src/infer_request.cc:1133-1157 at 2.73, the same at 2.51, as the differential
        # cases compat/http/edge-shape-* show): a wildcard is refused where it is met, a
        # dimension that differs from a fixed one stops the walk (the shape does not match);
        # the other negative ones that a configuration wildcard let through are looked at
        # after.
        matches = len(dims) == len(config_dims)
        if matches:
            for c, d in zip(config_dims, dims, strict=True):
                if d == -1:
                    raise _invalid(
                        f"{prefix}All input dimensions should be specified for input "
                        f"'{tensor.name}' for model '{checks.name}', got "
                        f"{_dims_str(tensor.shape)}"
                    )
                if c not in (-1, d):
                    matches = False
                    break
        if matches:
            for d in dims:
                if d < 0:
                    raise _invalid(
                        f"{prefix}invalid shape for input '{tensor.name}' for model "
                        f"'{checks.name}': dimensions must be non-negative, got "
                        f"{_dims_str(tensor.shape)}"
                    )
        if not matches:
            note = ""
            full_dims: tuple[int, ...] = config_dims
            if checks.max_batch_size > 0:
                full_dims = (-1, *config_dims)
                note = _SHAPE_NOTE
            raise _invalid(
                f"{prefix}unexpected shape for input '{tensor.name}' for model "
                f"'{checks.name}'. Expected {_dims_str(full_dims)}, got "
                f"{_dims_str(tensor.shape)}. {note}"
            )
        if any(d < 0 for d in tensor.shape):
            raise _invalid(
                f"{prefix}invalid shape for input '{tensor.name}' for model '{checks.name}': "
                f"dimensions must be non-negative, got {_dims_str(tensor.shape)}"
            )


def _check_data(
    request: InferRequest, checks: RequestChecks, ordered: list[Tensor], batch_size: int
) -> None:
    for tensor in ordered:
        shape: Sequence[int] = tensor.shape
        if (
            batch_size == 0
            and checks.max_batch_size > 0
            and tensor.name not in checks.shape_tensors
        ):
            # Triton sizes a batch of 0 as if the request had no batch dimension.
            shape = shape[1:]
        _check_tensor_data(tensor, checks.name, request, shape)


def _check_tensor_data(
    tensor: Tensor, model_name: str, request: InferRequest, shape: Sequence[int]
) -> None:
    info = DATATYPES[tensor.datatype]
    data = tensor.data
    expected_dtype = np.dtype(info.numpy_type)
    expected = _element_count(shape)
    got = int(data.size)
    if data.dtype == expected_dtype and got == expected:
        return  # the common case, checked cheaply
    prefix = log_request_prefix(request)
    if data.dtype.newbyteorder("=") != expected_dtype.newbyteorder("="):
        raise _invalid(
            f"{prefix}input '{tensor.name}' for model '{model_name}' holds data of numpy "
            f"dtype '{data.dtype}', which does not match its datatype '{tensor.datatype}' "
            f"(expected numpy dtype '{expected_dtype}')"
        )
    if info.byte_size is None:
        if got < expected:
            raise _invalid(
                f"{prefix}expected {expected} string elements for inference input "
                f"'{tensor.name}' for model '{model_name}', got {got}"
            )
        if got > expected:
            raise _invalid(
                f"{prefix}unexpected number of string elements {got} for inference input "
                f"'{tensor.name}' for model '{model_name}', expecting {expected}"
            )
        return
    if got != expected:
        raise _invalid(
            f"{prefix}input byte size mismatch for input '{tensor.name}' for model "
            f"'{model_name}'. Expected {expected * info.byte_size}, got {got * info.byte_size}"
        )


def _check_sequence(request: InferRequest, checks: RequestChecks) -> None:
    if not checks.has_sequence_batching:
        return
    config = checks.config
    name = checks.name
    if checks.batch_size_of(request) > 1:
        raise _invalid(
            f"inference request to model '{name}' must specify batch-size 1 due to "
            "requirements of sequence batcher"
        )
    corr_id = request.correlation_id
    if isinstance(corr_id, int) and not 0 <= corr_id <= _MAX_CORRELATION_ID:
        raise _invalid(
            f"{log_request_prefix(request)}invalid correlation ID {corr_id} for model "
            f"'{name}', expected an unsigned 64-bit integer or a string"
        )
    if corr_id in (0, ""):
        if config.sequence_batching.iterative_sequence:
            return  # Triton's iterative sequencer assigns an id itself.
        raise _invalid(
            f"inference request to model '{name}' must specify a non-zero or non-empty "
            "correlation ID"
        )
    control_type = _corrid_data_type(config)
    if control_type is None:
        return
    expected = _config_protocol_dtype(control_type)
    if isinstance(corr_id, str) and control_type != DataType.TYPE_STRING:
        got = "BYTES"
    elif isinstance(corr_id, int) and control_type not in _NUMERIC_CORRID_TYPES:
        got = "UINT64"
    else:
        return
    raise _invalid(
        f"{log_request_prefix(request)}sequence batching control 'CORRID' data-type is "
        f"'{got}', but model '{name}' expects '{expected}'"
    )


def _check_priority(request: InferRequest, config: ModelConfig, *, strict: bool) -> None:
    if request.priority < 0:
        raise _invalid("invalid value for 'priority', expected value >= 0.")
    if not strict or not config.HasField("dynamic_batching"):
        return
    levels = int(config.dynamic_batching.priority_levels)
    if levels > 0 and request.priority > levels:
        raise _invalid(
            f"{log_request_prefix(request)}inference request priority {request.priority} is "
            f"out of range for model '{config.name}', expected a level between 1 and "
            f"{levels} (0 selects the default)"
        )


def validate_request(
    request: InferRequest,
    config: ModelConfig | RequestChecks,
    *,
    version: int,
    strict_priority: bool = False,
    reserved_parameters: bool = True,
    duplicate_outputs: bool = True,
) -> None:
    """Check an inference request against the model's configuration.

    Checks, in order: reserved request parameters; duplicate input and output names;
    requested outputs exist; input count and names (optional and sequence-batcher-fed
    inputs need not be sent); no negative or ``-1`` dimensions; batch dimension (present,
    shared by all inputs, 1 .. ``max_batch_size``); per input, the datatype and the shape
    against ``dims`` (``-1`` wildcards, rank); per input, the numpy data (dtype consistent
    with the datatype, element count equal to the shape's); sequence rules (batch size 1,
    non-zero correlation id, correlation-id type against the CORRID control); priority.

    ``allow_ragged_batch`` does not change what a single request must satisfy (it only
    lets the batcher combine requests of different shapes), so it is not consulted.

    Parameters
    ----------
    request : InferRequest
        The request, as built by a frontend (reserved parameters already parsed out).
    config : ModelConfig or RequestChecks
        The complete configuration of the model version serving the request, or the
        :class:`RequestChecks` derived from it (what a loaded model version passes: faster).
    version : int
        The model version the request was resolved to.  A request naming a different
        explicit version (``model_version > 0``) is an internal routing error.
    strict_priority : bool, optional
        Reject a ``priority`` above ``dynamic_batching.priority_levels`` instead of
        letting it fall back to the default level (Triton's behaviour).  Default False.
    reserved_parameters : bool, optional
        Refuse custom parameters named like a reserved one or starting ``triton_`` (the
        compatibility profile's ``refuse_reserved_parameters``).  Default True.
    duplicate_outputs : bool, optional
        Refuse a request that names an output twice: "output 'X' already exists in request"
        (the profile's ``refuse_duplicate_outputs``); otherwise it counts once.  Default True.

    Raises
    ------
    ServerError
        ``INVALID_ARG`` with a Triton-like message for the first check that fails;
        ``INTERNAL`` when ``request.model_version`` contradicts ``version``.
    """
    checks = config if isinstance(config, RequestChecks) else RequestChecks(config)
    if request.model_version > 0 and request.model_version != version:
        raise ServerError.internal(
            f"request for model '{checks.name}' version {request.model_version} was routed "
            f"to version {version}"
        )
    if reserved_parameters and request.parameters:
        _check_parameters(request)
    _check_duplicates(request, "input", (tensor.name for tensor in request.inputs))
    if duplicate_outputs and len(request.outputs) > 1:
        _check_duplicates(request, "output", (output.name for output in request.outputs))
    _check_outputs(request, checks)
    ordered = _in_triton_order(request)
    _check_input_count(request, checks, ordered)
    batch_size = _check_batch(request, checks, ordered)
    _check_datatype_and_shape(request, checks, ordered, batch_size)
    _check_data(request, checks, ordered, batch_size)
    if checks.has_sequence_batching:
        _check_sequence(request, checks)
    if request.priority != 0:  # priority 0 always passes
        _check_priority(request, checks.config, strict=strict_priority)
