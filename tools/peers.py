"""Install and locate the conformance peers: NVIDIA's ``tritonclient`` and a real Triton server.

Both live in one cache, ``.cache/peers`` in the checkout (git-ignored) unless ``TRITON_PEERS_CACHE``
names another directory:

``nvidia-client/``
    A venv holding :data:`NVIDIA_CLIENT_REQUIREMENT` (NVIDIA's package never goes into the
    project's own environment: both install the import package ``tritonclient``).
``pytriton/``
    ``pip install --no-deps --target`` of :data:`PYTRITON_REQUIREMENT`: the wheel carries a
    CPU-only ``tritonserver`` 2.51 with its Python backend. Its dependencies are left out on
    purpose: they would install NVIDIA's ``tritonclient`` there too.
``stubvenv/``
    A venv with ``numpy<2`` whose ``bin/`` goes first on ``PATH`` of the server, so the Python
    backend stub runs model code with it (with numpy 2, Triton 2.51's stub fails every output).
``kserve/``
    A venv holding :data:`KSERVE_REQUIREMENT`, KServe's Python ``ModelServer``: the third
    server of ``benchmarks/bench_server.py``. Only ``install --bench`` (or the benchmark itself)
    makes it; the test suite does not need it.

Each part gets a ``peer.installed`` marker naming what it holds, written once the part is
installed and checked; a part whose marker is missing or names another requirement, whose files
are gone or whose check fails (an import, the server's exec bit) is made again from scratch.
``python tools/peers.py install`` (what ``scripts/peers.sh`` runs) brings every part up to date;
``python tools/peers.py status`` only looks.

Standard library only: the installer runs before the project's venv exists.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NVIDIA_CLIENT_REQUIREMENT = "tritonclient[all]==2.73.0"
PYTRITON_REQUIREMENT = "nvidia-pytriton==0.7.0"
STUB_REQUIREMENT = "numpy<2"
KSERVE_REQUIREMENT = "kserve==0.21.0"
MARKER = "peer.installed"
PIP_TIMEOUT_S = 1200


def cache_dir() -> Path:
    """The peers' cache directory (``TRITON_PEERS_CACHE`` or ``.cache/peers`` in the checkout)."""
    explicit = os.environ.get("TRITON_PEERS_CACHE")
    return Path(explicit) if explicit else ROOT / ".cache" / "peers"


@dataclass(frozen=True)
class Part:
    """One installed peer part: where it goes, what it holds, what proves it complete."""

    name: str
    requirement: str
    build: Callable[[Path, str], None]
    required_files: Callable[[Path], Sequence[Path]]
    check: Callable[[Path], bool] | None = None

    @property
    def path(self) -> Path:
        return cache_dir() / self.name

    def is_marked(self) -> bool:
        """True when the marker names this requirement and every file it needs is there.

        Cheap (no process started); the marker is only written after :attr:`check` passed.
        """
        try:
            if (self.path / MARKER).read_text() != self.requirement:
                return False
        except OSError:
            return False
        return all(p.exists() for p in self.required_files(self.path))

    def is_complete(self) -> bool:
        """:meth:`is_marked`, and the part's check (an import, an exec bit) passes now."""
        return self.is_marked() and (self.check is None or self.check(self.path))

    def ensure(self, log: Callable[[str], None] = print) -> Path:
        """Make this part unless it is already complete; return its directory.

        The marker is written last, so an install that was interrupted or failed is found
        incomplete next time and made again from scratch.
        """
        if self.is_complete():
            log(f"peers: {self.name} ({self.requirement}) present in {self.path}")
            return self.path
        log(f"peers: installing {self.name} ({self.requirement}) into {self.path}")
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.build(self.path, self.requirement)
        missing = [p for p in self.required_files(self.path) if not p.exists()]
        if missing:
            raise RuntimeError(f"peers: {self.name} installed, but {missing[0]} is missing")
        if self.check is not None and not self.check(self.path):
            raise RuntimeError(f"peers: {self.name} installed in {self.path} fails its check")
        (self.path / MARKER).write_text(self.requirement)
        return self.path


