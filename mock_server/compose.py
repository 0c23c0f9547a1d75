"""The composition root's one step that knows the backends: a core with the backends it runs.

The core (:mod:`mock_server.core`) never imports a backend; :func:`build_core` gives it the
Python backend (``backend: "python"``, with the server's default isolation).  The network
server (:mod:`mock_server.app`) and the in-process API (:mod:`mock_server.api`) build their
cores here, and so may tests and embedders that drive a core directly.
"""

from __future__ import annotations

from .core.backends import ModelBackend
from .core.options import ServerOptions
from .core.server import CoreServer
from .python_backend import PythonBackend

__all__ = ["build_core", "server_backends"]


def server_backends(options: ServerOptions) -> dict[str, ModelBackend]:
    """The backends this server runs, by the ``backend`` name of a model configuration."""
    return {"python": PythonBackend(options.python_backend_isolation)}


def build_core(options: ServerOptions) -> CoreServer:
    """A (not yet started) :class:`CoreServer` for ``options`` with :func:`server_backends`."""
    return CoreServer(options, server_backends(options))
