"""``iterative_probe``: ``INFO``, the correlation id and flags of each request, as JSON.

The model never reschedules, so each sequence ends with its first request; what the
conformance suite compares is the correlation id and flags the sequence batcher gave it.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def info(request):
    text = json.dumps({"correlation_id": request.correlation_id(), "flags": request.flags()})
    return pb_utils.Tensor("INFO", np.array([text.encode()], dtype=np.object_))


class TritonPythonModel:
    """Tells the correlation id and flags of each request."""

    def execute(self, requests):
        return [pb_utils.InferenceResponse([info(request)]) for request in requests]
