"""gRPC client for Triton / KServe v2 inference servers (``tritonclient.grpc``).

This package currently provides the protocol modules generated from ``proto/``, under the
names NVIDIA's package uses:

* :mod:`tritonclient.grpc.service_pb2` and :mod:`tritonclient.grpc.service_pb2_grpc`
  (``inference.GRPCInferenceService``),
* :mod:`tritonclient.grpc.model_config_pb2` (``inference.ModelConfig``).

The client classes (``InferenceServerClient``, ``InferInput``, ...) are not implemented
yet; they are tracked in the gRPC clients issue.
"""
