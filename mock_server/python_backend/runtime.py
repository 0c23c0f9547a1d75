"""The hooks the server core gives Python-backend models (BLS and model control).

The core implements :class:`BackendRuntime` and passes it to
:class:`~mock_server.python_backend.backend.PythonBackendModel`.  Models never see it directly:
``pb_utils.InferenceRequest.exec()``, ``pb_utils.load_model()`` and friends find the runtime of the
model that is calling them (see :mod:`mock_server.python_backend._context`).

Every method raises (or, for :meth:`BackendRuntime.infer`, may raise while iterating)
:class:`~mock_server.core.errors.ServerError`; ``pb_utils`` turns those into the Python backend's
behaviour (an error response for ``exec()``, :class:`TritonModelException` for model control).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from tritonclient._codec.types import SharedMemoryRef

from ..core.shm import RegionShare
from ..core.types import InferRequest, InferResponse

__all__ = ["BackendRuntime", "SharedRegions"]


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
    """What the server core provides to models running in the Python backend."""

    #: The client regions, for stub processes to map (None: every tensor crosses as bytes).
    shared_regions: SharedRegions | None

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
