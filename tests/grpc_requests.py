"""``ModelInferRequest`` messages for tests, made with the clients' one encoder.

:func:`infer_request` encodes with :func:`tritonclient._codec.grpc_client.encode_infer_request`
(what both gRPC clients send) and parses the bytes back into a message; ``typed_contents``
moves each input's data into its typed ``contents`` field, as other KServe clients send it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tritonclient._codec import grpc_client, grpc_common, grpc_framing, raw, types
from tritonclient._proto import service_pb2 as pb
from tritonclient.utils import raise_error


def encoded(
    model_name: str,
    inputs: Sequence[grpc_client.InputTensor],
    outputs: Sequence[grpc_client.RequestedOutput] | None = None,
    *,
    model_version: str = "",
    **options: Any,
) -> bytes:
    """The request's wire form (keyword arguments: :class:`InferOptions` fields)."""
    return grpc_client.encode_infer_request(
        model_name, inputs, outputs, model_version, types.InferOptions(**options)
    )


def infer_request(
    model_name: str,
    inputs: Sequence[grpc_client.InputTensor],
    outputs: Sequence[grpc_client.RequestedOutput] | None = None,
    *,
    model_version: str = "",
    typed_contents: bool = False,
    **options: Any,
) -> pb.ModelInferRequest:
    """The request as a message (raw contents in ``raw_input_contents`` or typed)."""
    data = encoded(model_name, inputs, outputs, model_version=model_version, **options)
    message = pb.ModelInferRequest.FromString(data)
    if typed_contents:
        message.ClearField("raw_input_contents")
        for tensor, entry in zip(inputs, message.inputs, strict=True):
            if tensor.data is None:
                continue
            set_contents(entry.contents, tensor.data, tensor.datatype, tensor.name)
    return message


def set_contents(contents: pb.InferTensorContents, data: Any, datatype: str, name: str) -> None:
    """Put ``data`` in the typed field of its datatype (BYTES: ``bytes_contents``)."""
    field_name = grpc_common.CONTENTS_FIELD.get(datatype)
    if field_name is None:
        raise_error(f"input '{name}': datatype '{datatype}' has no typed contents field")
    if not isinstance(data, np.ndarray):
        raise_error(f"input '{name}': typed contents need a numpy array")
    flat = data.reshape(-1)
    if datatype == "BYTES":
        values = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in flat.tolist()]
    else:
        raw.tensor_to_buffer(datatype, data)  # checks the dtype
        values = flat.tolist()
    getattr(contents, field_name).extend(values)


def request_parts(
    model_name: str, inputs: Sequence[grpc_client.InputTensor], **options: Any
) -> tuple[pb.ModelInferRequest, list[memoryview]]:
    """The request split as a server reads it: the message without raw contents, and them."""
    return grpc_framing.parse_infer_request(encoded(model_name, inputs, **options))
