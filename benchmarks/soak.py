"""Soak: a long stretch of mixed traffic against the bundled server; nothing may grow.

Usage
-----
``python benchmarks/soak.py [--requests N] [--chunk-seconds S] [--big-mib N]
[--tolerance F] [--workloads a,b,...]``

Starts ``python -m mock_server`` (default settings but ``--allow-client-shm=true``) on free
loopback ports and runs every workload of ``tests/loadgen.py`` at once (each in a client process of
its own, every answer checked) in chunks of ``--chunk-seconds``, until ``--requests`` requests
(default 100,000) have been answered.  After each chunk it reads, from ``/proc``, the server's
resident memory, open descriptors and threads, each stub process's resident memory, the number of
stub processes and of their ``/dev/shm`` objects (:mod:`tests.resources`).  The first chunk is the
warm-up; the soak passes when, at the end, every resident size is within ``--tolerance`` (default
10%) of its value after the warm-up (the highest reading of the warm-up; the end is the lower of
the last two readings: see :meth:`tests.resources.SoakResult.verdict`), descriptors, threads,
shared-memory objects and stub processes have not grown, and every request was answered right.

It prints one line per chunk (the curve) and the verdict; exit status 0 when it passed.
:func:`soak` is what ``tests/test_load.py`` runs, shorter, in the suite.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests import loadgen, resources  # noqa: E402

MiB = 1 << 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--chunk-seconds", type=float, default=60.0)
    parser.add_argument("--big-mib", type=float, default=64.0)
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--workloads", default=",".join(loadgen.WORKLOADS))
    args = parser.parse_args()
    started = time.monotonic()
    with loadgen.start_server() as served:
        result = resources.soak(
            served.http,
            served.grpc,
            served.process.pid,
            args.requests,
            args.chunk_seconds,
            int(args.big_mib * MiB),
            [w for w in args.workloads.split(",") if w],
        )
        result.problems.extend(served.trouble())
    problems = result.verdict(args.tolerance)
    start, end = result.samples[0], result.samples[-1]  # (the verdict's own readings differ)
    print(
        f"after warm-up ({result.requests[0]} requests) -> end ({result.requests[-1]}), "
        f"{time.monotonic() - started:.0f} s: server RSS {start.server_rss / MiB:.1f} -> "
        f"{end.server_rss / MiB:.1f} MiB; stubs' RSS "
        f"{sum(start.stub_rss.values()) / MiB:.1f} -> {sum(end.stub_rss.values()) / MiB:.1f} MiB "
        f"in all; fds {start.fds} -> {end.fds}; shared-memory fds {start.shm_fds} -> "
        f"{end.shm_fds}; threads {start.threads} -> {end.threads}; "
        f"/dev/shm {start.shm_objects} -> {end.shm_objects}; "
        f"processes {start.processes} -> {end.processes}"
    )
    print("PASS" if not problems else "FAIL:\n  " + "\n  ".join(problems[:30]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
