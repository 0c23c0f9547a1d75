"""NVIDIA's import path of :mod:`tritonclient._proto.model_config_pb2`: the same module object.

The generated modules live in :mod:`tritonclient._proto` so that the server core and the codecs
can use them without importing the gRPC client; this alias keeps ``tritonclient.grpc.model_config_pb2``
working as in NVIDIA's package (``import``, ``from ... import`` and pickles alike).
"""

import sys

from tritonclient._proto import model_config_pb2 as _module

sys.modules[__name__] = _module
