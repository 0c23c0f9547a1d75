"""Several ``python -m mock_server`` processes on fixed free loopback ports: a replica can be
killed (SIGKILL) and started again on the same ports, as a pod would come back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.faults import free_port

ROOT = Path(__file__).resolve().parent.parent
#: The models the replicas serve.
MODELS = ("simple", "simple_sequence", "slow", "vllm_model")
#: Bound of every wait for a replica (start, stop), in seconds.
WAIT = 60.0
#: Whether this mock_server has tritonserver's --exit-on-error (default true: a model that
#: fails to load stops the server, where the broken replica must keep serving, not ready).
_HAS_EXIT_ON_ERROR = "--exit-on-error" in (ROOT / "mock_server" / "__main__.py").read_text()


def make_repository(folder: Path, broken: bool = False) -> Path:
    """A model repository with :data:`MODELS` (and, with ``broken``, a model that fails to
    load, which makes a server started with ``--strict-readiness true`` not ready)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in MODELS:
        if not (folder / name).exists():
            shutil.copytree(ROOT / "mock_server" / "models" / name, folder / name)
    if broken:
        bad = folder / "broken"
        (bad / "1").mkdir(parents=True, exist_ok=True)
        (bad / "config.pbtxt").write_text('name: "broken"\nbackend: "python"\n')
        (bad / "1" / "model.py").write_text("raise RuntimeError('this model never loads')\n")
    return folder


class Replica:
    """One mock_server process with its own ports (kept across restarts).

    Parameters
    ----------
    folder : Path
        Where its repository, port file and log go.
    broken : bool
        Serve a model that fails to load, with strict readiness: the replica answers every
        call but reports not ready (``/v2/health/ready``, ``grpc.health.v1``).
    """

    def __init__(self, folder: Path, broken: bool = False) -> None:
        self.folder = folder
        self.repository = make_repository(folder / "repo", broken)
        self.broken = broken
        self.http_port = free_port()
        self.grpc_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def http(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self) -> Replica:
        """Start the process and wait (at most :data:`WAIT` s) until its ports are bound."""
        assert self.process is None or self.process.poll() is not None
        self.starts += 1
        port_file = self.folder / f"ports-{self.starts}.json"
        command = [
            sys.executable,
            "-m",
            "mock_server",
            "--model-repository",
            str(self.repository),
            "--host",
            "127.0.0.1",
            "--http-port",
            str(self.http_port),
            "--grpc-port",
            str(self.grpc_port),
            "--allow-metrics",
            "false",
            "--exit-timeout-secs",
            "2",
            "--port-file",
            str(port_file),
        ]
        if self.broken:
            command += ["--strict-readiness", "true"]
            if _HAS_EXIT_ON_ERROR:  # keep serving, not ready, as tritonserver would
                command += ["--exit-on-error", "false"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        log = (self.folder / f"server-{self.starts}.log").open("wb")
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env
        )
        log.close()
        deadline = time.monotonic() + WAIT
        while not port_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                log_text = (self.folder / f"server-{self.starts}.log").read_text()
                raise AssertionError(f"replica did not start:\n{log_text}")
            time.sleep(0.05)
        while not json.loads(port_file.read_text() or "null"):
            time.sleep(0.02)  # written but not flushed yet
        return self

    def kill(self) -> None:
        """SIGKILL: the replica goes away at once, connections reset, nothing drained."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)

    def stop(self) -> None:
        """SIGTERM (drain, then exit), SIGKILL if that takes more than :data:`WAIT` s."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.kill()
