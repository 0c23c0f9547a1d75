"""The channel between the server and a model's stub process, and how tensors cross it.

A stub process (see :mod:`mock_server.python_backend._stub`) talks to the server over one
connected Unix stream socket.  Every message is a pickled tuple whose first item names it,
framed by :class:`multiprocessing.connection.Connection` (a length, then the bytes).  Both
sides may send from several threads; :meth:`Channel.send` serialises whole messages.

Tensor data travels in the message itself while it is small; arrays of
:data:`SHM_THRESHOLD` bytes or more are copied once into a POSIX shared-memory object
(:mod:`shm.posix`) that the receiver maps and unlinks at once, so that the data is never
pickled, and nothing is left in ``/dev/shm`` once the receiver has the mapping.  Each object's
name starts with the stub's prefix, so whatever a dead process left behind is found and
removed by :func:`sweep`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shm import posix

from ..core.errors import ErrorKind, ServerError
from ..core.types import InferRequest, InferResponse, RequestedOutput, Tensor

__all__ = [
    "SHM_THRESHOLD",
    "Channel",
    "Pump",
    "ShmArray",
    "ShmNamer",
    "discard_packed",
    "discard_response",
    "pack_array",
    "pack_request",
    "pack_response",
    "pack_tensor",
    "sweep",
    "unpack_array",
    "unpack_request",
    "unpack_response",
    "unpack_tensor",
]

#: Arrays of at least this many bytes go through shared memory instead of the message.
SHM_THRESHOLD = 64 * 1024
#: dtype kinds whose ``dtype.str`` names them fully (bool, integers, floats).
_PLAIN_KINDS = frozenset("biuf")

_DEV_SHM = Path("/dev/shm")


class Channel:
    """A message channel over a connected socket (either end).

    Parameters
    ----------
    fd : int
        The socket's file descriptor; the channel owns it from now on.
    """

    def __init__(self, fd: int) -> None:
        self._conn = Connection(fd)
        self._send_lock = threading.Lock()
        self._closed = False

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message.

        Raises
        ------
        OSError
            When the other end is gone (``BrokenPipeError``, ``ConnectionResetError``) or the
            channel was closed.
        """
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with self._send_lock:
            if self._closed:
                raise BrokenPipeError("the channel is closed")
            self._conn.send_bytes(data)

    def recv(self) -> tuple[Any, ...]:
        """Receive one message (blocking).

        Raises
        ------
        EOFError
            When the other end closed the channel or died.
        """
        try:
            data = self._conn.recv_bytes()
        except OSError as exc:  # reset by a dying peer, or closed under us
            raise EOFError(str(exc)) from exc
        message = pickle.loads(data)
        assert isinstance(message, tuple)
        return message

    def fileno(self) -> int:
        """The socket's file descriptor (for ``select``)."""
        return self._conn.fileno()

    def close(self) -> None:
        """Close the socket; a blocked :meth:`recv` on another thread ends with EOFError."""
        with self._send_lock:
            self._closed = True
        # shutdown() wakes a reader blocked in recv() on another thread, close() alone does not.
        with contextlib.suppress(OSError):
            sock = socket.socket(fileno=os.dup(self._conn.fileno()))
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.close()
        with contextlib.suppress(OSError):
            self._conn.close()


