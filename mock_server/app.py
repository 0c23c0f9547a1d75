"""Run the core with its HTTP, gRPC and metrics frontends: :class:`MockServer`.

The frontends share one asyncio event loop on a background thread; model code runs on the
core's instance threads.  ``python -m mock_server`` (see :mod:`mock_server.__main__`) is a thin
command line over this class, and tests and users embed it directly::

    with MockServer(ServerOptions(model_repository=[path]), FrontendOptions(http_port=0)) as srv:
        print(srv.http_url, srv.grpc_url)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from .compose import build_core
from .core.compat import HTTP_DEFAULT_MAX_INPUT_SIZE
from .core.server import ServerOptions
from .frontends.groups import API_GROUPS

__all__ = ["BUNDLED_MODELS", "FrontendOptions", "MockServer", "parse_restricted"]

#: The model repository shipped with the package.
BUNDLED_MODELS = Path(__file__).resolve().parent / "models"


def parse_restricted(specs: list[str], feature_type: str = "api") -> dict[str, tuple[str, str]]:
    """Parse ``<api>[,<api>...]:<key>=<value>`` specs into ``{api: (key, value)}``.

    ``feature_type`` names the groups in errors as ``tritonserver`` does: ``"api"`` for
    ``--http-restricted-api``, ``"protocol"`` for ``--grpc-restricted-protocol``.

    Raises
    ------
    ValueError
        For a malformed spec, an unknown API group, or a group restricted twice (with Triton's
        words: ``unknown restricted api 'x'``, ``restricted api 'x' can not be specified in
        multiple config groups``).
    """
    out: dict[str, tuple[str, str]] = {}
    for spec in specs:
        apis, sep, header = spec.partition(":")
        key, eq, value = header.partition("=")
        if not sep or not eq or not key or not apis:
            raise ValueError(
                f"restricted {feature_type} spec {spec!r}: expected "
                f"<{feature_type}>[,<{feature_type}>...]:<key>=<value>"
            )
        for api in apis.split(","):
            api = api.strip()
            if api not in API_GROUPS:
                raise ValueError(
                    f"unknown restricted {feature_type} '{api}' (in {spec!r}; expected one of "
                    f"{', '.join(API_GROUPS)})"
                )
            if api in out:
                raise ValueError(
                    f"restricted {feature_type} '{api}' can not be specified in multiple "
                    "config groups"
                )
            out[api] = (key, value)
    return out


#: Triton's test hook: delay gRPC answers (not inference's) by this many seconds.
_DELAY_VARIABLE = "TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC"


def _env_seconds(name: str) -> float:
    """An environment variable read as Triton reads it (``atoi``: its leading digits, else 0)."""
    digits = re.match(r"\s*([+-]?\d+)", os.environ.get(name, ""))
    return float(max(0, int(digits.group(1)))) if digits else 0.0


@dataclass
class FrontendOptions:
    """Network options of :class:`MockServer`.

    Attributes
    ----------
    host : str
        Address all services listen on (127.0.0.1 by default; "0.0.0.0" for every interface).
    http_host, grpc_host, metrics_host : str or None
        Per-service addresses overriding ``host``.
    http_port, grpc_port, metrics_port : int
        Ports; 0 picks a free one (the chosen port is in ``MockServer.http_port`` etc.).
    allow_http, allow_grpc, allow_metrics : bool
        Which services to start.
    http_ssl_cert, http_ssl_key : str or None
        PEM certificate and key: serve HTTPS instead of HTTP.
    http_ssl_ca : str or None
        PEM CA bundle: require and verify client certificates on HTTPS.
    grpc_ssl_cert, grpc_ssl_key, grpc_ssl_ca : str or None
        The same for gRPC; with ``grpc_ssl_mutual`` the client must present a certificate.
    http_restricted_api, grpc_restricted_protocol : dict
        ``{api group: (header key, value)}`` (see :func:`parse_restricted`).
    grpc_max_message_bytes : int
        Largest gRPC message accepted or sent.
    http_header_forward_pattern : str or None
        Regular expression: matching HTTP headers reach the model as string parameters.
    http_max_input_size : int or None
        The largest HTTP request body, after decompression (``--http-max-input-size``); None:
        the compatibility profile's default (64 MiB under 2.73, no limit under 2.51).
    http_thread_count : int
        The HTTP frontend's worker threads (``--http-thread-count``).
    openai_port : int or None
        Port of the OpenAI-compatible frontend (:mod:`mock_server.frontends.openai`); None
        (the default) does not start it, 0 picks a free port.
    openai_host : str or None
        Its address (default: ``host``).
    openai_restricted_api : dict
        ``{api group: (header key, value)}`` of its APIs (``--openai-restricted-api``).
    tokenizer, chat_template : str or None
        A local tokenizer folder and a Jinja chat template file for its chat endpoint.
    default_max_tokens : int
        ``max_tokens`` of an OpenAI request that gives none (16, as Triton's frontend).
    tool_call_parser : str or None
        ``"llama3"`` to parse tool calls out of generated text (tools with "auto" choice).
    grpc_response_delay_s : float
        Every gRPC answer but inference's is written this many seconds late: Triton's test
        hook for client deadlines, read by default from the environment variable
        ``TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC`` (whole seconds, as Triton reads it).
    grpc_header_forward_pattern : str or None
        Regular expression: matching gRPC request metadata reaches the model as string
        parameters.
    event_loop : str
        The frontends' event loop: ``"uvloop"``, ``"asyncio"`` (the standard library's), or
        ``"auto"`` (the default: uvloop when it is installed, as it is with the ``server``
        extra, else asyncio's).
    """

    host: str = "127.0.0.1"
    http_host: str | None = None
    grpc_host: str | None = None
    metrics_host: str | None = None
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    allow_http: bool = True
    allow_grpc: bool = True
    allow_metrics: bool = True
    http_ssl_cert: str | None = None
    http_ssl_key: str | None = None
    http_ssl_ca: str | None = None
    grpc_ssl_cert: str | None = None
    grpc_ssl_key: str | None = None
    grpc_ssl_ca: str | None = None
    grpc_ssl_mutual: bool = False
    http_restricted_api: dict[str, tuple[str, str]] = field(default_factory=dict)
    grpc_restricted_protocol: dict[str, tuple[str, str]] = field(default_factory=dict)
    grpc_max_message_bytes: int = 2**31 - 1
    http_header_forward_pattern: str | None = None
    grpc_header_forward_pattern: str | None = None
    event_loop: str = "auto"
    http_max_input_size: int | None = None
    http_thread_count: int = 8
    openai_port: int | None = None
    openai_host: str | None = None
    openai_restricted_api: dict[str, tuple[str, str]] = field(default_factory=dict)
    tokenizer: str | None = None
    chat_template: str | None = None
    default_max_tokens: int = 16
    tool_call_parser: str | None = None
    grpc_response_delay_s: float = field(default_factory=lambda: _env_seconds(_DELAY_VARIABLE))


def _new_event_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A new event loop of ``kind`` (see :attr:`FrontendOptions.event_loop`).

    uvloop is the default where installed: measured with ``benchmarks/bench_engines.py``, the
    frontends spend less CPU per small request on it (its cross-thread wake-up and socket
    handling are libuv's rather than Python's), most of all under grpc.aio.
    """
    if kind not in ("auto", "uvloop", "asyncio"):
        raise ValueError(f"unknown event loop {kind!r}; expected 'auto', 'uvloop' or 'asyncio'")
    if kind != "asyncio":
        try:
            import uvloop
        except ImportError:
            if kind == "uvloop":
                raise
        else:
            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            return loop
    return asyncio.new_event_loop()


def _http_ssl_context(options: FrontendOptions) -> ssl.SSLContext | None:
    if not options.http_ssl_cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(options.http_ssl_cert, options.http_ssl_key)
    if options.http_ssl_ca:
        context.load_verify_locations(options.http_ssl_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _grpc_credentials(options: FrontendOptions) -> Any:
    if not options.grpc_ssl_cert:
        return None
    import grpc

    key = Path(options.grpc_ssl_key or "").read_bytes()
    cert = Path(options.grpc_ssl_cert).read_bytes()
    ca = Path(options.grpc_ssl_ca).read_bytes() if options.grpc_ssl_ca else None
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=options.grpc_ssl_mutual
    )


class MockServer:
    """The core plus its network frontends, running in the background.

    Parameters
    ----------
    options : ServerOptions, optional
        Core options; by default the bundled model repository in NONE control mode.
    frontends : FrontendOptions, optional
        Network options; by default 127.0.0.1 on Triton's ports 8000/8001/8002.
    """

    def __init__(
        self, options: ServerOptions | None = None, frontends: FrontendOptions | None = None
    ) -> None:
        self.options = options or ServerOptions(model_repository=[BUNDLED_MODELS])
        self.frontend_options = frontends or FrontendOptions()
        self.core = build_core(self.options)
        self.http_port: int | None = None
        self.grpc_port: int | None = None
        self.metrics_port: int | None = None
        self.openai_port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._services: list[Any] = []

    # -- URLs ----------------------------------------------------------------------------
    def _url(self, host: str | None, port: int | None) -> str:
        host = host or self.frontend_options.host
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"{host}:{port}" if port is not None else ""

    @property
    def http_url(self) -> str:
        """``host:port`` of the HTTP service (empty if not running)."""
        return self._url(self.frontend_options.http_host, self.http_port)

    @property
    def grpc_url(self) -> str:
        """``host:port`` of the gRPC service (empty if not running)."""
        return self._url(self.frontend_options.grpc_host, self.grpc_port)

    @property
    def metrics_url(self) -> str:
        """``host:port`` of the metrics service (empty if not running)."""
        return self._url(self.frontend_options.metrics_host, self.metrics_port)

    @property
    def openai_url(self) -> str:
        """``host:port`` of the OpenAI-compatible frontend (empty if not running); its API
        is under ``http://<openai_url>/v1``."""
        return self._url(self.frontend_options.openai_host, self.openai_port)

    # -- lifecycle -----------------------------------------------------------------------
    def _run(self, coro: Any, timeout: float) -> Any:
        assert self._loop is not None
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout)

    def start(self, timeout: float = 120.0) -> MockServer:
        """Load the models, then start the frontends; returns self.

        Raises
        ------
        OSError
            If a port cannot be bound.
        """
        loop = _new_event_loop(self.frontend_options.event_loop)
        self.core.start()
        self._loop = loop
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mock_server-frontends", daemon=True
        )
        self._thread.start()
        try:
            self._run(self._start_services(), timeout)
        except BaseException:
            self.stop()
            raise
        return self

    async def _start_services(self) -> None:
        fo = self.frontend_options
        if fo.allow_http:
            from .frontends.http import HttpFrontend

            http = HttpFrontend(
                self.core,
                host=fo.http_host or fo.host,
                port=fo.http_port,
                ssl_context=_http_ssl_context(fo),
                restricted_apis=fo.http_restricted_api or None,
                header_forward_pattern=fo.http_header_forward_pattern,
                max_input_size=fo.http_max_input_size,
                worker_threads=fo.http_thread_count,
                metrics=self._metrics_renderer() if fo.allow_metrics else None,
            )
            self.http_port = await http.start()
            self._services.append(http)
        if fo.allow_grpc:
            from .frontends.grpc import GrpcFrontend

            grpc_frontend = GrpcFrontend(
                self.core,
                host=fo.grpc_host or fo.host,
                port=fo.grpc_port,
                server_credentials=_grpc_credentials(fo),
                restricted_apis=fo.grpc_restricted_protocol or None,
                max_message_bytes=fo.grpc_max_message_bytes,
                header_forward_pattern=fo.grpc_header_forward_pattern,
                response_delay_s=fo.grpc_response_delay_s,
            )
            self.grpc_port = await grpc_frontend.start()
            self._services.append(grpc_frontend)
        if fo.allow_metrics:
            from .frontends.metrics import MetricsFrontend

            metrics = MetricsFrontend(
                self._metrics_renderer(),
                host=fo.metrics_host or fo.host,
                port=fo.metrics_port,
            )
            self.metrics_port = await metrics.start()
            self._services.append(metrics)
        if fo.openai_port is not None:
            await self._start_openai(fo)

    def _metrics_renderer(self) -> Callable[[], bytes]:
        from .metrics import metrics_renderer
        from .python_backend import collect_metrics

        return metrics_renderer(self.core, collect_metrics)

    async def _start_openai(self, fo: FrontendOptions) -> None:
        from .frontends.openai import OpenAIFrontend

        openai = OpenAIFrontend(
            self.core,
            host=fo.openai_host or fo.host,
            port=fo.openai_port or 0,
            metrics=self._metrics_renderer(),
            restricted_apis=fo.openai_restricted_api or None,
            max_input_size=fo.http_max_input_size or HTTP_DEFAULT_MAX_INPUT_SIZE,
            tokenizer=fo.tokenizer,
            chat_template=fo.chat_template,
            default_max_tokens=fo.default_max_tokens,
            tool_call_parser=fo.tool_call_parser,
        )
        self.openai_port = await openai.start()
        self._services.append(openai)

    async def _stop_services(self) -> None:
        for service in reversed(self._services):
            with contextlib.suppress(Exception):  # keep stopping the others
                await service.stop()
        self._services.clear()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the frontends, unload every model and stop the event loop.

        Readiness turns false first (HTTP ``/v2/health/ready``, gRPC ``ServerReady`` and the
        ``grpc.health.v1`` service), so that clients balancing over replicas stop sending
        here while the calls in progress finish."""
        if self.core.live():
            self.core.drain()
        if self._loop is not None and self._thread is not None:
            try:
                self._run(self._stop_services(), timeout)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(timeout)
                self._loop.close()
                self._loop = None
                self._thread = None
        if self.core.live():
            self.core.stop()
        self.http_port = self.grpc_port = self.metrics_port = self.openai_port = None

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
