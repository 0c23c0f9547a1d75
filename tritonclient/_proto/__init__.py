"""The Python modules generated from ``proto/`` (``python proto/generate.py``).

Their home is neutral: importing ``tritonclient._proto.service_pb2`` or ``model_config_pb2``
loads protobuf and nothing else (no client, no grpcio; only ``service_pb2_grpc`` needs grpcio).
The server core, the codecs and the frontends import them from here; NVIDIA's import paths
(``tritonclient.grpc.service_pb2``, ``service_pb2_grpc``, ``model_config_pb2``) are aliases of
the same module objects.
"""
