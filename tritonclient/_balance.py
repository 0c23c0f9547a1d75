"""Choosing a replica for each call, written once for the sync and asyncio HTTP clients, in
the style of :mod:`tritonclient._ready` and :mod:`tritonclient._retry`.

:class:`Balancer` knows nothing of I/O: a driver (:mod:`tritonclient._transport.replicas`)
asks it which replica takes a call (:meth:`Balancer.pick`), tells it how the call ended
(:meth:`Balancer.finished`), asks which replicas are due for a readiness probe
(:meth:`Balancer.due_probes`) and tells it the probes' answers (:meth:`Balancer.probed`).
Time is passed in by the driver (``now``, from ``time.monotonic()``), so the policy is
tested without clocks or sockets.

A replica is *in service* or *ejected*.  It is ejected when a call to it fails to connect
or a readiness probe fails; it stays out for a backoff period (doubling with each ejection
in a row, up to a maximum), then is probed with ``GET /v2/health/ready`` and returns only
when the probe answers 200.  Replicas in service are probed every ``health_check_interval``
seconds too, which is how a replica whose readiness fails (draining, a model that failed to
load with strict readiness) is noticed while it still accepts connections.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from tritonclient.utils._balancing import (
    POLICIES,
    BalancingPolicy,
    ReplicaStats,
    as_balancing_policy,
)
from tritonclient.utils._errors import (
    InferenceServerException,
    InferenceServerUnavailableError,
    raise_error,
)

__all__ = [
    "POLICIES",
    "Balancer",
    "BalancingPolicy",
    "ReplicaStats",
    "as_balancing_policy",
    "replica_error",
]


class _Replica:
    __slots__ = (
        "address",
        "ejected_until",
        "ejections",
        "failures",
        "next_check",
        "outstanding",
        "probing",
        "requests",
        "streak",
    )

    def __init__(self, address: str) -> None:
        self.address = address
        self.requests = 0
        self.failures = 0
        self.ejections = 0
        self.outstanding = 0
        #: None while in service; otherwise when the probe after the ejection is due.
        self.ejected_until: float | None = None
        #: Ejections in a row (the backoff doubles with each).
        self.streak = 0
        #: When the next periodic probe of a replica in service is due.
        self.next_check = 0.0
        self.probing = False


class Balancer:
    """The replicas of one client, their state and counters (see the module docstring).

    Parameters
    ----------
    addresses : sequence of str
        ``host:port`` of each replica, in the order calls go round.
    policy : BalancingPolicy
        How to spread calls and when to probe.
    lock : callable, optional
        Makes the lock that guards the state: a real thread lock for the sync client (any
        thread may call), None for asyncio (one thread).  Nothing blocks while it is held.
    """

    def __init__(
        self,
        addresses: Sequence[str],
        policy: BalancingPolicy,
        lock: Callable[[], Any] | None = None,
    ) -> None:
        if not addresses:
            raise_error("the url list is empty")
        self._replicas = [_Replica(a) for a in addresses]
        self._policy = policy
        self._least = policy.policy == "least_outstanding"
        self._next = 0
        self._lock: Any = lock() if lock is not None else contextlib.nullcontext()
        #: sequence id -> replica index: the calls of a sequence stay where it started.
        self._sequences: dict[int | str, int] = {}
        #: The earliest time a probe may be due (a cheap test on every call).
        self._next_due = 0.0

    @property
    def addresses(self) -> list[str]:
        """``host:port`` of each replica."""
        return [r.address for r in self._replicas]

    def __len__(self) -> int:
        return len(self._replicas)

    # -- choosing --------------------------------------------------------------------------

    def pick(self, now: float, sequence_id: int | str = 0, sequence_start: bool = False) -> int:
        """The index of the replica that takes the next call, counted as started.

        A call of a sequence (``sequence_id`` not 0 or "") goes to the replica its sequence
        started on; a call with ``sequence_start`` (or the first call seen of a sequence)
        picks as usual and pins the sequence there.  When no replica is in service, the one
        whose ejection ends first is tried anyway (better a call that may fail than none).

        Raises
        ------
        InferenceServerUnavailableError
            If the replica of the sequence is out of service: its state lives there, so the
            call is not moved to another replica.
        """
        with self._lock:
            if sequence_id:
                pinned = self._sequences.get(sequence_id)
                if pinned is not None and not sequence_start:
                    replica = self._replicas[pinned]
                    if replica.ejected_until is not None:
                        raise InferenceServerUnavailableError(
                            f"sequence {sequence_id!r} runs on replica {replica.address}, "
                            "which is out of service; its state lives there, so its calls "
                            "are not moved to another replica (start the sequence again)"
                        )
                    replica.requests += 1
                    replica.outstanding += 1
                    return pinned
            index = self._choose(now)
            replica = self._replicas[index]
            replica.requests += 1
            replica.outstanding += 1
            if sequence_id:
                self._sequences[sequence_id] = index
            return index

    def _choose(self, now: float) -> int:
        replicas = self._replicas
        count = len(replicas)
        start = self._next
        best = -1
        for step in range(count):
            index = (start + step) % count
            replica = replicas[index]
            if replica.ejected_until is not None:
                continue
            if not self._least:
                best = index
                break
            if best < 0 or replica.outstanding < replicas[best].outstanding:
                best = index
                if replica.outstanding == 0:
                    break
        if best < 0:  # every replica is out: try the one that comes back first
            best = min(range(count), key=lambda i: replicas[i].ejected_until or 0.0)
        self._next = (best + 1) % count
        return best

    def end_sequence(self, sequence_id: int | str) -> None:
        """Forget where sequence ``sequence_id`` runs (its last call was sent)."""
        with self._lock:
            self._sequences.pop(sequence_id, None)

    # -- outcomes --------------------------------------------------------------------------

    def finished(self, index: int, now: float, failure: str | None = None) -> None:
        """A call picked with :meth:`pick` ended.

        Parameters
        ----------
        index : int
            The replica.
        now : float
            The time.
        failure : str or None
            None when the call reached the server and was answered (even with an error of
            the call's own); ``"connect"`` when it failed to connect or the connection
            broke, which ejects the replica; ``"error"`` for other failures of the replica
            (timeouts, 5xx), counted but not ejecting.
        """
        with self._lock:
            replica = self._replicas[index]
            replica.outstanding -= 1
            if failure is None:
                return
            replica.failures += 1
            if failure == "connect":
                self._eject(replica, now)

    def _eject(self, replica: _Replica, now: float, again: bool = False) -> None:
        if replica.ejected_until is not None and not again:
            return  # already out (calls in flight when it went away fail one by one)
        policy = self._policy
        delay = min(policy.ejection_time * 2**replica.streak, policy.max_ejection_time)
        replica.streak += 1
        if not again:
            replica.ejections += 1
        replica.ejected_until = now + delay
        self._next_due = min(self._next_due, replica.ejected_until)

    # -- probes ----------------------------------------------------------------------------

    def due_probes(self, now: float) -> list[int]:
        """The replicas to probe now (each marked as being probed until :meth:`probed`)."""
        if now < self._next_due:
            return []
        due: list[int] = []
        interval = self._policy.health_check_interval
        with self._lock:
            next_due = float("inf")
            for index, replica in enumerate(self._replicas):
                if replica.probing:
                    continue
                when = replica.ejected_until
                if when is None:
                    if interval is None:
                        continue
                    when = replica.next_check
                if when <= now:
                    replica.probing = True
                    due.append(index)
                else:
                    next_due = min(next_due, when)
            self._next_due = next_due
        return due

    def probed(self, index: int, now: float, ready: bool) -> None:
        """The answer of a probe from :meth:`due_probes`: True for a 200 from
        ``/v2/health/ready``, False for anything else (refused, not ready, timed out)."""
        interval = self._policy.health_check_interval
        with self._lock:
            replica = self._replicas[index]
            replica.probing = False
            if ready:
                replica.ejected_until = None
                replica.streak = 0
            elif replica.ejected_until is None:
                self._eject(replica, now)
            else:  # still out: the same ejection, for another, longer, period
                self._eject(replica, now, again=True)
            if interval is not None:
                replica.next_check = now + interval
            due = replica.ejected_until if replica.ejected_until is not None else None
            if interval is not None:
                due = replica.next_check if due is None else min(due, replica.next_check)
            if due is not None:
                self._next_due = min(self._next_due, due)

    # -- observation -----------------------------------------------------------------------

    def address(self, index: int) -> str:
        """``host:port`` of replica ``index``."""
        return self._replicas[index].address

    def in_service(self) -> list[int]:
        """The indexes of the replicas in service."""
        with self._lock:
            return [i for i, r in enumerate(self._replicas) if r.ejected_until is None]

    def stats(self) -> list[ReplicaStats]:
        """A snapshot of every replica's counters."""
        with self._lock:
            return [
                ReplicaStats(
                    r.address,
                    r.requests,
                    r.failures,
                    r.ejections,
                    r.outstanding,
                    r.ejected_until is None,
                )
                for r in self._replicas
            ]


def replica_error(error: InferenceServerException, address: str) -> InferenceServerException:
    """``error`` with the replica that failed named in its message (same class, status)."""
    message = f"replica {address}: {error.message()}"
    named = type(error)(message, error.status(), error.debug_details())
    if error.hint:
        named.with_hint(error.hint)
    named.__cause__ = error.__cause__
    return named
