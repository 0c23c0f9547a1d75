"""The synchronous HTTP/REST client (``tritonclient.http.InferenceServerClient``).

gevent
    Requests are made with geventhttpclient; **the caller's program needs no monkey-patching**
    (and a monkey-patched program is not disturbed).  geventhttpclient objects belong to the
    thread (gevent hub) that created them, so the client keeps one ``HTTPClient`` per thread
    that uses it and never touches one from another thread.  There are two paths:

    Direct path (every plain call: ``infer``, health, metadata, ...)
        The call runs in the calling thread, on that thread's own gevent hub, with that
        thread's own ``HTTPClient`` for this client (created there at the thread's first call,
        with the client's options; kept in a thread-local registry), as NVIDIA's client does.
        No hand-off to another thread.  Inside a greenlet of a gevent program the call only
        blocks the calling greenlet.
    Hub thread (``async_infer``, and calls made from inside a gevent hub callback)
        Each client starts one private OS thread with its own gevent hub (see
        :mod:`tritonclient.http._gevent_loop`), which runs these requests as greenlets; the
        caller waits, when it waits, on a plain lock.

    Consequences:

    * the client is **thread-safe**: any number of threads may call it at once (NVIDIA's is
      not).  Each calling thread has up to ``concurrency`` connections of its own to the
      server, and the hub thread another ``concurrency``;
    * ``close()``, ``with`` and garbage collection work from any thread, never raising greenlet
      errors ("cannot switch to a different thread"): ``close()`` waits for the calls in
      progress (in all threads) and closes the calling thread's connections and the hub
      thread; every later call raises "the client is closed".  The idle keep-alive connections
      of *other* threads are closed by those threads themselves, at their next call through
      any client of this module or when they exit, so they may stay open until then;
    * ``async_infer`` starts the request at once and returns immediately (no fixed sleep);
      ``InferAsyncRequest.get_result`` may be called from any thread.

Errors
    Any non-200 answer raises :class:`~tritonclient.utils.InferenceServerException` with
    ``status()`` the HTTP status ("400", "404", ...) and the server's ``error`` message; empty
    or non-JSON error bodies give a clear message instead of a JSON decoding error.  The
    exception is of the subclass for the status (``InferenceServerNotFoundError`` for 404,
    ...).  Network failures raise :class:`~tritonclient.utils.InferenceServerConnectionError`
    (refused, reset, closed mid-answer; also a ``ConnectionError``, as the socket exception
    NVIDIA's client lets through), timeouts
    :class:`~tritonclient.utils.InferenceServerDeadlineExceededError` (also a
    ``TimeoutError``), answers that cannot be parsed or decoded
    :class:`~tritonclient.utils.InferenceServerProtocolError`.  ``connection_timeout +
    network_timeout`` bounds each whole call, not just each read.
"""

from __future__ import annotations

import contextlib
import itertools
import ssl as _ssl
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import gevent  # type: ignore[import-untyped]  # gevent ships no type information
import gevent.monkey  # type: ignore[import-untyped]  # gevent ships no type information
import numpy as np
from gevent.hub import Hub  # type: ignore[import-untyped]  # gevent ships no type information
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from tritonclient._codec.types import InferOptions
from tritonclient._ready import wait_sync
from tritonclient.http._common import (
    ClientCore,
    HttpCall,
    HttpReply,
    check_retry_policy,
    decode_error,
    is_retryable,
    not_ready_error,
    parse_url,
    transport_error,
)
from tritonclient.http._gevent_loop import GeventLoop, Job
from tritonclient.http._infer_input import InferInput
from tritonclient.http._infer_result import InferResult
from tritonclient.http._requested_output import InferRequestedOutput
from tritonclient.utils import InferenceServerException, RetryPolicy, raise_error

__all__ = ["InferAsyncRequest", "InferenceServerClient"]

T = TypeVar("T")
Headers = Mapping[str, Any] | None
Query = Mapping[str, Any] | None


#: Bytes read from the socket at a time.
_READ_BLOCK = 64 * 1024

# Real OS-thread primitives even when the program monkey-patched ``threading``.
_allocate_lock: Callable[[], Any] = gevent.monkey.get_original("_thread", "allocate_lock")
_ThreadLocal: type = gevent.monkey.get_original("_thread", "_local")
_getcurrent: Callable[[], Any] = gevent.getcurrent


class _Shared:
    """The state of one client that its per-thread ``HTTPClient`` entries share.

    It never references the client itself, so the client can be garbage collected while other
    threads still hold entries for it.
    """

    __slots__ = ("closed", "idle", "inflight", "lock", "make_stub")

    def __init__(self, make_stub: Callable[[], HTTPClient]) -> None:
        self.make_stub = make_stub
        self.closed = False
        self.lock = _allocate_lock()
        #: Direct calls in progress, in all threads.
        self.inflight = 0
        #: Held while ``inflight > 0``; ``close()`` acquires it to wait for those calls.
        self.idle = _allocate_lock()


