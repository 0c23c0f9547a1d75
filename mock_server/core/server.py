"""The server core: model lifecycle, repository control modes and the inference entry point.

:class:`CoreServer` owns the repository, the loaded model versions and their statistics.
Frontends (HTTP, gRPC, the in-process API) call it with core types and map its
:class:`~mock_server.core.errors.ServerError` kinds to their status codes.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonclient._proto import model_config_pb2 as mc

from .. import __version__
from . import config as cfg
from .config_checks import validate_config
from .config_json import config_from_json, config_to_json
from .errors import ErrorKind, ServerError
from .instances import ModelInstance, ModelVersion, instance_specs
from .repository import ModelSource, Repository, materialize_override, select_versions
from .settings import LogSettings, TraceSettings
from .shm import SharedMemoryRegistry
from .stats import ModelStats, StatsRegistry, StatsSnapshot
from .types import InferRequest, InferResponse
from .validation import validate_request

__all__ = ["CoreServer", "ModelControlMode", "ModelState", "ServerOptions"]

log = logging.getLogger("mock_server.core")

#: Extensions the core implements, whatever the frontend.
CORE_EXTENSIONS = [
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "statistics",
    "parameters",
]


#: Triton's order of the extension list in server metadata.
EXTENSION_ORDER = (
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "parameters",
    "statistics",
    "trace",
    "logging",
)


class ModelControlMode(enum.Enum):
    """How the set of loaded models is decided (Triton's ``--model-control-mode``)."""

    NONE = "none"
    POLL = "poll"
    EXPLICIT = "explicit"


class ModelState(enum.Enum):
    """Lifecycle state of one model version, as the repository index reports it."""

    LOADING = "LOADING"
    READY = "READY"
    UNLOADING = "UNLOADING"
    UNAVAILABLE = "UNAVAILABLE"


@dataclass
class ServerOptions:
    """Options of :class:`CoreServer`.

    Attributes
    ----------
    model_repository : list of pathlib.Path
        Repository folders.
    model_control_mode : ModelControlMode
        NONE loads everything at start; POLL also rescans every ``repository_poll_secs``;
        EXPLICIT loads ``startup_models`` at start and the rest on request.
    startup_models : list of str
        Models to load at start in EXPLICIT mode; ``"*"`` means all.
    repository_poll_secs : float
        Rescan interval in POLL mode; 0 polls only on request (``poll_model_repository``).
    strict_readiness : bool
        Whether the server is ready only when every model it tried to load at start is ready.
    exit_timeout_secs : float
        How long unloading waits for in-flight requests.
    server_id : str
        Name reported by server metadata.
    has_gpu : bool or None
        Whether KIND_GPU instances can be created; None detects a CUDA device.
    trace_file : str
        Where traces are written; reported by the trace settings (read-only over the
        network).
    trace_settings : dict
        Initial global trace settings in their HTTP form (e.g. ``{"trace_level":
        ["TIMESTAMPS"], "trace_rate": "1"}``), as ``--trace-config`` gives them.
    log_file : str
        Log file reported by the log settings ("" = console).
    strict_model_config : bool
        True: every model needs a complete config.pbtxt; models' ``auto_complete_config`` is
        not called (Triton's ``--strict-model-config``).
    allow_client_shm : bool
        Whether clients may register shared-memory regions (Triton's ``--allow-client-shm``).
    shm_copy_inputs : bool
        Copy shared-memory inputs out of the client's region instead of handing models
        zero-copy views (see :mod:`mock_server.core.shm`).
    """

    model_repository: list[Path] = field(default_factory=list)
    model_control_mode: ModelControlMode = ModelControlMode.NONE
    startup_models: list[str] = field(default_factory=list)
    repository_poll_secs: float = 15.0
    strict_readiness: bool = True
    exit_timeout_secs: float = 30.0
    server_id: str = "triton"
    has_gpu: bool | None = None
    trace_file: str = ""
    trace_settings: dict[str, Any] = field(default_factory=dict)
    log_file: str = ""
    strict_model_config: bool = False
    allow_client_shm: bool = True
    shm_copy_inputs: bool = False


def detect_gpu() -> bool:
    """True when cuda-python reports at least one CUDA device."""
    try:
        from cuda.bindings import runtime
    except ImportError:
        try:
            from cuda import cudart as runtime  # type: ignore[no-redef,unused-ignore]
        except ImportError:
            return False
    try:
        err, count = runtime.cudaGetDeviceCount()
    except Exception:
        return False
    return int(err) == 0 and int(count) > 0


def _same_model(old: mc.ModelConfig, new: mc.ModelConfig) -> bool:
    """Whether two configurations differ at most in what Triton changes without a reload
    (its ``ConfigChangeRequiresReload``: instance groups and the version policy)."""
    a, b = mc.ModelConfig(), mc.ModelConfig()
    a.CopyFrom(old)
    b.CopyFrom(new)
    for config in (a, b):
        config.ClearField("instance_group")
        config.ClearField("version_policy")
    return a == b


def _files_fingerprint(fingerprint: Any) -> str:
    """The part of a source's fingerprint that covers its files (the rest is its config's)."""
    return str(fingerprint).partition(":")[0]


@dataclass
class _Entry:
    """Everything the server knows about one model name."""

    name: str
    source: ModelSource | None = None
    config: mc.ModelConfig | None = None
    versions: dict[int, ModelVersion] = field(default_factory=dict)
    states: dict[int, tuple[ModelState, str]] = field(default_factory=dict)
    fingerprint: Any = None
    override: ModelSource | None = None


def _load_failure(name: str, version: int, error: ServerError) -> ServerError:
    """Triton's answer to a load request whose model version failed to load."""
    return ServerError.invalid_arg(
        f"load failed for model '{name}': version {version} is at UNAVAILABLE state: "
        f"{error.status_text()};\n"
    )


class CoreServer:
    """The wire-independent server.

    Parameters
    ----------
    options : ServerOptions
        Repository folders, control mode and the other options.
    """

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.has_gpu = detect_gpu() if options.has_gpu is None else options.has_gpu
        self.repository = Repository([Path(p) for p in options.model_repository])
        self.stats = StatsRegistry()
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.RLock()
        self._load_locks: dict[str, threading.Lock] = {}
        self._started = False
        self._stopped = False
        self._startup_ok = True
        self._poller: threading.Thread | None = None
        self._stop_event = threading.Event()
        self.runtime = _Runtime(self)
        #: Client shared-memory regions (system and CUDA).
        self.shm = SharedMemoryRegistry(
            has_gpu=self.has_gpu,
            allow_client_shm=options.allow_client_shm,
            copy_inputs=options.shm_copy_inputs,
        )
        #: Log settings (logging extension).
        self.log_settings = LogSettings(options.log_file)
        self._trace = TraceSettings(options.trace_file)
        if options.trace_settings:
            self._trace.update(options.trace_settings)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Load the startup models for the control mode and, in POLL mode, start polling."""
        mode = self.options.model_control_mode
        sources = self.repository.scan()
        if mode is ModelControlMode.EXPLICIT:
            wanted = self.options.startup_models
            names = sorted(sources) if "*" in wanted else list(wanted)
        else:
            names = sorted(sources)
        ok = True
        for name in names:
            try:
                self._load(name, sources=sources)
            except ServerError as exc:
                log.error("failed to load '%s': %s", name, exc.message)
                ok = False
        self._startup_ok = ok
        self._started = True
        if mode is ModelControlMode.POLL and self.options.repository_poll_secs > 0:
            self._poller = threading.Thread(target=self._poll_loop, name="repo-poll", daemon=True)
            self._poller.start()

    def stop(self) -> None:
        """Unload every model (waiting for in-flight requests) and stop polling."""
        self._stop_event.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
        with self._lock:
            names = list(self._entries)
        for name in names:
            self._unload(name)
        self.repository.cleanup()
        self.shm.close()
        self._trace.flush()
        self._stopped = True

    def live(self) -> bool:
        """Whether the server is up (started and not stopped)."""
        return self._started and not self._stopped

    def drain(self) -> None:
        """Report not ready from now on (the server is about to stop), as Triton does on
        shutdown: load balancers and health-checking clients stop sending new work while the
        calls in progress finish."""
        self._stop_event.set()

    def ready(self) -> bool:
        """Whether the server is ready for inference (not once it is draining)."""
        if not self.live() or self._stop_event.is_set():
            return False
        return self._startup_ok or not self.options.strict_readiness

    def metadata(self, frontend_extensions: tuple[str, ...] = ()) -> dict[str, Any]:
        """Server name, version and extensions: the core's plus ``frontend_extensions``,
        in the order Triton reports them (unknown tokens follow in their given order)."""
        available = list(dict.fromkeys([*CORE_EXTENSIONS, *frontend_extensions]))
        ordered = [e for e in EXTENSION_ORDER if e in available]
        ordered += [e for e in available if e not in ordered]
        return {"name": self.options.server_id, "version": __version__, "extensions": ordered}

    # -- lookup --------------------------------------------------------------------------
    def _entry(self, name: str) -> _Entry:
        entry = self._entries.get(name)
        if entry is None:
            raise ServerError.not_found(f"Request for unknown model: '{name}' is not found")
        return entry

    def model_version(self, name: str, version: int = -1) -> ModelVersion:
        """The ready version ``version`` of ``name`` (-1: the highest ready version)."""
        with self._lock:
            entry = self._entry(name)
            if version < 0:
                if not entry.versions:
                    raise ServerError.not_found(
                        f"Request for unknown model: '{name}' has no available versions"
                    )
                return entry.versions[max(entry.versions)]
            found = entry.versions.get(version)
            if found is None:
                raise ServerError.not_found(
                    f"Request for unknown model: '{name}' version {version} is not found"
                )
            return found

    def loaded_versions(self) -> list[ModelVersion]:
        """Every loaded model version, ordered by name and version."""
        with self._lock:
            return [
                entry.versions[v]
                for name, entry in sorted(self._entries.items())
                for v in sorted(entry.versions)
            ]

    def model_ready(self, name: str, version: int = -1) -> bool:
        """Whether the model (version) is loaded and ready."""
        try:
            self.model_version(name, version)
        except ServerError:
            return False
        return True

    def model_config(self, name: str, version: int = -1) -> mc.ModelConfig:
        """The completed configuration of a ready model version."""
        return self.model_version(name, version).config

    def model_metadata(self, name: str, version: int = -1) -> dict[str, Any]:
        """Model metadata (name, versions, platform, inputs, outputs)."""
        found = self.model_version(name, version)
        with self._lock:
            versions = sorted(self._entries[name].versions)
        return cfg.model_metadata(found.config, [version] if version >= 0 else versions)

    def repository_index(self, ready_only: bool = False) -> list[dict[str, Any]]:
        """One entry per model version known to the server (and one per unloaded model)."""
        with self._lock:
            sources = self.repository.scan()
            # A model that only ever came from the files of a load request is not listed (as
            # in Triton: the index lists what the repositories hold and what was loaded from
            # them).
            roots = {Path(path) for path in self.repository.paths}
            known = {
                name
                for name, entry in self._entries.items()
                if entry.source is None or Path(entry.source.repository) in roots
            }
            names = sorted(set(sources) | known)
            rows: list[dict[str, Any]] = []
            for name in names:
                entry = self._entries.get(name)
                if entry is None or not entry.states:
                    if not ready_only:
                        rows.append({"name": name})
                    continue
                for version, (state, reason) in sorted(entry.states.items()):
                    if ready_only and state is not ModelState.READY:
                        continue
                    rows.append(
                        {
                            "name": name,
                            "version": str(version),
                            "state": state.value,
                            "reason": reason,
                        }
                    )
            return rows

    # -- load / unload -------------------------------------------------------------------
    def _check_explicit(self, what: str) -> None:
        if self.options.model_control_mode is not ModelControlMode.EXPLICIT:
            # Triton's words, in every mode other than EXPLICIT (NONE included).
            raise ServerError.unavailable(
                "explicit model load / unload is not allowed if polling is enabled"
            )

    def load_model(
        self, name: str, config: str | None = None, files: dict[str, bytes] | None = None
    ) -> None:
        """Load or reload ``name`` (EXPLICIT mode), optionally with an override config (JSON)
        and override files (``file:<path>`` → content)."""
        self._check_explicit("load")
        self._load(name, override_config=config, files=files or {})

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        """Unload ``name`` (EXPLICIT mode).  ``unload_dependents`` would also unload ensembles
        that use it; this server has no ensembles, so it changes nothing."""
        self._check_explicit("unload")
        self._unload(name)

    def poll_model_repository(self) -> None:
        """Rescan the repositories now: load new and changed models, unload removed ones."""
        if self.options.model_control_mode is ModelControlMode.EXPLICIT:
            raise ServerError.unavailable("polling is not enabled in EXPLICIT model control mode")
        self._poll_once()

    def _poll_loop(self) -> None:
        while not self._stop_event.wait(self.options.repository_poll_secs):
            try:
                self._poll_once()
            except Exception:
                log.exception("repository poll failed")

    def _poll_once(self) -> None:
        sources = self.repository.scan()
        with self._lock:
            loaded = dict(self._entries)
        for name in sorted(set(loaded) - set(sources)):
            self._unload(name)
        for name, source in sorted(sources.items()):
            entry = loaded.get(name)
            if entry is None or entry.fingerprint != source.fingerprint:
                try:
                    self._load(name, sources=sources)
                except ServerError as exc:
                    log.error("failed to load '%s': %s", name, exc.message)

    def _load_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._load_locks.setdefault(name, threading.Lock())

    def _load(
        self,
        name: str,
        *,
        sources: dict[str, ModelSource] | None = None,
        override_config: str | None = None,
        files: dict[str, bytes] | None = None,
    ) -> None:
        with self._load_lock(name):
            self._load_locked(name, sources, override_config, files or {})

    def _resolve_source(
        self,
        name: str,
        sources: dict[str, ModelSource] | None,
        override_config: str | None,
        files: dict[str, bytes],
    ) -> ModelSource:
        if override_config is not None or files:
            return materialize_override(name, override_config, files, repository=self.repository)
        if sources is None:
            sources = self.repository.scan()
        source = sources.get(name)
        if source is None:
            raise ServerError.internal(
                f"failed to load '{name}', failed to poll from model repository"
            )
        return source

    def _load_locked(
        self,
        name: str,
        sources: dict[str, ModelSource] | None,
        override_config: str | None,
        files: dict[str, bytes],
    ) -> None:
        from ..python_backend.backend import PythonBackendModel

        plain = sources is None and override_config is None and not files
        if plain:
            with self._lock:
                current = self._entries.get(name)
                if current is not None and current.override is not None and current.versions:
                    # Triton keeps a model loaded with an override config when a plain load
                    # request follows: its repository files did not change since.
                    return
        source = self._resolve_source(name, sources, override_config, files)
        if plain:
            with self._lock:
                current = self._entries.get(name)
                if (
                    current is not None
                    and current.versions
                    and current.fingerprint == source.fingerprint
                ):
                    # Nor does Triton reload a loaded model whose files did not change: it
                    # keeps serving, statistics included.
                    return
        with self._lock:
            entry = self._entries.setdefault(name, _Entry(name))
            old_versions = dict(entry.versions)
        try:
            if source.config_error is not None:
                raise source.config_error
            try:
                config = self._complete(name, source, PythonBackendModel)
            except ServerError as exc:
                # Auto-completion runs the backend: Triton reports its failure as a failed load.
                version = max(source.available_versions, default=1)
                raise _load_failure(name, version, exc) from exc
            versions = select_versions(config, source.available_versions)
            if not versions:
                raise ServerError.invalid_arg(
                    f"at least one version must be available under the version policy of "
                    f"model '{name}'"
                )
        except ServerError as exc:
            self._record_failure(entry, source, exc, old_versions)
            raise
        same_model = False
        if override_config is not None and not files:
            with self._lock:
                if (
                    entry.versions
                    and entry.config is not None
                    and _files_fingerprint(entry.fingerprint)
                    == _files_fingerprint(source.fingerprint)
                ):
                    if entry.config == config:
                        # Nor when an override config changes nothing (the same completed
                        # configuration, the same files): the model keeps serving as it is.
                        return
                    # Triton updates a model in place when only its instance groups or its
                    # version policy change: its statistics carry on.
                    same_model = _same_model(entry.config, config)
        with self._lock:
            for version in versions:
                if version not in old_versions:
                    entry.states[version] = (ModelState.LOADING, "")
        new_versions: dict[int, ModelVersion] = {}
        new_stats: list[ModelStats] = []
        try:
            for version in versions:
                kept = old_versions[version].stats if version in old_versions else None
                new_stats.append(
                    kept
                    if same_model and isinstance(kept, ModelStats)
                    else self.stats.new(name, version)
                )
                new_versions[version] = self._start_version(
                    name, version, config, source, PythonBackendModel, new_stats[-1]
                )
        except ServerError as exc:
            for started in new_versions.values():
                started.stop(self.options.exit_timeout_secs)
            self._record_failure(entry, source, exc, old_versions, versions)
            failed = next((v for v in versions if v not in new_versions), versions[0])
            raise _load_failure(name, failed, exc) from exc
        with self._lock:
            if entry.override is not None and entry.override is not source:
                entry.override.cleanup()
            entry.override = source if (override_config is not None or files) else None
            entry.source = source
            entry.config = config
            entry.fingerprint = source.fingerprint
            entry.versions = new_versions
            entry.states = {v: (ModelState.READY, "") for v in new_versions}
            for stats in new_stats:
                self.stats.publish(stats)
        # Versions that were replaced or dropped by the new policy go after the swap, so the
        # model keeps serving throughout a reload.
        for version, old in old_versions.items():
            self._stop_version(name, version, old, record=False, keep_stats=old.stats in new_stats)

    def _complete(self, name: str, source: ModelSource, backend: Any) -> mc.ModelConfig:
        raw = source.config if source.config is not None else mc.ModelConfig(name=name)
        if not raw.backend and not raw.platform:
            raw.backend = "python"
        if raw.backend != "python":
            raise ServerError.invalid_arg(
                f"model '{name}' uses backend '{raw.backend or raw.platform}'; this server runs "
                'only Python-backend models (backend: "python")'
            )
        filename = raw.default_model_filename or "model.py"
        if not source.available_versions:
            raise ServerError.invalid_arg(
                f"at least one version must be available under the version policy of model '{name}'"
            )
        version = max(source.available_versions)
        if self.options.strict_model_config:
            if source.config is None:
                raise ServerError.invalid_arg(
                    f"model '{name}' has no config.pbtxt and strict model config is enabled "
                    "(--strict-model-config): auto-completion is off"
                )
            completed_json = config_to_json(raw)
        else:
            completed_json = backend.auto_complete(
                source.path, version, config_to_json(raw), filename
            )
        config = cfg.complete_config(
            config_from_json(completed_json, f"{name} (auto-completed)"),
            name,
            has_gpu=self.has_gpu,
        )
        validate_config(config)
        if config.sequence_batching.state:
            raise ServerError.unsupported(
                f"model '{name}': implicit sequence state (sequence_batching.state) is not "
                "supported by this server"
            )
        return config

    def _start_version(
        self,
        name: str,
        version: int,
        config: mc.ModelConfig,
        source: ModelSource,
        backend: Any,
        stats: ModelStats,
    ) -> ModelVersion:
        filename = config.default_model_filename or "model.py"
        model = backend(name, source.path, version, config_to_json(config), filename, self.runtime)
        instances: list[ModelInstance] = []
        try:
            for spec in instance_specs(config):
                if spec.kind == "GPU" and not self.has_gpu:
                    raise ServerError.invalid_arg(
                        f"instance group of model '{name}' asks for KIND_GPU but no GPU is "
                        "available"
                    )
                instances.append(model.create_instance(spec.name, spec.kind, spec.device_id))
        except ServerError:
            for instance in instances:
                instance.finalize()
            raise
        except Exception as exc:
            for instance in instances:
                instance.finalize()
            raise ServerError.internal(f"failed to load model '{name}': {exc}") from exc
        return ModelVersion(
            name,
            version,
            config,
            instances,
            stats,
            source.path,
            self._trace,
            failures=self.stats.failures(name, version),
        )

    def _record_failure(
        self,
        entry: _Entry,
        source: ModelSource,
        error: ServerError,
        old_versions: dict[int, ModelVersion],
        versions: list[int] | None = None,
    ) -> None:
        with self._lock:
            failed = versions or source.available_versions or [1]
            for version in failed:
                if version not in old_versions:
                    entry.states[version] = (ModelState.UNAVAILABLE, error.message)
            # A failed override source was never adopted: its temporary folder can go (the
            # versions still serving, if any, run from the previous source).
            if source.override_dir is not None:
                source.cleanup()

    def _stop_version(
        self, name: str, version: int, model: ModelVersion, record: bool, keep_stats: bool = False
    ) -> None:
        if record:
            with self._lock:
                self._entries[name].states[version] = (ModelState.UNLOADING, "")
        model.stop(self.options.exit_timeout_secs)
        if not keep_stats:
            self.stats.remove(name, version, only=model.stats)
        if record:
            with self._lock:
                self._entries[name].states[version] = (ModelState.UNAVAILABLE, "unloaded")

    def _unload(self, name: str) -> None:
        with self._load_lock(name):
            with self._lock:
                entry = self._entries.get(name)
                if entry is None:
                    return  # unloading an unknown model succeeds, as in Triton
                versions = dict(entry.versions)
                entry.versions = {}
            for version, model in versions.items():
                self._stop_version(name, version, model, record=True)
            with self._lock:
                if entry.override is not None:
                    entry.override.cleanup()
                    entry.override = None
                entry.fingerprint = None

    # -- trace settings ------------------------------------------------------------------
    def _check_trace_model(self, model: str | None) -> None:
        if model:
            with self._lock:
                known = model in self._entries and bool(self._entries[model].versions)
            if not known:
                raise ServerError.invalid_arg(f"Request for unknown model : {model}")

    def trace_settings(self, model: str | None = None) -> dict[str, Any]:
        """Trace settings, globally or for one model (HTTP form: strings, level list)."""
        self._check_trace_model(model)
        return self._trace.get(model)

    def update_trace_settings(
        self, changes: dict[str, Any], model: str | None = None
    ) -> dict[str, Any]:
        """Update trace settings (None clears a per-model override); returns the new ones."""
        self._check_trace_model(model)
        return self._trace.update(changes, model)

    # -- inference -----------------------------------------------------------------------
    def infer(self, request: InferRequest) -> None:
        """Validate and queue ``request``; responses arrive through its callback.

        Raises
        ------
        ServerError
            If the model is unknown or not ready, or the request is invalid; nothing is queued
            then and the callback is not called.
        """
        model = self.model_version(request.model_name, request.model_version)
        validate_request(request, model.checks, version=model.version)
        model.enqueue(request, model.checks.batch_size_of(request))

    def statistics(self, name: str = "", version: int = -1) -> list[StatsSnapshot]:
        """Statistics of every loaded model version, or of one model (version), by name and
        version (errors as :meth:`StatsRegistry.collect`)."""
        found = self.stats.collect(name or None, version if version >= 0 else None)
        return [model_stats.snapshot() for model_stats in found]

    def infer_iter(
        self, request: InferRequest, timeout_s: float | None = None
    ) -> Iterator[InferResponse]:
        """Run ``request`` and yield its responses in order, the last one final."""
        responses: queue.Queue[InferResponse] = queue.Queue()
        request.response_callback = responses.put
        self.infer(request)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                response = responses.get(timeout=remaining)
            except queue.Empty:
                request.cancel()
                raise ServerError(
                    ErrorKind.UNAVAILABLE, f"request to model '{request.model_name}' timed out"
                ) from None
            yield response
            if response.final:
                return


class _Runtime:
    """The hooks Python-backend models use to reach the server (BLS and model control)."""

    def __init__(self, server: CoreServer) -> None:
        self._server = server

    def infer(self, request: InferRequest) -> Iterator[InferResponse]:
        timeout = request.timeout_us / 1e6 if request.timeout_us else None
        return self._server.infer_iter(request, timeout)

    def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        return self._server.model_ready(model_name, int(model_version) if model_version else -1)

    def load_model(
        self, model_name: str, config: str = "", files: dict[str, bytes] | None = None
    ) -> None:
        self._server.load_model(model_name, config or None, files)

    def unload_model(self, model_name: str) -> None:
        self._server.unload_model(model_name)
