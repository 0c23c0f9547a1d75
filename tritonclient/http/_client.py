"""The synchronous HTTP/REST client (``tritonclient.http.InferenceServerClient``).

Transport
    Requests are made with geventhttpclient through
    :class:`~tritonclient._transport.gevent.GeventTransport`; **the caller's program needs no
    monkey-patching** (and a monkey-patched program is not disturbed).  Plain calls run in the
    calling thread with that thread's own connections, ``async_infer`` (and calls made inside
    a gevent hub callback) on the transport's private hub thread.  Consequences:

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

import ssl as _ssl
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from tritonclient._codec.types import infer_options
from tritonclient._ready import steps, wait_sync
from tritonclient._retry import check_retry_policy, retry_sync
from tritonclient._transport.gevent import GeventTransport
from tritonclient._transport.gevent_loop import Job
from tritonclient._transport.replicas import GeventReplicas, replica_urls
from tritonclient.http import _seams
from tritonclient.http._common import (
    ClientCore,
    HttpCall,
    _parse_ok,
    is_retryable,
    not_ready_error,
    parse_url,
)
from tritonclient.http._generate import GenerateStream
from tritonclient.http._infer_input import InferInput
from tritonclient.http._infer_result import InferResult
from tritonclient.http._requested_output import InferRequestedOutput
from tritonclient.utils import BalancingPolicy, RetryPolicy, raise_error

__all__ = ["GenerateStream", "InferAsyncRequest", "InferenceServerClient"]

#: NVIDIA's module function, which tests patch; looked up here at call time, with
#: ``InferResult``, once a client's seams are in use (see :mod:`tritonclient.http._seams`).
_raise_if_error = _seams.raise_if_error
_UNPATCHED_INFER_RESULT = InferResult


def _seams_patched() -> bool:
    """Whether ``_raise_if_error`` or ``InferResult`` of this module is patched."""
    return (
        _raise_if_error is not _seams.raise_if_error or InferResult is not _UNPATCHED_INFER_RESULT
    )


T = TypeVar("T")
Headers = Mapping[str, Any] | None
Query = Mapping[str, Any] | None


#: Bytes read from the socket at a time.
_READ_BLOCK = 64 * 1024


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
    url : str or list of str
        The inference server name, port and optional base path in the following format:
        ``host:port/<base-path>``, e.g. ``'localhost:8000'``.  (Not in NVIDIA's client.) A
        list of them, one per replica (same base path): calls are spread over the replicas,
        each with its own connections, as ``load_balancing`` says (see "Several servers" in
        the README).
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
        Inference and state-changing calls are never retried (inference outside sequences
        is, with ``RetryPolicy(retry_infer=True)``). With several replicas, a retried call
        goes to another replica. Default None: no retries.
    load_balancing : str or tritonclient.utils.BalancingPolicy, keyword-only
        (Not in NVIDIA's client.) With a list of urls: ``"round_robin"`` (default) or
        ``"least_outstanding"``, or a ``BalancingPolicy`` that also sets the readiness probes
        and ejection times. Ignored for a single url.

    Raises
    ------
    Exception
        If unable to create a client.
    """

    def __init__(
        self,
        url: str | Sequence[str],
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
        load_balancing: str | BalancingPolicy = "round_robin",
    ) -> None:
        self._transport: GeventTransport | GeventReplicas | None = None
        policy = check_retry_policy(retry_policy)
        servers, base, balancing = replica_urls(
            url, lambda text: parse_url(text, ssl), load_balancing
        )

        timeouts = (connection_timeout, network_timeout)
        tls = (ssl, ssl_options, ssl_context_factory, insecure)

        def make(host: str, port: int) -> GeventTransport:
            return GeventTransport(host, port, concurrency, timeouts, max_greenlets, tls)

        super().__init__(base, verbose, policy)
        if balancing is None:  # one server (a url string): exactly as before
            self._transport = make(*servers[0])
        else:
            self._transport = GeventReplicas(servers, base, balancing, make)

    def __enter__(self) -> InferenceServerClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        transport = getattr(self, "_transport", None)
        if transport is not None:
            transport.abandon()

    def close(self) -> None:
        """Close the client: wait for requests in progress, then close the connections.

        Any future calls to the server will raise an error.  May be called from any thread,
        more than once.  The calling thread's connections and the ``async_infer`` thread are
        closed at once; other threads' idle connections are closed by those threads at their
        next call (through any client) or when they exit.
        """
        if self._transport is not None:
            self._transport.close()
        _seams.close_seam(self._seam)  # a stub of the caller's, as NVIDIA's client closes its

    @property
    def _client_stub(self) -> Any:
        """NVIDIA's geventhttpclient stub, kept as a compatibility seam for tests that replace
        it: once read or set, every call goes through its ``get``/``post`` (by default
        :class:`~tritonclient.http._seams.StubSeam`, over this client's transport).  See
        :mod:`tritonclient.http._seams`."""
        if self._seam is None:
            self._seam = _seams.StubSeam(self._transport)
        return self._seam

    @_client_stub.setter
    def _client_stub(self, stub: Any) -> None:
        self._seam = stub

    def _submit(self, call: HttpCall[T]) -> Job[T]:
        if self._transport is None:  # pragma: no cover - only if __init__ failed
            raise_error("the client is closed")
        if self._seam is not None:  # through the stub, in this thread (see _seams)
            return Job.run_now(lambda: self._run_seamed(call, None))
        if _seams_patched():
            return self._transport.submit(call, lambda reply: self._read_seamed(call, reply))
        return self._transport.submit(call, lambda reply: self._finish(call, reply))

    def _run_seamed(self, call: HttpCall[Any], timeout: float | None) -> Any:
        """``call`` as NVIDIA's client makes it: through the stub when there is one."""
        seam = self._seam
        if seam is None:
            assert self._transport is not None
            response: Any = self._transport.send(call, timeout)
        elif call.method == "GET":
            response = seam.get(call.path, headers=_seams.stub_headers(call))
        else:
            headers = _seams.stub_headers(call)
            response = seam.post(request_uri=call.path, body=call.payload(), headers=headers)
        return self._read_seamed(call, response)

    def _read_seamed(self, call: HttpCall[Any], response: Any) -> Any:
        """The answer to ``call`` read as NVIDIA's client reads it, through this module's
        ``_raise_if_error`` and ``InferResult`` (patched or not)."""
        if call.parse is _parse_ok:  # health and readiness: the status alone
            return response.status_code == 200
        _raise_if_error(response)
        if call.kind == "infer":
            return InferResult(response, self._verbose)
        return self._finish(call, _seams.reply_of(response))

    def _run(self, call: HttpCall[T], timeout: float | None = None) -> T:
        transport = self._transport
        if transport is None:  # pragma: no cover - only if __init__ failed
            raise_error("the client is closed")
        if self._seam is not None or _seams_patched():
            return self._run_seamed(call, timeout)  # type: ignore[no-any-return]
        if self._retry_policy is None or not call.idempotent:  # one attempt: the usual call
            return self._finish(call, transport.send(call, timeout))
        return retry_sync(
            lambda: self._finish(call, transport.send(call, timeout)),
            self._retry_policy if call.idempotent else None,
            is_retryable,
        )

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

        wait_sync(check, steps(model_name, timeout, interval, not_ready_error))

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
        options = infer_options(
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
            infer_options(
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

    # -- the generate extension (not in NVIDIA's client) ----------------------------------

    def generate(
        self,
        model_name: str,
        inputs: Mapping[str, Any],
        parameters: Mapping[str, Any] | None = None,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> dict[str, Any]:
        """Run the model once through Triton's generate extension (``POST .../generate``).

        An extension of NVIDIA's API: ``tritonclient`` has no client for the generate
        endpoints.  The request and answer follow Triton's
        ``docs/protocol/extension_generate.md`` (provisional upstream): ``inputs`` is the
        request object, e.g. ``{"text_input": "...", "max_tokens": 16}``, whose members the
        server maps onto the model's inputs by name (a scalar or a list) and, for other names,
        request parameters.

        Parameters
        ----------
        model_name : str
            The name of the model.
        inputs : dict
            The generate request object's members: each model input by name (a str, number,
            bool or a list of them; numpy values are converted), and parameters by name.
        parameters : dict
            Optional ``parameters`` object (names to str, number or bool).
        model_version : str
            The version of the model ("" for the server's choice).
        headers : dict
            Optional dictionary specifying additional HTTP headers to include in the request.
        query_params : dict
            Optional url query parameters to use in network transaction.

        Returns
        -------
        dict
            The response object: ``model_name``, ``model_version``, and every output by name
            (an output of one element as a scalar, e.g. ``{"text_output": "..."}``).

        Raises
        ------
        InferenceServerException
            The server's error as the subclass of its status (400: the inference failed, or
            the model gave other than exactly one response; use :meth:`generate_stream` for
            a decoupled model that streams); connection, timeout and protocol errors as for
            :meth:`infer`.
        """
        call = self._c_generate(
            model_name, inputs, parameters, model_version, headers, query_params, stream=False
        )
        return self._run(call)

    def generate_stream(
        self,
        model_name: str,
        inputs: Mapping[str, Any],
        parameters: Mapping[str, Any] | None = None,
        model_version: str = "",
        headers: Headers = None,
        query_params: Query = None,
    ) -> GenerateStream:
        """Stream the model's responses through Triton's generate extension
        (``POST .../generate_stream``, Server-Sent Events).

        An extension of NVIDIA's API (see :meth:`generate`).  The request is sent when
        iteration starts, in the thread that iterates; each response comes as soon as its
        event has arrived.  ``network_timeout`` bounds each wait for the next event, not the
        whole stream.  Leaving the loop early (``break``, :meth:`GenerateStream.close`, an
        exception, garbage collection) closes the connection, and the server cancels the
        request.

        Parameters
        ----------
        model_name, inputs, parameters, model_version, headers, query_params
            As for :meth:`generate`.

        Returns
        -------
        GenerateStream
            An iterator of response objects (dicts), also a context manager.

        Raises
        ------
        InferenceServerException
            While iterating: the server's error before the stream as the subclass of its
            status; an error event in the stream, after the responses before it, as
            ``InferenceServerInvalidArgumentError`` (status ``"400"``, what :meth:`generate`
            raises for the same failure); ``InferenceServerConnectionError`` for a stream cut
            short; ``InferenceServerDeadlineExceededError`` when no event comes in time.
        """
        call = self._c_generate(
            model_name, inputs, parameters, model_version, headers, query_params, stream=True
        )
        transport = self._transport
        if transport is None:  # pragma: no cover - only if __init__ failed
            raise_error("the client is closed")
        return GenerateStream(lambda: transport.open_stream(call))
