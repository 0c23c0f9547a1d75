"""Starting stub processes: a zygote that forks them, or a fresh interpreter per stub.

A stub needs numpy and this package imported before it can load a model, which takes a
Python process the better part of a second.  A server loads many models (and runs each
model's ``auto_complete_config`` in a stub of its own, as Triton does), so stubs of the
server's own interpreter are forked from a *zygote*: a process started once, on first use,
that has imported everything a stub needs and then only forks.  It is single-threaded (no
thread of it exists to be lost in a fork), lives in the server's process group, reports the
exit status of every stub it forked, and ends when the server closes its control socket
(explicitly once no stub has been running for :data:`LINGER_S`, or because the server died).

A model whose ``EXECUTION_ENV_PATH`` names another interpreter gets a fresh process of that
interpreter instead (:func:`spawn_interpreter`).

Each stub inherits one end of a socket pair, its channel to the server, and runs
:func:`mock_server.python_backend._stub.main` on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["LINGER_S", "StubHandle", "spawn_forked", "spawn_interpreter"]

log = logging.getLogger("mock_server.python_backend")

#: How long the zygote stays after its last stub ended (a reload starts new stubs soon).
LINGER_S = 2.0

#: The folder holding the ``mock_server`` and ``tritonclient`` packages.
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)

# The zygote's program: make the package importable (appended, so that an interpreter's own
# packages win), then serve fork requests on the inherited control socket.
_ZYGOTE_BOOT = (
    "import sys; sys.path.append({root!r}); "
    "from mock_server.python_backend._launcher import _zygote_main; _zygote_main({fd})"
)
_STUB_BOOT = (
    "import sys; sys.path.append({root!r}); "
    "from mock_server.python_backend._stub import run; sys.exit(run({fd}))"
)

_HEADER = struct.Struct("!I")


def _send_frame(sock: socket.socket, payload: object, fds: list[int] | None = None) -> None:
    data = pickle.dumps(payload)
    frame = _HEADER.pack(len(data)) + data
    if fds:
        socket.send_fds(sock, [frame], fds)
    else:
        sock.sendall(frame)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError("control socket closed")
        chunks += chunk
    return bytes(chunks)


def _recv_frame(sock: socket.socket, with_fds: bool = False) -> tuple[object, list[int]]:
    fds: list[int] = []
    if with_fds:
        head, fds, _flags, _addr = socket.recv_fds(sock, _HEADER.size, 4)
        if not head:
            raise EOFError("control socket closed")
        if len(head) < _HEADER.size:
            head += _recv_exact(sock, _HEADER.size - len(head))
    else:
        head = _recv_exact(sock, _HEADER.size)
    (size,) = _HEADER.unpack(head)
    return pickle.loads(_recv_exact(sock, size)), fds


# -- the zygote (runs in its own process) ---------------------------------------------------------
def _zygote_main(fd: int) -> None:
    """Import what stubs need, then fork one stub per request until the control socket closes."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when stubs end
    from . import _stub

    control = socket.socket(fileno=fd)
    while True:
        ready, _, _ = select.select([control], [], [], 0.1)
        _reap(control)
        if not ready:
            continue
        try:
            request, fds = _recv_frame(control, with_fds=True)
        except (EOFError, OSError):
            break
        assert isinstance(request, int) and len(fds) == 1
        pid = os.fork()
        if pid == 0:  # the stub
            control.close()
            code = 1
            try:
                code = _stub.run(fds[0])
            finally:
                os._exit(code)
        os.close(fds[0])
        _send_frame(control, ("spawned", request, pid))
    # The server is gone or done with stubs: those still running end on their own channel.
    _reap(control)


