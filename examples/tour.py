"""A short tour of what the SDK offers today; run by the README's demo command.

Shows the datatype tables, the BYTES and BF16 tensor codecs, and the gRPC protocol
messages (building a ModelInferRequest, parsing a config.pbtxt).  Exits non-zero if any
result is wrong.  The server and client tour joins it as those pieces land.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
from google.protobuf import text_format

from tritonclient.grpc import model_config_pb2, service_pb2
from tritonclient.utils import (
    HAVE_SPEEDUPS,
    InferenceServerException,
    deserialize_bf16_tensor,
    deserialize_bytes_tensor,
    np_to_triton_dtype,
    serialize_bf16_tensor,
    serialize_byte_tensor,
    triton_to_np_dtype,
)


def check(condition: bool, what: str) -> None:
    print(("ok    " if condition else "WRONG ") + what)
    if not condition:
        sys.exit(1)


def main() -> None:
    print(f"BYTES codec: {'C accelerator' if HAVE_SPEEDUPS else 'numpy fallback'}")
    for dtype in (np.float32, np.int64, bool, ml_dtypes.bfloat16, np.object_, np.str_):
        print(f"  {np.dtype(dtype).name:>9} -> {np_to_triton_dtype(dtype)}")
    check(triton_to_np_dtype("BF16") is ml_dtypes.bfloat16, "BF16 maps to ml_dtypes.bfloat16")

    strings = np.array([["hello", "wörld"], ["", "🚀"]], dtype=np.object_)
    wire = serialize_byte_tensor(strings).item()
    print(f"BYTES tensor {strings.shape} -> {len(wire)} wire bytes: {wire[:16]!r}...")
    back = deserialize_bytes_tensor(wire).reshape(strings.shape)
    check(back[0, 1].decode() == "wörld", "BYTES round trip (str elements as UTF-8)")
    try:
        deserialize_bytes_tensor(wire[:-2])
    except InferenceServerException as exc:
        check("byte offset" in str(exc), f"truncated buffer rejected: {exc}")

    bf16 = np.array([1.5, -2.25, 3.0], dtype=ml_dtypes.bfloat16)
    decoded = deserialize_bf16_tensor(serialize_bf16_tensor(bf16).item())
    check(decoded.tolist() == [1.5, -2.25, 3.0], "BF16 round trip")

    config = text_format.Parse(
        'name: "simple" max_batch_size: 8 '
        'input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [16] }]',
        model_config_pb2.ModelConfig(),
    )
    check(config.input[0].dims == [16], "config.pbtxt parsed into inference.ModelConfig")

    data = np.arange(16, dtype=np.int32).reshape(1, 16)
    request = service_pb2.ModelInferRequest(model_name="simple")
    request.inputs.add(name="INPUT0", datatype=np_to_triton_dtype(data.dtype), shape=data.shape)
    request.raw_input_contents.append(data.tobytes())
    wire_request = request.SerializeToString()
    parsed = service_pb2.ModelInferRequest.FromString(wire_request)
    restored = np.frombuffer(parsed.raw_input_contents[0], dtype=np.int32).reshape(1, 16)
    check(np.array_equal(restored, data), f"ModelInferRequest round trip ({len(wire_request)} B)")
    print("Server and clients: not built yet (see the open issues).")


if __name__ == "__main__":
    main()
