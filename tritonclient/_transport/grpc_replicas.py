"""What a gRPC client over several replicas adds to gRPC's own balancing: per-replica
counters read from gRPC's channelz, and the calls it refuses.

The balancing itself is gRPC's (``round_robin`` with client-side health checking, set up by
:func:`~tritonclient._transport.grpc.balancing_options`): gRPC picks a replica per call and
keeps a stream on the connection it started on.  It cannot pin a *unary* call to a replica,
and a sequence (``sequence_id``) keeps its state on one server, so :class:`SequencePins`
sends the unary calls of each sequence over a channel to one replica's address (opened on
first use, one per address, with the client's settings): the replica is chosen round robin
when the sequence starts, its calls stay there, and if it goes away they fail with an error
naming it rather than move.  Shared-memory registrations (per server) are refused.

:func:`open_transport` gives a client its transport: the plain one for one server, wrapped in
:class:`ReplicaTransport` (sync) or :class:`AioReplicaTransport` (asyncio) for several, so
that the client itself knows nothing of replicas.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from tritonclient._balance import replica_error
from tritonclient.utils import InferenceServerException, ReplicaStats, raise_error

from .grpc import GrpcAioTransport, channel_target, open_channel, pinned_args

__all__ = [
    "PER_SERVER_RPCS",
    "AioReplicaTransport",
    "ChannelCounters",
    "ReplicaTransport",
    "SequencePins",
    "check_infer_over_stream",
    "open_transport",
    "refuse_per_server",
    "target_addresses",
]

#: Seconds a resolution of a ``dns:`` target's replicas is used for new sequences.
_RESOLVE_EVERY = 5.0

#: RPCs that change state living on one server.
PER_SERVER_RPCS = frozenset(
    {
        "SystemSharedMemoryRegister",
        "SystemSharedMemoryUnregister",
        "CudaSharedMemoryRegister",
        "CudaSharedMemoryUnregister",
    }
)


def refuse_per_server(rpc: str, target: str) -> None:
    """Raise for a shared-memory (un)registration through a channel over several replicas."""
    if rpc in PER_SERVER_RPCS:
        raise_error(
            f"{rpc}: shared-memory regions are registered per server, and this client spreads "
            f"calls over the replicas of '{target}'; a region registered on one would be "
            "missing on the others.  Use a client with a single url for each replica for "
            "shared-memory inference."
        )


def target_addresses(target: str) -> list[str]:
    """The ``host:port`` of each replica of a balanced target, in order.

    ``ipv4:a:p,b:p`` and ``ipv6:[a]:p,...`` list them; a ``dns:`` target
    (``dns:///name:port``, ``dns://server/name:port``, ``dns:name:port``) is resolved here,
    as gRPC resolves it (every address of the name).

    Raises
    ------
    InferenceServerException
        If the name does not resolve.
    """
    scheme, _, rest = target.partition(":")
    if scheme in ("ipv4", "ipv6"):
        return [a for a in rest.split(",") if a]
    name = rest[2:].partition("/")[2] if rest.startswith("//") else rest
    host, _, port = name.rpartition(":")
    if not host or not port.isdigit():
        host, port = name, "443"
    host = host.strip("[]")
    try:
        found = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except OSError as error:
        raise_error(f"cannot resolve '{host}' of target '{target}': {error}")
    addresses: list[str] = []
    for family, _type, _proto, _name, sockaddr in found:
        ip = str(sockaddr[0])
        address = f"[{ip}]:{port}" if family == socket.AF_INET6 else f"{ip}:{port}"
        if address not in addresses:
            addresses.append(address)
    return addresses


class SequencePins:
    """Where each sequence of a balanced client runs: one replica per sequence.

    Parameters
    ----------
    target : str
        The balanced target (its replicas: :func:`target_addresses`).
    open_transport : callable
        ``open_transport(address)``: a transport over a channel to that one address, with
        the client's settings.
    """

    def __init__(self, target: str, open_transport: Callable[[str], Any]) -> None:
        self._target = target
        self._open = open_transport
        self._transports: dict[str, Any] = {}
        self._pins: dict[int | str, str] = {}
        self._next = 0
        self._lock = threading.Lock()  # never held across I/O
        #: (until when, addresses) of the last resolution.
        self._resolved: tuple[float, list[str]] | None = None

    def route(self, sequence_id: int | str, start: bool, end: bool) -> tuple[str, Any]:
        """The address and transport for a call of sequence ``sequence_id``: its replica,
        or (``start``, or a sequence not seen yet) the next replica round robin."""
        with self._lock:
            address = None if start else self._pins.get(sequence_id)
        if address is None:
            addresses = self._addresses()
            if not addresses:
                raise_error(f"the target '{self._target}' names no replica")
            with self._lock:
                address = addresses[self._next % len(addresses)]
                self._next += 1
                self._pins[sequence_id] = address
        with self._lock:
            transport = self._transports.get(address)
            if transport is None:
                transport = self._transports[address] = self._open(address)
            if end:
                self._pins.pop(sequence_id, None)
        return address, transport

    def _addresses(self) -> list[str]:
        # A DNS name is resolved again at most every _RESOLVE_EVERY seconds: replicas that
        # come and go are followed, and a client starting many sequences (the asyncio one
        # included, where the lookup blocks the loop) does not resolve for each of them.
        now = time.monotonic()
        if self._resolved is None or now >= self._resolved[0]:
            self._resolved = (now + _RESOLVE_EVERY, target_addresses(self._target))
        return self._resolved[1]

    def failed(
        self, sequence_id: int | str, address: str, error: InferenceServerException
    ) -> InferenceServerException:
        """``error`` of a call of the sequence, naming the replica it stays on."""
        return replica_error(error, f"{address} (sequence {sequence_id!r} runs there)")

    def transports(self) -> list[Any]:
        """Every transport opened so far (to close them)."""
        with self._lock:
            opened, self._transports = list(self._transports.values()), {}
        return opened


def _channelz() -> Any:
    try:
        from grpc._cython import cygrpc  # gRPC's own channelz, as grpcio-channelz reads it
    except ImportError:  # pragma: no cover - every grpcio since 1.x has it
        return None
    return cygrpc if hasattr(cygrpc, "channelz_get_top_channels") else None


def _top_channels() -> list[dict[str, Any]]:
    cygrpc = _channelz()
    if cygrpc is None:
        return []
    channels: list[dict[str, Any]] = []
    start = 0
    while True:
        page = json.loads(cygrpc.channelz_get_top_channels(start))
        found = page.get("channel", [])
        channels.extend(found)
        if page.get("end", True) or not found:
            return channels
        start = int(found[-1]["ref"]["channelId"]) + 1


class ChannelCounters:
    """The per-replica counters of one channel, from gRPC's channelz (its subchannels).

    Create it just before the channel and call :meth:`attach` just after: the channel is
    the new top channel with the target (channelz does not name channels).

    Parameters
    ----------
    target : str
        The channel's target.
    """

    def __init__(self, target: str) -> None:
        self._target = target
        self._before = {int(c["ref"]["channelId"]) for c in _top_channels()}
        self._id: int | None = None

    def attach(self) -> None:
        """Find the channel made since construction (the newest with the target)."""
        with contextlib.suppress(Exception):  # counters are best effort, never fatal
            new = [
                int(c["ref"]["channelId"])
                for c in _top_channels()
                if c.get("data", {}).get("target") == self._target
                and int(c["ref"]["channelId"]) not in self._before
            ]
            self._id = max(new) if new else None
        self._before = set()

    def stats(self) -> list[ReplicaStats]:
        """One :class:`ReplicaStats` per replica gRPC resolved (in channelz's order).

        ``requests`` and ``failures`` are gRPC's counts of calls started and failed on the
        replica's connection, health-check watches included; ``ejections`` counts its
        connection's moves to TRANSIENT_FAILURE still in channelz's trace; ``in_service``
        is whether the connection is READY (gRPC may still skip it while its health check
        reports NOT_SERVING); ``outstanding`` is started - succeeded - failed.
        """
        cygrpc = _channelz()
        if self._id is None or cygrpc is None:
            return []
        try:
            channel = json.loads(cygrpc.channelz_get_channel(self._id)).get("channel", {})
        except Exception:  # the channel is closed
            return []
        stats = []
        for ref in channel.get("subchannelRef", []):
            with contextlib.suppress(Exception):
                sub = json.loads(cygrpc.channelz_get_subchannel(int(ref["subchannelId"])))
                data = sub["subchannel"]["data"]
                started = int(data.get("callsStarted", 0))
                succeeded = int(data.get("callsSucceeded", 0))
                failed = int(data.get("callsFailed", 0))
                events = data.get("trace", {}).get("events", [])
                ejections = sum(
                    1 for e in events if "TRANSIENT_FAILURE" in e.get("description", "")
                )
                address = str(data.get("target", "")).split(":", 1)[-1]
                stats.append(
                    ReplicaStats(
                        address,
                        started,
                        failed,
                        ejections,
                        max(started - succeeded - failed, 0),
                        data.get("state", {}).get("state") == "READY",
                    )
                )
        return stats


#: ``named(error)``: the error of a call pinned to a replica, naming the replica.
Named = Callable[[InferenceServerException], InferenceServerException]


def open_transport(
    grpc_module: Any,
    transport_class: Callable[[Any], Any],
    url: str | Sequence[str],
    tls: tuple[bool, str | None, str | None, str | None, Any],
    keepalive_options: Any,
    channel_args: Sequence[tuple[str, Any]] | None,
) -> Any:
    """A client's transport to ``url``: ``transport_class(channel)`` over a channel made by
    ``grpc_module`` (``grpc`` or ``grpc.aio``) from the constructor's TLS arguments ``tls``
    (ssl, root_certificates, private_key, certificate_chain, creds), ``keepalive_options``
    and ``channel_args``.

    When ``url`` names several replicas it is wrapped (:class:`ReplicaTransport` or
    :class:`AioReplicaTransport`): the channel's counters are attached, and the unary calls
    of a sequence get channels of their own to one replica's address, with the same
    settings.
    """

    def transport(address: str | Sequence[str], args: Any) -> Any:
        return transport_class(open_channel(grpc_module, address, *tls, keepalive_options, args))

    target, balancing = channel_target(url)
    if not balancing:
        return transport(url, channel_args)
    counters = ChannelCounters(target)
    opened = transport(url, channel_args)
    counters.attach()
    pinned = pinned_args(url, channel_args)
    pins = SequencePins(target, lambda address: transport(address, pinned))
    wrapper = AioReplicaTransport if transport_class is GrpcAioTransport else ReplicaTransport
    return wrapper(opened, target, counters, pins)


def check_infer_over_stream(url: str | Sequence[str], enabled: bool) -> None:
    """Refuse ``infer_over_stream`` for a ``url`` naming several replicas (a stream goes to
    one), before the client opens anything."""
    if enabled:
        target, balancing = channel_target(url)
        if balancing:
            raise_error(
                "infer_over_stream=True needs one server: a stream goes to one replica, so the "
                f"calls would not be balanced over {target}"
            )


class _Balanced:
    """What a transport over several replicas adds to the one over the balanced channel
    (``inner``): the calls it refuses, the sequences it pins, the per-replica counters.
    Its ``unary``, ``infer``, ``stream`` and ``stream_method`` are the inner transport's.

    Parameters
    ----------
    inner : GrpcTransport or GrpcAioTransport
        The transport over the balanced channel (every call that is not pinned).
    target : str
        The channel's target.
    counters : ChannelCounters
        The channel's counters (attached).
    pins : SequencePins
        Where the sequences run.
    """

    def __init__(
        self, inner: Any, target: str, counters: ChannelCounters, pins: SequencePins
    ) -> None:
        self._inner = inner
        self._target = target
        self._counters = counters
        self._pins = pins
        self.channel = inner.channel
        # Every call that is not pinned goes over the balanced channel as it is: its
        # methods themselves, no call in between.
        self.unary: Callable[..., Any] = inner.unary
        self.infer: Callable[..., Any] = inner.infer
        self.stream: Callable[..., Any] = inner.stream
        self.stream_method: Callable[[], Any] = inner.stream_method

    def admit(self, rpc: str) -> None:
        """Raise for a call made per server (shared-memory registration)."""
        refuse_per_server(rpc, self._target)

    def route(self, sequence_id: int | str, start: bool, end: bool) -> tuple[Any, Named | None]:
        """The transport of an inference and how its errors name its replica: this one and
        None outside a sequence, else the transport of the sequence's replica (see
        :meth:`SequencePins.route`)."""
        if not sequence_id:
            return self, None
        address, pinned = self._pins.route(sequence_id, start, end)
        return pinned, functools.partial(self._pins.failed, sequence_id, address)

    def replica_stats(self) -> list[ReplicaStats]:
        """The channel's per-replica counters (:meth:`ChannelCounters.stats`)."""
        return self._counters.stats()


class ReplicaTransport(_Balanced):
    """The sync client's transport over several replicas (see :class:`_Balanced`)."""

    def __init__(
        self, inner: Any, target: str, counters: ChannelCounters, pins: SequencePins
    ) -> None:
        super().__init__(inner, target, counters, pins)
        self.infer_future: Callable[..., Any] = inner.infer_future

    def close(self) -> None:
        """Close the sequences' channels, then the balanced one."""
        for pinned in self._pins.transports():
            pinned.close()
        self._inner.close()


class AioReplicaTransport(_Balanced):
    """The asyncio client's transport over several replicas (see :class:`_Balanced`)."""

    async def close(self) -> None:
        """Close the sequences' channels, then the balanced one."""
        for pinned in self._pins.transports():
            await pinned.close()
        await self._inner.close()
