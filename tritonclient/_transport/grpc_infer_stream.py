"""Unary inferences carried over one persistent ``ModelStreamInfer`` stream: the gRPC
clients' opt-in ``infer_over_stream``.

grpcio's unary call costs about 110-130 us of client CPU whatever the client does
(``benchmarks/README.md``), while a message on a stream that stays open costs about half
that.  With ``infer_over_stream=True`` a client's ``infer`` sends its request on a stream it
keeps open and waits for the answer that carries the request's id: the client gives each
request an id of its own (``~1``, ``~2``, ...), matches the answers by it, and gives the
caller's ``request_id`` back (:func:`tritonclient._codec.grpc_client.streamed_infer_response`).

:class:`InferStream` (threads) and :class:`AioInferStream` (asyncio) own the stream: it is
opened on first use with the call's metadata, opened again with other metadata (a plugin's
headers that changed), and again after it broke (the calls waiting on a broken stream fail
with its status, as unary calls on a broken connection do).  Any number of threads (or tasks)
may call at once; their requests share the stream and each waits for its own answer.  A call's
``client_timeout`` bounds its wait here: when it passes, the call fails with gRPC's "Deadline
Exceeded" error while the request goes on on the server (a stream cannot cancel one of its
requests), whose answer is dropped when it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import queue
import threading
from _thread import allocate_lock
from collections.abc import Callable
from typing import Any, NoReturn

import grpc
import grpc.aio

from tritonclient._codec import grpc_client
from tritonclient._codec.grpc_common import exception_from_status
from tritonclient.utils import InferenceServerException
from tritonclient.utils._errors import (
    InferenceServerCancelledError,
    InferenceServerUnavailableError,
    server_error_with_hint,
)

from .grpc import error_from_rpc

__all__ = ["AioInferStream", "InferStream", "StreamAnswer"]

#: ``(parsed stream response, the id the request was sent with)``; the parse is the client's
#: (``tritonclient.grpc._common.parse_stream``).
StreamAnswer = tuple[Any, str]


def deadline_exceeded() -> InferenceServerException:
    """The error of a call whose ``client_timeout`` passed: what gRPC gives a unary call."""
    return server_error_with_hint(exception_from_status("DEADLINE_EXCEEDED", "Deadline Exceeded"))


def _ended() -> InferenceServerException:
    return InferenceServerUnavailableError(
        "the server ended the stream that carries infer() calls (infer_over_stream) before "
        "answering; the next call opens a new one"
    )


def _cancelled(details: str | None = None) -> InferenceServerException:
    """The error of the calls waiting on a stream the client cancelled (it was closed)."""
    return InferenceServerCancelledError(
        details or "Locally cancelled by application!", "StatusCode.CANCELLED"
    )


def _stream_failure(error: BaseException) -> InferenceServerException:
    """The error of the calls waiting on a stream that failed with ``error``."""
    if isinstance(error, grpc.RpcError):
        if error.code() == grpc.StatusCode.CANCELLED:
            # Cancelled here (the client closed): gRPC never gives such a call a debug
            # string, and error_from_rpc would wait for one.
            return _cancelled(error.details())
        return error_from_rpc(error)
    if isinstance(error, InferenceServerException):  # an answer that does not parse
        return error
    return InferenceServerException(f"the stream failed in the client: {error!r}")


class _Tags:
    """The ids the requests of one client are sent with: ``~1``, ``~2``, ... (thread-safe:
    ``itertools.count`` advances atomically)."""

    def __init__(self) -> None:
        self._count = itertools.count(1)

    def next(self) -> str:
        return f"~{next(self._count)}"


# -- threads ----------------------------------------------------------------------------------


class _Waiter:
    """One call waiting for its answer: a lock held until the reader hands it over."""

    __slots__ = ("answer", "error", "lock")

    def __init__(self) -> None:
        self.lock = allocate_lock()
        self.lock.acquire()
        self.answer: Any = None
        self.error: InferenceServerException | None = None


class _SyncStream:
    """One ``ModelStreamInfer`` call: its request queue (grpcio's sending thread takes from
    it), the calls waiting for an answer, and the thread that reads the answers."""

    def __init__(self, method: Any, metadata: Any, parse: Callable[[bytes], Any]) -> None:
        self.metadata = metadata
        self._parse = parse
        self._lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        #: Set once the stream ended; no call is added after that.
        self.error: InferenceServerException | None = None
        self._requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._call = method(iter(self._requests.get, None), metadata=metadata, timeout=None)
        threading.Thread(target=self._read, name="tritonclient-infer-stream", daemon=True).start()

    def send(self, tag: str, data: bytes) -> _Waiter | None:
        """Send a request tagged ``tag``; its waiter, or None when the stream has ended."""
        waiter = _Waiter()
        with self._lock:
            if self.error is not None:
                return None
            self._waiters[tag] = waiter
        self._requests.put(data)
        return waiter

    def forget(self, tag: str) -> bool:
        """Stop waiting for ``tag``'s answer; False if the reader is handing it over."""
        with self._lock:
            return self._waiters.pop(tag, None) is not None

    def _read(self) -> None:
        error: InferenceServerException = _ended()
        parse, waiters, lock = self._parse, self._waiters, self._lock
        try:
            for data in self._call:
                parsed = parse(data)
                with lock:
                    waiter = waiters.pop(parsed[0].infer_response.id, None)
                if waiter is not None:  # else: a call that gave up waiting
                    waiter.answer = parsed
                    waiter.lock.release()
        except BaseException as failure:  # every waiting call must hear of it
            error = _stream_failure(failure)
            self._call.cancel()
        finally:
            with lock:
                self.error = error
                left = list(waiters.values())
                waiters.clear()
            self._requests.put(None)  # releases grpcio's sending thread
            for waiter in left:
                waiter.error = error
                waiter.lock.release()

    def finish(self) -> None:
        """Close the sending side: the calls in flight still get their answers."""
        self._requests.put(None)

    def close(self) -> None:
        """Cancel the stream: the calls in flight fail with CANCELLED."""
        self._requests.put(None)
        self._call.cancel()


