"""mock_server.core.repository: scanning model repositories, versions, overrides."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from mock_server.core import config as cfg
from mock_server.core import config_checks as checks
from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.repository import (
    ModelSource,
    Repository,
    index_entry,
    materialize_override,
    model_fingerprint,
    select_versions,
    version_folders,
)
from tritonclient.grpc import model_config_pb2 as mc

IO = (
    'input [{name: "I" data_type: TYPE_FP32 dims: [4]}] '
    'output [{name: "O" data_type: TYPE_FP32 dims: [4]}]'
)
CONFIG = f'backend: "python" max_batch_size: 8 {IO}'
MODEL_PY = b"class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"


def write_model(
    repo: Path, name: str, config: str | None = CONFIG, versions: tuple[str, ...] = ("1",)
) -> Path:
    folder = repo / name
    folder.mkdir(parents=True)
    if config is not None:
        (folder / "config.pbtxt").write_text(config)
    for version in versions:
        (folder / version).mkdir()
        (folder / version / "model.py").write_bytes(MODEL_PY)
    return folder


def expect_error(exc: pytest.ExceptionInfo[ServerError], kind: ErrorKind, *parts: str) -> None:
    assert exc.value.kind is kind, (exc.value.kind, exc.value.message)
    for part in parts:
        assert part in exc.value.message, (part, exc.value.message)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Send tempfile's folders (file overrides) under tmp_path, to check they are removed."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# ---------------------------------------------------------------------------------------------
# scan / source
# ---------------------------------------------------------------------------------------------


def test_scan_reads_models_versions_and_configs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "add", versions=("1", "2", "10"))
    write_model(repo, "noconfig", config=None)
    write_model(repo, "named", config=f'name: "named" {CONFIG}')
    (repo / ".hidden").mkdir()
    (repo / ".hidden" / "config.pbtxt").write_text(CONFIG)
    (repo / "README.md").write_text("not a model")
    (repo / "back\\slash").mkdir()  # could never be named in a request path

    sources = Repository([repo]).scan()

    assert list(sources) == ["add", "named", "noconfig"]
    add = sources["add"]
    assert add.path == repo / "add" and add.repository == repo
    assert add.available_versions == [1, 2, 10]
    assert add.config_error is None and add.has_config_file
    assert add.config is not None and add.config.name == "add"  # filled, not completed
    assert add.config.max_batch_size == 8 and not add.config.instance_group
    assert not add.needs_auto_complete and not add.is_override
    none = sources["noconfig"]
    assert none.config is None and none.config_error is None and not none.has_config_file
    assert none.needs_auto_complete
    assert none.available_versions == [1]


def test_version_folders_follow_triton_rules(tmp_path: Path) -> None:
    folder = write_model(tmp_path, "m", versions=("0", "3", "007", "abc", "-1", "12"))
    (folder / "5").write_text("a file, not a folder")
    (folder / "99999999999999999999").mkdir()  # beyond int64
    assert version_folders(folder) == [0, 3, 12]
    assert version_folders(tmp_path / "missing") == []


def test_bad_config_fails_only_that_model(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "bad", config=f"{CONFIG}\nbogus_field: 3\n")
    write_model(repo, "good")
    sources = Repository([repo]).scan()
    bad = sources["bad"]
    assert bad.config is None
    assert bad.config_error is not None
    assert bad.config_error.kind is ErrorKind.INVALID_ARG
    assert str(repo / "bad" / "config.pbtxt") in bad.config_error.message
    assert "2:1" in bad.config_error.message
    assert bad.available_versions == [1]
    assert sources["good"].config_error is None and sources["good"].config is not None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (f'name: "other" {CONFIG}', "unexpected directory name 'm' for model 'other'"),
        (f"max_batch_size: -1 {IO}", "'max_batch_size' must be non-negative value for m"),
        (
            f"max_batch_size: 2 {IO} dynamic_batching {{ preferred_batch_size: [4] }}",
            "dynamic batching preferred size must be <= max batch size for m",
        ),
    ],
)
def test_poll_time_config_errors_are_recorded(tmp_path: Path, config: str, message: str) -> None:
    write_model(tmp_path, "m", config=config)
    source = Repository([tmp_path]).source("m")
    assert source.config is None
    assert source.config_error is not None and message in source.config_error.message


def test_load_time_problems_are_left_to_the_loader(tmp_path: Path) -> None:
    """Triton reports bad dims when a version loads, not when it polls."""
    write_model(tmp_path, "m", config='input [{name: "I" data_type: TYPE_FP32 dims: [0]}]')
    source = Repository([tmp_path]).source("m")
    assert source.config_error is None and source.config is not None
    with pytest.raises(ServerError):
        checks.validate_config(cfg.complete_config(source.config, "m"))


def test_same_name_in_two_repositories(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_model(first, "dup")
    write_model(second, "dup")
    write_model(first, "only_a")
    write_model(second, "only_b")
    repository = Repository([first, second])
    sources = repository.scan()
    dup = sources["dup"]
    assert dup.config_error is not None
    assert dup.config_error.kind is ErrorKind.INVALID_ARG
    assert "model appears in two or more repositories" in dup.config_error.message
    assert str(first) in dup.config_error.message and str(second) in dup.config_error.message
    assert sources["only_a"].config_error is None and sources["only_b"].config_error is None
    assert sources["only_b"].repository == second
    assert repository.source("dup").config_error is not None


def test_missing_repository_folder(tmp_path: Path) -> None:
    with pytest.raises(ServerError) as exc:
        Repository([tmp_path / "nope"]).scan()
    expect_error(exc, ErrorKind.INTERNAL, "failed to stat file", str(tmp_path / "nope"))


@pytest.mark.parametrize("name", ["absent", "", "..", ".", "a/b", "../repo", ".hidden", " m"])
def test_source_not_found(tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "m")
    (repo / ".hidden").mkdir()
    (repo / "a").mkdir()
    (repo / "a" / "b").mkdir()
    with pytest.raises(ServerError) as exc:
        Repository([repo]).source(name)
    expect_error(exc, ErrorKind.NOT_FOUND, "model not found in any model repository")


def test_unreadable_config_file(tmp_path: Path) -> None:
    folder = write_model(tmp_path, "m")
    (folder / "config.pbtxt").chmod(0)
    try:
        if os.access(folder / "config.pbtxt", os.R_OK):
            pytest.skip("running with permissions that ignore file modes")
        source = Repository([tmp_path]).source("m")
        assert source.config_error is not None
        assert "failed to read text proto from" in source.config_error.message
    finally:
        (folder / "config.pbtxt").chmod(0o644)


# ---------------------------------------------------------------------------------------------
# fingerprint
# ---------------------------------------------------------------------------------------------


def bump(path: Path) -> None:
    """Move a file's mtime forward so the change is visible whatever the clock resolution."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_fingerprint_is_stable_without_changes(tmp_path: Path) -> None:
    write_model(tmp_path, "m")
    repository = Repository([tmp_path])
    assert repository.source("m").fingerprint == repository.scan()["m"].fingerprint


