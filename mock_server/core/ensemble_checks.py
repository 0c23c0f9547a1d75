"""Triton's checks of an ensemble's configuration, in its two halves.

An ensemble (``platform: "ensemble"``) is a graph: ``ensemble_scheduling.step`` entries each
run one composing model, reading *ensemble tensors* through ``input_map`` (composing model
input -> ensemble tensor) and writing them through ``output_map`` (composing model output ->
ensemble tensor); the ensemble's own inputs are where data enters and its outputs where it
leaves.  Triton checks the graph twice, and this module does the same:

* :func:`check_dataflow`, when the repository is polled (Triton's
  ``ValidateEnsembleSchedulingConfig``): every step names a model and maps something, no tensor
  is written twice, every ensemble input is read, every output is written, and every other
  tensor is both written and read.  A failure makes the model impossible to load at all
  (``failed to load 'e', failed to poll from model repository``; the reason is only logged).
* :func:`check_composition`, when the ensemble loads, once its composing models are loaded
  (Triton's ``ValidateEnsembleConfig``): mapped names exist, every required input of a
  composing model is fed, data types and shapes agree along every tensor, batch sizes fit, and
  no step mixes responses of different decoupled models.  It also decides whether the ensemble
  is decoupled: it is when any step downstream of its inputs is.  A failure fails the load
  with ``load failed for model 'e': in ensemble e, ...``.

The messages are Triton 2.51's, observed on a real server.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tritonclient._proto import model_config_pb2 as mc

from .errors import ServerError

__all__ = [
    "EnsembleStep",
    "check_composition",
    "check_dataflow",
    "composing_models",
    "dims_match",
    "ensemble_steps",
]

_WILDCARD = -1


@dataclass(frozen=True)
class EnsembleStep:
    """One step of an ensemble, as configured.

    Attributes
    ----------
    index : int
        Position in ``ensemble_scheduling.step``.
    model_name : str
        The composing model.
    model_version : int
        The composing model's version; -1 is its latest ready version.  Note that an omitted
        ``model_version`` is 0, a version Triton then requires to be loaded.
    input_map : dict
        Composing model input name -> ensemble tensor name.
    output_map : dict
        Composing model output name -> ensemble tensor name.
    """

    index: int
    model_name: str
    model_version: int
    input_map: Mapping[str, str]
    output_map: Mapping[str, str]


def ensemble_steps(config: mc.ModelConfig) -> tuple[EnsembleStep, ...]:
    """The steps of an ensemble configuration, in configuration order.

    Parameters
    ----------
    config : ModelConfig
        An ensemble configuration (``ensemble_scheduling`` set).

    Returns
    -------
    tuple of EnsembleStep
        Empty when the configuration has no ``ensemble_scheduling``.
    """
    return tuple(
        EnsembleStep(
            index,
            step.model_name,
            int(step.model_version),
            dict(step.input_map),
            dict(step.output_map),
        )
        for index, step in enumerate(config.ensemble_scheduling.step)
    )


def composing_models(config: mc.ModelConfig) -> dict[str, tuple[int, ...]]:
    """The models an ensemble runs, with the versions its steps require.

    Parameters
    ----------
    config : ModelConfig
        Any configuration; only ensembles have composing models.

    Returns
    -------
    dict
        ``{model name: versions}`` in the order the steps first name each model; a version
        of -1 means "the latest ready one".
    """
    found: dict[str, list[int]] = {}
    for step in config.ensemble_scheduling.step:
        versions = found.setdefault(step.model_name, [])
        if step.model_version not in versions:
            versions.append(int(step.model_version))
    return {name: tuple(versions) for name, versions in found.items()}


def dims_match(lhs: Sequence[int], rhs: Sequence[int]) -> bool:
    """Triton's ``CompareDimsWithWildcard``: same rank, each pair equal or either one -1."""
    return len(lhs) == len(rhs) and all(
        a in (b, _WILDCARD) or b == _WILDCARD for a, b in zip(lhs, rhs, strict=True)
    )


