"""``bls_ensemble``: BLS requests to ensembles, as a Python model makes them.

* ``INPUT`` (FP32 ``[1, 4]``) goes to ``ensemble_chain`` with ``exec()``: ``OUTPUT`` is its
  ``OUTPUT``;
* ``COUNT`` goes to the decoupled ``ensemble_decoupled`` with ``exec(decoupled=True)``:
  ``VALUES`` collects the ``VALUE`` of every streamed response (the final one is empty);
* ``MODE`` goes to ``ensemble_fail``: ``ERROR`` is the error text of its response (the step's
  error, prefixed by the ensemble), empty when it succeeds.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def _input(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy()


class TritonPythonModel:
    """Calls three ensembles by BLS."""

    def execute(self, requests):
        responses = []
        for request in requests:
            chain = pb_utils.InferenceRequest(
                model_name="ensemble_chain",
                inputs=[pb_utils.Tensor("INPUT", _input(request, "INPUT"))],
                requested_output_names=["OUTPUT"],
            ).exec()
            if chain.has_error():
                raise pb_utils.TritonModelException(chain.error().message())
            output = pb_utils.get_output_tensor_by_name(chain, "OUTPUT").as_numpy()

            values = []
            stream = pb_utils.InferenceRequest(
                model_name="ensemble_decoupled",
                inputs=[pb_utils.Tensor("COUNT", _input(request, "COUNT"))],
                requested_output_names=["VALUE"],
            ).exec(decoupled=True)
            for response in stream:
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
                value = pb_utils.get_output_tensor_by_name(response, "VALUE")
                if value is not None:
                    values.append(int(value.as_numpy()[0]))

            failing = pb_utils.InferenceRequest(
                model_name="ensemble_fail",
                inputs=[pb_utils.Tensor("MODE", _input(request, "MODE"))],
                requested_output_names=["RESULT"],
            ).exec()
            error = failing.error().message() if failing.has_error() else ""

            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("OUTPUT", output.astype(np.float32)),
                        pb_utils.Tensor("VALUES", np.array(values, dtype=np.int32)),
                        pb_utils.Tensor("ERROR", np.array([error.encode()], dtype=np.object_)),
                    ]
                )
            )
        return responses