def test_fingerprint_changes_on_edits(tmp_path: Path) -> None:
    folder = write_model(tmp_path, "m")
    last = [model_fingerprint(folder)]

    def changed() -> bool:
        """Whether the fingerprint differs from the previous call's."""
        value = model_fingerprint(folder)
        different = value != last[-1]
        last.append(value)
        return different

    bump(folder / "1" / "model.py")  # same size, new mtime
    assert changed()
    (folder / "1" / "model.py").write_bytes(MODEL_PY + b"# more\n")
    assert changed()
    (folder / "config.pbtxt").write_text(CONFIG + "\n")
    assert changed()
    (folder / "2").mkdir()  # an empty new version folder
    assert changed()
    (folder / "2" / "model.py").write_bytes(MODEL_PY)
    assert changed()
    (folder / "2" / "model.py").unlink()
    assert changed()
    assert last[-1] == last[-3]  # back to the state with an empty folder "2"
    (folder / "1" / "labels.txt").write_text("a\n")
    assert changed()
    assert not changed()


def test_fingerprint_ignores_bytecode_caches(tmp_path: Path) -> None:
    folder = write_model(tmp_path, "m")
    before = model_fingerprint(folder)
    (folder / "1" / "__pycache__").mkdir()
    (folder / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    (folder / "1" / "stale.pyc").write_bytes(b"\0")
    assert model_fingerprint(folder) == before


def test_fingerprint_survives_symlink_loops(tmp_path: Path) -> None:
    folder = write_model(tmp_path, "m")
    (folder / "1" / "loop").symlink_to(folder)
    assert model_fingerprint(folder)  # terminates


# ---------------------------------------------------------------------------------------------
# select_versions
# ---------------------------------------------------------------------------------------------


def policy(text: str, name: str = "m") -> mc.ModelConfig:
    return cfg.parse_config_text(f'name: "{name}" {text}', "test")


@pytest.mark.parametrize(
    ("text", "available", "expected"),
    [
        ("", [1, 2, 10], [10]),  # no policy: latest 1
        ("version_policy { latest { num_versions: 1 } }", [3, 1, 2], [3]),
        ("version_policy { latest { num_versions: 2 } }", [1, 2, 10], [2, 10]),
        ("version_policy { latest { num_versions: 5 } }", [1, 2], [1, 2]),
        ("version_policy { all { } }", [10, 1, 2], [1, 2, 10]),
        ("version_policy { all { } }", [0, 3], [0, 3]),
        ("version_policy { specific { versions: [1, 3] } }", [1, 2], [1]),
        ("version_policy { specific { versions: [2, 1, 2] } }", [1, 2, 3], [1, 2]),
        ("version_policy { }", [1, 2], [2]),
    ],
)
def test_select_versions(text: str, available: list[int], expected: list[int]) -> None:
    assert select_versions(policy(text), available) == expected


@pytest.mark.parametrize(
    ("text", "available"),
    [
        ("", []),
        ("version_policy { latest { num_versions: 0 } }", [1, 2]),
        ("version_policy { specific { versions: [5] } }", [1, 2]),
        ("version_policy { all { } }", []),
    ],
)
def test_select_versions_none_available(text: str, available: list[int]) -> None:
    with pytest.raises(ServerError) as exc:
        select_versions(policy(text, "spec"), available)
    expect_error(
        exc,
        ErrorKind.INVALID_ARG,
        "at least one version must be available under the version policy of model 'spec'",
    )


def test_select_versions_logs_missing_specific_versions(caplog: pytest.LogCaptureFixture) -> None:
    config = policy("version_policy { specific { versions: [1, 3] } }", "spec")
    with caplog.at_level(logging.ERROR, logger="mock_server.core.repository"):
        assert select_versions(config, [1, 2]) == [1]
    assert "version 3 is specified for model 'spec', but the version directory is not present" in (
        caplog.text
    )


# ---------------------------------------------------------------------------------------------
# overrides
# ---------------------------------------------------------------------------------------------


def test_config_only_override_uses_the_model_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = write_model(repo, "m", config="this is not a config", versions=("1", "2"))
    repository = Repository([repo])
    assert repository.source("m").config_error is not None  # broken on disk...

    source = repository.materialize_override("m", '{"backend": "python", "max_batch_size": 4}', {})

    assert source.config_error is None  # ...but the override replaces config.pbtxt
    assert source.path == folder and source.repository == repo
    assert source.config is not None and source.config.name == "m"
    assert source.config.max_batch_size == 4
    assert source.available_versions == [1, 2]
    assert source.override_config and source.is_override and source.override_dir is None
    source.cleanup()  # nothing to remove: the repository folder stays
    assert folder.is_dir()


def test_override_fingerprint_depends_on_the_config(tmp_path: Path) -> None:
    write_model(tmp_path, "m")
    repository = Repository([tmp_path])
    plain = repository.source("m").fingerprint
    one = repository.materialize_override("m", '{"max_batch_size": 1}', {}).fingerprint
    two = repository.materialize_override("m", '{"max_batch_size": 2}', {}).fingerprint
    again = repository.materialize_override("m", '{"maxBatchSize": 1}', {}).fingerprint
    assert len({plain, one, two}) == 3
    assert again == one


def test_no_override_is_the_plain_source(tmp_path: Path) -> None:
    write_model(tmp_path, "m")
    repository = Repository([tmp_path])
    source = materialize_override("m", None, {}, repository=repository)
    assert not source.is_override and source.config is not None and source.has_config_file


def test_file_override_materializes_a_temporary_folder(tmp_path: Path, private_tmp: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "m", versions=("1",))
    repository = Repository([repo])
    files: dict[str, Any] = {
        "file:2/model.py": MODEL_PY,
        "file:2/sub/data.bin": b"\x00\x01\xff",
        "3/model.py": MODEL_PY,  # the prefix may be left out
    }
    source = repository.materialize_override("m", '{"backend": "python"}', files)

    assert source.override_dir is not None and source.override_dir.parent == private_tmp
    # The temporary folder is the model folder itself, as Triton's (not named after the model).
    assert source.path == source.override_dir
    assert source.repository == source.override_dir
    assert (source.path / "2" / "model.py").read_bytes() == MODEL_PY
    assert (source.path / "2" / "sub" / "data.bin").read_bytes() == b"\x00\x01\xff"
    assert source.available_versions == [2, 3]  # nothing from the repository folder
    assert source.config is not None and source.config.name == "m"
    assert not source.has_config_file and source.is_override
    assert source.fingerprint

    root = source.override_dir
    source.cleanup()
    assert not root.exists() and source.override_dir is None
    source.cleanup()  # idempotent


def test_file_override_of_a_model_not_in_any_repository(tmp_path: Path, private_tmp: Path) -> None:
    repository = Repository([tmp_path])
    source = repository.materialize_override(
        "brand_new", '{"name": "brand_new"}', {"file:1/model.py": MODEL_PY}
    )
    assert source.available_versions == [1]
    repository.cleanup()
    assert list(private_tmp.iterdir()) == []


def test_repository_cleanup_removes_every_override(tmp_path: Path, private_tmp: Path) -> None:
    repository = Repository([tmp_path])
    first = repository.materialize_override("a", "{}", {"file:1/model.py": MODEL_PY})
    second = repository.materialize_override("a", "{}", {"file:1/model.py": MODEL_PY})
    assert first.override_dir is not None and second.override_dir is not None
    assert first.override_dir != second.override_dir  # a new folder per load request
    assert first.override_dir.exists()  # not removed behind a possibly running model
    first.cleanup()
    repository.cleanup()
    assert list(private_tmp.iterdir()) == []
    assert second.override_dir is None


POLL_FAILURE = "failed to load 'm', failed to poll from model repository"


def test_files_require_config(
    tmp_path: Path, private_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ServerError) as exc:
        Repository([tmp_path]).materialize_override("m", None, {"file:1/model.py": MODEL_PY})
    # Triton's answer; the reason is in the log, as in Triton's.
    expect_error(exc, ErrorKind.INTERNAL, POLL_FAILURE)
    assert "Load parameter 'config' must be specified for model file override" in caplog.text
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("key", "where"),
    [
        ("file:/1/model.py", "1/model.py"),  # a leading / is dropped, as in Triton 2.51
        ("file:///1/model.py", "1/model.py"),
        ("file:/etc/x/model.py", "etc/x/model.py"),
        ("file:./1/model.py", "1/model.py"),
        ("file:1//model.py", "1/model.py"),
        ("file:1/./model.py", "1/model.py"),
        ("file:1/../1/model.py", "1/model.py"),  # normalised, and still inside
        ("file:1\\model.py", "1\\model.py"),  # a backslash is part of the name
        ("file:C:\\model.py", "C:\\model.py"),
        ("1/model.py", "1/model.py"),  # the prefix may be left out
    ],
)
def test_file_paths_are_relative_to_the_model_folder(
    tmp_path: Path, private_tmp: Path, key: str, where: str
) -> None:
    source = Repository([tmp_path]).materialize_override("m", "{}", {key: MODEL_PY})
    assert (source.path / where).read_bytes() == MODEL_PY
    assert source.available_versions == ([1] if where == "1/model.py" else [])
    source.cleanup()