class _Carrier:
    """What both kinds of carrier keep: how to open a stream, how to read an answer, the
    stream now open and the ids of the requests.

    Parameters
    ----------
    method : grpc.StreamStreamMultiCallable or grpc.aio.StreamStreamMultiCallable
        The channel's ``ModelStreamInfer`` (requests and answers as bytes).
    parse : callable
        Parses an answer's bytes into ``(ModelStreamInferResponse, raw contents)``.
    """

    def __init__(self, method: Any, parse: Callable[[bytes], Any]) -> None:
        self._method = method
        self._parse = parse
        self._tags = _Tags()
        self._closed = False


class InferStream(_Carrier):
    """``infer`` calls of a sync client carried over one ``ModelStreamInfer`` stream (see
    :class:`_Carrier` for the parameters)."""

    def __init__(self, method: Any, parse: Callable[[bytes], Any]) -> None:
        super().__init__(method, parse)
        self._lock = threading.Lock()
        self._stream: _SyncStream | None = None

    def _current(self, metadata: Any) -> _SyncStream:
        """The open stream for ``metadata``, opened (again) if needed."""
        with self._lock:
            stream = self._stream
            if stream is None or stream.error is not None or stream.metadata != metadata:
                if self._closed:
                    raise InferenceServerException("the client is closed")
                if stream is not None and stream.error is None:
                    stream.finish()  # other metadata: its calls finish, new ones go anew
                stream = self._stream = _SyncStream(self._method, metadata, self._parse)
            return stream

    def infer(self, data: bytes, *, metadata: Any, timeout: float | None) -> StreamAnswer:
        """Send the encoded request ``data`` and wait (at most ``timeout`` seconds) for its
        answer.

        Returns
        -------
        tuple
            The parsed answer and the id the request was sent with.

        Raises
        ------
        InferenceServerException
            DEADLINE_EXCEEDED when ``timeout`` passed first; the stream's status when it broke
            (UNAVAILABLE for a server that ended it).
        """
        tag = self._tags.next()
        tagged = grpc_client.tag_request(data, tag)
        stream = self._current(metadata)
        waiter = stream.send(tag, tagged)
        while waiter is None:  # it ended just now: a new one
            stream = self._current(metadata)
            waiter = stream.send(tag, tagged)
        if not waiter.lock.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            if stream.forget(tag):
                raise deadline_exceeded()
            waiter.lock.acquire()  # the reader is handing the answer over
        if waiter.error is not None:
            raise waiter.error
        return waiter.answer, tag

    def close(self) -> None:
        """Cancel the stream (calls still waiting fail with CANCELLED); no call opens another."""
        with self._lock:
            self._closed = True
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()


# -- asyncio ----------------------------------------------------------------------------------


