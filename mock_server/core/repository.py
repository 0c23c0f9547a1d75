"""Model repositories: finding models, reading their configs, versions, load-request overrides.

A repository is a folder of model folders (Triton's layout)::

    <repository>/<model>/config.pbtxt          optional for Python models
    <repository>/<model>/<version>/model.py    version folders: decimal numbers

:class:`Repository` scans one or more repository folders into :class:`ModelSource` records.
It reads and checks configurations but loads nothing: the lifecycle manager decides what to
load (with :func:`select_versions`), runs the backend's auto-complete and completes the
configuration (:func:`mock_server.core.config.complete_config`).
:func:`materialize_override` builds the source of a load request that carries an override
``config`` and/or ``file:<path>`` contents.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonclient._proto import model_config_pb2 as mc

from .config import complete_config, parse_config_text
from .config_checks import validate_config_on_poll
from .config_json import config_from_json
from .errors import ServerError

__all__ = [
    "CONFIG_FILENAME",
    "ModelSource",
    "Repository",
    "index_entry",
    "materialize_override",
    "model_fingerprint",
    "read_source",
    "select_versions",
    "version_folders",
]

log = logging.getLogger("mock_server.core.repository")

#: The configuration file of a model folder.
CONFIG_FILENAME = "config.pbtxt"

_VERSION_RE = re.compile(r"0|[1-9][0-9]*")
_MAX_VERSION = 2**63 - 1
_FILE_PREFIX = "file:"
_SKIPPED_DIRS = frozenset({"__pycache__"})


@dataclass
class ModelSource:
    """What one model folder (or load-request override) holds, as last read.

    Attributes
    ----------
    name : str
        The model name (the folder name, or the name a load request used).
    path : pathlib.Path
        The model folder: the one the backend loads version folders from.
    repository : pathlib.Path
        The repository folder holding ``path`` (the temporary root for a file override).
    config : ModelConfig or None
        The configuration as written in ``config.pbtxt`` (or the override), with ``name``
        filled in, *not completed*: the backend's auto-complete and
        :func:`~mock_server.core.config.complete_config` (which needs the GPU situation) come
        later.  ``None`` when there is no ``config.pbtxt`` (the backend auto-completes from an
        empty configuration; Triton loads such Python models), or when it could not be read.
    config_error : ServerError or None
        Why the model cannot be loaded as it stands: an unreadable or invalid
        ``config.pbtxt`` (Triton's poll-time checks), a name mismatch, or the name appearing in
        two or more repositories.  Other models are unaffected.
    available_versions : list of int
        Version folders present, ascending (decimal names without leading zeros).
    fingerprint : str
        Changes whenever a file under the model folder is added, removed or modified
        (relative paths, mtime_ns and sizes; ``__pycache__`` and ``*.pyc`` are ignored), and,
        for overrides, whenever the override configuration differs.
    has_config_file : bool
        Whether the model folder has a ``config.pbtxt``.
    override_config : bool
        Whether ``config`` came from a load request rather than ``config.pbtxt``.
    override_dir : pathlib.Path or None
        The temporary folder this source owns (file overrides); removed by :meth:`cleanup`.
    """

    name: str
    path: Path
    repository: Path
    config: mc.ModelConfig | None
    config_error: ServerError | None = None
    available_versions: list[int] = field(default_factory=list)
    fingerprint: str = ""
    has_config_file: bool = False
    override_config: bool = False
    override_dir: Path | None = None

    @property
    def is_override(self) -> bool:
        """Whether this source comes from a load request's override (config and/or files)."""
        return self.override_config or self.override_dir is not None

    @property
    def needs_auto_complete(self) -> bool:
        """True when there is no configuration yet: the backend must auto-complete one."""
        return self.config is None and self.config_error is None

    def cleanup(self) -> None:
        """Remove the temporary folder of a file override (no-op otherwise; idempotent)."""
        directory, self.override_dir = self.override_dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


class Repository:
    """One or more repository folders, scanned on demand.

    Parameters
    ----------
    paths : sequence of pathlib.Path or str
        The repository folders (Triton's ``--model-repository``, repeatable).
    """

    def __init__(self, paths: Sequence[Path | str]) -> None:
        self.paths = [Path(p) for p in paths]
        self._lock = threading.Lock()
        self._overrides: list[ModelSource] = []

    def scan(self) -> dict[str, ModelSource]:
        """Read every model folder of every repository.

        A model folder is any subdirectory of a repository folder, except hidden ones (names
        starting with ``.``; Triton 2.51 tries to load those too).  A model whose
        ``config.pbtxt`` is bad gets ``config_error`` set; the others are read normally.  A
        name found in two or more repositories gets ``config_error`` ``model appears in two
        or more repositories (...)``, as in Triton.

        Returns
        -------
        dict
            ``{name: ModelSource}``, sorted by name.

        Raises
        ------
        ServerError
            ``INTERNAL`` when a repository folder does not exist or cannot be listed (Triton
            refuses to start then).
        """
        locations: dict[str, list[tuple[Path, Path]]] = {}
        for repository in self.paths:
            for folder in _model_folders(repository):
                locations.setdefault(folder.name, []).append((repository, folder))
        return {name: _read_source(name, found) for name, found in sorted(locations.items())}

    def source(self, name: str) -> ModelSource:
        """Read one model's folder afresh.

        Parameters
        ----------
        name : str
            The model name.

        Returns
        -------
        ModelSource
            As :meth:`scan` would report it.

        Raises
        ------
        ServerError
            ``NOT_FOUND`` when no repository has a folder of that name (or the name could not
            be a folder name: empty, ``.``/``..``, containing ``/``, hidden).
        """
        found = self._locations(name)
        if not found:
            raise ServerError.not_found(
                f"failed to poll model '{name}': model not found in any model repository"
            )
        return _read_source(name, found)

    def materialize_override(
        self, name: str, config_json: str | bytes | None, files: Mapping[str, bytes]
    ) -> ModelSource:
        """Build the source of a load request with overrides (see :func:`materialize_override`).

        Parameters
        ----------
        name : str
            The model to load.
        config_json : str or bytes or None
            The request's ``config`` parameter (JSON ``ModelConfig``).
        files : mapping of str to bytes
            The request's ``file:<relative path>`` parameters, decoded to raw bytes.

        Returns
        -------
        ModelSource
            The override source; a file override owns a temporary folder (``cleanup()``).
        """
        return materialize_override(name, config_json, files, repository=self)

    def cleanup(self) -> None:
        """Remove every temporary folder still held by file overrides made here."""
        with self._lock:
            overrides, self._overrides = self._overrides, []
        for source in overrides:
            source.cleanup()

    def _locations(self, name: str) -> list[tuple[Path, Path]]:
        if not _is_folder_name(name):
            return []
        return [(repo, repo / name) for repo in self.paths if (repo / name).is_dir()]

    def _track(self, source: ModelSource) -> None:
        with self._lock:
            self._overrides = [s for s in self._overrides if s.override_dir is not None]
            self._overrides.append(source)


def _poll_failure(name: str, detail: str) -> ServerError:
    """Triton's answer to a load request whose model cannot be polled; the detail it gives
    only in its log goes to ours."""
    log.error("failed to poll model '%s': %s", name, detail)
    return ServerError.internal(f"failed to load '{name}', failed to poll from model repository")


def materialize_override(
    name: str,
    config_json: str | bytes | None,
    files: Mapping[str, bytes],
    *,
    repository: Repository,
) -> ModelSource:
    """The source of a load request that carries an override ``config`` and/or files.

    * ``config`` only: the model's normal folder (its versions and files) with the override
      configuration instead of ``config.pbtxt`` (which is then not read at all).
    * ``file:<path>`` entries: the model is loaded from a new temporary folder holding exactly
      those files (e.g. ``file:1/model.py``), nothing from the repository; ``config`` is
      required then, as in Triton.  The folder is the model folder itself (named
      ``mock_server_override_*``, not after the model, so any name works, as in Triton); the
      source owns it (``override_dir``) until :meth:`ModelSource.cleanup` or
      :meth:`Repository.cleanup`.  Replacing an override does not remove the previous folder
      by itself: the caller removes it once the new model serves (the old one may still be
      running from it).

    Paths are taken as Triton 2.51 takes them: relative to the model folder, leading ``/``
    included (``file:/1/model.py`` is ``1/model.py``), normalised (``1/../1/model.py`` is
    ``1/model.py``), backslashes being ordinary characters; a path that leaves the folder
    after normalisation, or names the folder itself, or cannot be written, fails the load.

    Unlike a repository scan, which records problems on the source, every problem here is
    raised (and any temporary folder removed first).

    Parameters
    ----------
    name : str
        The model to load.
    config_json : str or bytes or None
        The override configuration (JSON ``ModelConfig``, §3.6 encoding).
    files : mapping of str to bytes
        ``{"file:<relative path>": content}`` (the ``file:`` prefix may be omitted).
    repository : Repository
        Where the model's normal folder is looked up (config-only overrides) and which keeps
        track of temporary folders.

    Returns
    -------
    ModelSource
        With ``config`` the override configuration (name filled in), not completed.

    Raises
    ------
    ServerError
        ``INTERNAL`` ``failed to load '<m>', failed to poll from model repository`` for every
        problem, as Triton 2.51 answers (the reason is logged): an empty model name; files
        without ``config``; a ``config`` that is not a valid JSON ``ModelConfig``, names another
        model or fails Triton's poll-time checks; a config-only override of a model no
        repository has, or that two have; a file path that leaves the model folder, names it,
        or cannot be written.
    """
    if not name:
        raise _poll_failure(name, "the model name is empty")
    if config_json is None:
        if files:
            raise _poll_failure(
                name, "Load parameter 'config' must be specified for model file override"
            )
        return repository.source(name)  # nothing overridden: the model as the repository has it
    try:
        raw = config_from_json(config_json, f"the load request of model '{name}'")
        _check_config(raw, name)
    except ServerError as exc:
        raise _poll_failure(name, exc.message) from exc
    config_digest = hashlib.sha256(raw.SerializeToString(deterministic=True)).hexdigest()[:16]

    if not files:
        found = repository._locations(name)
        if not found:
            raise _poll_failure(name, "model not found in any model repository")
        if len(found) > 1:
            raise _poll_failure(name, _duplicate_error(found).message)
        repo, folder = found[0]
        return _overridden(name, folder, repo, raw, config_digest, None)

    # Triton writes the files into a fresh temporary folder that is the model folder itself.
    folder = Path(tempfile.mkdtemp(prefix="mock_server_override_")).resolve()
    try:
        for key, content in files.items():
            target = _override_target(folder, key, name)
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except (OSError, ValueError) as exc:
                detail = getattr(exc, "strerror", None) or exc
                raise _poll_failure(
                    name, f"failed to write file parameter '{_display_key(key)}': {detail}"
                ) from exc
        source = _overridden(name, folder, folder, raw, config_digest, folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    repository._track(source)
    return source


def _overridden(
    name: str,
    folder: Path,
    repository: Path,
    config: mc.ModelConfig,
    config_digest: str,
    override_dir: Path | None,
) -> ModelSource:
    """The source of a model loaded with its configuration given (``config``, whose digest
    joins the folder's fingerprint): ``folder`` in ``repository``, or the temporary
    ``override_dir`` the load's files were written to (which is both)."""
    return ModelSource(
        name=name,
        path=folder,
        repository=repository,
        config=config,
        available_versions=version_folders(folder),
        fingerprint=model_fingerprint(folder) + ":" + config_digest,
        has_config_file=(folder / CONFIG_FILENAME).is_file(),
        override_config=True,
        override_dir=override_dir,
    )


def select_versions(config: mc.ModelConfig, available: Sequence[int]) -> list[int]:
    """The versions to load under the configuration's version policy.

    * ``latest { num_versions: n }`` (the default): the ``n`` highest available versions;
    * ``all {}``: every available version;
    * ``specific { versions: [...] }``: the listed versions that are available; listed
      versions without a folder are skipped with an error in the log, as Triton does
      (``version 3 is specified for model 'm', but the version directory is not present``).

    Parameters
    ----------
    config : ModelConfig
        The model's configuration (its ``name`` is used in messages).
    available : sequence of int
        The version folders present.

    Returns
    -------
    list of int
        The versions to load, ascending; never empty.

    Raises
    ------
    ServerError
        ``INVALID_ARG`` ``at least one version must be available under the version policy of
        model 'm'`` when the selection is empty (no version folders, ``num_versions: 0``,
        none of the specific versions present), as Triton fails such a load.
    """
    present = sorted(set(available))
    policy = config.version_policy
    choice = policy.WhichOneof("policy_choice") if config.HasField("version_policy") else None
    chosen: list[int]
    if choice == "all":
        chosen = present
    elif choice == "specific":
        wanted = set()
        for version in policy.specific.versions:
            if version in present:
                wanted.add(int(version))
            else:
                log.error(
                    "version %d is specified for model '%s', but the version directory is not "
                    "present",
                    version,
                    config.name,
                )
        chosen = sorted(wanted)
    else:
        count = policy.latest.num_versions if choice == "latest" else 1
        chosen = present[-count:] if count > 0 else []
    if not chosen:
        raise ServerError.invalid_arg(
            f"at least one version must be available under the version policy of model "
            f"'{config.name}'"
        )
    return chosen


def index_entry(
    name: str, version: int | None = None, state: str | None = None, reason: str = ""
) -> dict[str, Any]:
    """One entry of the repository index (§3.12).

    Parameters
    ----------
    name : str
        The model name.
    version : int, optional
        The version, when one is known (reported as a string).
    state : str, optional
        ``UNKNOWN``, ``READY``, ``UNAVAILABLE``, ``LOADING`` or ``UNLOADING``; omitted when
        the model was never considered for loading.
    reason : str
        Why the version is in that state; omitted when empty.

    Returns
    -------
    dict
        ``{"name", "version"?, "state"?, "reason"?}``.
    """
    entry: dict[str, Any] = {"name": name}
    if version is not None:
        entry["version"] = str(version)
    if state:
        entry["state"] = state
    if reason:
        entry["reason"] = reason
    return entry


def version_folders(folder: Path) -> list[int]:
    """The version folders of a model folder, ascending.

    A version folder is a subdirectory named by a decimal number without leading zeros
    (``0`` is valid; ``007`` and ``abc`` are ignored, as in Triton 2.51).

    Parameters
    ----------
    folder : pathlib.Path
        The model folder.

    Returns
    -------
    list of int
        The versions (empty when the folder cannot be listed).
    """
    versions: list[int] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return versions
    for entry in entries:
        if not _VERSION_RE.fullmatch(entry.name):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        version = int(entry.name)
        if is_dir and version <= _MAX_VERSION:
            versions.append(version)
    return sorted(versions)


def model_fingerprint(folder: Path) -> str:
    """A digest of every file under ``folder``: relative path, mtime_ns and size.

    Symbolic links are followed (once per real directory).  ``__pycache__`` folders and
    ``*.pyc`` files are ignored, so importing a model does not change its fingerprint.

    Parameters
    ----------
    folder : pathlib.Path
        The model folder.

    Returns
    -------
    str
        A hex digest; equal digests mean nothing changed.
    """
    digest = hashlib.sha256()
    seen: set[str] = set()
    for root, dirs, filenames in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        relative_root = os.path.relpath(root, folder)
        for directory in dirs:
            digest.update(f"d\0{os.path.join(relative_root, directory)}\n".encode(errors="replace"))
        for filename in sorted(filenames):
            if filename.endswith(".pyc"):
                continue
            try:
                stat = os.stat(os.path.join(root, filename))
            except OSError:
                continue
            entry = (
                f"f\0{os.path.join(relative_root, filename)}\0{stat.st_mtime_ns}\0{stat.st_size}"
            )
            digest.update(f"{entry}\n".encode(errors="replace"))
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# Internals
# ---------------------------------------------------------------------------------------------


def _is_folder_name(name: str) -> bool:
    """Whether ``name`` can be a model folder directly inside a repository folder.

    Hidden names (``.``, ``..``, ``.x``) and names with path separators never are.
    """
    return bool(name) and not (name.startswith(".") or "/" in name or "\\" in name or "\0" in name)


def _model_folders(repository: Path) -> list[Path]:
    try:
        entries = list(os.scandir(repository))
    except OSError as exc:
        raise ServerError.internal(
            f"failed to stat file {repository}: {exc.strerror or exc}"
        ) from exc
    folders = []
    for entry in entries:
        if not _is_folder_name(entry.name):
            continue
        try:
            if entry.is_dir():
                folders.append(Path(entry.path))
        except OSError:
            continue
    return folders


def _duplicate_error(found: list[tuple[Path, Path]]) -> ServerError:
    where = ", ".join(str(repo) for repo, _ in found)
    return ServerError.invalid_arg(f"model appears in two or more repositories ({where})")


def _check_config(raw: mc.ModelConfig, name: str) -> None:
    """Fill ``raw.name`` and run Triton's poll-time checks on a completed copy."""
    completed = complete_config(raw, name)
    raw.name = completed.name
    validate_config_on_poll(completed)


def _read_source(name: str, found: list[tuple[Path, Path]]) -> ModelSource:
    if len(found) > 1:
        source = _folder_source(name, *found[0])
        log.error("failed to poll model '%s': not unique across all model repositories", name)
        source.config_error = _duplicate_error(found)
        return source
    return read_source(name, *found[0])


def _folder_source(name: str, repository: Path, folder: Path) -> ModelSource:
    return ModelSource(
        name=name,
        path=folder,
        repository=repository,
        config=None,
        available_versions=version_folders(folder),
        fingerprint=model_fingerprint(folder),
    )


def read_source(name: str, repository: Path, folder: Path, *, rename: bool = False) -> ModelSource:
    """Read one model folder as the model ``name``.

    Parameters
    ----------
    name : str
        The model's name.
    repository : pathlib.Path
        The repository folder holding it.
    folder : pathlib.Path
        The model folder.
    rename : bool, default False
        Give the configuration the name ``name``, whatever its own (a folder registered under
        another name, as Triton does for a mapped folder).

    Returns
    -------
    ModelSource
        With ``config_error`` set when ``config.pbtxt`` cannot be read or fails the poll-time
        checks.
    """
    source = _folder_source(name, repository, folder)
    config_file = folder / CONFIG_FILENAME
    source.has_config_file = config_file.is_file()
    if not source.has_config_file:
        return source
    try:
        raw = parse_config_text(config_file.read_bytes(), str(config_file))
        if rename:
            raw.name = name
        _check_config(raw, name)
    except OSError as exc:
        source.config_error = ServerError.invalid_arg(
            f"failed to read text proto from {config_file}: {exc.strerror or exc}"
        )
    except ServerError as exc:
        log.error("Poll failed for model directory '%s': %s", name, exc.message)
        source.config_error = exc
    else:
        source.config = raw
    return source


def _display_key(key: str) -> str:
    return key if key.startswith(_FILE_PREFIX) else _FILE_PREFIX + key


def _override_target(folder: Path, key: str, name: str) -> Path:
    """Where the ``file:<path>`` entry ``key`` is written in the model folder ``folder``.

    As Triton 2.51: the path is joined to the folder with its leading ``/`` dropped and then
    normalised; what leaves the folder is refused, and so is the folder itself (there is no
    file to write there), both as poll failures.
    """
    text = key[len(_FILE_PREFIX) :] if key.startswith(_FILE_PREFIX) else key
    joined = os.path.normpath(os.path.join(folder, text.lstrip("/")))
    if os.path.commonpath([str(folder), joined]) != str(folder):
        raise _poll_failure(
            name,
            f"Invalid file parameter '{_display_key(key)}' with normalized path '{joined}' must "
            "stay within model directory.",
        )
    if joined == str(folder) or text.endswith("/"):
        raise _poll_failure(
            name,
            f"failed to open binary file for write {joined}: Is a directory",
        )
    return Path(joined)