def _pip(python: Path | str, *args: str) -> None:
    command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*command, *args], check=True, timeout=PIP_TIMEOUT_S)


def _make_venv(path: Path, requirement: str) -> None:
    venv.EnvBuilder(with_pip=True, clear=True, symlinks=True).create(path)
    _pip(_venv_python(path), requirement)


def _venv_python(path: Path) -> Path:
    return path / "bin" / "python"


def _imports(path: Path, code: str) -> bool:
    try:
        done = subprocess.run(
            [str(_venv_python(path)), "-c", code],
            capture_output=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")},
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _build_pytriton(path: Path, requirement: str) -> None:
    path.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(
        [*command, "--no-deps", "--target", str(path), requirement],
        check=True,
        timeout=PIP_TIMEOUT_S,
    )


def _tritonserver_dir(path: Path) -> Path:
    return path / "pytriton" / "tritonserver"


def _pytriton_files(path: Path) -> list[Path]:
    base = _tritonserver_dir(path)
    backend = base / "backends" / "python"
    return [
        base / "bin" / "tritonserver",
        path / "nvidia_pytriton.libs",
        backend / "libtriton_python.so",
        backend / "triton_python_backend_utils.py",
        base / "python_backend_stubs",
    ]


NVIDIA_CLIENT = Part(
    name="nvidia-client",
    requirement=NVIDIA_CLIENT_REQUIREMENT,
    build=_make_venv,
    required_files=lambda p: [_venv_python(p)],
    check=lambda p: _imports(
        p,
        "import tritonclient.grpc, tritonclient.http, tritonclient.grpc.aio, "
        "tritonclient.http.aio, tritonclient.utils.shared_memory; "
        "from importlib.metadata import version; assert version('tritonclient') == '2.73.0'",
    ),
)
PYTRITON = Part(
    name="pytriton",
    requirement=PYTRITON_REQUIREMENT,
    build=_build_pytriton,
    required_files=_pytriton_files,
    check=lambda p: os.access(_tritonserver_dir(p) / "bin" / "tritonserver", os.X_OK),
)
STUB_VENV = Part(
    name="stubvenv",
    requirement=STUB_REQUIREMENT,
    build=_make_venv,
    required_files=lambda p: [_venv_python(p)],
    check=lambda p: _imports(p, "import numpy; assert int(numpy.__version__.split('.')[0]) < 2"),
)
KSERVE = Part(
    name="kserve",
    requirement=KSERVE_REQUIREMENT,
    build=_make_venv,
    required_files=lambda p: [_venv_python(p)],
    check=lambda p: _imports(p, "import kserve; kserve.ModelServer"),
)
PARTS = (NVIDIA_CLIENT, PYTRITON, STUB_VENV)
#: The benchmarks' extra peer: not needed by the tests, so not installed with them.
BENCH_PARTS = (KSERVE,)


def install(log: Callable[[str], None] = print, bench: bool = False) -> None:
    """Bring every peer part in the cache up to date (reused when complete); with ``bench``,
    the benchmarks' part too."""
    for part in PARTS + (BENCH_PARTS if bench else ()):
        part.ensure(log)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="install or repair every peer in the cache")
    inst.add_argument(
        "--bench", action="store_true", help="also the benchmarks' peer (KServe's ModelServer)"
    )
    sub.add_parser("status", help="say which peers are installed")
    args = parser.parse_args(argv)
    if args.command == "install":
        install(bench=args.bench)
        return 0
    missing = 0
    for part in PARTS + BENCH_PARTS:
        state = "ok" if part.is_complete() else "missing or incomplete"
        print(f"{part.name:14} {part.requirement:28} {state}  ({part.path})")
        # The benchmarks' part is optional: its absence is reported, not a failure.
        missing += state != "ok" and part in PARTS
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
