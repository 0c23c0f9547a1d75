"""Triton's load-time checks of a completed model configuration.

:func:`validate_config` runs them all; Triton applies them in two halves at different moments
and reports them differently: :func:`validate_config_on_poll` (a model that fails cannot be
loaded at all) and :func:`validate_config_on_load`.  The rules and error texts follow Triton
2.51 as observed on a real server; where this module knowingly differs, the function says so.
"""

from __future__ import annotations

import math

from tritonclient._proto import model_config_pb2 as mc

from .config import ENSEMBLE_PLATFORM, WILDCARD_DIM
from .ensemble_checks import check_dataflow
from .errors import ServerError

__all__ = ["validate_config", "validate_config_on_load", "validate_config_on_poll"]

_TENSORRT_PLATFORM = "tensorrt_plan"
_Group = mc.ModelInstanceGroup
_Control = mc.ModelSequenceBatching.Control
_CORRID_TYPES = frozenset(
    {mc.TYPE_UINT64, mc.TYPE_INT64, mc.TYPE_UINT32, mc.TYPE_INT32, mc.TYPE_STRING}
)


def validate_config(config: mc.ModelConfig) -> None:
    """Run every load-time check on a completed configuration.

    Equivalent to :func:`validate_config_on_poll` followed by
    :func:`validate_config_on_load`.

    Parameters
    ----------
    config : ModelConfig
        A configuration completed by :func:`complete_config`.

    Raises
    ------
    ServerError
        ``INVALID_ARG`` (``INTERNAL`` for an unresolved ``KIND_AUTO`` group) whose message
        names the model and the problem, in Triton's words where Triton has them.
    """
    validate_config_on_poll(config)
    validate_config_on_load(config)


def validate_config_on_poll(config: mc.ModelConfig) -> None:
    """The checks Triton applies when it polls the repository (``ValidateModelConfig``).

    A failure here means the model cannot be loaded at all; Triton 2.51 answers a load
    request for it with ``failed to load 'm', failed to poll from model repository`` and
    lists the model in the index without a state.

    Checks: name set; backend set (or ensemble platform); ``max_batch_size >= 0``; version
    policy set; dynamic batching preferred sizes in ``[1, max_batch_size]``, priority levels
    and ``preserve_ordering`` constraints; sequence batching control tensors (START, END,
    READY need exactly one two-entry ``*_false_true``; CORRID needs a data type among
    UINT64, INT64, UINT32, INT32, STRING; one tensor per kind, no tensor for two kinds),
    oldest-strategy preferred sizes, direct-strategy slot utilization; ensembles (no instance
    groups, optimization or warm-up, and the dataflow of their steps, see
    :func:`~mock_server.core.ensemble_checks.check_dataflow`);
    response cache restrictions; model metrics.

    Parameters
    ----------
    config : ModelConfig
        A completed configuration.

    Raises
    ------
    ServerError
        ``INVALID_ARG`` naming the model and the problem.
    """
    name = config.name
    if not name:
        raise ServerError.invalid_arg("model configuration must specify 'name'")
    if not config.backend:
        if config.platform != ENSEMBLE_PLATFORM:
            raise ServerError.invalid_arg(
                f"unexpected platform type '{config.platform}' for {name}"
            )
    elif config.platform == ENSEMBLE_PLATFORM:
        raise ServerError.invalid_arg(
            f"Ensemble model '{name}' must have platform type '{ENSEMBLE_PLATFORM}' and empty "
            "backend type"
        )
    if config.max_batch_size < 0:
        raise ServerError.invalid_arg(f"'max_batch_size' must be non-negative value for {name}")
    if not config.HasField("version_policy"):
        raise ServerError.invalid_arg(f"must specify 'version policy' for {name}")
    if config.HasField("dynamic_batching"):
        _check_dynamic_batching(config)
    if config.HasField("sequence_batching"):
        _check_sequence_batching(config)
    if config.HasField("ensemble_scheduling"):
        _check_ensemble(config)
    elif config.platform == ENSEMBLE_PLATFORM:
        raise ServerError.invalid_arg(
            f"ensemble scheduling must be set for ensemble {name} whose platform is "
            f"{ENSEMBLE_PLATFORM}"
        )
    if config.model_transaction_policy.decoupled and config.response_cache.enable:
        raise ServerError.invalid_arg(
            f"Response Cache does not currently support model {name} with 'decoupled' "
            "transaction policy. Please disable the response cache."
        )
    if config.HasField("model_metrics"):
        _check_model_metrics(config)


