"""Triton Python-backend compatibility: runs ``model.py`` models written for Triton unchanged.

Importing this package makes ``import triton_python_backend_utils`` resolve to
:mod:`mock_server.python_backend.triton_python_backend_utils` (by an entry in ``sys.modules``),
so model files can use ``pb_utils`` as they do under Triton.

Modules
-------
backend
    :class:`PythonBackend`, what the composition root gives the core for ``backend: "python"``,
    and the :class:`PythonBackendModel` objects it loads.
runtime
    :class:`BackendRuntime`, the hooks the core provides for BLS and model control.
triton_python_backend_utils
    The ``pb_utils`` module models import.

Model instances run in stub processes by default (``isolation="process"``), as Triton runs
them: ``_process`` is the server's side of a stub, ``_stub`` the stub's own, ``_launcher``
starts them (forked from a pre-imported zygote, or a model's own interpreter), ``_messages``
declares what they say to each other, ``_ipc`` is the channel between them and ``_transfer``
how large tensors cross it.  ``_inprocess`` runs a model in the process it is in: the server's
(``isolation="thread"``) or a stub's.
metrics
    The registry of custom metrics; :func:`collect_metrics` reads it for the metrics endpoint.
"""

from __future__ import annotations

import sys

from . import triton_python_backend_utils
from .backend import PythonBackend, PythonBackendModel, PythonModelInstance
from .metrics import MetricFamilySnapshot, MetricSample
from .metrics import collect as collect_metrics
from .runtime import BackendRuntime

__all__ = [
    "BackendRuntime",
    "MetricFamilySnapshot",
    "MetricSample",
    "PythonBackend",
    "PythonBackendModel",
    "PythonModelInstance",
    "collect_metrics",
    "triton_python_backend_utils",
]

sys.modules["triton_python_backend_utils"] = triton_python_backend_utils