class _AioStream:
    """One ``ModelStreamInfer`` call of grpc.aio, written to directly, and the task that reads
    its answers; bound to the event loop that opened it."""

    def __init__(self, method: Any, metadata: Any, parse: Callable[[bytes], Any]) -> None:
        self.metadata = metadata
        self.loop = asyncio.get_running_loop()
        self._parse = parse
        self._waiters: dict[str, asyncio.Future[Any]] = {}
        self._write_lock = asyncio.Lock()
        self.error: InferenceServerException | None = None
        self._call = method(metadata=metadata, timeout=None)
        self._reader = self.loop.create_task(self._read())

    async def send(self, tag: str, data: bytes) -> asyncio.Future[Any] | None:
        """Send a request tagged ``tag``; the future of its answer, or None when the stream
        has ended."""
        if self.error is not None:
            return None
        future = self.loop.create_future()
        self._waiters[tag] = future
        try:
            async with self._write_lock:
                await self._call.write(data)
        except BaseException as failure:
            self._waiters.pop(tag, None)
            if isinstance(failure, grpc.RpcError | asyncio.InvalidStateError):
                # The stream failed under the write: the reader reports how; wait for it.
                if self.error is None:
                    await self._failed()
                return None
            raise
        return future

    async def _failed(self) -> NoReturn:
        """Wait for the reader to end (after a failed write) and raise its error."""
        await asyncio.wait((self._reader,), timeout=5.0)
        raise self.error or _ended()

    def forget(self, tag: str) -> None:
        self._waiters.pop(tag, None)

    async def _read(self) -> None:
        error: InferenceServerException = _ended()
        parse, waiters = self._parse, self._waiters
        try:
            while True:
                data = await self._call.read()
                if data is grpc.aio.EOF:
                    break
                parsed = parse(data)
                future = waiters.pop(parsed[0].infer_response.id, None)
                if future is not None and not future.done():
                    future.set_result(parsed)
        except asyncio.CancelledError:  # the client closed (grpc.aio's read of a cancelled call)
            error = _cancelled()
            raise
        except BaseException as failure:  # every waiting call must hear of it
            error = _stream_failure(failure)
            self._call.cancel()
        finally:
            self.error = error
            left = list(waiters.values())
            waiters.clear()
            for future in left:
                if not future.done():
                    future.set_exception(error)

    async def finish(self) -> None:
        """Close the sending side: the calls in flight still get their answers."""
        try:
            async with self._write_lock:
                await self._call.done_writing()
        except (grpc.RpcError, asyncio.InvalidStateError):
            pass  # ended already

    def close(self) -> None:
        """Cancel the stream: the calls in flight fail with CANCELLED.  From another event
        loop (the stream's is gone, or runs elsewhere) this is best effort."""
        with contextlib.suppress(Exception):  # grpc.aio objects of a closed or other loop
            self._call.cancel()
            if not self._reader.done() and not self.loop.is_closed():
                self.loop.call_soon_threadsafe(self._reader.cancel)


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(deadline_exceeded())


class AioInferStream(_Carrier):
    """``infer`` calls of an asyncio client carried over one ``ModelStreamInfer`` stream
    (see :class:`InferStream`; :class:`_Carrier` for the parameters)."""

    def __init__(self, method: Any, parse: Callable[[bytes], Any]) -> None:
        super().__init__(method, parse)
        self._stream: _AioStream | None = None

    async def _current(self, metadata: Any) -> _AioStream:
        stream = self._stream
        if (
            stream is None
            or stream.error is not None
            or stream.metadata != metadata
            or stream.loop is not asyncio.get_running_loop()
        ):
            if self._closed:
                raise InferenceServerException("the client is closed")
            self._stream = new = _AioStream(self._method, metadata, self._parse)
            if stream is not None and stream.error is None:
                if stream.loop is asyncio.get_running_loop():
                    await stream.finish()  # other metadata: its calls finish
                else:
                    stream.close()  # another event loop's (that one is gone or elsewhere)
            stream = new
        return stream

    async def infer(self, data: bytes, *, metadata: Any, timeout: float | None) -> StreamAnswer:
        """Send the encoded request ``data`` and wait (at most ``timeout`` seconds) for its
        answer; see :meth:`InferStream.infer`."""
        tag = self._tags.next()
        tagged = grpc_client.tag_request(data, tag)
        stream = await self._current(metadata)
        future = await stream.send(tag, tagged)
        while future is None:  # it ended just now: a new one
            stream = await self._current(metadata)
            future = await stream.send(tag, tagged)
        expiry = None if timeout is None else stream.loop.call_later(timeout, _expire, future)
        try:
            return await future, tag
        finally:
            if expiry is not None:
                expiry.cancel()
            stream.forget(tag)

    async def close(self) -> None:
        """Cancel the stream (calls still waiting fail); no call opens another."""
        self._closed = True
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()
