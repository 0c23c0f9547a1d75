"""Client plugins: hooks that see (and may change) every request's headers.

Shared by ``tritonclient.grpc`` and ``tritonclient.http`` (as in NVIDIA's package).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from tritonclient.utils import raise_error

__all__ = ["InferenceServerClientPlugin", "PluginSlot", "Request"]


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


class PluginSlot:
    """The one plugin a client may hold, with NVIDIA's three methods over it; the base of
    both protocols' client cores, so that the rules (one at a time, errors' words) are
    written once."""

    _plugin: InferenceServerClientPlugin | None = None

    def register_plugin(self, plugin: InferenceServerClientPlugin) -> None:
        """Register a client plugin.

        Parameters
        ----------
        plugin : InferenceServerClientPlugin
            A client plugin.

        Raises
        ------
        InferenceServerException
            If a plugin is already registered.
        """
        if self._plugin is not None:
            raise_error(
                "A plugin is already registered. Please unregister the previous plugin "
                "first before registering a new plugin."
            )
        self._plugin = plugin

    def plugin(self) -> InferenceServerClientPlugin | None:
        """Retrieve the registered plugin, if any.

        Returns
        -------
        InferenceServerClientPlugin or None
        """
        return self._plugin

    def unregister_plugin(self) -> None:
        """Unregister the plugin.

        Raises
        ------
        InferenceServerException
            If no plugin has been registered.
        """
        if self._plugin is None:
            raise_error("No plugin has been registered.")
        self._plugin = None
