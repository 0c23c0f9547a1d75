"""Custom request parameters: send string, int, bool and float parameters with a request.

Parameters travel with the request to the model (``request.parameters()`` in the Python
backend).  Names Triton reserves (``sequence_id``, ``priority``, ``triton_*``...) are refused.

    python examples/custom_parameters_client.py -i grpc -u localhost:8001
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from tritonclient.utils import InferenceServerException


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
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "INT32"),
        client_module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(a)
    parameters = {"my_string": "hello", "my_int": 42, "my_bool": True, "my_float": 0.5}
    print(f"  infer 'simple' with parameters {parameters}, priority 1, timeout 10 s")
    result = client.infer("simple", inputs, parameters=parameters, priority=1, timeout=10_000_000)
    check(np.array_equal(result.as_numpy("OUTPUT0"), a + a), "request with parameters succeeds")

    for reserved in ("sequence_id", "triton_enable_empty_final_response"):
        try:
            client.infer("simple", inputs, parameters={reserved: 1})
        except InferenceServerException as ex:
            check("reserved" in str(ex), f"reserved parameter '{reserved}' refused: {ex}")
        else:
            check(False, f"reserved parameter '{reserved}' was accepted")
    client.close()
    print("PASS: custom_parameters_client")


if __name__ == "__main__":
    main()
