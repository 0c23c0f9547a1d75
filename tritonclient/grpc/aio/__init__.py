"""The asyncio gRPC client (``tritonclient.grpc.aio.InferenceServerClient``).

The same methods as :class:`tritonclient.grpc.InferenceServerClient`, as coroutines, and
:meth:`InferenceServerClient.stream_infer` for streaming.  Requests are built and responses
read by the same functions as the sync client (:mod:`tritonclient.grpc._common`); only the
transport (``grpc.aio``) differs.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import grpc

from tritonclient import _auth as auth
from tritonclient._codec.types import infer_options
from tritonclient._docs import doc_from
from tritonclient._plugin import InferenceServerClientPlugin, Request
from tritonclient._proto import model_config_pb2, service_pb2, service_pb2_grpc
from tritonclient._ready import steps, wait_async
from tritonclient._retry import retry_async
from tritonclient._transport.grpc import (
    GrpcAioTransport,
    compression_type,
    error_from_rpc,
)
from tritonclient._transport.grpc_infer_stream import AioInferStream
from tritonclient._transport.grpc_replicas import AioReplicaTransport
from tritonclient._transport.grpc_stream import ResponseIterator, StreamState
from tritonclient.grpc import (
    MAX_GRPC_MESSAGE_SIZE,
    InferInput,
    InferRequestedOutput,
    InferResult,
    KeepAliveOptions,
    raise_error_grpc,
)
from tritonclient.grpc import _calls as calls
from tritonclient.grpc import _client as _sync
from tritonclient.grpc import _common as common
from tritonclient.utils import (
    InferenceServerException,
    np_to_triton_dtype,
    raise_error,
    triton_to_np_dtype,
)

#: The base class of the clients (NVIDIA's name for it, re-exported here as NVIDIA's module does).
InferenceServerClientBase = common.ClientBase

__all__ = [
    "MAX_GRPC_MESSAGE_SIZE",
    "InferInput",
    "InferRequestedOutput",
    "InferResult",
    "InferenceServerClient",
    "InferenceServerClientBase",
    "InferenceServerClientPlugin",
    "InferenceServerException",
    "KeepAliveOptions",
    "Request",
    "auth",
    "model_config_pb2",
    "np_to_triton_dtype",
    "raise_error",
    "raise_error_grpc",
    "service_pb2",
    "service_pb2_grpc",
    "triton_to_np_dtype",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


_Sync = _sync.InferenceServerClient


class InferenceServerClient(common.ClientBase):
    """This feature is currently in beta and may be subject to change.

    An analogy of the :class:`tritonclient.grpc.InferenceServerClient` to enable
    communication with the server over asyncio: the same constructor parameters, and the
    same methods as coroutines. Use it as ``async with InferenceServerClient(url) as c``,
    or ``await client.close()`` when done.

    Parameters
    ----------
    url : str
        The inference server URL, e.g. 'localhost:8001'.
    verbose : bool
        If True generate verbose output. Default value is False.
    ssl : bool
        If True use SSL encrypted secure channel. Default is False.
    root_certificates : str
        File holding the PEM-encoded root certificates, or None for gRPC's default.
    private_key : str
        File holding the PEM-encoded private key, or None.
    certificate_chain : str
        File holding the PEM-encoded certificate chain, or None.
    creds : grpc.ChannelCredentials
        Credentials to use (then ssl and the certificate options are ignored).
    keepalive_options : KeepAliveOptions
        GRPC KeepAlive options. Default is None (the defaults of KeepAliveOptions).
    channel_args : List[Tuple]
        Channel arguments added to the defaults (message size limits, keepalive); a key
        given here overrides the default of the same key. Default is None.
    retry_policy : tritonclient.utils.RetryPolicy, keyword-only
        Retry idempotent calls failing with UNAVAILABLE (see the sync client). Default None.
    infer_over_stream : bool, keyword-only
        Carry :meth:`infer` calls over one ``ModelStreamInfer`` stream the client keeps open
        (see the sync client for what changes). Any number of tasks may call :meth:`infer`
        at once; the stream belongs to the event loop that opened it (another loop opens its
        own). Cancelling a task that awaits :meth:`infer` stops its wait, not the request on
        the server. Default False.

    ``url`` may be a list of addresses or a ``dns:///`` / ``ipv4:`` target for round-robin
    load balancing, as with the sync client.
    """

    _driver = (grpc.aio, GrpcAioTransport, AioInferStream)
    _transport: GrpcAioTransport | AioReplicaTransport

    async def __aenter__(self) -> InferenceServerClient:
        return self

    async def __aexit__(self, type: Any, value: Any, traceback: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the client. Any future calls to server will result in an Error."""
        if self._infer_stream is not None:
            await self._infer_stream.close()
        await self._transport.close()

    @doc_from(_Sync.wait_until_ready)
    async def wait_until_ready(
        self,
        model_name: str | None = None,
        model_version: str = "",
        timeout: float = 30.0,
        interval: float = 0.1,
        headers: Mapping[str, Any] | None = None,
    ) -> None:

        async def check(what: str, remaining: float) -> bool:
            call = calls.readiness(what, model_name, model_version)
            return await self._unary(call, headers, remaining)

        await wait_async(check, steps(model_name, timeout, interval, common.not_ready_error))

    async def _run(self, call: common.Ready[T]) -> T:
        """The driver: ``call`` made (again as its policy allows), its answer read."""
        try:
            answer = await retry_async(call.send, call.policy, common.is_retryable)
        except InferenceServerException as error:
            raise call.failed(error) from None
        return call.finish(answer)

    async def _unary(self, call: calls.Call[T], headers: Any, client_timeout: float | None) -> T:
        return await self._run(self._c_unary(call, headers, client_timeout))

    @doc_from(_Sync.is_server_live)
    async def is_server_live(
        self, headers: Mapping[str, Any] | None = None, client_timeout: float | None = None
    ) -> bool:
        return await self._unary(calls.server_live(), headers, client_timeout)

    @doc_from(_Sync.is_server_ready)
    async def is_server_ready(
        self, headers: Mapping[str, Any] | None = None, client_timeout: float | None = None
    ) -> bool:
        return await self._unary(calls.server_ready(), headers, client_timeout)

    @doc_from(_Sync.is_model_ready)
    async def is_model_ready(
        self,
        model_name: str,
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> bool:
        call = calls.model_ready(model_name, model_version)
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.get_server_metadata)
    async def get_server_metadata(
        self,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        return await self._unary(calls.server_metadata(as_json), headers, client_timeout)

    @doc_from(_Sync.get_model_metadata)
    async def get_model_metadata(
        self,
        model_name: str,
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.model_metadata(model_name, model_version, as_json)
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.get_model_config)
    async def get_model_config(
        self,
        model_name: str,
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.model_config(model_name, model_version, as_json)
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.get_model_repository_index)
    async def get_model_repository_index(
        self,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        return await self._unary(calls.repository_index(as_json), headers, client_timeout)

    @doc_from(_Sync.load_model)
    async def load_model(
        self,
        model_name: str,
        headers: Mapping[str, Any] | None = None,
        config: str | None = None,
        files: Mapping[str, bytes] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        call = calls.load_model(model_name, config, files)
        await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.unload_model)
    async def unload_model(
        self,
        model_name: str,
        headers: Mapping[str, Any] | None = None,
        unload_dependents: bool = False,
        client_timeout: float | None = None,
    ) -> None:
        call = calls.unload_model(model_name, unload_dependents)
        await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.get_inference_statistics)
    async def get_inference_statistics(
        self,
        model_name: str = "",
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.inference_statistics(model_name, model_version, as_json)
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.update_trace_settings)
    async def update_trace_settings(
        self,
        model_name: str | None = None,
        settings: Mapping[str, Any] | None = None,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.trace_settings(model_name, settings, as_json, "update_trace_settings")
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.get_trace_settings)
    async def get_trace_settings(
        self,
        model_name: str | None = None,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.trace_settings(model_name, None, as_json, "get_trace_settings")
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.update_log_settings)
    async def update_log_settings(
        self,
        settings: Mapping[str, Any],
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.log_settings(settings, as_json, "update_log_settings")
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.get_log_settings)
    async def get_log_settings(
        self,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.log_settings(None, as_json, "get_log_settings")
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.get_system_shared_memory_status)
    async def get_system_shared_memory_status(
        self,
        region_name: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.system_shm_status(region_name, as_json)
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.register_system_shared_memory)
    async def register_system_shared_memory(
        self,
        name: str,
        key: str,
        byte_size: int,
        offset: int = 0,
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        call = calls.register_system_shm(name, key, byte_size, offset)
        await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.unregister_system_shared_memory)
    async def unregister_system_shared_memory(
        self,
        name: str = "",
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        await self._unary(calls.unregister_system_shm(name), headers, client_timeout)

    @doc_from(_Sync.get_cuda_shared_memory_status)
    async def get_cuda_shared_memory_status(
        self,
        region_name: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        call = calls.cuda_shm_status(region_name, as_json)
        return await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.register_cuda_shared_memory)
    async def register_cuda_shared_memory(
        self,
        name: str,
        raw_handle: bytes,
        device_id: int,
        byte_size: int,
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        call = calls.register_cuda_shm(name, raw_handle, device_id, byte_size)
        await self._unary(call, headers, client_timeout)

    @doc_from(_Sync.unregister_cuda_shared_memory)
    async def unregister_cuda_shared_memory(
        self,
        name: str = "",
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        await self._unary(calls.unregister_cuda_shm(name), headers, client_timeout)

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
        client_timeout: float | None = None,
        headers: Mapping[str, Any] | None = None,
        compression_algorithm: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> InferResult:
        options = infer_options(
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters
        )
        transfer = (client_timeout, headers, compression_algorithm)
        call = self._c_infer(model_name, inputs, model_version, outputs, options, transfer)
        return await self._run(call)

    def stream_infer(
        self,
        inputs_iterator: AsyncIterable[dict[str, Any]],
        stream_timeout: float | None = None,
        headers: Mapping[str, Any] | None = None,
        compression_algorithm: str | None = None,
    ) -> ResponseIterator:
        """Runs an asynchronous inference over gRPC bi-directional streaming API.

        Parameters
        ----------
        inputs_iterator : asynchronous iterator
            Async iterator that yields a dict(s) consists of the input parameters to the
            :meth:`tritonclient.grpc.InferenceServerClient.async_stream_infer` function
            defined in :class:`tritonclient.grpc.InferenceServerClient`: ``model_name``
            and ``inputs`` (required), ``model_version``, ``outputs``, ``request_id``,
            ``sequence_id``, ``sequence_start``, ``sequence_end``, ``priority``,
            ``timeout``, ``parameters`` and ``enable_empty_final_response``. If the
            iterator raises, the response iterator raises the same exception (instead of
            a bare cancellation).
        stream_timeout : float
            Optional stream timeout. The stream will be closed once the specified timeout
            expires.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        compression_algorithm : str
            Optional grpc compression algorithm to be used on client side. Currently
            supports "deflate", "gzip" and None. By default, no compression is used.

        Returns
        -------
        asynchronous iterator
            Async iterator that yields a tuple(:class:`InferResult`,
            :class:`InferenceServerException`) object for each response; exactly one of
            them is None (a response whose outputs do not hold what they say is an error
            pair; the stream goes on). It also has ``cancel()``, which cancels the stream and
            its requests (iteration then ends).

        Raises
        ------
        InferenceServerException
            Once, ending the iteration: if inputs_iterator does not yield the correct input,
            or the stream fails (e.g. ``StatusCode.DEADLINE_EXCEEDED`` after
            ``stream_timeout``; a message that does not parse; the client closed; the server
            ending the stream before inputs_iterator is exhausted, or without the final
            response due to a request sent with ``enable_empty_final_response``: see
            :class:`tritonclient._codec.grpc_client.StreamLedger` for the rule).
        """
        metadata = self._get_metadata(headers)
        state = StreamState()
        try:
            call = self._transport.stream(
                state.requests(inputs_iterator, common.infer_request_from_dict, self._verbose),
                metadata=metadata,
                timeout=stream_timeout,
                compression=compression_type(compression_algorithm),
            )
        except grpc.RpcError as rpc_error:
            raise error_from_rpc(rpc_error) from None
        return ResponseIterator(call, state, self._verbose, common.parse_stream, common.stream_item)
