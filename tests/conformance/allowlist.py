"""The one list of intended differences between mock_server and the real Triton 2.51.

Every differential case whose records differ between the two servers fails, unless its id is
here with the reason the difference is intended. An entry whose case no longer differs fails
too (a stale entry hides nothing, but it claims a difference that is gone), so this list is
always exactly the set of differences that exist.

Keys are case ids (``tests/conformance/cases_*.py``); values say why we differ on purpose.
"""

from __future__ import annotations

ALLOWED: dict[str, str] = {
    "crash-classification/http/classification-of-bytes": (
        "Triton 2.51 dies (SIGFPE) when asked to classify a BYTES output: the client's "
        "connection drops and the server is gone. mock_server answers with the classes of the "
        "elements' bytes and keeps serving."
    ),
}

_GRPC = ("grpc", "grpc.aio")
_HTTP = ("http", "http.aio")
_ALL = (*_GRPC, *_HTTP)


def _each(flavours: tuple[str, ...], what: str, reason: str) -> dict[str, str]:
    return {f"client/{flavour}/{what}": reason for flavour in flavours}


# Differences between NVIDIA's tritonclient 2.73 and ours, found by the client differential
# suite (test_client_differential.py): ``client/<sequence>/<call label>``. Each is a place
# where NVIDIA's package raises a foreign exception (a bug there) or where ours accepts more.
ALLOWED.update(
    {
        **_each(
            _ALL,
            "tensors/bytes from str_",
            "superset: ours sends a numpy str_ array to a BYTES input as UTF-8 elements; "
            "NVIDIA's refuses it (np_to_triton_dtype gives None for str_)",
        ),
        "client/utils/np_to_triton_dtype str_": (
            "superset: ours maps numpy str_ to BYTES (NVIDIA's gives None); the bundled "
            "server's python backend relies on it for models that return str_ arrays"
        ),
        **_each(
            _GRPC,
            "tensors/shape",
            "ours returns a list; NVIDIA's returns the protobuf RepeatedScalarContainer of "
            "its message (equal to the same list, and also iterable and indexable)",
        ),
        **_each(_GRPC, "tensors/shape after set_shape", "as tensors/shape"),
        **_each(
            _GRPC,
            "infer_errors/input without data",
            "NVIDIA's gRPC client sends an input that has no data and no shared memory: "
            "raw_input_contents then no longer lines up with the inputs (the server gives "
            "the next input's bytes to it, or fails on another input); ours refuses the "
            "request before sending it",
        ),
        **_each(
            _GRPC,
            "infer_errors/negative priority",
            "NVIDIA's gRPC client lets protobuf's ValueError ('Value out of range: -1') "
            "through; ours raises InferenceServerException",
        ),
        **_each(
            _GRPC,
            "shared_memory/as_numpy of an output in shm",
            "NVIDIA's gRPC InferResult.as_numpy raises numpy's ValueError (reshape of the "
            "empty raw content) for an output written to shared memory; ours returns None, "
            "as for an output that is not in the response (read it with "
            "get_contents_as_numpy)",
        ),
        **_each(
            _HTTP,
            "shared_memory/as_numpy of an output in shm",
            "NVIDIA's HTTP InferResult.as_numpy raises KeyError('data') for an output written "
            "to shared memory; ours returns None (read it with get_contents_as_numpy)",
        ),
        "client/grpc.aio/stream/stream_infer empty final": (
            "NVIDIA's aio stream_infer drops 'enable_empty_final_response' from the request "
            "dict (its request iterator never passes it on), so the final flag can never be "
            "asked for there; ours passes it, as the sync client's async_stream_infer does"
        ),
        **{
            f"client/grpc.aio/stream/stream_infer {what}": (
                "an invalid request dict: NVIDIA's aio stream_infer raises its "
                "InferenceServerException inside grpc's request iterator, which cancels the "
                "call, so the caller sees a bare asyncio.CancelledError; ours raises the "
                "InferenceServerException with NVIDIA's message"
            )
            for what in ("reserved", "not a dict", "no inputs")
        },
        **_each(
            _HTTP,
            "connection/metadata on a closed port",
            "NVIDIA's HTTP clients let the socket library's exception through "
            "(ConnectionRefusedError; aiohttp's ClientConnectorError); ours raises "
            "InferenceServerException (InferenceServerConnectionError, also a "
            "ConnectionError) with the hint to start a server",
        ),
        **_each(
            _HTTP, "connection/is_server_live on a closed port", "as metadata on a closed port"
        ),
        **{
            f"client/http.aio/{what}": (
                "NVIDIA's aio HTTP client raises NameError (it calls raise_error without "
                "importing it); ours raises InferenceServerException with NVIDIA's sync "
                "client's message"
            )
            for what in (
                "health/is_model_ready int version",
                "metadata/model metadata int version",
                "infer_errors/int version",
                "connection/client with scheme",
            )
        },
        **{
            f"client/utils/deserialize {what}": (
                "NVIDIA's deserialize_bytes_tensor lets struct.error through for a truncated "
                "buffer; ours raises InferenceServerException naming the element and offset"
            )
            for what in ("truncated", "short prefix")
        },
        **_each(
            _HTTP,
            "body/parse not json",
            "NVIDIA's parse_response_body lets rapidjson's JSONDecodeError through; ours "
            "raises InferenceServerException",
        ),
        **_each(
            _HTTP,
            "body/parse bad length",
            "a header length past the body: NVIDIA's parse_response_body fails later with "
            "numpy's ValueError (reshape of an empty buffer); ours raises "
            "InferenceServerException naming the length",
        ),
        "client/shm_utils/cuda raw handle of None": (
            "NVIDIA's cuda_shared_memory.get_raw_handle lets AttributeError through for "
            "something that is not a handle; ours raises CudaSharedMemoryException"
        ),
    }
)
