"""Triton Python-backend compatibility: runs ``model.py`` models written for Triton unchanged.

Importing this package makes ``import triton_python_backend_utils`` resolve to
:mod:`mock_server.python_backend.triton_python_backend_utils` (by an entry in ``sys.modules``),
so model files can use ``pb_utils`` as they do under Triton.

Modules
-------
backend
    :class:`PythonBackendModel` and :class:`PythonModelInstance`, driven by the server core.
runtime
    :class:`BackendRuntime`, the hooks the core provides for BLS and model control.
triton_python_backend_utils
    The ``pb_utils`` module models import.

Model instances run in stub processes by default (``isolation="process"``), as Triton runs
them: ``_process`` is the server's side of a stub, ``_stub`` the stub's own, ``_launcher``
starts them (forked from a pre-imported zygote, or a model's own interpreter), and ``_ipc`` is
the channel between them (messages, shared-memory tensors).
metrics
    The registry of custom metrics; :func:`collect_metrics` reads it for the metrics endpoint.
"""

from __future__ import annotations

import sys

from . import triton_python_backend_utils
from .backend import PythonBackendModel, PythonModelInstance
from .metrics import MetricFamilySnapshot, MetricSample
from .metrics import collect as collect_metrics
from .runtime import BackendRuntime

__all__ = [
    "BackendRuntime",
    "MetricFamilySnapshot",
    "MetricSample",
    "PythonBackendModel",
    "PythonModelInstance",
    "collect_metrics",
    "triton_python_backend_utils",
]

sys.modules["triton_python_backend_utils"] = triton_python_backend_utils
