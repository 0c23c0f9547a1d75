"""The server<->stub channel (``python_backend._ipc.Channel``) keeps whole messages whatever
the socket's blocking mode.

uvloop's ``add_reader`` makes a watched socket non-blocking (the flag belongs to the socket, so
every descriptor of it is affected), and the server's event loop watches a stub's channel
while other threads read and write it.  A would-block taken for the end of the stream killed
the channel; a message half-written when the flag came on put the stream out of step, and the
stub died reading the rest (``exited with status 1``).  These tests flip the flag in the
middle of a large message, in both directions.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from mock_server.python_backend._ipc import Channel, ChannelError, Pump

TIMEOUT = 30.0
BIG = 8 << 20  # far more than a socket buffer: the message crosses in many pieces


@pytest.fixture
def ends() -> Iterator[tuple[Channel, Channel]]:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a, b = Channel(left.detach()), Channel(right.detach())
    yield a, b
    a.close()
    b.close()


def _flip_while(active: threading.Event, fd: int, stop: threading.Event) -> None:
    """Toggle ``fd``'s non-blocking flag (as a poller would) until ``stop``."""
    while not stop.is_set():
        if active.is_set():
            os.set_blocking(fd, False)
            time.sleep(0.0005)
            os.set_blocking(fd, True)
        time.sleep(0.0005)


def test_a_message_read_while_the_socket_turns_non_blocking_arrives_whole(
    ends: tuple[Channel, Channel],
) -> None:
    reader, writer = ends
    payload = os.urandom(BIG)
    received: list[object] = []
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(3):
                received.append(reader.recv())
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    active, stop = threading.Event(), threading.Event()
    flipper = threading.Thread(target=_flip_while, args=(active, reader.fileno(), stop))
    flipper.start()
    sender = threading.Thread(
        target=lambda: [writer.send(("big", n, payload)) for n in range(3)], daemon=True
    )
    try:
        active.set()
        sender.start()
        thread.join(TIMEOUT)  # (a writer left blocked by a dead reader is woken by the close)
    finally:
        stop.set()
        flipper.join(TIMEOUT)
    assert not thread.is_alive()
    assert failures == []
    assert [m[1] for m in received] == [0, 1, 2]  # type: ignore[index]
    assert all(m[2] == payload for m in received)  # type: ignore[index]


def test_a_message_written_to_a_non_blocking_socket_is_written_whole(
    ends: tuple[Channel, Channel],
) -> None:
    writer, reader = ends
    payload = os.urandom(BIG)
    os.set_blocking(writer.fileno(), False)  # as uvloop leaves it
    received: list[object] = []
    failures: list[BaseException] = []

    def read() -> None:
        time.sleep(0.05)  # late: the socket buffer fills and the writer must wait
        try:
            received.extend([reader.recv(), reader.recv()])
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    writer.send(("big", payload))
    writer.send(("after",))
    thread.join(TIMEOUT)  # (a reader left waiting for the rest is woken by the close)
    assert not thread.is_alive() and failures == []
    assert received == [("big", payload), ("after",)]  # whole, and the stream still in step


def test_the_end_of_the_stream_is_eof(ends: tuple[Channel, Channel]) -> None:
    reader, writer = ends
    writer.send(("last",))
    writer.close()
    assert reader.recv() == ("last",)
    with pytest.raises(EOFError):
        reader.recv()


def test_an_impossible_length_ends_the_channel_at_once(ends: tuple[Channel, Channel]) -> None:
    """Eight bytes that are no message (a broken peer): an error at once, not a wait for (or
    an allocation of) gigabytes that never come."""
    reader, writer = ends
    os.write(writer.fileno(), b"\x00\x00\x00\x04junk")  # 19 GB announced
    with pytest.raises(ChannelError, match="out of step"):
        reader.recv()


def test_a_small_message_arriving_in_pieces_is_read_whole(ends: tuple[Channel, Channel]) -> None:
    """A small frame is read with one read when it is all there; one that arrives a few bytes
    at a time (header included) is still read whole, and the stream stays in step."""
    import pickle
    import struct

    reader, writer = ends
    body = pickle.dumps(("piecewise", b"x" * 100))
    frame = struct.pack("!Q", len(body)) + body
    writer.send(("first",))

    def trickle() -> None:
        for start in range(0, len(frame), 3):
            os.write(writer.fileno(), frame[start : start + 3])
            time.sleep(0.001)
        writer.send(("after",))

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    assert reader.recv() == ("first",)
    assert reader.recv() == ("piecewise", b"x" * 100)
    assert reader.recv() == ("after",)
    thread.join(TIMEOUT)
    assert not thread.is_alive()


