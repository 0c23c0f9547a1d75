"""Health and metadata: server live/ready, server metadata, model ready/metadata/config.

python examples/health_metadata_client.py -i http -u localhost:8000
"""

from __future__ import annotations

import argparse
import sys


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

    check(client.is_server_live(), "server is live")
    check(client.is_server_ready(), "server is ready")
    check(client.is_model_ready("simple"), "model 'simple' is ready")
    check(not client.is_model_ready("no_such_model"), "unknown model is not ready")

    # gRPC returns protobuf messages (or dicts with as_json=True); HTTP returns dicts.
    meta = client.get_server_metadata(as_json=True) if grpc else client.get_server_metadata()
    print(f"  server: {meta['name']} {meta['version']}, extensions {meta['extensions']}")
    check(meta["name"] == "triton", "server metadata names 'triton'")

    model = client.get_model_metadata("simple", as_json=True) if grpc else None
    model = model or client.get_model_metadata("simple")
    inputs = [(t["name"], t["datatype"], t["shape"]) for t in model["inputs"]]
    print(f"  'simple' inputs: {inputs}")
    check([name for name, _, _ in inputs] == ["INPUT0", "INPUT1"], "model metadata inputs")
    check(all(dtype == "INT32" for _, dtype, _ in inputs), "inputs are INT32")

    config = client.get_model_config("simple", as_json=True) if grpc else None
    config = config["config"] if grpc else client.get_model_config("simple")
    print(f"  'simple' config: max_batch_size {config['max_batch_size']}")
    check(int(config["max_batch_size"]) == 8, "model config max_batch_size == 8")
    client.close()
    print("PASS: health_metadata_client")


if __name__ == "__main__":
    main()
