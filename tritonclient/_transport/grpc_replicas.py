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
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from tritonclient._balance import replica_error
from tritonclient.utils import InferenceServerException, ReplicaStats, raise_error

__all__ = [
    "PER_SERVER_RPCS",
    "ChannelCounters",
    "SequencePins",
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
