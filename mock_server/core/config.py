"""Model configuration: parsing ``config.pbtxt`` and Triton's completion rules.

A model's ``config.pbtxt`` is read with protobuf's text-format parser
(:func:`parse_config_text`).  Before a model is served its configuration is *completed* the
way Triton completes it (:func:`complete_config`), then checked by
:mod:`mock_server.core.config_checks`.  The JSON form (override configurations of load
requests, the backend's view, what the configuration endpoints serve) is
:mod:`mock_server.core.config_json`.

The rules and error texts follow Triton 2.51 as observed on a real server (CPU-only,
Python-backend models); where this module knowingly differs, the function says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from google.protobuf import text_format

from tritonclient._proto import model_config_pb2 as mc
from tritonclient.utils import config_to_triton_dtype

from .errors import ServerError

__all__ = [
    "DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS",
    "ENSEMBLE_PLATFORM",
    "PYTHON_BACKEND",
    "WILDCARD_DIM",
    "complete_config",
    "datatype_of",
    "io_by_name",
    "is_decoupled",
    "model_metadata",
    "parse_config_text",
]

log = logging.getLogger("mock_server.core.config")

#: Triton's default ``sequence_batching.max_sequence_idle_microseconds`` (one second).
DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS = 1_000_000
#: The platform string of ensemble models.
ENSEMBLE_PLATFORM = "ensemble"
#: The backend this server runs.
PYTHON_BACKEND = "python"

#: A dimension of any size.
WILDCARD_DIM = -1

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
    batch = [WILDCARD_DIM] if config.max_batch_size > 0 else []

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
