"""Authentication plugins for the HTTP client."""

from tritonclient._auth import BasicAuth

__all__ = ["BasicAuth"]
