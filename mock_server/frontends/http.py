"""The HTTP/REST frontend of the bundled server (KServe v2 + Triton extensions), on aiohttp.

:class:`HttpFrontend` serves every endpoint of ``docs/protocol.md`` section 3.2 over a
:class:`~mock_server.core.server.CoreServer`.  The wire format (JSON bodies, the binary tensor
extension, raw binary requests, compression, generate bodies) is :mod:`tritonclient._codec`
(``http_server``, ``http_control``, ``http_body``, ``generate``), shared with the HTTP clients;
this module only routes, moves bytes and maps errors.  Inference is
:mod:`mock_server.frontends.http_infer` (``/infer``) and
:mod:`mock_server.frontends.http_generate` (``/generate``, ``/generate_stream``), both through
the core's dataplane (:mod:`mock_server.core.dataplane`); request bodies are read by
:class:`~mock_server.frontends.http_support.RequestBodies`.

Threads and the event loop
    Model code never runs on the event loop: the dataplane only checks and queues a request,
    and the model's instance threads deliver responses through the request's callback, which
    hands them to the loop through :mod:`mock_server.frontends._delivery` (one wake-up per
    burst).
    Blocking core calls (load/unload, statistics, repository scans, shared-memory registration)
    run in a small thread pool, as does the decoding of large request bodies and the encoding of
    large responses.  When a client disconnects, its handler is cancelled and so is its request
    (:meth:`InferRequest.cancel`), which a running model sees as ``is_cancelled()``.

Status codes
    Core errors map by kind as in section 8 (INVALID_ARG, UNKNOWN, ALREADY_EXISTS,
    CANCELLED: 400; NOT_FOUND: 404; INTERNAL: 500; UNSUPPORTED: 501; UNAVAILABLE: 503); codec
    errors carry their own status (JSON parsing and typing: 500).  Frontend-only statuses: 404
    ``{"error":"Not Found"}`` for unknown routes, 405 ``{"error":"Method Not Allowed"}``, 403 for
    a restricted API without its header, 400 with an empty body for not-live / not-ready, 400
    ``Model version not ready``, 501 plus ``Accept-Encoding: gzip, deflate`` for an unsupported
    ``Content-Encoding``.

Following Triton 2.51, as the differential suite (``tests/conformance``) checks
    * Requests are read in the order Triton's frontend reads them and its errors keep their
      words, status and Content-Type (``text/plain`` where Triton sets none, see
      :data:`PLAIN`); path segments are not percent-decoded; a compressed inference body that
      does not inflate reaches the parser as what did inflate.
    * A non-UTF-8 BYTES output requested as JSON is written raw into the JSON string, as
      Triton does; the codec's JSON reader gives those bytes back exactly.
    * ``/generate`` and ``/generate_stream``: see :mod:`mock_server.frontends.http_generate`.

Decisions of this server
    * ``--http-max-input-size`` (``max_input_size``; 64 MiB by default under the 2.73
      profile, no limit by default under 2.51) limits the JSON part of a request (the whole
      body when it has no binary data), raw binary requests, generate requests and the JSON
      bodies of the other endpoints, after decompression; binary tensor data that follows an
      inference JSON header is not limited by it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from aiohttp import web, web_protocol, web_runner
from aiohttp.log import access_logger

from tritonclient._codec import http_control

from ..core.config_json import config_to_json
from ..core.dataplane import Dataplane
from ..core.server import CoreServer
from .groups import API_GROUPS
from .http_framing import LenientServer

try:
    from .http_fast import FastInfer, FastInferServer
except ImportError:  # httptools is not installed: aiohttp reads every request
    FastInferServer = None  # type: ignore[assignment,misc]
from .http_generate import GenerateEndpoints
from .http_infer import InferEndpoint
from .http_support import (
    JSON,
    PLAIN,
    ChunkedBodyTooLong,
    HttpError,
    RequestBodies,
    VerboseAccessLogger,
    empty,
    error_for,
    error_response,
    expected_error,
    filter_kwargs,
    json_response,
)

__all__ = ["API_GROUPS", "FRONTEND_EXTENSIONS", "HttpFrontend"]

log = logging.getLogger("mock_server.http")

#: Extensions this frontend implements on top of the core's.  Triton's server metadata lists
#: the same extensions over both protocols and does not list ``generate``, which it serves.
FRONTEND_EXTENSIONS = (
    "binary_tensor_data",
    "system_shared_memory",
    "cuda_shared_memory",
    "trace",
    "logging",
)


#: Bodies (or outputs) larger than this are decoded (encoded) off the event loop.
_OFFLOAD_BYTES = 1 << 20

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Route:
    pattern: re.Pattern[str]
    group: str
    handler: str


def _route(pattern: str, group: str, handler: str) -> _Route:
    return _Route(re.compile(pattern), group, handler)


_MODEL_ROUTE = _route(
    r"/v2/models/(?P<model>[^/]+)(?:/versions/(?P<version>[0-9]+))?"
    r"(?:/(?P<action>infer|generate|generate_stream|ready|config|stats|trace/setting))?",
    "",
    "_model",
)

# Routing precedence follows Triton: the exact stats/logging paths first, then the model route.
_ROUTES = (
    _route(r"/v2/models/stats", "statistics", "_all_stats"),
    _route(r"/v2/logging", "logging", "_logging"),
    _MODEL_ROUTE,
    _route(r"/v2", "metadata", "_server_metadata"),
    _route(r"/v2/health/(?P<what>live|ready)", "health", "_health"),
    _route(
        r"/v2/(?P<kind>system|cuda)sharedmemory(?:/region/(?P<region>[^/]+))?"
        r"/(?P<action>status|register|unregister)",
        "shared-memory",
        "_shared_memory",
    ),
    _route(r"/v2/repository(?:/(?P<repo>[^/]+))?/index", "model-repository", "_index"),
    _route(
        r"/v2/repository(?:/(?P<repo>[^/]+))?/models/(?P<model>[^/]+)/(?P<action>load|unload)",
        "model-repository",
        "_load_unload",
    ),
    _route(r"/v2/trace/setting", "trace", "_global_trace"),
)

# The API group and allowed methods of each action on the model route.
_MODEL_ACTIONS: dict[str | None, tuple[str, tuple[str, ...]]] = {
    None: ("metadata", ("GET",)),
    "infer": ("inference", ("POST",)),
    "generate": ("inference", ("POST",)),
    "generate_stream": ("inference", ("POST",)),
    "ready": ("health", ("GET",)),
    "config": ("model-config", ("GET",)),
    "stats": ("statistics", ("GET",)),
    "trace/setting": ("trace", ("GET", "POST")),
}


#: Model-route actions whose method errors are ``text/plain`` (see :data:`PLAIN`).
_PLAIN_ACTIONS = frozenset({"ready", "infer"})


class HttpFrontend:
    """Serve a :class:`CoreServer` over HTTP/REST.

    Parameters
    ----------
    core : CoreServer
        The started core.
    host : str, optional
        Address to bind (default ``127.0.0.1``).
    port : int, optional
        Port to bind (default 8000); 0 picks a free one (see the value :meth:`start` returns).
    ssl_context : ssl.SSLContext, optional
        Serve HTTPS with this context.
    restricted_apis : dict, optional
        ``{group: (header, value)}``: requests to an endpoint of ``group`` (one of
        :data:`API_GROUPS`) must carry header ``header`` with ``value``, else 403.
    max_input_size : int, optional
        ``--http-max-input-size``: the largest JSON request part / raw binary input accepted
        (not given: the compatibility profile's default, see
        :meth:`~mock_server.core.server.CoreServer.http_max_input_size`).
    header_forward_pattern : str, optional
        ``--http-header-forward-pattern``: request headers whose name matches this regular
        expression are passed to inference requests as string parameters.
    worker_threads : int, optional
        Threads for blocking core calls and large (de)serializations (default 8).
    shutdown_timeout : float, optional
        How long :meth:`stop` waits for in-flight requests (default 5 s).
    metrics : callable, optional
        Writes the server's Prometheus metrics: the generate endpoints' load reports
        (:mod:`~mock_server.frontends.load_report`) read them; without it there are none.

    Raises
    ------
    ValueError
        For an unknown API group or an invalid header-forward pattern.
    """

    def __init__(
        self,
        core: CoreServer,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        ssl_context: ssl.SSLContext | None = None,
        restricted_apis: dict[str, tuple[str, str]] | None = None,
        max_input_size: int | None = None,
        header_forward_pattern: str | None = None,
        worker_threads: int = 8,
        shutdown_timeout: float = 5.0,
        metrics: Callable[[], bytes] | None = None,
    ) -> None:
        unknown = set(restricted_apis or {}) - set(API_GROUPS)
        if unknown:
            raise ValueError(
                f"unknown restricted API group(s) {sorted(unknown)}; expected some of "
                f"{sorted(API_GROUPS)}"
            )
        self._core = core
        self._host = host
        self._port = port
        self._ssl_context = ssl_context
        self._restricted = dict(restricted_apis or {})
        self._bodies = RequestBodies(
            core.http_max_input_size(max_input_size), max_chunks=core.compat.http_max_chunks
        )
        self._forward = core.header_forward(header_forward_pattern)
        self._metrics = metrics if core.compat.endpoint_load_metrics else None
        self._worker_threads = worker_threads
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.ServerRunner | None = None
        #: The server (aiohttp's, or the fast path's) while started.
        self._server: LenientServer | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._bound_port: int | None = None
        self._dataplane = Dataplane(core)
        self._infer = InferEndpoint(self)
        self._generate = GenerateEndpoints(self)

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def port(self) -> int | None:
        """The bound port once started, else None."""
        return self._bound_port

    async def start(self) -> int:
        """Bind and start serving.

        Returns
        -------
        int
            The bound port (useful with ``port=0``).
        """
        if self._runner is not None:
            raise RuntimeError("the HTTP frontend is already started")
        self._executor = ThreadPoolExecutor(
            max_workers=self._worker_threads,
            thread_name_prefix="http-frontend",
        )
        server_kwargs = filter_kwargs(web.Server.__init__, handler_cancellation=True)
        # Compressed bodies are inflated here (with Triton's errors), not by aiohttp.
        server_kwargs.update(
            filter_kwargs(web_protocol.RequestHandler.__init__, auto_decompress=False)
        )
        # One access line per request only with verbose logging, as Triton (formatting and
        # writing it costs a small request's handling a noticeable share of its CPU).
        server_kwargs.update(
            filter_kwargs(
                web_protocol.RequestHandler.__init__, access_log_class=VerboseAccessLogger
            )
        )
        # A request with Content-Length and Transfer-Encoding: chunked is read by its chunked
        # framing, as Triton reads it (aiohttp alone answers 400).  Without TLS, connections
        # start on the fast path for small inference requests (see http_fast).
        server: LenientServer
        if self._ssl_context is None and FastInferServer is not None:
            fast = FastInfer(self._fast_target, self._infer.answer)
            server = FastInferServer(self._handle, fast=fast, **server_kwargs)
        else:
            server = LenientServer(self._handle, **server_kwargs)
        self._server = server
        runner_kwargs = filter_kwargs(
            web_runner.BaseRunner.__init__, shutdown_timeout=self._shutdown_timeout
        )
        runner = web.ServerRunner(server, **runner_kwargs)
        await runner.setup()
        site_kwargs: dict[str, Any] = (
            {} if runner_kwargs else {"shutdown_timeout": self._shutdown_timeout}
        )
        site = web.TCPSite(
            runner, self._host, self._port, ssl_context=self._ssl_context, **site_kwargs
        )
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        self._runner = runner
        self._bound_port = int(runner.addresses[0][1])
        log.info("HTTP frontend listening on %s:%d", self._host, self._bound_port)
        return self._bound_port

    async def stop(self) -> None:
        """Stop serving: close the listening socket and connections (in-flight requests get up
        to ``shutdown_timeout`` to finish) and the worker threads."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        self._bound_port = None

    # -- plumbing ------------------------------------------------------------------------
    async def _blocking(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn(*args)`` in the worker threads."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    async def _maybe_blocking(self, size: int, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn`` inline when the work is small, in the worker threads otherwise."""
        if size > _OFFLOAD_BYTES:
            return await self._blocking(fn, *args)
        return fn(*args)

    def _fast_target(self, path: str) -> tuple[str, int] | None:
        """The model and version of an inference path the fast path may answer (see
        :class:`~.http_fast.FastInfer`): not while inference is restricted, headers are
        forwarded, or requests are logged (aiohttp's access log)."""
        if (
            "inference" in self._restricted
            or self._forward is not None
            or access_logger.isEnabledFor(logging.DEBUG)
        ):
            return None
        match = _MODEL_ROUTE.pattern.fullmatch(path)
        if match is None or match["action"] != "infer":
            return None
        version = match["version"]
        return match["model"], int(version) if version is not None else -1

    def _restricted_error(self, request: web.BaseRequest, group: str) -> web.Response | None:
        rule = self._restricted.get(group)
        if rule is None:
            return None
        key, value = rule
        if request.headers.get(key) == value:
            return None
        # Refused before a handler sets a Content-Type, so Triton labels it text/plain.
        return error_response(
            403, f"This API is restricted, expecting header '{key}'", content_type=PLAIN
        )

    # -- dispatch ------------------------------------------------------------------------
    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.rel_url.raw_path
        for route in _ROUTES:
            match = route.pattern.fullmatch(path)
            if match is None:
                continue
            params = {k: v for k, v in match.groupdict().items() if v is not None}
            group = route.group
            if route.handler == "_model":
                group = _MODEL_ACTIONS[params.get("action")][0]
            denied = self._restricted_error(request, group)
            if denied is not None:
                return denied
            handler: Callable[..., Awaitable[web.StreamResponse]] = getattr(self, route.handler)
            try:
                return await handler(request, **params)
            except (asyncio.CancelledError, ConnectionResetError):
                raise
            except Exception as exc:
                if not expected_error(exc):
                    log.exception("unexpected error handling %s %s", request.method, path)
                error = error_for(exc)
                response = error_response(
                    error.status, error.message, error.headers, error.content_type
                )
                if isinstance(exc, ChunkedBodyTooLong):
                    response.force_close()  # the rest of the body is not read
                return response
        return error_response(404, "Not Found", content_type=PLAIN)

    @staticmethod
    def _check_method(request: web.BaseRequest, *allowed: str, plain: bool = False) -> None:
        if request.method not in allowed:
            raise HttpError(405, "Method Not Allowed", content_type=PLAIN if plain else JSON)

    # -- health and metadata -------------------------------------------------------------
    async def _health(self, request: web.BaseRequest, what: str) -> web.StreamResponse:
        self._check_method(request, "GET", plain=True)
        ok = self._core.live() if what == "live" else self._core.ready()
        return empty(200 if ok else 400, "text/plain")

    async def _server_metadata(self, request: web.BaseRequest) -> web.StreamResponse:
        self._check_method(request, "GET")
        return json_response(self._core.metadata(FRONTEND_EXTENSIONS))

    async def _model(
        self,
        request: web.BaseRequest,
        model: str,
        version: str | None = None,
        action: str | None = None,
    ) -> web.StreamResponse:
        # Triton's ready and infer handlers set no Content-Type before checking the method.
        self._check_method(request, *_MODEL_ACTIONS[action][1], plain=action in _PLAIN_ACTIONS)
        # Path segments are used as sent, not percent-decoded (Triton does not decode them).
        name = model
        number = int(version) if version is not None else -1
        if action is None:
            metadata = await self._blocking(self._core.model_metadata, name, number)
            return json_response(metadata)
        if action == "ready":
            if self._core.model_ready(name, number):
                return empty(200, "text/plain")
            raise HttpError(400, "Model version not ready", content_type=PLAIN)
        if action == "config":
            config = self._core.model_config(name, number)
            return json_response(config_to_json(config))
        if action == "stats":
            stats = await self._blocking(self._core.statistics, name, number)
            return json_response({"model_stats": [asdict(each) for each in stats]})
        if action == "trace/setting":
            if version is not None:
                raise HttpError(404, "Not Found", content_type=PLAIN)
            return await self._trace(request, name)
        if action == "infer":
            return await self._infer.handle(request, name, number)
        return await self._generate.handle(
            request, name, number, stream=action == "generate_stream"
        )

    async def _all_stats(self, request: web.BaseRequest) -> web.StreamResponse:
        self._check_method(request, "GET")
        stats = await self._blocking(self._core.statistics)
        return json_response({"model_stats": [asdict(each) for each in stats]})

    # -- repository ----------------------------------------------------------------------
    async def _index(self, request: web.BaseRequest, repo: str | None = None) -> web.StreamResponse:
        self._check_method(request, "POST")
        ready = http_control.parse_index_request(
            await self._bodies.json(request), strict_ready=self._core.compat.http_checks_2_73
        )
        rows = await self._blocking(self._core.repository_index, ready)
        cleaned = [{k: v for k, v in row.items() if v not in ("", None)} for row in rows]
        return json_response(cleaned)

    async def _load_unload(
        self, request: web.BaseRequest, model: str, action: str, repo: str | None = None
    ) -> web.StreamResponse:
        self._check_method(request, "POST")
        if repo is not None:
            raise HttpError(501, "'repository_name' specification is not supported")
        name = model
        body = await self._bodies.json(request)
        if action == "load":
            config, files = http_control.parse_load_request(body)
            await self._blocking(self._core.load_model, name, config, files)
        else:
            dependents = http_control.parse_unload_request(body)
            await self._blocking(self._core.unload_model, name, dependents)
        return empty()

    # -- shared memory -------------------------------------------------------------------
    async def _shared_memory(
        self, request: web.BaseRequest, kind: str, action: str, region: str | None = None
    ) -> web.StreamResponse:
        shm = self._core.shm
        name = region
        if action == "status":
            self._check_method(request, "GET")
            if kind == "system":
                return json_response([asdict(r) for r in shm.system_status(name)])
            return json_response([asdict(r) for r in shm.cuda_status(name)])
        self._check_method(request, "POST")
        shm.check_allowed()  # before anything else of a register or unregister, as Triton
        if action == "unregister":
            await self._bodies.read(request)
            if kind == "system":
                await self._blocking(shm.unregister_system, name)
            else:
                await self._blocking(shm.unregister_cuda, name)
            return empty()
        what = "system" if kind == "system" else "cuda"
        if not name:
            raise HttpError(
                400, f"'region name' is necessary to register {what} shared memory region"
            )
        body = await self._bodies.json(request)
        if kind == "system":
            key, offset, byte_size = http_control.parse_system_shm_register(body)
            await self._blocking(shm.register_system, name, key, offset, byte_size)
        else:
            raw_handle, device_id, byte_size = http_control.parse_cuda_shm_register(body)
            await self._blocking(shm.register_cuda, name, raw_handle, device_id, byte_size)
        return empty()

    # -- trace and logging ---------------------------------------------------------------
    async def _global_trace(self, request: web.BaseRequest) -> web.StreamResponse:
        return await self._trace(request, None)

    async def _trace(self, request: web.BaseRequest, model: str | None) -> web.StreamResponse:
        self._check_method(request, "GET", "POST")
        if request.method == "GET":
            return json_response(self._core.trace_settings(model))
        self._core.trace_settings(model)  # an unknown model is refused before the body is read
        changes = http_control.parse_trace_setting_request(await self._bodies.json(request))
        return json_response(self._core.update_trace_settings(changes, model))

    async def _logging(self, request: web.BaseRequest) -> web.StreamResponse:
        self._check_method(request, "GET", "POST")
        settings = self._core.log_settings
        if request.method == "GET":
            return json_response(settings.get())
        changes = http_control.parse_log_setting_request(await self._bodies.json(request))
        return json_response(settings.update(changes))
