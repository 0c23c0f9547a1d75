"""The HTTP clients' compatibility seams: the private names that code written for NVIDIA's
client patches, kept working.

NVIDIA's QA tests (``qa/L0_http/http_client_plugin_test.py``) and users' own tests reach into
NVIDIA's clients at three places:

* the sync client's ``_client_stub`` (geventhttpclient's ``HTTPClient``), replaced by a mock:
  every call then goes to ``stub.get(uri, headers=...)`` or
  ``stub.post(request_uri=..., body=..., headers=...)``;
* the ``get``/``post`` of the asyncio client's ``_stub`` (an ``aiohttp.ClientSession``), set
  to mocks: ``await stub.get(url=..., headers=...)``, ``await stub.post(url=..., data=...,
  headers=...)``;
* the module names ``tritonclient.http._client._raise_if_error`` and ``InferResult`` (and
  ``tritonclient.http.aio._raise_if_error``, a coroutine function there, and
  ``tritonclient.http.aio.InferResult``), patched for the length of a test.

This package's clients have no stub on their hot path (their transports move bytes; see
``tritonclient._transport``), so each client keeps those seams as shims, out of the way until
used:

* reading or setting ``_client_stub`` / ``_stub`` gives the client a stub: an adapter over its
  own transport (:class:`StubSeam`, :class:`SessionSeam`; they answer with the response
  objects NVIDIA's code reads) unless one is set.  From then on every call of that client goes
  through the stub;
* while a module name above is patched, or once the client has a stub, each answer is read
  the way NVIDIA's client reads it: status 200 alone for health and readiness; otherwise the
  module's ``_raise_if_error(response)``, then for an inference the module's
  ``InferResult(response, verbose)`` (asyncio: ``InferResult.from_response_body(...)``), both
  looked up at call time so that the patch takes effect.

Otherwise a call costs one attribute test and two identity tests more
(``benchmarks/bench_hotpath.py`` shows no difference).  Through a stub, the client's retry
policy is not applied, the requested outputs of an inference are not checked against the
answer, and the sync client's ``async_infer`` runs the call in the calling thread before it
returns (NVIDIA's runs it on a greenlet of that thread).  Requests handed to a stub carry
NVIDIA's headers: without the ``Content-Type`` this client adds to request bodies (the server
ignores it; NVIDIA's client sends none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from tritonclient._codec.http_body import (
    HEADER_CONTENT_ENCODING,
    HEADER_INFERENCE_HEADER_CONTENT_LENGTH,
)
from tritonclient._transport.http import HttpCall, HttpReply
from tritonclient.http._common import reply_error

__all__ = [
    "AioResponse",
    "SessionSeam",
    "StubSeam",
    "aio_raise_if_error",
    "aio_reply_of",
    "close_seam",
    "infer_result_args",
    "raise_if_error",
    "reply_of",
    "stub_headers",
]


def _as_is(reply: HttpReply) -> HttpReply:
    return reply


def _call(method: str, uri: str, headers: Mapping[str, Any] | None, body: Any) -> HttpCall[Any]:
    """A request a stub was given, as a call of the client's transport."""
    data = body.encode() if isinstance(body, str) else body
    final = {str(k): str(v) for k, v in (headers or {}).items()}
    return HttpCall(method, uri, final, bytes(data) if data else None, _as_is)


def stub_headers(call: HttpCall[Any]) -> dict[str, str]:
    """The headers of ``call`` as NVIDIA's client hands them to its stub: those of the user
    and plugins, and of the body (``Inference-Header-Content-Length``, ``Content-Encoding``,
    ``Accept-Encoding``), without the ``Content-Type`` this client adds to a request body
    (which replaces any the caller gave)."""
    if call.body or call.chunks:
        return {k: v for k, v in call.headers.items() if k != "Content-Type"}
    return call.headers


class StubSeam:
    """The sync client's default ``_client_stub``: geventhttpclient's ``HTTPClient.get`` and
    ``post``, sent by the client's transport; the answer is an :class:`HttpReply`, which also
    reads as geventhttpclient's response (``status_code``, ``get(name)``, ``read()``).

    Parameters
    ----------
    transport : GeventTransport or GeventReplicas
        The client's transport.
    """

    def __init__(self, transport: Any) -> None:
        self._transport = transport

    def get(self, request_uri: str, headers: Mapping[str, Any] | None = None) -> HttpReply:
        """``GET request_uri`` (a path, with the base path and query)."""
        reply: HttpReply = self._transport.send(_call("GET", request_uri, headers, None))
        return reply

    def post(
        self, request_uri: str, body: Any = None, headers: Mapping[str, Any] | None = None
    ) -> HttpReply:
        """``POST request_uri`` with ``body`` (bytes or str)."""
        reply: HttpReply = self._transport.send(_call("POST", request_uri, headers, body))
        return reply

    def close(self) -> None:
        """Nothing: the client closes its transport."""