def validate_config_on_load(config: mc.ModelConfig) -> None:
    """The checks Triton applies when it loads a version (``ValidateModelIOConfig``, instances).

    A failure here makes the version ``UNAVAILABLE`` with the error as its reason (Triton
    2.51: ``load failed for model 'm': version 1 is at UNAVAILABLE state: Invalid argument:
    ...``).

    Checks: every input/output has a name, a data type and dims, each dim ``>= 1`` or ``-1``
    (empty ``dims`` are an error even for batching models, as in Triton: a per-item scalar is
    written ``dims: [1]``, optionally with ``reshape: { shape: [] }``); ``reshape`` agrees with
    ``dims``; NHWC/NCHW inputs have 3 dims; shape tensors and non-linear IO only for TensorRT;
    input names are unique and output names are unique (stricter than Triton 2.51, which
    accepts duplicates; this server indexes tensors by name); batch inputs/outputs refer to
    known tensors; sequence states name their tensors and have a data type and valid dims;
    instance groups exist, are resolved (no ``KIND_AUTO``), list GPUs only for ``KIND_GPU``
    and profiles only for TensorRT.

    Parameters
    ----------
    config : ModelConfig
        A completed configuration.

    Raises
    ------
    ServerError
        ``INVALID_ARG`` (``INTERNAL`` for an unresolved ``KIND_AUTO`` group) naming the model
        and the problem.
    """
    name = config.name
    seen: set[str] = set()
    for model_input in config.input:
        _check_io(model_input, "input", config)
        _check_unique(model_input.name, seen, "input", name)
    seen = set()
    for model_output in config.output:
        _check_io(model_output, "output", config)
        _check_unique(model_output.name, seen, "output", name)
    _check_batch_io(config)
    if config.HasField("sequence_batching"):
        _check_sequence_states(config)
    _check_instance_groups(config)


def _check_unique(tensor: str, seen: set[str], kind: str, model: str) -> None:
    if tensor in seen:
        raise ServerError.invalid_arg(
            f"model {kind} '{tensor}' is specified more than once for {model}"
        )
    seen.add(tensor)


def _check_io(io: mc.ModelInput | mc.ModelOutput, kind: str, config: mc.ModelConfig) -> None:
    model = config.name
    if not io.name:
        raise ServerError.invalid_arg(f"model {kind} must specify 'name' for {model}")
    prefix = f"model {kind} '{io.name}' "
    if io.data_type == mc.TYPE_INVALID:
        raise ServerError.invalid_arg(f"{prefix}must specify 'data_type' for {model}")
    if io.data_type not in mc.DataType.values():
        raise ServerError.invalid_arg(f"{prefix}has unknown data type {io.data_type} for {model}")
    _check_dims(list(io.dims), f"{prefix}", model)
    if io.HasField("reshape"):
        _check_reshape(list(io.dims), list(io.reshape.shape), prefix, config)
    nhwc = (mc.ModelInput.FORMAT_NHWC, mc.ModelInput.FORMAT_NCHW)
    if isinstance(io, mc.ModelInput) and io.format in nhwc and len(io.dims) != 3:
        raise ServerError.invalid_arg(f"model input NHWC/NCHW require 3 dims for {model}")
    if io.is_shape_tensor and config.platform != _TENSORRT_PLATFORM:
        raise ServerError.invalid_arg(
            f"shape tensors are only supported for TensorRT platform for {model}"
        )
    if io.is_non_linear_format_io:
        if config.platform != _TENSORRT_PLATFORM:
            raise ServerError.invalid_arg(
                f"Non-linear IO format is only supported for the TensorRT platform for {model}"
            )
        if len(io.dims) != 3:
            raise ServerError.invalid_arg(
                f"Non-linear IO format {kind} requires 3 dims for {model}"
            )


def _check_dims(dims: list[int], prefix: str, model: str) -> None:
    if not dims:
        raise ServerError.invalid_arg(f"{prefix}must specify 'dims' for {model}")
    for dim in dims:
        if dim < 1 and dim != WILDCARD_DIM:
            raise ServerError.invalid_arg(
                f"{prefix}dimension must be integer >= 1, or {WILDCARD_DIM} to indicate a "
                f"variable-size dimension for {model}"
            )