def _reap(control: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        with contextlib.suppress(OSError):
            _send_frame(control, ("exited", pid, os.waitstatus_to_exitcode(status)))


# -- the server's side ---------------------------------------------------------------------------
class StubHandle:
    """A started stub process, as the server sees it.

    Attributes
    ----------
    pid : int
        Its process id.
    """

    def __init__(
        self,
        pid: int,
        exit_code: Callable[[float], int | None],
        kill: Callable[[], None],
        release: Callable[[], None],
    ) -> None:
        self.pid = pid
        self._exit_code = exit_code
        self._kill = kill
        self._release = release
        self._released = False

    def exit_code(self, timeout: float = 0.0) -> int | None:
        """The exit status (negative: the signal that ended it), or None while it runs."""
        return self._exit_code(timeout)

    def kill(self) -> None:
        """End the process now (SIGKILL)."""
        self._kill()

    def release(self) -> None:
        """Note that the server is done with the process (it has exited or was killed)."""
        if not self._released:
            self._released = True
            self._release()


class _Zygote:
    """The server's handle on its zygote process."""

    def __init__(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE_BOOT.format(root=_PACKAGE_ROOT, fd=child.fileno())],
            pass_fds=[child.fileno()],
            stdin=subprocess.DEVNULL,
            env=env,
        )
        child.close()
        self._control = parent
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._counter = 0
        self._spawned: dict[int, int] = {}
        self._exited: dict[int, int] = {}
        self._live: set[int] = set()
        self._dead = False
        self._reader = threading.Thread(target=self._read, name="stub-zygote", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                message, _ = _recv_frame(self._control)
            except (EOFError, OSError):
                break
            assert isinstance(message, tuple)
            with self._cond:
                if message[0] == "spawned":
                    self._spawned[message[1]] = message[2]
                elif message[0] == "exited":
                    self._exited[message[1]] = message[2]
                self._cond.notify_all()
        with self._cond:
            self._dead = True
            self._cond.notify_all()

    def fork(self, fd: int, timeout: float = 60.0) -> int:
        with self._lock:
            self._counter += 1
            request = self._counter
            _send_frame(self._control, request, [fd])
        with self._cond:
            if (
                not self._cond.wait_for(lambda: request in self._spawned or self._dead, timeout)
                or request not in self._spawned
            ):
                raise OSError("the stub launcher (zygote) did not start the stub process")
            pid = self._spawned.pop(request)
            self._live.add(pid)
            return pid

    def exit_code(self, pid: int, timeout: float) -> int | None:
        with self._cond:
            self._cond.wait_for(lambda: pid in self._exited or self._dead, timeout)
            return self._exited.get(pid)

    def forget(self, pid: int) -> int:
        """Drop ``pid``'s bookkeeping; return how many stubs are still live."""
        with self._cond:
            self._live.discard(pid)
            self._exited.pop(pid, None)
            return len(self._live)

    @property
    def alive(self) -> bool:
        return not self._dead and self.process.poll() is None

    def close(self, timeout: float = 5.0) -> None:
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._control.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)
        self._reader.join(timeout)


_zygote_lock = threading.Lock()
_zygote: _Zygote | None = None
_linger: threading.Timer | None = None


def _get_zygote() -> _Zygote:
    global _zygote, _linger
    with _zygote_lock:
        if _linger is not None:
            _linger.cancel()
            _linger = None
        if _zygote is None or not _zygote.alive:
            if _zygote is not None:
                _zygote.close()
            _zygote = _Zygote()
        return _zygote


def _stop_idle_zygote(zygote: _Zygote) -> None:
    global _zygote, _linger
    with _zygote_lock:
        if _zygote is not zygote or zygote._live:
            return
        _zygote = None
        _linger = None
    zygote.close()


def shutdown_zygote() -> None:
    """Stop the zygote now if no stub it forked is running (used at exit and by tests)."""
    global _linger
    with _zygote_lock:
        zygote = _zygote
        if _linger is not None:
            _linger.cancel()
            _linger = None
    if zygote is not None:
        _stop_idle_zygote(zygote)


def zygote_pid() -> int | None:
    """The zygote's process id, or None when none runs."""
    with _zygote_lock:
        return _zygote.process.pid if _zygote is not None and _zygote.alive else None


def _released(zygote: _Zygote, pid: int) -> None:
    global _linger
    live = zygote.forget(pid)
    if live:
        return
    with _zygote_lock:
        if _zygote is zygote and _linger is None:
            _linger = threading.Timer(LINGER_S, _stop_idle_zygote, args=(zygote,))
            _linger.daemon = True
            _linger.start()


def spawn_forked(fd: int) -> StubHandle:
    """Fork a stub of the server's own interpreter from the zygote, on channel socket ``fd``
    (the caller closes its copy of ``fd`` afterwards)."""
    zygote = _get_zygote()
    pid = zygote.fork(fd)

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)

    return StubHandle(
        pid,
        lambda timeout: zygote.exit_code(pid, timeout),
        kill,
        lambda: _released(zygote, pid),
    )


def spawn_interpreter(python: str, fd: int, env: dict[str, str] | None = None) -> StubHandle:
    """Start a stub in a fresh ``python`` process (a model's own ``EXECUTION_ENV_PATH``), on
    channel socket ``fd`` (the caller closes its copy of ``fd`` afterwards).

    Raises
    ------
    OSError
        If the interpreter cannot be started.
    """
    process = subprocess.Popen(
        [python, "-c", _STUB_BOOT.format(root=_PACKAGE_ROOT, fd=fd)],
        pass_fds=[fd],
        stdin=subprocess.DEVNULL,
        env=env,
    )

    def exit_code(timeout: float) -> int | None:
        try:
            return process.wait(timeout) if timeout > 0 else process.poll()
        except subprocess.TimeoutExpired:
            return None

    def kill() -> None:
        with contextlib.suppress(OSError):
            process.kill()

    def release() -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)

    return StubHandle(process.pid, exit_code, kill, release)


def _at_exit() -> None:
    shutdown_zygote()


import atexit  # noqa: E402  (registered last: the zygote is stopped before interpreter teardown)

atexit.register(_at_exit)
