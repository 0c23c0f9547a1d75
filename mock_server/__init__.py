"""The bundled reference server for the KServe v2 / Triton protocol.

``mock_server.core`` is the wire-independent server (repository, model lifecycle,
schedulers, validation, statistics); ``mock_server.python_backend`` runs models written for
Triton's Python backend.  The HTTP/gRPC frontends and the CLI are tracked in their own issue.
"""

__version__ = "0.1.0"
