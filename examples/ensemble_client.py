"""An ensemble: one request, a pipeline of models run by the server.

The bundled ``simple_ensemble`` runs ``simple`` twice (sum and difference, then the sum and the
difference of those): its outputs are twice its inputs. The client sends one request; the server
runs the steps and counts them in the statistics of ``simple``.

python examples/ensemble_client.py -i grpc -u localhost:8001
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
    grpc = args.protocol == "grpc"
    print(f"{args.protocol} client -> {url}")

    metadata = client.get_model_metadata("simple_ensemble", as_json=grpc) if grpc else None
    metadata = metadata or client.get_model_metadata("simple_ensemble")
    check(metadata["platform"] == "ensemble", "'simple_ensemble' is an ensemble")
    config = client.get_model_config("simple_ensemble", as_json=True) if grpc else None
    config = config["config"] if config else client.get_model_config("simple_ensemble")
    steps = [step["model_name"] for step in config["ensemble_scheduling"]["step"]]
    print(f"  steps: {' -> '.join(steps)}")
    check(steps == ["simple", "simple"], "two steps, both 'simple'")

    def simple_count() -> int:
        reply = client.get_inference_statistics("simple", as_json=True) if grpc else None
        reply = reply or client.get_inference_statistics("simple")
        return int(reply["model_stats"][0]["inference_stats"]["success"].get("count", 0))

    before = simple_count()
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 5, dtype=np.int32)
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "INT32"),
        client_module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("simple_ensemble", inputs)
    check(np.array_equal(result.as_numpy("OUTPUT0"), 2 * a), "OUTPUT0 = 2 * INPUT0")
    check(np.array_equal(result.as_numpy("OUTPUT1"), 2 * b), "OUTPUT1 = 2 * INPUT1")
    check(simple_count() - before == 2, "'simple' ran twice for the one ensemble request")
    client.close()
    print("PASS: ensemble_client")


if __name__ == "__main__":
    main()
