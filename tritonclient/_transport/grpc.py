"""The gRPC transports: grpcio's sync channel and grpc.aio's, each behind one small object.

A client describes what to send (:mod:`tritonclient.grpc._common`); its transport makes the
channel from the client's arguments (:func:`open_channel`: target, load balancing, TLS,
keepalive, user options), holds the registered methods (requests go out as bytes the codec
made, responses come back as bytes the client checks) and maps every failed RPC to the
:class:`~tritonclient.utils.InferenceServerException` subclass of its status
(:func:`error_from_rpc`).  :class:`GrpcTransport` and :class:`GrpcAioTransport` have the same
methods, blocking and awaitable; both send a large inference request as a one-message client
stream (identical on the wire), so that it is released as soon as it is sent.
"""

from __future__ import annotations

import ipaddress
import json
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import grpc
import grpc.aio

from tritonclient._codec import grpc_common
from tritonclient._proto import service_pb2
from tritonclient.utils import InferenceServerException, ReplicaStats, raise_error
from tritonclient.utils._errors import (
    InferenceServerCancelledError,
    InferenceServerUnavailableError,
    connection_hint,
    server_error_with_hint,
)

__all__ = [
    "INT32_MAX",
    "LARGE_REQUEST_BYTES",
    "MAX_GRPC_MESSAGE_SIZE",
    "GrpcAioTransport",
    "GrpcTransport",
    "KeepAliveOptions",
    "cancelled_error",
    "channel_credentials",
    "channel_options",
    "channel_target",
    "compression_type",
    "error_from_rpc",
    "error_of_call",
    "open_channel",
    "pinned_args",
]


def _as_is(data: bytes) -> bytes:
    """Request serializer of the inference methods: the codec already made the bytes."""
    return data


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
    serializer = request_serializer or _as_is
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


#: gRPC's client-side health checking (gRFC A17): each replica's ``grpc.health.v1.Health``
#: service is watched, and round robin skips a replica that reports NOT_SERVING (draining,
#: not ready).  The overall health ("" service) is what Triton and mock_server report.
HEALTH_CHECK_SERVICE_CONFIG = json.dumps({"healthCheckConfig": {"serviceName": ""}})

#: Reconnect backoff of a balanced channel, in ms.  gRPC's defaults (1 s growing to 120 s)
#: would keep a restarted replica out for up to two minutes; a replica coming back is
#: retried within 10 s at worst.
RECONNECT_BACKOFF_MS = {
    "grpc.initial_reconnect_backoff_ms": 500,
    "grpc.min_reconnect_backoff_ms": 500,
    "grpc.max_reconnect_backoff_ms": 10_000,
}


def balancing_options() -> list[tuple[str, Any]]:
    """The channel arguments of a channel over several replicas (``channel_args`` win).

    Returns
    -------
    list of (str, value)
        ``grpc.lb_policy_name`` = ``round_robin``; ``grpc.service_config`` turning on
        client-side health checking (:data:`HEALTH_CHECK_SERVICE_CONFIG`; the service config
        names no load-balancing policy, so that a ``grpc.lb_policy_name`` in ``channel_args``
        still chooses it); the reconnect backoff (:data:`RECONNECT_BACKOFF_MS`); and
        ``grpc.use_local_subchannel_pool``, so that the channel's connections (and the
        per-replica counters of :func:`replica_counters`) are its own rather than shared
        with other channels to the same addresses.
    """
    return [
        ("grpc.lb_policy_name", "round_robin"),
        ("grpc.service_config", HEALTH_CHECK_SERVICE_CONFIG),
        *RECONNECT_BACKOFF_MS.items(),
        ("grpc.use_local_subchannel_pool", 1),
    ]


def pinned_args(
    url: str | Sequence[str], channel_args: Sequence[tuple[str, Any]] | None
) -> list[tuple[str, Any]]:
    """``channel_args`` for a channel to one replica of a balanced ``url`` (the unary calls
    of a sequence): the user's arguments, and for a ``dns:`` target the name as the TLS
    target name (the channel is opened to one of its IP addresses), unless given."""
    args = list(channel_args or [])
    if isinstance(url, str) and url.startswith("dns:"):
        rest = url[4:]
        name = rest[2:].partition("/")[2] if rest.startswith("//") else rest
        host = name.rpartition(":")[0] or name
        if host and not any(k == "grpc.ssl_target_name_override" for k, _ in args):
            args.append(("grpc.ssl_target_name_override", host.strip("[]")))
    return args


def is_balanced(url: str | Sequence[str]) -> bool:
    """Whether ``url`` names several replicas (a list of addresses or a target with a scheme),
    over which the channel balances calls."""
    return bool(channel_target(url)[1])


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
        The target and the default options for it (:func:`balancing_options` for several
        servers), which ``channel_args`` may override.
    """
    round_robin = balancing_options()
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


def error_of_call(rpc_error: Any) -> InferenceServerException:
    """The exception for a failed call the client may have cancelled itself (a stream, an
    ``async_infer`` future): :func:`cancelled_error` with gRPC's details for CANCELLED,
    else :func:`error_from_rpc`."""
    if rpc_error.code() == grpc.StatusCode.CANCELLED:
        return cancelled_error(rpc_error.details())
    return error_from_rpc(rpc_error)


class _Methods:
    """The registered methods of one channel (sync or aio alike)."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.unary = UnaryMethods(channel)
        self.infer = multicallable(channel.unary_unary, MODEL_INFER_METHOD)
        # The same RPC as a one-message client stream (identical on the wire): the request
        # is sent in a batch of its own, so it and gRPC's copy of it are released once sent
        # instead of when the response is in.  Used for large requests.
        self.infer_stream_unary = multicallable(channel.stream_unary, MODEL_INFER_METHOD)
        self.stream = multicallable(channel.stream_stream, MODEL_STREAM_INFER_METHOD)


