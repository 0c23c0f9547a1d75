"""What the sync and asyncio gRPC clients share: everything but moving the messages.

Channel options and credentials, plugins and headers, the request of every RPC and the
conversion of its response (:class:`Call`), inference requests (through
:mod:`tritonclient._codec.grpc_client`), stream responses, compression names and error mapping.
``_client.InferenceServerClient`` (threads and ``grpc``) and
``aio.InferenceServerClient`` (``grpc.aio``) only send what these functions build.
"""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import grpc

from tritonclient._codec import grpc_client, grpc_common, grpc_framing
from tritonclient._codec.arguments import check_model_version
from tritonclient._codec.checks import Requested, response_fault
from tritonclient._codec.types import NO_OPTIONS, InferOptions
from tritonclient._plugin import InferenceServerClientPlugin, Request
from tritonclient._proto import service_pb2
from tritonclient.utils import InferenceServerException, raise_error
from tritonclient.utils._errors import (
    InferenceServerCancelledError,
    InferenceServerDeadlineExceededError,
    InferenceServerProtocolError,
    InferenceServerUnavailableError,
    RetryPolicy,
    connection_hint,
    server_error_with_hint,
    with_note,
)

from ._tensors import InferInput, InferRequestedOutput, InferResult, message_to_json

__all__ = [
    "INT32_MAX",
    "LARGE_REQUEST_BYTES",
    "MAX_GRPC_MESSAGE_SIZE",
    "MODEL_INFER_METHOD",
    "MODEL_STREAM_INFER_METHOD",
    "Call",
    "ClientBase",
    "KeepAliveOptions",
    "UnaryMethods",
    "cancelled_error",
    "channel_credentials",
    "channel_options",
    "channel_target",
    "compression_type",
    "encode_infer",
    "error_from_rpc",
    "infer_request_from_dict",
    "open_channel",
    "parse_infer",
    "parse_reply",
    "parse_stream",
    "requested_outputs",
    "serialize_request",
    "stream_item",
]

T = TypeVar("T")

INT32_MAX = 2**31 - 1
#: The largest message the client sends or accepts (the server's limit too).
MAX_GRPC_MESSAGE_SIZE = INT32_MAX

MODEL_INFER_METHOD = "/inference.GRPCInferenceService/ModelInfer"
#: Requests from this size on are sent so that they are released as soon as they are sent
#: (the sync client's ``infer``), which lowers the peak memory of large round trips.
LARGE_REQUEST_BYTES = 4 << 20
MODEL_STREAM_INFER_METHOD = "/inference.GRPCInferenceService/ModelStreamInfer"


def multicallable(
    factory: Callable[..., Any],
    method: str,
    request_serializer: Callable[[Any], bytes] | None = None,
) -> Any:
    """``channel.<kind>(method, ...)`` for one of our RPCs, registered, answering bytes.

    Responses come back undecoded (no deserializer): the clients parse and check them
    themselves (:func:`parse_infer`, :func:`parse_stream`, :func:`parse_reply`), so that a
    message that does not parse reaches the caller as an ``InferenceServerException`` naming
    it.  (gRPC would log a deserializer's exception and end a sync call with a bare INTERNAL
    "Exception deserializing response!", and hand ``None`` to an asyncio caller.)

    A registered method (``_registered_method=True``, as grpcio >= 1.63's generated stubs
    pass) saves gRPC a method-path lookup per call; older grpcio, which the project still
    supports, does not take the argument and gets the plain call.
    """
    serializer = request_serializer or serialize_request
    try:
        return factory(
            method,
            request_serializer=serializer,
            response_deserializer=None,
            _registered_method=True,
        )
    except TypeError:
        return factory(method, request_serializer=serializer, response_deserializer=None)


_SERVICE = service_pb2.DESCRIPTOR.services_by_name["GRPCInferenceService"]
_SERVICE_PATH = f"/{_SERVICE.full_name}/"


