"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import peers
from tritonclient.utils import _serialize as _codec

#: NVIDIA's QA files, held as data for tests/test_triton_qa.py: not this suite's tests.
collect_ignore = ["triton_qa"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(params=["c", "python"])
def codec_impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test once with the C accelerator and once with the numpy fallback."""
    if request.param == "c":
        if not _codec.HAVE_SPEEDUPS:
            pytest.skip("the C accelerator is not built in this environment")
        from tritonclient.utils import _speedups

        monkeypatch.setattr(_codec, "_pack_bytes", _speedups.pack_bytes)
        monkeypatch.setattr(_codec, "_unpack_bytes", _speedups.unpack_bytes)
        monkeypatch.setattr(_codec, "_pack_object_array", _speedups.pack_object_array)
        monkeypatch.setattr(_codec, "_unpack_bytes_array", _speedups.unpack_bytes_array)
    else:
        monkeypatch.setattr(_codec, "_pack_bytes", _codec._py_pack_bytes)
        monkeypatch.setattr(_codec, "_unpack_bytes", _codec._py_unpack_bytes)
        monkeypatch.setattr(_codec, "_pack_object_array", None)
        monkeypatch.setattr(_codec, "_unpack_bytes_array", None)
    yield request.param


@pytest.fixture(scope="session")
def nvidia_python() -> Path:
    """Interpreter with NVIDIA's official tritonclient (a missing one fails the test, see peers)."""
    python = peers.nvidia_client_python()
    if python is None:
        peers.peer_missing("NVIDIA's tritonclient 2.73")
    return python


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked ``triton_peer`` need the real Triton server."""
    if item.get_closest_marker("triton_peer") is not None and peers.find_tritonserver() is None:
        peers.peer_missing("the real Triton 2.51 server (nvidia-pytriton)")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many tests were skipped for a missing peer, so that it is never silent."""
    skipped = terminalreporter.stats.get("skipped", [])
    count = sum(1 for report in skipped if peers.PEER_SKIP_PREFIX in str(report.longrepr))
    if count:
        terminalreporter.write_sep(
            "=", f"{count} peer tests skipped (TRITON_PEERS=off): their peer is not installed"
        )
