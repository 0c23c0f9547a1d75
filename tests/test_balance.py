"""The sans-I/O replica policy (:mod:`tritonclient._balance`), with time passed in."""

from __future__ import annotations

import pytest

from tritonclient._balance import Balancer, BalancingPolicy, replica_error
from tritonclient.utils import (
    InferenceServerConnectionError,
    InferenceServerException,
    InferenceServerUnavailableError,
)

A, B, C = "a:1", "b:2", "c:3"


def balancer(policy: str = "round_robin", interval: float | None = None) -> Balancer:
    return Balancer(
        [A, B, C],
        BalancingPolicy(
            policy, health_check_interval=interval, ejection_time=1.0, max_ejection_time=4.0
        ),
    )


def test_round_robin_skips_ejected_replicas() -> None:
    b = balancer()
    picks = []
    for _ in range(6):
        index = b.pick(0.0)
        b.finished(index, 0.0)
        picks.append(index)
    assert picks == [0, 1, 2, 0, 1, 2]
    b.finished(b.pick(0.0), 0.0, "connect")  # replica 0 refused: out
    picks = [b.pick(0.0) for _ in range(4)]
    assert picks == [1, 2, 1, 2]
    stats = b.stats()
    assert (stats[0].ejections, stats[0].failures, stats[0].in_service) == (1, 1, False)
    assert [s.outstanding for s in stats] == [0, 2, 2]


def test_other_failures_count_but_do_not_eject() -> None:
    b = balancer()
    b.finished(b.pick(0.0), 0.0, "error")
    assert b.stats()[0].failures == 1 and b.stats()[0].in_service


def test_least_outstanding_prefers_idle_replicas() -> None:
    b = balancer("least_outstanding")
    first, second = b.pick(0.0), b.pick(0.0)
    assert {first, second} == {0, 1}
    third = b.pick(0.0)
    assert third == 2
    b.finished(1, 0.0)
    assert b.pick(0.0) == 1  # the only one with nothing in progress


def test_ejected_replica_is_probed_after_its_backoff_and_only_then_returns() -> None:
    b = balancer()
    b.finished(b.pick(0.0), 0.0, "connect")
    assert b.due_probes(0.5) == []  # still inside its first second
    assert b.due_probes(1.0) == [0]
    assert b.due_probes(1.0) == []  # being probed: not twice
    assert 0 not in {b.pick(1.0) for _ in range(4)}  # no calls before the probe answers
    b.probed(0, 1.1, ready=False)  # still not ready: out again, for twice as long
    assert b.due_probes(2.5) == []
    assert b.due_probes(3.1) == [0]
    b.probed(0, 3.2, ready=True)
    assert b.stats()[0].in_service and b.stats()[0].ejections == 1
    assert 0 in {b.pick(3.2) for _ in range(3)}


def test_backoff_doubles_up_to_the_maximum_and_resets() -> None:
    b = balancer()
    now = 0.0
    waits = []
    b.finished(b.pick(now), now, "connect")
    for _ in range(4):
        due = now
        while not b.due_probes(due):
            due += 0.25
        waits.append(due - now)
        now = due
        b.probed(0, now, ready=False)
    assert waits == [1.0, 2.0, 4.0, 4.0]
    b.probed(0, now, ready=True)
    b.finished(0, now, "connect")  # a new ejection starts from the first backoff again
    assert b.due_probes(now + 1.0) == [0]


def test_periodic_probes_take_out_a_replica_that_is_not_ready() -> None:
    b = balancer(interval=0.5)
    assert b.due_probes(0.0) == [0, 1, 2]  # the first call probes every replica
    for index in (0, 1):
        b.probed(index, 0.1, ready=True)
    b.probed(2, 0.1, ready=False)  # answers, but not ready (draining): out
    assert b.in_service() == [0, 1]
    assert b.due_probes(0.3) == []
    assert sorted(b.due_probes(0.6)) == [0, 1]  # healthy ones again after the interval
    assert b.due_probes(1.1) == [2]  # the ejected one after its backoff


def test_all_out_tries_the_one_that_comes_back_first() -> None:
    b = balancer()
    for now in (0.0, 0.1, 0.2):
        b.finished(b.pick(now), now, "connect")
    assert b.in_service() == []
    assert b.pick(0.3) == 0


def test_sequences_stay_on_their_replica_and_fail_clearly_when_it_goes() -> None:
    b = balancer()
    home = b.pick(0.0, sequence_id=7, sequence_start=True)
    b.finished(home, 0.0)
    for _ in range(5):
        assert b.pick(0.0, sequence_id=7) == home
        b.finished(home, 0.0)
    other = b.pick(0.0, sequence_id="s", sequence_start=True)
    assert other != home
    b.finished(other, 0.0, "connect")
    with pytest.raises(InferenceServerUnavailableError, match="sequence 's' runs on replica b:2"):
        b.pick(0.0, sequence_id="s")
    again = b.pick(0.0, sequence_id="s", sequence_start=True)  # starting again: anywhere
    assert again != other
    b.end_sequence(7)
    b.pick(0.0, sequence_id=7)  # forgotten: a fresh pick, no error


def test_policy_checks() -> None:
    with pytest.raises(InferenceServerException, match="unknown load balancing policy"):
        BalancingPolicy("random")
    with pytest.raises(InferenceServerException, match="health_check_interval"):
        BalancingPolicy(health_check_interval=0)
    with pytest.raises(InferenceServerException, match="ejection_time"):
        BalancingPolicy(ejection_time=5, max_ejection_time=1)
    with pytest.raises(InferenceServerException, match="url list is empty"):
        Balancer([], BalancingPolicy())


def test_replica_error_names_the_replica_and_keeps_the_class() -> None:
    error = InferenceServerConnectionError("POST /v2/x: connection failed").with_hint("start it")
    named = replica_error(error, "h:1")
    assert isinstance(named, InferenceServerConnectionError)
    assert named.message() == "replica h:1: POST /v2/x: connection failed"
    assert named.hint == "start it"


def test_each_module_imports_first() -> None:
    # tritonclient.utils re-exports BalancingPolicy/ReplicaStats: no import cycle, whichever
    # module a program imports first.
    import subprocess
    import sys

    for module in (
        "tritonclient._balance",
        "tritonclient.utils",
        "tritonclient._transport.replicas",
    ):
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, timeout=60)
