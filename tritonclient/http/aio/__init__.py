"""The asyncio HTTP/REST client (``tritonclient.http.aio.InferenceServerClient``), on aiohttp.

The same methods as :class:`tritonclient.http.InferenceServerClient`, as coroutines, built from
the same request descriptions (:mod:`tritonclient.http._common`); only the transport differs.
The aiohttp session is created on first use, inside the running event loop, so the client
may be constructed outside a coroutine.  Errors are those of the sync client.
"""

from __future__ import annotations

import asyncio
import inspect
import ssl as _ssl
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

try:
    import aiohttp  # noqa: F401 - checked here for a clear message; the transport uses it
except ModuleNotFoundError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "tritonclient.http.aio needs aiohttp, which is not installed; "
        "install it with: pip install tritonclient-ng[http]"
    ) from error

from tritonclient._codec.types import infer_options
from tritonclient._docs import doc_from
from tritonclient._plugin import InferenceServerClientPlugin, Request
from tritonclient._ready import steps, wait_async
from tritonclient._retry import check_retry_policy, retry_async
from tritonclient._transport.aiohttp import AiohttpTransport
from tritonclient._transport.replicas import AiohttpReplicas, replica_urls
from tritonclient.http import _client as _sync
from tritonclient.http import _seams
from tritonclient.http._client import InferAsyncRequest
from tritonclient.http._common import (
    ClientCore,
    HttpCall,
    _parse_ok,
    is_retryable,
    not_ready_error,
    parse_url,
)
from tritonclient.http._generate import AsyncGenerateStream
from tritonclient.http._infer_input import InferInput
from tritonclient.http._infer_result import InferResult
from tritonclient.http._requested_output import InferRequestedOutput
from tritonclient.utils import *  # noqa: F403 - NVIDIA's aio module re-exports tritonclient.utils
from tritonclient.utils import BalancingPolicy, InferenceServerException, RetryPolicy
from tritonclient.utils._errors import InferenceServerDeadlineExceededError

__all__ = [
    "AsyncGenerateStream",
    "InferAsyncRequest",
    "InferInput",
    "InferRequestedOutput",
    "InferResult",
    "InferenceServerClient",
    "InferenceServerClientBase",
    "InferenceServerClientPlugin",
    "InferenceServerException",
    "Request",
]

T = TypeVar("T")
Headers = Mapping[str, Any] | None
Query = Mapping[str, Any] | None


_Sync = _sync.InferenceServerClient

#: NVIDIA's module function (a coroutine function here), which tests patch; looked up at call
#: time, with ``InferResult``, once a client's seams are in use (see
#: :mod:`tritonclient.http._seams`).
_raise_if_error = _seams.aio_raise_if_error
_UNPATCHED_INFER_RESULT = InferResult


def _seams_patched() -> bool:
    """Whether ``_raise_if_error`` or ``InferResult`` of this module is patched."""
    return (
        _raise_if_error is not _seams.aio_raise_if_error
        or InferResult is not _UNPATCHED_INFER_RESULT
    )


#: The base class of the clients (NVIDIA's name for it, re-exported here as NVIDIA's module does).
InferenceServerClientBase = ClientCore