def _dims_text(dims: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


# -- poll time: the dataflow of the steps ---------------------------------------------------------


@dataclass
class _FlowNode:
    """An ensemble tensor in the dataflow check: written by a step or not, and its edges."""

    written: bool
    ready: bool = False
    upstream: list[_FlowNode] = field(default_factory=list)
    downstream: list[_FlowNode] = field(default_factory=list)


def check_dataflow(config: mc.ModelConfig) -> None:
    """Check the steps' dataflow of an ensemble configuration (Triton's poll-time check).

    Parameters
    ----------
    config : ModelConfig
        A configuration with ``ensemble_scheduling`` set.

    Raises
    ------
    ServerError
        ``INVALID_ARG``: a step without ``model_name``, ``input_map`` or ``output_map``; a
        tensor in two output maps; an ensemble input no step reads; an ensemble output no step
        writes (or that cannot be computed from the inputs); any other tensor that is not both
        computable and read.
    """
    name = config.name
    nodes: dict[str, _FlowNode] = {}
    for step in ensemble_steps(config):
        for field_name, present in (
            ("model_name", bool(step.model_name)),
            ("input_map", bool(step.input_map)),
            ("output_map", bool(step.output_map)),
        ):
            if not present:
                raise ServerError.invalid_arg(
                    f"must specify '{field_name}' in step {step.index} of ensemble '{name}'"
                )
        written: list[_FlowNode] = []
        for tensor in step.output_map.values():
            node = nodes.get(tensor)
            if node is None:
                node = nodes[tensor] = _FlowNode(written=True)
            elif node.written:
                raise ServerError.invalid_arg(
                    f"ensemble tensor '{tensor}' can appear in an output map only once for "
                    f"ensemble '{name}' step {step.index}"
                )
            else:
                node.written = True
            written.append(node)
        for tensor in step.input_map.values():
            source = nodes.setdefault(tensor, _FlowNode(written=False))
            for target in written:
                target.upstream.append(source)
                source.downstream.append(target)

    pending: collections.deque[_FlowNode] = collections.deque()
    for model_input in config.input:
        node = nodes.get(model_input.name)
        if node is None:
            raise ServerError.invalid_arg(
                f"ensemble input '{model_input.name}' for ensemble {name}' is not used"
            )
        node.ready = True
        pending.append(node)
    while pending:
        current = pending.popleft()
        for target in current.downstream:
            if not target.ready and all(source.ready for source in target.upstream):
                target.ready = True
                pending.append(target)

    outputs = set()
    for model_output in config.output:
        node = nodes.get(model_output.name)
        if node is None:
            raise ServerError.invalid_arg(
                f"ensemble output '{model_output.name}' for ensemble {name}' is not used"
            )
        if not node.ready:
            raise ServerError.invalid_arg(
                f"output '{model_output.name}' for ensemble '{name}' is not written"
            )
        outputs.add(model_output.name)
    for tensor, node in sorted(nodes.items()):
        if tensor not in outputs and (not node.ready or not node.downstream):
            raise ServerError.invalid_arg(
                f"ensemble tensor '{tensor}' is unused in ensemble '{name}'"
            )


# -- load time: the steps against the composing models --------------------------------------------


class _Origin:
    """The steps' outputs share one of these, so that they take one decoupled label together
    (Triton's "sibling node")."""

    def __init__(self) -> None:
        self.visited = False
        self.label = 0


@dataclass
class _TensorNode:
    """An ensemble tensor as the composing models see it: its type and shape, the model that
    first declared it, and whether a decoupled model writes it."""

    model: str
    data_type: int
    dims: tuple[int, ...]
    full_dims: tuple[int, ...]
    decoupled: bool = False
    label: int = 0
    visited: bool = False
    origin: _Origin | None = None
    upstream: list[_TensorNode] = field(default_factory=list)
    downstream: list[_TensorNode] = field(default_factory=list)


def _tensor_node(model: str, batching: bool, data_type: int, dims: Sequence[int]) -> _TensorNode:
    shape = tuple(int(d) for d in dims)
    return _TensorNode(model, int(data_type), shape, ((_WILDCARD,) if batching else ()) + shape)


def _type_name(data_type: int) -> str:
    try:
        return mc.DataType.Name(data_type)
    except ValueError:
        return str(data_type)


def _check_consistent(known: _TensorNode, new: _TensorNode, prefix: str) -> None:
    if known.data_type != new.data_type:
        raise ServerError.invalid_arg(
            f"{prefix}inconsistent data type: {_type_name(known.data_type)} is inferred from "
            f"model {known.model} while {_type_name(new.data_type)} is inferred from model "
            f"{new.model}"
        )
    # A tensor may pass between a batching and a non-batching model when the full shapes agree.
    if not dims_match(known.dims, new.dims) and not dims_match(known.full_dims, new.full_dims):
        raise ServerError.invalid_arg(
            f"{prefix}inconsistent shape: {_dims_text(known.full_dims)} is inferred from model "
            f"{known.model} while {_dims_text(new.full_dims)} is inferred from model {new.model}"
        )


def _map_step(
    ensemble: str,
    step: EnsembleStep,
    model: mc.ModelConfig,
    tensors: dict[str, _TensorNode],
) -> None:
    """Check one step's maps against its model and link its tensors (``ValidateTensorMapping``)."""
    batching = model.max_batch_size > 0
    prefix = f"in ensemble {ensemble}, ensemble tensor "
    inputs = {i.name for i in model.input}
    for input_name, tensor in step.input_map.items():
        if input_name not in inputs:
            raise ServerError.invalid_arg(
                f"in ensemble {ensemble}, ensemble tensor {tensor} is mapping to non-existing "
                f"input {input_name} in model {step.model_name}"
            )
    for model_input in model.input:
        tensor_name = step.input_map.get(model_input.name)
        if tensor_name is None:
            if model_input.optional:
                continue
            raise ServerError.invalid_arg(
                f"in ensemble {ensemble}, input {model_input.name} in model {step.model_name} "
                "is not mapped to any ensemble tensors"
            )
        node = _tensor_node(step.model_name, batching, model_input.data_type, model_input.dims)
        known = tensors.get(tensor_name)
        if known is None:
            tensors[tensor_name] = node
        else:
            _check_consistent(known, node, f"{prefix}{tensor_name}: ")

    outputs = {o.name: o for o in model.output}
    for output_name, tensor in step.output_map.items():
        if output_name not in outputs:
            raise ServerError.invalid_arg(
                f"in ensemble {ensemble}, ensemble tensor {tensor} is mapped from non-existing "
                f"output {output_name} in model {step.model_name}"
            )
    origin = _Origin()
    decoupled = bool(model.model_transaction_policy.decoupled)
    for model_output, tensor_name in step.output_map.items():
        declared = outputs[model_output]
        node = _tensor_node(step.model_name, batching, declared.data_type, declared.dims)
        known = tensors.get(tensor_name)
        if known is None:
            known = tensors[tensor_name] = node
        else:
            _check_consistent(known, node, f"{prefix}{tensor_name}: ")
        known.origin = origin
        known.decoupled = decoupled
        for source_name in step.input_map.values():
            source = tensors[source_name]
            known.upstream.append(source)
            source.downstream.append(known)


def check_composition(config: mc.ModelConfig, composing: Mapping[str, mc.ModelConfig]) -> bool:
    """Check an ensemble against its (loaded) composing models and tell whether it is decoupled.

    Parameters
    ----------
    config : ModelConfig
        The ensemble's completed configuration; it passed :func:`check_dataflow`.
    composing : mapping of str to ModelConfig
        The completed configuration of each composing model, by name (the version a step
        runs is not distinguished: Triton checks against the latest).

    Returns
    -------
    bool
        Whether the ensemble is decoupled: some step that its data flows through is.

    Raises
    ------
    ServerError
        ``INVALID_ARG`` in Triton's words: a batch size the ensemble allows but a composing
        model does not; a mapped name the composing model does not have; a required input not
        mapped; a tensor whose data type or shape differs between the models that read and
        write it; a step fed by responses of two different decoupled models.
    """
    ensemble = config.name
    batching = config.max_batch_size > 0
    tensors: dict[str, _TensorNode] = {}
    for model_input in config.input:
        dims = model_input.reshape.shape if model_input.HasField("reshape") else model_input.dims
        tensors[model_input.name] = _tensor_node(ensemble, batching, model_input.data_type, dims)
    sink = _TensorNode(ensemble, 0, (), ())
    for model_output in config.output:
        dims = model_output.reshape.shape if model_output.HasField("reshape") else model_output.dims
        node = tensors.setdefault(
            model_output.name,
            _tensor_node(ensemble, batching, model_output.data_type, dims),
        )
        sink.upstream.append(node)
        node.downstream.append(sink)

    for step in ensemble_steps(config):
        model = composing[step.model_name]
        if 0 < model.max_batch_size < config.max_batch_size:
            raise ServerError.invalid_arg(
                f"ensemble {ensemble} allows maximum batch size {config.max_batch_size}, but it "
                f"contains model {step.model_name} which only allows maximum batch size to be "
                f"{model.max_batch_size}"
            )
        _map_step(ensemble, step, model, tensors)
    return _decoupled(ensemble, config, tensors)


def _decoupled(ensemble: str, config: mc.ModelConfig, tensors: dict[str, _TensorNode]) -> bool:
    """Label every tensor with the decoupled step it descends from; a step may not join two."""
    labels = 0
    pending: collections.deque[_TensorNode] = collections.deque()
    for model_input in config.input:
        node = tensors[model_input.name]
        node.visited = True
        pending.append(node)
    while pending:
        current = pending.popleft()
        for target in current.downstream:
            if target.visited or not all(source.visited for source in target.upstream):
                continue
            label = target.upstream[0].label
            if any(source.label != label for source in target.upstream):
                raise ServerError.invalid_arg(
                    f"in ensemble {ensemble}, step of model '{target.model}' receives inputs "
                    "originated from different decoupled models"
                )
            origin = target.origin
            if origin is not None and origin.visited:
                target.label = origin.label
            else:
                if target.decoupled:
                    labels += 1
                    target.label = labels
                else:
                    target.label = label
                if origin is not None:
                    origin.label = target.label
                    origin.visited = True
            target.visited = True
            pending.append(target)
    return labels != 0