def _serialize_message(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


class UnaryMethods:
    """The unary non-inference RPCs of a channel, made on first use, answering bytes.

    Parameters
    ----------
    channel : grpc.Channel or grpc.aio.Channel
        The channel.
    """

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self._methods: dict[str, Any] = {}

    def __getitem__(self, rpc: str) -> Any:
        method = self._methods.get(rpc)
        if method is None:
            method = self._methods[rpc] = multicallable(
                self._channel.unary_unary, _SERVICE_PATH + rpc, _serialize_message
            )
        return method


def parse_reply(rpc: str, data: bytes) -> Any:
    """The response message of unary RPC ``rpc`` from its wire bytes.

    Raises
    ------
    InferenceServerProtocolError
        If ``data`` is not such a message.
    """
    name = _SERVICE.methods_by_name[rpc].output_type.name
    cls = getattr(service_pb2, name)
    try:
        return cls.FromString(data)
    except Exception as exc:  # DecodeError, or whatever a protobuf backend raises for bytes
        raise InferenceServerProtocolError(
            f"invalid {rpc} response: the {name} message does not parse ({exc})"
        ) from None


class KeepAliveOptions:
    """A KeepAliveOptions object is used to encapsulate GRPC KeepAlive related parameters
    for initiating an InferenceServerClient object.

    See the https://github.com/grpc/grpc/blob/master/doc/keepalive.md documentation for
    more information.

    Parameters
    ----------
    keepalive_time_ms : int
        The period (in milliseconds) after which a keepalive ping is sent on the
        transport. Default is INT32_MAX.
    keepalive_timeout_ms : int
        The period (in milliseconds) the sender of the keepalive ping waits for an
        acknowledgement. If it does not receive an acknowledgment within this time, it
        will close the connection. Default is 20000 (20 seconds).
    keepalive_permit_without_calls : bool
        Allows keepalive pings to be sent even if there are no calls in flight.
        Default is False.
    http2_max_pings_without_data : int
        The maximum number of pings that can be sent when there is no data/header frame
        to be sent. gRPC Core will not continue sending pings if we run over the limit.
        Setting it to 0 allows sending pings without such a restriction. Default is 2.
    """

    def __init__(
        self,
        keepalive_time_ms: int = INT32_MAX,
        keepalive_timeout_ms: int = 20000,
        keepalive_permit_without_calls: bool = False,
        http2_max_pings_without_data: int = 2,
    ) -> None:
        self.keepalive_time_ms = keepalive_time_ms
        self.keepalive_timeout_ms = keepalive_timeout_ms
        self.keepalive_permit_without_calls = keepalive_permit_without_calls
        self.http2_max_pings_without_data = http2_max_pings_without_data

    def __repr__(self) -> str:
        return (
            f"KeepAliveOptions(keepalive_time_ms={self.keepalive_time_ms}, "
            f"keepalive_timeout_ms={self.keepalive_timeout_ms}, "
            f"keepalive_permit_without_calls={self.keepalive_permit_without_calls}, "
            f"http2_max_pings_without_data={self.http2_max_pings_without_data})"
        )


def channel_options(
    keepalive_options: KeepAliveOptions | None, channel_args: Sequence[tuple[str, Any]] | None
) -> list[tuple[str, Any]]:
    """The channel arguments of a client: our defaults plus ``channel_args``.

    Parameters
    ----------
    keepalive_options : KeepAliveOptions or None
        Keepalive settings (defaults when None).
    channel_args : list of (str, value) or None
        Added to the defaults; a key given here replaces the default of the same key
        (NVIDIA's client drops every default, message sizes included, as soon as
        ``channel_args`` is given).

    Returns
    -------
    list of (str, value)
        The message size limits (``MAX_GRPC_MESSAGE_SIZE``), the keepalive arguments and
        ``channel_args``, each key once.
    """
    ka = keepalive_options or KeepAliveOptions()
    defaults: list[tuple[str, Any]] = [
        ("grpc.max_send_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.keepalive_time_ms", ka.keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", ka.keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", int(bool(ka.keepalive_permit_without_calls))),
        ("grpc.http2.max_pings_without_data", ka.http2_max_pings_without_data),
    ]
    if channel_args is None:
        return defaults
    user = [(str(k), v) for k, v in channel_args]
    given = {k for k, _ in user}
    return [(k, v) for k, v in defaults if k not in given] + user


_LB_SCHEMES = ("dns:", "ipv4:", "ipv6:")


def _ip_target(address: str) -> tuple[str, str]:
    """``(family, address)`` of one ``host:port`` of a URL list, for an ipv4:/ipv6: target."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise_error(f"invalid address '{address}' in the url list: expected host:port")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if bare == "localhost":
        bare = "127.0.0.1"
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        return "dns", address
    if ip.version == 6:
        return "ipv6", f"[{bare}]:{port}"
    return "ipv4", f"{bare}:{port}"


def channel_target(url: str | Sequence[str]) -> tuple[str, list[tuple[str, Any]]]:
    """The gRPC target of ``url`` and the channel arguments it needs.

    Parameters
    ----------
    url : str or list of str
        ``host:port`` (one server, as NVIDIA's client); a gRPC target with a scheme
        (``dns:///name:port``, ``ipv4:a:p,b:p``, ``ipv6:...``), whose addresses get gRPC's
        round-robin load balancing; or a list of ``host:port`` (IP addresses or
        ``localhost`` become an ``ipv4:``/``ipv6:`` target with round robin; a list of
        names uses ``dns:///`` for a single name).

    Returns
    -------
    tuple of (str, list of (str, value))
        The target and the default options for it (``grpc.lb_policy_name`` =
        ``round_robin`` for several servers), which ``channel_args`` may override.
    """
    round_robin: list[tuple[str, Any]] = [("grpc.lb_policy_name", "round_robin")]
    if isinstance(url, str):
        if url.startswith(_LB_SCHEMES):
            return url, round_robin
        return url, []
    addresses = [str(u).strip() for u in url]
    if not addresses:
        raise_error("the url list is empty")
    if len(addresses) == 1:
        return channel_target(addresses[0])
    parsed = [_ip_target(a) for a in addresses]
    families = {family for family, _ in parsed}
    if families == {"ipv4"} or families == {"ipv6"}:
        return f"{families.pop()}:" + ",".join(a for _, a in parsed), round_robin
    raise_error(
        "a url list must hold IP addresses (or localhost) of one family; for host names "
        "use a 'dns:///name:port' target that resolves to every server"
    )


def _read_file(path: str | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise_error(f"unable to read {what} file '{path}': {e}")


def channel_credentials(
    ssl: bool,
    root_certificates: str | None,
    private_key: str | None,
    certificate_chain: str | None,
    creds: Any,
) -> Any:
    """The credentials of a secure channel, or None for an insecure one.

    Parameters
    ----------
    ssl : bool
        Use SSL/TLS.
    root_certificates, private_key, certificate_chain : str or None
        Paths of PEM files (read here).
    creds : grpc.ChannelCredentials or None
        Used as given when set (the other options are then ignored).

    Returns
    -------
    grpc.ChannelCredentials or None
    """
    if creds:
        return creds
    if not ssl:
        return None
    return grpc.ssl_channel_credentials(
        root_certificates=_read_file(root_certificates, "root certificates"),
        private_key=_read_file(private_key, "private key"),
        certificate_chain=_read_file(certificate_chain, "certificate chain"),
    )


def open_channel(
    grpc_module: Any,
    url: str | Sequence[str],
    ssl: bool,
    root_certificates: str | None,
    private_key: str | None,
    certificate_chain: str | None,
    creds: Any,
    keepalive_options: KeepAliveOptions | None,
    channel_args: Sequence[tuple[str, Any]] | None,
) -> Any:
    """The channel of a client, from the client's constructor arguments.

    Parameters
    ----------
    grpc_module : module
        ``grpc`` (sync client) or ``grpc.aio``: what makes the channel.
    url : str or sequence of str
        The server address(es); see :func:`channel_target`.
    ssl, root_certificates, private_key, certificate_chain, creds
        TLS, as the clients take them; see :func:`channel_credentials`.
    keepalive_options, channel_args
        See :func:`channel_options`.

    Returns
    -------
    grpc.Channel or grpc.aio.Channel
    """
    target, target_options = channel_target(url)
    options = channel_options(keepalive_options, [*target_options, *(channel_args or [])])
    credentials = channel_credentials(ssl, root_certificates, private_key, certificate_chain, creds)
    if credentials is not None:
        return grpc_module.secure_channel(target, credentials, options=options)
    return grpc_module.insecure_channel(target, options=options)


def compression_type(algorithm: str | None) -> Any:
    """Map ``compression_algorithm`` to ``grpc.Compression``.

    Parameters
    ----------
    algorithm : str or None
        ``"deflate"``, ``"gzip"`` (any case) or None.

    Returns
    -------
    grpc.Compression
        ``NoCompression`` for None; also for an unknown name, with a warning (NVIDIA's
        client prints a message and sends uncompressed).
    """
    if algorithm is None:
        return grpc.Compression.NoCompression
    name = str(algorithm).lower()
    if name == "deflate":
        return grpc.Compression.Deflate
    if name == "gzip":
        return grpc.Compression.Gzip
    warnings.warn(
        f"unsupported compression_algorithm {algorithm!r} (supported: 'deflate', 'gzip', "
        "None); sending without compression",
        stacklevel=3,
    )
    return grpc.Compression.NoCompression


def error_from_rpc(rpc_error: Any) -> InferenceServerException:
    """The exception for a failed RPC: message = details, status = ``"StatusCode.X"``.

    Parameters
    ----------
    rpc_error : grpc.RpcError
        The error.

    Returns
    -------
    InferenceServerException
        With NVIDIA's message, status and details; for a server that cannot be reached
        (nothing listening, an HTTP port) its ``hint`` says how to fix it.
    """
    error = server_error_with_hint(grpc_common.exception_from_rpc_error(rpc_error))
    if isinstance(error, InferenceServerUnavailableError):
        error.with_hint(connection_hint(error.message() or "", "grpc"))
    return error


def is_retryable(error: InferenceServerException) -> bool:
    """Whether a retry policy retries a call that failed with ``error`` (UNAVAILABLE)."""
    return isinstance(error, InferenceServerUnavailableError)


def not_ready_error(what: str, timeout: float, last: BaseException | None) -> Exception:
    """The error of ``wait_until_ready`` when ``what`` was still not ready after ``timeout``."""
    detail = f" (last error: {last})" if last is not None else ""
    return InferenceServerDeadlineExceededError(
        f"{what} not ready after {timeout:g} s{detail}", "StatusCode.DEADLINE_EXCEEDED"
    )


def check_retry_policy(retry_policy: RetryPolicy | None) -> RetryPolicy | None:
    """``retry_policy`` checked to be a :class:`RetryPolicy` or None."""
    if retry_policy is not None and not isinstance(retry_policy, RetryPolicy):
        raise_error("retry_policy must be a tritonclient.utils.RetryPolicy or None")
    return retry_policy


def cancelled_error(msg: str | None = None) -> InferenceServerException:
    """The exception reported for a request cancelled by the client.

    Parameters
    ----------
    msg : str, optional
        The message; "Locally cancelled by application!" by default.

    Returns
    -------
    InferenceServerException
        With status ``"StatusCode.CANCELLED"``.
    """
    return InferenceServerCancelledError(
        msg=msg or "Locally cancelled by application!", status="StatusCode.CANCELLED"
    )


class ClientBase:
    """Plugin registration and request headers, shared by both clients."""

    def __init__(self, verbose: bool) -> None:
        self._plugin: InferenceServerClientPlugin | None = None
        self._verbose = bool(verbose)

    def register_plugin(self, plugin: InferenceServerClientPlugin) -> None:
        """Register a Client Plugin.

        Parameters
        ----------
        plugin : InferenceServerClientPlugin
            A client plugin.

        Raises
        ------
        InferenceServerException
            If a plugin is already registered.
        """
        if self._plugin is not None:
            raise_error(
                "A plugin is already registered. Please unregister the previous plugin "
                "first before registering a new plugin."
            )
        self._plugin = plugin

    def plugin(self) -> InferenceServerClientPlugin | None:
        """Retrieve the registered plugin if any.

        Returns
        -------
        InferenceServerClientPlugin or None
        """
        return self._plugin

    def unregister_plugin(self) -> None:
        """Unregister a plugin.

        Raises
        ------
        InferenceServerException
            If no plugin has been registered.
        """
        if self._plugin is None:
            raise_error("No plugin has been registered.")
        self._plugin = None

    def _get_metadata(self, headers: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
        """The gRPC metadata of a request: ``headers`` after the plugin saw them.

        Parameters
        ----------
        headers : dict or None
            Request headers (not modified).

        Returns
        -------
        tuple of (str, value)
            Keys in lower case, as gRPC metadata requires.
        """
        if headers is None and self._plugin is None:
            return ()
        request = Request(headers)
        if self._plugin is not None:
            self._plugin(request)
        return tuple((str(k).lower(), v) for k, v in request.headers.items())

    def _log(self, *parts: Any) -> None:
        if self._verbose:
            print(*parts)

    def _infer_request(
        self,
        label: str,
        model_name: str,
        inputs: Sequence[InferInput],
        model_version: str,
        outputs: Sequence[InferRequestedOutput] | None,
        options: InferOptions,
    ) -> bytes:
        """The wire form of an inference call's request (:func:`encode_infer`); when verbose,
        printed after ``label`` as the message (without its raw contents)."""
        data = encode_infer(model_name, inputs, model_version, outputs, options)
        if self._verbose:
            print(f"{label}\n{grpc_client.request_message(data)}")
        return data


@dataclass
class Call(Generic[T]):
    """One unary non-inference RPC: what to send and how to read the answer.

    Attributes
    ----------
    rpc : str
        The stub method (``"ServerLive"``, ...).
    label : str
        The client method name, for verbose output.
    request : protobuf message
        The request.
    convert : callable
        Response message -> the client method's return value.
    done : str or None
        Verbose message printed after success (load, unload, register...).
    """

    rpc: str
    label: str
    request: Any
    convert: Callable[[Any], T]
    done: str | None = None

    @property
    def idempotent(self) -> bool:
        """Whether a retry policy may repeat this call (health, metadata, status, gets)."""
        return self.label.startswith(("is_", "get_"))


def _as_json_or_message(as_json: bool) -> Callable[[Any], Any]:
    return message_to_json if as_json else (lambda response: response)


def server_live() -> Call[bool]:
    return Call("ServerLive", "is_server_live", service_pb2.ServerLiveRequest(), _live)


def _live(response: Any) -> bool:
    return bool(response.live)


def _ready(response: Any) -> bool:
    return bool(response.ready)


def server_ready() -> Call[bool]:
    return Call("ServerReady", "is_server_ready", service_pb2.ServerReadyRequest(), _ready)


def model_ready(model_name: str, model_version: str) -> Call[bool]:
    check_model_version(model_version)
    request = service_pb2.ModelReadyRequest(name=model_name, version=model_version)
    return Call("ModelReady", "is_model_ready", request, _ready)


def server_metadata(as_json: bool) -> Call[Any]:
    request = service_pb2.ServerMetadataRequest()
    return Call("ServerMetadata", "get_server_metadata", request, _as_json_or_message(as_json))


def model_metadata(model_name: str, model_version: str, as_json: bool) -> Call[Any]:
    check_model_version(model_version)
    request = service_pb2.ModelMetadataRequest(name=model_name, version=model_version)
    return Call("ModelMetadata", "get_model_metadata", request, _as_json_or_message(as_json))


def model_config(model_name: str, model_version: str, as_json: bool) -> Call[Any]:
    check_model_version(model_version)
    request = service_pb2.ModelConfigRequest(name=model_name, version=model_version)
    return Call("ModelConfig", "get_model_config", request, _as_json_or_message(as_json))


def repository_index(as_json: bool) -> Call[Any]:
    request = service_pb2.RepositoryIndexRequest()
    return Call(
        "RepositoryIndex", "get_model_repository_index", request, _as_json_or_message(as_json)
    )


def _none(response: Any) -> None:
    return None


def load_model(
    model_name: str, config: str | None, files: Mapping[str, bytes] | None
) -> Call[None]:
    request = service_pb2.RepositoryModelLoadRequest(model_name=model_name)
    if config is not None:
        request.parameters["config"].string_param = config
    for path, content in (files or {}).items():
        if not isinstance(content, (bytes, bytearray)):
            raise_error(
                f"the content of override file '{path}' must be bytes, got {type(content).__name__}"
            )
        request.parameters[path].bytes_param = bytes(content)
    return Call("RepositoryModelLoad", "load_model", request, _none, f"Loaded model '{model_name}'")


def unload_model(model_name: str, unload_dependents: bool) -> Call[None]:
    request = service_pb2.RepositoryModelUnloadRequest(model_name=model_name)
    request.parameters["unload_dependents"].bool_param = bool(unload_dependents)
    return Call(
        "RepositoryModelUnload", "unload_model", request, _none, f"Unloaded model '{model_name}'"
    )


def inference_statistics(model_name: str, model_version: str, as_json: bool) -> Call[Any]:
    check_model_version(model_version)
    request = service_pb2.ModelStatisticsRequest(name=model_name, version=model_version)
    return Call(
        "ModelStatistics", "get_inference_statistics", request, _as_json_or_message(as_json)
    )


def trace_settings(
    model_name: str | None, settings: Mapping[str, Any] | None, as_json: bool, label: str
) -> Call[Any]:
    request = service_pb2.TraceSettingRequest()
    if model_name:
        request.model_name = model_name
    for key, value in (settings or {}).items():
        if value is None:
            request.settings[key]  # present and empty: clear the setting
        else:
            values = value if isinstance(value, (list, tuple)) else [value]
            request.settings[key].value.extend(str(v) for v in values)
    return Call("TraceSetting", label, request, _as_json_or_message(as_json))


def log_settings(settings: Mapping[str, Any] | None, as_json: bool, label: str) -> Call[Any]:
    request = service_pb2.LogSettingsRequest()
    for key, value in (settings or {}).items():
        if value is None:
            request.settings[key]
        elif key in ("log_file", "log_format"):
            request.settings[key].string_param = value
        elif key == "log_verbose_level":
            request.settings[key].uint32_param = value
        else:
            request.settings[key].bool_param = value
    return Call("LogSettings", label, request, _as_json_or_message(as_json))


def system_shm_status(region_name: str, as_json: bool) -> Call[Any]:
    request = service_pb2.SystemSharedMemoryStatusRequest(name=region_name)
    return Call(
        "SystemSharedMemoryStatus",
        "get_system_shared_memory_status",
        request,
        _as_json_or_message(as_json),
    )


def register_system_shm(name: str, key: str, byte_size: int, offset: int) -> Call[None]:
    request = service_pb2.SystemSharedMemoryRegisterRequest(
        name=name, key=key, offset=offset, byte_size=byte_size
    )
    return Call(
        "SystemSharedMemoryRegister",
        "register_system_shared_memory",
        request,
        _none,
        f"Registered system shared memory with name '{name}'",
    )


def unregister_system_shm(name: str) -> Call[None]:
    request = service_pb2.SystemSharedMemoryUnregisterRequest(name=name)
    done = (
        f"Unregistered system shared memory with name '{name}'"
        if name
        else "Unregistered all system shared memory regions"
    )
    return Call(
        "SystemSharedMemoryUnregister", "unregister_system_shared_memory", request, _none, done
    )


def cuda_shm_status(region_name: str, as_json: bool) -> Call[Any]:
    request = service_pb2.CudaSharedMemoryStatusRequest(name=region_name)
    return Call(
        "CudaSharedMemoryStatus",
        "get_cuda_shared_memory_status",
        request,
        _as_json_or_message(as_json),
    )


def register_cuda_shm(name: str, raw_handle: Any, device_id: int, byte_size: int) -> Call[None]:
    try:
        handle = base64.b64decode(raw_handle, validate=True)
    except (ValueError, TypeError) as e:
        raise_error(
            f"raw_handle must be the base64-encoded serialized cudaIPC handle (as "
            f"cuda_shared_memory.get_raw_handle() returns it): {e}"
        )
    request = service_pb2.CudaSharedMemoryRegisterRequest(
        name=name, raw_handle=handle, device_id=device_id, byte_size=byte_size
    )
    return Call(
        "CudaSharedMemoryRegister",
        "register_cuda_shared_memory",
        request,
        _none,
        f"Registered cuda shared memory with name '{name}'",
    )


def unregister_cuda_shm(name: str) -> Call[None]:
    request = service_pb2.CudaSharedMemoryUnregisterRequest(name=name)
    done = (
        f"Unregistered cuda shared memory with name '{name}'"
        if name
        else "Unregistered all cuda shared memory regions"
    )
    return Call("CudaSharedMemoryUnregister", "unregister_cuda_shared_memory", request, _none, done)


# ------------------------------------------------------------------------------------------
# Inference
# ------------------------------------------------------------------------------------------


def _checked_items(
    model_version: Any,
    inputs: Sequence[InferInput] | InferInput,
    outputs: Sequence[InferRequestedOutput] | InferRequestedOutput | None,
) -> tuple[Sequence[InferInput], Sequence[InferRequestedOutput] | None]:
    """The inputs and outputs of an inference call as sequences, after NVIDIA's checks (the
    version first, then each input, then each output)."""
    check_model_version(model_version)
    if isinstance(inputs, InferInput):
        inputs = [inputs]
    for item in inputs:
        if not isinstance(item, InferInput):
            raise_error(f"inputs must be InferInput objects, got {type(item).__name__}")
    if isinstance(outputs, InferRequestedOutput):
        outputs = [outputs]
    for out in outputs or ():
        if not isinstance(out, InferRequestedOutput):
            raise_error(f"outputs must be InferRequestedOutput objects, got {type(out).__name__}")
    return inputs, outputs


def encode_infer(
    model_name: str,
    inputs: Sequence[InferInput],
    model_version: str = "",
    outputs: Sequence[InferRequestedOutput] | None = None,
    options: InferOptions = NO_OPTIONS,
) -> bytes:
    """The wire form of an inference request, with the codec's one encoder
    (:func:`grpc_client.encode_infer_request`) and each input's and output's cached entry.

    Raises
    ------
    InferenceServerException
        For a non-string version, inputs/outputs of the wrong type, reserved or
        unsupported parameters, inputs without data.
    """
    inputs, outputs = _checked_items(model_version, inputs, outputs)
    return grpc_client.encode_infer_request(
        model_name,
        [item._codec_tensor() for item in inputs],
        None if outputs is None else [out._codec_output() for out in outputs],
        model_version,
        options,
    )


def serialize_request(data: bytes) -> bytes:
    """Request serializer of the infer methods: the request is already in wire form."""
    return data


def requested_outputs(
    outputs: Sequence[InferRequestedOutput] | InferRequestedOutput | None,
) -> Requested:
    """What an inference call asked for, to check its response with (outputs already checked
    by :func:`encode_infer`)."""
    if outputs is None:
        return _EVERY_OUTPUT
    if isinstance(outputs, InferRequestedOutput):
        outputs = [outputs]
    return Requested({out._name: out._shm is not None for out in outputs})


#: A request that names no outputs: the server returns every one, none in shared memory.
_EVERY_OUTPUT = Requested(None)


def parse_infer(data: bytes, requested: Requested | None = None) -> InferResult:
    """An :class:`InferResult` over a ``ModelInfer`` response, checked and decoded.

    Parameters
    ----------
    data : bytes
        The wire form of the ``ModelInferResponse``.
    requested : Requested, optional
        The outputs the call asked for (see :func:`grpc_client.check_infer_response`).

    Raises
    ------
    InferenceServerProtocolError
        If the message does not parse, or does not hold what it says.
    """
    try:
        if len(data) <= grpc_framing.SMALL_MESSAGE_BYTES:
            # Small: protobuf parses it all at once (the raw contents stay in the message).
            message = service_pb2.ModelInferResponse.FromString(data)
            raw = None
        else:
            message, raw = grpc_framing.parse_infer_response(data)
    except Exception as exc:  # DecodeError, ValueError: whatever the bytes were
        raise response_fault(f"the ModelInferResponse message does not parse ({exc})") from None
    outputs = grpc_client.check_infer_response(message, raw, requested)
    return InferResult(message, raw, outputs)


def parse_stream(data: bytes) -> tuple[service_pb2.ModelStreamInferResponse, list[memoryview]]:
    """A ``ModelStreamInfer`` response from its wire bytes (raw contents split off).

    Raises
    ------
    InferenceServerProtocolError
        If ``data`` is not such a message: the stream cannot go on (which request it
        answered is unknown).
    """
    try:
        return grpc_framing.parse_stream_response(data)
    except Exception as exc:  # DecodeError, ValueError: whatever the bytes were
        raise InferenceServerProtocolError(
            f"invalid stream response: the ModelStreamInferResponse message does not parse "
            f"({exc}); the stream is ended"
        ) from None


def stream_item(
    parsed: tuple[service_pb2.ModelStreamInferResponse, list[memoryview]],
) -> tuple[InferResult | None, InferenceServerException | None]:
    """One stream response as the ``(result, error)`` pair given to the user.

    Parameters
    ----------
    parsed : tuple
        What :func:`parse_stream` returned.

    Returns
    -------
    tuple of (InferResult or None, InferenceServerException or None)
        An error (no status) when the response carries ``error_message``, or when its outputs
        do not hold what they say (:class:`InferenceServerProtocolError`; the stream goes
        on).
    """
    message, raw = parsed
    if message.error_message:
        return None, grpc_common.exception_from_stream_error(message.error_message)
    response = message.infer_response
    try:
        outputs = grpc_client.check_infer_response(response, raw)
    except InferenceServerException as error:
        if response.id:
            with_note(error, f"in the response to request id {response.id!r}")
        return None, error
    return InferResult(response, raw, outputs), None


_STREAM_KEYS = frozenset(
    {
        "model_name",
        "inputs",
        "model_version",
        "outputs",
        "request_id",
        "sequence_id",
        "sequence_start",
        "sequence_end",
        "priority",
        "timeout",
        "parameters",
        "enable_empty_final_response",
    }
)


def infer_request_from_dict(item: Any) -> bytes:
    """Build a stream request from one dict yielded to ``aio`` ``stream_infer``.

    Parameters
    ----------
    item : dict
        ``model_name`` and ``inputs`` (required), and optionally ``model_version``,
        ``outputs``, ``request_id``, ``sequence_id``, ``sequence_start``, ``sequence_end``,
        ``priority``, ``timeout``, ``parameters``, ``enable_empty_final_response``.

    Raises
    ------
    InferenceServerException
        If ``item`` is not such a dict.
    """
    if not isinstance(item, dict):
        raise_error(
            "inputs_iterator is not yielding a dict",
            hint=f"it yielded a {type(item).__name__}: yield the arguments of async_stream_infer",
        )
    if "model_name" not in item or "inputs" not in item:
        raise_error("model_name and/or inputs is missing from inputs_iterator's yielded dict")
    unknown = sorted(set(item) - _STREAM_KEYS)
    if unknown:
        raise_error(
            f"unexpected keys {unknown} in inputs_iterator's yielded dict; expected some of "
            f"{sorted(_STREAM_KEYS)}"
        )
    options = InferOptions(**{key: item[key] for key in _OPTION_KEYS & set(item)})
    return encode_infer(
        item["model_name"],
        item["inputs"],
        item.get("model_version", ""),
        item.get("outputs"),
        options,
    )


_OPTION_KEYS = frozenset(field.name for field in dataclasses.fields(InferOptions))
