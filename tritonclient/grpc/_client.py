"""The synchronous gRPC client (``tritonclient.grpc.InferenceServerClient``).

Requests and responses are built and read by :mod:`tritonclient.grpc._common` and
:mod:`tritonclient._codec.grpc_client`; this module only moves them: blocking unary calls, futures
for :meth:`InferenceServerClient.async_infer`, and a bidirectional stream served by one
thread for :meth:`InferenceServerClient.start_stream`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import grpc

from tritonclient._codec.types import infer_options
from tritonclient._ready import steps, wait_sync
from tritonclient._retry import retry_sync
from tritonclient._transport.grpc import (
    GrpcTransport,
    compression_type,
    error_from_rpc,
    error_of_call,
)
from tritonclient._transport.grpc_infer_stream import InferStream
from tritonclient._transport.grpc_replicas import ReplicaTransport
from tritonclient._transport.grpc_stream import CallbackStream
from tritonclient.utils import (
    InferenceServerException,
    raise_error,
)

from . import _calls as calls
from . import _common as common
from ._tensors import InferInput, InferRequestedOutput, InferResult

__all__ = ["STOP_STREAM_TIMEOUT", "CallContext", "InferenceServerClient"]

T = TypeVar("T")

#: ``callback(result=..., error=...)`` of :meth:`InferenceServerClient.async_infer` and
#: :meth:`InferenceServerClient.start_stream`.
Callback = Callable[..., Any]


class CallContext:
    """The handle of an :meth:`InferenceServerClient.async_infer` request.

    Parameters
    ----------
    grpc_future : grpc.Future
        The call.
    """

    def __init__(self, grpc_future: Any) -> None:
        self._future = grpc_future

    def cancel(self) -> bool:
        """Issue a cancellation request for the inference; the callback then receives an
        ``InferenceServerException`` with status ``StatusCode.CANCELLED``.

        Returns
        -------
        bool
            True if the request was cancelled, False if it had already completed.
        """
        return bool(self._future.cancel())


#: How long ``stop_stream()`` waits, by default, for the requests still pending on a stream
#: opened without ``stream_timeout`` before it cancels them (seconds).
STOP_STREAM_TIMEOUT = 60.0


class InferenceServerClient(common.ClientBase):
    """An InferenceServerClient object is used to perform any kind of communication with
    the InferenceServer using gRPC protocol. Most of the methods are thread-safe except
    start_stream, stop_stream and async_stream_infer. Accessing a client stream with
    different threads will cause undefined behavior.

    Parameters
    ----------
    url : str
        The inference server URL, e.g. 'localhost:8001'.
    verbose : bool
        If True generate verbose output. Default value is False.
    ssl : bool
        If True use SSL encrypted secure channel. Default is False.
    root_certificates : str
        File holding the PEM-encoded root certificates as a byte string, or None to
        retrieve them from a default location chosen by gRPC runtime. The option is
        ignored if `ssl` is False. Default is None.
    private_key : str
        File holding the PEM-encoded private key as a byte string, or None if no private
        key should be used. The option is ignored if `ssl` is False. Default is None.
    certificate_chain : str
        File holding PEM-encoded certificate chain as a byte string to use or None if no
        certificate chain should be used. The option is ignored if `ssl` is False.
        Default is None.
    creds : grpc.ChannelCredentials
        A grpc.ChannelCredentials object to use for the connection. The ssl,
        root_certificates, private_key and certificate_chain options will be ignored when
        using this option. Default is None.
    keepalive_options : KeepAliveOptions
        Object encapsulating various GRPC KeepAlive options. See the class definition for
        more information. Default is None.
    channel_args : List[Tuple]
        List of Tuple pairs ("key", value) passed to the GRPC channel as channel
        arguments. Unlike NVIDIA's client, they are added to the client's defaults (message
        size limits and the keepalive arguments of ``keepalive_options``) instead of
        replacing them; a key given here overrides the default of the same key. Default is
        None.
    retry_policy : tritonclient.utils.RetryPolicy, keyword-only
        (Not in NVIDIA's client.) Retry idempotent calls (health, metadata, config,
        statistics, repository index, settings and shared-memory status) that fail with
        UNAVAILABLE. Inference and state-changing calls are never retried (``infer`` outside
        sequences is, with ``RetryPolicy(retry_infer=True)``). Default None: no retries.
    infer_over_stream : bool, keyword-only
        (Not in NVIDIA's client.) Carry :meth:`infer` calls over one ``ModelStreamInfer``
        stream the client keeps open, instead of a unary ``ModelInfer`` call each: about 0.6x
        the client CPU of a unary call per small call (asyncio client: 0.4x; grpcio's unary
        machinery is most of a unary call's cost; see the README and
        ``benchmarks/bench_hotpath.py``).  Results are those of the
        unary call for every model that is not decoupled (the caller's ``request_id``
        included: the client sends each request with an id of its own, ``~1``, ``~2``, ...,
        which is what the server and the model see, and gives the caller's back).  What
        changes: ``client_timeout`` bounds the wait but does not cancel the request on the
        server (it runs on; its late answer is dropped); a call with ``headers`` or
        ``compression_algorithm`` goes unary (a stream has one set of headers, taken from the
        plugin when it opens; the stream is opened again when they change); a failed
        request's error has the unary call's message, and its status where the message
        tells it (unknown model: NOT_FOUND, invalid request: INVALID_ARGUMENT, queue full or
        timed out: UNAVAILABLE; otherwise none), no gRPC debug details; a decoupled model is
        run (the unary call refuses it) and the call fails with the unary call's
        UNIMPLEMENTED error when its first response is not its last (use
        :meth:`start_stream` for decoupled models).  Any number of threads may call
        :meth:`infer` at once: their requests share the stream.  A stream that breaks fails
        the calls waiting on it with its status (UNAVAILABLE when the server ended it), as
        unary calls on a broken connection fail; the next call opens a new stream.
        :meth:`async_infer` and the other methods stay unary.  Not with a ``url`` naming
        several replicas. Default False.

    ``url`` may also be a gRPC target with a scheme (``dns:///name:port``, e.g. a headless
    Kubernetes Service, ``ipv4:a:p,b:p``) or a list of ``host:port`` (IP addresses or
    localhost): the channel then balances calls round-robin over every address, skipping
    replicas whose ``grpc.health.v1`` service reports NOT_SERVING, with a reconnect backoff
    of at most 10 s (see :func:`tritonclient._transport.grpc.balancing_options`;
    ``channel_args`` override each of these). Such a client keeps the unary calls of each
    sequence on one replica (a channel of its own to that address), refuses shared-memory
    registration (per server), and gives per-replica counters (:meth:`replica_stats`).

    Raises
    ------
    Exception
        If unable to create a client.
    """

    _driver = (grpc, GrpcTransport, InferStream)
    _transport: GrpcTransport | ReplicaTransport
    #: The stream of :meth:`start_stream`, while it is open.
    _stream: CallbackStream | None = None

    def __enter__(self) -> InferenceServerClient:
        return self

    def __exit__(self, type: Any, value: Any, traceback: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if hasattr(self, "_channel") and not getattr(self, "_closed", True):
            with contextlib.suppress(Exception):  # e.g. at interpreter shutdown
                # Nobody can stop the stream any more: cancel it rather than wait for it.
                stream, self._stream = self._stream, None
                if stream is not None:
                    stream.close(cancel_requests=True, wait=False)
                self.close()

    def close(self) -> None:
        """Close the client. Any future calls to server will result in an Error.

        A stream still open is stopped as :meth:`stop_stream` does with its defaults (a
        bounded wait for its pending requests, then cancelled).
        """
        self.stop_stream()
        self._closed = True
        if self._infer_stream is not None:
            self._infer_stream.close()
        self._transport.close()

    def _run(self, call: common.Ready[T]) -> T:
        """The driver: ``call`` made (again as its policy allows), its answer read."""
        try:
            answer = retry_sync(call.send, call.policy, common.is_retryable)
        except InferenceServerException as error:
            raise call.failed(error) from None
        return call.finish(answer)

    def _unary(self, call: calls.Call[T], headers: Any, client_timeout: float | None) -> T:
        return self._run(self._c_unary(call, headers, client_timeout))

    def is_server_live(
        self, headers: Mapping[str, Any] | None = None, client_timeout: float | None = None
    ) -> bool:
        """Contact the inference server and get liveness.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take. The
            client will abort request and raise InferenceServerExeption with message
            "Deadline Exceeded" when the specified time elapses. The default value is None
            which means client will wait for the response from the server.

        Returns
        -------
        bool
            True if server is live, False if server is not live.

        Raises
        ------
        InferenceServerException
            If unable to get liveness or has timed out.
        """
        return self._unary(calls.server_live(), headers, client_timeout)

    def is_server_ready(
        self, headers: Mapping[str, Any] | None = None, client_timeout: float | None = None
    ) -> bool:
        """Contact the inference server and get readiness.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        bool
            True if server is ready, False if server is not ready.

        Raises
        ------
        InferenceServerException
            If unable to get readiness or has timed out.
        """
        return self._unary(calls.server_ready(), headers, client_timeout)

    def is_model_ready(
        self,
        model_name: str,
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> bool:
        """Contact the inference server and get the readiness of specified model.

        Parameters
        ----------
        model_name : str
            The name of the model to check for readiness.
        model_version : str
            The version of the model to check for readiness. The default value is an empty
            string which means then the server will choose a version based on the model and
            internal policy.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        bool
            True if the model is ready, False if not ready.

        Raises
        ------
        InferenceServerException
            If unable to get model readiness or has timed out.
        """
        return self._unary(calls.model_ready(model_name, model_version), headers, client_timeout)

    def get_server_metadata(
        self,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Contact the inference server and get its metadata.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns server metadata as a json dict, otherwise as a protobuf
            message. Default value is False. The returned json is generated from the
            protobuf message using MessageToJson and as a result int64 values are
            represented as string.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or ServerMetadataResponse message holding the metadata.

        Raises
        ------
        InferenceServerException
            If unable to get server metadata or has timed out.
        """
        return self._unary(calls.server_metadata(as_json), headers, client_timeout)

    def get_model_metadata(
        self,
        model_name: str,
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Contact the inference server and get the metadata for specified model.

        Parameters
        ----------
        model_name : str
            The name of the model.
        model_version : str
            The version of the model to get metadata. The default value is an empty string
            which means then the server will choose a version based on the model and
            internal policy.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns model metadata as a json dict, otherwise as a protobuf
            message (MessageToJson: int64 values are strings). Default value is False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or ModelMetadataResponse message holding the metadata.

        Raises
        ------
        InferenceServerException
            If unable to get model metadata or has timed out.
        """
        call = calls.model_metadata(model_name, model_version, as_json)
        return self._unary(call, headers, client_timeout)

    def get_model_config(
        self,
        model_name: str,
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Contact the inference server and get the configuration for specified model.

        Parameters
        ----------
        model_name : str
            The name of the model.
        model_version : str
            The version of the model to get configuration. The default value is an empty
            string which means then the server will choose a version based on the model
            and internal policy.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns configuration as a json dict, otherwise as a protobuf
            message (MessageToJson: int64 values are strings). Default value is False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or ModelConfigResponse message holding the metadata.

        Raises
        ------
        InferenceServerException
            If unable to get model configuration or has timed out.
        """
        call = calls.model_config(model_name, model_version, as_json)
        return self._unary(call, headers, client_timeout)

    def get_model_repository_index(
        self,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Get the index of model repository contents.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns model repository index as a json dict, otherwise as a
            protobuf message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or RepositoryIndexResponse message holding the model repository
            index.

        Raises
        ------
        InferenceServerException
            If unable to get the index or has timed out.
        """
        return self._unary(calls.repository_index(as_json), headers, client_timeout)

    def load_model(
        self,
        model_name: str,
        headers: Mapping[str, Any] | None = None,
        config: str | None = None,
        files: Mapping[str, bytes] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        """Request the inference server to load or reload specified model.

        Parameters
        ----------
        model_name : str
            The name of the model to be loaded.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        config : str
            Optional JSON representation of a model config provided for the load request,
            if provided, this config will be used for loading the model.
        files : dict
            Optional dictionary specifying file path (with "file:" prefix) in the override
            model directory to the file content as bytes. The files will form the model
            directory that the model will be loaded from. If specified, 'config' must be
            provided to be the model configuration of the override model directory.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Raises
        ------
        InferenceServerException
            If unable to load the model or has timed out.
        """
        self._unary(calls.load_model(model_name, config, files), headers, client_timeout)

    def unload_model(
        self,
        model_name: str,
        headers: Mapping[str, Any] | None = None,
        unload_dependents: bool = False,
        client_timeout: float | None = None,
    ) -> None:
        """Request the inference server to unload specified model.

        Parameters
        ----------
        model_name : str
            The name of the model to be unloaded.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        unload_dependents : bool
            Whether the dependents of the model should also be unloaded.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Raises
        ------
        InferenceServerException
            If unable to unload the model or has timed out.
        """
        self._unary(calls.unload_model(model_name, unload_dependents), headers, client_timeout)

    def get_inference_statistics(
        self,
        model_name: str = "",
        model_version: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Get the inference statistics for the specified model name and version.

        Parameters
        ----------
        model_name : str
            The name of the model to get statistics. The default value is an empty string,
            which means statistics of all models will be returned.
        model_version : str
            The version of the model to get inference statistics. The default value is an
            empty string which means then the server will return the statistics of all
            available model versions.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns inference statistics as a json dict, otherwise as a
            protobuf message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or ModelStatisticsResponse message.

        Raises
        ------
        InferenceServerException
            If unable to get the model inference statistics or has timed out.
        """
        call = calls.inference_statistics(model_name, model_version, as_json)
        return self._unary(call, headers, client_timeout)

    def update_trace_settings(
        self,
        model_name: str | None = None,
        settings: Mapping[str, Any] | None = None,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Update the trace settings for the specified model name, or global trace settings
        if model name is not given. Returns the trace settings after the update.

        Parameters
        ----------
        model_name : str
            The name of the model to update trace settings. Specifying None or empty string
            will update the global trace settings. The default value is None.
        settings : dict
            The new trace setting values. Only the settings listed will be updated. If a
            trace setting is listed in the dictionary with a value of 'None', that setting
            will be cleared.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns trace settings as a json dict, otherwise as a protobuf
            message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or TraceSettingResponse message holding the updated trace
            settings.

        Raises
        ------
        InferenceServerException
            If unable to update the trace settings or has timed out.
        """
        call = calls.trace_settings(model_name, settings, as_json, "update_trace_settings")
        return self._unary(call, headers, client_timeout)

    def get_trace_settings(
        self,
        model_name: str | None = None,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Get the trace settings for the specified model name, or global trace settings if
        model name is not given.

        Parameters
        ----------
        model_name : str
            The name of the model to get trace settings. Specifying None or empty string
            will return the global trace settings. The default value is None.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns trace settings as a json dict, otherwise as a protobuf
            message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or TraceSettingResponse message holding the trace settings.

        Raises
        ------
        InferenceServerException
            If unable to get the trace settings or has timed out.
        """
        call = calls.trace_settings(model_name, None, as_json, "get_trace_settings")
        return self._unary(call, headers, client_timeout)

    def update_log_settings(
        self,
        settings: Mapping[str, Any],
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Update the global log settings. Returns the log settings after the update.

        Parameters
        ----------
        settings : dict
            The new log setting values. Only the settings listed will be updated.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns log settings as a json dict, otherwise as a protobuf
            message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or LogSettingsResponse message holding the updated log settings.

        Raises
        ------
        InferenceServerException
            If unable to update the log settings or has timed out.
        """
        call = calls.log_settings(settings, as_json, "update_log_settings")
        return self._unary(call, headers, client_timeout)

    def get_log_settings(
        self,
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Get the global log settings.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns log settings as a json dict, otherwise as a protobuf
            message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or LogSettingsResponse message holding the log settings.

        Raises
        ------
        InferenceServerException
            If unable to get the log settings or has timed out.
        """
        call = calls.log_settings(None, as_json, "get_log_settings")
        return self._unary(call, headers, client_timeout)

    def get_system_shared_memory_status(
        self,
        region_name: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Request system shared memory status from the server.

        Parameters
        ----------
        region_name : str
            The name of the region to query status. The default value is an empty string,
            which means that the status of all active system shared memory will be
            returned.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns system shared memory status as a json dict, otherwise as
            a protobuf message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or SystemSharedMemoryStatusResponse message holding the system
            shared memory status.

        Raises
        ------
        InferenceServerException
            If unable to get the status of specified shared memory or has timed out.
        """
        call = calls.system_shm_status(region_name, as_json)
        return self._unary(call, headers, client_timeout)

    def register_system_shared_memory(
        self,
        name: str,
        key: str,
        byte_size: int,
        offset: int = 0,
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        """Request the server to register a system shared memory with the following
        specification.

        Parameters
        ----------
        name : str
            The name of the region to register.
        key : str
            The key of the underlying memory object that contains the system shared memory
            region.
        byte_size : int
            The size of the system shared memory region, in bytes.
        offset : int
            Offset, in bytes, within the underlying memory object to the start of the
            system shared memory region. The default value is zero.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Raises
        ------
        InferenceServerException
            If unable to register the specified system shared memory or has timed out.
        """
        call = calls.register_system_shm(name, key, byte_size, offset)
        self._unary(call, headers, client_timeout)

    def unregister_system_shared_memory(
        self,
        name: str = "",
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        """Request the server to unregister a system shared memory with the specified name.

        Parameters
        ----------
        name : str
            The name of the region to unregister. The default value is empty string which
            means all the system shared memory regions will be unregistered.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Raises
        ------
        InferenceServerException
            If unable to unregister the specified system shared memory region or has timed
            out.
        """
        self._unary(calls.unregister_system_shm(name), headers, client_timeout)

    def get_cuda_shared_memory_status(
        self,
        region_name: str = "",
        headers: Mapping[str, Any] | None = None,
        as_json: bool = False,
        client_timeout: float | None = None,
    ) -> Any:
        """Request cuda shared memory status from the server.

        Parameters
        ----------
        region_name : str
            The name of the region to query status. The default value is an empty string,
            which means that the status of all active cuda shared memory will be returned.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        as_json : bool
            If True then returns cuda shared memory status as a json dict, otherwise as a
            protobuf message (MessageToJson: int64 values are strings). Default False.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Returns
        -------
        dict or protobuf message
            The JSON dict or CudaSharedMemoryStatusResponse message holding the cuda shared
            memory status.

        Raises
        ------
        InferenceServerException
            If unable to get the status of specified shared memory or has timed out.
        """
        call = calls.cuda_shm_status(region_name, as_json)
        return self._unary(call, headers, client_timeout)

    def register_cuda_shared_memory(
        self,
        name: str,
        raw_handle: bytes,
        device_id: int,
        byte_size: int,
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        """Request the server to register a cuda shared memory with the following
        specification.

        Parameters
        ----------
        name : str
            The name of the region to register.
        raw_handle : bytes
            The raw serialized cudaIPC handle in base64 encoding (as
            ``cuda_shared_memory.get_raw_handle()`` returns it).
        device_id : int
            The GPU device ID on which the cudaIPC handle was created.
        byte_size : int
            The size of the cuda shared memory region, in bytes.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Raises
        ------
        InferenceServerException
            If unable to register the specified cuda shared memory or has timed out.
        """
        call = calls.register_cuda_shm(name, raw_handle, device_id, byte_size)
        self._unary(call, headers, client_timeout)

    def unregister_cuda_shared_memory(
        self,
        name: str = "",
        headers: Mapping[str, Any] | None = None,
        client_timeout: float | None = None,
    ) -> None:
        """Request the server to unregister a cuda shared memory with the specified name.

        Parameters
        ----------
        name : str
            The name of the region to unregister. The default value is empty string which
            means all the cuda shared memory regions will be unregistered.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take
            ("Deadline Exceeded" when it elapses). Default None: wait for the server.

        Raises
        ------
        InferenceServerException
            If unable to unregister the specified cuda shared memory region or has timed
            out.
        """
        self._unary(calls.unregister_cuda_shm(name), headers, client_timeout)

    def infer(
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
        """Run synchronous inference using the supplied 'inputs' requesting the outputs
        specified by 'outputs'.

        Parameters
        ----------
        model_name : str
            The name of the model to run inference.
        inputs : list
            A list of InferInput objects, each describing data for an input tensor required
            by the model.
        model_version : str
            The version of the model to run inference. The default value is an empty
            string which means then the server will choose a version based on the model
            and internal policy.
        outputs : list
            A list of InferRequestedOutput objects, each describing how the output data
            must be returned. If not specified all outputs produced by the model will be
            returned using default settings.
        request_id : str
            Optional identifier for the request. If specified will be returned in the
            response. Default value is an empty string which means no request_id will be
            used.
        sequence_id : int or str
            The unique identifier for the sequence being represented by the object. A value
            of 0 or "" means that the request does not belong to a sequence. Default is 0.
        sequence_start : bool
            Indicates whether the request being added marks the start of the sequence.
            Default value is False. This argument is ignored if 'sequence_id' is 0 or "".
        sequence_end : bool
            Indicates whether the request being added marks the end of the sequence.
            Default value is False. This argument is ignored if 'sequence_id' is 0 or "".
        priority : int
            Indicates the priority of the request. Priority value zero indicates that the
            default priority level should be used (i.e. same behavior as not specifying the
            priority parameter). Lower value priorities indicate higher priority levels.
        timeout : int
            The timeout value for the request, in microseconds. If the request cannot be
            completed within the time the server can take a model-specific action such as
            terminating the request. If not provided, the server will handle the request
            using default setting for the model. This option is only respected by the
            model that is configured with dynamic batching.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take. The
            client will abort request and raise InferenceServerExeption with message
            "Deadline Exceeded" when the specified time elapses. The default value is None
            which means client will wait for the response from the server.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        compression_algorithm : str
            Optional grpc compression algorithm to be used on client side. Currently
            supports "deflate", "gzip" and None. By default, no compression is used.
        parameters : dict
            Optional custom parameters to be included in the inference request.

        Returns
        -------
        InferResult
            The object holding the result of the inference.

        Raises
        ------
        InferenceServerException
            If server fails to perform inference.
        """
        options = infer_options(
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters
        )
        transfer = (client_timeout, headers, compression_algorithm)
        call = self._c_infer(model_name, inputs, model_version, outputs, options, transfer)
        return self._run(call)

    def async_infer(
        self,
        model_name: str,
        inputs: Sequence[InferInput],
        callback: Callback,
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
    ) -> CallContext:
        """Run asynchronous inference using the supplied 'inputs' requesting the outputs
        specified by 'outputs'.

        Parameters
        ----------
        model_name : str
            The name of the model to run inference.
        inputs : list
            A list of InferInput objects, each describing data for an input tensor required
            by the model.
        callback : function
            Python function that is invoked once the request is completed. The function
            must reserve the last two arguments (result, error) to hold InferResult and
            InferenceServerException objects respectively which will be provided to the
            function when executing the callback. The ownership of these objects will be
            given to the user. The 'error' would be None for a successful inference.
        model_version : str
            The version of the model to run inference ("" lets the server choose).
        outputs : list
            A list of InferRequestedOutput objects; all outputs when not specified.
        request_id : str
            Optional identifier for the request, returned in the response.
        sequence_id : int or str
            The unique identifier for the sequence (0 or "": not part of a sequence).
        sequence_start : bool
            Whether the request marks the start of the sequence. Default False.
        sequence_end : bool
            Whether the request marks the end of the sequence. Default False.
        priority : int
            The priority of the request (0: the model's default).
        timeout : int
            The server-side timeout value for the request, in microseconds.
        client_timeout : float
            The maximum end-to-end time, in seconds, the request is allowed to take. The
            client will abort request and provide error with message "Deadline Exceeded"
            in the callback when the specified time elapses. The default value is None
            which means client will wait for the response from the server.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        compression_algorithm : str
            Optional grpc compression algorithm to be used on client side. Currently
            supports "deflate", "gzip" and None. By default, no compression is used.
        parameters : dict
            Optional custom parameters to be included in the inference request.

        Returns
        -------
        CallContext
            A representation of a computation in another control flow; ``cancel()``
            cancels the inference request.

        Raises
        ------
        InferenceServerException
            If server fails to issue inference.
        """
        options = infer_options(
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters
        )
        transfer = (client_timeout, headers, compression_algorithm)
        call = self._c_infer(
            model_name, inputs, model_version, outputs, options, transfer, "async_infer"
        )

        def wrapped_callback(call_future: Any) -> None:
            result: InferResult | None = None
            error: InferenceServerException | None = None
            try:
                result = call.finish(call_future.result())
            except grpc.FutureCancelledError:
                error = common.cancelled_error()
            except grpc.RpcError as rpc_error:
                error = error_of_call(rpc_error)
            except InferenceServerException as failure:
                error = failure
            except Exception as failure:  # never leave the callback waiting
                error = InferenceServerException(f"failed to read the response: {failure}")
            callback(result=result, error=error)

        future = call.transport.infer_future(
            call.data, metadata=call.metadata, timeout=client_timeout, compression=call.compression
        )
        self._call_future = future
        if self._verbose:
            print("Sent request" + (f" '{request_id}'" if request_id else ""))
        future.add_done_callback(wrapped_callback)
        return CallContext(future)

    def start_stream(
        self,
        callback: Callback,
        stream_timeout: float | None = None,
        headers: Mapping[str, Any] | None = None,
        compression_algorithm: str | None = None,
    ) -> None:
        """Starts a grpc bi-directional stream to send streaming inferences.
        Note: When using stream, user must ensure the InferenceServerClient.close()
        gets called at exit.

        Parameters
        ----------
        callback : function
            Python function that is invoked upon receiving response from the underlying
            stream. The function must reserve the last two arguments (result, error) to
            hold InferResult and InferenceServerException objects respectively which will
            be provided to the function when executing the callback. The ownership of these
            objects will be given to the user. The 'error' would be None for a successful
            inference. An exception raised by the callback is printed and the stream goes
            on. A failure of the stream itself (its status, a message that does not parse,
            the server ending it before :meth:`stop_stream`, or without the final response
            due to a request sent with ``enable_empty_final_response``) is given once, as
            the last call.
        stream_timeout : float
            Optional stream timeout (in seconds). The stream will be closed once the
            specified timeout expires.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the
            request.
        compression_algorithm : str
            Optional grpc compression algorithm to be used on client side. Currently
            supports "deflate", "gzip" and None. By default, no compression is used.

        Raises
        ------
        InferenceServerException
            If unable to start a stream or a stream was already running for this client or
            has timed out.
        """
        if self._stream is not None:
            raise_error(
                "cannot start another stream with one already running. "
                "'InferenceServerClient' supports only a single active stream at a given "
                "time."
            )
        metadata = self._get_metadata(headers)
        stream = CallbackStream(callback, self._verbose, common.parse_stream, common.stream_item)
        try:
            stream.start(
                self._transport.stream,
                metadata,
                stream_timeout,
                compression_type(compression_algorithm),
            )
        except grpc.RpcError as rpc_error:
            raise error_from_rpc(rpc_error) from None
        self._stream = stream

    def stop_stream(self, cancel_requests: bool = False, timeout: float | None = None) -> None:
        """Stops a stream if one available.

        Parameters
        ----------
        cancel_requests : bool
            If set True, then client cancels all the pending requests and closes the
            stream. If set False, the call blocks till all the pending requests on the
            stream are processed, or the wait below ends.
        timeout : float, optional
            (Not in NVIDIA's client.) With ``cancel_requests`` False, the longest wait in
            seconds for the pending requests; then the stream is cancelled and the callback
            receives a ``StatusCode.CANCELLED`` error naming the requests still pending.
            Default None: until the stream's ``stream_timeout`` (and one second) when it was
            started with one, else :data:`STOP_STREAM_TIMEOUT` (60 s), so that a stalled
            server never blocks the caller for ever (a stream the server ends or breaks
            returns at once).
        """
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close(cancel_requests, timeout, default_timeout=STOP_STREAM_TIMEOUT)

    def wait_until_ready(
        self,
        model_name: str | None = None,
        model_version: str = "",
        timeout: float = 30.0,
        interval: float = 0.1,
        headers: Mapping[str, Any] | None = None,
    ) -> None:
        """Wait until the server (and ``model_name``, when given) is ready.

        Not in NVIDIA's client. Refused connections and errors while waiting count as "not
        ready yet".

        Parameters
        ----------
        model_name : str, optional
            Also wait for this model to be ready.
        model_version : str
            The model version ("" for the server's choice).
        timeout : float
            The longest wait in seconds. Default 30.
        interval : float
            Seconds between checks. Default 0.1.
        headers : dict, optional
            Headers for the health requests.

        Raises
        ------
        InferenceServerDeadlineExceededError
            If the server or model is still not ready after ``timeout`` seconds; the message
            names which, and the last error seen.
        """

        def check(what: str, remaining: float) -> bool:
            return self._unary(calls.readiness(what, model_name, model_version), headers, remaining)

        wait_sync(check, steps(model_name, timeout, interval, common.not_ready_error))

    def async_stream_infer(
        self,
        model_name: str,
        inputs: Sequence[InferInput],
        model_version: str = "",
        outputs: Sequence[InferRequestedOutput] | None = None,
        request_id: str = "",
        sequence_id: int | str = 0,
        sequence_start: bool = False,
        sequence_end: bool = False,
        enable_empty_final_response: bool = False,
        priority: int = 0,
        timeout: int | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        """Runs an asynchronous inference over gRPC bi-directional streaming API. A stream
        must be established with a call to start_stream() before calling this function.
        All the results will be provided to the callback function associated with the
        stream.

        The request is serialized here, so the inputs may be changed or reused as soon as
        this method returns.

        Parameters
        ----------
        model_name : str
            The name of the model to run inference.
        inputs : list
            A list of InferInput objects, each describing data for an input tensor required
            by the model.
        model_version : str
            The version of the model to run inference ("" lets the server choose).
        outputs : list
            A list of InferRequestedOutput objects; all outputs when not specified.
        request_id : str
            Optional identifier for the request, returned in the responses.
        sequence_id : int or str
            The unique identifier for the sequence (0 or "": not part of a sequence).
        sequence_start : bool
            Whether the request marks the start of the sequence. Default False.
        sequence_end : bool
            Whether the request marks the end of the sequence. Default False.
        enable_empty_final_response : bool
            Indicates whether "empty" responses should be generated and sent back to the
            client from the server during streaming inference when they contain the
            TRITONSERVER_RESPONSE_COMPLETE_FINAL flag (decoupled models). Default False.
        priority : int
            The priority of the request (0: the model's default).
        timeout : int
            The server-side timeout value for the request, in microseconds. This does not
            stop the grpc stream itself.
        parameters : dict
            Optional custom parameters to be included in the inference request.

        Raises
        ------
        InferenceServerException
            If server fails to issue inference.
        """
        if self._stream is None:
            raise_error("stream not available, use start_stream() to make one available.")
        options = infer_options(
            request_id,
            sequence_id,
            sequence_start,
            sequence_end,
            priority,
            timeout,
            parameters,
            enable_empty_final_response,
        )
        parts = self._infer_request(
            "async_stream_infer",
            model_name,
            inputs,
            model_version,
            outputs,
            options,
        )
        self._stream.enqueue(
            common.serialize_request(parts), request_id, enable_empty_final_response
        )
        self._log(f"enqueued request {request_id} to stream...")