def test_a_stream_ending_within_a_small_message_is_eof(ends: tuple[Channel, Channel]) -> None:
    reader, writer = ends
    os.write(writer.fileno(), b"\x00\x00\x00\x00\x00\x00\x00\x10abc")  # 16 bytes announced
    writer.close()
    with pytest.raises(EOFError, match="within a message"):
        reader.recv()


# -- Pump.spin: a thread with nothing else to do polls for a message instead of sleeping ------


def _spin_pump(channel: Channel) -> tuple[Pump, list[tuple[object, ...]]]:
    got: list[tuple[object, ...]] = []
    pump = Pump(channel, got.append, lambda: None, "test-reader")
    pump.start()
    return pump, got


def test_spin_reads_a_message_due_within_its_limit_on_this_thread(
    ends: tuple[Channel, Channel],
) -> None:
    mine, theirs = ends
    pump, got = _spin_pump(mine)
    readers: list[int] = []
    pump._dispatch = lambda message: (got.append(message), readers.append(threading.get_ident()))
    pump.hold()  # as a loop does before it sends: the background thread stays off
    try:
        threading.Timer(0.02, theirs.send, args=(("late", 1),)).start()
        assert pump.spin(lambda: bool(got), 5_000_000_000)
    finally:
        pump.unhold()
    assert got == [("late", 1)] and readers == [threading.get_ident()]


def test_spin_gives_up_after_its_limit_and_the_background_reads_what_comes_later(
    ends: tuple[Channel, Channel],
) -> None:
    mine, theirs = ends
    pump, got = _spin_pump(mine)
    pump.hold()
    start = time.monotonic()
    try:
        assert not pump.spin(lambda: bool(got), 30_000_000)  # 30 ms, nothing sent
    finally:
        pump.unhold()
    assert 0.03 <= time.monotonic() - start < TIMEOUT and got == []
    theirs.send(("after", 2))
    end = time.monotonic() + TIMEOUT
    while not got and time.monotonic() < end:
        time.sleep(0.005)
    assert got == [("after", 2)]


def test_spin_leaves_the_channel_to_a_thread_already_reading(
    ends: tuple[Channel, Channel],
) -> None:
    mine, _ = ends
    pump, got = _spin_pump(mine)
    with pump._lock:
        pump._reading = True  # another thread holds the read role
    start = time.monotonic()
    assert not pump.spin(lambda: bool(got), 5_000_000_000)
    assert time.monotonic() - start < 1.0  # returned at once, not after the limit
    with pump._lock:
        pump._release()


def test_spin_ends_when_the_other_side_closes(ends: tuple[Channel, Channel]) -> None:
    mine, theirs = ends
    pump, got = _spin_pump(mine)
    pump.hold()
    try:
        threading.Timer(0.02, theirs.close).start()
        start = time.monotonic()
        assert not pump.spin(lambda: bool(got), 5_000_000_000)
    finally:
        pump.unhold()
    assert time.monotonic() - start < 1.0 and pump.dead


def test_a_stub_woken_ahead_of_a_request_polls_for_it(
    ends: tuple[Channel, Channel], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an Ahead the stub's main thread polls for the next message (msg.Ahead) instead of
    sleeping: a message due within AHEAD_NS is read by the poll; one that comes later is read
    after the poll gave up, by the sleeping wait as before."""
    from mock_server.python_backend import _messages as msg
    from mock_server.python_backend import _stub

    stub_end, server_end = ends
    stub = _stub._Stub(stub_end, "ahead-test-s", "ahead-test-p")
    polls: list[bool] = []
    spin = stub.pump.spin

    def recorded(done: object, limit_ns: int) -> bool:
        polls.append(spin(done, limit_ns))  # type: ignore[arg-type]
        return polls[-1]

    monkeypatch.setattr(stub.pump, "spin", recorded)

    def later(seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, lambda: server_end.send(msg.encode(msg.Finalize())))
        timer.start()
        return timer

    monkeypatch.setattr(_stub, "AHEAD_NS", int(TIMEOUT * 1e9))
    server_end.send(msg.encode(msg.Ahead()))
    timer = later(0.01)
    assert isinstance(stub.next_work(), msg.Finalize)
    timer.join(TIMEOUT)
    assert polls == [True]

    monkeypatch.setattr(_stub, "AHEAD_NS", 10_000_000)  # 10 ms
    server_end.send(msg.encode(msg.Ahead()))
    timer = later(0.3)
    assert isinstance(stub.next_work(), msg.Finalize)
    timer.join(TIMEOUT)
    assert polls == [True, False]  # the poll gave up; the wait after it read the message

    server_end.send(msg.encode(msg.Finalize()))  # no Ahead: no poll
    assert isinstance(stub.next_work(), msg.Finalize)
    assert polls == [True, False]
