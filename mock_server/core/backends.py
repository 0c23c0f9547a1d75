"""What the core and its backends give each other.

The core never imports a backend: the composition root (:mod:`mock_server.app`, the in-process
API) gives :class:`~mock_server.core.server.CoreServer` one :class:`ModelBackend` per backend
name (``backend: "python"`` in a model's configuration).  The core asks a backend to complete a
model's configuration and to load a version of it (a :class:`BackendModel`), whose instances it
drives (:class:`~mock_server.core.instances.ModelInstance`).  In return, the core gives each
loaded model its :class:`BackendRuntime`: the hooks models use to reach the server (BLS, model
control, the client regions).

Every :class:`BackendRuntime` method raises (or, for :meth:`BackendRuntime.infer`, may raise
while iterating) :class:`~mock_server.core.errors.ServerError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tritonclient._codec.types import SharedMemoryRef

from .shm import RegionShare
from .types import InferRequest, InferResponse

if TYPE_CHECKING:  # (a stub process imports this module: it needs none of the run time)
    from .instances import ModelInstance

__all__ = ["BackendModel", "BackendRuntime", "LoadSpec", "ModelBackend", "SharedRegions"]


class SharedRegions(Protocol):
    """The server's registered system shared-memory regions, as model instances in stub
    processes use them: a stub maps a region itself, so that a tensor in it never crosses the
    channel (implemented by :class:`~mock_server.core.shm.SharedMemoryRegistry`)."""

    def share(self, address: int, nbytes: int) -> RegionShare | None:
        """Where the ``nbytes`` bytes at ``address`` lie, when in one registered region."""
        ...

    def share_output(self, ref: SharedMemoryRef) -> RegionShare | None:
        """Where an output placed at ``ref`` goes (None when not in a system region)."""
        ...

    def shared_view(self, token: int, offset: int, nbytes: int) -> memoryview:
        """The server's view of bytes a stub wrote in (or handed back from) a region."""
        ...

    def watch(self, callback: Callable[[int], None]) -> Callable[[], None]:
        """Call ``callback(token)`` whenever a region is unregistered; return the stopper."""
        ...


class BackendRuntime(Protocol):
    """What the server core provides to the models a backend runs."""

    @property
    def shared_regions(self) -> SharedRegions | None:
        """The client regions, for stub processes to map (None: every tensor crosses as
        bytes)."""
        ...

    def infer(self, request: InferRequest) -> Iterator[InferResponse]:
        """Run ``request`` on another loaded model.

        Parameters
        ----------
        request : InferRequest
            The request; its ``timeout_us`` bounds the whole run when non-zero.

        Returns
        -------
        Iterator of InferResponse
            The model's responses in order, blocking until each is available; the last one has
            ``final=True``.

        Raises
        ------
        ServerError
            When the request cannot run (unknown model, invalid inputs, time-out ...), either from
            the call itself or while iterating.
        """
        ...

    def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        """Whether ``model_name`` (at ``model_version``, or its default version when empty) is
        ready for inference."""
        ...

    def load_model(
        self, model_name: str, config: str = "", files: dict[str, bytes] | None = None
    ) -> None:
        """Load (or reload) ``model_name``, optionally with an override JSON ``config`` and
        override ``files`` (keys ``"file:<relative path>"``)."""
        ...

    def unload_model(self, model_name: str) -> None:
        """Unload ``model_name``."""
        ...

    def server_stopping(self) -> bool:
        """Whether the server is stopping: its models are being unloaded for good (what a
        backend keeps for the server's lifetime, such as custom metric families, can go)."""
        ...


class BackendModel(Protocol):
    """One loaded version of a model, as its backend made it."""

    def create_instance(self, instance_name: str, kind: str, device_id: int) -> ModelInstance:
        """Create and initialize one instance (``kind``: ``"CPU"`` or ``"GPU"``).

        Raises
        ------
        ServerError
            When the instance cannot be created (the model's load fails with it).
        """
        ...


@dataclass(frozen=True)
class LoadSpec:
    """One version of a model, as the core hands it to its backend.

    Attributes
    ----------
    model_name : str
        The model's name.
    model_dir : pathlib.Path
        The model's folder in the repository (holding ``config.pbtxt`` and version folders).
    version : int
        The version (its file is ``<model_dir>/<version>/<filename>``).
    config_json : dict
        The model's configuration in Triton's JSON form: as the repository gives it (to
        :meth:`ModelBackend.auto_complete`), or completed (to :meth:`ModelBackend.load`).
    filename : str
        The model file's name (``default_model_filename``, e.g. ``model.py``).
    """

    model_name: str
    model_dir: Path
    version: int
    config_json: dict[str, Any]
    filename: str


class ModelBackend(Protocol):
    """A backend, as the core uses it (the composition root gives it to the core by name)."""

    def auto_complete(self, spec: LoadSpec) -> dict[str, Any]:
        """The model's configuration (Triton's JSON form) as the backend completes it.

        Raises
        ------
        ServerError
            When the model cannot complete it (the load fails).
        """
        ...

    def load(self, spec: LoadSpec, runtime: BackendRuntime) -> BackendModel:
        """Load a version of a model whose completed configuration is ``spec.config_json``.

        Raises
        ------
        ServerError
            For a configuration the backend refuses.
        """
        ...
