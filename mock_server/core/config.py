"""Model configuration: parsing, Triton's completion rules, load-time validation, JSON form.

A model's ``config.pbtxt`` is read with protobuf's text-format parser
(:func:`parse_config_text`); an override configuration sent with a load request is JSON
(:func:`config_from_json`).  Before a model is served its configuration is *completed* the
way Triton completes it (:func:`complete_config`) and *validated* with Triton's load-time
checks (:func:`validate_config`, or the two halves :func:`validate_config_on_poll` and
:func:`validate_config_on_load`, which Triton applies at different moments and reports
differently).  :func:`config_to_json` renders the JSON served by the configuration
endpoints (protocol reference §3.6).

The rules and error texts follow Triton 2.51 as observed on a real server (CPU-only,
Python-backend models); where this module knowingly differs, the function says so.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import json_format, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from tritonclient._proto import model_config_pb2 as mc
from tritonclient.utils import config_to_triton_dtype

from .errors import ServerError

__all__ = [
    "DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS",
    "ENSEMBLE_PLATFORM",
    "PYTHON_BACKEND",
    "complete_config",
    "config_from_json",
    "config_to_json",
    "datatype_of",
    "io_by_name",
    "is_decoupled",
    "model_metadata",
    "parse_config_text",
    "validate_config",
    "validate_config_on_load",
    "validate_config_on_poll",
]

log = logging.getLogger("mock_server.core.config")

#: Triton's default ``sequence_batching.max_sequence_idle_microseconds`` (one second).
DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS = 1_000_000
#: The platform string of ensemble models.
ENSEMBLE_PLATFORM = "ensemble"
#: The backend this server runs.
PYTHON_BACKEND = "python"

_WILDCARD_DIM = -1
_TENSORRT_PLATFORM = "tensorrt_plan"

# Backend / platform / default file name relations that Triton auto-fills.
_PLATFORM_TO_BACKEND = {
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "tensorflow_savedmodel": "tensorflow",
    "tensorflow_graphdef": "tensorflow",
}
_BACKEND_TO_PLATFORM = {
    "tensorrt": "tensorrt_plan",
    "onnxruntime": "onnxruntime_onnx",
    "pytorch": "pytorch_libtorch",
}
_FILENAME_TO_BACKEND = {
    "model.py": "python",
    "model.onnx": "onnxruntime",
    "model.plan": "tensorrt",
    "model.pt": "pytorch",
    "model.xml": "openvino",
}
_PLATFORM_DEFAULT_FILENAME = {
    "tensorflow_savedmodel": "model.savedmodel",
    "tensorflow_graphdef": "model.graphdef",
}
_BACKEND_DEFAULT_FILENAME = {
    "python": "model.py",
    "onnxruntime": "model.onnx",
    "tensorrt": "model.plan",
    "pytorch": "model.pt",
    "openvino": "model.xml",
}
# Backends whose CPU instance groups default to two instances (Triton's SetDefaultInstanceCount).
_TWO_CPU_INSTANCE_BACKENDS = frozenset({"tensorflow", "onnxruntime"})

_Group = mc.ModelInstanceGroup
_Control = mc.ModelSequenceBatching.Control
_CORRID_TYPES = frozenset(
    {mc.TYPE_UINT64, mc.TYPE_INT64, mc.TYPE_UINT32, mc.TYPE_INT32, mc.TYPE_STRING}
)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def parse_config_text(text: str | bytes, source: str) -> mc.ModelConfig:
    """Parse a ``config.pbtxt`` (protobuf text format) into a ``ModelConfig``.

    Parameters
    ----------
    text : str or bytes
        The file's content (bytes are decoded as UTF-8).
    source : str
        What the text came from (normally the file's path); named in error messages.

    Returns
    -------
    ModelConfig
        The configuration exactly as written (nothing completed).

    Raises
    ------
    ServerError
        ``INVALID_ARG`` naming ``source`` and the parser's ``line:column`` message when the
        text is not a valid ``inference.ModelConfig``.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ServerError.invalid_arg(
                f"failed to read text proto from {source}: not valid UTF-8 "
                f"(byte offset {exc.start})"
            ) from exc
    config = mc.ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        raise ServerError.invalid_arg(
            f"failed to read text proto from {source}: {_parse_error_text(exc)}"
        ) from exc
    return config


def _parse_error_text(exc: text_format.ParseError) -> str:
    """``line:column: message`` for a text-format parse error, across protobuf versions."""
    message = str(exc)
    line, column = exc.GetLine(), exc.GetColumn()
    if line is None:
        return message
    prefix = f"{line}:{column} : " if column is not None else f"{line} : "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    where = f"{line}:{column}" if column is not None else f"{line}"
    return f"{where}: {message}"


def config_from_json(obj: Mapping[str, Any] | str | bytes, source: str) -> mc.ModelConfig:
    """Parse a ``ModelConfig`` from its JSON form (an override ``config`` of a load request).

    Accepts what Triton's parser accepts: proto field names or their lowerCamel JSON names,
    enum names in any letter case, 64-bit integers as numbers or strings.  Unknown fields are
    rejected.

    Parameters
    ----------
    obj : dict or str or bytes
        The JSON document, decoded or not.
    source : str
        What the JSON came from (e.g. ``"the load request of model 'm'"``); named in errors.

    Returns
    -------
    ModelConfig
        The configuration exactly as given (nothing completed).

    Raises
    ------
    ServerError
        ``INVALID_ARG`` naming ``source`` and what was wrong (bad JSON, unknown field with its
        path, wrong value type, unknown enum name).
    """
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as exc:
            raise _json_error(source, f"{exc.msg} at line {exc.lineno} column {exc.colno}") from exc
        except UnicodeDecodeError as exc:
            raise _json_error(source, "the document is not valid UTF-8") from exc
    if not isinstance(obj, Mapping):
        raise _json_error(source, f"expected a JSON object, got {type(obj).__name__}")
    normalized = _normalize_json_message(mc.ModelConfig.DESCRIPTOR, obj, source, "")
    config = mc.ModelConfig()
    try:
        json_format.ParseDict(normalized, config)
    except (json_format.ParseError, TypeError, ValueError, AttributeError) as exc:
        detail = str(exc).split("\n", 1)[0].strip()
        raise _json_error(source, detail) from exc
    return config


def _json_error(source: str, detail: str) -> ServerError:
    return ServerError.invalid_arg(f"invalid JSON model configuration from {source}: {detail}")


def _normalize_json_message(
    descriptor: Any, obj: Mapping[str, Any], source: str, path: str
) -> dict[str, Any]:
    """Check field names and canonicalize enum names (case-insensitive) for ``ParseDict``."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        field = descriptor.fields_by_name.get(key) if isinstance(key, str) else None
        if field is None and isinstance(key, str):
            field = next((f for f in descriptor.fields if f.json_name == key), None)
        if field is None:
            raise _json_error(source, f"{path}{key}: Cannot find field.")
        out[key] = _normalize_json_field(field, value, source, f"{path}{key}")
    return out


def _normalize_json_field(field: Any, value: Any, source: str, path: str) -> Any:
    if _is_map(field) and isinstance(value, Mapping):
        value_field = field.message_type.fields_by_name["value"]
        return {
            k: _normalize_json_single(value_field, v, source, f"{path}[{k}]")
            for k, v in value.items()
        }
    if _is_repeated(field) and isinstance(value, list):
        return [
            _normalize_json_single(field, item, source, f"{path}[{index}]")
            for index, item in enumerate(value)
        ]
    return _normalize_json_single(field, value, source, path)


def _normalize_json_single(field: Any, value: Any, source: str, path: str) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE and isinstance(value, Mapping):
        return _normalize_json_message(field.message_type, value, source, f"{path}.")
    if (
        field.type == FieldDescriptor.TYPE_ENUM
        and isinstance(value, str)
        and not (
            value.lstrip("-").isdigit()  # a number in a string: ParseDict takes it as is
        )
    ):
        upper = value.upper()
        for name in field.enum_type.values_by_name:
            if name.upper() == upper:
                return name
        raise _json_error(
            source, f"{path}: invalid value '{value}' for enum {field.enum_type.full_name}"
        )
    return value


# ---------------------------------------------------------------------------------------------
# Completion
# ---------------------------------------------------------------------------------------------


def complete_config(
    config: mc.ModelConfig,
    model_name: str,
    *,
    has_gpu: bool = False,
    gpu_ids: Sequence[int] | None = None,
    strict_gpu: bool = False,
) -> mc.ModelConfig:
    """Return a new, completed copy of ``config``, as Triton completes it before serving.

    What gets filled (matching Triton 2.51's observed completed configs):

    * ``name`` from ``model_name`` when empty;
    * ``backend``: from ``platform`` (``onnxruntime_onnx`` -> ``onnxruntime`` ...) or
      ``default_model_filename``; ``"python"`` when neither ``backend`` nor ``platform`` is
      set (Triton detects ``model.py`` in the version folder; this server only runs Python
      models);
    * ``default_model_filename`` for the backend (``"model.py"`` for Python);
    * ``version_policy``: ``latest { num_versions: 1 }``;
    * ``dynamic_batching.preferred_batch_size`` and ``sequence_batching.oldest
      .preferred_batch_size``: ``[max_batch_size]`` when empty and ``max_batch_size > 0``;
    * ``sequence_batching.max_sequence_idle_microseconds``: 1 000 000 when 0;
    * ``optimization.input_pinned_memory`` / ``output_pinned_memory``: ``enable: true`` when
      not given;
    * ``instance_group``: when there is none, one group *named after the model* (Triton 2.51
      names this implicit group ``"<model>"``, not ``"<model>_0"``) of kind ``KIND_AUTO``;
      unnamed groups are named ``"<model>_<index>"``; ``count < 1`` becomes 1 (2 for CPU
      groups of the TensorFlow and ONNX Runtime backends); ``KIND_AUTO`` resolves to
      ``KIND_GPU`` when a GPU is available (and every GPU the group lists exists), otherwise
      to ``KIND_CPU``; ``KIND_GPU`` groups without ``gpus`` get every available GPU.

    Ensembles (``ensemble_scheduling`` set) get no instance groups and no optimization block.

    Parameters
    ----------
    config : ModelConfig
        The configuration as written (left untouched).
    model_name : str
        The model's name (its folder name or the name a load request used).
    has_gpu : bool
        Whether GPUs are available to model instances.
    gpu_ids : sequence of int, optional
        The available GPU ids when ``has_gpu`` (default ``[0]``).
    strict_gpu : bool
        What to do with a ``KIND_GPU`` group when no GPU is available.  ``False`` (default):
        run it on the CPU instead (the group becomes ``KIND_CPU``, a warning is logged), so
        repositories written for GPU servers load on CPU-only machines.  ``True``: fail as
        Triton does (``... has kind KIND_GPU but no GPUs are available``).

    Returns
    -------
    ModelConfig
        The completed configuration.

    Raises
    ------
    ServerError
        ``INVALID_ARG`` when the configuration names another model (Triton: ``unexpected
        directory name 'd' for model 'm', directory name must equal model name``), when a
        group lists a GPU that does not exist, or (``strict_gpu``) when a ``KIND_GPU`` group
        cannot be placed.
    """
    out = mc.ModelConfig()
    out.CopyFrom(config)
    if not out.name:
        out.name = model_name
    elif out.name != model_name:
        raise ServerError.invalid_arg(
            f"unexpected directory name '{model_name}' for model '{out.name}', directory name "
            "must equal model name"
        )
    _complete_backend_fields(out)

    if not out.HasField("version_policy") or out.version_policy.WhichOneof("policy_choice") is None:
        out.version_policy.latest.num_versions = 1

    if out.HasField("dynamic_batching"):
        preferred = out.dynamic_batching.preferred_batch_size
        if not preferred and out.max_batch_size > 0:
            preferred.append(out.max_batch_size)

    if out.HasField("sequence_batching"):
        sequence = out.sequence_batching
        if sequence.max_sequence_idle_microseconds == 0:
            sequence.max_sequence_idle_microseconds = DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS
        if sequence.HasField("oldest"):
            preferred = sequence.oldest.preferred_batch_size
            if not preferred and out.max_batch_size > 0:
                preferred.append(out.max_batch_size)

    if not out.HasField("ensemble_scheduling"):
        optimization = out.optimization
        if not optimization.HasField("input_pinned_memory"):
            optimization.input_pinned_memory.enable = True
        if not optimization.HasField("output_pinned_memory"):
            optimization.output_pinned_memory.enable = True
        gpus = list(gpu_ids) if gpu_ids is not None else [0]
        _complete_instance_groups(out, gpus if has_gpu else [], strict_gpu)
    return out


def _complete_backend_fields(config: mc.ModelConfig) -> None:
    if config.HasField("ensemble_scheduling") or config.platform == ENSEMBLE_PLATFORM:
        return
    if not config.backend:
        if config.platform:
            config.backend = _PLATFORM_TO_BACKEND.get(config.platform, "")
        elif config.default_model_filename in _FILENAME_TO_BACKEND:
            config.backend = _FILENAME_TO_BACKEND[config.default_model_filename]
        else:
            config.backend = PYTHON_BACKEND
    if not config.platform and config.backend in _BACKEND_TO_PLATFORM:
        config.platform = _BACKEND_TO_PLATFORM[config.backend]
    if not config.default_model_filename:
        filename = _PLATFORM_DEFAULT_FILENAME.get(config.platform) or (
            _BACKEND_DEFAULT_FILENAME.get(config.backend, "")
        )
        if filename:
            config.default_model_filename = filename


def _complete_instance_groups(config: mc.ModelConfig, gpus: list[int], strict: bool) -> None:
    available = set(gpus)
    if not config.instance_group:
        config.instance_group.add(name=config.name)  # kind KIND_AUTO, resolved below
    for index, group in enumerate(config.instance_group):
        if not group.name:
            group.name = f"{config.name}_{index}"
        if group.kind == _Group.KIND_AUTO:
            if available and all(gpu in available for gpu in group.gpus):
                group.kind = _Group.KIND_GPU
            else:
                group.kind = _Group.KIND_CPU
                if not strict:
                    del group.gpus[:]
        if group.kind == _Group.KIND_GPU:
            if not available:
                if strict:
                    raise ServerError.invalid_arg(
                        f"instance group {group.name} of model {config.name} has kind KIND_GPU "
                        "but no GPUs are available"
                    )
                log.warning(
                    "instance group %s of model %s has kind KIND_GPU but no GPUs are "
                    "available; running it on the CPU",
                    group.name,
                    config.name,
                )
                group.kind = _Group.KIND_CPU
                del group.gpus[:]
            elif not group.gpus:
                group.gpus.extend(sorted(available))
            else:
                for gpu in group.gpus:
                    if gpu not in available:
                        listed = ", ".join(str(g) for g in sorted(available))
                        raise ServerError.invalid_arg(
                            f"instance group {group.name} of model {config.name} specifies "
                            f"invalid or unsupported gpu id {gpu}. Available GPUs are: {listed}"
                        )
        if group.count < 1:
            two = group.kind == _Group.KIND_CPU and config.backend in _TWO_CPU_INSTANCE_BACKENDS
            group.count = 2 if two else 1


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


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
    oldest-strategy preferred sizes, direct-strategy slot utilization; ensemble basics;
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
        if dim < 1 and dim != _WILDCARD_DIM:
            raise ServerError.invalid_arg(
                f"{prefix}dimension must be integer >= 1, or {_WILDCARD_DIM} to indicate a "
                f"variable-size dimension for {model}"
            )


def _element_count(shape: list[int]) -> int:
    """0 for an empty shape, -1 when any dimension is variable, else the product."""
    if not shape:
        return 0
    if _WILDCARD_DIM in shape:
        return _WILDCARD_DIM
    return math.prod(shape)


def _wildcard_segments(shape: list[int]) -> list[int]:
    """Products of the runs of fixed dimensions between variable-size dimensions."""
    segments: list[int] = []
    current = 1
    for dim in shape:
        if dim == _WILDCARD_DIM:
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
        if dim < 1 and dim != _WILDCARD_DIM:
            raise ServerError.invalid_arg(
                f"{prefix}reshape dimensions must be integer >= 1, or {_WILDCARD_DIM} to "
                f"indicate a variable-size dimension for {model}"
            )
    dims_count, shape_count = _element_count(dims), _element_count(shape)
    if dims_count != shape_count and not (shape_count == 0 and dims_count == 1):
        raise ServerError.invalid_arg(
            f"{prefix}has different size for dims and reshape for {model}"
        )
    if dims_count == _WILDCARD_DIM:
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


def _check_batch_io(config: mc.ModelConfig) -> None:
    model = config.name
    inputs = {i.name for i in config.input}
    outputs = {o.name for o in config.output}
    for batch_input in config.batch_input:
        if batch_input.kind not in mc.BatchInput.Kind.values():
            raise ServerError.invalid_arg(
                f"unknown batch input kind '{batch_input.kind}' for {model}"
            )
        kind = mc.BatchInput.Kind.Name(batch_input.kind)
        if len(batch_input.source_input) != 1:
            raise ServerError.invalid_arg(
                f"batch input kind '{kind}' expects 1 source input, got "
                f"{len(batch_input.source_input)} for {model}"
            )
        if batch_input.data_type not in (mc.TYPE_INT32, mc.TYPE_FP32):
            raise ServerError.invalid_arg(
                f"batch input data type must be TYPE_INT32 or TYPE_FP32 for {model}"
            )
        for source in batch_input.source_input:
            if source not in inputs:
                raise ServerError.invalid_arg(f"unknown source input name '{source}' for {model}")
    for batch_output in config.batch_output:
        if batch_output.kind not in mc.BatchOutput.Kind.values():
            raise ServerError.invalid_arg(
                f"unknown batch output kind '{batch_output.kind}' for {model}"
            )
        kind = mc.BatchOutput.Kind.Name(batch_output.kind)
        if len(batch_output.source_input) != 1:
            raise ServerError.invalid_arg(
                f"batch output kind '{kind}' expects 1 source input, got "
                f"{len(batch_output.source_input)} for {model}"
            )
        for source in batch_output.source_input:
            if source not in inputs:
                raise ServerError.invalid_arg(f"unknown source input name '{source}' for {model}")
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
    steps = config.ensemble_scheduling.step
    if not steps:
        raise ServerError.invalid_arg(f"must specify 'step' for ensemble '{model}'")
    for index, step in enumerate(steps):
        for field_name, present in (
            ("model_name", bool(step.model_name)),
            ("input_map", bool(step.input_map)),
            ("output_map", bool(step.output_map)),
        ):
            if not present:
                raise ServerError.invalid_arg(
                    f"must specify '{field_name}' in step {index} of ensemble '{model}'"
                )


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


# ---------------------------------------------------------------------------------------------
# JSON form
# ---------------------------------------------------------------------------------------------


def config_to_json(config: Message) -> dict[str, Any]:
    """The JSON form of a configuration, as Triton's configuration endpoints serve it (§3.6).

    Proto field names; enums as names (unknown numbers as numbers); 64-bit integers as JSON
    numbers; every scalar, repeated and map field of a present message printed even at its
    default; unset sub-messages and unset oneof members omitted.  Keys follow the ``.proto``
    declaration order (as Triton's output does); map entries are sorted by key (Triton's order
    is unspecified).  Floats print as their shortest round-tripping decimal, integral floats
    as integers (Triton prints ``[0, 1.5]``).

    Two Triton 2.51 quirks are *not* reproduced: it prints
    ``sequence_batching.state.initial_state.dims`` as strings and puts a set oneof member of
    ``InitialState`` after ``name``; this function prints numbers in declaration order.

    Parameters
    ----------
    config : ModelConfig
        The configuration (normally completed); any message of model_config.proto works.

    Returns
    -------
    dict
        A JSON-serializable dict (``json.dumps`` it for the HTTP body).
    """
    return _message_to_json(config)


def _message_to_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    fields: Any = message.DESCRIPTOR.fields
    for field in fields:
        value = getattr(message, field.name)
        if _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {
                _map_key_json(key): _value_to_json(value_field, value[key]) for key in sorted(value)
            }
        elif _is_repeated(field):
            out[field.name] = [_value_to_json(field, item) for item in value]
        elif field.containing_oneof is not None or field.type == FieldDescriptor.TYPE_MESSAGE:
            if message.HasField(field.name):
                out[field.name] = _value_to_json(field, value)
        else:
            out[field.name] = _value_to_json(field, value)
    return out


def _value_to_json(field: Any, value: Any) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        return _message_to_json(value)
    if kind == FieldDescriptor.TYPE_ENUM:
        enum_value = field.enum_type.values_by_number.get(int(value))
        return enum_value.name if enum_value is not None else int(value)
    if kind == FieldDescriptor.TYPE_FLOAT:
        return _float_to_json(float(value), single=True)
    if kind == FieldDescriptor.TYPE_DOUBLE:
        return _float_to_json(float(value), single=False)
    if kind == FieldDescriptor.TYPE_BOOL:
        return bool(value)
    if kind == FieldDescriptor.TYPE_STRING:
        return str(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(bytes(value)).decode("ascii")
    return int(value)


def _map_key_json(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _float_to_json(value: float, *, single: bool) -> float | int | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    if single:
        packed = struct.pack("<f", value)
        for precision in range(6, 10):
            candidate = float(f"{value:.{precision}g}")
            if struct.pack("<f", candidate) == packed:
                return candidate
    return value


def _is_repeated(field: Any) -> bool:
    """Whether ``field`` is repeated (``is_repeated`` on protobuf >= 5.29, ``label`` before)."""
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag() if callable(flag) else flag)
    return bool(getattr(field, "label", None) == FieldDescriptor.LABEL_REPEATED)


def _is_map(field: Any) -> bool:
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and _is_repeated(field)
        and bool(field.message_type.GetOptions().map_entry)
    )


# ---------------------------------------------------------------------------------------------
# Helpers for the other pieces
# ---------------------------------------------------------------------------------------------


def io_by_name(
    config: mc.ModelConfig,
) -> tuple[dict[str, mc.ModelInput], dict[str, mc.ModelOutput]]:
    """The configuration's inputs and outputs, keyed by name.

    Parameters
    ----------
    config : ModelConfig
        The model configuration.

    Returns
    -------
    tuple of (dict, dict)
        ``{name: ModelInput}`` and ``{name: ModelOutput}``, in configuration order.
    """
    inputs = {model_input.name: model_input for model_input in config.input}
    outputs = {model_output.name: model_output for model_output in config.output}
    return inputs, outputs


def is_decoupled(config: mc.ModelConfig) -> bool:
    """Whether the model uses the decoupled transaction policy.

    Parameters
    ----------
    config : ModelConfig
        The model configuration.

    Returns
    -------
    bool
        ``model_transaction_policy.decoupled``.
    """
    return bool(config.model_transaction_policy.decoupled)


def datatype_of(config_dtype: int) -> str:
    """The protocol datatype string of a ``DataType`` enum value (``TYPE_STRING`` -> ``BYTES``).

    Parameters
    ----------
    config_dtype : int
        An ``inference.DataType`` value (e.g. ``model_config_pb2.TYPE_FP32``).

    Returns
    -------
    str
        The protocol datatype (``"FP32"``, ``"BYTES"``, ...).

    Raises
    ------
    ServerError
        ``INVALID_ARG`` for ``TYPE_INVALID`` and unknown values.
    """
    try:
        name = mc.DataType.Name(config_dtype)
    except ValueError:
        name = ""
    datatype = config_to_triton_dtype(name) if name else None
    if datatype is None:
        raise ServerError.invalid_arg(
            f"unsupported model configuration data type {name or config_dtype}"
        )
    return datatype


def model_metadata(config: mc.ModelConfig, versions: Sequence[int]) -> dict[str, Any]:
    """The model metadata response body (§3.5) for a completed configuration.

    Parameters
    ----------
    config : ModelConfig
        The completed configuration.
    versions : sequence of int
        The versions to report (the model's available versions), listed in ascending order.

    Returns
    -------
    dict
        ``{"name", "versions", "platform", "inputs", "outputs"}``: versions as strings;
        ``platform`` is the configured platform or, when empty, the backend name (``"python"``
        for Python models, as Triton reports); each tensor is ``{"name", "datatype",
        "shape"}`` with a leading ``-1`` batch dimension when ``max_batch_size > 0``.
    """
    batch = [_WILDCARD_DIM] if config.max_batch_size > 0 else []

    def tensor(io: mc.ModelInput | mc.ModelOutput) -> dict[str, Any]:
        return {
            "name": io.name,
            "datatype": datatype_of(io.data_type),
            "shape": batch + [int(dim) for dim in io.dims],
        }

    return {
        "name": config.name,
        "versions": [str(version) for version in sorted(versions)],
        "platform": config.platform or config.backend,
        "inputs": [tensor(model_input) for model_input in config.input],
        "outputs": [tensor(model_output) for model_output in config.output],
    }
