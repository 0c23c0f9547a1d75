"""The in-process API: ``import mock_server as tritonserver`` (like Triton's ``tritonserver``).

Starts a server inside this process on the bundled models (no network), lists the models, runs
``simple`` and streams the responses of the decoupled ``repeat_int32``.  Takes no URL.

    python examples/inprocess_client.py
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import mock_server as tritonserver
from mock_server.app import BUNDLED_MODELS


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-r", "--model-repository", default=str(BUNDLED_MODELS))
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    print(f"starting an in-process server on {args.model_repository}")
    server = tritonserver.Server(model_repository=args.model_repository)
    server.start(wait_until_ready=True)
    try:
        check(server.live() and server.ready(), "server live and ready")
        models = server.models()
        print(f"  {len(models)} models, e.g. {sorted(name for name, _ in models)[:4]}")
        if args.verbose:
            print(f"  metadata: {server.metadata()}")

        model = server.model("simple")
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.ones((1, 16), dtype=np.int32)
        responses = list(model.infer(inputs={"INPUT0": a, "INPUT1": b}))
        check(len(responses) == 1, "one response from 'simple'")
        outputs = responses[0].outputs
        sums = np.from_dlpack(outputs["OUTPUT0"])
        print(f"  OUTPUT0 = {sums[0]}")
        check(np.array_equal(sums, a + b), "OUTPUT0 == INPUT0 + INPUT1")
        check(np.array_equal(np.from_dlpack(outputs["OUTPUT1"]), a - b), "OUTPUT1 == a - b")

        values = [3, 1, 4, 1, 5]
        inputs = {
            "IN": np.array(values, dtype=np.int32),
            "DELAY": np.zeros(len(values), dtype=np.uint32),
            "WAIT": np.zeros(1, dtype=np.uint32),
        }
        received = []
        for response in server.model("repeat_int32").infer(inputs=inputs):
            if "OUT" in response.outputs:
                received.append(int(np.from_dlpack(response.outputs["OUT"])[0]))
        print(f"  'repeat_int32' streamed {received}")
        check(received == values, "one response per element, in order")
    finally:
        server.stop()
    print("PASS: inprocess_client")


if __name__ == "__main__":
    main()
