"""Classification outputs: ask for the top-k entries of an output instead of the tensor.

With ``class_count=k`` the server returns the k largest values of each batch item as BYTES
strings ``"<value>:<index>"`` (``"<value>:<index>:<label>"`` when the model has labels).

    python examples/classification_client.py -i http -u localhost:8000
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
    parser.add_argument("-k", "--top", type=int, default=3, help="classes to return")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.protocol == "grpc":
        import tritonclient.grpc as client_module
    else:
        import tritonclient.http as client_module
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")
    client = client_module.InferenceServerClient(url, verbose=args.verbose)
    print(f"{args.protocol} client -> {url}: top {args.top} of 'simple' OUTPUT0")

    rng = np.random.default_rng(0)
    a = rng.permutation(16).astype(np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "INT32"),
        client_module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    output = client_module.InferRequestedOutput("OUTPUT0", class_count=args.top)
    result = client.infer("simple", inputs, outputs=[output])

    entries = [x.decode() if isinstance(x, bytes) else x for x in result.as_numpy("OUTPUT0")[0]]
    print(f"  classes: {entries}")
    sums = (a + b)[0]
    order = np.argsort(-sums, kind="stable")[: args.top]
    expected = [f"{sums[i]}:{i}" for i in order]
    check(entries == expected, f"top {args.top} '<value>:<index>' entries == {expected}")
    client.close()
    print("PASS: classification_client")


if __name__ == "__main__":
    main()
