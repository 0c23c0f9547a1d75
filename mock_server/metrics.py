"""Prometheus metrics: Triton's metric families, computed from the core at scrape time.

:class:`TritonCollector` is a ``prometheus_client`` collector; :class:`MetricsFrontend` serves
it on its own port at ``GET /metrics`` (other paths answer 200 with an empty body and other
methods 405, as Triton's metrics port does).  Custom metrics created by models through
``pb_utils.MetricFamily`` are exported alongside.

Sample lines match Triton's (``nv_inference_count{model="m",version="1"} 7``).  For counters,
``prometheus_client`` names the ``# HELP``/``# TYPE`` lines with a ``_total`` suffix; Prometheus
accepts both spellings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

from .core.server import CoreServer
from .python_backend import collect_metrics

__all__ = ["MetricsFrontend", "TritonCollector", "render_metrics"]

# (family, Prometheus type, help)
_MODEL_FAMILIES: list[tuple[str, str, str]] = [
    (
        "nv_inference_request_success",
        "counter",
        "Number of successful inference requests, all batch sizes",
    ),
    (
        "nv_inference_request_failure",
        "counter",
        "Number of failed inference requests, all batch sizes",
    ),
    (
        "nv_inference_count",
        "counter",
        "Number of inferences performed (does not include cached requests)",
    ),
    (
        "nv_inference_exec_count",
        "counter",
        "Number of model executions performed (does not include cached requests)",
    ),
    (
        "nv_inference_pending_request_count",
        "gauge",
        "Instantaneous number of pending requests awaiting execution per-model.",
    ),
    (
        "nv_inference_request_duration_us",
        "counter",
        "Cumulative inference request duration in microseconds (includes cached requests)",
    ),
    (
        "nv_inference_queue_duration_us",
        "counter",
        "Cumulative inference queuing duration in microseconds (includes cached requests)",
    ),
    (
        "nv_inference_compute_input_duration_us",
        "counter",
        "Cumulative compute input duration in microseconds (does not include cached requests)",
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "counter",
        "Cumulative compute inference duration in microseconds (does not include cached requests)",
    ),
    (
        "nv_inference_compute_output_duration_us",
        "counter",
        "Cumulative inference compute "
        "output duration in microseconds (does not include cached requests)",
    ),
]

_DURATIONS = {
    "nv_inference_request_duration_us": "success",
    "nv_inference_queue_duration_us": "queue",
    "nv_inference_compute_input_duration_us": "compute_input",
    "nv_inference_compute_infer_duration_us": "compute_infer",
    "nv_inference_compute_output_duration_us": "compute_output",
}

_FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")


def _memory() -> tuple[int, int]:
    """(total, used) bytes of system memory, from /proc/meminfo where available."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
        return info["MemTotal"], info["MemTotal"] - info.get("MemAvailable", info["MemFree"])
    except (OSError, KeyError, ValueError, IndexError):
        page = os.sysconf("SC_PAGE_SIZE")
        total = page * os.sysconf("SC_PHYS_PAGES")
        return total, total - page * os.sysconf("SC_AVPHYS_PAGES")


class _CpuUsage:
    """CPU utilization between consecutive scrapes, from /proc/stat."""

    def __init__(self) -> None:
        self._last: tuple[int, int] | None = None

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields), idle

    def utilization(self) -> float:
        now = self._read()
        last, self._last = self._last, now
        if now is None or last is None or now[0] == last[0]:
            return 0.0
        busy = (now[0] - last[0]) - (now[1] - last[1])
        return max(0.0, min(1.0, busy / (now[0] - last[0])))


class TritonCollector(Collector):
    """Collects Triton's per-model families, CPU families and models' custom metrics.

    Parameters
    ----------
    core : CoreServer
        The server whose models are reported.
    """

    def __init__(self, core: CoreServer) -> None:
        self._core = core
        self._cpu = _CpuUsage()

    def collect(self) -> Iterator[Metric]:
        families = {name: Metric(name, doc, kind) for name, kind, doc in _MODEL_FAMILIES}
        stats = {(s["name"], s["version"]): s for s in self._core.statistics()}
        for model in self._core.loaded_versions():
            labels = {"model": model.name, "version": str(model.version)}
            entry = stats.get((model.name, str(model.version)), {})
            infer = entry.get("inference_stats", {})

            def add(
                family: str,
                value: float,
                extra: dict[str, str] | None = None,
                labels: dict[str, str] = labels,
            ) -> None:
                families[family].add_sample(family, {**labels, **(extra or {})}, value)

            add("nv_inference_request_success", infer.get("success", {}).get("count", 0))
            for reason in _FAILURE_REASONS:
                add(
                    "nv_inference_request_failure",
                    model.failures.get(reason, 0),
                    {"reason": reason},
                )
            add("nv_inference_count", entry.get("inference_count", 0))
            add("nv_inference_exec_count", entry.get("execution_count", 0))
            add("nv_inference_pending_request_count", model.scheduler.queued())
            for family, key in _DURATIONS.items():
                add(family, infer.get(key, {}).get("ns", 0) // 1000)
        yield from families.values()

        total, used = _memory()
        for name, doc, value in (
            ("nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]", self._cpu.utilization()),
            ("nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes", float(total)),
            ("nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes", float(used)),
        ):
            metric = Metric(name, doc, "gauge")
            metric.add_sample(name, {}, value)
            yield metric

        for custom in collect_metrics():
            metric = Metric(custom.name, custom.description, custom.kind)
            name = custom.name
            for sample in custom.metrics:
                labels = dict(sample.labels)
                if custom.kind == "histogram":
                    for bound, count in sample.buckets or ():
                        le = "+Inf" if bound == float("inf") else repr(float(bound))
                        metric.add_sample(f"{name}_bucket", {**labels, "le": le}, count)
                    metric.add_sample(f"{name}_count", labels, float(sample.count or 0))
                    metric.add_sample(f"{name}_sum", labels, float(sample.sum or 0.0))
                else:
                    metric.add_sample(name, labels, float(sample.value or 0.0))
            yield metric


def render_metrics(core: CoreServer) -> bytes:
    """The Prometheus text exposition of ``core``'s metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TritonCollector(core))
    return generate_latest(registry)


class MetricsFrontend:
    """Serves :func:`render_metrics` at ``GET /metrics`` on its own port.

    Parameters
    ----------
    core : CoreServer
        The server whose metrics are served.
    host : str
        Address to listen on.
    port : int
        Port to listen on; 0 picks a free one.
    """

    def __init__(self, core: CoreServer, *, host: str = "127.0.0.1", port: int = 8002) -> None:
        self._core = core
        self._host = host
        self._port = port
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(TritonCollector(core))
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method != "GET":
            return web.json_response({"error": "Method Not Allowed"}, status=405)
        if request.path != "/metrics":
            return web.Response(status=200, body=b"")
        body = generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

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
