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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonclient._proto import model_config_pb2 as mc

from .._version import __version__
from . import config as cfg
from .config_checks import validate_config
from .config_json import config_from_json, config_to_json
from .ensemble import EnsembleVersion
from .ensemble_checks import check_composition, composing_models
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
    python_backend_isolation : str
        How Python-backend model instances run unless a model's ``python_backend_isolation``
        parameter says otherwise: ``"process"`` (each in a stub process of its own, as in
        Triton) or ``"thread"`` (in the server's process).
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
    python_backend_isolation: str = "process"


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


#: A loaded version: a model's (instances and scheduler) or an ensemble's.
LoadedVersion = ModelVersion | EnsembleVersion


@dataclass
class _Entry:
    """Everything the server knows about one model name.

    ``in_graph``, ``explicit`` and ``composing`` are Triton's dependency graph: a model is in
    it from the moment a load (of it, or of an ensemble using it) polls it until it is
    unloaded; ``explicit`` tells whether it was asked for (not only pulled in by an ensemble);
    ``composing`` names the models an ensemble runs (with their required versions).  Ensembles
    in the graph are re-evaluated whenever a model they run is loaded or unloaded.
    """

    name: str
    source: ModelSource | None = None
    config: mc.ModelConfig | None = None
    versions: dict[int, LoadedVersion] = field(default_factory=dict)
    states: dict[int, tuple[ModelState, str]] = field(default_factory=dict)
    fingerprint: Any = None
    override: ModelSource | None = None
    in_graph: bool = False
    explicit: bool = False
    composing: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: False after a load found no version to load: Triton then lists no row for the model.
    listed: bool = True


class LoadFailure(ServerError):
    """A model failed to load: Triton's answer to the load request, with the reason kept apart.

    Parameters
    ----------
    name : str
        The model.
    reason : str
        Why, as Triton states it for the model (``version 1 is at UNAVAILABLE state: ...;``, or
        an ensemble's dependency problem); ensembles that use the model quote it.
    invalid : bool
        The model is an ensemble whose graph is at fault (Triton's invalid dependency node),
        rather than a model that failed to load.
    cycle : str or None
        The ensemble a circular dependency starts from, while the failure travels back to it.

    Attributes
    ----------
    unlisted : bool
        The load found no version to load (the model has no row in the repository index).
    """

    def __init__(
        self, name: str, reason: str, *, invalid: bool = False, cycle: str | None = None
    ) -> None:
        super().__init__(ErrorKind.INVALID_ARG, f"load failed for model '{name}': {reason}\n")
        self.reason = reason
        self.invalid = invalid
        self.cycle = cycle
        self.unlisted = False


def _load_failure(name: str, version: int, error: ServerError) -> LoadFailure:
    """Triton's answer to a load request whose model version failed to load."""
    return LoadFailure(name, f"version {version} is at UNAVAILABLE state: {error.status_text()};")


def _no_version(name: str) -> LoadFailure:
    return LoadFailure(
        name, f"at least one version must be available under the version policy of model '{name}'"
    )


def _poll_failure(name: str) -> ServerError:
    """Triton's answer to a load request for a model it cannot poll (the reason is logged)."""
    return ServerError.internal(f"failed to load '{name}', failed to poll from model repository")


def _is_ensemble(config: mc.ModelConfig | None) -> bool:
    return config is not None and (
        config.HasField("ensemble_scheduling") or config.platform == cfg.ENSEMBLE_PLATFORM
    )


def _load_order(sources: dict[str, ModelSource], names: list[str]) -> list[str]:
    """``names`` with ensembles last, so that their composing models load first on their own
    (an ensemble loads the ones it finds unloaded anyway)."""
    return sorted(names, key=lambda n: (n in sources and _is_ensemble(sources[n].config), n))


@dataclass
class _Operation:
    """One load or unload request, across the models it touches.

    ``visited`` are the models it loaded (or found loaded), ``failed`` why some did not load,
    ``changed`` those it (re)loaded or unloaded (their ensembles are re-evaluated at the end),
    ``stack`` the ensembles being loaded, outermost first (to find cycles).
    """

    visited: set[str] = field(default_factory=set)
    failed: dict[str, ServerError] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)


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
        self._startup_failures: dict[str, str] = {}
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
        self._trace = TraceSettings(options.trace_file, options.trace_settings)

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
        op = _Operation()
        try:
            for name in _load_order(sources, names):
                try:
                    self._load(name, sources=sources, op=op)
                except ServerError as exc:
                    log.error("failed to load '%s': %s", name, exc.message)
                    self._startup_failures[name] = exc.message
                    ok = False
        finally:
            self._reevaluate(op)
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
        op = _Operation()
        for name in self._unload_order():
            self._unload(name, op)
        self.repository.cleanup()
        self.shm.close()
        self._trace.flush()
        self._stopped = True

    def startup_failures(self) -> dict[str, str]:
        """The models that failed to load at start-up, with the reason of each."""
        return dict(self._startup_failures)

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

    def model_version(self, name: str, version: int = -1) -> LoadedVersion:
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

    def loaded_versions(self) -> list[LoadedVersion]:
        """Every loaded model version, ordered by name and version."""
        with self._lock:
            return [
                entry.versions[v]
                for name, entry in sorted(self._entries.items())
                for v in sorted(entry.versions)
            ]

    def model_ready(self, name: str, version: int = -1) -> bool:
        """Whether the model (version) is loaded and ready: its instances are asked, as
        current Triton asks its backends (a Python model's stub must be alive and its own
        ``is_model_ready()``, if any, say True)."""
        try:
            found = self.model_version(name, version)
        except ServerError:
            return False
        return found.ready()

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
                if entry is not None and not entry.listed and not entry.states:
                    continue  # a load found no version of it: Triton lists nothing
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
        and override files (``file:<path>`` → content).

        An ensemble's composing models load with it (those not loaded, or changed on disk);
        ensembles that run a model that (re)loads here are reloaded after it, as in Triton.
        """
        self._check_explicit("load")
        self._operation(
            lambda op: self._load(name, override_config=config, files=files or {}, op=op)
        )

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        """Unload ``name`` (EXPLICIT mode).

        Ensembles that run it are unloaded with it (and load again when it does).  With
        ``unload_dependents``, unloading an ensemble also unloads the composing models it
        pulled in that were not loaded explicitly and that no other ensemble runs (Triton's
        cascading unload).
        """
        self._check_explicit("unload")
        self._operation(lambda op: self._unload(name, op, cascade=unload_dependents))

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
            known = dict(self._entries)
        op = _Operation()
        try:
            for name in sorted(set(known) - set(sources)):
                self._unload(name, op)
            for name in _load_order(sources, sorted(sources)):
                entry = known.get(name)
                if entry is None or entry.fingerprint != sources[name].fingerprint:
                    try:
                        self._load(name, sources=sources, op=op)
                    except ServerError as exc:
                        log.error("failed to load '%s': %s", name, exc.message)
        finally:
            self._reevaluate(op)

    def _load_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._load_locks.setdefault(name, threading.Lock())

    def _operation(self, action: Callable[[_Operation], None]) -> None:
        """Run one load or unload request, then re-evaluate the ensembles it affects."""
        op = _Operation()
        try:
            action(op)
        finally:
            self._reevaluate(op)

    def _load(
        self,
        name: str,
        *,
        op: _Operation,
        sources: dict[str, ModelSource] | None = None,
        override_config: str | None = None,
        files: dict[str, bytes] | None = None,
        explicit: bool = True,
    ) -> None:
        """Load ``name`` within ``op``; a model the operation already handled is not loaded
        again (its failure, if it failed, is raised again)."""
        overridden = override_config is not None or bool(files)
        if name in op.failed and not overridden:
            raise op.failed[name]
        if name in op.visited and not overridden:
            if explicit:
                with self._lock:
                    entry = self._entries.get(name)
                    if entry is not None:
                        entry.explicit = True
            return
        op.visited.add(name)
        try:
            with self._load_lock(name):
                self._load_locked(name, sources, override_config, files or {}, explicit, op)
        except ServerError as exc:
            op.failed[name] = exc
            raise

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
            raise _poll_failure(name)
        return source

    def _load_locked(
        self,
        name: str,
        sources: dict[str, ModelSource] | None,
        override_config: str | None,
        files: dict[str, bytes],
        explicit: bool,
        op: _Operation,
    ) -> None:
        plain = sources is None and override_config is None and not files
        if plain:
            with self._lock:
                current = self._entries.get(name)
                if current is not None and current.override is not None and current.versions:
                    # Triton keeps a model loaded with an override config when a plain load
                    # request follows: its repository files did not change since.
                    current.in_graph = True
                    current.explicit = current.explicit or explicit
                    return
        source = self._resolve_source(name, sources, override_config, files)
        if source.config_error is not None and sources is None:
            # A load request for a model its repository cannot give (Triton's poll failure):
            # the reason goes to the log only, and the model's state does not change.
            log.error("failed to poll model '%s': %s", name, source.config_error.message)
            raise _poll_failure(name)
        with self._lock:
            entry = self._entries.setdefault(name, _Entry(name))
            entry.in_graph = True
            entry.explicit = entry.explicit or explicit
            old_versions = dict(entry.versions)
        if source.config_error is None and _is_ensemble(source.config):
            self._load_ensemble(name, entry, source, plain, op)
            return
        if (
            plain
            and old_versions
            and entry.fingerprint == source.fingerprint
            and source.config_error is None
        ):
            # Nor does Triton reload a loaded model whose files did not change: it keeps
            # serving, statistics included.
            return
        self._load_model(name, entry, source, old_versions, override_config, files, op)

    def _load_model(
        self,
        name: str,
        entry: _Entry,
        source: ModelSource,
        old_versions: dict[int, LoadedVersion],
        override_config: str | None,
        files: dict[str, bytes],
        op: _Operation,
    ) -> None:
        """Load the versions of a Python-backend model (``_load_locked`` checked the rest)."""
        from ..python_backend.backend import PythonBackendModel

        try:
            if source.config_error is not None:
                raise source.config_error
            if not source.available_versions:
                raise self._versionless(entry, source)
            try:
                config = self._complete(name, source, PythonBackendModel)
            except ServerError as exc:
                # Auto-completion runs the backend: Triton reports its failure as a failed load.
                version = max(source.available_versions, default=1)
                raise _load_failure(name, version, exc) from exc
            versions = select_versions(config, source.available_versions)
        except LoadFailure as exc:
            if exc.unlisted:
                raise
            self._record_failure(entry, source, exc, old_versions)
            raise
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
        new_versions: dict[int, LoadedVersion] = {}
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
        self._adopt(entry, source, config, new_versions, new_stats, old_versions)
        op.changed.append(name)

    def _adopt(
        self,
        entry: _Entry,
        source: ModelSource,
        config: mc.ModelConfig,
        new_versions: dict[int, LoadedVersion],
        new_stats: list[ModelStats],
        old_versions: dict[int, LoadedVersion],
    ) -> None:
        """Swap newly started versions in, then stop the ones they replace."""
        with self._lock:
            if entry.override is not None and entry.override is not source:
                entry.override.cleanup()
            entry.override = source if source.is_override else None
            entry.source = source
            entry.config = config
            entry.fingerprint = source.fingerprint
            entry.versions = new_versions
            entry.states = {v: (ModelState.READY, "") for v in new_versions}
            entry.listed = True
            for stats in new_stats:
                self.stats.publish(stats)
        # Versions that were replaced or dropped by the new policy go after the swap, so the
        # model keeps serving throughout a reload.
        for version, old in old_versions.items():
            self._stop_version(
                entry.name, version, old, record=False, keep_stats=old.stats in new_stats
            )

    def _versionless(self, entry: _Entry, source: ModelSource) -> LoadFailure:
        """The failure of a load that finds no version folder: Triton then lists no version,
        nor the model itself, in the repository index (until a load succeeds)."""
        with self._lock:
            if not entry.versions:
                entry.states = {}
                entry.listed = False
        if source.override_dir is not None:
            source.cleanup()
        failure = _no_version(entry.name)
        failure.unlisted = True
        return failure

    # -- ensembles -----------------------------------------------------------------------
    def _load_ensemble(
        self, name: str, entry: _Entry, source: ModelSource, plain: bool, op: _Operation
    ) -> None:
        """Load an ensemble: its composing models first (Triton's polling chain), then its
        versions, unless nothing changed."""
        assert source.config is not None
        with self._lock:
            entry.composing = composing_models(source.config)
            # Kept even if the load fails: the ensemble stays in the graph, and loads when the
            # models it misses do.
            entry.source = source
            unchanged = plain and bool(entry.versions) and entry.fingerprint == source.fingerprint
        op.stack.append(name)
        try:
            composing = self._composing_configs(name, entry, op, poll=True)
        except LoadFailure as exc:
            self._invalidate(entry, exc, op)
            raise
        finally:
            op.stack.pop()
        if unchanged and not any(model in op.changed for model in entry.composing):
            return
        self._start_ensemble(entry, source, composing, op)

    def _composing_configs(
        self, name: str, entry: _Entry, op: _Operation, *, poll: bool
    ) -> dict[str, mc.ModelConfig]:
        """The configurations of an ensemble's composing models, loading them first when
        ``poll`` (a load request); otherwise only what is loaded now counts (an ensemble
        re-evaluated after a composing model changed)."""
        missing = None
        for model in entry.composing:
            if model in op.stack:
                raise LoadFailure(
                    name,
                    f"circular dependency between ensembles: {model} -> ... -> {name} -> {model}",
                    invalid=True,
                    cycle=model,
                )
            if poll:
                try:
                    self._load(model, explicit=False, op=op)
                except LoadFailure:
                    pass  # reported below, after any missing model
                except ServerError:
                    missing = missing or model  # not in any repository, or cannot be read
            else:
                with self._lock:
                    known = self._entries.get(model)
                    if known is None or not known.in_graph:
                        missing = missing or model
        if missing is not None:
            raise LoadFailure(
                name,
                f"ensemble {name} contains models that are not available or ambiguous: {missing}",
                invalid=True,
            )
        configs: dict[str, mc.ModelConfig] = {}
        for model, versions in entry.composing.items():
            failure = op.failed.get(model)
            if isinstance(failure, LoadFailure):
                if failure.cycle is not None:
                    # Every ensemble of a cycle fails with the cycle (from its own start).
                    cycle = None if failure.cycle == name else failure.cycle
                    raise LoadFailure(name, failure.reason, invalid=True, cycle=cycle)
                if failure.invalid:
                    raise LoadFailure(
                        name,
                        f"ensemble '{name}' depends on '{model}' which is not valid. Model "
                        f"'{model}' failed with error: {failure.reason}",
                        invalid=True,
                    )
            with self._lock:
                known = self._entries.get(model)
                loaded = dict(known.versions) if known is not None else {}
            if not loaded:
                detail = (
                    f" Model '{model}' loading failed with error: {failure.reason}"
                    if isinstance(failure, LoadFailure)
                    else ""
                )
                raise LoadFailure(
                    name,
                    f"ensemble '{name}' depends on '{model}' which has no loaded version.{detail}",
                    invalid=True,
                )
            for version in versions:
                if version != -1 and version not in loaded:
                    raise LoadFailure(
                        name,
                        f"ensemble '{name}' depends on '{model}' whose required version "
                        f"{version} is not loaded.",
                        invalid=True,
                    )
            configs[model] = loaded[max(loaded)].config
        return configs

    def _start_ensemble(
        self,
        entry: _Entry,
        source: ModelSource,
        composing: dict[str, mc.ModelConfig],
        op: _Operation,
    ) -> None:
        """Check an ensemble against its composing models and start its versions."""
        name = entry.name
        assert source.config is not None
        with self._lock:
            old_versions = dict(entry.versions)
        if not source.available_versions:
            raise self._versionless(entry, source)
        version = max(source.available_versions)
        try:
            config = cfg.complete_config(source.config, name, has_gpu=self.has_gpu)
            validate_config(config)
        except ServerError as exc:
            self._record_failure(entry, source, exc, old_versions)
            raise _load_failure(name, version, exc) from exc
        try:
            decoupled = check_composition(config, composing)
        except ServerError as exc:
            failure = LoadFailure(name, exc.message, invalid=True)
            self._invalidate(entry, failure, op)
            raise failure from exc
        # Triton writes the decision into the configuration it serves.
        config.model_transaction_policy.decoupled = decoupled
        versions = select_versions(config, source.available_versions)
        new_stats = [self.stats.new(name, v) for v in versions]
        new_versions: dict[int, LoadedVersion] = {
            v: EnsembleVersion(
                name,
                v,
                config,
                source.path,
                stats,
                self.model_version,
                failures=self.stats.failures(name, v),
            )
            for v, stats in zip(versions, new_stats, strict=True)
        }
        self._adopt(entry, source, config, new_versions, new_stats, old_versions)
        op.changed.append(name)

    def _invalidate(self, entry: _Entry, failure: LoadFailure, op: _Operation) -> None:
        """An ensemble whose graph is at fault is unloaded (Triton unloads invalid nodes)."""
        log.error("%s", failure.reason)
        with self._lock:
            versions = dict(entry.versions)
            entry.versions = {}
        for version, model in versions.items():
            self._stop_version(entry.name, version, model, record=True)
        if versions:
            op.changed.append(entry.name)

    def _dependents(self, name: str) -> list[str]:
        """The ensembles in the graph that run ``name``."""
        with self._lock:
            return sorted(
                other
                for other, entry in self._entries.items()
                if entry.in_graph and name in entry.composing
            )

    def _reevaluate(self, op: _Operation) -> None:
        """Reload, or unload, the ensembles that run a model ``op`` changed (transitively)."""
        if self._stop_event.is_set():
            return
        handled = set(op.visited)
        index = 0
        while index < len(op.changed):
            changed = op.changed[index]
            index += 1
            for dependent in self._dependents(changed):
                if dependent in handled:
                    continue
                handled.add(dependent)
                self._reload_dependent(dependent, op)

    def _reload_dependent(self, name: str, op: _Operation) -> None:
        with self._load_lock(name):
            with self._lock:
                entry = self._entries.get(name)
                source = entry.source if entry is not None else None
            if entry is None or source is None or not entry.in_graph:
                return
            op.stack.append(name)
            try:
                composing = self._composing_configs(name, entry, op, poll=False)
                self._start_ensemble(entry, source, composing, op)
            except LoadFailure as exc:
                if not exc.invalid:
                    log.error("failed to load '%s': %s", name, exc.message)
                else:
                    self._invalidate(entry, exc, op)
            finally:
                op.stack.pop()

    # -- models --------------------------------------------------------------------------
    def _complete(self, name: str, source: ModelSource, backend: Any) -> mc.ModelConfig:
        raw = source.config if source.config is not None else mc.ModelConfig(name=name)
        if not raw.backend and not raw.platform:
            raw.backend = "python"
        if raw.backend != "python":
            raise ServerError.invalid_arg(
                f"model '{name}' uses backend '{raw.backend or raw.platform}'; this server runs "
                'only Python-backend models (backend: "python") and ensembles'
            )
        filename = raw.default_model_filename or "model.py"
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
                source.path,
                version,
                config_to_json(raw),
                filename,
                isolation=self.options.python_backend_isolation,
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
        model = backend(
            name,
            source.path,
            version,
            config_to_json(config),
            filename,
            self.runtime,
            isolation=self.options.python_backend_isolation,
        )
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
        old_versions: dict[int, LoadedVersion],
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
        self, name: str, version: int, model: LoadedVersion, record: bool, keep_stats: bool = False
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

    def _unload(self, name: str, op: _Operation, *, cascade: bool = False) -> None:
        """Unload every version of ``name`` and take it out of the dependency graph; with
        ``cascade``, also the composing models only it pulled in."""
        with self._load_lock(name):
            with self._lock:
                entry = self._entries.get(name)
                if entry is None:
                    return  # unloading an unknown model succeeds, as in Triton
                versions = dict(entry.versions)
                entry.versions = {}
                in_graph, entry.in_graph, entry.explicit = entry.in_graph, False, False
                composing = list(entry.composing)
            for version, model in versions.items():
                self._stop_version(name, version, model, record=True)
            with self._lock:
                if entry.override is not None:
                    entry.override.cleanup()
                    entry.override = None
                entry.fingerprint = None
        if versions or in_graph:
            op.changed.append(name)
        if not cascade:
            return
        for composing_name in composing:
            with self._lock:
                known = self._entries.get(composing_name)
                keep = known is None or not known.in_graph or known.explicit
            if not keep and not self._dependents(composing_name):
                self._unload(composing_name, op, cascade=True)

    def _unload_order(self) -> list[str]:
        """Every model, ensembles before the models they run (so in-flight ensemble requests
        can finish while the server stops)."""
        with self._lock:
            remaining = {name: set(entry.composing) for name, entry in self._entries.items()}
        order: list[str] = []
        while remaining:
            used = set().union(*remaining.values())
            free = sorted(name for name in remaining if name not in used) or sorted(remaining)
            order.extend(free)
            for name in free:
                del remaining[name]
        return order

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

    @property
    def shared_regions(self) -> SharedMemoryRegistry:
        return self._server.shm

    def infer(self, request: InferRequest) -> Iterator[InferResponse]:
        # The request's timeout_us is the schedulers' (a queued request expires); a running
        # one is answered however long it takes, as Triton 2.51 answers BLS requests.
        return self._server.infer_iter(request)

    def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        return self._server.model_ready(model_name, int(model_version) if model_version else -1)

    def load_model(
        self, model_name: str, config: str = "", files: dict[str, bytes] | None = None
    ) -> None:
        self._server.load_model(model_name, config or None, files)

    def unload_model(self, model_name: str) -> None:
        self._server.unload_model(model_name)
