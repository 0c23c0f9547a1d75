"""Start NVIDIA's real Triton server (the peer) for conformance tests.

A CPU-only Triton 2.51 ships inside the PyPI wheel ``nvidia-pytriton`` 0.7.0, and NVIDIA's
``tritonclient`` 2.73 is the client peer. ``bash scripts/peers.sh`` (``tools/peers.py``, run by
``scripts/test.sh``) installs both into the peers' cache, ``.cache/peers``.

``find_tritonserver()`` locates the server and its stub venv there (``TRITON_PEER_DIR`` and
``TRITON_STUB_VENV`` override the paths) and returns ``None`` when either is missing;
``nvidia_client_python()`` does the same for NVIDIA's client (``TRITON_PEER_CLIENT_PYTHON``).
Tests that need a peer carry the ``triton_peer`` marker or the ``nvidia_python`` fixture; a
missing peer fails them (:func:`peer_missing`), unless ``TRITON_PEERS=off`` outside CI, which
skips them with the reason in the summary.
``run_tritonserver()`` starts the server on free loopback ports, waits until it is ready and
stops it, with every process it started, on exit::

    install = find_tritonserver()
    with run_tritonserver(install, "mock_server/models") as server:
        urllib.request.urlopen(f"http://{server.http_url}/v2/health/ready")

This module has no dependency beyond the standard library (no pytest at import).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from tools import peers as _cache

__all__ = [
    "PeerServerError",
    "RunningTritonServer",
    "TritonInstall",
    "check_still_running",
    "copy_repository_for_triton",
    "find_tritonserver",
    "free_ports",
    "is_ready",
    "nvidia_client_python",
    "peer_missing",
    "read_log",
    "run_tritonserver",
    "spawn_server",
    "stop_process_group",
    "wait_until_ready",
]

PEER_SKIP_PREFIX = "peer missing:"

# Loopback traffic never goes through an HTTP proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class PeerServerError(RuntimeError):
    """The peer server did not start, or stopped unexpectedly; the message holds its log."""


@dataclass(frozen=True)
class TritonInstall:
    """Where the pieces of one Triton installation are.

    Attributes
    ----------
    tritonserver : Path
        The ``tritonserver`` executable.
    library_dir : Path
        Directory of the shared libraries it links (``LD_LIBRARY_PATH``).
    python_backend_dir : Path
        Directory holding ``libtriton_python.so`` and ``triton_python_backend_utils.py``.
    stub : Path
        ``triton_python_backend_stub`` built for the stub venv's Python version.
    stub_venv : Path
        Python venv (with ``numpy<2``) whose ``bin/`` goes first on ``PATH`` so the stub
        runs model code with it.
    """

    tritonserver: Path
    library_dir: Path
    python_backend_dir: Path
    stub: Path
    stub_venv: Path


@dataclass(frozen=True)
class RunningTritonServer:
    """A started peer server.

    Attributes
    ----------
    http_url, grpc_url, metrics_url : str
        ``"127.0.0.1:PORT"`` for each endpoint (no scheme, as the clients take it).
    pid : int
        Process id of ``tritonserver``.
    log_path : Path
        Its combined stdout/stderr; removed when the server is stopped.
    """

    http_url: str
    grpc_url: str
    metrics_url: str
    pid: int
    log_path: Path
    #: The exit status once the process has ended, else None (``Popen.poll``).
    poll: Callable[[], int | None] = lambda: None

    def log(self) -> str:
        """Return the server log so far."""
        return read_log(self.log_path)


def _venv_python_version(venv: Path) -> str | None:
    """Return ``"3.11"`` style version of a venv from its ``pyvenv.cfg``."""
    try:
        text = (venv / "pyvenv.cfg").read_text()
    except OSError:
        return None
    match = re.search(r"^\s*version(?:_info)?\s*=\s*(\d+)\.(\d+)", text, re.MULTILINE)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def find_tritonserver() -> TritonInstall | None:
    """Locate the pytriton-bundled Triton server and the stub venv.

    Returns
    -------
    TritonInstall or None
        ``None`` when the server, its Python backend, the stub for the venv's Python
        version or the venv itself is missing.
    """
    root = Path(os.environ.get("TRITON_PEER_DIR") or _cache.PYTRITON.path)
    venv = Path(os.environ.get("TRITON_STUB_VENV") or _cache.STUB_VENV.path)
    base = root / "pytriton" / "tritonserver"
    server = base / "bin" / "tritonserver"
    libs = root / "nvidia_pytriton.libs"
    backend = base / "backends" / "python"
    version = _venv_python_version(venv)
    if version is None or not (venv / "bin" / "python").exists():
        return None
    stub = base / "python_backend_stubs" / version / "triton_python_backend_stub"
    required = [server, libs, backend / "libtriton_python.so", stub]
    if not all(p.exists() for p in required):
        return None
    if not os.access(server, os.X_OK):
        return None
    return TritonInstall(
        tritonserver=server,
        library_dir=libs,
        python_backend_dir=backend,
        stub=stub,
        stub_venv=venv,
    )


def free_ports(count: int) -> list[int]:
    """Ask the kernel for ``count`` distinct free TCP ports on 127.0.0.1."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def read_log(path: Path, limit: int = 20000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "<no log>"
    return text if len(text) <= limit else "...\n" + text[-limit:]


