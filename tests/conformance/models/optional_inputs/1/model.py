"""OUTPUT0 = the sum of the inputs the request carries (optional ones may be absent)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            total = np.zeros(1, dtype=np.float32)
            for name in ("INPUT0", "INPUT1", "INPUT2", "INPUT3"):
                tensor = pb_utils.get_input_tensor_by_name(request, name)
                if tensor is not None:
                    total += tensor.as_numpy()
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", total.astype(np.float32))])
            )
        return responses
