"""``fail_after``: decoupled; ``IN = [n]`` gets ``n`` responses ``OUT = [i]`` (i = 0..n-1),
then a response carrying an INVALID_ARG error, with the final flag.

The generate_stream cases use it for an error that arrives after events (the HTTP status is
200 by then), and the clients' tests for an error event raised after the events before it.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Streams, then fails."""

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            for index in range(count):
                out = np.array([index], dtype=np.int32)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
            error = pb_utils.TritonError(
                f"fail_after: failed after {count} responses", pb_utils.TritonError.INVALID_ARG
            )
            sender.send(pb_utils.InferenceResponse(error=error), flags=final)
        return None
