"""A tour of the SDK, run by the README's demo command.

Starts the bundled server on free ports, then drives it with this project's clients: health
and metadata, inference over gRPC and HTTP, an ensemble, BYTES tensors, a sequence, a decoupled
stream and system shared memory.  Prints what it does; exits non-zero on any wrong result; stops the
server at the end.
"""

from __future__ import annotations

import queue
import sys
import uuid
from typing import Any

import numpy as np

import tritonclient.grpc as grpcclient
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from shm import posix
from tritonclient.utils import HAVE_SPEEDUPS, InferenceServerException

try:
    import tritonclient.http as httpclient
except ImportError:  # the HTTP client needs the [http] extra
    httpclient = None  # type: ignore[assignment]


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def simple_inputs(module: Any, a: np.ndarray, b: np.ndarray) -> list[Any]:
    inputs = [
        module.InferInput("INPUT0", a.shape, "INT32"),
        module.InferInput("INPUT1", b.shape, "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return inputs


def tour_grpc(url: str) -> None:
    print(f"gRPC client -> {url}")
    with grpcclient.InferenceServerClient(url) as client:
        check(client.is_server_live() and client.is_server_ready(), "server live and ready")
        meta = client.get_server_metadata()
        check(
            meta.name == "triton",
            f"server metadata: {meta.name} {meta.version}, {len(meta.extensions)} extensions",
        )
        model = client.get_model_metadata("simple")
        check([i.name for i in model.inputs] == ["INPUT0", "INPUT1"], "model metadata of 'simple'")

        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.ones((1, 16), dtype=np.int32)
        result = client.infer("simple", simple_inputs(grpcclient, a, b))
        check(np.array_equal(result.as_numpy("OUTPUT0"), a + b), "infer 'simple': OUTPUT0 = a + b")
        check(np.array_equal(result.as_numpy("OUTPUT1"), a - b), "infer 'simple': OUTPUT1 = a - b")
        result = client.infer("simple_ensemble", simple_inputs(grpcclient, a, b))
        check(
            np.array_equal(result.as_numpy("OUTPUT0"), 2 * a),
            "ensemble 'simple_ensemble' (simple, then simple again): OUTPUT0 = 2a",
        )

        words = np.array([["hello", "wörld"]], dtype=np.object_)
        tensor = grpcclient.InferInput("INPUT0", words.shape, "BYTES")
        tensor.set_data_from_numpy(words)
        echoed = client.infer("identity_bytes", [tensor]).as_numpy("OUTPUT0")
        check(echoed[0, 1].decode() == "wörld", "BYTES tensor round trip (UTF-8 strings)")

        outputs = []
        for step, value in enumerate([0, 11, 7, 5]):
            data = np.array([[value]], dtype=np.int32)
            tensor = grpcclient.InferInput("INPUT", data.shape, "INT32")
            tensor.set_data_from_numpy(data)
            result = client.infer(
                "simple_sequence",
                [tensor],
                sequence_id=1001,
                sequence_start=step == 0,
                sequence_end=step == 3,
            )
            outputs.append(int(result.as_numpy("OUTPUT")[0, 0]))
        check(outputs == [1, 11, 7, 5], f"sequence 1001 on 'simple_sequence': {outputs}")

        responses: queue.Queue[Any] = queue.Queue()
        client.start_stream(callback=lambda result, error: responses.put((result, error)))
        values = np.array([4, 2, 0, 1], dtype=np.int32)
        inputs = [
            grpcclient.InferInput("IN", [4], "INT32"),
            grpcclient.InferInput("DELAY", [4], "UINT32"),
            grpcclient.InferInput("WAIT", [1], "UINT32"),
        ]
        inputs[0].set_data_from_numpy(values)
        inputs[1].set_data_from_numpy(np.zeros(4, np.uint32))
        inputs[2].set_data_from_numpy(np.zeros(1, np.uint32))
        client.async_stream_infer(
            "repeat_int32", inputs, request_id="stream-1", enable_empty_final_response=True
        )
        received = []
        while True:
            result, error = responses.get(timeout=30)
            if error is not None:
                check(False, f"stream error: {error}")
            response = result.get_response()
            if response.outputs:
                received.append(int(result.as_numpy("OUT")[0]))
            if response.parameters["triton_final_response"].bool_param:
                break
        client.stop_stream()
        check(received == [4, 2, 0, 1], f"decoupled stream from 'repeat_int32': {received}")

        try:
            client.infer("no_such_model", simple_inputs(grpcclient, a, b))
        except InferenceServerException as exc:
            check("unknown model" in exc.message(), f"clear error: {exc}")


def tour_http(url: str) -> None:
    if httpclient is None:
        print("HTTP client not installed; skipping (pip install tritonclient-ng[http])")
        return
    print(f"HTTP client -> {url}")
    client = httpclient.InferenceServerClient(url)
    try:
        check(client.is_server_ready(), "server ready")
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.full((1, 16), 2, dtype=np.int32)
        for binary in (True, False):
            inputs = [
                httpclient.InferInput("INPUT0", a.shape, "INT32"),
                httpclient.InferInput("INPUT1", b.shape, "INT32"),
            ]
            inputs[0].set_data_from_numpy(a, binary_data=binary)
            inputs[1].set_data_from_numpy(b, binary_data=binary)
            result = client.infer("simple", inputs)
            check(
                np.array_equal(result.as_numpy("OUTPUT0"), a + b),
                f"infer 'simple' with {'binary' if binary else 'JSON'} tensors",
            )

        # One POSIX object per region: Triton refuses a second region on a key it has already
        # registered (so does this server, to behave the same).
        in_key = f"/tour_in_{uuid.uuid4().hex[:8]}"
        out_key = f"/tour_out_{uuid.uuid4().hex[:8]}"
        in_region = posix.create(in_key, 128)
        out_region = posix.create(out_key, 64)
        try:
            in_region.buffer[:128] = np.concatenate([a, b]).tobytes()
            client.register_system_shared_memory("tour_in", in_key, 128)
            client.register_system_shared_memory("tour_out", out_key, 64)
            inputs = [
                httpclient.InferInput("INPUT0", a.shape, "INT32"),
                httpclient.InferInput("INPUT1", b.shape, "INT32"),
            ]
            inputs[0].set_shared_memory("tour_in", 64, offset=0)
            inputs[1].set_shared_memory("tour_in", 64, offset=64)
            output = httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)
            output.set_shared_memory("tour_out", 64)
            client.infer("simple", inputs, outputs=[output])
            result = np.frombuffer(out_region.buffer[:64], dtype=np.int32).reshape(1, 16)
            check(
                np.array_equal(result, a + b),
                "system shared memory: inputs and output never crossed the socket",
            )
            status = client.get_system_shared_memory_status()
            check(len(status) == 2, f"shared-memory status lists {len(status)} regions")
            client.unregister_system_shared_memory()
        finally:
            for region in (in_region, out_region):
                region.close()
                posix.unlink(region.key)

        # The generate extension (beyond NVIDIA's API): a vLLM-shaped model, token by token.
        tokens = [
            event["text_output"]
            for event in client.generate_stream(
                "vllm_model", {"text_input": "Tour", "stream": True, "max_tokens": 6}
            )
        ]
        check(len(tokens) == 6, f"generate_stream: {''.join(tokens)!r}, one event per token")
    finally:
        client.close()


def main() -> None:
    print(f"BYTES codec: {'C accelerator' if HAVE_SPEEDUPS else 'numpy fallback'}")
    ports = FrontendOptions(http_port=0, grpc_port=0, metrics_port=0)
    # The tour uses system shared memory: the server allows it, as Triton 2.73 started with
    # --allow-client-shm=true does (it refuses client shared memory by default).
    options = ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True)
    with MockServer(options, ports) as server:
        print(
            f"bundled server: HTTP {server.http_url}, gRPC {server.grpc_url}, "
            f"metrics {server.metrics_url}"
        )
        tour_grpc(server.grpc_url)
        tour_http(server.http_url)
    print("server stopped; tour complete")


if __name__ == "__main__":
    main()
