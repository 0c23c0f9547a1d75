"""``bls_by_name``: runs ``INPUT0`` through the model that ``MODEL`` names, by BLS.

Inputs ``MODEL`` (BYTES, dims ``[1]``: a model taking ``INPUT0`` and answering ``OUTPUT0``,
e.g. ``identity_int32``) and ``INPUT0`` (INT32, dims ``[-1, -1]``); output ``OUTPUT0``, the
target's. The name goes to ``pb_utils.InferenceRequest(model_name=...)`` as the BYTES element
it is (``bytes``), which Triton's Python backend accepts; the target's error, if any, is the
response's.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """BLS to a model named by the request."""

    def execute(self, requests):
        responses = []
        for request in requests:
            name = pb_utils.get_input_tensor_by_name(request, "MODEL").as_numpy()[0]
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            answer = pb_utils.InferenceRequest(
                model_name=name,
                inputs=[pb_utils.Tensor("INPUT0", data)],
                requested_output_names=["OUTPUT0"],
            ).exec()
            if answer.has_error():
                responses.append(pb_utils.InferenceResponse(error=answer.error()))
            else:
                output = pb_utils.get_output_tensor_by_name(answer, "OUTPUT0")
                responses.append(pb_utils.InferenceResponse([output]))
        return responses
