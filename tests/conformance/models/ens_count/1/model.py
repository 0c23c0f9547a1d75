"""``ens_count``: a decoupled step that counts: ``IN = n`` gets ``n`` responses.

Response ``i`` carries ``OUT = [i]``; the last one carries the final flag too (``n = 0`` gets
the final flag alone), so an ensemble running this step streams one response per count and
knows the step is done when the last one arrives: its last response is final on any server,
whatever order the steps finish in. A negative ``n`` gets an error response
(``ens_count: negative count``) with the final flag.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Counts to IN, one response a number."""

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            sender = request.get_response_sender()
            if count < 0:
                error = pb_utils.TritonError("ens_count: negative count")
                sender.send(pb_utils.InferenceResponse(error=error), flags=final)
                continue
            for index in range(count):
                out = pb_utils.Tensor("OUT", np.array([index], dtype=np.int32))
                sender.send(
                    pb_utils.InferenceResponse([out]), flags=final if index == count - 1 else 0
                )
            if count == 0:
                sender.send(flags=final)
        return None
