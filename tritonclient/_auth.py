"""Authentication plugins shared by the gRPC and HTTP clients."""

from __future__ import annotations

import base64

from ._plugin import InferenceServerClientPlugin, Request

__all__ = ["BasicAuth"]


class BasicAuth(InferenceServerClientPlugin):
    """HTTP basic authentication: adds ``authorization: Basic <base64(user:password)>``.

    Parameters
    ----------
    username : str
        The user name.
    password : str
        The password.
    """

    def __init__(self, username: str, password: str) -> None:
        token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        self._auth_string = "Basic " + token

    def __call__(self, request: Request) -> None:
        """Add the ``authorization`` header to the request.

        Parameters
        ----------
        request : Request
            The request about to be sent.
        """
        request.headers["authorization"] = self._auth_string
