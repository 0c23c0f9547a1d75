"""Where the stub hop's time goes: a timeline of small requests through the bundled server's
stub channel, next to the floor of the same exchange.

Usage
-----
``python benchmarks/bench_hop.py [--quick] [--requests N] [--rounds N] [--busy-us US]
[--protocol http|grpc] [--whole]``

The timeline
    The bundled server (default isolation: ``simple`` in a stub process) serves ``--requests``
    sequential ``simple`` infers over ``--protocol`` (HTTP by default) from this project's
    client, with
    :mod:`hop_probe` installed in every process of its tree: it stamps each request at the
    points a request crosses (the server's send, the stub's read, the model's ``execute``, the
    stub's send, the server's read...) on the system-wide monotonic clock.  Each segment's
    median over the requests is printed; their sum is the model time the server's statistics
    report (``compute_input + compute_infer + compute_output``), which ``bench_server.py
    --hop-only`` compares with Triton's.

The floor
    Two Python processes exchange messages of the same sizes (the server's ``execute`` message,
    the stub's answer) over a connected Unix socket pair, with ``os.write`` and ``os.read``
    only: the cost of the two wake-ups and four system calls any design that sleeps between
    requests pays.  Measured back to back, and with the sender busy for the time a request's
    HTTP handling takes between exchanges (the receiver then sleeps longer, and its wake-up
    costs more, as in the server).

The whole request (``--whole``)
    The frontend's part too: from the handler's start to the model's lookup and the stub's
    wake-up ahead, the request's parsing and decoding, the core's checks and queue, the hop
    (begin to the server's read of the end), then the reply's dispatch, statistics and
    encoding back to the handler's return, and the time outside the handler until the next
    request's (the engine, the network, the client).

``--rounds`` repeats both and reports medians of the rounds' medians.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_clients as bc  # noqa: E402

#: The timeline's segments: (label, from event, to event).  The stub's write and the
#: server's wake-up overlap (the write returns while the server wakes), so both start at
#: ``ssend``.
SEGMENTS = (
    ("server: core to send", "begin", "send"),
    ("server: pack, pickle, write (wakes a sleeping stub)", "send", "sent"),
    ("stub: wake-up or poll, read, unpickle", "sent", "got"),
    ("stub: unpack, the model's request objects", "got", "cstart"),
    ("stub: the model's execute", "cstart", "cend"),
    ("stub: the response to the end message", "cend", "done"),
    ("stub: to the send", "done", "ssend"),
    ("stub: pickle, write (wakes a sleeping server)", "ssend", "ssent"),
    ("server: from the stub's send to the read", "ssend", "wake"),
    ("server: read, unpickle, dispatch", "wake", "executed"),
    ("server: deliver, route, statistics", "executed", "finish"),
    ("total: the model time (begin to finish)", "begin", "finish"),
)

#: The events :mod:`hop_probe` records (its docstring gives their order): a request counts
#: when it has all of them.
EVENTS = frozenset(event for _, start, end in SEGMENTS for event in (start, end))

#: ``--whole``: the frontend's part around the hop (``prev_out``: the previous request's
#: ``out``, where there was one).
WHOLE_SEGMENTS = (
    ("frontend: model lookup, wake-up ahead", "in", "ahead"),
    ("frontend: parse, decode", "ahead", "decoded"),
    ("core: request, validation, queue, claim", "decoded", "begin"),
    ("hop: core to send, the stub, the reply's read", "begin", "executed"),
    ("after: dispatch, statistics, encoding, to the handler", "executed", "out"),
    ("whole: inside the handler", "in", "out"),
    ("outside: the handler's return to the next request's start", "prev_out", "in"),
)
WHOLE_EVENTS = EVENTS | {"in", "ahead", "decoded", "out"}

_SITE = f"""import os, sys
if os.environ.get("BENCH_HOP_DIR"):
    sys.path.insert(0, {str(HERE)!r})
    import hop_probe
    hop_probe.install(os.environ["BENCH_HOP_DIR"])
    sys.path.remove({str(HERE)!r})
"""


def _requests(directory: Path, whole: bool = False) -> list[dict[str, int]]:
    """Each request's events (the first of each kind in order from ``begin`` to ``finish``,
    or with ``whole`` from ``in`` to ``out``; ``wake``: the last before ``executed``), from
    every process's file."""
    first, last, needed = ("in", "out", WHOLE_EVENTS) if whole else ("begin", "finish", EVENTS)
    previous_out: int | None = None
    events: list[tuple[int, str]] = []
    for path in directory.glob("*.txt"):
        for line in path.read_text().splitlines():
            event, stamp = line.split()
            events.append((int(stamp), event))
    events.sort()
    found: list[dict[str, int]] = []
    current: dict[str, int] | None = None
    for ns, name in events:
        if name == first:
            current = {first: ns}
            if previous_out is not None:
                current["prev_out"] = previous_out
        elif current is None:
            continue
        elif name == "wake" and "executed" not in current:
            current["wake"] = ns
        elif name not in current:
            current[name] = ns
            if name == last:
                if all(event in current for event in needed):
                    found.append(current)
                current = None
        if name == "out":
            previous_out = ns
    return found