def is_ready(http_url: str) -> bool:
    try:
        with _OPENER.open(f"http://{http_url}/v2/health/ready", timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def spawn_server(
    cmd: Sequence[str], env: dict[str, str], cwd: Path, log_path: Path
) -> subprocess.Popen[bytes]:
    """Start a server process in its own session, its output going to ``log_path``."""
    with open(log_path, "wb") as log_file:
        return subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )


def wait_until_ready(
    what: str, proc: subprocess.Popen[bytes], http_url: str, log_path: Path, timeout: float
) -> None:
    """Wait for ``GET /v2/health/ready`` to answer 200; PeerServerError (with the log) if the
    process exits first or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not is_ready(http_url):
        if proc.poll() is not None:
            raise PeerServerError(
                f"{what} exited with status {proc.returncode} during start-up; "
                f"log:\n{read_log(log_path)}"
            )
        if time.monotonic() > deadline:
            raise PeerServerError(
                f"{what} not ready after {timeout:.0f} s; log:\n{read_log(log_path)}"
            )
        time.sleep(0.05)


def check_still_running(what: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    """PeerServerError (with the log) if the server exited while a test used it."""
    if proc.poll() is not None:
        raise PeerServerError(
            f"{what} exited with status {proc.returncode} while in use; log:\n{read_log(log_path)}"
        )


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_process_group(proc: subprocess.Popen[bytes], stop_timeout: float) -> None:
    """SIGTERM a server started in its own session, SIGKILL its whole group if it lingers."""
    pgid = proc.pid  # started with start_new_session=True: pid == pgid
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            _kill_group(pgid, signal.SIGKILL)
            proc.wait(timeout=10)
    # Python backend stubs are children of the server, in its process group.
    if _group_alive(pgid):
        _kill_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        _kill_group(pgid, signal.SIGKILL)


def _pycache_dirs(repo: Path) -> set[Path]:
    return set(repo.glob("*/*/__pycache__"))


def _remove_shm(prefix: str) -> None:
    """Remove the Python backend's /dev/shm regions left by a killed server."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return
    for entry in shm.glob(f"{prefix}*"):
        with contextlib.suppress(OSError):
            entry.unlink()


_STRING_CORRID = re.compile(
    r"\{\s*name:\s*\"[^\"]*\"\s*control\s*\[\s*\{\s*kind:\s*CONTROL_SEQUENCE_CORRID\s*"
    r"data_type:\s*TYPE_STRING\s*\}\s*\]\s*\}"
)


