"""gRPC keepalive: configure HTTP/2 pings with ``KeepAliveOptions``, then infer.

python examples/keepalive_client.py -u localhost:8001
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import tritonclient.grpc as grpcclient


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", default="localhost:8001", help="gRPC URL")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    keepalive = grpcclient.KeepAliveOptions(
        keepalive_time_ms=2**31 - 1,  # ping an idle connection after this long
        keepalive_timeout_ms=20000,  # wait this long for the ping's acknowledgement
        keepalive_permit_without_calls=False,
        http2_max_pings_without_data=2,
    )
    print(f"gRPC client -> {args.url} with {vars(keepalive)}")
    client = grpcclient.InferenceServerClient(
        args.url, verbose=args.verbose, keepalive_options=keepalive
    )
    check(client.is_server_live(), "server live")
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [
        grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
        grpcclient.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(a)
    result = client.infer("simple", inputs)
    check(np.array_equal(result.as_numpy("OUTPUT0"), a + a), "infer 'simple': OUTPUT0 == 2 * a")
    client.close()
    print("PASS: keepalive_client")


if __name__ == "__main__":
    main()
