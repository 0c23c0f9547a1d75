"""The iterators of ``generate_stream`` (the generate extension), for both HTTP clients.

Each one opens the stream through its client's transport on first use, feeds what the
transport reads to :class:`~tritonclient._codec.generate.GenerateStreamDecoder` and hands out
the responses; the sync and asyncio versions differ only in ``await``.  Leaving early (break,
``close()``/``aclose()``, garbage collection, an exception) closes the connection, which is
how the server learns to cancel the request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Protocol

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


class GenerateStream(Iterator[dict[str, Any]]):
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

    def __init__(self, open_body: Callable[[], _SyncBody]) -> None:
        self._open_body: Callable[[], _SyncBody] | None = open_body
        self._body: _SyncBody | None = None
        self._decoder = GenerateStreamDecoder()
        self._done = False

    def __iter__(self) -> GenerateStream:
        return self

    def __enter__(self) -> GenerateStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open(self) -> _SyncBody:
        opener, self._open_body = self._open_body, None
        assert opener is not None
        body = self._body = opener()
        if not is_event_stream(body.header("content-type")):
            raise stream_open_error(body.status, body.header("content-type"), body.read_all())
        return body

    def __next__(self) -> dict[str, Any]:
        ready = self._decoder.ready
        if ready:  # the usual case: a response already decoded
            return ready.popleft()
        if self._done:
            raise StopIteration
        decoder = self._decoder
        try:
            while True:
                item = decoder.next()
                if item is not None:
                    return item
                body = self._body if self._body is not None else self._open()
                chunk = body.read()
                if chunk:
                    decoder.feed(chunk)
                    continue
                decoder.end()
                self._done = True
                self._body = None
                raise StopIteration
        except StopIteration:
            raise
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop: the connection closes unless the stream had ended (the server then cancels
        the request).  Any number of times."""
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


class AsyncGenerateStream(AsyncIterator[dict[str, Any]]):
    """The responses of one ``generate_stream`` call, as they arrive (an async iterator of
    dicts); the asyncio twin of :class:`GenerateStream`, with ``aclose()`` and
    ``async with``.  The request is sent on the first ``__anext__``."""

    def __init__(self, open_body: Callable[[], Awaitable[_AsyncBody]]) -> None:
        self._open_body: Callable[[], Awaitable[_AsyncBody]] | None = open_body
        self._body: _AsyncBody | None = None
        self._decoder = GenerateStreamDecoder()
        self._done = False

    def __aiter__(self) -> AsyncGenerateStream:
        return self

    async def __aenter__(self) -> AsyncGenerateStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _open(self) -> _AsyncBody:
        opener, self._open_body = self._open_body, None
        assert opener is not None
        body = self._body = await opener()
        if not is_event_stream(body.header("content-type")):
            text = await body.read_all()
            raise stream_open_error(body.status, body.header("content-type"), text)
        return body

    async def __anext__(self) -> dict[str, Any]:
        ready = self._decoder.ready
        if ready:  # the usual case: a response already decoded
            return ready.popleft()
        if self._done:
            raise StopAsyncIteration
        decoder = self._decoder
        try:
            while True:
                item = decoder.next()
                if item is not None:
                    return item
                body = self._body if self._body is not None else await self._open()
                chunk = await body.read()
                if chunk:
                    decoder.feed(chunk)
                    continue
                decoder.end()
                self._done = True
                self._body = None
                raise StopAsyncIteration
        except StopAsyncIteration:
            raise
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop at once (also from synchronous code): the connection closes unless the
        stream had ended."""
        self._done = True
        self._open_body = None
        self._decoder.ready.clear()  # nothing more is handed out
        body, self._body = self._body, None
        if body is not None:
            body.close()

    async def aclose(self) -> None:
        """Stop: the connection closes unless the stream had ended (the server then cancels
        the request).  Any number of times."""
        self.close()

    def __del__(self) -> None:
        body = getattr(self, "_body", None)
        if body is not None:
            body.close()
