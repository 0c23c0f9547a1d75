"""Compression: gRPC channel compression, HTTP request and response bodies gzip/deflate.

python examples/compression_client.py -i http -u localhost:8000
"""

from __future__ import annotations

import argparse
import sys

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
    client = client_module.InferenceServerClient(url, verbose=args.verbose)
    print(f"{args.protocol} client -> {url}")

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "INT32"),
        client_module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    for algorithm in ("gzip", "deflate"):
        if args.protocol == "grpc":
            result = client.infer("simple", inputs, compression_algorithm=algorithm)
        else:
            result = client.infer(
                "simple",
                inputs,
                request_compression_algorithm=algorithm,
                response_compression_algorithm=algorithm,
            )
        check(np.array_equal(result.as_numpy("OUTPUT0"), a + b), f"{algorithm}: OUTPUT0 == a + b")
        check(np.array_equal(result.as_numpy("OUTPUT1"), a - b), f"{algorithm}: OUTPUT1 == a - b")
    client.close()
    print("PASS: compression_client")


if __name__ == "__main__":
    main()
