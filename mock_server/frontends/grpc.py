"""The gRPC frontend: ``inference.GRPCInferenceService`` and ``grpc.health.v1.Health`` on grpc.aio.

:class:`GrpcFrontend` serves every RPC of the protocol (``docs/protocol.md`` section 4) over the
server core, on the running asyncio event loop: the inference RPCs are
:mod:`mock_server.frontends.grpc_infer` (one stream's state :mod:`.grpc_stream`), through the
core's dataplane (:mod:`mock_server.core.dataplane`); the repository, shared-memory, trace and
log RPCs :mod:`mock_server.frontends.grpc_control`; health and metadata are here.  Tensors and
parameters go through the sans-I/O codec (:mod:`tritonclient._codec.grpc_server`,
``grpc_framing``, ``grpc_common``), which the clients share; core error kinds map to status
codes through its table (section 8).

Threads
    Handlers run on the event loop.  Model code never does: the dataplane only checks and
    queues, and responses arrive on the core's instance threads, where they are encoded
    (and shared-memory outputs written) before being handed to the loop through
    :mod:`mock_server.frontends._delivery` (one wake-up per burst).  Model loading and unloading,
    repository scans and the decoding of large BYTES or typed-contents requests run in worker
    threads.
Zero copy
    ``ModelInfer`` and ``ModelStreamInfer`` use the codec's framing functions as their
    (de)serializers: raw input contents are views of the received message, and output arrays
    are copied once, into the serialized response.
Streams
    One task reads requests and submits them in order (sequence order is kept); responses of
    all in-flight requests are written from a queue as they come.  Errors are reported in-band
    (``error_message``) without closing the stream, unless the client opened it with the
    ``triton_grpc_error: true`` metadata: then the first error ends the stream with its status.
    When the client goes away (cancel, deadline, disconnect) or the server stops, every
    in-flight request is cancelled (models see ``is_cancelled()``).

Decisions where the protocol reference leaves room
    * A decoupled model's flags-only final response is recognised as a final response with no
      outputs, no parameters and no error.
    * Outputs written to shared memory carry ``shared_memory_region``,
      ``shared_memory_byte_size`` (the bytes written) and, when non-zero,
      ``shared_memory_offset`` as output parameters (Triton 2.51 sets none; clients ignore
      them), besides the empty raw entry.
    * Shared-memory regions named by a request are looked up before the model runs: unknown
      regions are NOT_FOUND, bad offsets/sizes INVALID_ARGUMENT with Triton's messages.
    * In ``triton_grpc_error`` mode every error, request-level or from the model, ends the
      stream with its status.
    * ``ServerMetadata`` lists the core's extensions plus the frontend ones, in Triton's order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import grpc
from google.protobuf import json_format
from grpc_health.v1 import health_pb2  # type: ignore[import-untyped]  # ships no py.typed

from tritonclient._codec import grpc_framing, grpc_server, types
from tritonclient._proto import service_pb2 as pb

from ..core.dataplane import Dataplane
from ..core.errors import ServerError
from ..core.server import CoreServer
from ._delivery import delivery_for
from .grpc_control import ControlRpcs
from .grpc_infer import InferRpcs
from .grpc_support import (
    Malformed,
    clip,
    lenient,
    metadata_value,
    parse_infer_request,
    server_error,
    status,
)

__all__ = ["API_GROUP_OF_RPC", "GrpcFrontend", "KeepAliveOptions"]

log = logging.getLogger("mock_server.grpc")

_SERVICE = "inference.GRPCInferenceService"
_HEALTH_SERVICE = "grpc.health.v1.Health"

#: Seconds between readiness checks of an open health Watch.
_WATCH_INTERVAL = 0.2
_RESTRICTED_HEADER_PREFIX = "triton-grpc-protocol-"

#: The API group (Triton's ``--grpc-restricted-protocol`` names) of every RPC.
API_GROUP_OF_RPC: Mapping[str, str] = {
    "ServerLive": "health",
    "ServerReady": "health",
    "ModelReady": "health",
    "Check": "health",  # grpc.health.v1.Health
    "ServerMetadata": "metadata",
    "ModelMetadata": "metadata",
    "ModelInfer": "inference",
    "ModelStreamInfer": "inference",
    "ModelConfig": "model-config",
    "ModelStatistics": "statistics",
    "RepositoryIndex": "model-repository",
    "RepositoryModelLoad": "model-repository",
    "RepositoryModelUnload": "model-repository",
    "SystemSharedMemoryStatus": "shared-memory",
    "SystemSharedMemoryRegister": "shared-memory",
    "SystemSharedMemoryUnregister": "shared-memory",
    "CudaSharedMemoryStatus": "shared-memory",
    "CudaSharedMemoryRegister": "shared-memory",
    "CudaSharedMemoryUnregister": "shared-memory",
    "TraceSetting": "trace",
    "LogSettings": "logging",
}

_FRONTEND_EXTENSIONS = (
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "trace",
    "logging",
)

_COMPRESSION = {
    "none": grpc.Compression.NoCompression,
    "gzip": grpc.Compression.Gzip,
    "deflate": grpc.Compression.Deflate,
}

#: Requests whose BYTES/typed data exceed this are decoded in a worker thread.
_OFFLOAD_BYTES = 1 << 20


@dataclass(frozen=True)
class KeepAliveOptions:
    """HTTP/2 keepalive settings of the server (Triton's ``--grpc-keepalive-*`` defaults).

    Attributes
    ----------
    keepalive_time_ms : int
        Interval between keepalive pings on an idle connection.
    keepalive_timeout_ms : int
        How long to wait for a ping acknowledgement.
    keepalive_permit_without_calls : bool
        Whether to send keepalive pings when there is no call in flight.
    http2_max_pings_without_data : int
        Pings allowed without data frames in between (0: unlimited).
    http2_min_recv_ping_interval_without_data_ms : int
        Minimum interval between pings received without data before they count as strikes.
    http2_max_ping_strikes : int
        Strikes tolerated before the connection is closed (0: unlimited).
    """

    keepalive_time_ms: int = 7_200_000
    keepalive_timeout_ms: int = 20_000
    keepalive_permit_without_calls: bool = False
    http2_max_pings_without_data: int = 2
    http2_min_recv_ping_interval_without_data_ms: int = 300_000
    http2_max_ping_strikes: int = 2

    def channel_options(self) -> list[tuple[str, int]]:
        """The grpc server options for these settings."""
        return [
            ("grpc.keepalive_time_ms", self.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", self.keepalive_timeout_ms),
            ("grpc.keepalive_permit_without_calls", int(self.keepalive_permit_without_calls)),
            ("grpc.http2.max_pings_without_data", self.http2_max_pings_without_data),
            (
                "grpc.http2.min_recv_ping_interval_without_data_ms",
                self.http2_min_recv_ping_interval_without_data_ms,
            ),
            ("grpc.http2.max_ping_strikes", self.http2_max_ping_strikes),
        ]


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _serialize_infer(parts: tuple[pb.ModelInferResponse, list[types.Buffer]]) -> bytes:
    return grpc_framing.serialize_infer_response(*parts)


def _serialize_stream(parts: tuple[pb.ModelStreamInferResponse, list[types.Buffer]]) -> bytes:
    return grpc_framing.serialize_stream_response(*parts)


Unary = Callable[[Any, Any], Awaitable[Any]]


class GrpcFrontend:
    """The gRPC service of the server core.

    Parameters
    ----------
    core : CoreServer
        The (started) server core.
    host : str, optional
        Address to listen on.
    port : int, optional
        Port; 0 picks a free one (see :meth:`start`).
    server_credentials : grpc.ServerCredentials, optional
        Serve TLS with these credentials (plaintext by default).
    restricted_apis : dict of str to (str, str), optional
        ``{api group: (key, value)}``: the RPCs of a group (``health``, ``metadata``,
        ``inference``, ``shared-memory``, ``model-config``, ``model-repository``,
        ``statistics``, ``trace``, ``logging``) need the metadata
        ``triton-grpc-protocol-<key>: <value>``; otherwise UNAVAILABLE.
    max_message_bytes : int, optional
        Largest message received or sent (default 2**31-1, as Triton).
    compression : grpc.Compression or str, optional
        Compress inference responses (``ModelInfer``, ``ModelStreamInfer``) with this
        algorithm (``"gzip"``, ``"deflate"``, ``"none"``).  Compressed requests are always
        accepted.
    keepalive : KeepAliveOptions, optional
        HTTP/2 keepalive settings; Triton's defaults by default.

    header_forward_pattern : str, optional
        Regular expression: request metadata whose key matches reaches the model as string
        request parameters (Triton's ``--grpc-header-forward-pattern``).
    response_delay_s : float, optional
        Answer every RPC but inference this much later (Triton's test hook, the environment
        variable ``TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC``, which ``MockServer``
        reads): lets client code test its deadlines.
    Raises
    ------
    ValueError
        For an unknown API group or compression algorithm.
    """

    def __init__(
        self,
        core: CoreServer,
        *,
        host: str = "127.0.0.1",
        port: int = 8001,
        server_credentials: grpc.ServerCredentials | None = None,
        restricted_apis: dict[str, tuple[str, str]] | None = None,
        max_message_bytes: int = 2**31 - 1,
        compression: grpc.Compression | str | None = None,
        keepalive: KeepAliveOptions | None = None,
        header_forward_pattern: str | None = None,
        response_delay_s: float = 0.0,
    ) -> None:
        self._core = core
        self._response_delay_s = response_delay_s
        self._forward = core.header_forward(header_forward_pattern)
        self._host = host
        self._port = port
        self._credentials = server_credentials
        self._max_message_bytes = max_message_bytes
        self._keepalive = keepalive or KeepAliveOptions()
        groups = set(API_GROUP_OF_RPC.values())
        #: Set when stopping: open health watches then report NOT_SERVING and end.
        self._stopping = False
        self._restricted: dict[str, tuple[str, str]] = {}
        for group, (key, value) in (restricted_apis or {}).items():
            if group not in groups:
                raise ValueError(
                    f"unknown API group '{group}'; expected one of {', '.join(sorted(groups))}"
                )
            header = key.lower()
            if not header.startswith(_RESTRICTED_HEADER_PREFIX):
                header = _RESTRICTED_HEADER_PREFIX + header
            self._restricted[group] = (header, value)
        if isinstance(compression, str):
            if compression.lower() not in _COMPRESSION:
                raise ValueError(
                    f"unknown compression '{compression}'; expected one of "
                    f"{', '.join(_COMPRESSION)}"
                )
            compression = _COMPRESSION[compression.lower()]
        self._compression = None if compression == grpc.Compression.NoCompression else compression
        self._server: Any = None
        self.port: int | None = None
        self._control = ControlRpcs(core)
        self._infer = InferRpcs(
            Dataplane(core),
            forward=self._forward,
            compression=self._compression,
            max_message_bytes=max_message_bytes,
            check_access=self._check_access,
        )

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> int:
        """Bind and start serving.

        Returns
        -------
        int
            The bound port.

        Raises
        ------
        OSError
            If the address cannot be bound.
        """
        options: list[tuple[str, Any]] = [
            ("grpc.max_send_message_length", self._max_message_bytes),
            ("grpc.max_receive_message_length", self._max_message_bytes),
            ("grpc.so_reuseport", 0),
            *self._keepalive.channel_options(),
        ]
        server = grpc.aio.server(options=options)
        server.add_generic_rpc_handlers(self._handlers())
        bracket = ":" in self._host and not self._host.startswith("[")  # an IPv6 address
        address = f"[{self._host}]:{self._port}" if bracket else f"{self._host}:{self._port}"
        try:
            if self._credentials is not None:
                bound = server.add_secure_port(address, self._credentials)
            else:
                bound = server.add_insecure_port(address)
        except RuntimeError as exc:
            raise OSError(f"cannot bind the gRPC service to {address}: {exc}") from exc
        if not bound:
            raise OSError(f"cannot bind the gRPC service to {address}")
        await server.start()
        delivery_for(asyncio.get_running_loop())  # made here, on the loop, not by model threads
        self._server = server
        self.port = int(bound)
        log.info("gRPC service listening on %s:%d", self._host, self.port)
        return self.port

    async def stop(self, grace: float | None = 5.0) -> None:
        """Stop serving; calls still running after ``grace`` seconds are cancelled.

        Parameters
        ----------
        grace : float or None, optional
            Seconds granted to in-flight calls (None: cancel them at once).
        """
        server, self._server = self._server, None
        self._stopping = True  # health watches answer NOT_SERVING and end
        if self._core.compat.grpc_graceful_shutdown:
            self._infer.stop_accepting()
        if server is not None:
            await server.stop(grace)
        self.port = None

    # -- handler table -------------------------------------------------------------------
    def _handlers(self) -> list[Any]:
        control = self._control
        unary: dict[str, tuple[Any, Unary]] = {
            "ServerLive": (pb.ServerLiveRequest, self._server_live),
            "ServerReady": (pb.ServerReadyRequest, self._server_ready),
            "ModelReady": (pb.ModelReadyRequest, self._model_ready),
            "ServerMetadata": (pb.ServerMetadataRequest, self._server_metadata),
            "ModelMetadata": (pb.ModelMetadataRequest, self._model_metadata),
            "ModelConfig": (pb.ModelConfigRequest, self._model_config),
            "ModelStatistics": (pb.ModelStatisticsRequest, self._model_statistics),
            "RepositoryIndex": (pb.RepositoryIndexRequest, control.repository_index),
            "RepositoryModelLoad": (pb.RepositoryModelLoadRequest, control.repository_load),
            "RepositoryModelUnload": (pb.RepositoryModelUnloadRequest, control.repository_unload),
            "SystemSharedMemoryStatus": (
                pb.SystemSharedMemoryStatusRequest,
                control.system_shm_status,
            ),
            "SystemSharedMemoryRegister": (
                pb.SystemSharedMemoryRegisterRequest,
                control.system_shm_register,
            ),
            "SystemSharedMemoryUnregister": (
                pb.SystemSharedMemoryUnregisterRequest,
                control.system_shm_unregister,
            ),
            "CudaSharedMemoryStatus": (pb.CudaSharedMemoryStatusRequest, control.cuda_shm_status),
            "CudaSharedMemoryRegister": (
                pb.CudaSharedMemoryRegisterRequest,
                control.cuda_shm_register,
            ),
            "CudaSharedMemoryUnregister": (
                pb.CudaSharedMemoryUnregisterRequest,
                control.cuda_shm_unregister,
            ),
            "TraceSetting": (pb.TraceSettingRequest, control.trace_setting),
            "LogSettings": (pb.LogSettingsRequest, control.log_settings),
        }
        methods: dict[str, Any] = {
            name: grpc.unary_unary_rpc_method_handler(
                self._unary(name, impl),
                request_deserializer=lenient(request_type),
                response_serializer=_serialize,
            )
            for name, (request_type, impl) in unary.items()
        }
        methods["ModelInfer"] = grpc.unary_unary_rpc_method_handler(
            self._unary("ModelInfer", self._infer.model_infer),
            request_deserializer=parse_infer_request,
            response_serializer=_serialize_infer,
        )
        methods["ModelStreamInfer"] = grpc.stream_stream_rpc_method_handler(
            self._infer.model_stream_infer,
            request_deserializer=parse_infer_request,
            response_serializer=_serialize_stream,
        )
        declared = set(pb.DESCRIPTOR.services_by_name["GRPCInferenceService"].methods_by_name)
        assert declared == set(methods), declared ^ set(methods)
        health = {
            "Check": grpc.unary_unary_rpc_method_handler(
                self._unary("Check", self._health_check),
                request_deserializer=lenient(health_pb2.HealthCheckRequest),
                response_serializer=_serialize,
            ),
            "Watch": grpc.unary_stream_rpc_method_handler(
                self._health_watch,
                request_deserializer=lenient(health_pb2.HealthCheckRequest),
                response_serializer=_serialize,
            ),
        }
        return [
            grpc.method_handlers_generic_handler(_SERVICE, methods),
            grpc.method_handlers_generic_handler(_HEALTH_SERVICE, health),
        ]

    def _check_access(self, context: Any, rpc: str) -> None:
        rule = self._restricted.get(API_GROUP_OF_RPC[rpc])
        if rule is None:
            return
        header, value = rule
        if metadata_value(context, header) != value:
            raise ServerError.unavailable(
                f"This protocol is restricted, expecting header '{header}'"
            )

    def _unary(self, rpc: str, impl: Unary) -> Unary:
        # Triton's test hook: every answer but inference's is written that late.
        delay = self._response_delay_s if rpc not in ("ModelInfer",) else 0

        async def handler(request: Any, context: Any) -> Any:
            try:
                self._check_access(context, rpc)
                if isinstance(request, Malformed):
                    raise request.error()
                answer = await impl(request, context)
                if delay:
                    await asyncio.sleep(delay)
                return answer
            except Exception as exc:
                error = server_error(exc)
            if delay:
                await asyncio.sleep(delay)
            await context.abort(status(error.kind), clip(error.message))

        return handler

    # -- health and metadata -------------------------------------------------------------
    async def _health_check(self, request: Any, context: Any) -> Any:
        serving = health_pb2.HealthCheckResponse.SERVING
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        return health_pb2.HealthCheckResponse(status=serving if self._core.ready() else not_serving)

    async def _health_watch(self, request: Any, context: Any) -> AsyncIterator[Any]:
        # gRPC's client-side health checking (the channel's "healthCheckConfig") uses Watch,
        # not Check; a server answering UNIMPLEMENTED is taken as healthy for good, so a
        # draining replica would keep receiving calls.  The status is sent at once and then
        # on every change, checked every _WATCH_INTERVAL seconds (readiness has no event).
        try:
            self._check_access(context, "Check")
        except Exception as exc:
            error = server_error(exc)
            await context.abort(status(error.kind), clip(error.message))
        serving = health_pb2.HealthCheckResponse.SERVING
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        last = None
        while True:
            now = serving if self._core.ready() and not self._stopping else not_serving
            if now != last:
                yield health_pb2.HealthCheckResponse(status=now)
                last = now
            if self._stopping:
                # The stream ends with the server: a watch left open would hold the
                # shutdown for the whole grace period.
                return
            await asyncio.sleep(_WATCH_INTERVAL)

    async def _server_live(self, request: pb.ServerLiveRequest, context: Any) -> Any:
        return pb.ServerLiveResponse(live=self._core.live())

    async def _server_ready(self, request: pb.ServerReadyRequest, context: Any) -> Any:
        return pb.ServerReadyResponse(ready=self._core.ready())

    async def _model_ready(self, request: pb.ModelReadyRequest, context: Any) -> Any:
        version = grpc_server.parse_model_version(request.version, request.name)
        return pb.ModelReadyResponse(ready=self._core.model_ready(request.name, version))

    async def _server_metadata(self, request: pb.ServerMetadataRequest, context: Any) -> Any:
        metadata = self._core.metadata(_FRONTEND_EXTENSIONS)
        return pb.ServerMetadataResponse(
            name=metadata["name"], version=metadata["version"], extensions=metadata["extensions"]
        )

    async def _model_metadata(self, request: pb.ModelMetadataRequest, context: Any) -> Any:
        version = grpc_server.parse_model_version(request.version, request.name)
        metadata = self._core.model_metadata(request.name, version)
        response = pb.ModelMetadataResponse(
            name=metadata["name"], versions=metadata["versions"], platform=metadata["platform"]
        )
        for key, target in (("inputs", response.inputs), ("outputs", response.outputs)):
            for tensor in metadata[key]:
                target.add(name=tensor["name"], datatype=tensor["datatype"], shape=tensor["shape"])
        return response

    async def _model_config(self, request: pb.ModelConfigRequest, context: Any) -> Any:
        version = grpc_server.parse_model_version(request.version, request.name)
        response = pb.ModelConfigResponse()
        response.config.CopyFrom(self._core.model_config(request.name, version))
        return response

    async def _model_statistics(self, request: pb.ModelStatisticsRequest, context: Any) -> Any:
        response = pb.ModelStatisticsResponse()
        version = grpc_server.parse_model_version(request.version, request.name)
        for stats in self._core.statistics(request.name, version):
            # The snapshot has the schema's field names and nesting: the JSON mapping fills it.
            json_format.ParseDict(asdict(stats), response.model_stats.add())
        return response
