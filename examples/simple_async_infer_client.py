"""Asynchronous inference (``async_infer``) on ``simple``: several requests in flight at once.

gRPC takes a callback ``(result, error)``; HTTP returns a handle whose ``get_result()`` waits.

    python examples/simple_async_infer_client.py -i grpc -u localhost:8001
"""

from __future__ import annotations

import argparse
import queue
import sys
from typing import Any

import numpy as np


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", help="server URL (default localhost:8001 / 8000)")
    parser.add_argument("-i", "--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.protocol == "grpc":
        import tritonclient.grpc as client_module
    else:
        import tritonclient.http as client_module
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")

    count = 4
    print(f"{args.protocol} client -> {url}: {count} async_infer requests on 'simple'")
    if args.protocol == "http":
        client = client_module.InferenceServerClient(url, verbose=args.verbose, concurrency=count)
    else:
        client = client_module.InferenceServerClient(url, verbose=args.verbose)

    expected = {}
    done: queue.Queue[tuple[Any, Any]] = queue.Queue()
    handles = []
    for n in range(count):
        a = np.full((1, 16), n, dtype=np.int32)
        b = np.arange(16, dtype=np.int32).reshape(1, 16)
        inputs = [
            client_module.InferInput("INPUT0", [1, 16], "INT32"),
            client_module.InferInput("INPUT1", [1, 16], "INT32"),
        ]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        expected[str(n)] = a + b
        if args.protocol == "grpc":
            # The callback is called with keyword arguments ``result`` and ``error``.
            client.async_infer(
                "simple",
                inputs,
                callback=lambda result, error: done.put((result, error)),
                request_id=str(n),
            )
        else:
            handles.append(client.async_infer("simple", inputs, request_id=str(n)))

    results = []
    if args.protocol == "grpc":
        for _ in range(count):
            result, error = done.get(timeout=30)
            check(error is None, f"callback without error ({error})")
            results.append(result)
    else:
        results = [handle.get_result() for handle in handles]

    for result in results:
        response = result.get_response()  # a dict over HTTP, a protobuf message over gRPC
        request_id = response["id"] if args.protocol == "http" else response.id
        check(
            np.array_equal(result.as_numpy("OUTPUT0"), expected[request_id]),
            f"request {request_id}: OUTPUT0 == INPUT0 + INPUT1",
        )
    check(len(results) == count, f"{count} responses received")
    client.close()
    print("PASS: simple_async_infer_client")


if __name__ == "__main__":
    main()
