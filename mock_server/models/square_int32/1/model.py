"""``square_int32``: decoupled model that answers ``IN = [n]`` with ``n`` responses.

Input ``IN`` (INT32, dims ``[1]``); output ``OUT`` (INT32, dims ``[1]``). A request with
``IN = [n]`` gets ``n`` responses, each with ``OUT = [n]``, then a flags-only response with
``TRITONSERVER_RESPONSE_COMPLETE_FINAL``; ``n = 0`` gives only the final flag. A negative
``n`` ends the stream with an INVALID_ARG error. When the client cancels, the model stops
and ends the stream with a CANCELLED error.

Used by the Python backend's decoupled example square_client.py (requests 4, 2, 0, 1:
expects 4 x [4], 2 x [2], nothing, 1 x [1]) and by streaming tests.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Decoupled square model."""

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            if count < 0:
                error = pb_utils.TritonError(
                    f"square_int32: IN must not be negative, got {count}",
                    pb_utils.TritonError.INVALID_ARG,
                )
                sender.send(pb_utils.InferenceResponse(error=error), flags=final)
                continue
            out = np.array([count], dtype=np.int32)
            for _ in range(count):
                if sender.is_cancelled():
                    error = pb_utils.TritonError(
                        "square_int32: request cancelled", pb_utils.TritonError.CANCELLED
                    )
                    sender.send(pb_utils.InferenceResponse(error=error), flags=final)
                    break
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
            else:
                sender.send(flags=final)
        return None
