"""``simple_sequence``: a sequence model that marks the first request of each sequence.

Tensors: ``INPUT`` and ``OUTPUT`` (INT32, dims ``[1]``, batched up to 8). The sequence
batcher (direct strategy) adds the control inputs ``START`` and ``READY`` (INT32, 0 or 1);
clients send only ``INPUT`` with a sequence id and the start/end flags.

Behaviour, per batch row:

* ``READY == 0`` (an empty batch slot): ``OUTPUT = 0``.
* first request of a sequence (``START == 1``): ``OUTPUT = INPUT + 1``.
* any later request: ``OUTPUT = INPUT``.

This reproduces what Triton's example clients assert for this model with integer and
string (UUID) sequence ids: simple_{grpc,http}_sequence_sync_infer_client.py,
simple_grpc_sequence_stream_infer_client.py and their aio variants, run without ``-d``.
For sequences ``[0, 11, 7, 5, 3, 2, 0, 1]`` and ``[100, -11, -7, ...]`` they expect
``[1, 11, 7, 5, 3, 2, 0, 1]`` and ``[101, -11, -7, ...]``.

The outputs need no memory between requests, so the model keeps none; see
``simple_string_dyna_sequence`` for a model that keeps per-sequence state.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Sequence model: OUTPUT = INPUT + START on ready slots."""

    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()
            ready = pb_utils.get_input_tensor_by_name(request, "READY").as_numpy()
            out = np.where(ready != 0, value + (start != 0), 0).astype(np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
