"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonclient.utils import _codec

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
    else:
        monkeypatch.setattr(_codec, "_pack_bytes", _codec._py_pack_bytes)
        monkeypatch.setattr(_codec, "_unpack_bytes", _codec._py_unpack_bytes)
    yield request.param


@pytest.fixture(scope="session")
def nvidia_python() -> Path:
    """Interpreter with NVIDIA's official tritonclient (skips the test when there is none)."""
    from tests.peers import nvidia_client_python

    python = nvidia_client_python()
    if python is None:
        pytest.skip("NVIDIA's tritonclient is not available")
    return python
