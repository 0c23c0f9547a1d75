"""``ens_sum``: ``OUTPUT = A + B`` (FP32, dims ``[4]``, batching), an ensemble's fan-in step."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Adds its two inputs."""

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "B").as_numpy()
            out = pb_utils.Tensor("OUTPUT", (a + b).astype(np.float32))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
