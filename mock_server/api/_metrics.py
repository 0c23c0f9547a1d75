"""The Prometheus text of :meth:`mock_server.api.Server.metrics`.

Kept in its own function so that the in-process API and the metrics frontend report the same
thing: it renders :class:`mock_server.metrics.TritonCollector` (Triton's per-model families,
memory and CPU families and the custom metrics models create through
``pb_utils.MetricFamily``) as Triton 2.51 writes them.  ``mock_server.metrics`` knows no
transport (the metrics port is :mod:`mock_server.frontends.metrics`).
"""

from __future__ import annotations

from ..core.server import CoreServer
from ..python_backend import collect_metrics
from ._errors import UnsupportedError

__all__ = ["prometheus_text"]


def prometheus_text(core: CoreServer) -> str:
    """The Prometheus text exposition of a core's metrics.

    Parameters
    ----------
    core : CoreServer
        The server whose models are reported.

    Returns
    -------
    str
        Prometheus text format (``# HELP``/``# TYPE`` lines and samples such as
        ``nv_inference_count{model="simple",version="1"} 2``).

    Raises
    ------
    UnsupportedError
        When ``prometheus_client`` (the ``server`` extra) is not installed.
    """
    try:
        from ..metrics import render_metrics
    except ImportError as exc:
        raise UnsupportedError(
            f"metrics need the 'server' extra (prometheus_client): {exc}"
        ) from None
    return render_metrics(core, collect_metrics).decode("utf-8")
