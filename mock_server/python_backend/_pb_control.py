"""What model code asks of the server: its version's folder (``get_model_dir``) and model
control (``load_model``, ``unload_model``, ``is_model_ready``).

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.errors import ServerError
from . import _context, _pybind
from ._errors import TritonModelException


def get_model_dir() -> str:
    """Return the folder of the calling model version's files (``<repository>/<model>/<n>``).

    Raises
    ------
    TritonModelException
        When called outside model code.
    """
    context = _context.current()
    if context is None or not context.model_dir:
        raise TritonModelException("get_model_dir() is available only to model code")
    return context.model_dir


def _control_runtime(what: str) -> Any:
    hooks, phase = _context.runtime()
    # Triton 2.51 answers is_model_ready() in finalize() (read on the real server).
    if phase == "auto_complete" or (phase == "finalize" and what != "is_model_ready"):
        raise TritonModelException(
            f"{what} is not supported in the {phase}"
            + ("_config" if phase == "auto_complete" else "")
            + " function"
        )
    if hooks is None:
        raise TritonModelException(f"{what} is not available: no server is attached")
    return hooks


def load_model(model_name: str, config: str = "", files: Mapping[str, bytes] | None = None) -> None:
    """Load (or reload) a model of the server's repository.

    Parameters
    ----------
    model_name : str
        The model to load.
    config : str, optional
        An override model configuration, in JSON.
    files : dict of str to bytes, optional
        Override model files, keyed ``"file:<path in the model folder>"`` (needs ``config``).

    Raises
    ------
    TritonModelException
        If loading fails.
    """
    name, text_config = _pybind.text_arg(model_name), _pybind.text_arg(config)
    if name is None or text_config is None:
        raise _pybind.incompatible(
            "load_model",
            "(model_name: str, config: str = '', files: object = None) -> None",
            (model_name, config, files),
        )
    hooks = _control_runtime("load_model")
    try:
        hooks.load_model(name, text_config, dict(files) if files is not None else None)
    except ServerError as exc:
        raise TritonModelException(exc.message) from exc


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """Unload a model.

    Parameters
    ----------
    model_name : str
        The model to unload.
    unload_dependents : bool, optional
        Accepted for compatibility; this server has no model dependencies (ensembles), so there
        is nothing more to unload.

    Raises
    ------
    TritonModelException
        If unloading fails.
    """
    name = _pybind.text_arg(model_name)
    if name is None or not isinstance(unload_dependents, (bool, np.bool_)):
        raise _pybind.incompatible(
            "unload_model",
            "(model_name: str, unload_dependents: bool = False) -> None",
            (model_name, unload_dependents),
        )
    hooks = _control_runtime("unload_model")
    try:
        hooks.unload_model(name)
    except ServerError as exc:
        raise TritonModelException(exc.message) from exc


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    """Whether a model (version, given as a string; "" for the default) is ready.

    Raises
    ------
    TritonModelException
        If the server cannot answer.
    """
    name, version = _pybind.text_arg(model_name), _pybind.text_arg(model_version)
    if name is None or version is None:
        raise _pybind.incompatible(
            "is_model_ready",
            "(model_name: str, model_version: str = '') -> bool",
            (model_name, model_version),
        )
    hooks = _control_runtime("is_model_ready")
    try:
        return bool(hooks.is_model_ready(name, version))
    except ServerError as exc:
        raise TritonModelException(exc.message) from exc
