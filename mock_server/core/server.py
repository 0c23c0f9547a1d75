"""The server core: the entry point every frontend and the in-process API call.

:class:`CoreServer` puts the core's parts together: the model lifecycle
(:mod:`mock_server.core.lifecycle`: loading, unloading, polling, ensembles), statistics, the
client shared-memory regions, trace and log settings, and inference (validation, then the model
version's scheduler).  Frontends (HTTP, gRPC, the in-process API) call it with core types and
map its :class:`~mock_server.core.errors.ServerError` kinds to their status codes; the
composition root (:mod:`mock_server.compose`) gives it its backends.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tritonclient._proto import model_config_pb2 as mc

from .._version import __version__
from . import config as cfg
from .backends import ModelBackend
from .compat import HTTP_DEFAULT_MAX_INPUT_SIZE, TritonCompat, compat_profile
from .errors import ErrorKind, ServerError
from .lifecycle import LoadedVersion, ModelLifecycle, ModelState
from .options import ModelControlMode, ServerOptions
from .repository import Repository
from .settings import LogSettings, TraceSettings
from .shm import SharedMemoryRegistry
from .stats import StatsRegistry, StatsSnapshot
from .types import Assist, InferRequest, InferResponse
from .validation import HeaderForward, compile_forward_pattern, validate_request

__all__ = ["CoreServer", "ModelControlMode", "ModelState", "ServerOptions"]

log = logging.getLogger("mock_server.core")

#: How long :meth:`CoreServer.infer_iter` reads a stub's channel for its request (see
#: :class:`~.types.Assist`) before sleeping on the queue instead (a long execution is then read
#: by the channel's own reader, as when nothing assists).
_ASSIST_SLICE_S = 1.0

_FRONTEND_ONLY = {
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "trace",
    "logging",
}

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

#: Extensions the core implements, whatever the frontend (the frontends add the others:
#: shared memory, binary tensor data, trace and logging).
CORE_EXTENSIONS = tuple(e for e in EXTENSION_ORDER if e not in _FRONTEND_ONLY)


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


class CoreServer:
    """The wire-independent server.

    Parameters
    ----------
    options : ServerOptions
        Repository folders, control mode and the other options.
    backends : Mapping of str to ModelBackend, optional
        The backend of each ``backend`` name a model configuration may give (``"python"``);
        the composition root (:func:`mock_server.compose.build_core`) gives the Python
        backend.  Without one, only ensembles load.
    """

    def __init__(
        self, options: ServerOptions, backends: Mapping[str, ModelBackend] | None = None
    ) -> None:
        self.options = options
        #: Which Triton release this server behaves as (one field per behaviour that differs).
        self.compat: TritonCompat = compat_profile(options.triton_compat)
        self.has_gpu = detect_gpu() if options.has_gpu is None else options.has_gpu
        self.stats = StatsRegistry()
        self._started = False
        self._stopped = False
        self._startup_ok = True
        self._startup_failures: dict[str, str] = {}
        self._stop_event = threading.Event()
        self.runtime = _Runtime(self)
        #: Client shared-memory regions (system and CUDA).
        self.shm = SharedMemoryRegistry(
            has_gpu=self.has_gpu,
            compat=self.compat,
            allow_client_shm=options.allow_client_shm,
            copy_inputs=options.shm_copy_inputs,
        )
        #: Log settings (logging extension).
        self.log_settings = LogSettings(options.log_file)
        self._trace = TraceSettings(options.trace_file, options.trace_settings)
        #: Loading, unloading and polling models.
        self.models = ModelLifecycle(
            options,
            Repository([Path(p) for p in options.model_repository]),
            self.stats,
            backends or {},
            self.runtime,
            self._trace,
            self.has_gpu,
            self._stop_event,
        )

    @property
    def repository(self) -> Repository:
        """Where models come from (the in-process API replaces it before :meth:`start`)."""
        return self.models.repository

    @repository.setter
    def repository(self, repository: Repository) -> None:
        self.models.repository = repository

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Load the startup models for the control mode and, in POLL mode, start polling."""
        self._startup_failures = self.models.load_startup_models()
        self._startup_ok = not self._startup_failures
        self._started = True
        self.models.start_polling()

    def stop(self) -> None:
        """Unload every model (waiting for in-flight requests) and stop polling."""
        self._stop_event.set()
        self.models.stop()
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

    def http_max_input_size(self, given: int | None) -> int | None:
        """The largest HTTP request body (JSON part, raw input, decompressed body) the HTTP
        frontend accepts: ``--http-max-input-size`` when it is given; otherwise 64 MiB where
        the profile limits inputs (2.73), no limit where it does not (2.51, which has neither
        the flag nor a limit).

        Raises
        ------
        ValueError
            For a size that is not positive.
        """
        if given is not None:
            if given <= 0:
                raise ValueError(f"--http-max-input-size must be greater than 0, got {given}")
            return given
        return HTTP_DEFAULT_MAX_INPUT_SIZE if self.compat.http_input_limits else None

    def header_forward(self, pattern: str | None) -> HeaderForward | None:
        """What a frontend's ``--*-header-forward-pattern`` forwards (None: no pattern), with
        the profile's rule for headers named like a reserved parameter.

        Raises
        ------
        ValueError
            For a pattern that is not a valid expression.
        """
        if not pattern:
            return None
        return HeaderForward(
            compile_forward_pattern(pattern), refuse_reserved=self.compat.refuse_reserved_headers
        )

    # -- models --------------------------------------------------------------------------
    def model_version(self, name: str, version: int = -1) -> LoadedVersion:
        """The ready version ``version`` of ``name`` (-1: the highest ready version)."""
        return self.models.model_version(name, version)

    def loaded_versions(self) -> list[LoadedVersion]:
        """Every loaded model version, ordered by name and version."""
        return self.models.loaded_versions()

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
        versions = self.models.version_numbers(name)
        return cfg.model_metadata(found.config, [version] if version >= 0 else versions)

    def repository_index(self, ready_only: bool = False) -> list[dict[str, Any]]:
        """One entry per model version known to the server (and one per unloaded model)."""
        return self.models.repository_index(ready_only)

    def load_model(
        self, name: str, config: str | None = None, files: dict[str, bytes] | None = None
    ) -> None:
        """Load or reload ``name`` (EXPLICIT mode): :meth:`ModelLifecycle.load_model`."""
        self.models.load_model(name, config, files)

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        """Unload ``name`` (EXPLICIT mode): :meth:`ModelLifecycle.unload_model`."""
        self.models.unload_model(name, unload_dependents)

    def poll_model_repository(self) -> None:
        """Rescan the repositories now: load new and changed models, unload removed ones."""
        self.models.poll_model_repository()

    # -- trace settings ------------------------------------------------------------------
    def _check_trace_model(self, model: str | None) -> None:
        if model and not self.models.has_loaded(model):
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
        compat = self.compat
        validate_request(
            request,
            model.checks,
            version=model.version,
            reserved_parameters=compat.refuse_reserved_parameters,
            duplicate_outputs=compat.refuse_duplicate_outputs,
        )
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
        # The instance that takes the request may offer this thread the reading of its
        # responses (see Assist); it never reads for it across a yield.
        assist = request.assist = Assist()

        def arrived() -> bool:
            return not responses.empty()

        try:
            self.infer(request)
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            while True:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                if not arrived():
                    wait = _ASSIST_SLICE_S if remaining is None else min(remaining, _ASSIST_SLICE_S)
                    assist.wait(arrived, wait)
                try:
                    response = responses.get(timeout=remaining)
                except queue.Empty:
                    request.cancel()
                    raise ServerError(
                        ErrorKind.UNAVAILABLE, f"request to model '{request.model_name}' timed out"
                    ) from None
                assist.close()
                yield response
                if response.final:
                    return
        finally:
            assist.close()


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

    def server_stopping(self) -> bool:
        return self._server._stop_event.is_set()
