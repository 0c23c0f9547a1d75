"""Synchronous inference on the ``simple`` model (OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = difference).

python examples/simple_infer_client.py -i grpc -u localhost:8001
python examples/simple_infer_client.py -i http -u localhost:8000
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

    print(f"{args.protocol} client -> {url}: infer 'simple'")
    client = client_module.InferenceServerClient(url, verbose=args.verbose)
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "INT32"),
        client_module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    outputs = [
        client_module.InferRequestedOutput("OUTPUT0"),
        client_module.InferRequestedOutput("OUTPUT1"),
    ]
    result = client.infer("simple", inputs, outputs=outputs, request_id="1")
    print(f"  OUTPUT0 = {result.as_numpy('OUTPUT0')[0]}")
    print(f"  OUTPUT1 = {result.as_numpy('OUTPUT1')[0]}")
    check(np.array_equal(result.as_numpy("OUTPUT0"), a + b), "OUTPUT0 == INPUT0 + INPUT1")
    check(np.array_equal(result.as_numpy("OUTPUT1"), a - b), "OUTPUT1 == INPUT0 - INPUT1")
    check(result.get_response() is not None, "raw response available")
    client.close()
    print("PASS: simple_infer_client")


if __name__ == "__main__":
    main()
