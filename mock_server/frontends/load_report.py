"""The ``endpoint-load-metrics`` response header of the generate endpoints (ORCA load reports).

Triton 2.73 (#7839, ``src/orca_http.cc``): a ``/generate`` or ``/generate_stream`` request with
the header ``endpoint-load-metrics-format: text`` or ``json`` is answered with a header
``endpoint-load-metrics`` computed from the ``nv_trt_llm_kv_cache_block_metrics`` family of the
server's Prometheus metrics (the ``tokens_per``, ``used`` and ``max`` block counts a
TensorRT-LLM model, or any model with custom metrics of that family, reports): the KV-cache
utilization ``used / max`` and the token capacity ``max * tokens_per``.  Another format, or
metrics that lack one of the three, give no header.  Whether the server does it at all is the
compatibility profile's ``endpoint_load_metrics`` (Triton 2.51 has no such header).
"""

from __future__ import annotations

import json
import re

__all__ = ["FORMAT_HEADER", "HEADER", "load_metrics_header"]

#: The request header naming the format (``ENDPOINT_LOAD_METRICS_TYPE``, src/orca_http.h).
FORMAT_HEADER = "endpoint-load-metrics-format"
#: The response header (``ENDPOINT_LOAD_METRICS_NAME``).
HEADER = "endpoint-load-metrics"

_FAMILY = "nv_trt_llm_kv_cache_block_metrics"
# MetricFamilyExtractor: the family's name, its labels if any, optional spaces, an unsigned
# number (RE2 FindAndConsume: anywhere in the text, one line at a time as '.' stops at '\n').
_SAMPLE = re.compile(re.escape(_FAMILY) + r"(?:\{(.*?)\})?\s*(\d+(?:\.\d+)?)")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def load_metrics_header(metrics_text: str, report_format: str) -> str | None:
    """The ``endpoint-load-metrics`` value for ``report_format`` (``text`` or ``json``), or
    None (another format, or a block count missing) as Triton writes it
    (``ExtractKVMetrics``, ``OrcaKVMetricHeader`` in src/orca_http.cc of 2.73.0)."""
    counts = {"tokens_per": -1.0, "used": -1.0, "max": -1.0}
    for match in _SAMPLE.finditer(metrics_text):
        labels = dict(_LABEL.findall(match.group(1) or ""))
        kind = labels.get("kv_cache_block_type")
        if kind in counts:
            counts[kind] = float(match.group(2))
    if min(counts.values()) < 0:
        return None
    utilization = counts["used"] / counts["max"] if counts["max"] > 0 else 0.0
    capacity = int(counts["max"] * counts["tokens_per"])
    if report_format == "json":
        named = f'{{"kv_cache_utilization":{_rapidjson_double(utilization)},'
        return f'JSON {{"named_metrics":{named}"max_token_capacity":{capacity}}}}}'
    if report_format == "text":
        return (
            f"TEXT named_metrics.kv_cache_utilization={utilization:f}, "
            f"named_metrics.max_token_capacity={capacity}"
        )
    return None


def _rapidjson_double(value: float) -> str:
    """A double as rapidjson's writer puts it: the shortest digits that read back (as
    Python's ``repr``), positional from 1e-6 up to 1e21, ``1e-7`` style outside."""
    text = json.dumps(value)
    mantissa, e, exponent = text.partition("e")
    if not e:
        return text
    power = int(exponent)
    digits = mantissa.replace(".", "").lstrip("-")
    sign = "-" if mantissa.startswith("-") else ""
    if -6 <= power < 0:
        return f"{sign}0.{'0' * (-power - 1)}{digits}"
    if 0 <= power < 21:
        return f"{sign}{digits}{'0' * (power - len(digits) + 1)}.0"
    return f"{mantissa}e{power}"