class Pump:
    """Reads a channel's messages and dispatches them, on whichever thread is waiting for one.

    A thread that waits for something the other side will send (the end of an execution, the
    reply to a call) reads and dispatches messages itself until it has it
    (:meth:`pump_until`), instead of sleeping until a reader thread wakes it: on a busy
    machine, waking another thread costs more than the message's whole round trip.  While no
    thread waits, a background thread reads (decoupled responses, log records, calls made by
    model threads): it sleeps in ``epoll`` on the channel, which is taken out of its epoll set
    while a thread pumps, so that it is not woken by what that thread reads.  Only one thread
    reads at a time, and it dispatches what it read before anyone reads the next message, so
    messages are dispatched in the order they were sent.

    Parameters
    ----------
    channel : Channel
        The channel to read.
    dispatch : callable
        Called with every message, on the reading thread; must not block.
    on_eof : callable
        Called once, on the reading thread, when the channel is closed or the other side died.
    name : str
        The background thread's name.
    """

    def __init__(
        self,
        channel: Channel,
        dispatch: Callable[[tuple[Any, ...]], None],
        on_eof: Callable[[], None],
        name: str,
    ) -> None:
        self._channel = channel
        self._fd = channel.fileno()
        self._dispatch = dispatch
        self._on_eof = on_eof
        self._lock = threading.Lock()
        self._waiters = threading.Condition(self._lock)  # threads in pump_until
        self._reading = False
        self._interest = 0
        self.dead = False
        self._epoll = select.epoll()
        self._watched = False
        self._watch(True)
        self._background = threading.Thread(target=self._run, name=name, daemon=True)

    def _watch(self, on: bool) -> None:
        """Put the channel in (or take it out of) the background thread's epoll set; call
        with the lock (or before the thread starts)."""
        if on == self._watched:
            return
        try:
            if on:
                self._epoll.register(self._fd, select.EPOLLIN)
            else:
                self._epoll.unregister(self._fd)
        except (OSError, ValueError):  # the channel is closed: the reader reports it
            return
        self._watched = on

    def start(self) -> None:
        """Start the background reader."""
        self._background.start()

    def join(self, timeout: float) -> None:
        """Wait for the background reader to end (after the channel closed)."""
        if self._background.is_alive() and self._background is not threading.current_thread():
            self._background.join(timeout)

    def _readable(self, timeout: float | None) -> bool:
        try:
            ready, _, _ = select.select([self._fd], [], [], timeout)
        except (OSError, ValueError):  # closed under us: recv() reports it
            return True
        return bool(ready)

    def _release(self) -> None:
        """Give the read role back; call with the lock."""
        self._reading = False
        self._waiters.notify_all()

    def _read_one(self) -> None:
        """Read and dispatch one message; call holding the read role, which it gives back."""
        try:
            try:
                message = self._channel.recv()
            except EOFError:
                with self._lock:
                    self.dead = True
                    self._watch(True)  # at EOF it is readable: the background thread ends
                self._on_eof()
                return
            self._dispatch(message)
        finally:
            with self._lock:
                self._release()

    @contextlib.contextmanager
    def expecting(self) -> Iterator[None]:
        """Keep the background thread off the channel for the block: enter it *before*
        sending a message whose answer this thread will pump for, so that an answer quicker
        than this thread cannot wake the background thread instead."""
        self.hold()
        try:
            yield
        finally:
            self.unhold()

    def hold(self) -> None:
        """Keep the background thread off the channel until :meth:`unhold` (holds nest):
        a thread pumping for an answer, or another poller (an asyncio loop's reader, see
        :meth:`read_ready`), reads it meanwhile."""
        with self._lock:
            self._interest += 1
            self._watch(False)

    def unhold(self) -> None:
        """End a :meth:`hold`."""
        with self._lock:
            self._interest -= 1
            if not self._interest:
                self._watch(True)

    def read_ready(self) -> None:
        """Read and dispatch the messages that have arrived, without waiting for more: for a
        poller that saw the channel readable.  Does nothing while another thread reads."""
        while True:
            with self._lock:
                if self.dead or self._reading:
                    return
                self._reading = True
            if not self._readable(0):
                with self._lock:
                    self._release()
                return
            self._read_one()

    def pump_until(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Read and dispatch messages on this thread until ``done()`` is true.

        Returns
        -------
        bool
            ``done()``: False when the channel died or ``timeout`` seconds passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self.hold()
        try:
            while True:
                with self._lock:
                    while True:
                        if done():
                            return True
                        if self.dead:
                            return False
                        remaining = None if deadline is None else deadline - time.monotonic()
                        if remaining is not None and remaining <= 0:
                            return False
                        if not self._reading:
                            self._reading = True
                            break
                        self._waiters.wait(remaining)
                if remaining is not None and not self._readable(remaining):
                    with self._lock:
                        self._release()
                    continue
                self._read_one()
        finally:
            self.unhold()

    def _run(self) -> None:
        try:
            while True:
                try:
                    self._epoll.poll()
                except InterruptedError:
                    continue
                except (OSError, ValueError):
                    return
                with self._lock:
                    if self.dead:
                        return
                    if self._interest or self._reading:
                        continue  # a waiting thread reads it (the channel is out of the set)
                    self._reading = True
                if not self._readable(0):  # taken meanwhile: nothing to read after all
                    with self._lock:
                        self._release()
                    continue
                self._read_one()
        finally:
            self._epoll.close()


@dataclass(frozen=True)
class ShmArray:
    """A large array waiting in a shared-memory object (see :func:`pack_array`)."""

    key: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    nbytes: int


class ShmNamer:
    """Makes the names of one side's shared-memory objects: ``<prefix><n>``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._counter = itertools.count()

    def next(self) -> str:
        return f"/{self.prefix}{next(self._counter)}"


def pack_array(array: npt.NDArray[Any], namer: ShmNamer) -> Any:
    """What to put in a message for ``array``: its bytes when small (an object array as
    itself, which only pickling can carry), else a :class:`ShmArray` holding a copy of its
    data.  Bytes with the dtype's code and the shape pickle several times faster than the
    array object."""
    if array.dtype.hasobject:
        return array
    if array.nbytes < SHM_THRESHOLD:
        dtype = array.dtype
        code = dtype.str if dtype.kind in _PLAIN_KINDS else dtype
        # A bytearray unpickles as one: the receiver's array is writable, as a model may want.
        flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        return (code, array.shape, bytearray(flat.data))
    key = namer.next()
    region = posix.create(key, array.nbytes, create_only=True)
    try:
        target: npt.NDArray[Any] = np.frombuffer(region.buffer, dtype=array.dtype).reshape(
            array.shape
        )
        np.copyto(target, array, casting="no")
        del target
    except BaseException:
        region.close()
        posix.unlink(key)
        raise
    region.close()
    return ShmArray(key, array.dtype, tuple(array.shape), int(array.nbytes))


def unpack_array(packed: Any) -> npt.NDArray[Any]:
    """The array of :func:`pack_array`'s result; a shared-memory object is mapped (the array
    is a view of the mapping, which lives as long as the array) and unlinked."""
    if isinstance(packed, tuple):
        code, shape, data = packed
        small: npt.NDArray[Any] = np.frombuffer(data, dtype=code).reshape(shape)
        return small
    if not isinstance(packed, ShmArray):
        objects: npt.NDArray[Any] = packed  # an object array, pickled as itself
        return objects
    try:
        region = posix.open_region(packed.key, 0, packed.nbytes)
    finally:
        posix.unlink(packed.key)
    array: npt.NDArray[Any] = np.frombuffer(region.buffer, dtype=packed.dtype).reshape(packed.shape)
    # The view keeps the mapping alive; closing the region object only drops its own handle.
    region.close()
    return array


def discard_packed(packed: Any) -> None:
    """Remove the shared-memory object of a packed array that will never be unpacked."""
    if isinstance(packed, ShmArray):
        posix.unlink(packed.key)


def sweep(prefix: str) -> int:
    """Remove every shared-memory object whose name starts with ``prefix``; return how many."""
    removed = 0
    try:
        entries = list(_DEV_SHM.glob(f"{prefix}*"))
    except OSError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            entry.unlink()
            removed += 1
    return removed


# -- core types across the channel --------------------------------------------------------------
def pack_tensor(tensor: Tensor, namer: ShmNamer) -> tuple[Any, ...]:
    """A core tensor as message data (see :func:`pack_array`)."""
    return (
        tensor.name,
        tensor.datatype,
        tuple(tensor.shape),
        pack_array(np.asarray(tensor.data), namer),
        dict(tensor.parameters),
    )


def unpack_tensor(packed: tuple[Any, ...]) -> Tensor:
    """The core tensor of :func:`pack_tensor`'s result."""
    name, datatype, shape, data, parameters = packed
    return Tensor(name, datatype, tuple(shape), unpack_array(data), parameters)


