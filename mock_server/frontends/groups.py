"""The API groups Triton's frontends can restrict to callers that send a given header
(``--http-restricted-api``, ``--grpc-restricted-protocol``), in Triton's order.

A module of its own, importing nothing: the command line (:mod:`mock_server.app`) checks its
arguments against it without loading a frontend."""

from __future__ import annotations

__all__ = ["API_GROUPS"]

#: Every API group, as Triton names them.
API_GROUPS = (
    "health",
    "metadata",
    "inference",
    "shared-memory",
    "model-config",
    "model-repository",
    "statistics",
    "trace",
    "logging",
)
