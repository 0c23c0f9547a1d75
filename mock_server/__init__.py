"""The bundled reference server for the KServe v2 / Triton protocol.

``mock_server.core`` is the wire-independent server (repository, model lifecycle,
schedulers, validation, statistics, shared memory, the dataplane); ``mock_server.python_backend``
runs models written for Triton's Python backend; ``mock_server.frontends`` (HTTP, gRPC, the
metrics port) serve the core over the network, and ``python -m mock_server`` is the command
line (``mock_server.app`` puts them together; ``mock_server.compose`` gives the core its
backends).

The package also is the in-process Python API, shaped like Triton's ``tritonserver`` package
(:mod:`mock_server.api`, re-exported here and imported on first use)::

    import mock_server as tritonserver

    server = tritonserver.Server(model_repository="/workspace/models").start()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__ as __version__

if TYPE_CHECKING:
    from .api import *  # noqa: F403


def __getattr__(name: str) -> object:
    # The API pulls in numpy, protobuf and the core: import it on first use only.  Its public
    # names are capitalised (its __all__ is the one list of them), so other lookups (dunders,
    # tools probing for hooks) do not load it.
    if name[:1].isupper() or name in ("__all__", "_api"):
        from . import api

        if name == "__all__":
            return ["__version__", *api.__all__]
        if name == "_api":
            # tritonserver's own name for its API package: code written for it (Triton's OpenAI
            # frontend) names types as tritonserver._api._response.InferenceResponse.
            return api
        if name in api.__all__:
            value = getattr(api, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    from . import api

    return sorted(set(globals()) | set(api.__all__))