@pytest.mark.parametrize(
    ("key", "logged"),
    [
        ("file:../x/model.py", "must stay within model directory"),
        ("file:1/../../model.py", "must stay within model directory"),
        ("file:..", "must stay within model directory"),
        ("file:/../model.py", "must stay within model directory"),
        ("file:1/..", "Is a directory"),
        ("file:", "Is a directory"),
        ("file:.", "Is a directory"),
        ("file:1/", "Is a directory"),
        ("file:a\0b", "failed to write file parameter 'file:a"),
    ],
)
def test_file_paths_must_name_a_file_inside(
    tmp_path: Path, private_tmp: Path, caplog: pytest.LogCaptureFixture, key: str, logged: str
) -> None:
    files = {"file:1/model.py": MODEL_PY, key: b"evil"}
    with pytest.raises(ServerError) as exc:
        Repository([tmp_path]).materialize_override("m", "{}", files)
    # Triton 2.51 answers with a poll failure; the reason is in the log.
    expect_error(exc, ErrorKind.INTERNAL, POLL_FAILURE)
    assert logged in caplog.text
    assert list(private_tmp.iterdir()) == []
    assert not (tmp_path / "x").exists() and not (tmp_path / "model.py").exists()


def test_file_path_conflict(
    tmp_path: Path, private_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = {"file:1": b"a file", "file:1/model.py": MODEL_PY}
    with pytest.raises(ServerError) as exc:
        Repository([tmp_path]).materialize_override("m", "{}", files)
    expect_error(exc, ErrorKind.INTERNAL, POLL_FAILURE)
    assert "failed to write file parameter 'file:1/model.py'" in caplog.text
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("config_json", "kind", "message", "logged"),
    [
        (
            "not json",
            ErrorKind.INTERNAL,
            POLL_FAILURE,
            "invalid JSON model configuration from the load request of model 'm'",
        ),
        ('{"bogus": 1}', ErrorKind.INTERNAL, POLL_FAILURE, "bogus: Cannot find field"),
        (
            '{"name": "zzz"}',
            ErrorKind.INTERNAL,
            POLL_FAILURE,
            "unexpected directory name 'm' for model 'zzz'",
        ),
        (
            '{"max_batch_size": -2}',
            ErrorKind.INTERNAL,
            POLL_FAILURE,
            "'max_batch_size' must be non-negative value for m",
        ),
    ],
)
def test_bad_override_config(
    tmp_path: Path,
    private_tmp: Path,
    caplog: pytest.LogCaptureFixture,
    config_json: str,
    kind: ErrorKind,
    message: str,
    logged: str,
) -> None:
    write_model(tmp_path, "m")
    repository = Repository([tmp_path])
    for files in ({}, {"file:1/model.py": MODEL_PY}):
        with pytest.raises(ServerError) as exc:
            repository.materialize_override("m", config_json, files)
        expect_error(exc, kind, message)
        assert logged in caplog.text
    assert list(private_tmp.iterdir()) == []


