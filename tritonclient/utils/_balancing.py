"""The public settings and counters of clients over several replicas (not in NVIDIA's
package): :class:`BalancingPolicy` and :class:`ReplicaStats`.  The policy itself is
:mod:`tritonclient._balance`; this module only depends on :mod:`._errors`, so that
``tritonclient.utils`` can re-export these classes without an import cycle."""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import raise_error

__all__ = ["POLICIES", "BalancingPolicy", "ReplicaStats", "as_balancing_policy"]

#: The ways to spread calls.
POLICIES = ("round_robin", "least_outstanding")


class BalancingPolicy:
    """How a client with several replicas spreads calls and takes replicas out.

    Parameters
    ----------
    policy : str
        ``"round_robin"`` (each call to the next replica in service) or
        ``"least_outstanding"`` (to the replica with the fewest calls in progress from this
        client; ties in round-robin order). Default ``"round_robin"``.
    health_check_interval : float or None
        Seconds between readiness probes (``GET /v2/health/ready``) of each replica in
        service, made in the background while the client is used. None: no periodic probes
        (a replica is then only ejected when it refuses connections). Default 5.0.
    ejection_time : float
        Seconds a replica stays out after its first ejection before it is probed. Default 1.0.
    max_ejection_time : float
        Longest time out: the time doubles with each ejection in a row up to this. Default
        30.0.
    """

    def __init__(
        self,
        policy: str = "round_robin",
        health_check_interval: float | None = 5.0,
        ejection_time: float = 1.0,
        max_ejection_time: float = 30.0,
    ) -> None:
        if policy not in POLICIES:
            raise_error(f"unknown load balancing policy {policy!r}; expected one of {POLICIES}")
        if health_check_interval is not None and health_check_interval <= 0:
            raise_error("health_check_interval must be positive or None")
        if ejection_time <= 0 or max_ejection_time < ejection_time:
            raise_error("ejection_time must be positive and at most max_ejection_time")
        self.policy = policy
        self.health_check_interval = health_check_interval
        self.ejection_time = float(ejection_time)
        self.max_ejection_time = float(max_ejection_time)

    def __repr__(self) -> str:
        return (
            f"BalancingPolicy(policy={self.policy!r}, "
            f"health_check_interval={self.health_check_interval}, "
            f"ejection_time={self.ejection_time}, max_ejection_time={self.max_ejection_time})"
        )


def as_balancing_policy(value: str | BalancingPolicy | None) -> BalancingPolicy:
    """A client's ``load_balancing`` argument as a :class:`BalancingPolicy`."""
    if value is None:
        return BalancingPolicy()
    if isinstance(value, BalancingPolicy):
        return value
    if isinstance(value, str):
        return BalancingPolicy(value)
    raise_error("load_balancing must be a policy name or a BalancingPolicy")


@dataclass(frozen=True)
class ReplicaStats:
    """The counters of one replica, as seen by one client.

    Attributes
    ----------
    address : str
        ``host:port`` of the replica.
    requests : int
        Calls sent to it (readiness probes not counted).
    failures : int
        Calls that failed below the protocol (refused, reset, timed out) or answered 5xx
        (gRPC: every failed call, as gRPC counts them).
    ejections : int
        Times it was taken out of service.
    outstanding : int
        Calls in progress now.
    in_service : bool
        Whether it takes new calls now.
    """

    address: str
    requests: int
    failures: int
    ejections: int
    outstanding: int
    in_service: bool