class _Transport:
    """What the sync and asyncio transports share: the channel's methods, the stream, and
    what a transport to one server says to the questions a client over several replicas
    answers otherwise (:mod:`tritonclient._transport.grpc_replicas`).

    Parameters
    ----------
    channel : grpc.Channel or grpc.aio.Channel
        The channel (:func:`open_channel`).
    """

    def __init__(self, channel: Any) -> None:
        self._methods = _Methods(channel)
        self.channel = channel

    def stream(
        self,
        requests: Iterator[bytes] | AsyncIterator[bytes],
        *,
        metadata: Any,
        timeout: float | None,
        compression: Any,
    ) -> Any:
        """``ModelStreamInfer``: the call, an iterator (``grpc.aio``: an async iterator) of
        the responses' bytes."""
        return self._methods.stream(
            requests, metadata=metadata, timeout=timeout, compression=compression
        )

    def stream_method(self) -> Any:
        """The channel's ``ModelStreamInfer`` (bytes in and out), for
        :mod:`~tritonclient._transport.grpc_infer_stream`."""
        return self._methods.stream

    def admit(self, rpc: str) -> None:
        """Every RPC goes to one server (none is refused)."""

    def route(self, sequence_id: int | str, start: bool, end: bool) -> tuple[Any, None]:
        """Every inference goes over this transport, its errors as they are."""
        return self, None

    def replica_stats(self) -> list[ReplicaStats]:
        """No per-replica counters: empty."""
        return []


class GrpcTransport(_Transport):
    """grpcio's sync channel: blocking unary calls, inference (and its future), the stream.

    Parameters
    ----------
    channel : grpc.Channel
        The channel (:func:`open_channel` with ``grpc``).
    """

    def unary(self, rpc: str, request: Any, *, metadata: Any, timeout: float | None) -> bytes:
        """Call unary RPC ``rpc``; its response's bytes."""
        try:
            data: bytes = self._methods.unary[rpc](request, metadata=metadata, timeout=timeout)
        except grpc.RpcError as rpc_error:
            raise error_from_rpc(rpc_error) from None
        return data

    def infer(
        self, data: bytes, *, metadata: Any, timeout: float | None, compression: Any
    ) -> bytes:
        """``ModelInfer`` with an encoded request; the response's bytes."""
        try:
            if len(data) >= LARGE_REQUEST_BYTES:
                requests = iter((data,))
                del data  # the request iterator holds the only reference
                reply: bytes = self._methods.infer_stream_unary(
                    requests, metadata=metadata, timeout=timeout, compression=compression
                )
            else:
                reply = self._methods.infer(
                    data, metadata=metadata, timeout=timeout, compression=compression
                )
        except grpc.RpcError as rpc_error:
            raise error_from_rpc(rpc_error) from None
        return reply

    def infer_future(
        self, data: bytes, *, metadata: Any, timeout: float | None, compression: Any
    ) -> Any:
        """``ModelInfer`` started in the background: a ``grpc.Future`` of the response's
        bytes."""
        try:
            return self._methods.infer.future(
                data, metadata=metadata, timeout=timeout, compression=compression
            )
        except grpc.RpcError as rpc_error:
            raise error_from_rpc(rpc_error) from None

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()


class GrpcAioTransport(_Transport):
    """grpc.aio's channel: the same methods as :class:`GrpcTransport`, awaitable.

    Parameters
    ----------
    channel : grpc.aio.Channel
        The channel (:func:`open_channel` with ``grpc.aio``).
    """

    async def unary(self, rpc: str, request: Any, *, metadata: Any, timeout: float | None) -> bytes:
        """Call unary RPC ``rpc``; its response's bytes."""
        try:
            data: bytes = await self._methods.unary[rpc](
                request, metadata=metadata, timeout=timeout
            )
        except grpc.RpcError as rpc_error:
            raise error_from_rpc(rpc_error) from None
        return data

    async def infer(
        self, data: bytes, *, metadata: Any, timeout: float | None, compression: Any
    ) -> bytes:
        """``ModelInfer`` with an encoded request; the response's bytes."""
        try:
            if len(data) >= LARGE_REQUEST_BYTES:
                reply: bytes = await self._methods.infer_stream_unary(
                    _one(data), metadata=metadata, timeout=timeout, compression=compression
                )
            else:
                reply = await self._methods.infer(
                    data, metadata=metadata, timeout=timeout, compression=compression
                )
        except grpc.RpcError as rpc_error:
            raise error_from_rpc(rpc_error) from None
        return reply

    async def close(self) -> None:
        """Close the channel."""
        await self.channel.close()


async def _one(data: bytes) -> AsyncIterator[bytes]:
    yield data
