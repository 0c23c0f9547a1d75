"""System shared memory (``tritonclient.utils.shared_memory``): tensors that skip the socket.

Creates one POSIX shared-memory region for both inputs and one for both outputs, registers them
with the server, runs ``simple`` on them and reads the results straight from the output region.
The server must run on the same machine, started with client shared memory allowed (as Triton
2.73 is: it refuses client shared memory by default)::

    python -m mock_server --allow-client-shm=true
    python examples/system_shm_client.py -i grpc -u localhost:8001
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import tritonclient.utils.shared_memory as shm


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
    client.unregister_system_shared_memory()  # start clean

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    size = a.nbytes  # 64 bytes per tensor
    suffix = f"{os.getpid()}"
    in_handle = shm.create_shared_memory_region("input_data", f"/input_{suffix}", size * 2)
    out_handle = shm.create_shared_memory_region("output_data", f"/output_{suffix}", size * 2)
    try:
        shm.set_shared_memory_region(in_handle, [a, b])  # a at offset 0, b at offset 64
        client.register_system_shared_memory("input_data", f"/input_{suffix}", size * 2)
        client.register_system_shared_memory("output_data", f"/output_{suffix}", size * 2)
        print("  registered regions 'input_data' and 'output_data'")

        inputs = [
            client_module.InferInput("INPUT0", [1, 16], "INT32"),
            client_module.InferInput("INPUT1", [1, 16], "INT32"),
        ]
        inputs[0].set_shared_memory("input_data", size)
        inputs[1].set_shared_memory("input_data", size, offset=size)
        outputs = [
            client_module.InferRequestedOutput("OUTPUT0"),
            client_module.InferRequestedOutput("OUTPUT1"),
        ]
        outputs[0].set_shared_memory("output_data", size)
        outputs[1].set_shared_memory("output_data", size, offset=size)
        result = client.infer("simple", inputs, outputs=outputs)

        check(result.as_numpy("OUTPUT0") is None, "OUTPUT0 not in the response body")
        sums = shm.get_contents_as_numpy(out_handle, np.int32, [1, 16])
        diffs = shm.get_contents_as_numpy(out_handle, np.int32, [1, 16], offset=size)
        print(f"  OUTPUT0 from shared memory: {sums[0]}")
        check(np.array_equal(sums, a + b), "OUTPUT0 (in shared memory) == INPUT0 + INPUT1")
        check(np.array_equal(diffs, a - b), "OUTPUT1 (in shared memory) == INPUT0 - INPUT1")

        status = (
            client.get_system_shared_memory_status(as_json=True)
            if args.protocol == "grpc"
            else None
        )
        status = status["regions"] if status else client.get_system_shared_memory_status()
        names = sorted(status) if isinstance(status, dict) else sorted(r["name"] for r in status)
        print(f"  server-side regions: {names}")
        check(names == ["input_data", "output_data"], "status lists both regions")
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(in_handle)
        shm.destroy_shared_memory_region(out_handle)
    client.close()
    print("PASS: system_shm_client")


if __name__ == "__main__":
    main()
