"""BYTES tensors in system shared memory: ``simple_string`` reads and writes serialized strings.

Strings are stored serialized (4-byte little-endian length + bytes per element); the output
region must be large enough for the longest result the model can write.  The server must allow
client shared memory (as Triton 2.73 needs ``--allow-client-shm=true``)::

    python -m mock_server --allow-client-shm=true
    python examples/shm_string_client.py -i http -u localhost:8000
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import tritonclient.utils.shared_memory as shm
from tritonclient.utils import serialize_byte_tensor, serialized_byte_size


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
    print(f"{args.protocol} client -> {url}: 'simple_string' through shared memory")

    a = np.array([[str(x) for x in range(16)]], dtype=np.object_)
    b = np.array([["1"] * 16], dtype=np.object_)
    a_size = serialized_byte_size(serialize_byte_tensor(a))  # bytes once serialized
    b_size = serialized_byte_size(serialize_byte_tensor(b))
    out_size = 16 * (4 + 4)  # room for 16 results of up to 4 characters each
    key = f"/strings_{os.getpid()}"
    in_handle = shm.create_shared_memory_region("str_in", key + "_in", a_size + b_size)
    out_handle = shm.create_shared_memory_region("str_out", key + "_out", 2 * out_size)
    try:
        shm.set_shared_memory_region(in_handle, [a, b])  # serializes BYTES arrays
        client.register_system_shared_memory("str_in", key + "_in", a_size + b_size)
        client.register_system_shared_memory("str_out", key + "_out", 2 * out_size)
        inputs = [
            client_module.InferInput("INPUT0", [1, 16], "BYTES"),
            client_module.InferInput("INPUT1", [1, 16], "BYTES"),
        ]
        inputs[0].set_shared_memory("str_in", a_size)
        inputs[1].set_shared_memory("str_in", b_size, offset=a_size)
        outputs = [
            client_module.InferRequestedOutput("OUTPUT0"),
            client_module.InferRequestedOutput("OUTPUT1"),
        ]
        outputs[0].set_shared_memory("str_out", out_size)
        outputs[1].set_shared_memory("str_out", out_size, offset=out_size)
        client.infer("simple_string", inputs, outputs=outputs)

        sums = shm.get_contents_as_numpy(out_handle, np.object_, [1, 16])
        diffs = shm.get_contents_as_numpy(out_handle, np.object_, [1, 16], offset=out_size)
        print(f"  OUTPUT0 from shared memory: {[s.decode() for s in sums[0]]}")
        check([int(s) for s in sums[0]] == [x + 1 for x in range(16)], "OUTPUT0 strings == a + b")
        check([int(s) for s in diffs[0]] == [x - 1 for x in range(16)], "OUTPUT1 strings == a - b")
    finally:
        client.unregister_system_shared_memory("str_in")
        client.unregister_system_shared_memory("str_out")
        shm.destroy_shared_memory_region(in_handle)
        shm.destroy_shared_memory_region(out_handle)
    client.close()
    print("PASS: shm_string_client")


if __name__ == "__main__":
    main()
