"""The server core: model repository, model lifecycle, schedulers, validation, statistics.

It knows nothing of the wire: frontends (HTTP, gRPC, in-process) translate to and from the
types in :mod:`mock_server.core.types` and call :class:`mock_server.core.server.CoreServer`.
"""