def timeline(requests: int, protocol: str = "http", whole: bool = False) -> dict[str, float]:
    """One server run: each segment's median over ``requests`` sequential infers over
    ``protocol`` (the first quarter, and whatever a stub had not written yet, left out)."""
    with tempfile.TemporaryDirectory(prefix="bench-hop-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(_SITE)
        marks = Path(tmp) / "marks"
        marks.mkdir()
        env = {"PYTHONPATH": str(site), "BENCH_HOP_DIR": str(marks)}
        if whole:
            env["BENCH_HOP_WHOLE"] = "1"
        with bc.MockServer(models=("simple",), env=env) as server:
            sync, _ = bc._modules(protocol)
            inputs, outputs, want_sum, want_diff = bc._simple_inputs(sync, protocol)
            url = server.http_url if protocol == "http" else server.grpc_url
            client = bc._client(sync, protocol, url)
            try:
                for _ in range(requests):
                    result = client.infer("simple", inputs, outputs=outputs)
                bc._check_simple(result, want_sum, want_diff)
            finally:
                client.close()
        found = _requests(marks, whole)
    found = found[len(found) // 4 :]
    if not found:
        raise RuntimeError("no request's events were recorded (is hop_probe installed?)")
    medians = {
        label: statistics.median(r[end] - r[start] for r in found if start in r and end in r) / 1e3
        for label, start, end in SEGMENTS + (WHOLE_SEGMENTS if whole else ())
    }
    medians["requests"] = len(found)
    return medians


def _ping_pong(count: int, send_bytes: int, answer_bytes: int, busy_us: float) -> float:
    """The median round trip (us) of ``count`` exchanges with a forked process over a Unix
    socket pair, the sender busy ``busy_us`` between exchanges."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # the other side: read a message whole, answer it
        ours.close()
        fd = theirs.fileno()
        answer = b"a" * answer_bytes
        try:
            for _ in range(count):
                got = 0
                while got < send_bytes:
                    got += len(os.read(fd, send_bytes - got))
                os.write(fd, answer)
        finally:
            os._exit(0)
    theirs.close()
    fd = ours.fileno()
    message = b"m" * send_bytes
    trips: list[int] = []
    try:
        for _ in range(count):
            start = time.perf_counter_ns()
            os.write(fd, message)
            got = 0
            while got < answer_bytes:
                got += len(os.read(fd, answer_bytes - got))
            trips.append(time.perf_counter_ns() - start)
            until = time.perf_counter_ns() + busy_us * 1e3
            while time.perf_counter_ns() < until:
                pass
    finally:
        os.waitpid(pid, 0)
        ours.close()
    return statistics.median(trips) / 1e3


def _print_segments(
    runs: list[dict[str, float]], segments: tuple[tuple[str, str, str], ...], width: int
) -> None:
    """Each segment's median over the rounds, one line each."""
    for label, _, _ in segments:
        values = [run[label] for run in runs]
        print(f"  {label:{width}} {statistics.median(values):7.1f} us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="infers per server run")
    parser.add_argument("--rounds", type=int, default=3, help="repeat and take medians")
    parser.add_argument(
        "--busy-us", type=float, default=500, help="the floor's sender work between exchanges"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run (1 round, 400)")
    parser.add_argument("--protocol", choices=("http", "grpc"), default="http")
    parser.add_argument(
        "--whole", action="store_true", help="the frontend's part of the request too"
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.requests = 1, 400
    runs = [timeline(args.requests, args.protocol, args.whole) for _ in range(args.rounds)]
    floors = [
        (_ping_pong(3000, 340, 320, 0), _ping_pong(2000, 340, 320, args.busy_us))
        for _ in range(args.rounds)
    ]
    load = os.getloadavg()[0]
    print(
        f"\nThe stub hop of a small request (simple, {args.protocol.upper()}, c=1, this "
        f"project's client; medians of {args.rounds} round(s), {runs[0]['requests']:.0f}+ "
        f"requests each; load average {load:.1f}):"
    )
    _print_segments(runs, SEGMENTS, 56)
    if args.whole:
        print("The whole request around it (segments overlap: see the module's docstring):")
        _print_segments(runs, WHOLE_SEGMENTS, 60)
    back, busy = (statistics.median(f[i] for f in floors) for i in range(2))
    print(
        "  floor: the same exchange between two bare Python processes (os.write/os.read on a "
        f"Unix socket pair): {back:.1f} us back to back, {busy:.1f} us with the sender busy "
        f"{args.busy_us:.0f} us between exchanges"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
