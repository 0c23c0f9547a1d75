"""PARAMS = the request's parameters, as the JSON text pb_utils gives them, keys sorted."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            params = json.loads(request.parameters())
            text = json.dumps(params, sort_keys=True)
            out = np.array([text.encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("PARAMS", out)]))
        return responses
