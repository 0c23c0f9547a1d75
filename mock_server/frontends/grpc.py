"""The gRPC frontend: ``inference.GRPCInferenceService`` and ``grpc.health.v1.Health`` on grpc.aio.

:class:`GrpcFrontend` serves every RPC of the protocol (``docs/protocol.md`` section 4) over the
server core, on the running asyncio event loop.  Tensors and parameters go through the sans-I/O
codec (:mod:`tritonclient._codec.grpc_server`, ``grpc_framing``, ``grpc_common``), which the
clients share; core error kinds map to status codes through its table (section 8).

Threads
    Handlers run on the event loop.  Model code never does: ``CoreServer.infer`` only validates
    and queues, and responses arrive on the core's instance threads, where they are encoded
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
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import grpc
from google.protobuf import json_format
from grpc_health.v1 import health_pb2  # type: ignore[import-untyped]  # ships no py.typed

from tritonclient._codec import grpc_framing, grpc_server, types
from tritonclient._proto import service_pb2 as pb

from ..core.errors import ServerError
from ..core.server import CoreServer
from ..core.types import InferRequest, InferResponse
from ..core.validation import compile_forward_pattern, forwarded_headers
from ._delivery import delivery_for
from .grpc_stream import END, Stream
from .grpc_support import (
    Malformed,
    Parsed,
    call_soon,
    clip,
    lenient,
    metadata_value,
    parse_infer_request,
    resolve,
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


def _parts_size(parts: tuple[Any, list[types.Buffer]]) -> int:
    message, raw = parts
    return int(message.ByteSize()) + sum(
        (b.nbytes if isinstance(b, memoryview) else len(b)) + 16 for b in raw
    )


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
        self._forward = (
            compile_forward_pattern(header_forward_pattern) if header_forward_pattern else None
        )
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
        if server is not None:
            await server.stop(grace)
        self.port = None

    # -- handler table -------------------------------------------------------------------
    def _handlers(self) -> list[Any]:
        unary: dict[str, tuple[Any, Unary]] = {
            "ServerLive": (pb.ServerLiveRequest, self._server_live),
            "ServerReady": (pb.ServerReadyRequest, self._server_ready),
            "ModelReady": (pb.ModelReadyRequest, self._model_ready),
            "ServerMetadata": (pb.ServerMetadataRequest, self._server_metadata),
            "ModelMetadata": (pb.ModelMetadataRequest, self._model_metadata),
            "ModelConfig": (pb.ModelConfigRequest, self._model_config),
            "ModelStatistics": (pb.ModelStatisticsRequest, self._model_statistics),
            "RepositoryIndex": (pb.RepositoryIndexRequest, self._repository_index),
            "RepositoryModelLoad": (pb.RepositoryModelLoadRequest, self._repository_load),
            "RepositoryModelUnload": (pb.RepositoryModelUnloadRequest, self._repository_unload),
            "SystemSharedMemoryStatus": (
                pb.SystemSharedMemoryStatusRequest,
                self._system_shm_status,
            ),
            "SystemSharedMemoryRegister": (
                pb.SystemSharedMemoryRegisterRequest,
                self._system_shm_register,
            ),
            "SystemSharedMemoryUnregister": (
                pb.SystemSharedMemoryUnregisterRequest,
                self._system_shm_unregister,
            ),
            "CudaSharedMemoryStatus": (pb.CudaSharedMemoryStatusRequest, self._cuda_shm_status),
            "CudaSharedMemoryRegister": (
                pb.CudaSharedMemoryRegisterRequest,
                self._cuda_shm_register,
            ),
            "CudaSharedMemoryUnregister": (
                pb.CudaSharedMemoryUnregisterRequest,
                self._cuda_shm_unregister,
            ),
            "TraceSetting": (pb.TraceSettingRequest, self._trace_setting),
            "LogSettings": (pb.LogSettingsRequest, self._log_settings),
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
            self._unary("ModelInfer", self._model_infer),
            request_deserializer=parse_infer_request,
            response_serializer=_serialize_infer,
        )
        methods["ModelStreamInfer"] = grpc.stream_stream_rpc_method_handler(
            self._model_stream_infer,
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

    # -- model repository ----------------------------------------------------------------
    @staticmethod
    def _check_repository_name(name: str) -> None:
        if name:
            raise ServerError.unsupported("'repository_name' specification is not supported")

    async def _repository_index(self, request: pb.RepositoryIndexRequest, context: Any) -> Any:
        self._check_repository_name(request.repository_name)
        rows = await asyncio.to_thread(self._core.repository_index, request.ready)
        response = pb.RepositoryIndexResponse()
        for row in rows:
            response.models.add(
                name=row["name"],
                version=row.get("version", ""),
                state=row.get("state", ""),
                reason=row.get("reason", ""),
            )
        return response

    async def _repository_load(self, request: pb.RepositoryModelLoadRequest, context: Any) -> Any:
        self._check_repository_name(request.repository_name)
        config: str | None = None
        files: dict[str, bytes] = {}
        for key in sorted(request.parameters):
            param = request.parameters[key]
            which = param.WhichOneof("parameter_choice")
            if key == "config":
                if which != "string_param":
                    raise ServerError.invalid_arg(
                        "invalid value type for load parameter 'config', expected string_param."
                    )
                config = param.string_param
            elif key.startswith("file:"):
                if which != "bytes_param":
                    raise ServerError.invalid_arg(
                        f"invalid value type for load parameter '{key}', expected bytes_param."
                    )
                files[key] = param.bytes_param
            else:
                raise ServerError.invalid_arg(f"unrecognized load parameter '{key}'.")
        await asyncio.to_thread(self._core.load_model, request.model_name, config, files)
        return pb.RepositoryModelLoadResponse()

    async def _repository_unload(
        self, request: pb.RepositoryModelUnloadRequest, context: Any
    ) -> Any:
        self._check_repository_name(request.repository_name)
        unload_dependents = False
        if "unload_dependents" in request.parameters:
            param = request.parameters["unload_dependents"]
            if param.WhichOneof("parameter_choice") != "bool_param":
                raise ServerError.invalid_arg(
                    "invalid value type for 'unload_dependents' parameter, expected bool_param."
                )
            unload_dependents = param.bool_param
        await asyncio.to_thread(self._core.unload_model, request.model_name, unload_dependents)
        return pb.RepositoryModelUnloadResponse()

    # -- shared memory -------------------------------------------------------------------
    async def _system_shm_status(
        self, request: pb.SystemSharedMemoryStatusRequest, context: Any
    ) -> Any:
        response = pb.SystemSharedMemoryStatusResponse()
        for region in self._core.shm.system_status(request.name or None):
            entry = response.regions[region.name]
            entry.name = region.name
            entry.key = region.key
            entry.offset = region.offset
            entry.byte_size = region.byte_size
        return response

    async def _system_shm_register(
        self, request: pb.SystemSharedMemoryRegisterRequest, context: Any
    ) -> Any:
        self._core.shm.register_system(request.name, request.key, request.offset, request.byte_size)
        return pb.SystemSharedMemoryRegisterResponse()

    async def _system_shm_unregister(
        self, request: pb.SystemSharedMemoryUnregisterRequest, context: Any
    ) -> Any:
        self._core.shm.unregister_system(request.name or None)
        return pb.SystemSharedMemoryUnregisterResponse()

    async def _cuda_shm_status(
        self, request: pb.CudaSharedMemoryStatusRequest, context: Any
    ) -> Any:
        response = pb.CudaSharedMemoryStatusResponse()
        for region in self._core.shm.cuda_status(request.name or None):
            entry = response.regions[region.name]
            entry.name = region.name
            entry.device_id = region.device_id
            entry.byte_size = region.byte_size
        return response

    async def _cuda_shm_register(
        self, request: pb.CudaSharedMemoryRegisterRequest, context: Any
    ) -> Any:
        self._core.shm.register_cuda(
            request.name, request.raw_handle, request.device_id, request.byte_size
        )
        return pb.CudaSharedMemoryRegisterResponse()

    async def _cuda_shm_unregister(
        self, request: pb.CudaSharedMemoryUnregisterRequest, context: Any
    ) -> Any:
        self._core.shm.unregister_cuda(request.name or None)
        return pb.CudaSharedMemoryUnregisterResponse()

    # -- trace and logging ---------------------------------------------------------------
    async def _trace_setting(self, request: pb.TraceSettingRequest, context: Any) -> Any:
        model = request.model_name or None
        if request.settings:
            changes = grpc_server.parse_trace_setting_request(request)
            settings = self._core.update_trace_settings(changes, model)
        else:
            settings = self._core.trace_settings(model)
        response = pb.TraceSettingResponse()
        for key, value in settings.items():
            values = value if isinstance(value, list) else [value]
            response.settings[key].value.extend(str(v) for v in values)
        return response

    async def _log_settings(self, request: pb.LogSettingsRequest, context: Any) -> Any:
        if request.settings:
            changes = grpc_server.parse_log_settings_request(request)
            settings = self._core.log_settings.update(changes)
        else:
            settings = self._core.log_settings.get()
        response = pb.LogSettingsResponse()
        for key, value in settings.items():
            entry = response.settings[key]
            if isinstance(value, bool):
                entry.bool_param = value
            elif isinstance(value, int):
                entry.uint32_param = value
            else:
                entry.string_param = str(value)
        return response

    # -- inference helpers ---------------------------------------------------------------
    async def _prepare(
        self, request: pb.ModelInferRequest, raw: list[memoryview], *, unary: bool
    ) -> tuple[grpc_server.DecodedInferRequest, bool]:
        """Look the model up, then decode the request; also says whether it is decoupled.

        In Triton's order: the model first, then (``unary``) the refusal of decoupled models,
        then the tensors.  Decoding runs in a worker thread when the request holds much
        BYTES or typed data.
        """
        version = grpc_server.parse_model_version(request.model_version, request.model_name)
        decoupled = bool(
            self._core.model_config(request.model_name, version).model_transaction_policy.decoupled
        )
        if unary and decoupled:
            raise ServerError.unsupported(
                "ModelInfer RPC doesn't support models with decoupled transaction policy"
            )
        decode = functools.partial(
            grpc_server.decode_infer_request, request, raw, shm_resolver=self._core.shm.input_reader
        )
        heavy = False
        if any(i.datatype == "BYTES" or i.HasField("contents") for i in request.inputs):
            size = sum(v.nbytes for v in raw)
            if any(i.HasField("contents") for i in request.inputs):
                size += request.ByteSize()
            heavy = size >= _OFFLOAD_BYTES
        decoded = await asyncio.to_thread(decode) if heavy else decode()
        self._core.shm.check_outputs(o.shared_memory for o in decoded.outputs)
        return decoded, decoupled

    def _write_shm_outputs(
        self, response: InferResponse, decoded: grpc_server.DecodedInferRequest
    ) -> dict[str, types.SharedMemoryRef] | None:
        """Write the outputs requested in shared memory; return where and how much."""
        placements = decoded.output_placements()
        return self._core.shm.write_outputs(response.outputs, placements) if placements else None

    def _check_size(self, parts: tuple[Any, list[types.Buffer]]) -> None:
        size = _parts_size(parts)
        if size > self._max_message_bytes:
            raise ServerError.invalid_arg(
                f"Response has byte size {size} which exceeds gRPC's byte size limit "
                f"{self._max_message_bytes}."
            )

    def _encode_unary(
        self, response: InferResponse, decoded: grpc_server.DecodedInferRequest
    ) -> tuple[pb.ModelInferResponse, list[types.Buffer]] | ServerError:
        """Encode a unary response (runs on the thread that produced it)."""
        try:
            if response.error is not None:
                return response.error
            shm = self._write_shm_outputs(response, decoded)
            parts = grpc_server.encode_infer_response_parts(response, shm_outputs=shm)
            self._check_size(parts)
            return parts
        except Exception as exc:
            return server_error(exc)

    # -- ModelInfer ----------------------------------------------------------------------
    async def _model_infer(self, parts: Parsed | Malformed, context: Any) -> Any:
        if isinstance(parts, Malformed):
            raise parts.error()
        request, raw = parts
        if self._compression is not None:
            context.set_compression(self._compression)
        decoded, _ = await self._prepare(request, raw, unary=True)
        core_request = InferRequest.from_decoded(
            decoded, forwarded_headers(self._forward, context.invocation_metadata() or ())
        )
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()

        earlier = 0  # responses before the final one (a model's sender, then its error)

        def on_response(response: InferResponse) -> None:  # an instance thread
            nonlocal earlier
            if not response.final:
                earlier += 1
                return
            result = self._encode_unary(response, decoded)
            if earlier and response.error is not None:
                # Triton 2.51's unary handler counts them: the model's response did go out.
                result = ServerError.internal(f"expected a single response, got {earlier + 1}")
            call_soon(loop, resolve, done, result)

        core_request.response_callback = on_response
        self._core.infer(core_request)
        try:
            result = await done
        except asyncio.CancelledError:
            core_request.cancel()
            raise
        if isinstance(result, ServerError):
            raise result
        return result

    # -- ModelStreamInfer ----------------------------------------------------------------
    async def _model_stream_infer(self, request_iterator: Any, context: Any) -> None:
        try:
            self._check_access(context, "ModelStreamInfer")
        except ServerError as exc:
            await context.abort(status(exc.kind), exc.message)
        if self._compression is not None:
            context.set_compression(self._compression)
        try:
            forwarded = forwarded_headers(self._forward, context.invocation_metadata() or ())
        except ServerError as exc:
            await context.abort(status(exc.kind), exc.message)
        stream = Stream(
            self,
            asyncio.get_running_loop(),
            metadata_value(context, "triton_grpc_error"),
            forwarded,
        )
        reader = asyncio.create_task(stream.read(request_iterator))
        try:
            while True:
                item = await stream.queue.get()
                if item is END:
                    break
                if isinstance(item, ServerError):
                    await context.abort(status(item.kind), clip(item.message))
                await context.write(item)
        finally:
            reader.cancel()
            stream.cancel_all()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
