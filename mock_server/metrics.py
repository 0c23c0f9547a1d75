"""Prometheus metrics as Triton 2.51 exposes them, computed from the core at scrape time.

:class:`TritonCollector` is a ``prometheus_client`` collector of the families a CPU-only Triton
2.51 reports with default flags; :func:`exposition` writes collected families in the text
format exactly as Triton's prometheus-cpp does.  The metrics port
(:mod:`mock_server.frontends.metrics`) and the in-process API (``Server.metrics()``) serve it;
this module knows nothing of either transport, nor of the backend whose models create custom
metrics (the composition root passes their source, ``custom``).  What comes out (checked
against the real server by ``tests/conformance/test_metrics_differential.py``):

* families in Triton's registration order: its per-model counters, then the custom counters
  models create (``pb_utils.MetricFamily``), then its gauges (per-model pending requests,
  pinned memory pool, CPU), then the custom gauges, then the custom histograms;
* ``# HELP <name> <text>`` and ``# TYPE <name> <type>`` with the family's own name (no
  ``_total``), the text as given; a family without samples is left out;
* per-model samples for every loaded model version (labels ``model``, ``version``);
  ``nv_inference_request_failure`` (label ``reason`` too) for every version ever loaded, as
  Triton 2.51 never removes those counters;
* labels sorted by name (``le`` of a histogram bucket last), values escaped (``\\``, ``"``,
  newline); numbers as C's ``%.16g`` (``0``, ``1e+20``, ``Nan``, ``+Inf``), histogram counts
  as integers; histogram samples in the order ``_count``, ``_sum``, then the ``_bucket`` s;
* served as ``text/plain; charset=utf-8`` (by the metrics port).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

from .core.server import CoreServer

if TYPE_CHECKING:
    from .python_backend import MetricFamilySnapshot

__all__ = [
    "CustomMetrics",
    "TritonCollector",
    "exposition",
    "metrics_renderer",
    "render_metrics",
]

#: Where the custom metrics models create come from (the Python backend's
#: ``collect_metrics``, which the composition root passes).
CustomMetrics = Callable[[], "Iterable[MetricFamilySnapshot]"]

#: ``--pinned-memory-pool-byte-size``'s default, reported as the pinned memory pool's size.
PINNED_MEMORY_POOL_BYTES = 268435456

# Per-model counters, in Triton's registration order: (family, help, statistics key).
_MODEL_COUNTERS: tuple[tuple[str, str, str], ...] = (
    (
        "nv_inference_request_success",
        "Number of successful inference requests, all batch sizes",
        "success",
    ),
    (
        "nv_inference_request_failure",
        "Number of failed inference requests, all batch sizes",
        "",
    ),
    (
        "nv_inference_count",
        "Number of inferences performed (does not include cached requests)",
        "inference_count",
    ),
    (
        "nv_inference_exec_count",
        "Number of model executions performed (does not include cached requests)",
        "execution_count",
    ),
    (
        "nv_inference_request_duration_us",
        "Cumulative inference request duration in microseconds (includes cached requests)",
        "success",
    ),
    (
        "nv_inference_queue_duration_us",
        "Cumulative inference queuing duration in microseconds (includes cached requests)",
        "queue",
    ),
    (
        "nv_inference_compute_input_duration_us",
        "Cumulative compute input duration in microseconds (does not include cached requests)",
        "compute_input",
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "Cumulative compute inference duration in microseconds (does not include cached requests)",
        "compute_infer",
    ),
    (
        "nv_inference_compute_output_duration_us",
        "Cumulative inference compute output duration in microseconds (does not include cached "
        "requests)",
        "compute_output",
    ),
)

_PENDING = (
    "nv_inference_pending_request_count",
    "Instantaneous number of pending requests awaiting execution per-model.",
)

#: Failure reasons of ``nv_inference_request_failure``, each reported from the first load on.
FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")

_KIND_ORDER = {"counter": 0, "gauge": 1, "histogram": 2, "summary": 3}


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


def _gauge(name: str, documentation: str, value: float) -> Metric:
    metric = Metric(name, documentation, "gauge")
    metric.add_sample(name, {}, value)
    return metric


def _custom(snapshot: MetricFamilySnapshot) -> Metric:
    """A custom family as a ``prometheus_client`` family (histogram bounds in ``le``)."""
    metric = Metric(snapshot.name, snapshot.description, snapshot.kind)
    name = snapshot.name
    for sample in snapshot.metrics:
        labels = dict(sample.labels)
        if snapshot.kind == "histogram":
            metric.add_sample(f"{name}_count", labels, float(sample.count or 0))
            metric.add_sample(f"{name}_sum", labels, float(sample.sum or 0.0))
            for bound, count in sample.buckets or ():
                metric.add_sample(f"{name}_bucket", {**labels, "le": _number(bound)}, count)
        else:
            metric.add_sample(name, labels, float(sample.value or 0.0))
    return metric


class TritonCollector(Collector):
    """Collects Triton's per-model families, memory and CPU families and the custom metrics
    of models, in the order Triton registers them.

    Parameters
    ----------
    core : CoreServer
        The server whose models are reported.
    custom : callable, optional
        The custom metric families of models (``pb_utils.MetricFamily``), at collection time;
        none by default.
    """

    def __init__(self, core: CoreServer, custom: CustomMetrics | None = None) -> None:
        self._core = core
        self._custom = custom
        self._cpu = _CpuUsage()

    def _model_families(self) -> list[Metric]:
        counters = {name: Metric(name, doc, "counter") for name, doc, _ in _MODEL_COUNTERS}
        pending = Metric(*_PENDING, "gauge")
        stats = {(s.name, s.version): asdict(s) for s in self._core.statistics()}
        loaded = self._core.loaded_versions()
        failures = self._core.stats.failure_counts()
        for model in loaded:
            labels = {"model": model.name, "version": str(model.version)}
            entry = stats.get((model.name, str(model.version)), {})
            infer = entry.get("inference_stats", {})
            for name, _, key in _MODEL_COUNTERS:
                if name == "nv_inference_request_failure":
                    continue
                if key in ("inference_count", "execution_count"):
                    value = entry.get(key, 0)
                elif name == "nv_inference_request_success":
                    value = infer.get(key, {}).get("count", 0)
                else:
                    value = infer.get(key, {}).get("ns", 0) // 1000
                counters[name].add_sample(name, labels, float(value))
            pending.add_sample(pending.name, labels, float(model.scheduler.queued()))
        failure = counters["nv_inference_request_failure"]
        for (model_name, version), counts in sorted(failures.items()):
            for reason in FAILURE_REASONS:
                failure.add_sample(
                    failure.name,
                    {"model": model_name, "reason": reason, "version": str(version)},
                    float(counts.get(reason, 0)),
                )
        return [*counters.values(), pending]

    def collect(self) -> Iterator[Metric]:
        builtin = self._model_families()
        total, used = _memory()
        builtin += [
            _gauge(
                "nv_pinned_memory_pool_total_bytes",
                "Pinned memory pool total memory size, in bytes",
                float(PINNED_MEMORY_POOL_BYTES),
            ),
            _gauge(
                "nv_pinned_memory_pool_used_bytes",
                "Pinned memory pool used memory size, in bytes",
                0.0,
            ),
            _gauge(
                "nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]", self._cpu.utilization()
            ),
            _gauge("nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes", float(total)),
            _gauge("nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes", float(used)),
        ]
        snapshots = self._custom() if self._custom is not None else ()
        custom = [_custom(snapshot) for snapshot in snapshots]
        # prometheus-cpp keeps one list of families per type, each in registration order, and
        # Triton registers its own families before any model loads.
        families = sorted(
            [*builtin, *custom], key=lambda metric: _KIND_ORDER.get(metric.type, len(_KIND_ORDER))
        )
        yield from families


# -- text format ---------------------------------------------------------------------------------
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n"}
_ESCAPED = re.compile(r'[\\"\n]')


def _number(value: float) -> str:
    """A double as prometheus-cpp writes it (C's ``%.16g``; ``Nan``, ``+Inf``, ``-Inf``)."""
    if math.isnan(value):
        return "Nan"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return format(value, ".16g")


def _label_value(value: str) -> str:
    return _ESCAPED.sub(lambda m: _ESCAPES[m.group(0)], value)


def _integer_sample(family: Metric, sample_name: str) -> bool:
    """Histogram counts are unsigned integers in prometheus-cpp; everything else a double."""
    return family.type == "histogram" and sample_name in (
        f"{family.name}_count",
        f"{family.name}_bucket",
    )


def exposition(families: Iterable[Metric]) -> bytes:
    """Write ``families`` in the Prometheus text format as Triton 2.51 (prometheus-cpp) does.

    Parameters
    ----------
    families : iterable of prometheus_client Metric
        Collected families, in the order to write them.  For a histogram, the ``le`` label of
        its ``_bucket`` samples must already be text.

    Returns
    -------
    bytes
        UTF-8 text; families without samples are left out.
    """
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# HELP {family.name} {family.documentation}")
        lines.append(f"# TYPE {family.name} {family.type}")
        for sample in family.samples:
            pairs = sorted((k, v) for k, v in sample.labels.items() if k != "le")
            if "le" in sample.labels:
                pairs.append(("le", sample.labels["le"]))
            labels = ",".join(f'{k}="{_label_value(str(v))}"' for k, v in pairs)
            value = (
                str(int(sample.value))
                if _integer_sample(family, sample.name)
                else _number(float(sample.value))
            )
            lines.append(
                f"{sample.name}{{{labels}}} {value}" if labels else f"{sample.name} {value}"
            )
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def metrics_renderer(core: CoreServer, custom: CustomMetrics | None = None) -> Callable[[], bytes]:
    """A function that writes ``core``'s metrics (and the ``custom`` ones) as Triton does,
    each time it is called, from one collector (which keeps the CPU readings between
    scrapes)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TritonCollector(core, custom))
    return lambda: exposition(registry.collect())


def render_metrics(core: CoreServer, custom: CustomMetrics | None = None) -> bytes:
    """The Prometheus text exposition of ``core``'s metrics (and the ``custom`` ones), as
    Triton writes it."""
    return metrics_renderer(core, custom)()
