"""The options of the server core, and its model control modes (Triton's command line).

Kept apart from :mod:`mock_server.core.server` so that the model lifecycle
(:mod:`mock_server.core.lifecycle`) and the server both read them without importing each other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compat import TritonCompat

__all__ = ["ModelControlMode", "ServerOptions"]


class ModelControlMode(enum.Enum):
    """How the set of loaded models is decided (Triton's ``--model-control-mode``)."""

    NONE = "none"
    POLL = "poll"
    EXPLICIT = "explicit"


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
    triton_compat : str or TritonCompat
        Which Triton release the server behaves as, where releases differ in what a client
        sees: ``"2.73"`` (the default) or ``"2.51"`` (see :mod:`mock_server.core.compat`).
    allow_client_shm : bool or None
        Whether clients may register shared-memory regions (Triton's ``--allow-client-shm``);
        None takes the profile's default (2.73: no; 2.51: yes).
    shm_copy_inputs : bool
        Copy shared-memory inputs out of the client's region instead of handing models
        zero-copy views (see :mod:`mock_server.core.shm`).
    python_backend_isolation : str
        How Python-backend model instances run unless a model's ``python_backend_isolation``
        parameter says otherwise: ``"process"`` (each in a stub process of its own, as in
        Triton) or ``"thread"`` (in the server's process).  The core does not read it: the
        composition root (``mock_server.compose``) gives the Python backend this default.
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
    triton_compat: str | TritonCompat = "2.73"
    allow_client_shm: bool | None = None
    shm_copy_inputs: bool = False
    python_backend_isolation: str = "process"