def copy_repository_for_triton(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> Path:
    """Copy a model repository, working around a Triton 2.51 bug on the way.

    Triton 2.51's sequence batcher pads string ``CONTROL_SEQUENCE_CORRID`` tensors so that
    its own input validation rejects every request ("unexpected number of string elements
    2 for inference input 'CORRID', expecting 1"). The copy drops those control inputs;
    models that read the correlation id then use ``request.correlation_id()`` instead.

    Returns
    -------
    Path
        ``dst``.
    """
    dst_path = Path(dst)
    shutil.copytree(src, dst_path, ignore=shutil.ignore_patterns("__pycache__"))
    for config in dst_path.glob("*/config.pbtxt"):
        text = config.read_text()
        patched, count = _STRING_CORRID.subn("", text)
        if count:
            patched = re.sub(r",(\s*\])", r"\1", patched)  # a now-trailing comma
            patched = re.sub(r"\}(\s*),(\s*),", r"}\1,", patched)
            patched = re.sub(r"\[(\s*),", r"[\1", patched)
            config.write_text(patched)
    return dst_path


@contextlib.contextmanager
def run_tritonserver(
    install: TritonInstall,
    repo: str | os.PathLike[str],
    extra_args: Sequence[str] = (),
    *,
    startup_timeout: float = 60.0,
    stop_timeout: float = 15.0,
    may_exit: bool = False,
) -> Iterator[RunningTritonServer]:
    """Run ``tritonserver`` on ``repo`` for the duration of a ``with`` block.

    Parameters
    ----------
    install : TritonInstall
        From :func:`find_tritonserver`.
    repo : str or PathLike
        Model repository directory.
    extra_args : sequence of str
        More command-line options, e.g. ``("--model-control-mode=explicit",
        "--load-model=simple")``.
    startup_timeout : float
        Seconds to wait for ``/v2/health/ready`` to answer 200.
    stop_timeout : float
        Seconds to wait after SIGTERM before SIGKILL.
    may_exit : bool
        The server is expected to die in the block (a test of a request that crashes it):
        its exit is not an error then.

    Yields
    ------
    RunningTritonServer
        URLs of the HTTP, gRPC and metrics endpoints, all on 127.0.0.1.

    Raises
    ------
    PeerServerError
        When the server exits or is not ready within ``startup_timeout``; the message
        holds the server log.
    """
    repo_path = Path(repo).resolve()
    # The stub ignores PYTHONDONTWRITEBYTECODE; remove the caches it adds on exit.
    caches_before = _pycache_dirs(repo_path)
    workdir = Path(tempfile.mkdtemp(prefix="tritonpeer-"))
    shm_prefix = f"tritonpeer_{uuid.uuid4().hex[:12]}_"
    proc: subprocess.Popen[bytes] | None = None
    try:
        backend_dir = workdir / "backends" / "python"
        backend_dir.mkdir(parents=True)
        for src in (
            install.python_backend_dir / "libtriton_python.so",
            install.python_backend_dir / "triton_python_backend_utils.py",
            install.stub,
        ):
            shutil.copy2(src, backend_dir / src.name)
        http_port, grpc_port, metrics_port = free_ports(3)
        log_path = workdir / "tritonserver.log"
        cmd = [
            str(install.tritonserver),
            f"--model-repository={repo_path}",
            f"--backend-directory={workdir / 'backends'}",
            f"--backend-config=python,shm-region-prefix-name={shm_prefix}",
            "--http-address=127.0.0.1",
            f"--http-port={http_port}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={grpc_port}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={metrics_port}",
            *extra_args,
        ]
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env.pop("PYTHONHOME", None)
        env["LD_LIBRARY_PATH"] = str(install.library_dir)
        env["PATH"] = f"{install.stub_venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(install.stub_venv)
        proc = spawn_server(cmd, env, workdir, log_path)
        server = RunningTritonServer(
            http_url=f"127.0.0.1:{http_port}",
            grpc_url=f"127.0.0.1:{grpc_port}",
            metrics_url=f"127.0.0.1:{metrics_port}",
            pid=proc.pid,
            log_path=log_path,
            poll=proc.poll,
        )
        wait_until_ready("tritonserver", proc, server.http_url, log_path, startup_timeout)
        yield server
        if not may_exit:
            check_still_running("tritonserver", proc, log_path)
    finally:
        if proc is not None:
            stop_process_group(proc, stop_timeout)
        _remove_shm(shm_prefix)
        shutil.rmtree(workdir, ignore_errors=True)
        for cache in _pycache_dirs(repo_path) - caches_before:
            shutil.rmtree(cache, ignore_errors=True)


def nvidia_client_python() -> Path | None:
    """An interpreter with NVIDIA's official ``tritonclient``, for conformance tests.

    ``TRITON_PEER_CLIENT_PYTHON`` if set, else the peers' cache (``scripts/peers.sh``) when its
    install is complete; None otherwise.
    """
    explicit = os.environ.get("TRITON_PEER_CLIENT_PYTHON")
    if explicit:
        return Path(explicit) if Path(explicit).exists() else None
    part = _cache.NVIDIA_CLIENT
    return part.path / "bin" / "python" if part.is_marked() else None


def peer_missing(what: str) -> NoReturn:
    """Fail the calling test because peer ``what`` is not installed (skip with TRITON_PEERS=off).

    In CI (``CI=true``) this always fails: CI must prove conformance on every commit.
    """
    import pytest

    reason = f"{PEER_SKIP_PREFIX} {what}; install it with `bash scripts/peers.sh`"
    if os.environ.get("TRITON_PEERS") == "off" and os.environ.get("CI") != "true":
        pytest.skip(reason)
    pytest.fail(reason + " (or set TRITON_PEERS=off to skip peer tests outside CI)", False)