class InferenceServerClient(ClientCore):
    """An asyncio client for the HTTP/REST endpoints of a Triton (KServe v2) server.

    Parameters
    ----------
    url : str or list of str
        The inference server name, port and optional base path in the following format:
        ``host:port/<base-path>``, e.g. ``'localhost:8000'``; or a list of them, one per
        replica (see the sync client).
    verbose : bool
        If True generate verbose output. Default value is False.
    conn_limit : int
        The number of connections to the server at once. Default value is 100.
    conn_timeout : float
        The timeout of each request (connecting, sending and receiving). Default value is
        60.0 sec.
    ssl : bool
        If True, channels the requests to encrypted https scheme. Default value is False.
    ssl_context : ssl.SSLContext
        The SSL context to use with https (None: aiohttp's default verification).
    retry_policy : tritonclient.utils.RetryPolicy, keyword-only
        Retry idempotent calls that fail to connect (see the sync client). Default None.
    load_balancing : str or tritonclient.utils.BalancingPolicy, keyword-only
        With a list of urls, how calls are spread (see the sync client). Each replica has
        its own ``conn_limit`` connections.
    """

    def __init__(
        self,
        url: str | Sequence[str],
        verbose: bool = False,
        conn_limit: int = 100,
        conn_timeout: float = 60.0,
        ssl: bool = False,
        ssl_context: _ssl.SSLContext | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
        load_balancing: str | BalancingPolicy = "round_robin",
    ) -> None:
        policy = check_retry_policy(retry_policy)
        scheme = "https" if ssl else "http"
        servers, base, balancing = replica_urls(
            url, lambda text: parse_url(text, ssl), load_balancing
        )
        super().__init__(base, verbose, policy)

        def make(host: str, port: int) -> AiohttpTransport:
            return AiohttpTransport(
                scheme,
                host,
                port,
                conn_limit=conn_limit,
                timeout=conn_timeout,
                ssl_context=ssl_context,
            )

        self._transport: AiohttpTransport | AiohttpReplicas
        if balancing is None:  # one server (a url string): exactly as before
            self._transport = make(*servers[0])
        else:
            self._transport = AiohttpReplicas(servers, base, balancing, make)
        host, port = servers[0]
        #: The URLs handed to a stub start with this (NVIDIA's ``_url``, without the base path).
        self._seam_origin = f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"

    async def __aenter__(self) -> InferenceServerClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the client and its connections. Any future calls to server will result in
        an Error."""
        await self._transport.close()
        closing = _seams.close_seam(self._seam)  # a stub of the caller's, as NVIDIA's closes its
        if inspect.isawaitable(closing):
            await closing

    @property
    def _stub(self) -> Any:
        """NVIDIA's ``aiohttp.ClientSession``, kept as a compatibility seam for tests that set
        its ``get``/``post`` (or replace it): once read or set, every call goes through them
        (by default :class:`~tritonclient.http._seams.SessionSeam`, over this client's
        transport).  See :mod:`tritonclient.http._seams`."""
        if self._seam is None:
            self._seam = _seams.SessionSeam(self._transport)
        return self._seam

    @_stub.setter
    def _stub(self, stub: Any) -> None:
        self._seam = stub

    async def _send(self, call: HttpCall[T]) -> T:
        if self._seam is not None or _seams_patched():
            return await self._send_seamed(call)  # type: ignore[no-any-return]
        return self._finish(call, await self._transport.send(call))

    async def _send_seamed(self, call: HttpCall[Any]) -> Any:
        """``call`` made and read as NVIDIA's client does: through the stub when there is one,
        the answer through this module's ``_raise_if_error`` and ``InferResult``."""
        seam = self._seam
        if seam is None:
            response: Any = _seams.AioResponse(await self._transport.send(call))
        elif call.method == "GET":
            url = self._seam_origin + call.path
            response = await seam.get(url=url, headers=_seams.stub_headers(call))
        else:
            url, headers = self._seam_origin + call.path, _seams.stub_headers(call)
            response = await seam.post(url=url, data=call.payload(), headers=headers)
        if call.parse is _parse_ok:  # health and readiness: the status alone
            return response.status == 200
        await _raise_if_error(response)
        if call.kind == "infer":
            header_length, encoding = _seams.infer_result_args(response.headers)
            body = await response.read()
            return InferResult.from_response_body(body, self._verbose, header_length, encoding)
        return self._finish(call, await _seams.aio_reply_of(response))

    async def _run(self, call: HttpCall[T]) -> T:
        return await retry_async(
            lambda: self._send(call), self._retry_policy if call.idempotent else None, is_retryable
        )

    @doc_from(_Sync.wait_until_ready)
    async def wait_until_ready(
        self,
        model_name: str | None = None,
        model_version: str = "",
        timeout: float = 30.0,
        interval: float = 0.1,
        headers: Headers = None,
        query_params: Query = None,
    ) -> None:

        async def check(what: str, remaining: float) -> bool:
            call: HttpCall[bool]
            if what == "server":
                call = self._c_server_ready(headers, query_params)
            else:
                assert model_name is not None
                call = self._c_model_ready(model_name, model_version, headers, query_params)
            try:
                ready: bool = await asyncio.wait_for(self._send(call), remaining)
            except asyncio.TimeoutError:
                raise InferenceServerDeadlineExceededError(
                    f"no answer within {remaining:g} s"
                ) from None
            return ready

        await wait_async(check, steps(model_name, timeout, interval, not_ready_error))

    # -- health and metadata -------------------------------------------------------------------

    @doc_from(_Sync.is_server_live)
    async def is_server_live(self, headers: Headers = None, query_params: Query = None) -> bool:
        return await self._run(self._c_server_live(headers, query_params))

    @doc_from(_Sync.is_server_ready)
    async def is_server_ready(self, headers: Headers = None, query_params: Query = None) -> bool:
        return await self._run(self._c_server_ready(headers, query_params))

    @doc_from(_Sync.is_model_ready)
    async def is_model_ready(
        self,
        model_name: str,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> bool:
        return await self._run(
            self._c_model_ready(model_name, model_version, headers, query_params)
        )

    @doc_from(_Sync.get_server_metadata)
    async def get_server_metadata(self, headers: Headers = None, query_params: Query = None) -> Any:
        return await self._run(self._c_server_metadata(headers, query_params))

    @doc_from(_Sync.get_model_metadata)
    async def get_model_metadata(
        self,
        model_name: str,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        return await self._run(
            self._c_model_metadata(model_name, model_version, headers, query_params)
        )

    @doc_from(_Sync.get_model_config)
    async def get_model_config(
        self,
        model_name: str,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        return await self._run(
            self._c_model_config(model_name, model_version, headers, query_params)
        )

    # -- model repository ------------------------------------------------------------------------

    @doc_from(_Sync.get_model_repository_index)
    async def get_model_repository_index(
        self, headers: Headers = None, query_params: Query = None
    ) -> Any:
        return await self._run(self._c_repository_index(headers, query_params))

    @doc_from(_Sync.load_model)
    async def load_model(
        self,
        model_name: str,
        headers: Headers = None,
        query_params: Query = None,
        config: str | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> None:
        await self._run(self._c_load_model(model_name, headers, query_params, config, files))
        if self._verbose:
            print(f"Loaded model '{model_name}'")

    @doc_from(_Sync.unload_model)
    async def unload_model(
        self,
        model_name: str,
        headers: Headers = None,
        query_params: Query = None,
        unload_dependents: bool = False,
    ) -> None:
        await self._run(self._c_unload_model(model_name, headers, query_params, unload_dependents))
        if self._verbose:
            print(f"Unloaded model '{model_name}'")

    @doc_from(_Sync.get_inference_statistics)
    async def get_inference_statistics(
        self,
        model_name: str = "",
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        return await self._run(self._c_statistics(model_name, model_version, headers, query_params))

    # -- trace and log settings ------------------------------------------------------------------

    @doc_from(_Sync.update_trace_settings)
    async def update_trace_settings(
        self,
        model_name: str | None = None,
        settings: Mapping[str, Any] | None = None,
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        return await self._run(self._c_update_trace(model_name, settings, headers, query_params))

    @doc_from(_Sync.get_trace_settings)
    async def get_trace_settings(
        self, model_name: str | None = None, headers: Headers = None, query_params: Query = None
    ) -> Any:
        return await self._run(self._c_get_trace(model_name, headers, query_params))

    @doc_from(_Sync.update_log_settings)
    async def update_log_settings(
        self, settings: Mapping[str, Any], headers: Headers = None, query_params: Query = None
    ) -> Any:
        return await self._run(self._c_update_log(settings, headers, query_params))

    @doc_from(_Sync.get_log_settings)
    async def get_log_settings(self, headers: Headers = None, query_params: Query = None) -> Any:
        return await self._run(self._c_get_log(headers, query_params))

    # -- shared memory ---------------------------------------------------------------------------

    @doc_from(_Sync.get_system_shared_memory_status)
    async def get_system_shared_memory_status(
        self, region_name: str = "", headers: Headers = None, query_params: Query = None
    ) -> Any:
        return await self._run(self._c_system_shm_status(region_name, headers, query_params))

    @doc_from(_Sync.register_system_shared_memory)
    async def register_system_shared_memory(
        self,
        name: str,
        key: str,
        byte_size: int,
        offset: int = 0,
        headers: Headers = None,
        query_params: Query = None,
    ) -> None:
        await self._run(
            self._c_system_shm_register(name, key, byte_size, offset, headers, query_params)
        )
        if self._verbose:
            print(f"Registered system shared memory with name '{name}'")

    @doc_from(_Sync.unregister_system_shared_memory)
    async def unregister_system_shared_memory(
        self, name: str = "", headers: Headers = None, query_params: Query = None
    ) -> None:
        await self._run(self._c_system_shm_unregister(name, headers, query_params))

    @doc_from(_Sync.get_cuda_shared_memory_status)
    async def get_cuda_shared_memory_status(
        self, region_name: str = "", headers: Headers = None, query_params: Query = None
    ) -> Any:
        return await self._run(self._c_cuda_shm_status(region_name, headers, query_params))

    @doc_from(_Sync.register_cuda_shared_memory)
    async def register_cuda_shared_memory(
        self,
        name: str,
        raw_handle: bytes,
        device_id: int,
        byte_size: int,
        headers: Headers = None,
        query_params: Query = None,
    ) -> None:
        await self._run(
            self._c_cuda_shm_register(name, raw_handle, device_id, byte_size, headers, query_params)
        )

    @doc_from(_Sync.unregister_cuda_shared_memory)
    async def unregister_cuda_shared_memory(
        self, name: str = "", headers: Headers = None, query_params: Query = None
    ) -> None:
        await self._run(self._c_cuda_shm_unregister(name, headers, query_params))

    # -- inference -------------------------------------------------------------------------------

    @doc_from(_Sync.infer)
    async def infer(
        self,
        model_name: str,
        inputs: Sequence[InferInput],
        model_version: str = "",
        outputs: Sequence[InferRequestedOutput] | None = None,
        request_id: str = "",
        sequence_id: int | str = 0,
        sequence_start: bool = False,
        sequence_end: bool = False,
        priority: int = 0,
        timeout: int | None = None,
        headers: Headers = None,
        query_params: Query = None,
        request_compression_algorithm: str | None = None,
        response_compression_algorithm: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> InferResult:
        options = infer_options(
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters
        )
        return await self._run(
            self._c_infer(
                model_name,
                inputs,
                model_version,
                outputs,
                options,
                headers,
                query_params,
                request_compression_algorithm,
                response_compression_algorithm,
            )
        )

    # -- the generate extension (not in NVIDIA's client) ----------------------------------

    @doc_from(_Sync.generate)
    async def generate(
        self,
        model_name: str,
        inputs: Mapping[str, Any],
        parameters: Mapping[str, Any] | None = None,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> dict[str, Any]:
        call = self._c_generate(
            model_name, inputs, parameters, model_version, headers, query_params, stream=False
        )
        return await self._run(call)

    def generate_stream(
        self,
        model_name: str,
        inputs: Mapping[str, Any],
        parameters: Mapping[str, Any] | None = None,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> AsyncGenerateStream:
        """Stream the model's responses through Triton's generate extension
        (``POST .../generate_stream``, Server-Sent Events): ``async for response in
        client.generate_stream(...)``.

        An extension of NVIDIA's API (see :meth:`generate`).  The request is sent when
        iteration starts; ``conn_timeout`` bounds connecting and each wait for the next
        event, not the whole stream.  Leaving the loop early (``break`` then ``aclose()``,
        ``async with``, cancellation, an exception, garbage collection) closes the connection,
        and the server cancels the request.

        Parameters
        ----------
        model_name, inputs, parameters, model_version, headers, query_params
            As for :meth:`generate`.

        Returns
        -------
        AsyncGenerateStream
            An async iterator of response objects (dicts), also an async context manager.

        Raises
        ------
        InferenceServerException
            While iterating, as the sync client's ``generate_stream``.
        """
        call = self._c_generate(
            model_name, inputs, parameters, model_version, headers, query_params, stream=True
        )
        transport = self._transport
        return AsyncGenerateStream(lambda: transport.open_stream(call))
