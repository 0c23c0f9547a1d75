"""``simple_string_dyna_sequence``: a running sum per sequence, keyed by a string id.

Tensors: ``INPUT`` and ``OUTPUT`` (INT32, dims ``[1]``, batched up to 8). The sequence
batcher (oldest strategy) adds the control inputs ``START``, ``END``, ``READY`` (INT32,
0 or 1) and ``CORRID`` (BYTES, the request's string sequence id, which must be a decimal
integer such as ``"1002"``); clients send only ``INPUT`` with a sequence id and the
start/end flags.

The model keeps one accumulator per correlation id:

* ``READY == 0`` (an empty batch slot): ``OUTPUT = 0``, no state is touched.
* ``START == 1``: the accumulator is reset to ``INPUT``; otherwise ``INPUT`` is added to it.
* ``OUTPUT`` is the accumulator, plus ``int(CORRID)`` on the last request (``END == 1``),
  after which the sequence's state is dropped.

This reproduces what Triton's example clients assert for this model when run with ``-d``:
simple_{grpc,http}_sequence_sync_infer_client.py, simple_grpc_sequence_stream_infer_client.py
and their aio variants. For sequence ``"1002"`` sending ``[20, -11, -7, -5, -3, -2, 0, -1]``
they expect ``[20, 9, 2, -3, -6, -8, -8, -9 + 1002]``.

When the configuration has no ``CORRID`` control input the model keys its state by
``request.correlation_id()`` instead. That is how it is verified on Triton 2.51, whose
sequence batcher pads string ``CORRID`` tensors so that its own input validation rejects
them ("unexpected number of string elements 2 for inference input 'CORRID', expecting 1").
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def _key(raw):
    """Correlation id element (bytes or str) as a str."""
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)


class TritonPythonModel:
    """Running sum per string correlation id."""

    def initialize(self, args):
        # correlation id -> running sum; one instance sees every request of a sequence.
        self.accumulators = {}

    def _step(self, value, start, end, key):
        """Advance sequence ``key`` by one request; return its output value."""
        try:
            number = int(key)
        except ValueError:
            raise ValueError(
                f"simple_string_dyna_sequence needs correlation ids that are decimal "
                f"integers, got {key!r}"
            ) from None
        if start:
            total = value
        elif key in self.accumulators:
            total = self.accumulators[key] + value
        else:
            raise ValueError(f"sequence {key!r} was not started with the START flag")
        if end:
            self.accumulators.pop(key, None)
        else:
            self.accumulators[key] = total
        return total + number if end else total

    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()
            ready = pb_utils.get_input_tensor_by_name(request, "READY").as_numpy()
            corrid = pb_utils.get_input_tensor_by_name(request, "CORRID")
            if corrid is not None:
                keys = [_key(row.reshape(-1)[0]) for row in corrid.as_numpy()]
            else:
                keys = [str(request.correlation_id())] * value.shape[0]
            out = np.zeros(value.shape, dtype=np.int32)
            try:
                for row in range(value.shape[0]):
                    if ready[row].any():
                        out[row] = self._step(
                            int(value[row].reshape(-1)[0]),
                            bool(start[row].any()),
                            bool(end[row].any()),
                            keys[row],
                        )
            except ValueError as exc:
                error = pb_utils.TritonError(str(exc), pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
