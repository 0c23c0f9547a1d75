"""The asyncio HTTP transport: the lean path for small plain-HTTP requests, aiohttp for the
rest, each made per event loop.

A plain-HTTP request whose body is one piece (every small request) goes over the lean path
(:mod:`.asyncio_http`: asyncio protocols parsed with llhttp, a fraction of aiohttp's CPU per
call); TLS, large request bodies and streamed answers go through one aiohttp session.  Both
are created on first use, inside the running event loop (so a client may be constructed
outside a coroutine), and made again if the client is used from another loop.  A body made of
several buffers (the JSON header, then the inputs' binary data) is written from those buffers,
with its Content-Length announced: no joined copy of a large request.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as _ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from tritonclient._codec.types import Buffer
from tritonclient.utils import InferenceServerException, raise_error

from .asyncio_http import LeanPool
from .http import HttpCall, HttpReply, transport_error
from .http11 import HTTPParseError

__all__ = ["AiohttpStream", "AiohttpTransport"]

#: The headers aiohttp adds to every request (Accept-Encoding aside, which the session skips):
#: the lean path sends the same.
_AIOHTTP_DEFAULT_HEADERS = {"Accept": "*/*", "User-Agent": aiohttp.http.SERVER_SOFTWARE}


async def _pieces(chunks: tuple[Buffer, ...]) -> AsyncIterator[Buffer]:
    for chunk in chunks:
        if memoryview(chunk).nbytes:
            yield chunk


class AiohttpStream:
    """A response whose body is read piece by piece as it arrives (an event stream).

    Made by :meth:`AiohttpTransport.open_stream` once the headers have arrived.

    Attributes
    ----------
    status : int
        The HTTP status.
    headers : dict of str to str
        The headers (lower-case names).
    """

    def __init__(
        self, response: aiohttp.ClientResponse, limit: float | None, what: str, server: str
    ) -> None:
        self._response: aiohttp.ClientResponse | None = response
        self._limit = limit
        self._what = what
        self._server = server
        self.status: int = response.status
        self.headers: dict[str, str] = {k.lower(): v for k, v in response.headers.items()}

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), or None."""
        return self.headers.get(name.lower())

    async def read(self) -> bytes:
        """The next bytes of the body as they arrive; ``b""`` once it has ended completely.

        The transport's timeout bounds each wait for more bytes, not the whole body.

        Raises
        ------
        InferenceServerConnectionError
            If the connection closed before the end of the body (a stream cut short).
        InferenceServerDeadlineExceededError
            If no bytes came within the limit.
        """
        response = self._response
        if response is None:
            return b""
        try:
            chunk = await response.content.readany()
        except asyncio.TimeoutError:
            self.close()
            raise transport_error(
                TimeoutError(f"no more of the response within {self._limit} s"),
                self._what,
                self._server,
            ) from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError) as error:
            self.close()
            raise transport_error(
                ConnectionError(f"the response was cut short ({type(error).__name__}: {error})"),
                self._what,
                self._server,
            ) from None
        except BaseException:
            self.close()  # cancelled (or worse): nobody reads the rest
            raise
        if chunk:
            return chunk
        self._response = None
        response.release()  # read to its end: the connection serves the next request
        return b""

    async def read_all(self) -> bytes:
        """The rest of the body (an error answer's JSON)."""
        pieces: list[bytes] = []
        while True:
            chunk = await self.read()
            if not chunk:
                return b"".join(pieces)
            pieces.append(chunk)

    def close(self) -> None:
        """Stop reading: the connection is closed (the server sees the client go away), unless
        the body had already ended.  Any number of times, from anywhere (garbage collection)."""
        response, self._response = self._response, None
        if response is not None:
            with contextlib.suppress(Exception):  # closing must not fail
                response.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # never raise from a finalizer
            self.close()


def _failure(error: Exception, what: str, server: str, waited: str) -> InferenceServerException:
    """A failure of aiohttp while sending or reading, as the transport's error (see
    :func:`transport_error`): a timeout as a ``TimeoutError`` saying ``waited``, a TLS error as
    it is, a broken connection as a ``ConnectionError`` naming aiohttp's error."""
    # In this order: asyncio.TimeoutError is an OSError on Python >= 3.11, and
    # ssl.SSLError (aiohttp's TLS errors are too) an OSError as well.
    if isinstance(error, asyncio.TimeoutError):
        error = TimeoutError(waited)
    elif isinstance(error, _ssl.SSLError):
        pass
    elif isinstance(error, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError | OSError):
        error = ConnectionError(f"{type(error).__name__}: {error}")
    return transport_error(error, what, server)


