"""Python clients for inference servers that speak the KServe v2 / NVIDIA Triton protocol.

A drop-in, wire-compatible replacement for NVIDIA's ``tritonclient`` package:
``tritonclient.grpc``, ``tritonclient.grpc.aio``, ``tritonclient.http``,
``tritonclient.http.aio`` and ``tritonclient.utils``.
"""

__version__ = "0.1.0"
