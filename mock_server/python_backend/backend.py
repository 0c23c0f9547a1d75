"""Runs Triton Python-backend models (``model.py`` with ``TritonPythonModel``) for the core.

:class:`PythonBackend` is what the composition root (``mock_server.app``, the in-process API)
gives the core for models with ``backend: "python"``: it completes their configuration and
loads their versions as :class:`PythonBackendModel` objects, whose instances run in stub
processes of their own (``isolation="process"``, the default, as Triton runs them;
:mod:`mock_server.python_backend._process`) or in the server's own process on the core's
instance threads (``"thread"``; :mod:`mock_server.python_backend._inprocess`, which also says
how model files are imported and how their errors are reported).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.backends import LoadSpec
from ..core.errors import ServerError
from ._inprocess import LocalModel, PythonModelInstance
from ._process import ProcessModelInstance, StubSpec, auto_complete_in_stub
from .runtime import BackendRuntime

__all__ = [
    "ISOLATION_MODES",
    "ISOLATION_PARAMETER",
    "PythonBackend",
    "PythonBackendModel",
    "PythonModelInstance",
    "model_isolation",
]

#: How model instances run: ``"process"`` (each in a stub process of its own, as Triton runs
#: them; the default) or ``"thread"`` (in the server's own process, on a worker thread).
ISOLATION_MODES = ("process", "thread")
#: The model-config parameter that chooses the isolation of one model.
ISOLATION_PARAMETER = "python_backend_isolation"


def _parameter(config_json: dict[str, Any], key: str) -> str | None:
    parameters = config_json.get("parameters") or {}
    entry = parameters.get(key) if isinstance(parameters, dict) else None
    if isinstance(entry, dict):
        return str(entry.get("string_value", ""))
    return None


def model_isolation(config_json: dict[str, Any], default: str = "process") -> str:
    """How a model's instances run: its ``python_backend_isolation`` parameter, else ``default``.

    Raises
    ------
    ServerError
        INVALID_ARG for a value other than ``"process"`` or ``"thread"``.
    """
    value = _parameter(config_json, ISOLATION_PARAMETER)
    chosen = default if value is None or value == "" else value.strip().lower()
    if chosen not in ISOLATION_MODES:
        name = config_json.get("name", "")
        raise ServerError.invalid_arg(
            f"model '{name}': parameter '{ISOLATION_PARAMETER}' must be 'process' or 'thread', "
            f"got '{value if value is not None else default}'"
        )
    return chosen


def _stub_spec(config_json: dict[str, Any], model_dir: Path) -> StubSpec:
    """Where a model's stub runs: the interpreter its ``EXECUTION_ENV_PATH`` names, or the
    server's own (forked)."""
    value = _parameter(config_json, "EXECUTION_ENV_PATH")
    if not value:
        return StubSpec()
    name = config_json.get("name", "")
    path = Path(value.replace("$$TRITON_MODEL_DIRECTORY", str(model_dir)))
    if path.is_dir():
        for candidate in ("bin/python3", "bin/python"):
            if (path / candidate).is_file():
                return StubSpec(python=str(path / candidate))
        raise ServerError.invalid_arg(
            f"model '{name}': EXECUTION_ENV_PATH '{value}' is a folder without bin/python3"
        )
    if path.is_file() and os.access(path, os.X_OK):
        return StubSpec(python=str(path))
    if path.name.endswith((".tar.gz", ".tgz")):
        raise ServerError.invalid_arg(
            f"model '{name}': EXECUTION_ENV_PATH '{value}' is an archive; this server runs "
            "an unpacked environment: give its folder (holding bin/python3) or its interpreter"
        )
    raise ServerError.invalid_arg(
        f"model '{name}': EXECUTION_ENV_PATH '{value}' is neither an environment folder nor "
        "a Python interpreter"
    )