class _ThreadStub:
    """One thread's ``HTTPClient`` for one client; used and closed only in that thread."""

    __slots__ = ("__weakref__", "active", "shared", "stub")

    def __init__(self, shared: _Shared) -> None:
        self.shared = shared
        self.stub: HTTPClient | None = shared.make_stub()
        #: Calls of this thread (of its greenlets) using ``stub`` now.
        self.active = 0

    def close(self) -> None:
        stub, self.stub = self.stub, None
        if stub is not None:
            with contextlib.suppress(Exception):  # closing idle connections must not fail
                stub.close()

    def __del__(self) -> None:  # the thread-local registry is released in its own thread
        self.close()


class _Registry(_ThreadLocal):  # type: ignore[misc]  # the C type has no stub
    """Per OS thread: the thread's ``HTTPClient`` of each client it called."""

    def __init__(self) -> None:
        self.stubs: dict[_Shared, _ThreadStub] = {}
        self.seen = -1


_registry = _Registry()
_closings = itertools.count()
#: Changes whenever a client is closed: threads then close their entries for closed clients.
_generation = next(_closings)


def _client_closed() -> None:
    global _generation  # one counter for the whole module
    _generation = next(_closings)


def _sweep(registry: _Registry) -> None:
    """Close the calling thread's idle entries for closed clients."""
    registry.seen = _generation
    for shared, entry in list(registry.stubs.items()):
        if shared.closed and entry.active == 0:
            registry.stubs.pop(shared, None)
            entry.close()


def _in_hub() -> bool:
    """Whether the caller runs in a gevent hub greenlet (where it must not block on I/O)."""
    return isinstance(_getcurrent(), Hub)


class _ChunkedBody:
    """A request body made of several buffers, sent as they are (no join into one copy).

    geventhttpclient sends a ``bytes`` body as ``header + body`` (a copy of the whole body),
    and any other body with a length through ``socket.sendfile``, which reads it like a file:
    so this object has a length (the Content-Length) and a ``read`` that hands over one
    buffer after the other.
    """

    mode = "rb"

    def __init__(self, chunks: tuple[Any, ...]) -> None:
        self._chunks = [memoryview(c).cast("B") for c in chunks]
        self._size = sum(c.nbytes for c in self._chunks)
        self._next = 0
        self._position = 0

    def __len__(self) -> int:
        return self._size

    def read(self, size: int = -1) -> memoryview | bytes:
        """The next buffer whole (``size`` is ignored: a larger piece is fine to send)."""
        while self._next < len(self._chunks):
            chunk = self._chunks[self._next]
            self._next += 1
            if chunk.nbytes:
                self._position += chunk.nbytes
                return chunk
        return b""

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = 0) -> int:
        """Only to where reading stands (what ``sendfile`` does when it is done)."""
        if whence != 0 or offset != self._position:
            raise OSError("a request body of buffers can only be read once, in order")
        return self._position


#: Answers at least this large are read straight into one buffer (see _read_into_buffer).
_LARGE_BODY = 1 << 20


def _read_into_buffer(response: Any, length: int) -> memoryview | None:
    """Read the rest of a ``length``-byte body into one new buffer; None to read it as usual.

    geventhttpclient collects a body in a growing ``bytearray`` and copies it into ``bytes``
    at the end: three times the body in memory at the peak, and two extra copies.  Its parser
    hands each piece of the body to the response's ``_on_body`` callback, so for a large
    answer that callback is pointed at a numpy buffer of the announced length instead (numpy
    allocates it with huge pages, without zero-filling it): one copy, and the body once in
    memory.  Where this geventhttpclient has no such callback, None: the usual read.
    """
    pending = getattr(response, "_body_buffer", None)
    if not isinstance(pending, bytearray) or not callable(getattr(response, "_on_body", None)):
        return None
    out = np.empty(length, dtype=np.uint8)
    view = memoryview(out.data)
    got = len(pending)  # the part read together with the headers
    if got > length:
        return None
    view[:got] = pending
    del pending[:]
    position = [got]

    def on_body(piece: Any) -> None:
        start = position[0]
        end = start + len(piece)
        if end > length:
            raise EOFError(f"the response body is longer than its {length} byte Content-Length")
        view[start:end] = piece
        position[0] = end

    response._on_body = on_body
    if response.read():  # everything went to on_body; anything here was not ours to take
        raise EOFError("the response body arrived outside the reading buffer")
    return view[: position[0]].toreadonly()