def _element_count(shape: list[int]) -> int:
    """0 for an empty shape, -1 when any dimension is variable, else the product."""
    if not shape:
        return 0
    if WILDCARD_DIM in shape:
        return WILDCARD_DIM
    return math.prod(shape)


def _wildcard_segments(shape: list[int]) -> list[int]:
    """Products of the runs of fixed dimensions between variable-size dimensions."""
    segments: list[int] = []
    current = 1
    for dim in shape:
        if dim == WILDCARD_DIM:
            segments.append(current)
            current = 1
        else:
            current *= dim
    segments.append(current)
    return segments


def _check_reshape(dims: list[int], shape: list[int], prefix: str, config: mc.ModelConfig) -> None:
    model = config.name
    if not shape and config.max_batch_size == 0:
        raise ServerError.invalid_arg(
            f"{prefix}cannot have empty reshape for non-batching model as scalar tensors are "
            f"not supported for {model}"
        )
    for dim in shape:
        if dim < 1 and dim != WILDCARD_DIM:
            raise ServerError.invalid_arg(
                f"{prefix}reshape dimensions must be integer >= 1, or {WILDCARD_DIM} to "
                f"indicate a variable-size dimension for {model}"
            )
    dims_count, shape_count = _element_count(dims), _element_count(shape)
    if dims_count != shape_count and not (shape_count == 0 and dims_count == 1):
        raise ServerError.invalid_arg(
            f"{prefix}has different size for dims and reshape for {model}"
        )
    if dims_count == WILDCARD_DIM:
        dims_segments, shape_segments = _wildcard_segments(dims), _wildcard_segments(shape)
        if len(dims_segments) != len(shape_segments):
            raise ServerError.invalid_arg(
                f"{prefix}has different number of variable-size dimensions for dims and "
                f"reshape for {model}"
            )
        if dims_segments != shape_segments:
            raise ServerError.invalid_arg(
                f"{prefix}has different size for dims and reshape for {model}"
            )


def _check_batch_kind(
    item: mc.BatchInput | mc.BatchOutput,
    message: type[mc.BatchInput] | type[mc.BatchOutput],
    what: str,
    model: str,
) -> None:
    """A batch input or output (``what``; ``message`` its type, ``mc.BatchInput`` or
    ``mc.BatchOutput``) of a known kind, with one source input, as Triton checks them."""
    if item.kind not in message.Kind.values():
        raise ServerError.invalid_arg(f"unknown {what} kind '{item.kind}' for {model}")
    kind = message.Kind.Name(item.kind)
    if len(item.source_input) != 1:
        raise ServerError.invalid_arg(
            f"{what} kind '{kind}' expects 1 source input, got {len(item.source_input)} for {model}"
        )


def _check_sources(item: mc.BatchInput | mc.BatchOutput, inputs: set[str], model: str) -> None:
    for source in item.source_input:
        if source not in inputs:
            raise ServerError.invalid_arg(f"unknown source input name '{source}' for {model}")


def _check_batch_io(config: mc.ModelConfig) -> None:
    model = config.name
    inputs = {i.name for i in config.input}
    outputs = {o.name for o in config.output}
    for batch_input in config.batch_input:
        _check_batch_kind(batch_input, mc.BatchInput, "batch input", model)
        if batch_input.data_type not in (mc.TYPE_INT32, mc.TYPE_FP32):
            raise ServerError.invalid_arg(
                f"batch input data type must be TYPE_INT32 or TYPE_FP32 for {model}"
            )
        _check_sources(batch_input, inputs, model)
    for batch_output in config.batch_output:
        _check_batch_kind(batch_output, mc.BatchOutput, "batch output", model)
        _check_sources(batch_output, inputs, model)
        targets: set[str] = set()
        for target in batch_output.target_name:
            if target not in outputs:
                raise ServerError.invalid_arg(f"unknown target output name '{target}' for {model}")
            if target in targets:
                raise ServerError.invalid_arg(
                    f"target output name '{target}' can only be specified once for {model}"
                )
            targets.add(target)


