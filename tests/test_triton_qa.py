"""A part of Triton's own Python-backend QA (``tests/triton_qa``, NVIDIA's files, unchanged) run
against mock_server with this project's client, through ``tools/qa_parity.py``.

Each subtest builds the model repository its ``test.sh`` builds, starts mock_server on free
loopback ports, runs Triton's unittest client (and the server-log checks of its ``test.sh``)
and must end with no failed case. The full comparison with the real Triton 2.51 needs a
checkout of Triton's ``qa`` folder (``python -m tools.qa_parity --qa DIR``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools import qa_parity

QA = Path(__file__).resolve().parent / "triton_qa" / "qa"
#: The subtests whose files ``tests/triton_qa`` holds.
HELD = (
    "argument_validation",
    "lifecycle",
    "response_sender",
    "init_error",
    "fini_error",
    "auto_complete_error",
)
TIMEOUT_S = 300.0


def _subtest(name: str) -> qa_parity.Subtest:
    return next(s for s in qa_parity.SUBTESTS if s.name == name)


@pytest.mark.timeout(3 * TIMEOUT_S)
@pytest.mark.parametrize("name", HELD)
def test_triton_qa_subtest_passes_on_mock_server(name: str, tmp_path: Path) -> None:
    verdicts = qa_parity.Verdicts()
    qa_parity.run_subtest(
        _subtest(name), "mock", QA, tmp_path, sys.executable, sys.executable, verdicts, TIMEOUT_S
    )
    rows = {case: row["mock"] for case, row in verdicts.rows.items() if "mock" in row}
    assert rows, f"{name}: no case ran"
    failed = {case: detail for case, (status, detail) in rows.items() if status == "FAIL"}
    assert not failed, f"{name}: Triton's QA cases failed on mock_server: {failed}"
    # Skips are Triton's own (its client skips two response_sender cases); nothing else.
    assert all(status in ("pass", "skip") for status, _ in rows.values()), rows


def test_held_files_cover_the_subtests() -> None:
    """Every model and client file the held subtests read is in ``tests/triton_qa``."""
    for name in HELD:
        sub = _subtest(name)
        for model in sub.models:
            if not model.optional:
                assert (QA / model.src).is_dir(), f"{name}: {model.src} missing"
        for run in sub.runs:
            # Newer qa folders hold some clients under a new name (qa_parity._RENAMED).
            names = (run.script, qa_parity._RENAMED.get(run.script, run.script))
            assert any((QA / n).exists() for n in names), f"{name}: {run.script} missing"