class AioResponse:
    """An :class:`HttpReply` as aiohttp's ``ClientResponse`` reads: ``status``, ``headers``
    (looked up in any case) and ``await read()``."""

    def __init__(self, reply: HttpReply) -> None:
        self.reply = reply
        self.status = reply.status
        self.headers = _AnyCase(reply.headers)

    async def read(self) -> bytes:
        """The whole body."""
        return self.reply.read()


class _AnyCase(dict[str, str]):
    """Headers with lower-case names, looked up in any case (as aiohttp's ``CIMultiDict``)."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name.lower() if isinstance(name, str) else name)


class SessionSeam:
    """The asyncio client's default ``_stub``: the ``get`` and ``post`` of
    ``aiohttp.ClientSession``, sent by the client's transport; the answer is an
    :class:`AioResponse`.

    Parameters
    ----------
    transport : AiohttpTransport or AiohttpReplicas
        The client's transport.
    """

    def __init__(self, transport: Any) -> None:
        self._transport = transport

    async def _send(self, method: str, url: str, headers: Any, body: Any) -> AioResponse:
        parts = urlsplit(url)
        uri = parts.path + ("?" + parts.query if parts.query else "")
        return AioResponse(await self._transport.send(_call(method, uri, headers, body)))

    async def get(self, url: str, headers: Mapping[str, Any] | None = None) -> AioResponse:
        """``GET url`` (the whole URL, as NVIDIA's client gives it)."""
        return await self._send("GET", url, headers, None)

    async def post(
        self, url: str, data: Any = None, headers: Mapping[str, Any] | None = None
    ) -> AioResponse:
        """``POST url`` with ``data`` (bytes or str)."""
        return await self._send("POST", url, headers, data)

    async def close(self) -> None:
        """Nothing: the client closes its transport."""


def reply_of(response: Any) -> HttpReply:
    """An :class:`HttpReply` from what a sync stub answered (geventhttpclient's response, or
    anything with ``status_code``, ``read()`` and ``headers`` or ``items()``)."""
    if isinstance(response, HttpReply):
        return response
    headers = getattr(response, "headers", None)
    items = headers.items() if headers is not None else response.items()
    return HttpReply(response.status_code, {str(k).lower(): v for k, v in items}, response.read())


async def aio_reply_of(response: Any) -> HttpReply:
    """An :class:`HttpReply` from what an asyncio stub answered (aiohttp's response, or
    anything with ``status``, ``headers`` and ``await read()``)."""
    if isinstance(response, AioResponse):
        return response.reply
    headers = {str(k).lower(): v for k, v in response.headers.items()}
    return HttpReply(response.status, headers, await response.read())


def raise_if_error(response: Any) -> None:
    """Raise the :class:`~tritonclient.utils.InferenceServerException` of an answer that is
    not 200 (NVIDIA's ``_raise_if_error`` of the sync client, over a geventhttpclient response
    or an :class:`HttpReply`); the body of a 200 answer is left unread."""
    if response.status_code != 200:
        error = reply_error(reply_of(response))
        if error is not None:
            raise error


async def aio_raise_if_error(response: Any) -> None:
    """The asyncio client's ``_raise_if_error`` (a coroutine function, as NVIDIA's), over an
    aiohttp response or an :class:`AioResponse`."""
    if response.status != 200:
        error = reply_error(await aio_reply_of(response))
        if error is not None:
            raise error


def infer_result_args(headers: Any) -> tuple[Any, Any]:
    """``(header_length, content_encoding)`` of an inference answer, from its headers (any
    case), for ``InferResult.from_response_body``."""
    return headers.get(HEADER_INFERENCE_HEADER_CONTENT_LENGTH), headers.get(HEADER_CONTENT_ENCODING)


def close_seam(seam: Any) -> Any:
    """Close a stub the user gave, as NVIDIA's clients close theirs: what its ``close()``
    returns (the asyncio client awaits an awaitable); nothing for ours or one without
    ``close``."""
    if seam is None or isinstance(seam, StubSeam | SessionSeam):
        return None
    close = getattr(seam, "close", None)
    return close() if callable(close) else None