def _perform(stub: HTTPClient, call: HttpCall[Any], limit: float | None) -> HttpReply:
    """Send one request and read the whole answer (in the thread that owns ``stub``).

    ``limit`` (seconds) bounds the whole exchange; every failure becomes an
    ``InferenceServerException`` subclass (see :func:`transport_error`).
    """
    what = f"{call.method} {call.path}"
    server = f"{stub.host}:{stub.port}"
    timer = gevent.Timeout(limit) if limit is not None else None
    if timer is not None:
        timer.start()
    try:
        body_out: Any = call.body or b""
        if call.chunks is not None:
            body_out = _ChunkedBody(call.chunks)
        response = stub.request(call.method, call.path, body=body_out, headers=call.headers)
        try:
            announced = str(response.get("content-length") or "").strip()
            length = int(announced) if announced.isdigit() else None
            body: Any = None
            if length is not None and length >= _LARGE_BODY:
                body = _read_into_buffer(response, length)
            if body is None:
                body = response.read()
            if length is not None and length > len(body):
                raise transport_error(
                    EOFError(
                        f"the connection closed after {len(body)} of the {length} "
                        "bytes of the response"
                    ),
                    what,
                    server,
                )
        finally:
            response.release()
        headers = {str(k).lower(): str(v) for k, v in response.items()}
        return HttpReply(response.status_code, headers, body)
    except gevent.Timeout as expired:
        if expired is not timer:
            raise
        raise transport_error(
            TimeoutError(f"no complete answer within {limit:g} s"), what, server
        ) from None
    except InferenceServerException:
        raise
    except HTTPParseError as error:
        if isinstance(error, HTTPConnectionClosed) or "incomplete" in str(error).lower():
            # the connection closed before or in the middle of the response
            raise transport_error(EOFError(f"truncated response ({error})"), what, server) from None
        raise transport_error(error, what, server) from None
    except Exception as error:
        raise transport_error(error, what, server) from None
    finally:
        if timer is not None:
            timer.close()


class InferAsyncRequest:
    """A handle to an ongoing asynchronous inference request.

    Parameters
    ----------
    job : Job
        The request running in the client's gevent thread.
    verbose : bool
        If True generate verbose output. Default value is False.
    """

    def __init__(self, job: Job[InferResult], verbose: bool = False) -> None:
        self._job = job
        self._verbose = verbose

    def get_result(self, block: bool = True, timeout: float | None = None) -> InferResult:
        """Get the results of the associated asynchronous inference.

        Parameters
        ----------
        block : bool
            If True (default), wait until the response is received.  If False, return the
            result if it is already there and raise otherwise.
        timeout : float
            The maximum wait time in seconds; ignored if ``block`` is False.  Default is
            None, which means wait indefinitely.

        Returns
        -------
        InferResult
            The object holding the result of the async inference.

        Raises
        ------
        InferenceServerException
            If the server fails to perform inference, or the response did not arrive in time
            ("failed to obtain inference response").  The request keeps running in that case;
            ``get_result`` may be called again.
        """
        done = self._job.wait(timeout) if block else self._job.done()
        if not done:
            raise_error("failed to obtain inference response")
        return self._job.result()


