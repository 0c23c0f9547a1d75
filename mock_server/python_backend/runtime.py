"""The hooks the server core gives Python-backend models (BLS and model control).

They are the core's :class:`~mock_server.core.backends.BackendRuntime` (declared there, with
:class:`~mock_server.core.backends.SharedRegions`, and re-exported here for the backend's
modules).  Models never see it directly: ``pb_utils.InferenceRequest.exec()``,
``pb_utils.load_model()`` and friends find the runtime of the model that is calling them (see
:mod:`mock_server.python_backend._context`); ``pb_utils`` turns its
:class:`~mock_server.core.errors.ServerError` into the Python backend's behaviour (an error
response for ``exec()``, :class:`TritonModelException` for model control).
"""

from __future__ import annotations

from ..core.backends import BackendRuntime, SharedRegions

__all__ = ["BackendRuntime", "SharedRegions"]
