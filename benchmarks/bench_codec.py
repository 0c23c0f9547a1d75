"""Side-by-side benchmark of the BYTES tensor codec: this project vs NVIDIA's tritonclient.

Usage
-----
``python benchmarks/bench_codec.py [--elements N] [--repeat R] [--peer-python PATH]``

Both codecs run in one invocation, each in its own process: ours with this interpreter,
NVIDIA's with the interpreter of a separate virtual environment that has the official
``tritonclient`` (the peers' cache of ``scripts/peers.sh``, made on first use; NVIDIA's package is
never installed over ours).  Both processes build the same data from the same seed, time
``serialize_byte_tensor`` and ``deserialize_bytes_tensor`` (best of R runs, in alternating
rounds of the two sides), and report a SHA-256 of their outputs so the script can check that
the two produce identical bytes.
Results are printed as ns per element and as ratios (NVIDIA time / our time).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

CASES = {
    "bytes": "object array of bytes, 8-64 bytes each",
    "str": "object array of ASCII str, 8-64 characters each",
}


def make_data(case: str, n: int, seed: int) -> Any:
    """The benchmark input: identical in both processes for a given seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 65, n)
    if case == "str":
        blob = rng.integers(ord("a"), ord("z") + 1, int(lengths.sum()), dtype=np.uint8).tobytes()
    else:
        blob = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8).tobytes()
    ends = np.cumsum(lengths).tolist()
    starts = [0, *ends[:-1]]
    values: list[Any] = [blob[s:e] for s, e in zip(starts, ends, strict=True)]
    if case == "str":
        values = [v.decode("ascii") for v in values]
    arr = np.empty(n, dtype=np.object_)
    arr[:] = values
    return arr


def worker(case: str, n: int, repeat: int, seed: int) -> dict[str, Any]:
    """Time the codec importable as ``tritonclient.utils`` in this process."""
    import tritonclient.utils as utils

    arr = make_data(case, n, seed)
    best_ser = best_de = float("inf")
    encoded: Any = None
    decoded: Any = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        encoded = utils.serialize_byte_tensor(arr)
        t1 = time.perf_counter()
        decoded = utils.deserialize_bytes_tensor(encoded.item())
        t2 = time.perf_counter()
        best_ser = min(best_ser, t1 - t0)
        best_de = min(best_de, t2 - t1)
    digest = hashlib.sha256()
    for item in decoded.tolist():
        digest.update(len(item).to_bytes(4, "little"))
        digest.update(item)
    return {
        "module": utils.__file__,
        "is_ours": hasattr(utils, "HAVE_SPEEDUPS"),
        "serialize_ns": best_ser / n * 1e9,
        "deserialize_ns": best_de / n * 1e9,
        "serialized_sha256": hashlib.sha256(encoded.item()).hexdigest(),
        "deserialized_sha256": digest.hexdigest(),
    }


def peer_python(explicit: str | None) -> str:
    """Interpreter of the environment holding NVIDIA's package (created if needed)."""
    if explicit:
        return explicit
    # Imported here, not at the top: the worker processes must not see this repository on
    # sys.path, or NVIDIA's worker would import our tritonclient.
    sys.path.insert(0, str(HERE.parent))
    from tools.peers import NVIDIA_CLIENT

    return str(NVIDIA_CLIENT.ensure() / "bin" / "python")


def run_worker(
    python: str, case: str, n: int, repeat: int, seed: int, no_speedups: bool = False
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if no_speedups:
        env["TRITONCLIENT_DISABLE_SPEEDUPS"] = "1"
    out = subprocess.run(
        [
            python,
            str(Path(__file__).resolve()),
            "--worker",
            case,
            "--elements",
            str(n),
            "--repeat",
            str(repeat),
            "--seed",
            str(seed),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="worker runs per side, alternating ours and NVIDIA's (a busy machine's slow "
        "moments then fall on both); each side's best is kept",
    )
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--peer-python", help="python of a venv with NVIDIA's tritonclient")
    parser.add_argument(
        "--no-speedups",
        action="store_true",
        help="time our pure numpy fallback instead of the C accelerator",
    )
    parser.add_argument("--worker", choices=sorted(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        json.dump(worker(args.worker, args.elements, args.repeat, args.seed), sys.stdout)
        return 0

    nvidia_python = peer_python(args.peer_python)
    variant = "numpy fallback" if args.no_speedups else "C accelerator"
    print(
        f"BYTES codec ({variant}), {args.elements:,} elements, best of {args.repeat} x "
        f"{args.rounds} alternating rounds"
    )
    print(f"{'case':6} {'op':12} {'ours ns/el':>11} {'NVIDIA ns/el':>13} {'speed-up':>9}")
    identical = True
    for case in CASES:
        runs: dict[str, list[dict[str, Any]]] = {"ours": [], "NVIDIA": []}
        for _ in range(max(1, args.rounds)):
            runs["ours"].append(
                run_worker(
                    sys.executable, case, args.elements, args.repeat, args.seed, args.no_speedups
                )
            )
            runs["NVIDIA"].append(
                run_worker(nvidia_python, case, args.elements, args.repeat, args.seed)
            )
        ours, theirs = runs["ours"][0], runs["NVIDIA"][0]
        for key in ("serialize_ns", "deserialize_ns"):
            ours[key] = min(run[key] for run in runs["ours"])
            theirs[key] = min(run[key] for run in runs["NVIDIA"])
        if not ours["is_ours"] or theirs["is_ours"]:
            raise SystemExit(f"wrong package imported: {ours['module']}, {theirs['module']}")
        for op in ("serialize", "deserialize"):
            a, b = ours[f"{op}_ns"], theirs[f"{op}_ns"]
            print(f"{case:6} {op:12} {a:11.1f} {b:13.1f} {b / a:8.1f}x")
        same = all(ours[k] == theirs[k] for k in ("serialized_sha256", "deserialized_sha256"))
        identical &= same
        print(f"{case:6} {'output':12} {'identical' if same else 'DIFFERENT'}")
    print(f"ours:   {ours['module']}\nNVIDIA: {theirs['module']}")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
