"""Classes for configuring, instantiating, and interacting with an in-process server.

:class:`Server` wraps a :class:`mock_server.core.server.CoreServer`: starting the server creates
and starts a core with the :class:`Options`, stopping it stops the core (a stopped server can be
started again, with a fresh core).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compose import build_core
from ..core.compat import compat_profile
from ..core.server import CoreServer, ServerOptions
from ..core.server import ModelControlMode as CoreControlMode
from ._enums import InstanceGroupKind, LogFormat, MetricFormat, ModelControlMode, RateLimitMode
from ._errors import (
    AlreadyExistsError,
    InternalError,
    InvalidArgumentError,
    UnavailableError,
    UnsupportedError,
    translate_errors,
)
from ._metrics import prometheus_text
from ._model import Model
from ._repository import MappedRepository

__all__ = ["ModelDictionary", "ModelLoadDeviceLimit", "Options", "RateLimiterResource", "Server"]

_CONTROL_MODES = {
    ModelControlMode.NONE: CoreControlMode.NONE,
    ModelControlMode.POLL: CoreControlMode.POLL,
    ModelControlMode.EXPLICIT: CoreControlMode.EXPLICIT,
}
# The in-process API polls only when asked (poll_model_repository), as Triton's C API does: the
# periodic rescans of `tritonserver --model-control-mode=poll` are the executable's, not the
# library's.  The core's poll thread is given an interval it never reaches.
_NEVER_POLL_SECS = 10.0**9
_UNLOADED_STATES = (None, "UNAVAILABLE")
_LOGGER = "mock_server"


@dataclass(slots=True)
class RateLimiterResource:
    """Resource count for rate limiting (accepted, no effect here: there is no rate limiter).

    Parameters
    ----------
    name : str
        Name of resource
    count : int
        Count of resource available
    device : int
        The id of the device
    """

    name: str
    count: int
    device: int


@dataclass(slots=True)
class ModelLoadDeviceLimit:
    """Memory limit for loading models on a device (accepted, no effect here).

    Parameters
    ----------
    kind : InstanceGroupKind
        The kind of device
    device : int
        The id of the device
    fraction : float
        The limit on memory usage as a fraction of device memory.
    """

    kind: InstanceGroupKind
    device: int
    fraction: float


@dataclass(slots=True)
class Options:
    """Server Options.

    Options marked *no effect* are accepted and kept, so that code written for
    ``tritonserver`` runs unchanged, but this server has no such mechanism.

    Parameters
    ----------
    model_repository : str | list[str], default []
        Model repository path(s). At least one path is required.
    server_id : str, default 'triton'
        Textural ID for the server (reported by :meth:`Server.metadata`).
    model_control_mode : ModelControlMode, default ModelControlMode.NONE
        Model control mode.

        - ModelControlMode.NONE : All models in the repository are loaded on startup.
        - ModelControlMode.POLL : All models are loaded on startup; repository changes are
          applied when :meth:`Server.poll_model_repository` is called.
        - ModelControlMode.EXPLICIT : only ``startup_models`` are loaded on startup; use
          :meth:`Server.load` and :meth:`Server.unload`.
    startup_models : list[str], default []
        List of models to load at startup (``"*"``: all). Only relevant with
        ModelControlMode.EXPLICIT.
    strict_model_config : bool, default True
        *No effect*: Python-backend models are always auto-completed.
    rate_limiter_mode : RateLimitMode, default RateLimitMode.OFF
        *No effect*: there is no rate limiter.
    rate_limiter_resources : list[RateLimiterResource], default []
        *No effect*.
    pinned_memory_pool_size : int, default 1 << 28
        *No effect*: there are no memory pools.
    cuda_memory_pool_sizes : dict[int, int], default {}
        *No effect*.
    cache_config : dict[str, dict[str, Any]], default {}
        *No effect*: there is no response cache.
    cache_directory : str, default "/opt/tritonserver/caches"
        *No effect*.
    min_supported_compute_capability : float, default 6.0
        *No effect*.
    exit_on_error : bool, default True
        When True, :meth:`Server.start` fails (and stops the server) if a model that was to be
        loaded at startup fails to load, as Triton's server creation does.
    strict_readiness : bool, default True
        When True the server is ready only if every startup model loaded.
    exit_timeout : int, default 30
        Seconds unloading waits for in-flight requests (at :meth:`Server.stop` and unload).
    buffer_manager_thread_count : int, default 0
        *No effect*.
    model_load_thread_count : int, default 4
        *No effect*: models load one after the other.
    model_load_retry_count : int, default 0
        *No effect*.
    model_namespacing : bool, default False
        *No effect*: a model name found in two repositories is an error.
    enable_peer_access : bool, default True
        *No effect* (newer ``tritonserver`` releases have it).
    log_file : Optional[str], default None
        Path to the log file: the ``mock_server`` loggers also write there while the server
        runs.  If None, logs go where the application's logging configuration sends them.
    log_info : bool, default False
        Enable or disable logging of INFO level messages.
    log_warn : bool, default False
        Enable or disable logging of WARNING level messages.
    log_error : bool, default False
        Enable or disable logging of ERROR level messages.
    log_format : LogFormat, default LogFormat.DEFAULT
        Log message format (of the ``log_file`` lines).
    log_verbose : int, default 0
        Verbose logging level. Level zero disables verbose logging.  The log levels set the
        level of the ``mock_server`` logger while the server runs (process-wide); the previous
        level is restored by :meth:`Server.stop`.
    metrics : bool, default True
        Enable or disable metrics; when False :meth:`Server.metrics` raises
        :class:`UnsupportedError`.
    gpu_metrics : bool, default True
        *No effect*: there are no GPU metrics.
    cpu_metrics : bool, default True
        *No effect*: CPU metrics are always reported.
    metrics_interval : int, default 2000
        *No effect*: metrics are computed when read.
    backend_directory : str, default "/opt/tritonserver/backends"
        *No effect*: the Python backend is built in.
    repo_agent_directory : str, default "/opt/tritonserver/repoagents"
        *No effect*.
    model_load_device_limits : list[ModelLoadDeviceLimit], default []
        *No effect*.
    backend_configuration : dict[str, dict[str, str]], default {}
        *No effect*.
    host_policies : dict[str, dict[str, str]], default {}
        *No effect*.
    metrics_configuration : dict[str, dict[str, str]], default {}
        *No effect*.
    python_backend_isolation : str, default "process"
        This server's own option (``--python-backend-isolation``): ``"process"`` runs each
        Python-backend model instance in a stub process of its own, as Triton does;
        ``"thread"`` runs models in this process (quicker per request, easier to debug). A
        model's ``python_backend_isolation`` config parameter overrides it.
    triton_compat : str, default "2.73"
        This server's own option (``--triton-compat``): which Triton release the server
        behaves as where releases differ, ``"2.73"`` or ``"2.51"``.  In process it decides
        whether reserved request parameters (``triton_*``, ``timeout`` ...) and a requested
        output named twice are refused (2.73) or delivered (2.51); see
        :mod:`mock_server.core.compat`.
    """

    model_repository: str | list[str] = field(default_factory=list)
    server_id: str = "triton"
    model_control_mode: ModelControlMode = ModelControlMode.NONE
    startup_models: list[str] = field(default_factory=list)
    strict_model_config: bool = True
    rate_limiter_mode: RateLimitMode = RateLimitMode.OFF
    rate_limiter_resources: list[RateLimiterResource] = field(default_factory=list)
    pinned_memory_pool_size: int = 1 << 28
    cuda_memory_pool_sizes: dict[int, int] = field(default_factory=dict)
    cache_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    cache_directory: str = "/opt/tritonserver/caches"
    min_supported_compute_capability: float = 6.0
    exit_on_error: bool = True
    strict_readiness: bool = True
    exit_timeout: int = 30
    buffer_manager_thread_count: int = 0
    model_load_thread_count: int = 4
    model_load_retry_count: int = 0
    model_namespacing: bool = False
    enable_peer_access: bool = True
    log_file: str | None = None
    log_info: bool = False
    log_warn: bool = False
    log_error: bool = False
    log_format: LogFormat = LogFormat.DEFAULT
    log_verbose: int = 0
    metrics: bool = True
    gpu_metrics: bool = True
    cpu_metrics: bool = True
    metrics_interval: int = 2000
    backend_directory: str = "/opt/tritonserver/backends"
    repo_agent_directory: str = "/opt/tritonserver/repoagents"
    model_load_device_limits: list[ModelLoadDeviceLimit] = field(default_factory=list)
    backend_configuration: dict[str, dict[str, str]] = field(default_factory=dict)
    host_policies: dict[str, dict[str, str]] = field(default_factory=dict)
    metrics_configuration: dict[str, dict[str, str]] = field(default_factory=dict)
    python_backend_isolation: str = "process"
    triton_compat: str = "2.73"

    def _core_options(self) -> ServerOptions:
        """Validate the options and build the core's.

        Raises
        ------
        InvalidArgumentError
            For a missing repository or a malformed option.
        """
        repositories = self.model_repository
        if isinstance(repositories, (str, os.PathLike)):
            repositories = [repositories]
        if not isinstance(repositories, list) or not repositories:
            raise InvalidArgumentError("Model repository must be specified.")
        if not all(isinstance(path, (str, os.PathLike)) for path in repositories):
            raise InvalidArgumentError("model_repository must be a path or a list of paths")
        try:
            mode = _CONTROL_MODES[ModelControlMode(self.model_control_mode)]
        except ValueError:
            raise InvalidArgumentError(
                f"invalid model_control_mode {self.model_control_mode!r}"
            ) from None
        if not all(isinstance(name, str) for name in self.startup_models):
            raise InvalidArgumentError("startup_models must be a list of model names")
        for name in ("exit_timeout", "log_verbose"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"{name} must be a non-negative integer")
        try:
            LogFormat(self.log_format)
        except ValueError:
            raise InvalidArgumentError(f"invalid log_format {self.log_format!r}") from None
        if self.python_backend_isolation not in ("process", "thread"):
            raise InvalidArgumentError(
                "python_backend_isolation must be 'process' or 'thread', got "
                f"{self.python_backend_isolation!r}"
            )
        try:
            compat = compat_profile(self.triton_compat)
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        return ServerOptions(
            model_repository=[Path(path) for path in repositories],
            model_control_mode=mode,
            startup_models=list(self.startup_models),
            repository_poll_secs=_NEVER_POLL_SECS,
            strict_readiness=bool(self.strict_readiness),
            exit_timeout_secs=float(self.exit_timeout),
            server_id=self.server_id,
            log_file=self.log_file or "",
            python_backend_isolation=self.python_backend_isolation,
            triton_compat=compat,
        )

    def _log_settings(self) -> dict[str, Any]:
        """The core's log settings, with Triton's cascade (verbose > info > warn > error)."""
        info = self.log_info or self.log_verbose > 0
        warn = self.log_warn or info
        return {
            "log_info": bool(info),
            "log_warning": bool(warn),
            "log_error": bool(self.log_error or warn),
            "log_verbose_level": int(self.log_verbose),
            "log_format": "ISO8601" if self.log_format == LogFormat.ISO8601 else "default",
        }


class ModelDictionary(dict[tuple[str, int], Model]):
    """Model dictionary associating ``(name, version)`` tuples to :class:`Model` objects.

    Returned from :meth:`Server.models`; not meant to be instantiated directly.  Indexing it
    with a bare model name returns a :class:`Model` for that name (version -1).

    Parameters
    ----------
    server : Server
        The server the models belong to.
    models : list[Model]
        The models.

    Examples
    --------
    >>> server.models()
    {('identity', 1): {'name': 'identity', 'version': 1, 'state': 'READY'}}
    >>> server.models()["identity"]
    {'name': 'identity', 'version': -1, 'state': None}
    """

    def __init__(self, server: Server, models: list[Model]) -> None:
        super().__init__()
        for model in models:
            self[(model.name, model.version)] = model
        self._server = server
        self._model_names = {name for name, _ in self}

    def __getitem__(self, key: tuple[str, int] | str) -> Model:
        if isinstance(key, tuple):
            try:
                return dict.__getitem__(self, key)
            except KeyError:
                raise KeyError(f"Unknown Model: {key}") from None
        if key in self._model_names:
            return Model(self._server, name=key, version=-1)
        raise KeyError(f"Unknown Model: {key}")


class _LogScope:
    """Applies the log options while a server runs; restores the logger on exit."""

    def __init__(self, options: Options) -> None:
        self._logger = logging.getLogger(_LOGGER)
        self._level = self._logger.level
        self._handler: logging.Handler | None = None
        if options.log_file:
            try:
                self._handler = logging.FileHandler(options.log_file, encoding="utf-8")
            except OSError as exc:
                raise InvalidArgumentError(
                    f"cannot open log file '{options.log_file}': {exc.strerror or exc}"
                ) from None
            if options.log_format == LogFormat.ISO8601:
                formatter = logging.Formatter(
                    "%(asctime)s %(levelname).1s %(process)d %(filename)s:%(lineno)d] %(message)s",
                    "%Y-%m-%dT%H:%M:%SZ",
                )
                formatter.converter = time.gmtime
            else:
                formatter = logging.Formatter(
                    "%(levelname).1s%(asctime)s %(process)d %(filename)s:%(lineno)d] %(message)s",
                    "%m%d %H:%M:%S",
                )
            self._handler.setFormatter(formatter)
            self._logger.addHandler(self._handler)

    def close(self) -> None:
        if self._handler is not None:
            self._logger.removeHandler(self._handler)
            self._handler.close()
            self._handler = None
        self._logger.setLevel(self._level)


class Server:
    """Triton Inference Server (in process).

    Server objects allow users to instantiate and interact with an in-process server.  Server
    objects provide methods to access models, server metadata, and metrics.

    Parameters
    ----------
    options : Optional[Options]
        Server configuration options.  Options are validated by :meth:`start`.
    kwargs : Unpack[Options]
        Keyword arguments passed to the `Options` constructor (or, with ``options``, replacing
        those fields of a copy of it).

    Examples
    --------
    >>> server = mock_server.Server(model_repository="/workspace/models")
    >>> server.start(wait_until_ready=True)
    """

    def __init__(self, options: Options | None = None, **kwargs: Any) -> None:
        if options is None:
            options = Options(**kwargs)
        elif kwargs:
            options = dataclasses.replace(options, **kwargs)
        self.options: Options = options
        self._core: CoreServer | None = None
        self._log_scope: _LogScope | None = None
        self._lock = threading.RLock()

    # -- lifecycle ---------------------------------------------------------------------------
    def _require_core(self) -> CoreServer:
        core = self._core
        if core is None:
            raise InvalidArgumentError("Server not started")
        return core

    def start(
        self,
        wait_until_ready: bool = False,
        polling_interval: float = 0.1,
        timeout: float | None = None,
    ) -> Server:
        """Start the in-process server.

        Starts the in-process server and loads models (depending on the ModelControlMode
        setting). Configuration options are validated and any errors raised as exceptions.

        Parameters
        ----------
        wait_until_ready : bool, default False
            Wait for the server to reach a ready state before returning.
        polling_interval : float, default 0.1
            Time to sleep between polling for server ready. Only applicable if
            `wait_until_ready` is set to True.
        timeout : Optional[float]
            Timeout when waiting for server to be ready. Only applicable if `wait_until_ready`
            is set to True.

        Returns
        -------
        Server

        Raises
        ------
        UnavailableError
            If timeout reached before server ready.
        InvalidArgumentError
            Raised on invalid configuration or if server already started.
        InternalError
            If a repository folder cannot be read, or (with ``exit_on_error``) a startup
            model failed to load.

        Examples
        --------
        >>> server = mock_server.Server(model_repository="/workspace/models")
        >>> server.start()
        """
        with self._lock:
            if self._core is not None:
                raise InvalidArgumentError("Server already started")
            core_options = self.options._core_options()
            log_scope = _LogScope(self.options)
            try:
                core = build_core(core_options)
                core.repository = MappedRepository(core.repository.paths)
                with translate_errors():
                    core.log_settings.update(self.options._log_settings())
                try:
                    with translate_errors():
                        core.start()
                    if self.options.exit_on_error:
                        _check_startup(core)
                except BaseException:
                    core.stop()
                    raise
            except BaseException:
                log_scope.close()
                raise
            self._core = core
            self._log_scope = log_scope
        if wait_until_ready:
            started = time.monotonic()
            while not self.ready():
                if timeout is not None and time.monotonic() - started >= timeout:
                    raise UnavailableError("Timeout before ready")
                time.sleep(polling_interval)
        return self

    def stop(self) -> Server:
        """Stop server and unload models.

        Waits up to ``exit_timeout`` seconds per model for in-flight requests.

        Returns
        -------
        Server

        Raises
        ------
        InvalidArgumentError
            If the server is not started.

        Examples
        --------
        >>> server.stop()
        """
        with self._lock:
            core = self._require_core()
            try:
                core.stop()
            finally:
                self._core = None
                if self._log_scope is not None:
                    self._log_scope.close()
                    self._log_scope = None
        return self

    def live(self) -> bool:
        """Returns true if the server is live.

        Returns
        -------
        bool
            True if server is live. False otherwise.

        Raises
        ------
        InvalidArgumentError
            If the server is not started.

        Examples
        --------
        >>> server.live()
        True
        """
        return self._require_core().live()

    def ready(self) -> bool:
        """Returns True if the server is ready.

        Returns
        -------
        bool
            True if server is ready. False otherwise.

        Raises
        ------
        InvalidArgumentError
            If the server is not started.

        Examples
        --------
        >>> server.ready()
        True
        """
        return self._require_core().ready()

    def metadata(self) -> dict[str, Any]:
        """Returns metadata for server.

        Returns metadata for server including name, version and enabled extensions.

        Returns
        -------
        dict[str, Any]
            Dictionary of key value pairs of metadata information

        Examples
        --------
        >>> server.metadata()
        {'name': 'triton', 'version': '0.1.0', 'extensions': ['classification', ...]}
        """
        return self._require_core().metadata()

    def metrics(self, metric_format: MetricFormat = MetricFormat.PROMETHEUS) -> str:
        """Return server and custom metrics.

        Parameters
        ----------
        metric_format : MetricFormat
            format for metrics (only ``MetricFormat.PROMETHEUS``)

        Returns
        -------
        str
            string containing metrics in specified format: Triton's per-model inference
            counters and durations, CPU metrics, and the custom metrics of models
            (``pb_utils.MetricFamily``)

        Raises
        ------
        InvalidArgumentError
            For an unknown format.
        UnsupportedError
            If metrics are disabled (``Options.metrics``) or ``prometheus_client`` is missing.
        """
        core = self._require_core()
        try:
            MetricFormat(metric_format)
        except ValueError:
            raise InvalidArgumentError(f"unsupported metric format {metric_format!r}") from None
        if not self.options.metrics:
            raise UnsupportedError("metrics are disabled (Options.metrics is False)")
        return prometheus_text(core)

    # -- models ------------------------------------------------------------------------------
    def model(self, model_name: str, model_version: int = -1) -> Model:
        """Factory method for creating Model objects.

        Creates and returns a Model object that can be used to interact with a model. See
        `Model` documentation for more details.

        Note: Model is not validated until it is used.

        Parameters
        ----------
        model_name : str
            name of model
        model_version : int
            model version, default -1

        Returns
        -------
        Model
            Model object

        Raises
        ------
        InvalidArgumentError
            If server isn't started.

        Examples
        --------
        >>> server.model("simple")
        {'name': 'simple', 'version': -1, 'state': None}
        """
        return Model(self, model_name, model_version)

    def models(self, exclude_not_ready: bool = False) -> ModelDictionary:
        """Returns a dictionary of known models in the model repository.

        Parameters
        ----------
        exclude_not_ready : bool
            exclude any models which are not in a ready state

        Returns
        -------
        ModelDictionary
            Dictionary mapping model name, version to Model objects.  Models never loaded have
            version -1 and state None.

        Raises
        ------
        InvalidArgumentError
            If server is not started

        Examples
        --------
        >>> server.models()
        {('identity', 1): {'name': 'identity', 'version': 1, 'state': 'READY'}}
        """
        core = self._require_core()
        with translate_errors():
            rows = core.repository_index(ready_only=exclude_not_ready)
        models = [
            Model(
                self,
                row["name"],
                int(row["version"]) if "version" in row else -1,
                row.get("state") or None,
                row.get("reason") or None,
            )
            for row in rows
        ]
        return ModelDictionary(self, models)

    def load(
        self, model_name: str, parameters: dict[str, str | int | bool | bytes] | None = None
    ) -> Model:
        """Load a model.

        Load a model from the repository and wait for it to be ready. Only available if
        ModelControlMode is EXPLICIT.

        Parameters
        ----------
        model_name : str
            model name
        parameters : Optional[dict[str, str | int | bool | bytes]]
            parameters to override settings and upload model artifacts: ``"config"`` (str, a
            JSON model configuration) and ``"file:<path>"`` (bytes, a file of the model
            folder, e.g. ``"file:1/model.py"``; ``config`` is required then).  Other
            parameters are ignored.

        Returns
        -------
        Model
            Model object

        Raises
        ------
        UnavailableError
            If the control mode is not EXPLICIT.
        InvalidArgumentError
            For malformed parameters or a model that fails to load.

        Examples
        --------
        >>> server.load("simple")
        {'name': 'simple', 'version': -1, 'state': None}
        """
        core = self._require_core()
        config: str | None = None
        files: dict[str, bytes] = {}
        for key, value in (parameters or {}).items():
            if key == "config":
                if isinstance(value, bytes):
                    value = value.decode("utf-8")
                if not isinstance(value, str):
                    raise InvalidArgumentError(
                        "the 'config' load parameter must be a string holding JSON"
                    )
                config = value
            elif key.startswith("file:"):
                if not isinstance(value, (bytes, bytearray, memoryview)):
                    raise InvalidArgumentError(f"the '{key}' load parameter must be bytes")
                files[key] = bytes(value)
        with translate_errors():
            core.load_model(model_name, config, files)
        return self.model(model_name)

    def unload(
        self,
        model: str | Model,
        unload_dependents: bool = False,
        wait_until_unloaded: bool = False,
        polling_interval: float = 0.1,
        timeout: float | None = None,
    ) -> None:
        """Unload model.

        Unloads a model and its dependents (optional).  Only available if ModelControlMode is
        EXPLICIT.  Unloading waits for the model's in-flight requests here, so the model is
        unloaded when this returns.

        Parameters
        ----------
        model : str | Model
            model name or model object
        unload_dependents : bool
            if True, unloading an ensemble also unloads the composing models it loaded that
            were not loaded explicitly and that no other ensemble runs
        wait_until_unloaded : bool
            if True call will wait until model is unloaded before returning.
        polling_interval : float
            time to wait in between polling if model is unloaded
        timeout : Optional[float]
            timeout to wait for the model to become unloaded

        Raises
        ------
        InvalidArgumentError
            if server is not started
        UnavailableError
            If the control mode is not EXPLICIT.

        Examples
        --------
        >>> server.unload("simple", wait_until_unloaded=True)
        """
        core = self._require_core()
        name = model.name if isinstance(model, Model) else model
        with translate_errors():
            core.unload_model(name, unload_dependents)
        if wait_until_unloaded:
            keys = [key for key in self.models() if key[0] == name]
            started = time.monotonic()
            while not self._unloaded(keys):
                if timeout is not None and time.monotonic() - started >= timeout:
                    return
                time.sleep(polling_interval)

    def _unloaded(self, keys: list[tuple[str, int]]) -> bool:
        models = self.models()
        return all(key not in models or models[key].state in _UNLOADED_STATES for key in keys)

    # -- repositories ------------------------------------------------------------------------
    def _mapped_repository(self) -> MappedRepository:
        core = self._require_core()
        if core.options.model_control_mode is not CoreControlMode.EXPLICIT:
            raise UnsupportedError(
                "repository registration is not allowed if model control mode is not EXPLICIT"
            )
        repository = core.repository
        if not isinstance(repository, MappedRepository):  # pragma: no cover - set by start()
            raise InternalError("the server's repository does not support registration")
        return repository

    def register_model_repository(
        self, repository_path: str, name_mapping: dict[str, str] | None = None
    ) -> None:
        """Add a new model repository.

        Only available when ModelControlMode is set to explicit.  Registering loads nothing:
        load its models with :meth:`load`.

        Parameters
        ----------
        repository_path : str
            repository path
        name_mapping : Optional[dict[str, str]]
            override model names: ``{model folder name: model name}``; a mapped folder is
            served under the new name only

        Raises
        ------
        UnsupportedError
            If the control mode is not EXPLICIT.
        InvalidArgumentError
            If the folder does not exist.
        AlreadyExistsError
            If the repository is registered already, or a mapped name is mapped already.

        Examples
        --------
        >>> server.register_model_repository("/workspace/models", {"test": "new_model"})
        """
        with self._lock:
            repository = self._mapped_repository()
            path = Path(repository_path)
            if not path.is_dir():
                raise InvalidArgumentError(
                    f"failed to register '{repository_path}', repository not found"
                )
            if path in repository.paths:
                raise AlreadyExistsError(
                    f"model repository '{repository_path}' has already been registered"
                )
            mapping: dict[str, tuple[Path, str]] = {}
            for folder, model_name in (name_mapping or {}).items():
                if model_name in mapping or model_name in repository.mappings:
                    raise AlreadyExistsError(
                        f"failed to register '{repository_path}', there is a conflicting "
                        f"mapping for '{model_name}'"
                    )
                mapping[model_name] = (path, folder)
            repository.mappings = {**repository.mappings, **mapping}
            repository.paths = [*repository.paths, path]

    def unregister_model_repository(self, repository_path: str) -> Server:
        """Unregister model repository.

        Only available when ModelControlMode is set to explicit.  Models already loaded from
        it stay loaded.

        Parameters
        ----------
        repository_path : str
            path to unregister

        Returns
        -------
        Server

        Raises
        ------
        UnsupportedError
            If the control mode is not EXPLICIT.
        InvalidArgumentError
            If the repository is not registered.

        Examples
        --------
        >>> server.unregister_model_repository("/workspace/models")
        """
        with self._lock:
            repository = self._mapped_repository()
            path = Path(repository_path)
            if path not in repository.paths:
                raise InvalidArgumentError(
                    f"failed to unregister '{repository_path}', repository not found"
                )
            repository.paths = [p for p in repository.paths if p != path]
            repository.mappings = {
                name: found for name, found in repository.mappings.items() if found[0] != path
            }
        return self

    def poll_model_repository(self) -> Server:
        """Poll model repository for changes.

        Only available if ModelControlMode.POLL is enabled: loads new and changed models and
        unloads removed ones.

        Returns
        -------
        Server

        Raises
        ------
        UnavailableError
            If the control mode is not POLL.
        """
        core = self._require_core()
        if core.options.model_control_mode is not CoreControlMode.POLL:
            raise UnavailableError("polling is disabled")
        with translate_errors():
            core.poll_model_repository()
        return self


def _check_startup(core: CoreServer) -> None:
    """Raise if a model the core tried to load at startup failed (``exit_on_error``)."""
    failed = {
        row["name"]: row.get("reason", "")
        for row in core.repository_index()
        if row.get("state") == "UNAVAILABLE"
    }
    if core.options.model_control_mode is CoreControlMode.EXPLICIT:
        for name in core.options.startup_models:
            if name != "*" and name not in failed and not core.model_ready(name):
                failed[name] = "failed to poll from model repository"
    if failed:
        details = "; ".join(f"'{name}': {reason}" for name, reason in sorted(failed.items()))
        raise InternalError(f"failed to load all models: {details}")
