"""``fail_modes``: answers, or fails in the way the request's ``MODE`` asks.

Input ``MODE`` (INT32, dims ``[1]``); output ``OUT`` = ``MODE``. Modes:

* 0: a normal response;
* 1: a response carrying a ``TritonError`` (INVALID_ARG);
* 2: ``execute`` raises an exception (for the whole batch it received).

The statistics and metrics differential tests compare how each failure is counted
(``inference_stats.fail``, ``nv_inference_request_failure{reason=...}``) on both servers.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Fails on request."""

    def execute(self, requests):
        modes = [int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy()[0]) for r in requests]
        if 2 in modes:
            raise RuntimeError("fail_modes: execute raised as asked (MODE 2)")
        responses = []
        for mode in modes:
            if mode == 1:
                error = pb_utils.TritonError(
                    "fail_modes: error response as asked (MODE 1)", pb_utils.TritonError.INVALID_ARG
                )
                responses.append(pb_utils.InferenceResponse(error=error))
            else:
                out = np.array([mode], dtype=np.int32)
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
        return responses
