"""``identity_<dtype>``: returns its input unchanged (one copy of this file per datatype).

Input ``INPUT0`` and output ``OUTPUT0`` have the datatype named by the model
(identity_bool ... identity_fp64, identity_bf16, identity_bytes) and any 2-D shape
(``max_batch_size: 0``, dims ``[-1, -1]``), including zero-sized ones.

BF16 has no numpy type, so BF16 tensors go through DLPack (``to_dlpack``/``from_dlpack``)
as the Python backend documentation prescribes; every other type goes through numpy.

Used by the project's datatype round-trip tests (HTTP JSON and binary, gRPC, shared memory).
"""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Identity model for one datatype, read from the model configuration."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        output = pb_utils.get_output_config_by_name(config, "OUTPUT0")
        self.use_dlpack = output["data_type"] == "TYPE_BF16"

    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            if self.use_dlpack:
                out0 = pb_utils.Tensor.from_dlpack("OUTPUT0", in0.to_dlpack())
            else:
                out0 = pb_utils.Tensor("OUTPUT0", in0.as_numpy())
            responses.append(pb_utils.InferenceResponse(output_tensors=[out0]))
        return responses
