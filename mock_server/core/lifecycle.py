"""The model lifecycle: loading, unloading and polling models, and ensembles' composing models.

:class:`ModelLifecycle` owns the loaded model versions of a server (what
:class:`~mock_server.core.server.CoreServer` serves) and the state of every model it knows, as
the repository index reports it.  It follows Triton's model control modes (NONE, POLL, EXPLICIT)
and its dependency graph: an ensemble loads the models it runs first, and is reloaded or
unloaded when one of them is.  Models are run by the backends the composition root gave the
core (:class:`~mock_server.core.backends.ModelBackend`, by name); ensembles by the core itself
(:mod:`mock_server.core.ensemble`).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonclient._proto import model_config_pb2 as mc

from . import config as cfg
from .backends import BackendRuntime, LoadSpec, ModelBackend
from .config_checks import validate_config
from .config_json import config_from_json, config_to_json
from .ensemble import EnsembleVersion
from .ensemble_checks import check_composition, composing_models
from .errors import ErrorKind, ServerError
from .instances import ModelInstance, ModelVersion, instance_specs
from .options import ModelControlMode, ServerOptions
from .repository import ModelSource, Repository, materialize_override, select_versions
from .settings import TraceSettings
from .stats import ModelStats, StatsRegistry

__all__ = ["LoadFailure", "LoadedVersion", "ModelLifecycle", "ModelState"]

log = logging.getLogger("mock_server.core")


class ModelState(enum.Enum):
    """Lifecycle state of one model version, as the repository index reports it."""

    LOADING = "LOADING"
    READY = "READY"
    UNLOADING = "UNLOADING"
    UNAVAILABLE = "UNAVAILABLE"


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


class ModelLifecycle:
    """The models of one server: their loading, unloading and polling.

    Parameters
    ----------
    options : ServerOptions
        The control mode, start-up models, poll interval, exit timeout and strict config.
    repository : Repository
        Where models come from.
    stats : StatsRegistry
        Where loaded versions record their statistics.
    backends : Mapping of str to ModelBackend
        The backend of each ``backend`` name a model configuration may give.
    runtime : BackendRuntime
        The hooks loaded models get (BLS, model control, client regions).
    trace : TraceSettings
        The trace settings loaded versions follow.
    has_gpu : bool
        Whether KIND_GPU instances can be created.
    stopping : threading.Event
        Set when the server drains or stops: polling ends and ensembles are no longer
        re-evaluated.
    """

    def __init__(
        self,
        options: ServerOptions,
        repository: Repository,
        stats: StatsRegistry,
        backends: Mapping[str, ModelBackend],
        runtime: BackendRuntime,
        trace: TraceSettings,
        has_gpu: bool,
        stopping: threading.Event,
    ) -> None:
        self.options = options
        self.repository = repository
        self.stats = stats
        self.backends = dict(backends)
        self.runtime = runtime
        self.has_gpu = has_gpu
        self._trace = trace
        self._stop_event = stopping
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.RLock()
        self._load_locks: dict[str, threading.Lock] = {}
        self._poller: threading.Thread | None = None

    # -- start and stop ------------------------------------------------------------------
    def load_startup_models(self) -> dict[str, str]:
        """Load the models the control mode loads at start; return those that failed, with
        the reason of each."""
        mode = self.options.model_control_mode
        sources = self.repository.scan()
        if mode is ModelControlMode.EXPLICIT:
            wanted = self.options.startup_models
            names = sorted(sources) if "*" in wanted else list(wanted)
        else:
            names = sorted(sources)
        failures: dict[str, str] = {}
        op = _Operation()
        try:
            for name in _load_order(sources, names):
                try:
                    self._load(name, sources=sources, op=op)
                except ServerError as exc:
                    log.error("failed to load '%s': %s", name, exc.message)
                    failures[name] = exc.message
        finally:
            self._reevaluate(op)
        return failures

    def start_polling(self) -> None:
        """In POLL mode with an interval, rescan the repositories on a thread of their own
        until ``stopping`` is set."""
        mode = self.options.model_control_mode
        if mode is ModelControlMode.POLL and self.options.repository_poll_secs > 0:
            self._poller = threading.Thread(target=self._poll_loop, name="repo-poll", daemon=True)
            self._poller.start()

    def stop(self) -> None:
        """Stop polling and unload every model (waiting for in-flight requests)."""
        if self._poller is not None:
            self._poller.join(timeout=5)
        op = _Operation()
        for name in self._unload_order():
            self._unload(name, op)
        self.repository.cleanup()

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

    def version_numbers(self, name: str) -> list[int]:
        """The loaded version numbers of ``name``, in order."""
        with self._lock:
            return sorted(self._entry(name).versions)

    def has_loaded(self, name: str) -> bool:
        """Whether ``name`` has a loaded version."""
        with self._lock:
            return name in self._entries and bool(self._entries[name].versions)

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
        """Load the versions of a model its backend runs (``_load_locked`` checked the rest)."""
        try:
            if source.config_error is not None:
                raise source.config_error
            if not source.available_versions:
                raise self._versionless(entry, source)
            try:
                config, backend = self._complete(name, source)
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
                    name, version, config, source, backend, new_stats[-1]
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
    def _complete(self, name: str, source: ModelSource) -> tuple[mc.ModelConfig, ModelBackend]:
        """The completed configuration of a model, and the backend that runs it."""
        raw = source.config if source.config is not None else mc.ModelConfig(name=name)
        if not raw.backend and not raw.platform:
            raw.backend = "python"
        if raw.backend != "python":
            raise ServerError.invalid_arg(
                f"model '{name}' uses backend '{raw.backend or raw.platform}'; this server runs "
                'only Python-backend models (backend: "python") and ensembles'
            )
        backend = self.backends.get(raw.backend)
        if backend is None:
            raise ServerError.invalid_arg(
                f"model '{name}' uses backend '{raw.backend}', which this server was not given "
                "(the composition root, mock_server.compose, gives the core its backends)"
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
                LoadSpec(name, source.path, version, config_to_json(raw), filename)
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
        return config, backend

    def _start_version(
        self,
        name: str,
        version: int,
        config: mc.ModelConfig,
        source: ModelSource,
        backend: ModelBackend,
        stats: ModelStats,
    ) -> ModelVersion:
        filename = config.default_model_filename or "model.py"
        spec = LoadSpec(name, source.path, version, config_to_json(config), filename)
        model = backend.load(spec, self.runtime)
        instances: list[ModelInstance] = []
        try:
            for each in instance_specs(config):
                if each.kind == "GPU" and not self.has_gpu:
                    raise ServerError.invalid_arg(
                        f"instance group of model '{name}' asks for KIND_GPU but no GPU is "
                        "available"
                    )
                instances.append(model.create_instance(each.name, each.kind, each.device_id))
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
