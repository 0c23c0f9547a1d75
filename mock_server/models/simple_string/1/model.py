"""``simple_string``: the ``simple`` model on integers carried as strings.

Inputs ``INPUT0`` and ``INPUT1`` are BYTES tensors (dims ``[16]``, batched up to 8) whose
elements are decimal integers written in UTF-8, e.g. ``b"12"``. Outputs ``OUTPUT0`` and
``OUTPUT1`` are BYTES tensors of the same shape holding the decimal sum and difference.
An element that is not an integer makes the whole request fail with INVALID_ARG.

Used by Triton's example clients simple_{grpc,http}_string_infer_client.py (and their
aio variants), simple_{grpc,http}_shm_string_client.py and
grpc_explicit_byte_content_client.py.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def _to_int64(array):
    """Parse an object array of bytes/str decimal integers into int64."""
    flat = [int(x.decode("utf-8") if isinstance(x, bytes) else x) for x in array.reshape(-1)]
    return np.array(flat, dtype=np.int64).reshape(array.shape)


def _to_strings(array):
    """Format an integer array as an object array of UTF-8 decimal strings."""
    flat = [str(int(x)).encode("utf-8") for x in array.reshape(-1)]
    return np.array(flat, dtype=np.object_).reshape(array.shape)


class TritonPythonModel:
    """Add/sub model on decimal strings."""

    def execute(self, requests):
        responses = []
        for request in requests:
            raw0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            raw1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            try:
                in0 = _to_int64(raw0)
                in1 = _to_int64(raw1)
            except (ValueError, UnicodeDecodeError) as exc:
                error = pb_utils.TritonError(
                    f"simple_string expects decimal integers in INPUT0 and INPUT1: {exc}",
                    pb_utils.TritonError.INVALID_ARG,
                )
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUTPUT0", _to_strings(in0 + in1)),
                        pb_utils.Tensor("OUTPUT1", _to_strings(in0 - in1)),
                    ]
                )
            )
        return responses
