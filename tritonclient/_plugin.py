"""Client plugins: hooks that see (and may change) every request's headers.

Shared by ``tritonclient.grpc`` and ``tritonclient.http`` (as in NVIDIA's package).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

__all__ = ["InferenceServerClientPlugin", "Request"]


class Request:
    """A request as a plugin sees it.

    Parameters
    ----------
    headers : dict
        The request headers; a plugin may add, change or remove entries.
    """

    def __init__(self, headers: Mapping[str, Any] | None) -> None:
        self.headers: dict[str, Any] = dict(headers) if headers is not None else {}


class InferenceServerClientPlugin(ABC):
    """Base class of every client plugin; subclasses implement :meth:`__call__`."""

    @abstractmethod
    def __call__(self, request: Request) -> None:
        """Change the request (typically ``request.headers``) before it is sent.

        Parameters
        ----------
        request : Request
            The request about to be sent.
        """
