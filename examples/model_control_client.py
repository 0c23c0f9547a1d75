"""Model control (server in EXPLICIT mode): repository index, load, infer, unload.

Start the server with ``--model-control-mode=explicit``, e.g.
``python -m mock_server --model-control-mode explicit``.

    python examples/model_control_client.py -i grpc -u localhost:8001
"""

from __future__ import annotations

import argparse
import sys
import time
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
    parser.add_argument("-m", "--model", default="simple_int8", help="model to load and unload")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.protocol == "grpc":
        import tritonclient.grpc as client_module
    else:
        import tritonclient.http as client_module
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")
    client = client_module.InferenceServerClient(url, verbose=args.verbose)
    grpc = args.protocol == "grpc"
    model = args.model
    print(f"{args.protocol} client -> {url}")

    def index() -> dict[str, Any]:
        # gRPC (as_json): {"models": [{"name", "version", "state"}]}; HTTP: a list of dicts.
        reply = client.get_model_repository_index(as_json=True) if grpc else None
        entries = reply.get("models", []) if grpc else client.get_model_repository_index()
        return {entry["name"]: entry.get("state", "") for entry in entries}

    models = index()
    print(f"  repository index: {len(models)} models")
    check(model in models, f"'{model}' is in the repository index")

    if client.is_model_ready(model):
        client.unload_model(model)
    client.load_model(model)
    check(client.is_model_ready(model), f"load_model('{model}'): ready")
    check(index()[model] == "READY", "index shows it READY")

    a = np.array([[-128, -1, 0, 1, 100, 127] + [0] * 10], dtype=np.int8)
    b = np.ones((1, 16), dtype=np.int8)
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "INT8"),
        client_module.InferInput("INPUT1", [1, 16], "INT8"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer(model, inputs)
    check(np.array_equal(result.as_numpy("OUTPUT0"), a + b), "infer: OUTPUT0 == a + b (wrapping)")

    client.unload_model(model)
    for _ in range(100):  # unloading completes in the background
        if not client.is_model_ready(model):
            break
        time.sleep(0.05)
    check(not client.is_model_ready(model), f"unload_model('{model}'): no longer ready")
    check(index()[model] == "UNAVAILABLE", "index shows it UNAVAILABLE")
    client.close()
    print("PASS: model_control_client")


if __name__ == "__main__":
    main()
