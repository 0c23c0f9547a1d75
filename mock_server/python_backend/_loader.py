"""Importing ``model.py`` files.

Triton runs every model instance in its own process; here all models share one interpreter, so
each import of a model file gets a module name of its own (model, version, and a load counter),
and every instance, and the auto-complete step, imports the file afresh: module-level state is
per instance, as in Triton, and a reload runs the edited code.  The model file is compiled from
its source on every import (no ``__pycache__`` is written next to it, and no stale bytecode can
be picked up).

Sibling modules (other ``.py`` files, and folders holding ``.py`` files, in the version folder
``<model>/<version>/``; standard-library names are never shadowed) can be imported in two ways:

* ``import utils`` / ``from utils import f`` at import time (module level), as in Triton.  While
  the model file runs, names of the version folder's modules and packages resolve there first;
  afterwards they are taken out of ``sys.modules`` again, so two models with a ``utils.py`` each
  never see each other's, and other code never sees either.  Such imports therefore must happen
  while the model module is imported, not later inside ``execute``.
* ``from . import utils`` at any time: the model module is a package whose ``__path__`` is the
  version folder, so relative imports resolve to ``<unique name>.utils``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import itertools
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

__all__ = ["LoadedModel", "discard", "import_model", "use_triton_import"]

_counter = itertools.count(1)
# Model imports shuffle sys.modules and sys.meta_path; one at a time.
_import_lock = threading.RLock()


@dataclass
class LoadedModel:
    """One import of a model file.

    Attributes
    ----------
    module : ModuleType
        The imported model module.
    name : str
        Its unique name in ``sys.modules``.
    siblings : list of ModuleType
        The version folder's modules it imported by absolute name (kept alive here).
    """

    module: ModuleType
    name: str
    siblings: list[ModuleType] = field(default_factory=list)


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """Compile the model file from source every time; never read or write bytecode."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


class _SiblingFinder:
    """Resolve the version folder's top-level module names to files in that folder."""

    def __init__(self, folder: Path, names: set[str]) -> None:
        self._folder = str(folder)
        self._names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._names:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self._folder])

    def invalidate_caches(self) -> None:
        return None


_RESERVED = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)


def _is_package_dir(path: Path) -> bool:
    """A folder that holds Python code (data folders must not shadow module names)."""
    try:
        return any(child.suffix == ".py" for child in path.iterdir())
    except OSError:
        return False


def _sibling_names(folder: Path, model_file: Path) -> set[str]:
    """Top-level module names the version folder provides (never standard-library names)."""
    names: set[str] = set()
    try:
        entries = list(folder.iterdir())
    except OSError:
        return names
    for entry in entries:
        if entry == model_file:
            continue
        if entry.is_file() and entry.suffix == ".py":
            name = entry.stem
        elif entry.is_dir() and entry.name != "__pycache__" and _is_package_dir(entry):
            name = entry.name
        else:
            continue
        if name.isidentifier() and name not in _RESERVED:
            names.add(name)
    return names


def _top(name: str) -> str:
    return name.partition(".")[0]


_triton_import = False


def use_triton_import() -> None:
    """Import model files as Triton's stub does from now on (in a stub process, which loads
    one model file): the version folder, then the model folder, appended to ``sys.path``, and
    the file imported as the module ``<version>.<file stem>`` (e.g. ``1.model``)."""
    global _triton_import
    _triton_import = True


def _import_as_triton(path: Path) -> LoadedModel:
    if path.suffix != ".py":
        # The stub's words for a model file it cannot import as a module.
        raise ImportError(f"Model name must end with '.py'. Model name is \"{path.name}\".")
    version_dir = path.parent
    for folder in (str(version_dir), str(version_dir.parent)):
        if folder not in sys.path:
            sys.path.append(folder)
    name = f"{version_dir.name}.{path.stem}"
    module = importlib.import_module(name)
    return LoadedModel(module, name)


def import_model(model_name: str, version: int, path: Path) -> LoadedModel:
    """Import the model file at ``path`` under a fresh module name.

    Parameters
    ----------
    model_name : str
        The model's name (part of the module name).
    version : int
        The model version.
    path : pathlib.Path
        ``<model dir>/<version>/<filename>``.

    Returns
    -------
    LoadedModel

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    Exception
        Whatever executing the model file raised.
    """
    if not path.is_file():
        raise FileNotFoundError(str(path))
    if _triton_import:
        return _import_as_triton(path)
    safe = re.sub(r"\W", "_", model_name)
    name = f"_triton_python_model_{safe}_v{version}_{next(_counter)}"
    folder = path.parent
    loader = _SourceLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(
        name, str(path), loader=loader, submodule_search_locations=[str(folder)]
    )
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    names = _sibling_names(folder, path)
    finder = _SiblingFinder(folder, names)
    with _import_lock:
        shadowed = {k: sys.modules.pop(k) for k in list(sys.modules) if _top(k) in names}
        sys.meta_path.insert(0, finder)
        sys.modules[name] = module
        try:
            loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            _drop_prefixed(name)
            raise
        finally:
            sys.meta_path.remove(finder)
            imported = {k: sys.modules.pop(k) for k in list(sys.modules) if _top(k) in names}
            sys.modules.update(shadowed)
    return LoadedModel(module, name, list(imported.values()))


def _drop_prefixed(name: str) -> None:
    prefix = name + "."
    for key in [k for k in list(sys.modules) if k.startswith(prefix)]:
        sys.modules.pop(key, None)


def discard(loaded: LoadedModel) -> None:
    """Take a model module (and its package-relative submodules) out of ``sys.modules``."""
    with _import_lock:
        if sys.modules.get(loaded.name) is loaded.module:
            del sys.modules[loaded.name]
        _drop_prefixed(loaded.name)


def model_class(loaded: LoadedModel) -> Any:
    """Return the module's ``TritonPythonModel`` attribute, or None."""
    return getattr(loaded.module, "TritonPythonModel", None)
