"""CUDA shared memory (``tritonclient.utils.cuda_shared_memory``): tensors in GPU memory.

Allocates GPU buffers, shares them with the server through CUDA IPC handles and runs ``simple``
on them.  Needs a CUDA GPU and cuda-python on the client and the server's machine; without them
it prints why and exits 0.  The server must allow client shared memory (as Triton 2.73 needs
``--allow-client-shm=true``)::

    python -m mock_server --allow-client-shm=true
    python examples/cuda_shm_client.py -i grpc -u localhost:8001
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import tritonclient.utils.cuda_shared_memory as cudashm


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

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    size = a.nbytes
    try:
        in_handle = cudashm.create_shared_memory_region("cuda_in", size * 2, 0)
    except cudashm.CudaSharedMemoryException as ex:
        print(f"SKIP: no CUDA device or cuda-python here ({ex})")
        return
    out_handle = cudashm.create_shared_memory_region("cuda_out", size * 2, 0)

    client = client_module.InferenceServerClient(url, verbose=args.verbose)
    print(f"{args.protocol} client -> {url}: 'simple' with inputs and outputs on GPU 0")
    try:
        cudashm.set_shared_memory_region(in_handle, [a, b])
        client.register_cuda_shared_memory(
            "cuda_in", cudashm.get_raw_handle(in_handle), 0, 2 * size
        )
        client.register_cuda_shared_memory(
            "cuda_out", cudashm.get_raw_handle(out_handle), 0, 2 * size
        )
        inputs = [
            client_module.InferInput("INPUT0", [1, 16], "INT32"),
            client_module.InferInput("INPUT1", [1, 16], "INT32"),
        ]
        inputs[0].set_shared_memory("cuda_in", size)
        inputs[1].set_shared_memory("cuda_in", size, offset=size)
        outputs = [
            client_module.InferRequestedOutput("OUTPUT0"),
            client_module.InferRequestedOutput("OUTPUT1"),
        ]
        outputs[0].set_shared_memory("cuda_out", size)
        outputs[1].set_shared_memory("cuda_out", size, offset=size)
        client.infer("simple", inputs, outputs=outputs)

        sums = cudashm.get_contents_as_numpy(out_handle, np.int32, [1, 16])
        diffs = cudashm.get_contents_as_numpy(out_handle, np.int32, [1, 16], offset=size)
        print(f"  OUTPUT0 from GPU memory: {sums[0]}")
        check(np.array_equal(sums, a + b), "OUTPUT0 (in GPU memory) == INPUT0 + INPUT1")
        check(np.array_equal(diffs, a - b), "OUTPUT1 (in GPU memory) == INPUT0 - INPUT1")
    finally:
        client.unregister_cuda_shared_memory()
        cudashm.destroy_shared_memory_region(in_handle)
        cudashm.destroy_shared_memory_region(out_handle)
        client.close()
    print("PASS: cuda_shm_client")


if __name__ == "__main__":
    main()
