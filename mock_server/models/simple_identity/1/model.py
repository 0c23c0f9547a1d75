"""``simple_identity``: returns its BYTES input unchanged.

Input ``INPUT0`` (BYTES, dims ``[-1]``, batched up to 8); output ``OUTPUT0`` is the same
tensor, byte for byte (elements may hold NUL bytes or arbitrary binary data).

Used by Triton's example clients simple_{grpc,http}_string_infer_client.py (the
``identity_inference`` part: a string with an embedded NUL and 4-byte binary blobs).
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """BYTES identity model."""

    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("OUTPUT0", in0.as_numpy())]
                )
            )
        return responses
