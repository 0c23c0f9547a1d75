"""Stateful sequences over a gRPC bidirectional stream (``start_stream`` / ``async_stream_infer``).

Runs two interleaved integer-id sequences on ``simple_sequence`` (``-d``: ``simple_dyna_sequence``)
as Triton's ``simple_grpc_sequence_stream_infer_client.py`` does, then a string-id sequence on
``simple_string_dyna_sequence`` (a running sum per sequence).  gRPC only.

    python examples/simple_sequence_stream_client.py -u localhost:8001
"""

from __future__ import annotations

import argparse
import queue
import sys
from typing import Any

import numpy as np

import tritonclient.grpc as grpcclient


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def run_sequences(
    client: grpcclient.InferenceServerClient, model: str, sequences: dict[Any, list[int]]
) -> dict[Any, list[int]]:
    """Send every sequence's values interleaved on one stream; return outputs per sequence."""
    responses: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(callback=lambda result, error: responses.put((result, error)))
    length = len(next(iter(sequences.values())))
    for step in range(length):
        for seq, values in sequences.items():
            tensor = grpcclient.InferInput("INPUT", [1, 1], "INT32")
            tensor.set_data_from_numpy(np.array([[values[step]]], dtype=np.int32))
            client.async_stream_infer(
                model,
                [tensor],
                request_id=f"{seq}_{step}",
                sequence_id=seq,
                sequence_start=step == 0,
                sequence_end=step == length - 1,
            )
    got: dict[Any, list[int]] = {seq: [0] * length for seq in sequences}
    for _ in range(length * len(sequences)):
        result, error = responses.get(timeout=30)
        check(error is None, f"stream response without error ({error})")
        seq_text, step = result.get_response().id.rsplit("_", 1)
        seq = next(s for s in sequences if str(s) == seq_text)
        got[seq][int(step)] = int(result.as_numpy("OUTPUT")[0, 0])
    client.stop_stream()
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", default="localhost:8001", help="gRPC URL")
    parser.add_argument("-d", "--dyna", action="store_true", help="use simple_dyna_sequence")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    client = grpcclient.InferenceServerClient(args.url, verbose=args.verbose)

    model = "simple_dyna_sequence" if args.dyna else "simple_sequence"
    values = [0, 11, 7, 5, 3, 2, 0, 1]
    print(f"gRPC stream -> {args.url}: sequences 1000 and 1001 on '{model}'")
    got = run_sequences(client, model, {1000: values, 1001: [-v for v in values]})
    for seq, sign in ((1000, 1), (1001, -1)):
        expected = [sign * v for v in values]
        expected[0] += 1  # START adds 1
        if args.dyna:
            expected[-1] += seq  # END adds the correlation id
        print(f"  sequence {seq}: {got[seq]}")
        check(got[seq] == expected, f"sequence {seq} outputs == {expected}")

    print(f"gRPC stream -> {args.url}: string sequence id '1002' on 'simple_string_dyna_sequence'")
    values = [20, -11, -7, -5, -3, -2, 0, -1]
    got = run_sequences(client, "simple_string_dyna_sequence", {"1002": values})
    expected = [20, 9, 2, -3, -6, -8, -8, 993]  # running sum, + int("1002") on the last request
    print(f"  sequence '1002': {got['1002']}")
    check(got["1002"] == expected, f"sequence '1002' outputs == {expected}")
    client.close()
    print("PASS: simple_sequence_stream_client")


if __name__ == "__main__":
    main()
