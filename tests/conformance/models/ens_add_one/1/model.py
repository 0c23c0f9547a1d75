"""``ens_add_one``: ``OUTPUT = INPUT + 1`` (FP32, dims ``[4]``, batching), an ensemble step."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Adds one."""

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            out = pb_utils.Tensor("OUTPUT", (data + 1).astype(np.float32))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
