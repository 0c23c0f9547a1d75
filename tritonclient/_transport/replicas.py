"""HTTP transports over several replicas: one transport per replica (each with its own
connection pool), a :class:`~tritonclient._balance.Balancer` choosing among them.

:class:`GeventReplicas` (the sync client) holds one
:class:`~tritonclient._transport.gevent.GeventTransport` per replica, :class:`AiohttpReplicas`
(the asyncio client) one :class:`~tritonclient._transport.aiohttp.AiohttpTransport`; both
have the methods of the transport they hold, so the clients use them unchanged.  Each call
goes to the replica the balancer picks; the outcome is reported back (a refused or broken
connection ejects the replica); readiness probes (``GET <base>/v2/health/ready``) run in the
background (on the replica's gevent hub thread, or as an asyncio task), started by the calls
themselves when one is due, so an idle client makes no traffic.

Failover is the client's retry loop (:mod:`tritonclient._retry`): a call that failed to
connect is, when its retry policy allows, simply sent again, and the balancer no longer
picks the ejected replica.  Every failure of a replica names it in its message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tritonclient._balance import (
    Balancer,
    BalancingPolicy,
    ReplicaStats,
    as_balancing_policy,
    replica_error,
)
from tritonclient.utils import InferenceServerException, raise_error
from tritonclient.utils._errors import InferenceServerConnectionError

from .http import HttpCall, HttpReply

__all__ = ["AiohttpReplicas", "GeventReplicas", "replica_urls", "split_replicas"]

T = TypeVar("T")

_monotonic = time.monotonic

#: Seconds a readiness probe may take: a replica that cannot say it is ready within this is
#: taken as not ready (rather than left in service, or out, for the whole call timeout).
PROBE_TIMEOUT = 5.0


def split_replicas(
    urls: Sequence[str], parse: Callable[[str], tuple[str, str, int, str]]
) -> tuple[str, list[tuple[str, int]], str]:
    """Scheme, ``(host, port)`` of each replica and the common base path of a url list.

    Parameters
    ----------
    urls : sequence of str
        ``host:port[/base]`` of each replica.
    parse : callable
        The client's ``parse_url`` (with its ``ssl`` setting bound).

    Raises
    ------
    InferenceServerException
        If the list is empty, holds something else than strings, or the base paths differ
        (the calls are made once, for every replica).
    """
    if not urls:
        raise_error("the url list is empty: expected one 'host:port' per server")
    parsed = []
    for url in urls:
        if not isinstance(url, str):
            raise_error(f"the url list must hold 'host:port' strings, not {type(url).__name__}")
        parsed.append(parse(url.strip()))
    bases = {base for _, _, _, base in parsed}
    if len(bases) != 1:
        raise_error(f"every url of the list must have the same base path, not {sorted(bases)}")
    return parsed[0][0], [(host, port) for _, host, port, _ in parsed], parsed[0][3]


def replica_urls(
    url: str | Sequence[str],
    parse: Callable[[str], tuple[str, str, int, str]],
    load_balancing: str | BalancingPolicy | None,
) -> tuple[list[tuple[str, int]], str, BalancingPolicy | None]:
    """A client's ``url`` argument: ``(host, port)`` of each server, the base path, and the
    balancing policy (None for a single url string, which keeps the one-server transport).

    Parameters
    ----------
    url : str or sequence of str
        ``host:port[/base]``, or a list of them (one per replica).
    parse : callable
        The client's ``parse_url`` (its ``ssl`` setting bound).
    load_balancing : str, BalancingPolicy or None
        The client's ``load_balancing`` argument.
    """
    if isinstance(url, str):
        _scheme, host, port, base = parse(url)
        return [(host, port)], base, None
    _scheme, servers, base = split_replicas(url, parse)
    return servers, base, as_balancing_policy(load_balancing)


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _failure(error: InferenceServerException) -> str:
    """How a failed attempt counts for its replica (see :meth:`Balancer.finished`)."""
    return "connect" if isinstance(error, InferenceServerConnectionError) else "error"


def _reply_failure(reply: HttpReply) -> str | None:
    # 5xx: the replica failed (not the call's own fault); counted, not ejecting (readiness
    # probes decide that).
    return "error" if reply.status >= 500 else None


#: Host and port of each replica.
Servers = Sequence[tuple[str, int]]
#: ``make(host, port)``: the transport of one replica (the client's settings bound).
Make = Callable[[str, int], Any]


class _Replicas:
    """What both drivers share: the balancer, a transport per replica, the probe call and the
    refusals.

    Parameters
    ----------
    servers : sequence of (str, int)
        Host and port of each replica.
    base : str
        The base path of every url ("" for none).
    policy : BalancingPolicy
        How calls are spread and replicas probed.
    make : callable
        ``make(host, port)``: the transport of one replica (the client's settings bound).
    """

    def __init__(self, servers: Servers, base: str, policy: BalancingPolicy, make: Make) -> None:
        addresses = [_address(h, p) for h, p in servers]
        self.balancer = Balancer(addresses, policy, self._lock_factory())
        self._probe_path = base + "/v2/health/ready"
        self._transports = [make(host, port) for host, port in servers]

    @staticmethod
    def _lock_factory() -> Any:
        """The balancer's lock factory (None: its default)."""
        return None

    def _probe_call(self) -> HttpCall[bool]:
        return HttpCall("GET", self._probe_path, {}, None, lambda reply: reply.status == 200)

    def _pick(self, call: HttpCall[Any]) -> int:
        if call.per_server:
            raise_error(
                f"{call.method} {call.path}: shared-memory regions are registered per server, "
                f"and this client spreads calls over {len(self.balancer)} replicas "
                f"({', '.join(self.balancer.addresses)}); a region registered on one would be "
                "missing on the others.  Use a client with a single url for each replica for "
                "shared-memory inference."
            )
        if call.sequence is None:
            return self.balancer.pick(_monotonic())
        sequence_id, start, _end = call.sequence
        return self.balancer.pick(_monotonic(), sequence_id, start)

    def _done(self, call: HttpCall[Any], index: int, failure: str | None) -> None:
        self.balancer.finished(index, _monotonic(), failure)
        if call.sequence is not None and call.sequence[2] and failure is None:
            self.balancer.end_sequence(call.sequence[0])

    def _failed(self, call: HttpCall[Any], index: int, error: BaseException) -> BaseException:
        """What to raise for ``call``'s attempt on replica ``index`` that raised ``error``.

        Only the replica's own failure counts against it (and is named with its address);
        anything else (KeyboardInterrupt, a cancelled task) just ends the attempt.
        """
        if isinstance(error, InferenceServerException):
            self._done(call, index, _failure(error))
            return replica_error(error, self.balancer.address(index))
        self.balancer.finished(index, _monotonic())
        return error

    def replica_stats(self) -> list[ReplicaStats]:
        """The counters of each replica (see :class:`ReplicaStats`)."""
        return self.balancer.stats()


class GeventReplicas(_Replicas):
    """The sync client's transport over several replicas: one
    :class:`~tritonclient._transport.gevent.GeventTransport` each (parameters as
    :class:`_Replicas`)."""

    @staticmethod
    def _lock_factory() -> Any:
        # A real OS-thread lock even when the program monkey-patched ``threading``: the
        # balancer's state is shared by every calling thread and the hub threads (never held
        # across I/O).  Imported here so that the asyncio client never loads gevent.
        from .gevent import _allocate_lock

        return _allocate_lock

    def _start_probes(self) -> None:
        for index in self.balancer.due_probes(_monotonic()):
            self._probe(index)

    def _probe(self, index: int) -> None:
        balancer = self.balancer

        def answer(reply: HttpReply) -> None:
            balancer.probed(index, _monotonic(), reply.status == 200)

        def failed(error: InferenceServerException) -> InferenceServerException:
            balancer.probed(index, _monotonic(), False)
            return error

        try:  # in the background, on the replica's hub thread; nobody waits for it
            self._transports[index].submit(self._probe_call(), answer, failed, PROBE_TIMEOUT)
        except InferenceServerException:
            balancer.probed(index, _monotonic(), False)

    def send(self, call: HttpCall[Any], timeout: float | None = None) -> HttpReply:
        """One attempt of ``call`` on the replica the balancer picks."""
        self._start_probes()
        index = self._pick(call)
        try:
            reply: HttpReply = self._transports[index].send(call, timeout)
        except BaseException as error:
            raise self._failed(call, index, error) from None
        self._done(call, index, _reply_failure(reply))
        return reply

    def submit(self, call: HttpCall[Any], finish: Callable[[HttpReply], T]) -> Any:
        """Start ``call`` on the picked replica's hub thread (``async_infer``)."""
        self._start_probes()
        index = self._pick(call)
        address = self.balancer.address(index)

        def done(reply: HttpReply) -> T:
            self._done(call, index, _reply_failure(reply))
            return finish(reply)

        def failed(error: InferenceServerException) -> InferenceServerException:
            self._done(call, index, _failure(error))
            return replica_error(error, address)

        try:
            return self._transports[index].submit(call, done, failed)
        except BaseException:  # not started (the client is closed)
            self.balancer.finished(index, _monotonic())
            raise

    def open_stream(self, call: HttpCall[Any]) -> Any:
        """Open a streamed answer (``generate_stream``) on the picked replica; the stream
        stays there to its end.  The call counts as done once the answer's headers are in
        (a stream is not an outstanding request for the balancer)."""
        self._start_probes()
        index = self._pick(call)
        try:
            stream = self._transports[index].open_stream(call)
        except BaseException as error:
            raise self._failed(call, index, error) from None
        self._done(call, index, None)
        return stream

    def close(self) -> None:
        """Close every replica's transport (waiting for their calls)."""
        for transport in self._transports:
            transport.close()

    def abandon(self) -> None:
        """Stop without waiting (garbage collection of the client): never raises."""
        for transport in getattr(self, "_transports", ()):
            transport.abandon()


class AiohttpReplicas(_Replicas):
    """The asyncio client's transport over several replicas: one
    :class:`~tritonclient._transport.aiohttp.AiohttpTransport` each (parameters as
    :class:`_Replicas`)."""

    def __init__(self, servers: Servers, base: str, policy: BalancingPolicy, make: Make) -> None:
        super().__init__(servers, base, policy, make)
        #: Probes in progress (a task needs a reference until it is done).
        self._probes: set[asyncio.Task[None]] = set()

    def _start_probes(self) -> None:
        for index in self.balancer.due_probes(_monotonic()):
            task = asyncio.get_running_loop().create_task(self._probe(index))
            self._probes.add(task)
            task.add_done_callback(self._probes.discard)

    async def _probe(self, index: int) -> None:
        ready = False
        try:
            probe = self._transports[index].send(self._probe_call())
            reply = await asyncio.wait_for(probe, PROBE_TIMEOUT)
            ready = reply.status == 200
        except Exception:  # refused, timed out, closed: not ready
            ready = False
        finally:
            self.balancer.probed(index, _monotonic(), ready)

    async def send(self, call: HttpCall[Any]) -> HttpReply:
        """One attempt of ``call`` on the replica the balancer picks."""
        self._start_probes()
        index = self._pick(call)
        try:
            reply: HttpReply = await self._transports[index].send(call)
        except BaseException as error:
            raise self._failed(call, index, error) from None
        self._done(call, index, _reply_failure(reply))
        return reply

    async def open_stream(self, call: HttpCall[Any]) -> Any:
        """Open a streamed answer on the picked replica (as :meth:`GeventReplicas.open_stream`)."""
        self._start_probes()
        index = self._pick(call)
        try:
            stream = await self._transports[index].open_stream(call)
        except BaseException as error:
            raise self._failed(call, index, error) from None
        self._done(call, index, None)
        return stream

    async def close(self) -> None:
        """Stop the probes and close every replica's session."""
        for task in list(self._probes):
            task.cancel()
        for transport in self._transports:
            await transport.close()
