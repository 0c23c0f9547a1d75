"""Repository registration with name mappings, on top of the core's :class:`Repository`.

Triton's ``TRITONSERVER_ServerRegisterModelRepository`` adds a repository folder at run time,
optionally serving some of its model folders under other names (``{folder: model name}``).  The
core's :class:`~mock_server.core.repository.Repository` holds a plain list of folders; this
subclass adds the name mappings.  :class:`~mock_server.api.Server` installs it as
``CoreServer.repository`` before starting the core.

A mapped folder is served only under its mapped name, and its configuration takes that name
(as in Triton, whatever ``config.pbtxt`` says).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import ServerError
from ..core.repository import ModelSource, Repository, read_source

__all__ = ["MappedRepository"]

log = logging.getLogger("mock_server.api")


class MappedRepository(Repository):
    """A :class:`Repository` whose registered folders can be served under other names.

    Parameters
    ----------
    paths : sequence of pathlib.Path or str
        The repository folders.

    Attributes
    ----------
    mappings : dict of str to (pathlib.Path, str)
        ``{model name: (repository folder, model folder name)}``.
    """

    def __init__(self, paths: Sequence[Path | str]) -> None:
        super().__init__(paths)
        self.mappings: dict[str, tuple[Path, str]] = {}

    def _mapped_folders(self) -> set[Path]:
        return {repository / folder for repository, folder in self.mappings.values()}

    def scan(self) -> dict[str, ModelSource]:
        """:meth:`Repository.scan`, with mapped folders under their mapped names only."""
        mapped = self._mapped_folders()
        found = {name: s for name, s in super().scan().items() if s.path not in mapped}
        for name, (repository, folder) in sorted(self.mappings.items()):
            if not (repository / folder).is_dir():
                log.error(
                    "mapped path '%s' does not exist for model '%s'", repository / folder, name
                )
                continue
            source = read_source(name, repository, repository / folder, rename=True)
            if name in found:
                source.config_error = ServerError.invalid_arg(
                    f"model appears in two or more repositories ({found[name].repository}, "
                    f"{repository})"
                )
            found[name] = source
        return dict(sorted(found.items()))

    def source(self, name: str) -> ModelSource:
        """:meth:`Repository.source`, reading the mapped folder for a mapped name."""
        mapping = self.mappings.get(name)
        if mapping is not None and (mapping[0] / mapping[1]).is_dir():
            return read_source(name, mapping[0], mapping[0] / mapping[1], rename=True)
        return super().source(name)

    def _locations(self, name: str) -> list[tuple[Path, Path]]:
        mapping = self.mappings.get(name)
        if mapping is not None:
            folder = mapping[0] / mapping[1]
            return [(mapping[0], folder)] if folder.is_dir() else []
        mapped = self._mapped_folders()
        return [found for found in super()._locations(name) if found[1] not in mapped]