class AiohttpTransport:
    """Sends :class:`HttpCall` s to one server with aiohttp.

    Parameters
    ----------
    scheme : str
        ``"http"`` or ``"https"``.
    host : str
        The server's host name or address.
    port : int
        Its port.
    conn_limit : int
        Connections to the server at once.
    timeout : float
        Bound of each whole request (connecting, sending and receiving), in seconds.
    ssl_context : ssl.SSLContext or None
        The TLS context for https (None: aiohttp's default verification).
    """

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        *,
        conn_limit: int = 100,
        timeout: float = 60.0,
        ssl_context: _ssl.SSLContext | None = None,
    ) -> None:
        netloc = f"[{host}]" if ":" in host else host
        self._origin = f"{scheme}://{netloc}:{port}"
        self._server = f"{netloc}:{port}"
        self._conn_limit = conn_limit
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._ssl_context = ssl_context
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        #: The lean path (plain HTTP only; TLS stays with aiohttp): made per event loop.
        self._lean_args = (host, port, conn_limit, timeout) if scheme == "http" else None
        self._lean: LeanPool | None = None
        self._lean_loop: asyncio.AbstractEventLoop | None = None

    async def close(self) -> None:
        """Close the session and its connections; every later call raises."""
        self._closed = True
        lean, self._lean = self._lean, None
        if lean is not None and self._lean_loop is asyncio.get_running_loop():
            lean.close()
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise_error("the client is closed")
        loop = asyncio.get_running_loop()
        if self._session is not None and self._session_loop is not loop:
            # Used from another event loop (e.g. a second asyncio.run): the old session is
            # bound to its loop, so start a new one rather than fail.
            old, self._session = self._session, None
            connector = old.connector
            old.detach()
            close = getattr(connector, "_close", None)  # sync part of aiohttp's close()
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
        if self._session is None:
            self._session_loop = loop
            connector = aiohttp.TCPConnector(
                limit=self._conn_limit,
                ssl=self._ssl_context if self._ssl_context is not None else True,
            )
            # No automatic "Accept-Encoding: gzip, deflate": a server would compress every
            # answer for the client to inflate again (response compression is asked for
            # explicitly, with response_compression_algorithm, as in the sync client).
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                auto_decompress=False,
                skip_auto_headers=("Accept-Encoding",),
            )
        return self._session

    async def open_stream(self, call: HttpCall[Any]) -> AiohttpStream:
        """Send ``call`` and return once the answer's headers have arrived, with its body to
        read as it comes (:class:`AiohttpStream`).

        The timeout bounds connecting, the wait for the headers and each wait for more of the
        body (between events), not the whole stream.

        Raises
        ------
        InferenceServerException
            For every failure of :meth:`send`.
        """
        session = self._get_session()
        what = f"{call.method} {call.path}"
        limit = self._timeout.total
        timeout = aiohttp.ClientTimeout(total=None, connect=limit, sock_read=limit)
        try:
            response = await session.request(
                call.method,
                self._origin + call.path,
                data=call.payload() or None,
                headers=call.headers,
                timeout=timeout,
            )
        except Exception as error:
            raise _failure(error, what, self._server, f"no answer within {limit} s") from None
        return AiohttpStream(response, limit, what, self._server)

    def _get_lean(self) -> LeanPool | None:
        """The lean pool of the running event loop, or None (TLS)."""
        if self._lean_args is None:
            return None
        if self._closed:
            raise_error("the client is closed")
        loop = asyncio.get_running_loop()
        if self._lean is None or self._lean_loop is not loop:
            # A pool is bound to its loop; one used from another (a second asyncio.run)
            # is dropped with its loop.
            host, port, limit, timeout = self._lean_args
            self._lean = LeanPool(host, port, limit, timeout, _AIOHTTP_DEFAULT_HEADERS)
            self._lean_loop = loop
        return self._lean

    async def _send_lean(self, pool: LeanPool, call: HttpCall[Any]) -> HttpReply:
        """One attempt of ``call`` on the lean path (see :mod:`.asyncio_http`)."""
        try:
            status, headers, body = await pool.send(
                call.method, call.path, call.headers, call.body or b""
            )
        except (TimeoutError, asyncio.TimeoutError):
            error: Exception = TimeoutError(f"no complete answer within {self._timeout.total} s")
        except (OSError, EOFError) as lost:
            error = ConnectionError(f"{type(lost).__name__}: {lost}")
        except (HTTPParseError, ValueError) as garbled:
            error = garbled
        else:
            return HttpReply(status, headers, body)
        raise transport_error(error, f"{call.method} {call.path}", self._server) from None

    async def send(self, call: HttpCall[Any]) -> HttpReply:
        """One attempt of ``call``; every failure is an ``InferenceServerException``."""
        if call.chunks is None:
            lean = self._get_lean()
            if lean is not None:
                return await self._send_lean(lean, call)
        session = self._get_session()
        what = f"{call.method} {call.path}"
        headers = call.headers
        data: Any = call.body or None
        if call.chunks is not None:
            # Sent from the buffers as they are, with the length announced (not chunked).
            size = sum(memoryview(c).nbytes for c in call.chunks)
            headers = {**headers, "Content-Length": str(size)}
            data = _pieces(call.chunks)
        try:
            async with session.request(
                call.method, self._origin + call.path, data=data, headers=headers
            ) as response:
                body = await response.read()
                reply_headers = {k.lower(): v for k, v in response.headers.items()}
                return HttpReply(response.status, reply_headers, body)
        except InferenceServerException:
            raise
        except Exception as error:
            waited = f"no complete answer within {self._timeout.total} s"
            raise _failure(error, what, self._server, waited) from None
