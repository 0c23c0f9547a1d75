"""Run the real Triton 2.51 and ``mock_server`` side by side on one model repository.

Both get the same command-line flags (``mock_server`` takes ``tritonserver``'s names, and is
also told ``--triton-compat 2.51`` to behave as the release it is compared with) and the same
copy of the repository, made by :func:`tests.peers.copy_repository_for_triton` so that the
one Triton 2.51 workaround applied to it applies to both. ``mock_server`` runs as its own
process, like Triton, so a crash or a hang in it cannot take the test process with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests import peers

ROOT = Path(__file__).resolve().parent.parent.parent
BUNDLED = ROOT / "mock_server" / "models"
CONFORMANCE_MODELS = Path(__file__).resolve().parent / "models"

#: What mock_server is told on top of the pair's flags: behave as the peer, Triton 2.51.
MOCK_COMPAT_ARGS = ("--triton-compat=2.51",)


@dataclass(frozen=True)
class Endpoint:
    """The URLs of one running server (``"127.0.0.1:PORT"``, no scheme)."""

    name: str  # "triton" or "mock"
    http: str
    grpc: str
    metrics: str
    pid: int


@dataclass(frozen=True)
class Pair:
    """Both servers, started with the same flags on the same repository."""

    triton: Endpoint
    mock: Endpoint
    repo: Path
    #: Triton's exit status once it has ended (crashed), else None.
    triton_exit: Callable[[], int | None] = lambda: None
    #: Triton's log so far.
    triton_log: Callable[[], str] = lambda: ""

    def __iter__(self) -> Iterator[Endpoint]:
        return iter((self.triton, self.mock))


@contextlib.contextmanager
def run_mock_server(
    repo: Path, extra_args: Sequence[str] = (), *, startup_timeout: float = 60.0
) -> Iterator[Endpoint]:
    """Start ``python -m mock_server`` on free loopback ports; stop it (and its group) on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="mockpeer-"))
    log_path = workdir / "mock_server.log"
    http_port, grpc_port, metrics_port = peers.free_ports(3)
    cmd = [
        sys.executable,
        "-m",
        "mock_server",
        f"--model-repository={repo}",
        "--host=127.0.0.1",
        f"--http-port={http_port}",
        f"--grpc-port={grpc_port}",
        f"--metrics-port={metrics_port}",
        *extra_args,
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc = peers.spawn_server(cmd, env, workdir, log_path)
        endpoint = Endpoint(
            "mock",
            f"127.0.0.1:{http_port}",
            f"127.0.0.1:{grpc_port}",
            f"127.0.0.1:{metrics_port}",
            proc.pid,
        )
        peers.wait_until_ready("mock_server", proc, endpoint.http, log_path, startup_timeout)
        yield endpoint
        peers.check_still_running("mock_server", proc, log_path)
    finally:
        if proc is not None:
            peers.stop_process_group(proc, 15.0)
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def run_pair(
    tmp: Path,
    args: Sequence[str] = (),
    *,
    models: Sequence[str] | None = None,
    sources: Sequence[Path] = (BUNDLED, CONFORMANCE_MODELS),
    triton_may_exit: bool = False,
) -> Iterator[Pair]:
    """Start Triton and mock_server with ``args`` on a fresh copy of the models.

    Parameters
    ----------
    tmp : Path
        An empty directory for the repository copy.
    args : sequence of str
        Flags for both servers, in ``tritonserver``'s spelling (``--model-control-mode=...``).
    models : sequence of str, optional
        Only these models (by folder name) from ``sources``; all of them by default.
    sources : sequence of Path
        Repositories whose models are merged into the copy (later ones win on a name clash).
    triton_may_exit : bool
        Triton is expected to crash on a case of this pair (its exit is then no error).
    """
    install = peers.find_tritonserver()
    if install is None:
        peers.peer_missing("the real Triton 2.51 server (nvidia-pytriton)")
    staged = tmp / "staged"
    staged.mkdir(parents=True)
    for source in sources:
        if not source.is_dir():
            continue
        for model in sorted(source.iterdir()):
            if not (model / "config.pbtxt").exists() and not any(model.glob("*/model.py")):
                continue
            if models is not None and model.name not in models:
                continue
            shutil.rmtree(staged / model.name, ignore_errors=True)
            shutil.copytree(model, staged / model.name)
    repo = peers.copy_repository_for_triton(staged, tmp / "models")
    shutil.rmtree(staged)
    # Triton's Python stub writes __pycache__ next to each model.py it imports, after Triton
    # has noted the model folder's modification time: Triton then takes the model for changed
    # and reloads it on the next plain load request (once; mock_server, which writes no
    # bytecode, keeps serving it). Compiled beforehand with the stub's Python, nothing changes.
    subprocess.run(
        [str(install.stub_venv / "bin" / "python"), "-m", "compileall", "-q", str(repo)],
        check=True,
        timeout=120,
    )
    with (
        peers.run_tritonserver(
            install, repo, list(args), startup_timeout=120, may_exit=triton_may_exit
        ) as triton,
        # mock_server behaves as the peer's release (Triton's flags otherwise, for both).
        run_mock_server(repo, [*MOCK_COMPAT_ARGS, *args]) as mock,
    ):
        yield Pair(
            Endpoint("triton", triton.http_url, triton.grpc_url, triton.metrics_url, triton.pid),
            mock,
            repo,
            triton.poll,
            triton.log,
        )