class PythonBackendModel(LocalModel):
    """One version of one ``model.py`` model, its instances in stub processes or here.

    Parameters
    ----------
    model_name, model_dir, version, config_json, filename
        The fields of the model's :class:`~mock_server.core.backends.LoadSpec`.
    runtime : BackendRuntime
        The core's hooks for BLS and model control.
    isolation : str, optional
        The server's default isolation (``"process"`` or ``"thread"``); the model's
        ``python_backend_isolation`` parameter overrides it.

    Raises
    ------
    ServerError
        For an invalid ``python_backend_isolation`` or ``EXECUTION_ENV_PATH`` parameter.
    """

    @staticmethod
    def auto_complete(
        model_dir: Path,
        version: int,
        config_json: dict[str, Any],
        filename: str,
        isolation: str = "process",
    ) -> dict[str, Any]:
        """Let the model complete its configuration.

        Imports the model file and, if ``TritonPythonModel`` has ``auto_complete_config``, calls
        it with a :class:`pb_utils.ModelConfig` wrapping ``config_json``: in a stub process of
        its own (as Triton does) unless the model's isolation (``isolation``, or its
        ``python_backend_isolation`` parameter) is ``"thread"``.

        Parameters
        ----------
        model_dir : pathlib.Path
            The model's folder.
        version : int
            The version whose file is imported.
        config_json : dict
            The configuration in Triton's JSON form (snake_case keys, enum names such as
            ``"TYPE_FP32"``).  It is not modified.
        filename : str
            The model file's name.
        isolation : str, optional
            The server's default isolation, ``"process"`` or ``"thread"``.

        Returns
        -------
        dict
            The completed configuration (a copy of ``config_json`` when the model has no
            ``auto_complete_config``).

        Raises
        ------
        ServerError
            ``NOT_FOUND`` for a missing model file; ``INVALID_ARG`` when the model rejects the
            configuration (``ValueError`` from :class:`pb_utils.ModelConfig`) or returns
            something other than the ModelConfig; ``INTERNAL`` for any other failure.
        """
        if model_isolation(config_json, isolation) == "thread":
            return LocalModel.auto_complete(model_dir, version, config_json, filename)
        name = str(config_json.get("name") or Path(model_dir).name)
        path = Path(model_dir) / str(version) / filename
        if not path.is_file():
            raise ServerError.not_found(
                f"unable to load model '{name}': model file '{path}' not found"
            )
        return auto_complete_in_stub(
            Path(model_dir), version, config_json, filename, _stub_spec(config_json, model_dir)
        )

    def __init__(
        self,
        model_name: str,
        model_dir: Path,
        version: int,
        config_json: dict[str, Any],
        filename: str,
        runtime: BackendRuntime,
        isolation: str = "process",
    ) -> None:
        # Both checked before the model counts as created (its runtime registered).
        chosen = model_isolation(config_json, isolation)
        spec = _stub_spec(config_json, Path(model_dir)) if chosen == "process" else None
        super().__init__(
            LoadSpec(model_name, Path(model_dir), version, config_json, filename), runtime
        )
        self.isolation = chosen
        self._stub_spec = spec

    def create_instance(self, instance_name: str, kind: str, device_id: int) -> Any:
        """Import the model file, create ``TritonPythonModel`` and run its ``initialize``.

        Parameters
        ----------
        instance_name : str
            The instance's name (``args["model_instance_name"]``).
        kind : str
            ``"CPU"`` or ``"GPU"`` (``args["model_instance_kind"]``).
        device_id : int
            The device id (``args["model_instance_device_id"]``).

        Returns
        -------
        PythonModelInstance or ProcessModelInstance
            The instance, in this process or in a stub process of its own (see
            :attr:`isolation`).

        Raises
        ------
        ServerError
            If the file cannot be imported, defines no usable ``TritonPythonModel``, or
            ``initialize`` raises.
        """
        if self._stub_spec is not None:
            if not self.path.is_file():
                raise ServerError.not_found(
                    f"unable to load model '{self.model_name}': model file '{self.path}' not found"
                )
            return ProcessModelInstance.start(self, instance_name, kind, device_id, self._stub_spec)
        return super().create_instance(instance_name, kind, device_id)


class PythonBackend:
    """The Python backend as the core uses it (a :class:`~mock_server.core.backends.
    ModelBackend`): the composition root gives it to the core for ``backend: "python"``.

    Parameters
    ----------
    isolation : str, optional
        How model instances run unless a model's ``python_backend_isolation`` parameter says
        otherwise: ``"process"`` (each in a stub process of its own, as in Triton) or
        ``"thread"`` (in the server's process).
    """

    def __init__(self, isolation: str = "process") -> None:
        self.isolation = isolation

    def auto_complete(self, spec: LoadSpec) -> dict[str, Any]:
        """:meth:`PythonBackendModel.auto_complete` with this backend's isolation."""
        return PythonBackendModel.auto_complete(
            spec.model_dir, spec.version, spec.config_json, spec.filename, self.isolation
        )

    def load(self, spec: LoadSpec, runtime: BackendRuntime) -> PythonBackendModel:
        """A :class:`PythonBackendModel` with this backend's isolation."""
        return PythonBackendModel(
            spec.model_name,
            spec.model_dir,
            spec.version,
            spec.config_json,
            spec.filename,
            runtime,
            self.isolation,
        )
