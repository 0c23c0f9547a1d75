"""The metrics differential test: the same requests to real Triton 2.51 and mock_server, then
both Prometheus expositions compared family by family.

For each scenario of :mod:`tests.conformance.cases_metrics` (run in order on the "metrics"
pair), both servers' ``GET /metrics`` must have the same Content-Type, the same families in
the same order, each with the same ``# HELP`` and ``# TYPE`` lines and the same metrics
(labels as written, so label names, order and escaping count), whose sample lines are equal
text (value formatting counts). Only measured times (the ``*_duration_us`` families: zero or
not) and the machine's own figures (CPU utilization and memory: a number written as Triton
writes numbers) are normalised, by :func:`tests.conformance.cases_metrics.normalize`. The order
of the metrics inside a family is not compared: Triton writes them in hash-table order.

A family that differs on purpose is allow-listed as ``metrics/<scenario>/<family>``; the
family order of a scenario as ``metrics/<scenario>/<order>``.
"""

from __future__ import annotations

import difflib
import http.client
import re
import time
from collections.abc import Iterator

import pytest

from tests.conformance.allowlist import ALLOWED
from tests.conformance.cases_metrics import SCENARIOS, Family, Scenario, normalize, parse
from tests.conformance.conftest import PairPool
from tests.conformance.pair import Endpoint, Pair
from tests.conformance.wire import TIMEOUT, run_case

pytestmark = pytest.mark.triton_peer


def _settled(text: str, unloaded: tuple[str, ...]) -> bool:
    """Whether an exposition is ready to compare: Triton has collected its periodic metrics
    (memory and pinned-pool sizes read 0 before its first collection, ~2 s after start) and
    finished unloading the ``unloaded`` models."""
    collected = re.search(r"^nv_cpu_memory_total_bytes [1-9]", text, re.M) is not None
    return collected and not any(f'nv_inference_count{{model="{m}",' in text for m in unloaded)


def scrape(server: Endpoint, unloaded: tuple[str, ...] = ()) -> tuple[str, list[Family]]:
    """The Content-Type and the (normalised) families of ``GET /metrics``, read once it is
    :func:`_settled` (within :data:`TIMEOUT`)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        conn = http.client.HTTPConnection(server.metrics, timeout=TIMEOUT)
        try:
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            text = response.read().decode("utf-8")
            status = response.status
            content_type = response.getheader("Content-Type") or ""
        finally:
            conn.close()
        assert status == 200, f"{server.name}: GET /metrics answered {status}"
        if _settled(text, unloaded):
            return content_type, [normalize(family) for family in parse(text)]
        assert time.monotonic() < deadline, f"{server.name}: metrics not settled\n{text}"
        time.sleep(0.1)


def differences(triton: list[Family], mock: list[Family]) -> dict[str, str]:
    """What differs, by family name (``<order>`` for the order of the families)."""
    found: dict[str, str] = {}
    order_t, order_m = [f.name for f in triton], [f.name for f in mock]
    if order_t != order_m:
        found["<order>"] = "\n".join(
            difflib.unified_diff(order_t, order_m, "triton 2.51", "mock_server", lineterm="")
        )
    by_name = {f.name: f for f in mock}
    for family in triton:
        other = by_name.pop(family.name, None)
        if other is None:
            found[family.name] = "missing on mock_server"
            continue
        a, b = _lines(family), _lines(other)
        if a != b:
            found[family.name] = "\n".join(
                difflib.unified_diff(a, b, "triton 2.51", "mock_server", lineterm="")
            )
    for name in by_name:
        found[name] = "only on mock_server"
    return found


def _lines(family: Family) -> list[str]:
    """The family as comparable lines: HELP, TYPE, then each metric's lines, metrics sorted."""
    return [
        family.help,
        family.type,
        *(line for key in sorted(family.metrics) for line in family.metrics[key]),
    ]


@pytest.fixture(scope="module")
def metrics_pair(pairs: PairPool) -> Iterator[Pair]:
    yield pairs["metrics"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_same_metrics_as_triton(scenario: Scenario, metrics_pair: Pair) -> None:
    """After the scenario's requests (sent to both, in the same order), both expositions
    agree, family by family, but for allow-listed families."""
    run_case(metrics_pair.triton, scenario.steps, scenario.id)
    run_case(metrics_pair.mock, scenario.steps, scenario.id)
    content_t, triton = scrape(metrics_pair.triton, scenario.unloaded)
    content_m, mock = scrape(metrics_pair.mock, scenario.unloaded)
    assert content_m == content_t
    found = differences(triton, mock)
    prefix = f"{scenario.id}/"
    allowed = {key[len(prefix) :] for key in ALLOWED if key.startswith(prefix)}
    stale = sorted(allowed - set(found))
    assert not stale, f"allow-listed but no longer different, remove: {stale}"
    unexpected = {name: diff for name, diff in found.items() if name not in allowed}
    compared = len({f.name for f in triton} | {f.name for f in mock})
    assert not unexpected, (
        f"{scenario.id}: {len(unexpected)} of {compared} families differ from Triton 2.51\n"
        + "\n\n".join(f"== {name}\n{diff}" for name, diff in unexpected.items())
    )