def test_config_only_override_of_an_unknown_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ServerError) as exc:
        Repository([tmp_path]).materialize_override("ghost", "{}", {})
    expect_error(exc, ErrorKind.INTERNAL, "failed to load 'ghost', failed to poll from model")
    assert "model not found in any model repository" in caplog.text


def test_config_only_override_of_a_duplicated_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_model(tmp_path / "a", "dup")
    write_model(tmp_path / "b", "dup")
    with pytest.raises(ServerError) as exc:
        Repository([tmp_path / "a", tmp_path / "b"]).materialize_override("dup", "{}", {})
    expect_error(exc, ErrorKind.INTERNAL, "failed to load 'dup', failed to poll from model")
    assert "model appears in two or more repositories" in caplog.text


@pytest.mark.parametrize(
    "name", ["..", ".", "a/b", "../m", ".hidden", "a\\b", " m", "m ", "x" * 300]
)
def test_file_override_takes_any_model_name(tmp_path: Path, private_tmp: Path, name: str) -> None:
    # As Triton 2.51: the files go to a folder of their own, whatever the model is called.
    source = Repository([tmp_path]).materialize_override(name, "{}", {"file:1/model.py": MODEL_PY})
    assert source.config is not None and source.config.name == name
    assert source.path.parent == private_tmp and source.available_versions == [1]
    assert not (tmp_path / "m").exists()
    source.cleanup()