def _check_dynamic_batching(config: mc.ModelConfig) -> None:
    model = config.name
    batching = config.dynamic_batching
    for size in batching.preferred_batch_size:
        if size <= 0:
            raise ServerError.invalid_arg(
                f"dynamic batching preferred size must be positive for {model}"
            )
        if size > config.max_batch_size:
            raise ServerError.invalid_arg(
                f"dynamic batching preferred size must be <= max batch size for {model}"
            )
    levels = batching.priority_levels
    if levels != 0:
        if batching.default_priority_level == 0 or batching.default_priority_level > levels:
            raise ServerError.invalid_arg(
                f"default priority level must be in range [1, {levels}] for {model}"
            )
        for level in batching.priority_queue_policy:
            if level == 0 or level > levels:
                raise ServerError.invalid_arg(
                    f"priority queue policy must have priority level in range [1, {levels}] "
                    f"for {model}"
                )
    if batching.preserve_ordering:
        if levels > 1:
            raise ServerError.invalid_arg(
                f"Only one priority level is allowed when 'preserve_ordering' is true for {model}"
            )
        policies = [batching.default_queue_policy, *batching.priority_queue_policy.values()]
        for policy in policies:
            if policy.default_timeout_microseconds != 0 and (
                policy.timeout_action == mc.ModelQueuePolicy.DELAY
            ):
                raise ServerError.invalid_arg(
                    f"Queue policy can not have DELAY as timeout action when "
                    f"'preserve_ordering' is true for {model}"
                )


def _check_sequence_batching(config: mc.ModelConfig) -> None:
    model = config.name
    batching = config.sequence_batching
    if config.response_cache.enable:
        raise ServerError.invalid_arg(
            f"Response Cache does not currently support model {model} with sequence "
            "batching scheduler. Please disable the response cache."
        )
    seen: set[str] = set()
    for control_input in batching.control_input:
        if not control_input.name:
            raise ServerError.invalid_arg(
                f"sequence batching control tensor must have a name for {model}"
            )
        if control_input.name in seen:
            raise ServerError.invalid_arg(
                f"sequence batching control tensor '{control_input.name}' is specified for "
                f"multiple control kinds for {model}"
            )
        seen.add(control_input.name)
    for kind in (
        _Control.CONTROL_SEQUENCE_START,
        _Control.CONTROL_SEQUENCE_END,
        _Control.CONTROL_SEQUENCE_READY,
        _Control.CONTROL_SEQUENCE_CORRID,
    ):
        kind_name = _Control.Kind.Name(kind)
        controls = [
            control
            for control_input in batching.control_input
            for control in control_input.control
            if control.kind == kind
        ]
        if len(controls) > 1:
            raise ServerError.invalid_arg(
                f"sequence batching specifies multiple {kind_name} tensors for {model}"
            )
        for control in controls:
            lists = {
                "int32_false_true": len(control.int32_false_true),
                "fp32_false_true": len(control.fp32_false_true),
                "bool_false_true": len(control.bool_false_true),
            }
            given = [key for key, size in lists.items() if size]
            if kind == _Control.CONTROL_SEQUENCE_CORRID:
                if given:
                    raise ServerError.invalid_arg(
                        "sequence batching must not specify either 'int32_false_true', "
                        f"'fp32_false_true' or 'bool_false_true' for {kind_name} for {model}"
                    )
                if control.data_type not in _CORRID_TYPES:
                    raise ServerError.invalid_arg(
                        f"unexpected data type for control {kind_name} for {model}. Allowed "
                        "data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and "
                        "TYPE_STRING"
                    )
                continue
            if not given:
                raise ServerError.invalid_arg(
                    "sequence batching must specify either 'int32_false_true', "
                    f"'fp32_false_true' or 'bool_false_true' for {kind_name} for {model}"
                )
            if len(given) > 1:
                raise ServerError.invalid_arg(
                    "sequence batching specifies more than one from 'int32_false_true', "
                    f"'fp32_false_true' and 'bool_false_true' for {kind_name} for {model}"
                )
            if lists[given[0]] != 2:
                raise ServerError.invalid_arg(
                    f"sequence batching control '{given[0]}' must have exactly 2 entries for "
                    f"{kind_name} for {model}"
                )
    if batching.HasField("oldest"):
        for size in batching.oldest.preferred_batch_size:
            if size <= 0:
                raise ServerError.invalid_arg(
                    f"sequence batching preferred batch size must be positive for {model}"
                )
            if size > config.max_batch_size:
                raise ServerError.invalid_arg(
                    f"sequence batching preferred batch size must be <= max batch size for {model}"
                )
    if batching.HasField("direct"):
        utilization = batching.direct.minimum_slot_utilization
        if utilization < 0.0 or utilization > 1.0:
            raise ServerError.invalid_arg(
                f"sequence batching minimum slot utilization must be in range (0.0, 1.0] for "
                f"{model}"
            )


