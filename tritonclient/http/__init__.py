"""HTTP/REST client for Triton / KServe v2 servers (drop-in for NVIDIA's ``tritonclient.http``).

``InferenceServerClient`` sends requests with geventhttpclient on a private gevent thread, so
it works in ordinary threaded programs without monkey-patching and may be shared by threads
(see :mod:`tritonclient.http._client`).  The asyncio client is :mod:`tritonclient.http.aio`;
it needs only aiohttp, so this package imports without gevent too, and only the sync client
then raises ``ImportError`` when used.
"""

from typing import Any

from tritonclient._plugin import InferenceServerClientPlugin, Request
from tritonclient.http._infer_input import InferInput
from tritonclient.http._infer_result import InferResult
from tritonclient.http._requested_output import InferRequestedOutput
from tritonclient.utils import *  # noqa: F403 - NVIDIA's package re-exports tritonclient.utils
from tritonclient.utils import _errors

_INSTALL_HINT = (
    "tritonclient.http.InferenceServerClient needs geventhttpclient (and gevent), which is "
    "not installed; install it with: pip install tritonclient-ng[http]"
)

try:
    from tritonclient.http._client import InferAsyncRequest, InferenceServerClient
except ModuleNotFoundError as _error:  # pragma: no cover - depends on the installation
    if _error.name not in ("gevent", "geventhttpclient", "greenlet") and not str(
        _error.name
    ).startswith(("gevent.", "geventhttpclient.")):
        raise
    _MISSING: ModuleNotFoundError | None = _error

    def __getattr__(name: str) -> Any:
        if name in ("InferenceServerClient", "InferAsyncRequest"):
            raise ImportError(_INSTALL_HINT) from _MISSING
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "InferAsyncRequest",
    "InferInput",
    "InferRequestedOutput",
    "InferResult",
    "InferenceServerClient",
    "InferenceServerClientPlugin",
    "Request",
]
__all__ += _errors.__all__
