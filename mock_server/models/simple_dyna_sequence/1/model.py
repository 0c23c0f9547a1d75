"""``simple_dyna_sequence``: a sequence model that sees its correlation id.

Tensors: ``INPUT`` and ``OUTPUT`` (INT32, dims ``[1]``, batched up to 8). The sequence
batcher (oldest strategy) adds the control inputs ``START``, ``END``, ``READY`` (INT32,
0 or 1) and ``CORRID`` (UINT64, the request's integer sequence id); clients send only
``INPUT`` with a sequence id and the start/end flags.

Behaviour, per batch row:

* ``READY == 0`` (an empty batch slot): ``OUTPUT = 0``.
* otherwise ``OUTPUT = INPUT + START + (CORRID if END else 0)``: the first request of a
  sequence adds 1 and the last one adds the correlation id.

This reproduces what Triton's example clients assert for this model when run with ``-d``:
simple_{grpc,http}_sequence_sync_infer_client.py, simple_grpc_sequence_stream_infer_client.py
and their aio variants. For sequence 1000 sending ``[0, 11, 7, 5, 3, 2, 0, 1]`` they expect
``[1, 11, 7, 5, 3, 2, 0, 1 + 1000]``.

The outputs need no memory between requests, so the model keeps none; see
``simple_string_dyna_sequence`` for a model that keeps per-sequence state.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Sequence model: OUTPUT = INPUT + START + END * CORRID on ready slots."""

    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()
            ready = pb_utils.get_input_tensor_by_name(request, "READY").as_numpy()
            corrid = pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy()
            total = (
                value.astype(np.int64)
                + (start != 0)
                + np.where(end != 0, corrid.astype(np.int64), 0)
            )
            out = np.where(ready != 0, total, 0).astype(np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