def _check_sequence_states(config: mc.ModelConfig) -> None:
    model = config.name
    for state in config.sequence_batching.state:
        if not state.input_name or not state.output_name:
            raise ServerError.invalid_arg(
                f"sequence batching state must specify 'input_name' and 'output_name' for {model}"
            )
        prefix = f"sequence batching state '{state.input_name}' "
        if state.data_type == mc.TYPE_INVALID or state.data_type not in mc.DataType.values():
            raise ServerError.invalid_arg(f"{prefix}must specify a valid 'data_type' for {model}")
        _check_dims(list(state.dims), prefix, model)
        for initial in state.initial_state:
            if initial.data_type != state.data_type:
                raise ServerError.invalid_arg(
                    f"{prefix}initial state '{initial.name}' must have the state's data type "
                    f"for {model}"
                )
            if initial.WhichOneof("state_data") is None:
                raise ServerError.invalid_arg(
                    f"{prefix}initial state '{initial.name}' must specify 'zero_data' or "
                    f"'data_file' for {model}"
                )


def _check_ensemble(config: mc.ModelConfig) -> None:
    model = config.name
    if config.platform != ENSEMBLE_PLATFORM:
        raise ServerError.invalid_arg(
            f"ensemble scheduling cannot be set for model '{model}' whose platform is not "
            f"{ENSEMBLE_PLATFORM}"
        )
    if config.instance_group:
        raise ServerError.invalid_arg(
            f"instance group should not be specified for ensemble '{model}'"
        )
    if config.HasField("optimization"):
        raise ServerError.invalid_arg(
            f"optimization should not be specified for ensemble '{model}'"
        )
    if config.model_warmup:
        raise ServerError.invalid_arg(f"model_warmup can not be specified for ensemble '{model}'")
    if not config.ensemble_scheduling.step:
        raise ServerError.invalid_arg(f"must specify 'step' for ensemble '{model}'")
    check_dataflow(config)


def _check_model_metrics(config: mc.ModelConfig) -> None:
    for control in config.model_metrics.metric_control:
        if not control.HasField("metric_identifier"):
            raise ServerError.invalid_arg("metric control must specify 'metric_identifier'")
        if not control.metric_identifier.family:
            raise ServerError.invalid_arg("metric identifier must specify non-empty 'family'")
        if not control.HasField("histogram_options"):
            raise ServerError.invalid_arg("metric control must specify 'histogram_options'")
        if not control.histogram_options.buckets:
            raise ServerError.invalid_arg("histogram options must specify non-empty 'buckets'")


def _check_instance_groups(config: mc.ModelConfig) -> None:
    model = config.name
    if config.HasField("ensemble_scheduling"):
        return
    if not config.instance_group:
        raise ServerError.invalid_arg(f"must specify one or more 'instance group's for {model}")
    for group in config.instance_group:
        prefix = f"instance group {group.name} of model {model}"
        if group.kind == _Group.KIND_MODEL:
            if group.gpus:
                raise ServerError.invalid_arg(
                    f"{prefix} has kind KIND_MODEL but specifies one or more GPUs"
                )
        elif group.kind == _Group.KIND_GPU:
            if not group.gpus:
                raise ServerError.invalid_arg(f"{prefix} has kind KIND_GPU but specifies no GPUs")
        elif group.kind == _Group.KIND_CPU:
            if group.gpus:
                raise ServerError.invalid_arg(
                    f"{prefix} has kind KIND_CPU but specifies one or more GPUs"
                )
        else:
            raise ServerError.internal(f"{prefix} has unexpected kind KIND_AUTO")
        if group.count < 1:
            raise ServerError.invalid_arg(f"{prefix} must have a count of at least 1")
        if group.profile and config.platform != _TENSORRT_PLATFORM:
            raise ServerError.invalid_arg(
                f"{prefix} and platform {config.platform} specifies profile field which is only "
                "supported for TensorRT models"
            )
