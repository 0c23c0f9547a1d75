"""Authentication plugins for the gRPC clients (``tritonclient.grpc.auth``)."""

from tritonclient._auth import BasicAuth

__all__ = ["BasicAuth"]
