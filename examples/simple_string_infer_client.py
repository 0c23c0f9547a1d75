"""BYTES (string) tensors: ``simple_string`` adds decimal strings; ``simple_identity`` echoes bytes.

python examples/simple_string_infer_client.py -i grpc -u localhost:8001
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

    print(f"{args.protocol} client -> {url}: 'simple_string' (numbers as strings)")
    a = np.array([[str(x) for x in range(16)]], dtype=np.object_)
    b = np.array([["1"] * 16], dtype=np.object_)
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "BYTES"),
        client_module.InferInput("INPUT1", [1, 16], "BYTES"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("simple_string", inputs)
    sums = [int(x) for x in result.as_numpy("OUTPUT0")[0]]
    diffs = [int(x) for x in result.as_numpy("OUTPUT1")[0]]
    print(f"  OUTPUT0 = {sums}")
    check(sums == [x + 1 for x in range(16)], "OUTPUT0 == INPUT0 + INPUT1 (as strings)")
    check(diffs == [x - 1 for x in range(16)], "OUTPUT1 == INPUT0 - INPUT1 (as strings)")

    print("'simple_identity': arbitrary bytes, NULs and UTF-8 included, come back unchanged")
    data = np.array([[b"hello", b"\x00nul\x00", "wörld".encode(), b""]], dtype=np.object_)
    tensor = client_module.InferInput("INPUT0", list(data.shape), "BYTES")
    tensor.set_data_from_numpy(data)
    echoed = client.infer("simple_identity", [tensor]).as_numpy("OUTPUT0")
    print(f"  OUTPUT0 = {echoed.tolist()}")
    check(echoed.tolist() == data.tolist(), "bytes round trip is exact")
    check(echoed[0, 2].decode() == "wörld", "UTF-8 string decodes")
    client.close()
    print("PASS: simple_string_infer_client")


if __name__ == "__main__":
    main()
