"""``ens_probe``: ``OUT = IN`` and ``INFO``, what the request carried, as JSON.

An ensemble passes its request's id, correlation id, sequence flags, timeout and parameters to
every step, and asks a step for all the outputs its ``output_map`` names: ``INFO`` shows them
(keys ``id``, ``correlation_id``, ``flags``, ``timeout``, ``parameters``, ``requested``), so that
the conformance suite can compare what reaches a composing model on both servers.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Echoes IN and describes the request."""

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            info = {
                "id": request.request_id(),
                "correlation_id": request.correlation_id(),
                "flags": request.flags(),
                "timeout": request.timeout(),
                "parameters": json.loads(request.parameters()),
                "requested": sorted(request.requested_output_names()),
            }
            text = json.dumps(info, sort_keys=True).encode()
            outputs = [
                pb_utils.Tensor("OUT", data.astype(np.int32)),
                pb_utils.Tensor("INFO", np.array([text], dtype=np.object_)),
            ]
            responses.append(pb_utils.InferenceResponse(outputs))
        return responses
