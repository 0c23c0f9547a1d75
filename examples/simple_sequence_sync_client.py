"""Stateful sequences with synchronous ``infer``: two sequences interleaved on one model.

Without ``-d`` uses ``simple_sequence`` (OUTPUT = INPUT + START); with ``-d`` the dynamic batcher
model ``simple_dyna_sequence``, which also adds the correlation id on the last request.  Values
and expected outputs are those of Triton's ``simple_*_sequence_sync_infer_client.py``.

    python examples/simple_sequence_sync_client.py -i http -u localhost:8000 -d
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
    parser.add_argument("-d", "--dyna", action="store_true", help="use simple_dyna_sequence")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.protocol == "grpc":
        import tritonclient.grpc as client_module
    else:
        import tritonclient.http as client_module
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")
    client = client_module.InferenceServerClient(url, verbose=args.verbose)

    model = "simple_dyna_sequence" if args.dyna else "simple_sequence"
    values = [0, 11, 7, 5, 3, 2, 0, 1]
    sequences = {1000: 1, 1001: -1}  # sequence id -> sign of the values it sends
    got: dict[int, list[int]] = {seq: [] for seq in sequences}
    print(f"{args.protocol} client -> {url}: sequences {list(sequences)} on '{model}'")
    for step, value in enumerate(values):
        for seq, sign in sequences.items():
            tensor = client_module.InferInput("INPUT", [1, 1], "INT32")
            tensor.set_data_from_numpy(np.array([[sign * value]], dtype=np.int32))
            result = client.infer(
                model,
                [tensor],
                sequence_id=seq,
                sequence_start=step == 0,
                sequence_end=step == len(values) - 1,
            )
            got[seq].append(int(result.as_numpy("OUTPUT")[0, 0]))

    for seq, sign in sequences.items():
        expected = [sign * v for v in values]
        expected[0] += 1  # START adds 1
        if args.dyna:
            expected[-1] += seq  # END adds the correlation id
        print(f"  sequence {seq}: {got[seq]}")
        check(got[seq] == expected, f"sequence {seq} outputs == {expected}")
    client.close()
    print("PASS: simple_sequence_sync_client")


if __name__ == "__main__":
    main()
