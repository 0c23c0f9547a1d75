"""``pb_utils.ModelConfig`` (``auto_complete_config``), the configuration helpers and the
conversions between Triton's datatype names and numbers and numpy.

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tritonclient.utils import (
    np_to_triton_dtype,
    triton_to_np_dtype,
)

from ._pb_types import _TRITON_TYPE_CODES, _TRITON_TYPE_NAMES, TRITON_STRING_TO_NUMPY


def get_input_config_by_name(model_config: Mapping[str, Any], name: str) -> Any:
    """Return the configuration dict of input ``name`` in ``model_config``, or None."""
    for entry in model_config.get("input", []):
        if entry.get("name") == name:
            return entry
    return None


def get_output_config_by_name(model_config: Mapping[str, Any], name: str) -> Any:
    """Return the configuration dict of output ``name`` in ``model_config``, or None."""
    for entry in model_config.get("output", []):
        if entry.get("name") == name:
            return entry
    return None


def using_decoupled_model_transaction_policy(model_config: Mapping[str, Any]) -> bool:
    """Whether ``model_config`` sets the decoupled transaction policy."""
    policy = model_config.get("model_transaction_policy") or {}
    return bool(policy.get("decoupled", False))


def triton_string_to_numpy(triton_type_string: str) -> Any:
    """Map a model-config datatype (``"TYPE_FP32"``) to its numpy type.

    Raises
    ------
    KeyError
        For an unknown name.
    """
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def triton_to_numpy_type(data_type: int) -> Any:
    """Map a ``TRITONSERVER_DataType`` number to its numpy type (None when unknown)."""
    name = _TRITON_TYPE_NAMES.get(int(data_type))
    return None if name is None else triton_to_np_dtype(name)


def numpy_to_triton_type(data_type: Any) -> int | None:
    """Map a numpy dtype or type to its ``TRITONSERVER_DataType`` number (None when none)."""
    name = np_to_triton_dtype(data_type)
    return None if name is None else _TRITON_TYPE_CODES[name]


def _dims(value: Any) -> list[int]:
    return [int(d) for d in value]


class ModelConfig:
    """The model configuration that ``auto_complete_config`` completes.

    Parameters
    ----------
    model_config : dict or str
        The configuration in Triton's JSON form (a dict or its JSON string).
    """

    _INPUT_PROPERTIES = ("name", "data_type", "dims", "optional")
    _OUTPUT_PROPERTIES = ("name", "data_type", "dims")

    def __init__(self, model_config: Mapping[str, Any] | str) -> None:
        config: dict[str, Any] = (
            json.loads(model_config) if isinstance(model_config, str) else dict(model_config)
        )
        config.setdefault("name", "")
        config.setdefault("max_batch_size", 0)
        config["input"] = list(config.get("input") or [])
        config["output"] = list(config.get("output") or [])
        self._model_config = config

    def as_dict(self) -> dict[str, Any]:
        """Return the configuration as a dict (treat it as read-only)."""
        return self._model_config

    def _name(self) -> str:
        return str(self._model_config.get("name", ""))

    def set_max_batch_size(self, max_batch_size: int) -> None:
        """Set ``max_batch_size``.

        Raises
        ------
        ValueError
            If the configuration already specifies a larger ``max_batch_size``.
        """
        current = int(self._model_config.get("max_batch_size", 0))
        if current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in "
                f"auto-complete-config function for model '{self._name()}' specified "
                f"max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = int(max_batch_size)

    def set_dynamic_batching(self) -> None:
        """Use the dynamic batcher (with default settings) unless it is already set.

        Raises
        ------
        ValueError
            If the configuration uses sequence batching or ensemble scheduling.
        """
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{other}', but "
                    f"auto-complete-config function for model '{self._name()}' tries to set "
                    "scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def set_model_transaction_policy(self, transaction_policy_dict: Mapping[str, Any]) -> None:
        """Set the model transaction policy (``{"decoupled": True}``).

        Raises
        ------
        ValueError
            For a property other than ``decoupled``, or when the configuration already sets
            another ``decoupled`` value.
        """
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = bool(transaction_policy_dict["decoupled"])
            if "decoupled" in policy and bool(policy["decoupled"]) != wanted:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model "
                    f"'{self._name()}', which is already set to '{policy['decoupled']}'."
                )
            policy["decoupled"] = wanted

    def add_input(self, input: Mapping[str, Any]) -> None:
        """Add an input (``name``, ``data_type``, ``dims``, optional ``optional``).

        Raises
        ------
        ValueError
            For another property, a missing one, or an input of that name that already exists
            with another ``data_type``, ``dims`` or ``optional``.
        """
        self._add("input", input, self._INPUT_PROPERTIES)

    def add_output(self, output: Mapping[str, Any]) -> None:
        """Add an output (``name``, ``data_type``, ``dims``).

        Raises
        ------
        ValueError
            For another property, a missing one, or an output of that name that already exists
            with another ``data_type`` or ``dims``.
        """
        self._add("output", output, self._OUTPUT_PROPERTIES)

    def _add(self, kind: str, tensor: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        model = self._name()
        if not isinstance(tensor, Mapping):
            raise ValueError(
                f"{kind} in auto-complete-config function for model '{model}' must be a dict"
            )
        label = f"{kind} '{tensor.get('name', '')}'"
        for key in tensor:
            if key not in allowed:
                listed = ", ".join(f"'{p}'" for p in allowed[:-1]) + f" and '{allowed[-1]}'"
                raise ValueError(
                    f"{label} in auto-complete-config function for model '{model}' contains "
                    f"property other than {listed}."
                )
        for key in ("name", "data_type", "dims"):
            if key not in tensor:
                where = f"{kind}" if key == "name" else label
                raise ValueError(
                    f"{where} in auto-complete-config function for model '{model}' is missing "
                    f"'{key}' property."
                )
        new = dict(tensor)
        new["dims"] = _dims(new["dims"])
        for current in self._model_config[kind]:
            if current.get("name") != new["name"]:
                continue
            current_type = current.get("data_type", "TYPE_INVALID")
            if current_type not in ("", "TYPE_INVALID") and current_type != new["data_type"]:
                raise ValueError(
                    f"unable to load model '{model}', configuration expects datatype "
                    f"{current_type} for {kind} '{new['name']}', model provides "
                    f"{new['data_type']}"
                )
            current_dims = _dims(current.get("dims") or [])
            if current_dims and current_dims != new["dims"]:
                raise ValueError(
                    f"model '{model}', tensor '{new['name']}': the model expects dims "
                    f"{new['dims']} but the model configuration specifies dims {current_dims}"
                )
            if (
                "optional" in current
                and "optional" in new
                and bool(current["optional"]) != bool(new["optional"])
            ):
                raise ValueError(
                    f"model '{model}', tensor '{new['name']}': the model expects optional "
                    f"{new['optional']} but the model configuration specifies optional "
                    f"{current['optional']}"
                )
            current["data_type"] = new["data_type"]
            current["dims"] = new["dims"]
            if "optional" in new:
                current["optional"] = new["optional"]
            return
        self._model_config[kind].append(new)
