"""Which model is calling into ``pb_utils`` right now.

``pb_utils`` is one module shared by every loaded model, yet BLS calls, model control and logging
must act on behalf of the model that makes them.  The backend enters a :class:`ModelContext`
around every call into model code (``auto_complete_config``, ``initialize``, ``execute`` and its
coroutine, ``finalize``), kept in a :class:`contextvars.ContextVar` so that it follows asyncio
tasks.  Threads that a model starts itself do not inherit it; for them :func:`runtime` falls back
to the runtime most recently registered by a loaded model (a server has a single runtime).
"""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field, replace
from typing import Literal

from .runtime import BackendRuntime

__all__ = ["ModelContext", "Phase", "current", "entered", "register_runtime", "runtime"]

#: The model function being run.
Phase = Literal["auto_complete", "initialize", "execute", "finalize", "unknown"]


@dataclass(frozen=True)
class ModelContext:
    """Who is calling: one model instance (or the auto-complete step of a model).

    Attributes
    ----------
    model_name : str
        The model's name.
    model_version : int
        The model's version.
    instance_name : str
        The instance's name ("" during auto-complete).
    runtime : BackendRuntime or None
        The core's hooks (None during auto-complete).
    phase : str
        Which model function is running.
    owner : object
        A token identifying the instance; custom metrics it creates are released with it.
    model_dir : str
        The folder of the model version's files (``pb_utils.get_model_dir()``).
    """

    model_name: str
    model_version: int
    instance_name: str = ""
    runtime: BackendRuntime | None = None
    phase: Phase = "unknown"
    owner: object = field(default_factory=object, compare=False)
    model_dir: str = ""


_current: contextvars.ContextVar[ModelContext | None] = contextvars.ContextVar(
    "triton_python_model", default=None
)
_lock = threading.Lock()
_fallback: BackendRuntime | None = None


def current() -> ModelContext | None:
    """Return the context of the model calling now, or None outside model code."""
    return _current.get()


class _Entered:
    """:func:`entered`'s context manager (a plain class: it is entered around every
    ``execute``, where ``contextlib``'s generator machinery was a tenth of a stub's
    per-request Python)."""

    __slots__ = ("_active", "_token")

    def __init__(self, active: ModelContext) -> None:
        self._active = active
        self._token: contextvars.Token[ModelContext | None] | None = None

    def __enter__(self) -> ModelContext:
        self._token = _current.set(self._active)
        return self._active

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _current.reset(self._token)


def entered(context: ModelContext, phase: Phase) -> _Entered:
    """Run a block as ``context`` in ``phase`` (``with entered(context, phase) as active``);
    a context already in ``phase`` is used as it is."""
    return _Entered(context if context.phase == phase else replace(context, phase=phase))


def register_runtime(hooks: BackendRuntime) -> None:
    """Remember ``hooks`` as the runtime for calls made outside any model context."""
    global _fallback
    with _lock:
        _fallback = hooks


def runtime() -> tuple[BackendRuntime | None, Phase]:
    """Return the runtime to use for a call made now, and the phase it is made in."""
    context = _current.get()
    if context is not None:
        return context.runtime, context.phase
    with _lock:
        return _fallback, "unknown"
