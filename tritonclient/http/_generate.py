"""The iterators of ``generate_stream`` (the generate extension), for both HTTP clients.

Each one opens the stream through its client's transport on first use, feeds what the
transport reads to :class:`~tritonclient._codec.generate.GenerateStreamDecoder` and hands out
the responses; the sync and asyncio versions differ only in ``await``.  Leaving early (break,
``close()``/``aclose()``, garbage collection, an exception) closes the connection, which is
how the server learns to cancel the request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from tritonclient._codec.generate import (
    GenerateStreamDecoder,
    is_event_stream,
    stream_open_error,
)

__all__ = ["AsyncGenerateStream", "GenerateStream"]


class _SyncBody(Protocol):
    status: int

    def header(self, name: str) -> str | None: ...
    def read(self) -> bytes: ...
    def read_all(self) -> bytes: ...
    def close(self) -> None: ...


class _AsyncBody(Protocol):
    status: int

    def header(self, name: str) -> str | None: ...
    async def read(self) -> bytes: ...
    async def read_all(self) -> bytes: ...
    def close(self) -> None: ...


B = TypeVar("B", _SyncBody, _AsyncBody)


class _CloseOnFailure:
    """Around a stream's reads: a failure (not the end of the iteration) closes it."""

    __slots__ = ("_stream",)

    def __init__(self, stream: _Stream[Any]) -> None:
        self._stream = stream

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        if error is not None and not isinstance(error, StopIteration | StopAsyncIteration):
            self._stream.close()


class _Stream(Generic[B]):
    """What both iterators are but the reads: the decoder, the body once open, and closing.

    Parameters
    ----------
    open_body : callable
        Sends the request and gives the answer's body (an awaitable of it for asyncio).
    """

    #: What ends the iteration: ``StopIteration`` or ``StopAsyncIteration``.
    _stop: type[Exception] = StopIteration

    def __init__(self, open_body: Callable[[], Any]) -> None:
        self._open_body: Callable[[], Any] | None = open_body
        self._body: B | None = None
        self._decoder = GenerateStreamDecoder()
        self._done = False

    def _ready(self) -> dict[str, Any] | None:
        """A response decoded and not handed out yet (the usual case), or None to read on.

        Raises
        ------
        StopIteration or StopAsyncIteration
            Once the stream has ended.
        """
        ready = self._decoder.ready
        if ready:
            return ready.popleft()
        if self._done:
            raise self._stop
        return None

    def _fed(self, chunk: bytes) -> bool:
        """Give a read of the body to the decoder: False at the end of the body (the stream
        is then done)."""
        if chunk:
            self._decoder.feed(chunk)
            return True
        self._decoder.end()
        self._done = True
        self._body = None
        return False

    def close(self) -> None:
        """Stop at once: the connection closes unless the stream had ended (the server then
        cancels the request).  Any number of times."""
        self._done = True
        self._open_body = None
        self._decoder.ready.clear()  # nothing more is handed out
        body, self._body = self._body, None
        if body is not None:
            body.close()

    def __del__(self) -> None:
        body = getattr(self, "_body", None)
        if body is not None:
            body.close()


class GenerateStream(_Stream[_SyncBody], Iterator[dict[str, Any]]):
    """The responses of one ``generate_stream`` call, as they arrive (an iterator of dicts).

    The request is sent on the first ``next()``, in the thread that calls it; read it in that
    thread.  Use it in a ``for`` loop, or as a context manager to close it early for sure.

    Raises (from ``next()``)
    ------------------------
    InferenceServerException
        The server's error: before the stream (unknown model, bad request: the status's
        subclass), or an error event in it (``InferenceServerInvalidArgumentError``, status
        ``"400"``, as ``generate()`` raises the same failure), after the responses before it.
    InferenceServerConnectionError
        The stream was cut short (the connection closed before its end).
    InferenceServerDeadlineExceededError
        No event within the client's network timeout.
    """

    def __iter__(self) -> GenerateStream:
        return self

    def __enter__(self) -> GenerateStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open(self) -> _SyncBody:
        opener, self._open_body = self._open_body, None
        assert opener is not None
        body: _SyncBody = opener()
        self._body = body
        if not is_event_stream(body.header("content-type")):
            raise stream_open_error(body.status, body.header("content-type"), body.read_all())
        return body

    def __next__(self) -> dict[str, Any]:
        item = self._ready()
        if item is not None:
            return item
        with _CloseOnFailure(self):
            while (item := self._decoder.next()) is None:
                body = self._body if self._body is not None else self._open()
                if not self._fed(body.read()):
                    raise StopIteration
        return item


class AsyncGenerateStream(_Stream[_AsyncBody], AsyncIterator[dict[str, Any]]):
    """The responses of one ``generate_stream`` call, as they arrive (an async iterator of
    dicts); the asyncio twin of :class:`GenerateStream`, with ``aclose()`` and
    ``async with``.  The request is sent on the first ``__anext__``."""

    _stop = StopAsyncIteration

    def __aiter__(self) -> AsyncGenerateStream:
        return self

    async def __aenter__(self) -> AsyncGenerateStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _open(self) -> _AsyncBody:
        opener, self._open_body = self._open_body, None
        assert opener is not None
        body: _AsyncBody = await opener()
        self._body = body
        if not is_event_stream(body.header("content-type")):
            text = await body.read_all()
            raise stream_open_error(body.status, body.header("content-type"), text)
        return body

    async def __anext__(self) -> dict[str, Any]:
        item = self._ready()
        if item is not None:
            return item
        with _CloseOnFailure(self):
            while (item := self._decoder.next()) is None:
                body = self._body if self._body is not None else await self._open()
                if not self._fed(await body.read()):
                    raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Stop: the connection closes unless the stream had ended (the server then cancels
        the request).  Any number of times."""
        self.close()
