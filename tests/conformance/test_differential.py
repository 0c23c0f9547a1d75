"""The differential suite: every case runs against real Triton 2.51 and mock_server, and the
records must be equal, or the difference must be in the allow-list with its reason.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import pytest

from tests.conformance import (
    cases_compat,
    cases_ensemble,
    cases_grpc,
    cases_http,
    cases_metrics,
    cases_modes,
    cases_overrides,
    cases_sequence_id,
)
from tests.conformance.allowlist import ALLOWED
from tests.conformance.cases import Case
from tests.conformance.conftest import PairPool
from tests.conformance.wire import run_case

pytestmark = pytest.mark.triton_peer

CASES: list[Case] = [
    *cases_http.cases(),
    *cases_grpc.cases(),
    *cases_modes.cases(),
    *cases_compat.cases(),
    *cases_ensemble.cases(),
    *cases_overrides.cases(),
    *cases_sequence_id.cases(),
]


def test_case_ids_are_unique_and_allowlist_names_real_cases() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    http_entries = {
        key for key in ALLOWED if not key.startswith(("client/", "metrics/", "pb_utils/"))
    }
    assert not http_entries - set(ids), "allow-list entries without a case"
    # Metrics entries are metrics/<scenario>/<family>: their scenario must exist.
    scenarios = {s.id for s in cases_metrics.SCENARIOS}
    metrics_entries = {key for key in ALLOWED if key.startswith("metrics/")}
    assert all(key.rsplit("/", 1)[0] in scenarios for key in metrics_entries), (
        "metrics allow-list entries without a scenario"
    )
    assert all(reason.strip() for reason in ALLOWED.values())


def _diff(triton: Any, mock: Any) -> str:
    a = json.dumps(triton, indent=1, sort_keys=True).splitlines()
    b = json.dumps(mock, indent=1, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "triton 2.51", "mock_server", lineterm=""))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_same_answer_as_triton(case: Case, pairs: PairPool) -> None:
    triton = pairs.run(case.pair, case.id, lambda pair: run_case(pair.triton, case.steps, case.id))
    mock = run_case(pairs[case.pair].mock, case.steps, case.id)
    if case.id in ALLOWED:
        assert triton != mock, (
            f"{case.id} is allow-listed ({ALLOWED[case.id]}) but both servers now answer the "
            "same: remove the entry"
        )
        return
    assert triton == mock, f"{case.id}: mock_server differs from Triton 2.51\n{_diff(triton, mock)}"
