"""Private virtual environments for development tooling (protoc, NVIDIA's peer package, ...).

Not part of the installed distribution: used by ``proto/generate.py``,
``benchmarks/bench_codec.py`` and the tests that exercise dependency ranges.
"""

from __future__ import annotations

import subprocess
import venv
from collections.abc import Sequence
from pathlib import Path


def ensure_venv(path: Path, requirements: Sequence[str], constraints: Path | None = None) -> Path:
    """Create ``path`` as a venv holding ``requirements`` unless it already does.

    The requirement list is recorded in the venv, so changing it rebuilds the environment.

    Parameters
    ----------
    path : pathlib.Path
        Where the environment lives.
    requirements : sequence of str
        Arguments for ``pip install`` (requirement specifiers or local paths with extras).
    constraints : pathlib.Path, optional
        A pip constraints file applied to the install.

    Returns
    -------
    pathlib.Path
        The environment's Python interpreter.
    """
    python = path / "bin" / "python"
    marker = path / "requirements.installed"
    wanted = "\n".join([*requirements, f"constraints={constraints}"])
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if constraints is not None:
        command += ["-c", str(constraints)]
    subprocess.run([*command, *requirements], check=True, timeout=1200)
    marker.write_text(wanted)
    return python
