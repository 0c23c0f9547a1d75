"""``simple``: element-wise sum and difference of two INT32 vectors.

Inputs ``INPUT0`` and ``INPUT1`` (INT32, dims ``[16]``, batched up to 8); outputs
``OUTPUT0 = INPUT0 + INPUT1`` and ``OUTPUT1 = INPUT0 - INPUT1`` with the same shape and type.

Used by Triton's example clients simple_{grpc,http}_infer_client.py, their async/aio
variants, simple_{grpc,http}_shm_client.py, simple_{grpc,http}_cudashm_client.py,
simple_{grpc,http}_health_metadata.py, simple_{grpc,http}_model_control.py,
grpc_explicit_int_content_client.py, reuse_infer_objects_client.py, grpc_client.py and
the keepalive/custom-args clients, and by ``bls_simple``.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Add/sub model; the output type follows the input type."""

    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            # Integer overflow wraps around, as in the reference model.
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
