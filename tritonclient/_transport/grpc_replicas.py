"""What a gRPC client over several replicas adds to gRPC's own balancing: per-replica
counters read from gRPC's channelz, and the calls it refuses.

The balancing itself is gRPC's (``round_robin`` with client-side health checking, set up by
:func:`~tritonclient._transport.grpc.balancing_options`): gRPC picks a replica per call and
keeps a stream on the connection it started on.  It cannot pin a *unary* call to a replica,
so calls of a sequence (``sequence_id``) through ``infer``/``async_infer``, which keep their
state on one server, are refused with a message that points to the stream (which stays on
its replica) or to a client per replica; so are shared-memory registrations (per server).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from tritonclient._balance import ReplicaStats
from tritonclient.utils import raise_error

__all__ = ["PER_SERVER_RPCS", "ChannelCounters", "refuse_per_server", "refuse_sequence"]

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


def refuse_sequence(sequence_id: int | str, target: str) -> None:
    """Raise for a unary inference of a sequence through a channel over several replicas."""
    if sequence_id:
        raise_error(
            f"sequence {sequence_id!r}: this client spreads unary calls over the replicas of "
            f"'{target}', and a sequence's state lives on one of them.  Send the sequence "
            "over a stream (start_stream + async_stream_infer, or stream_infer), which stays "
            "on the replica it started on, or use a client with a single url."
        )


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
