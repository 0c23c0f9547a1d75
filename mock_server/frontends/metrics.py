"""The metrics port: Triton's metrics service, serving :mod:`mock_server.metrics` with aiohttp.

``GET /metrics`` (or ``/metrics/``) answers the metrics as ``text/plain; charset=utf-8``, any
other ``GET`` an empty 200, any other method ``405 Not Allowed`` with
``{"error":"Method Not Allowed"}``, as Triton 2.51's metrics port does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aiohttp import web

__all__ = ["CONTENT_TYPE", "MetricsFrontend"]

#: The Content-Type of Triton's metrics answer.
CONTENT_TYPE = "text/plain; charset=utf-8"

_METRICS_PATH = re.compile(r"/metrics/?")


class MetricsFrontend:
    """Serves the metrics on their own port, as Triton's metrics service does.

    ``GET /metrics`` (``/metrics/`` too, any query) answers what ``render`` writes; any other
    ``GET`` path answers 200 with an empty body; any other method 405.

    Parameters
    ----------
    render : callable
        Writes the metrics in the Prometheus text format, at each scrape
        (:func:`mock_server.metrics.metrics_renderer`, given by the composition root).
    host : str
        Address to listen on.
    port : int
        Port to listen on; 0 picks a free one.
    """

    def __init__(
        self, render: Callable[[], bytes], *, host: str = "127.0.0.1", port: int = 8002
    ) -> None:
        self._render = render
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method != "GET":
            return web.Response(
                status=405,
                reason="Not Allowed",
                body=b'{"error":"Method Not Allowed"}',
                headers={"Content-Type": "text/plain"},
            )
        body = b""
        if _METRICS_PATH.fullmatch(request.rel_url.raw_path):
            body = self._render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def start(self) -> int:
        """Start listening; returns the bound port."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        server: Any = site._server
        return int(server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
