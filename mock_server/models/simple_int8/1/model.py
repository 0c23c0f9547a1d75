"""``simple_int8``: the ``simple`` model on INT8 vectors.

Inputs ``INPUT0`` and ``INPUT1`` (INT8, dims ``[16]``, batched up to 8); outputs
``OUTPUT0 = INPUT0 + INPUT1`` and ``OUTPUT1 = INPUT0 - INPUT1`` (INT8, wrapping on overflow).

Used by Triton's example client grpc_explicit_int8_content_client.py.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Add/sub model on INT8 tensors."""

    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            out0 = (in0 + in1).astype(in0.dtype)
            out1 = (in0 - in1).astype(in0.dtype)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUTPUT0", out0),
                        pb_utils.Tensor("OUTPUT1", out1),
                    ]
                )
            )
        return responses
