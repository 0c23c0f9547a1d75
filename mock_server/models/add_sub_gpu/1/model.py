"""``add_sub_gpu``: FP32 add/sub computed on the GPU when the instance is on one.

Inputs ``INPUT0`` and ``INPUT1`` (FP32, dims ``[-1]``, batched up to 8, same shape);
outputs ``OUTPUT0 = INPUT0 + INPUT1`` and ``OUTPUT1 = INPUT0 - INPUT1``.

Where it runs: when the server places the instance on a GPU (``model_instance_kind`` is
``"GPU"``; the config says ``KIND_AUTO``) and CuPy or PyTorch can use that GPU, inputs are
taken through DLPack (zero-copy for GPU inputs, one host-to-device copy for CPU inputs),
computed there, and the outputs are handed back through DLPack, still on the GPU.
Otherwise, e.g. on a CPU-only machine, it computes with numpy. The library in use is
logged at load time.

Used by the project's GPU and CUDA shared memory tests; works unchanged without a GPU.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def _gpu_library(device_id):
    """Return ("cupy"|"torch", module) able to use GPU ``device_id``, or (None, None)."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > device_id:
            return "cupy", cupy
    except Exception:  # not installed, or no usable CUDA driver
        pass
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.device_count() > device_id:
            return "torch", torch
    except Exception:
        pass
    return None, None


class TritonPythonModel:
    """Add/sub on CuPy, PyTorch or numpy, chosen once at load time."""

    def initialize(self, args):
        self.library, self.module = None, None
        self.device_id = int(args.get("model_instance_device_id") or 0)
        if args.get("model_instance_kind") == "GPU":
            self.library, self.module = _gpu_library(self.device_id)
        pb_utils.Logger.log_info(
            f"add_sub_gpu: instance kind {args.get('model_instance_kind')}, "
            f"device {self.device_id}, computing with {self.library or 'numpy'}"
        )

    def _to_array(self, tensor):
        """The tensor as an array of the library in use."""
        if self.library == "cupy":
            cupy = self.module
            with cupy.cuda.Device(self.device_id):
                if tensor.is_cpu():
                    return cupy.asarray(tensor.as_numpy())
                return cupy.from_dlpack(tensor)
        if self.library == "torch":
            return self.module.from_dlpack(tensor).to(f"cuda:{self.device_id}")
        if not tensor.is_cpu():
            raise ValueError("add_sub_gpu got a GPU tensor but runs without CuPy or PyTorch")
        return tensor.as_numpy()

    def _to_tensor(self, name, array):
        if self.library is None:
            return pb_utils.Tensor(name, np.ascontiguousarray(array, dtype=np.float32))
        return pb_utils.Tensor.from_dlpack(name, array)

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                in0 = self._to_array(pb_utils.get_input_tensor_by_name(request, "INPUT0"))
                in1 = self._to_array(pb_utils.get_input_tensor_by_name(request, "INPUT1"))
                if tuple(in0.shape) != tuple(in1.shape):
                    raise ValueError(
                        f"add_sub_gpu needs INPUT0 and INPUT1 of one shape, got "
                        f"{list(in0.shape)} and {list(in1.shape)}"
                    )
            except ValueError as exc:
                error = pb_utils.TritonError(str(exc), pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            outputs = [self._to_tensor("OUTPUT0", in0 + in1), self._to_tensor("OUTPUT1", in0 - in1)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
