"""``bls_simple``: business logic scripting, a model that calls another model.

Same tensors as ``simple``: inputs ``INPUT0`` and ``INPUT1`` (INT32, dims ``[16]``, batched
up to 8), outputs ``OUTPUT0`` and ``OUTPUT1``. For every request it builds a
``pb_utils.InferenceRequest`` for the ``simple`` model with the same inputs, runs it with
``exec()`` and returns that model's outputs; an error from ``simple`` (for example when it
is not loaded) is returned as this request's error. So ``OUTPUT0 = INPUT0 + INPUT1`` and
``OUTPUT1 = INPUT0 - INPUT1``, computed by ``simple``.

Used by the project's tests of BLS in the bundled server (needs ``simple`` loaded too).
"""

import triton_python_backend_utils as pb_utils

TARGET_MODEL = "simple"


class TritonPythonModel:
    """Forward each request to ``simple`` and relay its answer."""

    def execute(self, requests):
        responses = []
        for request in requests:
            inputs = [
                pb_utils.Tensor(name, pb_utils.get_input_tensor_by_name(request, name).as_numpy())
                for name in ("INPUT0", "INPUT1")
            ]
            inner = pb_utils.InferenceRequest(
                model_name=TARGET_MODEL,
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=inputs,
            )
            answer = inner.exec()
            if answer.has_error():
                error = pb_utils.TritonError(
                    f"bls_simple: inference on '{TARGET_MODEL}' failed: {answer.error().message()}"
                )
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            outputs = [
                pb_utils.Tensor(name, pb_utils.get_output_tensor_by_name(answer, name).as_numpy())
                for name in ("OUTPUT0", "OUTPUT1")
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