def pack_request(request: InferRequest, namer: ShmNamer) -> tuple[Any, ...]:
    """A core request (everything but its callback and cancellation flag) as message data."""
    return (
        request.model_name,
        request.model_version,
        request.id,
        [pack_tensor(t, namer) for t in request.inputs],
        [(o.name, dict(o.parameters)) for o in request.outputs],
        dict(request.parameters),
        request.correlation_id,
        request.sequence_start,
        request.sequence_end,
        request.priority,
        request.timeout_us,
    )


def unpack_request(packed: tuple[Any, ...]) -> InferRequest:
    """The core request of :func:`pack_request`'s result (no callback yet)."""
    (model, version, rid, inputs, outputs, parameters, corrid, start, end, priority, timeout) = (
        packed
    )
    return InferRequest(
        model_name=model,
        model_version=version,
        id=rid,
        inputs=[unpack_tensor(t) for t in inputs],
        outputs=[RequestedOutput(name, params) for name, params in outputs],
        parameters=parameters,
        correlation_id=corrid,
        sequence_start=start,
        sequence_end=end,
        priority=priority,
        timeout_us=timeout,
    )


def pack_response(response: InferResponse, namer: ShmNamer) -> tuple[Any, ...]:
    """A core response as message data."""
    error = response.error
    return (
        response.model_name,
        response.model_version,
        response.id,
        [pack_tensor(t, namer) for t in response.outputs],
        dict(response.parameters),
        None if error is None else (error.kind.name, error.message),
        response.final,
        response.model_error,
    )


def unpack_response(packed: tuple[Any, ...]) -> InferResponse:
    """The core response of :func:`pack_response`'s result."""
    model, version, rid, outputs, parameters, error, final, model_error = packed
    return InferResponse(
        model,
        version,
        rid,
        outputs=[unpack_tensor(t) for t in outputs],
        parameters=parameters,
        error=None if error is None else ServerError(ErrorKind[error[0]], error[1]),
        final=final,
        model_error=model_error,
    )


def discard_response(packed: tuple[Any, ...]) -> None:
    """Remove the shared-memory objects of a packed response nobody will unpack."""
    for tensor in packed[3]:
        discard_packed(tensor[3])
