"""The client differential suite: NVIDIA's ``tritonclient`` 2.73 and ours drive the same call
sequences (``client_driver.py``) against the same server, and every call's outcome (return
value, or exception type, message, status and debug details) must be the same.

Each interpreter runs the driver as a subprocess with ``PYTHONPATH`` unset and ``cwd="/"``, so
each imports its own package. The sequences run against the real Triton 2.51 (the "main" pair
of the HTTP suite, started once per session and shared with it) and against mock_server; each
driver run is cached per session, so each server sees one run of each package.

A call whose outcomes differ fails its sequence unless ``allowlist.ALLOWED`` has its case id,
``client/<sequence>/<label>`` (optionally ``@triton`` or ``@mock`` for one server only), with
the reason; an allow-listed call whose outcomes no longer differ fails too.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import client_driver
from tests.conformance.allowlist import ALLOWED
from tests.conformance.conftest import PairPool
from tests.conformance.normalize import normalize_json
from tests.conformance.pair import Endpoint, Pair

DRIVER = Path(client_driver.__file__).resolve()
SEQUENCES = client_driver.sequence_ids()
KINDS = ("triton", "mock")
#: One driver run takes 30-90 s (idle to loaded machine); four (both packages, and a retry
#: after a Triton abort) must fit in the first test's time limit (below).
DRIVER_TIMEOUT = 180.0
PREFIX = "client/"

Records = dict[str, list[list[Any]]]


def run_driver(python: Path | str, endpoint: Endpoint) -> Records:
    """Run the driver with ``python`` against ``endpoint``; its records by sequence id."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(python), str(DRIVER), "--http", endpoint.http, "--grpc", endpoint.grpc],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, f"driver failed under {python}:\n{proc.stderr[-5000:]}"
    records: Records = json.loads(proc.stdout)["sequences"]
    return records


class DriverRuns:
    """Both packages' records per server kind, each computed once per session.

    The servers are the session's "client" pair (the main pair's flags and models, servers of
    their own: Triton 2.51 sometimes aborts under the drivers' streams, see
    ``conftest.TRITON_CRASHES``, and that must not take the raw cases' servers with it).
    """

    def __init__(self, pairs: PairPool, nvidia: Path) -> None:
        self._pairs = pairs
        self._nvidia = nvidia
        self._runs: dict[str, tuple[Records, Records]] = {}

    def _both(self, pair: Pair, kind: str = "triton") -> tuple[Records, Records]:
        endpoint = pair.triton if kind == "triton" else pair.mock
        return run_driver(self._nvidia, endpoint), run_driver(sys.executable, endpoint)

    def __getitem__(self, kind: str) -> tuple[Records, Records]:
        if kind not in self._runs:
            if kind == "triton":
                self._runs[kind] = self._pairs.run(
                    "client", "the client differential drivers", self._both
                )
            else:
                self._runs[kind] = self._both(self._pairs["client"], "mock")
        return self._runs[kind]


@pytest.fixture(scope="session")
def driver_runs(pairs: PairPool, nvidia_python: Path) -> DriverRuns:
    return DriverRuns(pairs, nvidia_python)


def by_label(records: list[list[Any]]) -> dict[str, Any]:
    """A sequence's records by label (a repeated label gets ``#2``, ``#3``...)."""
    out: dict[str, Any] = {}
    for label, outcome in records:
        key, n = label, 1
        while key in out:
            n += 1
            key = f"{label}#{n}"
        out[key] = normalize_json(outcome)
    return out


def allowed_reason(case_id: str, kind: str) -> str | None:
    return ALLOWED.get(f"{case_id}@{kind}", ALLOWED.get(case_id))


def _diff(theirs: Any, ours: Any) -> str:
    a = json.dumps(theirs, indent=1, sort_keys=True).splitlines()
    b = json.dumps(ours, indent=1, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "nvidia 2.73", "ours", lineterm=""))


def compare(sequence: str, kind: str, theirs: list[list[Any]], ours: list[list[Any]]) -> list[str]:
    """The problems of one sequence: calls that differ unlisted, listed ones that do not."""
    a, b = by_label(theirs), by_label(ours)
    problems = []
    for label in dict.fromkeys([*a, *b]):
        case_id = f"{PREFIX}{sequence}/{label}"
        reason = allowed_reason(case_id, kind)
        same = a.get(label, "<missing>") == b.get(label, "<missing>")
        if reason is not None and same:
            problems.append(f"{case_id} is allow-listed ({reason}) but no longer differs")
        elif reason is None and not same:
            problems.append(
                f"{case_id}: ours differs from NVIDIA's 2.73 on {kind}\n"
                f"{_diff(a.get(label, '<missing>'), b.get(label, '<missing>'))}"
            )
    return problems


@pytest.mark.parametrize(
    "kind",
    [pytest.param("triton", marks=pytest.mark.triton_peer), "mock"],
)
@pytest.mark.parametrize("sequence", SEQUENCES)
@pytest.mark.timeout(4 * DRIVER_TIMEOUT + 120)  # the first one runs the drivers
def test_same_outcomes_as_nvidia(sequence: str, kind: str, driver_runs: DriverRuns) -> None:
    theirs, ours = driver_runs[kind]
    assert sequence in theirs and sequence in ours, "the driver did not run this sequence"
    assert theirs[sequence], "the sequence recorded nothing"
    problems = compare(sequence, kind, theirs[sequence], ours[sequence])
    assert not problems, "\n\n".join(problems)


def test_client_allowlist_entries_name_sequences_and_reasons() -> None:
    for key, reason in ALLOWED.items():
        if not key.startswith(PREFIX):
            continue
        case_id, _, kind = key.partition("@")
        assert kind in ("", *KINDS), key
        sequence = case_id[len(PREFIX) :].rsplit("/", 1)[0]
        assert sequence in SEQUENCES, f"{key}: no such sequence"
        assert reason.strip(), f"{key}: no reason"


def test_compare_flags_differences_and_stale_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    ok = {"ok": 1}
    monkeypatch.setitem(ALLOWED, f"{PREFIX}utils/listed", "a reason")
    problems = compare(
        "utils",
        "mock",
        [["same", ok], ["differs", ok], ["listed", ok]],
        [["same", ok], ["differs", {"ok": 2}], ["listed", ok]],
    )
    assert len(problems) == 2
    assert problems[0].startswith(f"{PREFIX}utils/differs: ours differs")
    assert "no longer differs" in problems[1]