class InferenceServerClient(ClientCore):
    """A client for the HTTP/REST endpoints of a Triton (KServe v2) server.

    Unlike NVIDIA's client, it may be shared by threads (see the module docstring).

    Parameters
    ----------
    url : str
        The inference server name, port and optional base path in the following format:
        ``host:port/<base-path>``, e.g. ``'localhost:8000'``.
    verbose : bool
        If True generate verbose output. Default value is False.
    concurrency : int
        The number of connections to create for this client, per calling thread (and as many
        for ``async_infer``). Default value is 1.
    connection_timeout : float
        The timeout value for the connection. Default value is 60.0 sec.
    network_timeout : float
        The timeout value for the network. Default value is 60.0 sec.
    max_greenlets : int
        The maximum number of ``async_infer`` requests in progress at once (calls made in the
        calling thread are not counted). Default value is None, which means no limit.
    ssl : bool
        If True, channels the requests to encrypted https scheme. Default value is False.
    ssl_options : dict
        Any options supported by ``ssl.wrap_socket`` specified as dictionary (e.g.
        ``{"ca_certs": path}``). Ignored if ``ssl`` is False.
    ssl_context_factory : SSLContext callable
        A callable that returns an ``SSLContext`` (e.g. ``gevent.ssl.create_default_context``).
        Default None wraps the socket with ``ssl_options``. Ignored if ``ssl`` is False.
    insecure : bool
        If True, do not match the host name with the certificate. Default value is False.
        Ignored if ``ssl`` is False.
    retry_policy : tritonclient.utils.RetryPolicy, keyword-only
        (Not in NVIDIA's client.) Retry idempotent calls (GETs and the repository index)
        that fail to connect (:class:`~tritonclient.utils.InferenceServerConnectionError`).
        Inference and state-changing calls are never retried. Default None: no retries.

    Raises
    ------
    Exception
        If unable to create a client.
    """

    def __init__(
        self,
        url: str,
        verbose: bool = False,
        concurrency: int = 1,
        connection_timeout: float = 60.0,
        network_timeout: float = 60.0,
        max_greenlets: int | None = None,
        ssl: bool = False,
        ssl_options: dict[str, Any] | None = None,
        ssl_context_factory: Callable[..., _ssl.SSLContext] | None = None,
        insecure: bool = False,
        *,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        self._loop: GeventLoop | None = None
        self._shared: _Shared | None = None
        self._retry_policy = check_retry_policy(retry_policy)
        self._call_limit: float | None = None
        if connection_timeout is not None and network_timeout is not None:
            self._call_limit = float(connection_timeout) + float(network_timeout)
        _scheme, host, port, base = parse_url(url, ssl)
        super().__init__(base, verbose)

        def make_stub() -> HTTPClient:
            return HTTPClient(
                host,
                port=port,
                concurrency=concurrency,
                # 64 KiB reads instead of geventhttpclient's 4 KiB: a 64 MiB answer takes
                # 1,000 reads rather than 16,000 (about 25% less client CPU), and the buffer
                # stays under malloc's mmap threshold for small answers.
                block_size=_READ_BLOCK,
                connection_timeout=connection_timeout,
                network_timeout=network_timeout,
                ssl=ssl,
                ssl_options=ssl_options if ssl else None,
                ssl_context_factory=ssl_context_factory if ssl else None,
                insecure=insecure,
            )

        def setup() -> tuple[HTTPClient, Callable[[], None]]:
            stub = make_stub()
            return stub, stub.close

        self._loop = GeventLoop(setup, max_greenlets)
        self._shared = _Shared(make_stub)

    def __enter__(self) -> InferenceServerClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        # No call is in progress (it would hold a reference), so nothing to wait for; only
        # this thread's own entry is closed here, other threads close theirs (module docstring).
        shared = getattr(self, "_shared", None)
        if shared is not None:
            shared.closed = True
            _client_closed()
            with contextlib.suppress(Exception):  # never raise from a finalizer
                entry = _registry.stubs.get(shared)
                if entry is not None and entry.active == 0:
                    _registry.stubs.pop(shared, None)
                    entry.close()
        loop = getattr(self, "_loop", None)
        if loop is not None:
            with contextlib.suppress(Exception):  # never raise from a finalizer
                loop.close(wait=False)

    def close(self) -> None:
        """Close the client: wait for requests in progress, then close the connections.

        Any future calls to the server will raise an error.  May be called from any thread,
        more than once.  The calling thread's connections and the ``async_infer`` thread are
        closed at once; other threads' idle connections are closed by those threads at their
        next call (through any client) or when they exit.
        """
        shared = self._shared
        if shared is not None:
            with shared.lock:
                closing = not shared.closed
                shared.closed = True
            if closing:
                _client_closed()
            entry = _registry.stubs.get(shared)
            if entry is not None and entry.active > 0 and not _in_hub():
                # other greenlets of this thread are in calls: let them finish
                while not shared.idle.acquire(False):
                    gevent.sleep(0.005)
            else:
                shared.idle.acquire()
            shared.idle.release()
            entry = _registry.stubs.get(shared)
            if entry is not None and entry.active == 0:
                _registry.stubs.pop(shared, None)
                entry.close()
        if self._loop is not None:
            self._loop.close(wait=True)

    def _submit(self, call: HttpCall[T]) -> Job[T]:
        if self._loop is None:  # pragma: no cover - only if __init__ failed
            raise_error("the client is closed")
        loop = self._loop

        limit = self._call_limit

        def work() -> T:
            reply = _perform(loop.resource, call, limit)
            self._verbose_reply(reply)
            try:
                return call.parse(reply)
            except Exception as error:
                raise decode_error(error, f"{call.method} {call.path}") from None

        return loop.submit(work)

    def _handed_over(self, call: HttpCall[T], timeout: float | None) -> T:
        """One attempt of ``call`` in the hub thread, waiting at most ``timeout`` seconds."""
        job = self._submit(call)
        if not job.wait(timeout):
            raise transport_error(
                TimeoutError(f"no answer within {timeout:g} s"),
                f"{call.method} {call.path}",
            )
        return job.result()

    def _direct(self, call: HttpCall[T], timeout: float | None) -> T:
        """One attempt of ``call`` in the calling thread, with that thread's ``HTTPClient``."""
        shared = self._shared
        if shared is None or shared.closed:
            raise_error("the client is closed")
        registry = _registry
        if registry.seen != _generation:
            _sweep(registry)
        entry = registry.stubs.get(shared)
        if entry is None or entry.stub is None:
            entry = registry.stubs[shared] = _ThreadStub(shared)
        stub = entry.stub
        assert stub is not None
        limit = self._call_limit
        if timeout is not None:
            limit = timeout if limit is None else min(limit, timeout)
        entry.active += 1
        try:
            with shared.lock:
                if shared.closed:
                    raise_error("the client is closed")
                shared.inflight += 1
                if shared.inflight == 1:
                    shared.idle.acquire()
            try:
                reply = _perform(stub, call, limit)
            finally:
                with shared.lock:
                    shared.inflight -= 1
                    if shared.inflight == 0:
                        shared.idle.release()
        finally:
            entry.active -= 1
            if shared.closed and entry.active == 0:
                if registry.stubs.get(shared) is entry:
                    del registry.stubs[shared]
                entry.close()
        self._verbose_reply(reply)
        try:
            return call.parse(reply)
        except Exception as error:
            raise decode_error(error, f"{call.method} {call.path}") from None

    def _run(self, call: HttpCall[T], timeout: float | None = None) -> T:
        policy = self._retry_policy if call.idempotent else None
        attempt = 1
        perform = self._handed_over if _in_hub() else self._direct
        while True:
            try:
                return perform(call, timeout)
            except InferenceServerException as error:
                if policy is None or attempt >= policy.max_attempts or not is_retryable(error):
                    raise
            time.sleep(policy.backoff(attempt))
            attempt += 1

    def wait_until_ready(
        self,
        model_name: str | None = None,
        model_version: str = "",
        timeout: float = 30.0,
        interval: float = 0.1,
        headers: Headers = None,
        query_params: Query = None,
    ) -> None:
        """Wait until the server (and ``model_name``, when given) is ready.

        Not in NVIDIA's client. Refused connections and errors while waiting count as "not
        ready yet".

        Parameters
        ----------
        model_name : str, optional
            Also wait for this model to be ready.
        model_version : str
            The model version ("" for the server's choice).
        timeout : float
            The longest wait in seconds. Default 30.
        interval : float
            Seconds between checks. Default 0.1.
        headers : dict, optional
            Headers for the health requests.
        query_params : dict, optional
            Query parameters for the health requests.

        Raises
        ------
        InferenceServerDeadlineExceededError
            If the server or model is still not ready after ``timeout`` seconds; the message
            names which, and the last error seen.
        """

        def check(what: str, remaining: float) -> bool:
            if what == "server":
                return bool(self._run(self._c_server_ready(headers, query_params), remaining))
            assert model_name is not None
            call = self._c_model_ready(model_name, model_version, headers, query_params)
            return bool(self._run(call, remaining))

        wait_sync(check, model_name, timeout, interval, not_ready_error)

    # -- health and metadata -------------------------------------------------------------------

    def is_server_live(self, headers: Headers = None, query_params: Query = None) -> bool:
        """Contact the inference server and get liveness.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        bool
            True if server is live, False if server is not live.

        Raises
        ------
        Exception
            If unable to get liveness.
        """
        return self._run(self._c_server_live(headers, query_params))

    def is_server_ready(self, headers: Headers = None, query_params: Query = None) -> bool:
        """Contact the inference server and get readiness.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        bool
            True if server is ready, False if server is not ready.
        """
        return self._run(self._c_server_ready(headers, query_params))

    def is_model_ready(
        self,
        model_name: str,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> bool:
        """Contact the inference server and get the readiness of specified model.

        Parameters
        ----------
        model_name : str
            The name of the model to check for readiness.
        model_version : str
            The version of the model to check for readiness. The default value is an empty
            string which means then the server will choose a version based on the model and
            internal policy.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        bool
            True if the model is ready, False if not ready.
        """
        return self._run(self._c_model_ready(model_name, model_version, headers, query_params))

    def get_server_metadata(self, headers: Headers = None, query_params: Query = None) -> Any:
        """Contact the inference server and get its metadata.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the metadata.

        Raises
        ------
        InferenceServerException
            If unable to get server metadata.
        """
        return self._run(self._c_server_metadata(headers, query_params))

    def get_model_metadata(
        self,
        model_name: str,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        """Contact the inference server and get the metadata for specified model.

        Parameters
        ----------
        model_name : str
            The name of the model.
        model_version : str
            The version of the model to get metadata. The default value is an empty string
            which means then the server will choose a version based on the model and internal
            policy.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the metadata.

        Raises
        ------
        InferenceServerException
            If unable to get model metadata.
        """
        return self._run(self._c_model_metadata(model_name, model_version, headers, query_params))

    def get_model_config(
        self,
        model_name: str,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        """Contact the inference server and get the configuration for specified model.

        Parameters
        ----------
        model_name : str
            The name of the model.
        model_version : str
            The version of the model to get configuration. The default value is an empty
            string which means then the server will choose a version based on the model and
            internal policy.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the model config.

        Raises
        ------
        InferenceServerException
            If unable to get model configuration.
        """
        return self._run(self._c_model_config(model_name, model_version, headers, query_params))

    # -- model repository ------------------------------------------------------------------------

    def get_model_repository_index(
        self, headers: Headers = None, query_params: Query = None
    ) -> Any:
        """Get the index of model repository contents.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        list
            The JSON list holding the model repository index.

        Raises
        ------
        InferenceServerException
            If unable to get the repository index.
        """
        return self._run(self._c_repository_index(headers, query_params))

    def load_model(
        self,
        model_name: str,
        headers: Headers = None,
        query_params: Query = None,
        config: str | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> None:
        """Request the inference server to load or reload specified model.

        Parameters
        ----------
        model_name : str
            The name of the model to be loaded.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.
        config : str
            Optional JSON representation of a model config provided for the load request;
            if provided, this config will be used for loading the model.
        files : dict
            Optional dictionary specifying file path (with "file:" prefix) in the override
            model directory to the file content as bytes. The files will form the model
            directory that the model will be loaded from. If specified, 'config' must be
            provided to be the model configuration of the override model directory.

        Raises
        ------
        InferenceServerException
            If unable to load the model.
        """
        self._run(self._c_load_model(model_name, headers, query_params, config, files))
        if self._verbose:
            print(f"Loaded model '{model_name}'")

    def unload_model(
        self,
        model_name: str,
        headers: Headers = None,
        query_params: Query = None,
        unload_dependents: bool = False,
    ) -> None:
        """Request the inference server to unload specified model.

        Parameters
        ----------
        model_name : str
            The name of the model to be unloaded.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.
        unload_dependents : bool
            Whether the dependents of the model should also be unloaded.

        Raises
        ------
        InferenceServerException
            If unable to unload the model.
        """
        self._run(self._c_unload_model(model_name, headers, query_params, unload_dependents))
        if self._verbose:
            print(f"Unloaded model '{model_name}'")

    def get_inference_statistics(
        self,
        model_name: str = "",
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        """Get the inference statistics for the specified model name and version.

        Parameters
        ----------
        model_name : str
            The name of the model to get statistics. The default value is an empty string,
            which means statistics of all models will be returned.
        model_version : str
            The version of the model to get inference statistics. The default value is an
            empty string which means then the server will return the statistics of all
            available model versions.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the model inference statistics.

        Raises
        ------
        InferenceServerException
            If unable to get the model inference statistics.
        """
        return self._run(self._c_statistics(model_name, model_version, headers, query_params))

    # -- trace and log settings ------------------------------------------------------------------

    def update_trace_settings(
        self,
        model_name: str | None = None,
        settings: Mapping[str, Any] | None = None,
        headers: Headers = None,
        query_params: Query = None,
    ) -> Any:
        """Update the trace settings for the specified model name, or global trace settings
        if model name is not given.

        Parameters
        ----------
        model_name : str
            The name of the model to update trace settings. Specifying None or empty string
            will update the global trace settings. The default value is None.
        settings : dict
            The new trace setting values. Only the settings listed will be updated. If a
            trace setting is listed in the dictionary with a value of 'None', that setting
            will be cleared.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the updated trace settings.

        Raises
        ------
        InferenceServerException
            If unable to update the trace settings.
        """
        return self._run(self._c_update_trace(model_name, settings, headers, query_params))

    def get_trace_settings(
        self, model_name: str | None = None, headers: Headers = None, query_params: Query = None
    ) -> Any:
        """Get the trace settings for the specified model name, or global trace settings if
        model name is not given.

        Parameters
        ----------
        model_name : str
            The name of the model to get trace settings. Specifying None or empty string will
            return the global trace settings. The default value is None.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the trace settings.

        Raises
        ------
        InferenceServerException
            If unable to get the trace settings.
        """
        return self._run(self._c_get_trace(model_name, headers, query_params))

    def update_log_settings(
        self, settings: Mapping[str, Any], headers: Headers = None, query_params: Query = None
    ) -> Any:
        """Update the global log settings.

        Parameters
        ----------
        settings : dict
            The new log setting values. Only the settings listed will be updated.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the updated log settings.

        Raises
        ------
        InferenceServerException
            If unable to update the log settings.
        """
        return self._run(self._c_update_log(settings, headers, query_params))

    def get_log_settings(self, headers: Headers = None, query_params: Query = None) -> Any:
        """Get the global log settings.

        Parameters
        ----------
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The JSON dict holding the log settings.

        Raises
        ------
        InferenceServerException
            If unable to get the log settings.
        """
        return self._run(self._c_get_log(headers, query_params))

    # -- shared memory ---------------------------------------------------------------------------

    def get_system_shared_memory_status(
        self, region_name: str = "", headers: Headers = None, query_params: Query = None
    ) -> Any:
        """Request system shared memory status from the server.

        Parameters
        ----------
        region_name : str
            The name of the region to query status. The default value is an empty string,
            which means that the status of all active system shared memory will be returned.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        list
            The JSON list holding system shared memory status.

        Raises
        ------
        InferenceServerException
            If unable to get the status of specified shared memory.
        """
        return self._run(self._c_system_shm_status(region_name, headers, query_params))

    def register_system_shared_memory(
        self,
        name: str,
        key: str,
        byte_size: int,
        offset: int = 0,
        headers: Headers = None,
        query_params: Query = None,
    ) -> None:
        """Request the server to register a system shared memory with the following
        specification.

        Parameters
        ----------
        name : str
            The name of the region to register.
        key : str
            The key of the underlying memory object that contains the system shared memory
            region.
        byte_size : int
            The size of the system shared memory region, in bytes.
        offset : int
            Offset, in bytes, within the underlying memory object to the start of the system
            shared memory region. The default value is zero.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Raises
        ------
        InferenceServerException
            If unable to register the specified system shared memory.
        """
        self._run(self._c_system_shm_register(name, key, byte_size, offset, headers, query_params))
        if self._verbose:
            print(f"Registered system shared memory with name '{name}'")

    def unregister_system_shared_memory(
        self, name: str = "", headers: Headers = None, query_params: Query = None
    ) -> None:
        """Request the server to unregister a system shared memory with the specified name.

        Parameters
        ----------
        name : str
            The name of the region to unregister. The default value is empty string which
            means all the system shared memory regions will be unregistered.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Raises
        ------
        InferenceServerException
            If unable to unregister the specified system shared memory region.
        """
        self._run(self._c_system_shm_unregister(name, headers, query_params))

    def get_cuda_shared_memory_status(
        self, region_name: str = "", headers: Headers = None, query_params: Query = None
    ) -> Any:
        """Request cuda shared memory status from the server.

        Parameters
        ----------
        region_name : str
            The name of the region to query status. The default value is an empty string,
            which means that the status of all active cuda shared memory will be returned.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        list
            The JSON list holding cuda shared memory status.

        Raises
        ------
        InferenceServerException
            If unable to get the status of specified shared memory.
        """
        return self._run(self._c_cuda_shm_status(region_name, headers, query_params))

    def register_cuda_shared_memory(
        self,
        name: str,
        raw_handle: bytes,
        device_id: int,
        byte_size: int,
        headers: Headers = None,
        query_params: Query = None,
    ) -> None:
        """Request the server to register a cuda shared memory with the following
        specification.

        Parameters
        ----------
        name : str
            The name of the region to register.
        raw_handle : bytes
            The raw serialized cudaIPC handle in base64 encoding (as
            ``cuda_shared_memory.get_raw_handle`` returns it).
        device_id : int
            The GPU device ID on which the cudaIPC handle was created.
        byte_size : int
            The size of the cuda shared memory region, in bytes.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Raises
        ------
        InferenceServerException
            If unable to register the specified cuda shared memory.
        """
        self._run(
            self._c_cuda_shm_register(name, raw_handle, device_id, byte_size, headers, query_params)
        )

    def unregister_cuda_shared_memory(
        self, name: str = "", headers: Headers = None, query_params: Query = None
    ) -> None:
        """Request the server to unregister a cuda shared memory with the specified name.

        Parameters
        ----------
        name : str
            The name of the region to unregister. The default value is empty string which
            means all the cuda shared memory regions will be unregistered.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Raises
        ------
        InferenceServerException
            If unable to unregister the specified cuda shared memory region.
        """
        self._run(self._c_cuda_shm_unregister(name, headers, query_params))

    # -- inference -------------------------------------------------------------------------------

    def infer(
        self,
        model_name: str,
        inputs: Sequence[InferInput],
        model_version: str = "",
        outputs: Sequence[InferRequestedOutput] | None = None,
        request_id: str = "",
        sequence_id: int | str = 0,
        sequence_start: bool = False,
        sequence_end: bool = False,
        priority: int = 0,
        timeout: int | None = None,
        headers: Headers = None,
        query_params: Query = None,
        request_compression_algorithm: str | None = None,
        response_compression_algorithm: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> InferResult:
        """Run synchronous inference using the supplied 'inputs' requesting the outputs
        specified by 'outputs'.

        Parameters
        ----------
        model_name : str
            The name of the model to run inference.
        inputs : list
            A list of InferInput objects, each describing data for a input tensor required by
            the model.
        model_version : str
            The version of the model to run inference. The default value is an empty string
            which means then the server will choose a version based on the model and internal
            policy.
        outputs : list
            A list of InferRequestedOutput objects, each describing how the output data must
            be returned. If not specified all outputs produced by the model will be returned
            using default settings.
        request_id : str
            Optional identifier for the request. If specified will be returned in the
            response. Default value is an empty string which means no request_id will be
            used.
        sequence_id : int or str
            The unique identifier for the sequence being represented by the object. A value
            of 0 or "" means that the request does not belong to a sequence.
        sequence_start : bool
            Indicates whether the request being added marks the start of the sequence.
        sequence_end : bool
            Indicates whether the request being added marks the end of the sequence.
        priority : int
            Indicates the priority of the request. Priority value zero indicates that the
            default priority level should be used.
        timeout : int
            The timeout value for the request, in microseconds. If the request cannot be
            completed within the time the server can take a model-specific action such as
            terminating the request. If not provided, the server will handle the request
            using default setting for the model.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.
        request_compression_algorithm : str
            Optional HTTP compression algorithm to use for the request body on client side:
            'deflate' or 'gzip'. Default None (no compression).
        response_compression_algorithm : str
            Optional HTTP compression algorithm to request for the response body: 'deflate'
            or 'gzip'. Default None (no compression).
        parameters : dict
            Optional custom parameters to be included in the inference request.

        Returns
        -------
        InferResult
            The object holding the result of the inference.

        Raises
        ------
        InferenceServerException
            If server fails to perform inference.
        """
        options = InferOptions(
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters
        )
        return self._run(
            self._c_infer(
                model_name,
                inputs,
                model_version,
                outputs,
                options,
                headers,
                query_params,
                request_compression_algorithm,
                response_compression_algorithm,
            )
        )

    def async_infer(
        self,
        model_name: str,
        inputs: Sequence[InferInput],
        model_version: str = "",
        outputs: Sequence[InferRequestedOutput] | None = None,
        request_id: str = "",
        sequence_id: int | str = 0,
        sequence_start: bool = False,
        sequence_end: bool = False,
        priority: int = 0,
        timeout: int | None = None,
        headers: Headers = None,
        query_params: Query = None,
        request_compression_algorithm: str | None = None,
        response_compression_algorithm: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> InferAsyncRequest:
        """Run asynchronous inference using the supplied 'inputs' requesting the outputs
        specified by 'outputs'.

        The request is encoded before this returns (the input arrays may be reused
        afterwards) and is sent at once; at most ``concurrency`` requests share the wire and
        at most ``max_greenlets`` are in progress.

        Parameters
        ----------
        model_name : str
            The name of the model to run inference.
        inputs : list
            A list of InferInput objects, each describing data for a input tensor required by
            the model.
        model_version : str
            The version of the model to run inference ("" for the server's choice).
        outputs : list
            A list of InferRequestedOutput objects (None: all outputs, default settings).
        request_id : str
            Optional identifier for the request.
        sequence_id : int or str
            The unique identifier for the sequence (0 or "": not in a sequence).
        sequence_start : bool
            Indicates whether the request being added marks the start of the sequence.
        sequence_end : bool
            Indicates whether the request being added marks the end of the sequence.
        priority : int
            Indicates the priority of the request (0: the default priority).
        timeout : int
            The timeout value for the request, in microseconds.
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.
        request_compression_algorithm : str
            Optional compression of the request body: 'deflate' or 'gzip'.
        response_compression_algorithm : str
            Optional compression to request for the response body: 'deflate' or 'gzip'.
        parameters : dict
            Optional custom parameters to be included in the inference request.

        Returns
        -------
        InferAsyncRequest
            The handle to the asynchronous inference request.

        Raises
        ------
        InferenceServerException
            If the request cannot be built or the client is closed.
        """
        call = self._c_infer(
            model_name,
            inputs,
            model_version,
            outputs,
            InferOptions(
                request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters
            ),
            headers,
            query_params,
            request_compression_algorithm,
            response_compression_algorithm,
        )
        job = self._submit(call)
        if self._verbose:
            print("Sent request" + (f" '{request_id}'" if request_id else ""))
        return InferAsyncRequest(job, self._verbose)
