"""``iterative_probe_decoupled``: ``iterative_probe``, decoupled: one final response a request."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Tells the correlation id and flags of each request, through its response sender."""

    def execute(self, requests):
        for request in requests:
            text = json.dumps(
                {"correlation_id": request.correlation_id(), "flags": request.flags()}
            )
            out = pb_utils.Tensor("INFO", np.array([text.encode()], dtype=np.object_))
            request.get_response_sender().send(
                pb_utils.InferenceResponse([out]),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
        return None
