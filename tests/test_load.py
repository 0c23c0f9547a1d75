"""The bundled server under load (``tests/loadgen.py``): short versions of the stress test and
the soak (``benchmarks/stress.py`` and ``benchmarks/soak.py`` run the long ones), and the
suite's hostile inputs sent while good traffic runs.

Each starts ``python -m mock_server`` with the bundled models (default settings but
``--allow-client-shm=true``: models in stub processes) on free loopback ports and drives it from
several client processes at once, every answer checked.
"""

from __future__ import annotations

import os

from tests import hostile_load, loadgen, resources

MiB = 1 << 20


def test_stress_under_contention() -> None:
    """Every workload at once, both cores busy with other work: every request answered right,
    no stub ends, nothing outlives the server."""
    passed, report = loadgen.stress_run(
        15.0, 4 * MiB, os.cpu_count() or 1, None, list(loadgen.WORKLOADS)
    )
    assert passed, report


def test_a_short_soak_leaves_nothing_growing() -> None:
    with loadgen.start_server() as served:
        result = resources.soak(
            served.http,
            served.grpc,
            served.process.pid,
            requests=3000,
            chunk_seconds=8.0,
            big=4 * MiB,
            workloads=list(loadgen.WORKLOADS),
            report=lambda line: None,
            min_chunks=5,
        )
        result.problems.extend(served.trouble())
    assert result.requests[-1] >= 3000
    assert result.verdict(0.10, warmup=2) == [], result.samples


# -- hostile input while good traffic runs -------------------------------------------------------
def test_the_attack_list_is_the_hostile_suite() -> None:
    names = {name.split("{")[0] for name, _ in hostile_load.attacks()}
    assert {
        "test_decompression_bomb",
        "test_fuzz_http_infer",
        "test_malformed_protobuf_unary",
    } <= names
    assert len(hostile_load.attacks()) >= 30


def test_hostile_input_under_traffic() -> None:
    """The suite's hostile inputs, sent while other clients send good requests: every attack
    is answered as on a quiet server, every good request is answered right (none lost, none
    answered twice or with another's data), and the server logs no unexpected error.  (How
    much slower the good requests get is measured by ``benchmarks/stress.py --hostile``.)"""
    with loadgen.start_server() as served:
        result = hostile_load.under_attack(served)
        trouble = served.trouble()
    assert result.failures == []
    assert result.window[1] - result.window[0] < hostile_load.ATTACK_SECONDS, (
        "the attacks outlasted the traffic"
    )
    for outcome in result.quiet + result.attacked:
        assert outcome.errors == [] and outcome.count > 0, outcome.workload
    assert trouble == []
