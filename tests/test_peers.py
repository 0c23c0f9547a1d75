"""The peers' cache (tools/peers.py) and what a missing peer does to a test (tests/peers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import peers
from tools import peers as cache


def _part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: bool = True) -> cache.Part:
    monkeypatch.setenv("TRITON_PEERS_CACHE", str(tmp_path))

    def build(path: Path, requirement: str) -> None:
        path.mkdir(parents=True)
        (path / "payload").write_text(requirement)

    return cache.Part(
        name="thing",
        requirement="thing==1",
        build=build,
        required_files=lambda p: [p / "payload"],
        check=lambda p: check,
    )


def test_part_is_made_once_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    part = _part(tmp_path, monkeypatch)
    assert not part.is_complete()
    logs: list[str] = []
    part.ensure(logs.append)
    assert part.is_complete() and (tmp_path / "thing" / cache.MARKER).read_text() == "thing==1"
    (tmp_path / "thing" / "extra").write_text("kept")
    part.ensure(logs.append)
    assert (tmp_path / "thing" / "extra").exists()  # reused, not rebuilt
    assert "present" in logs[-1]


def test_partial_or_outdated_part_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    part = _part(tmp_path, monkeypatch)
    (tmp_path / "thing").mkdir()
    (tmp_path / "thing" / "payload").write_text("half")  # no marker: an interrupted install
    assert not part.is_complete()
    part.ensure(lambda _: None)
    assert (tmp_path / "thing" / "payload").read_text() == "thing==1"
    (tmp_path / "thing" / cache.MARKER).write_text("thing==0")  # another requirement
    assert not part.is_marked()
    (tmp_path / "thing" / cache.MARKER).write_text("thing==1")
    (tmp_path / "thing" / "payload").unlink()  # a file gone
    assert not part.is_marked()


def test_part_that_fails_its_check_is_not_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    part = _part(tmp_path, monkeypatch, check=False)
    with pytest.raises(RuntimeError, match="fails its check"):
        part.ensure(lambda _: None)
    assert not (tmp_path / "thing" / cache.MARKER).exists()


@pytest.mark.parametrize(
    ("ci", "switch", "outcome"),
    [
        ("true", "off", pytest.fail.Exception),  # CI proves conformance: never a skip
        ("", "off", pytest.skip.Exception),
        ("", "", pytest.fail.Exception),
    ],
)
def test_missing_peer_fails_unless_switched_off_outside_ci(
    monkeypatch: pytest.MonkeyPatch, ci: str, switch: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("TRITON_PEERS", switch)
    with pytest.raises(outcome, match=r"peer missing: X; install it with `bash scripts/peers.sh`"):
        peers.peer_missing("X")


def test_peers_are_found_in_the_cache_and_overridable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_PEERS_CACHE", str(tmp_path))
    monkeypatch.delenv("TRITON_PEER_DIR", raising=False)
    monkeypatch.delenv("TRITON_STUB_VENV", raising=False)
    monkeypatch.delenv("TRITON_PEER_CLIENT_PYTHON", raising=False)
    assert peers.find_tritonserver() is None
    assert peers.nvidia_client_python() is None
    python = tmp_path / "python"
    python.write_text("")
    monkeypatch.setenv("TRITON_PEER_CLIENT_PYTHON", str(python))
    assert peers.nvidia_client_python() == python


def test_benchmark_peer_only_with_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``install`` makes the tests' parts; ``install --bench`` adds KServe's, and ``status``
    does not fail for the optional one."""
    made: list[str] = []
    monkeypatch.setattr(cache.Part, "ensure", lambda self, log=print: made.append(self.name))
    assert cache.main(["install"]) == 0
    assert made == [p.name for p in cache.PARTS] and "kserve" not in made
    made.clear()
    assert cache.main(["install", "--bench"]) == 0
    assert made[-1] == "kserve" and made[:-1] == [p.name for p in cache.PARTS]
    monkeypatch.setattr(cache.Part, "is_complete", lambda self: self.name != "kserve")
    assert cache.main(["status"]) == 0
    monkeypatch.setattr(cache.Part, "is_complete", lambda self: self.name != "stubvenv")
    assert cache.main(["status"]) == 1