def test_file_override_refuses_an_empty_model_name(tmp_path: Path, private_tmp: Path) -> None:
    with pytest.raises(ServerError) as exc:
        Repository([tmp_path]).materialize_override("", "{}", {"file:1/model.py": MODEL_PY})
    expect_error(exc, ErrorKind.INTERNAL, "failed to load '', failed to poll from model")
    assert list(private_tmp.iterdir()) == []


def test_overridden_source_completes_like_a_repository_one(
    tmp_path: Path, private_tmp: Path
) -> None:
    config_json = (
        '{"backend":"python","max_batch_size":4,"input":[{"name":"I","data_type":"TYPE_FP32",'
        '"dims":[4]}],"output":[{"name":"O","data_type":"TYPE_FP32","dims":[4]}],'
        '"dynamic_batching":{}}'
    )
    source: ModelSource = Repository([tmp_path]).materialize_override(
        "m", config_json, {"file:1/model.py": MODEL_PY}
    )
    assert source.config is not None
    completed = cfg.complete_config(source.config, source.name)
    checks.validate_config(completed)
    assert list(completed.dynamic_batching.preferred_batch_size) == [4]
    assert select_versions(completed, source.available_versions) == [1]
    source.cleanup()


# ---------------------------------------------------------------------------------------------
# index entries
# ---------------------------------------------------------------------------------------------


def test_index_entries() -> None:
    assert index_entry("x") == {"name": "x"}
    assert index_entry("add_sub", 1, "UNAVAILABLE", "unloaded") == {
        "name": "add_sub",
        "version": "1",
        "state": "UNAVAILABLE",
        "reason": "unloaded",
    }
    assert index_entry("failing", 1, "READY", "") == {
        "name": "failing",
        "version": "1",
        "state": "READY",
    }
    assert index_entry("dup", None, "UNAVAILABLE", "model appears in two or more repositories") == {
        "name": "dup",
        "state": "UNAVAILABLE",
        "reason": "model appears in two or more repositories",
    }
