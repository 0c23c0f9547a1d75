"""Inference with the asyncio clients (``tritonclient.grpc.aio`` / ``tritonclient.http.aio``).

Sends several requests concurrently with ``asyncio.gather``.

    python examples/simple_aio_infer_client.py -i http -u localhost:8000
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import numpy as np


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


async def run(protocol: str, url: str, verbose: bool) -> None:
    if protocol == "grpc":
        import tritonclient.grpc.aio as client_module
    else:
        import tritonclient.http.aio as client_module

    print(f"{protocol} asyncio client -> {url}")
    client = client_module.InferenceServerClient(url, verbose=verbose)
    try:
        check(await client.is_server_live(), "server live")
        check(await client.is_model_ready("simple"), "model 'simple' ready")

        async def one(n: int) -> bool:
            a = np.full((1, 16), n, dtype=np.int32)
            b = np.arange(16, dtype=np.int32).reshape(1, 16)
            inputs = [
                client_module.InferInput("INPUT0", [1, 16], "INT32"),
                client_module.InferInput("INPUT1", [1, 16], "INT32"),
            ]
            inputs[0].set_data_from_numpy(a)
            inputs[1].set_data_from_numpy(b)
            result = await client.infer("simple", inputs)
            return np.array_equal(result.as_numpy("OUTPUT0"), a + b) and np.array_equal(
                result.as_numpy("OUTPUT1"), a - b
            )

        results = await asyncio.gather(*(one(n) for n in range(8)))
        check(all(results), f"{len(results)} concurrent requests: sums and differences right")
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", help="server URL (default localhost:8001 / 8000)")
    parser.add_argument("-i", "--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")
    asyncio.run(run(args.protocol, url, args.verbose))
    print("PASS: simple_aio_infer_client")


if __name__ == "__main__":
    main()
