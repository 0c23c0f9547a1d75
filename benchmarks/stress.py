"""Stress: the bundled server under mixed traffic from many client processes while other work
busies every core; it must answer every request right, and no stub process may die.

Usage
-----
``python benchmarks/stress.py [--runs N] [--seconds S] [--big-mib N] [--burn N]
[--server-python PATH] [--workloads a,b,...]``

Each run starts ``python -m mock_server`` (the bundled models, default settings but
``--allow-client-shm=true``: models in stub processes, uvloop when installed) on free loopback
ports, keeps ``--burn`` processes spinning (default: one per core), and runs every workload of
``tests/loadgen.py`` at once, each in a client process of its own, for ``--seconds``: small
requests over both protocols, ensembles and BLS, ``--big-mib`` tensors over the wire and through
system shared memory (HTTP and gRPC), BYTES, decoupled gRPC streams, sequences and generate.  A run
fails when any request failed or got a wrong answer, when the server's log reports a stub process
that ended (or any traceback), when the server stops answering, or when its stubs or shared-memory
objects outlive it.

``--server-python`` runs the server on another interpreter (an older checkout's virtual
environment, to show a failure a fix removed); the clients always run this checkout's client.
Exit status 0 when every run passed.

``--hostile`` measures instead how the suite's hostile inputs (``tests/test_hostile_input.py``)
slow good traffic down (``tests/hostile_load.py``): per run, a fresh server, good requests from
five client processes (small HTTP and gRPC, an ensemble, a decoupled stream, BYTES) for 10 s on
the quiet server, then again while every attack runs once; it prints the good requests' p99
latency in both, their ratio (goal <= 2x) and the median ratio over ``--runs``.  ``--rate R``
paces each good client at R requests/s (default: as fast as answers come, which saturates two
cores).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests import hostile_load, loadgen  # noqa: E402


def hostile(runs: int, rate: float, server_python: str | None) -> int:
    """The ``--hostile`` measurement; exit status 0 when every run's attacks and good requests
    were answered right (the latency ratio is reported, not judged)."""
    ratios: list[float] = []
    failed = 0
    for run in range(1, runs + 1):
        with loadgen.start_server(server_python) as served:
            result = hostile_load.under_attack(served, rate=rate)
            problems = result.failures + served.trouble()
        problems += [e for o in result.quiet + result.attacked for e in o.errors[:3]]
        quiet, attacked = result.p99_quiet(), result.p99_attacked()
        ratios.append(attacked / quiet if quiet else float("inf"))
        failed += bool(problems)
        print(
            f"run {run}/{runs}: good requests {sum(o.count for o in result.quiet)} quiet, p99 "
            f"{quiet * 1e3:.1f} ms; {sum(o.count for o in result.attacked)} beside "
            f"{len(hostile_load.attacks())} attacks ({result.window[1] - result.window[0]:.0f} s"
            f" of them), p99 {attacked * 1e3:.1f} ms while they ran: {ratios[-1]:.2f}x"
            + ("" if not problems else "\n    " + "\n    ".join(problems[:20])),
            flush=True,
        )
    ratios.sort()
    print(f"median p99 ratio {ratios[len(ratios) // 2]:.2f}x (goal <= 2x); {failed} runs failed")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--big-mib", type=float, default=16.0)
    parser.add_argument("--burn", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--server-python", default=None)
    parser.add_argument("--workloads", default=",".join(loadgen.WORKLOADS))
    parser.add_argument("--hostile", action="store_true", help="measure p99 under attacks")
    parser.add_argument("--rate", type=float, default=0.0, help="--hostile: requests/s each")
    args = parser.parse_args()
    if args.hostile:
        return hostile(args.runs, args.rate, args.server_python)
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = sorted(set(workloads) - set(loadgen.WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; known: {sorted(loadgen.WORKLOADS)}")
    failed = 0
    for run in range(1, args.runs + 1):
        passed, report = loadgen.stress_run(
            args.seconds, int(args.big_mib * (1 << 20)), args.burn, args.server_python, workloads
        )
        failed += not passed
        print(f"run {run}/{args.runs}: {'PASS' if passed else 'FAIL'}: {report}", flush=True)
    print(f"{args.runs - failed} of {args.runs} runs passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
