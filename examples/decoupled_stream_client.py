"""Decoupled models over a gRPC stream: one request, many responses.

``repeat_int32`` sends one response per element of ``IN``; ``square_int32`` sends ``n``
responses ``OUT = n`` for ``IN = n``.  ``enable_empty_final_response`` asks for a flags-only last
response (parameter ``triton_final_response``) so the client knows the request is complete.

    python examples/decoupled_stream_client.py -u localhost:8001
"""

from __future__ import annotations

import argparse
import queue
import sys
from typing import Any

import numpy as np

import tritonclient.grpc as grpcclient


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def collect(responses: queue.Queue[tuple[Any, Any]]) -> list[int]:
    """Read one request's responses until the final flag; return their ``OUT`` values."""
    values = []
    while True:
        result, error = responses.get(timeout=30)
        check(error is None, f"stream response without error ({error})")
        response = result.get_response()
        if response.outputs:
            values.append(int(result.as_numpy("OUT")[0]))
        if response.parameters["triton_final_response"].bool_param:
            return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", default="localhost:8001", help="gRPC URL")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    client = grpcclient.InferenceServerClient(args.url, verbose=args.verbose)
    responses: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(callback=lambda result, error: responses.put((result, error)))

    values = np.array([4, 2, 0, 1, 9], dtype=np.int32)
    print(f"gRPC stream -> {args.url}: 'repeat_int32' with IN = {values.tolist()}")
    inputs = [
        grpcclient.InferInput("IN", [len(values)], "INT32"),
        grpcclient.InferInput("DELAY", [len(values)], "UINT32"),
        grpcclient.InferInput("WAIT", [1], "UINT32"),
    ]
    inputs[0].set_data_from_numpy(values)
    inputs[1].set_data_from_numpy(np.full(len(values), 10, dtype=np.uint32))  # 10 ms apart
    inputs[2].set_data_from_numpy(np.zeros(1, dtype=np.uint32))
    client.async_stream_infer("repeat_int32", inputs, enable_empty_final_response=True)
    received = collect(responses)
    print(f"  received {received}")
    check(received == values.tolist(), "one response per element, in order")

    for n in (3, 0):
        print(f"gRPC stream -> {args.url}: 'square_int32' with IN = [{n}]")
        tensor = grpcclient.InferInput("IN", [1], "INT32")
        tensor.set_data_from_numpy(np.array([n], dtype=np.int32))
        client.async_stream_infer("square_int32", [tensor], enable_empty_final_response=True)
        received = collect(responses)
        print(f"  received {received}")
        check(received == [n] * n, f"{n} responses of value {n}")

    client.stop_stream()
    client.close()
    print("PASS: decoupled_stream_client")


if __name__ == "__main__":
    main()
