"""The channel between the server and a model's stub process, and how tensors cross it.

A stub process (see :mod:`mock_server.python_backend._stub`) talks to the server over one
connected Unix stream socket.  Every message is a pickled tuple whose first item names it,
after its length: the messages and their fields are declared in
:mod:`mock_server.python_backend._messages`, the packed forms of core tensors, requests and
responses they carry here (:func:`pack_request` and the others).  Both sides may send from
several threads; :meth:`Channel.send` serialises whole messages.

Tensor data travels in the message itself while it is small; larger arrays travel as
references to shared memory both sides have mapped: a client's region, or a block of one
side's pool (:mod:`mock_server.python_backend._transfer`, each side's :class:`~._transfer.Link`).
Every pool object's name starts with the stub's prefix, so whatever a dead process left behind
is found and removed by :func:`sweep`.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ErrorKind, ServerError
from ..core.types import InferRequest, InferResponse, RequestedOutput, Tensor
from ._transfer import Link, RegionRef

__all__ = [
    "MAX_MESSAGE_BYTES",
    "Channel",
    "ChannelError",
    "Pump",
    "discard_response",
    "pack_request",
    "pack_response",
    "pack_tensor",
    "request_identity",
    "sweep",
    "unpack_request",
    "unpack_response",
    "unpack_tensor",
]

_DEV_SHM = Path("/dev/shm")


#: A message's length, before its bytes.
_HEADER = struct.Struct("!Q")
#: Messages up to this size are written with their header in one piece.
_JOIN_BELOW = 64 * 1024
#: No message is larger (tensors of 64 KiB and more cross through shared memory; only BYTES
#: tensors travel pickled in the message): a larger announced size means a broken stream.
MAX_MESSAGE_BYTES = 4 << 30


class ChannelError(Exception):
    """What arrived on the channel is not a message (the stream is out of step)."""


class Channel:
    """A message channel over a connected socket (either end): each message is a pickled tuple
    after its length (8 bytes, network order).

    It reads and writes whole messages whether the socket is blocking or not.  Another poller
    of the same socket may make it non-blocking (uvloop's ``add_reader`` does, for every
    descriptor it watches, and the flag belongs to the socket, not to a descriptor), so a read
    or write that would block waits in ``poll`` and goes on where it stopped: taking a
    would-block for the end of the stream, or a half-written message for a whole one, once
    killed stubs under load (a partial frame puts the stream out of step for good).

    Parameters
    ----------
    fd : int
        The socket's file descriptor; the channel owns it from now on.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._send_lock = threading.Lock()
        self._closed = False
        #: The tensor traffic's link, whose news (:meth:`Link.pending`) goes first.
        self.link: Link | None = None

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message (after the link's news, if any).

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
            news = None if self.link is None else self.link.pending()
            if news is not None:
                self._write(pickle.dumps(news, protocol=pickle.HIGHEST_PROTOCOL))
            self._write(data)

    def _write(self, data: bytes) -> None:
        """Write one frame whole (call with the send lock)."""
        header = _HEADER.pack(len(data))
        if len(data) >= _JOIN_BELOW:
            _write_all(self._fd, [header, data])
            return
        # A small frame almost always goes in one write: try it before the general loop.
        frame = header + data
        try:
            written = os.write(self._fd, frame)
        except BlockingIOError:
            written = 0
        if written < len(frame):
            _write_all(self._fd, [memoryview(frame)[written:]])

    def recv(self) -> tuple[Any, ...]:
        """Receive one message (blocking).

        Raises
        ------
        EOFError
            When the other end closed the channel or died (or it ended within a message).
        """
        try:
            (size,) = _HEADER.unpack(_read_frame_part(self._fd, _HEADER.size, at_start=True))
            if size > MAX_MESSAGE_BYTES:
                # Not a length this side would write: the stream is out of step (or the other
                # side is broken); reading on would wait for, or allocate, what never comes.
                raise ChannelError(
                    f"a message of {size} bytes announced (at most {MAX_MESSAGE_BYTES}): the "
                    "channel is out of step"
                )
            data = _read_frame_part(self._fd, size, at_start=False)
        except OSError as exc:  # reset by a dying peer, or closed under us
            raise EOFError(str(exc)) from exc
        message = pickle.loads(data)
        assert isinstance(message, tuple)
        return message

    def fileno(self) -> int:
        """The socket's file descriptor (for ``poll``)."""
        return self._fd

    def close(self) -> None:
        """Close the socket; a blocked :meth:`recv` on another thread ends with EOFError."""
        with self._send_lock:
            if self._closed:
                return
            self._closed = True
        # shutdown() wakes a reader blocked in recv() on another thread, close() alone does not.
        with contextlib.suppress(OSError):
            sock = socket.socket(fileno=os.dup(self._fd))
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.close()
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _wait(fd: int, event: int) -> None:
    """Wait until ``fd`` is ready for ``event`` (or has an error or hang-up to report)."""
    poller = select.poll()
    poller.register(fd, event)
    poller.poll()


def _write_all(fd: int, buffers: list[bytes | memoryview]) -> None:
    """Write ``buffers`` in order, whole, whatever the socket's blocking mode."""
    views = [memoryview(b) for b in buffers if b]
    while views:
        try:
            written = os.writev(fd, views)
        except BlockingIOError:
            _wait(fd, select.POLLOUT)
            continue
        while views and written >= views[0].nbytes:
            written -= views[0].nbytes
            views.pop(0)
        if written:
            views[0] = views[0][written:]


def _read_frame_part(fd: int, size: int, at_start: bool) -> bytes | bytearray:
    """Read ``size`` bytes (see :func:`_read_exactly`): a small part is tried with one read
    first, which almost always gets it whole (a header, a small message)."""
    if size >= _JOIN_BELOW:
        return _read_exactly(fd, size, at_start)
    try:
        data = os.read(fd, size)
    except BlockingIOError:
        return _read_exactly(fd, size, at_start)
    if len(data) == size:
        return data
    if not data:  # the end of the stream: _read_exactly reads it again and says which end
        return _read_exactly(fd, size, at_start)
    return data + _read_exactly(fd, size - len(data), at_start=False)


def _read_exactly(fd: int, size: int, at_start: bool) -> bytearray:
    """Read ``size`` bytes, whatever the socket's blocking mode.

    Raises
    ------
    EOFError
        At the end of the stream: before the first byte of a message (``at_start``: the other
        end closed the channel), or within a message (it died while sending).
    """
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        try:
            count = os.readv(fd, [view[got:]])
        except BlockingIOError:
            _wait(fd, select.POLLIN)
            continue
        if not count:
            if at_start and not got:
                raise EOFError("the channel was closed")
            raise EOFError(f"the channel ended within a message ({got} of {size} bytes)")
        got += count
    return buffer


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
        #: Why the channel ended, when not by the other side closing it (see _read_one).
        self.failure: Exception | None = None
        self._holding = _Holding(self)
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
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
        # poll, not select: a server with many connections has descriptors past select's 1024.
        # One poller, made once: only the thread holding the read role calls this.
        try:
            return bool(self._poller.poll(None if timeout is None else max(0, int(timeout * 1000))))
        except (OSError, ValueError):  # closed under us: recv() reports it
            return True

    def _release(self) -> None:
        """Give the read role back; call with the lock."""
        self._reading = False
        self._waiters.notify_all()

    def _read_one(self) -> None:
        """Read and dispatch one message; call holding the read role, which it gives back.

        A message that cannot be read (a broken stream, an unpicklable payload) or dispatched
        ends the channel as its end does: the rest of the stream cannot be trusted.
        :attr:`failure` says why, for the ``on_eof`` callback to report."""
        try:
            try:
                message = self._channel.recv()
                self._dispatch(message)
            except EOFError:
                self._end()
            except Exception as exc:
                self.failure = exc
                self._end()
        finally:
            with self._lock:
                self._release()

    def _end(self) -> None:
        with self._lock:
            self.dead = True
            self._watch(True)  # at EOF it is readable: the background thread ends
        self._on_eof()

    def expecting(self) -> _Holding:
        """Keep the background thread off the channel for the block: enter it *before*
        sending a message whose answer this thread will pump for, so that an answer quicker
        than this thread cannot wake the background thread instead."""
        return self._holding

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
        self._read_arrived()

    def _read_arrived(self) -> bool:
        """:meth:`read_ready`; False when it stopped because the channel is dead or another
        thread holds the read role, True when nothing more had arrived."""
        while True:
            with self._lock:
                if self.dead or self._reading:
                    return False
                self._reading = True
            if not self._readable(0):
                with self._lock:
                    self._release()
                return True
            self._read_one()

    def spin(self, done: Callable[[], bool], limit_ns: int) -> bool:
        """Read and dispatch messages on this thread, without sleeping, until ``done()`` is
        true or ``limit_ns`` nanoseconds passed: for a thread with nothing else to do whose
        answer is due within that time (see ProcessModelInstance.settle).  A sleeping reader
        is woken by the other side's write, which costs both sides far more than the poll
        (a halted virtual CPU's wake-up: 25-45 us each way on the 2-core machines measured).

        Returns
        -------
        bool
            ``done()``: False when the time ran out, the channel died, or another thread
            holds the read role.
        """
        deadline = time.monotonic_ns() + limit_ns
        while not done():
            if not self._read_arrived():
                return done()
            if not done() and time.monotonic_ns() >= deadline:
                return False
        return True

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


class _Holding:
    """:meth:`Pump.expecting`'s context manager (a plain class: it is entered twice per
    request, where ``contextlib``'s generator machinery costs more than the hold)."""

    __slots__ = ("_pump",)

    def __init__(self, pump: Pump) -> None:
        self._pump = pump

    def __enter__(self) -> None:
        self._pump.hold()

    def __exit__(self, *exc: object) -> None:
        self._pump.unhold()


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
def pack_tensor(tensor: Tensor, link: Link, placement: RegionRef | None = None) -> tuple[Any, ...]:
    """A core tensor as message data (see :meth:`Link.pack`); an output the client placed in
    a region (``placement``) is written there first when it can be."""
    data = np.asarray(tensor.data)
    packed: Any = None
    if placement is not None:
        packed = link.write_placed(data, placement)
    if packed is None:
        packed = link.pack(data)
    return (tensor.name, tensor.datatype, tuple(tensor.shape), packed, dict(tensor.parameters))


def unpack_tensor(packed: tuple[Any, ...], link: Link, writable: bool = True) -> Tensor:
    """The core tensor of :func:`pack_tensor`'s result (see :meth:`Link.unpack`)."""
    name, datatype, shape, data, parameters = packed
    return Tensor(name, datatype, tuple(shape), link.unpack(data, writable), parameters)


def _unpack_tensors(packed: list[tuple[Any, ...]], link: Link, writable: bool) -> list[Tensor]:
    """:func:`unpack_tensor` of each; when one fails, the references after it are given up
    (those before it end with their arrays) and the error raised."""
    tensors: list[Tensor] = []
    try:
        for tensor in packed:
            tensors.append(unpack_tensor(tensor, link, writable))
    except ServerError:
        for tensor in packed[len(tensors) :]:  # (the failed one was not counted either)
            link.discard(tensor[3])
        raise
    return tensors


def pack_request(request: InferRequest, link: Link) -> tuple[Any, ...]:
    """A core request (everything but its callback and cancellation flag) as message data;
    outputs the client placed in a system region carry where (for the stub to write them)."""
    regions = link.regions
    placement = getattr(regions, "placement", None)
    return (
        request.model_name,
        request.model_version,
        request.id,
        [pack_tensor(t, link) for t in request.inputs],
        [
            (
                o.name,
                dict(o.parameters),
                None
                if placement is None or o.shared_memory is None
                else placement(o.shared_memory),
            )
            for o in request.outputs
        ],
        dict(request.parameters),
        request.correlation_id,
        request.sequence_start,
        request.sequence_end,
        request.priority,
        request.timeout_us,
    )


def request_identity(packed: tuple[Any, ...]) -> tuple[str, int, str]:
    """The model name, version and request id of a packed request (without unpacking it)."""
    model, version, request_id = packed[:3]
    return model, version, request_id


def unpack_request(
    packed: tuple[Any, ...], link: Link
) -> tuple[InferRequest, dict[str, RegionRef]]:
    """The core request of :func:`pack_request`'s result (no callback yet; its inputs in
    client regions are read-only views), and its outputs' placements by name.

    Raises
    ------
    ServerError
        When an input's region cannot be viewed (see :meth:`Link.unpack`).
    """
    (model, version, rid, inputs, outputs, parameters, corrid, start, end, priority, timeout) = (
        packed
    )
    request = InferRequest(
        model_name=model,
        model_version=version,
        id=rid,
        inputs=_unpack_tensors(inputs, link, False),
        outputs=[RequestedOutput(name, params) for name, params, _ in outputs],
        parameters=parameters,
        correlation_id=corrid,
        sequence_start=start,
        sequence_end=end,
        priority=priority,
        timeout_us=timeout,
    )
    return request, {name: ref for name, _, ref in outputs if ref is not None}


def pack_response(
    response: InferResponse, link: Link, placements: dict[str, RegionRef] | None = None
) -> tuple[Any, ...]:
    """A core response as message data; outputs with a placement are written there first
    when they can be."""
    error = response.error
    places = placements or {}
    return (
        response.model_name,
        response.model_version,
        response.id,
        [pack_tensor(t, link, places.get(t.name)) for t in response.outputs],
        dict(response.parameters),
        None if error is None else (error.kind.name, error.message),
        response.final,
        response.model_error,
    )


def unpack_response(packed: tuple[Any, ...], link: Link) -> InferResponse:
    """The core response of :func:`pack_response`'s result; one whose outputs cannot be
    viewed (a region unregistered meanwhile) is that error."""
    model, version, rid, outputs, parameters, error, final, model_error = packed
    try:
        tensors = _unpack_tensors(outputs, link, True)
    except ServerError as exc:
        return InferResponse(model, version, rid, error=exc, final=final)
    return InferResponse(
        model,
        version,
        rid,
        outputs=tensors,
        parameters=parameters,
        error=None if error is None else ServerError(ErrorKind[error[0]], error[1]),
        final=final,
        model_error=model_error,
    )


def discard_response(packed: tuple[Any, ...], link: Link) -> None:
    """Give up the references of a packed response that arrived and nobody will unpack."""
    for tensor in packed[3]:
        link.discard(tensor[3])
