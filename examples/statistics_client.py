"""Inference statistics: run a few requests, then read the model's counters.

python examples/statistics_client.py -i grpc -u localhost:8001
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

    def stats() -> dict:
        # gRPC: as_json=True gives a dict (int64 counters as strings); HTTP gives a dict.
        reply = client.get_inference_statistics("simple", as_json=True) if grpc else None
        reply = reply or client.get_inference_statistics("simple")
        return reply["model_stats"][0]

    before = stats()
    runs = 3
    data = np.ones((1, 16), dtype=np.int32)
    for _ in range(runs):
        inputs = [
            client_module.InferInput("INPUT0", [1, 16], "INT32"),
            client_module.InferInput("INPUT1", [1, 16], "INT32"),
        ]
        inputs[0].set_data_from_numpy(data)
        inputs[1].set_data_from_numpy(data)
        client.infer("simple", inputs)
    after = stats()

    success = int(after["inference_stats"]["success"]["count"])
    success -= int(before["inference_stats"]["success"].get("count", 0))
    count = int(after.get("inference_count", 0)) - int(before.get("inference_count", 0))
    print(f"  'simple' version {after['version']}: +{success} successful requests, +{count} items")
    check(after["name"] == "simple", "statistics are for 'simple'")
    check(success == runs, f"success count grew by {runs}")
    check(count == runs, f"inference count grew by {runs}")
    check(int(after["inference_stats"]["compute_infer"]["ns"]) > 0, "compute time recorded")

    everything = client.get_inference_statistics(as_json=True) if grpc else None
    everything = everything or client.get_inference_statistics()
    names = {m["name"] for m in everything["model_stats"]}
    print(f"  statistics for {len(names)} models")
    check("simple" in names and "repeat_int32" in names, "all-model statistics list every model")
    client.close()
    print("PASS: statistics_client")


if __name__ == "__main__":
    main()
