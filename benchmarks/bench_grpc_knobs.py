"""grpcio's transport knobs on large messages: a raw echo, no codec, no server core (issue 16).

Usage
-----
``python benchmarks/bench_grpc_knobs.py [--rounds N] [--sizes MiB,...] [--malloc-no-mmap]``

A sync ``grpc.server`` answers each unary call with its request bytes; a sync channel in a
second process sends ``--sizes`` MiB of random bytes.  Each configuration of channel arguments
(the same on both sides: HTTP/2 stream window ``grpc.http2.lookahead_bytes``, BDP probing,
``grpc.http2.max_frame_size``, TCP read chunk sizes, write buffer size) runs in the same
interleaved rounds; the figures are the best payload MB/s of four round trips and the median
CPU of client and server per payload byte (both directions).  This is the ceiling of grpcio's
transport on this machine: ``bench_server.py`` and ``bench_clients.py`` can move a 64 MiB
tensor no faster over gRPC.

``--malloc-no-mmap`` runs both processes with glibc's ``MALLOC_MMAP_MAX_=0`` (and no heap
trimming): each 64 MiB buffer (the request bytes, grpc's copy into its slices, the received
message's bytes) then reuses heap pages instead of a fresh mapping whose every page faults,
which shows how much of the per-byte cost is page faults.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MiB = 1 << 20
_UNLIMITED = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]

CONFIGS: dict[str, list[tuple[str, int]]] = {
    "defaults": [],
    "window 64 MiB": [("grpc.http2.lookahead_bytes", 64 * MiB)],
    "window 64 MiB, no BDP probe": [
        ("grpc.http2.lookahead_bytes", 64 * MiB),
        ("grpc.http2.bdp_probe", 0),
    ],
    "frames 16 MiB": [("grpc.http2.max_frame_size", 16 * MiB - 1)],
    "window + frames": [
        ("grpc.http2.lookahead_bytes", 64 * MiB),
        ("grpc.http2.max_frame_size", 16 * MiB - 1),
    ],
    "TCP reads 4..16 MiB": [
        ("grpc.experimental.tcp_read_chunk_size", 4 * MiB),
        ("grpc.experimental.tcp_min_read_chunk_size", 1 * MiB),
        ("grpc.experimental.tcp_max_read_chunk_size", 16 * MiB),
    ],
    "write buffer 16 MiB": [("grpc.http2.write_buffer_size", 16 * MiB)],
}


def serve(options: list[tuple[str, int]], port_file: str) -> None:
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(4), options=options + _UNLIMITED)
    echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("E", {"E": echo})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    Path(port_file).write_text(str(port))
    server.wait_for_termination()


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client(spec: dict[str, Any]) -> dict[str, float]:
    import grpc

    options = [tuple(o) for o in spec["options"]]
    channel = grpc.insecure_channel(spec["target"], options=options + _UNLIMITED)
    call = channel.unary_unary("/E/E")
    data = os.urandom(spec["nbytes"])
    if len(call(data)) != len(data):  # warm-up
        raise AssertionError("echo differs in size")
    walls = []
    c0, s0 = time.process_time(), _cpu_s(spec["server_pid"])
    for _ in range(4):
        w0 = time.perf_counter()
        if call(data) != data:
            raise AssertionError("echo differs")
        walls.append(time.perf_counter() - w0)
    cpu = time.process_time() - c0
    server = _cpu_s(spec["server_pid"]) - s0
    channel.close()
    per_byte = 1e9 / (4 * spec["nbytes"])
    return {
        "mbps": spec["nbytes"] / min(walls) / 1e6,
        "client_ns": cpu * per_byte,
        "server_ns": server * per_byte,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="16,64", help="payload sizes in MiB")
    parser.add_argument("--only", help="comma-separated configuration names")
    parser.add_argument("--malloc-no-mmap", action="store_true")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        spec = json.loads(args.serve)
        serve([tuple(o) for o in spec["options"]], spec["port_file"])
        return 0
    if args.client:
        json.dump(client(json.loads(args.client)), sys.stdout)
        return 0
    env = dict(os.environ)
    if args.malloc_no_mmap:
        env.update(MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_=str(1 << 40))
    names = args.only.split(",") if args.only else list(CONFIGS)
    sizes = [int(s) for s in args.sizes.split(",")]
    servers: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    tmp = tempfile.TemporaryDirectory(prefix="bench-grpc-knobs-")
    try:
        for name in names:
            port_file = str(Path(tmp.name) / f"{len(servers)}.port")
            spec = json.dumps({"options": CONFIGS[name], "port_file": port_file})
            proc = subprocess.Popen([sys.executable, __file__, "--serve", spec], env=env)
            deadline = time.monotonic() + 60
            while not (os.path.exists(port_file) and os.path.getsize(port_file)):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the echo server for {name!r} did not start")
                time.sleep(0.05)
            servers[name] = (proc, int(Path(port_file).read_text()))
        for _ in range(args.rounds):
            for name in names:
                proc, port = servers[name]
                for size in sizes:
                    spec = json.dumps(
                        {
                            "options": CONFIGS[name],
                            "target": f"127.0.0.1:{port}",
                            "nbytes": size * MiB,
                            "server_pid": proc.pid,
                        }
                    )
                    out = subprocess.run(
                        [sys.executable, __file__, "--client", spec],
                        capture_output=True,
                        text=True,
                        env=env,
                        timeout=600,
                        check=True,
                    )
                    results.setdefault((name, size), []).append(json.loads(out.stdout))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()
        tmp.cleanup()
    malloc = " (MALLOC_MMAP_MAX_=0)" if args.malloc_no_mmap else ""
    print(f"\ngrpcio raw echo, {args.rounds} interleaved round(s){malloc}; {os.cpu_count()} CPUs")
    print(f"{'configuration':30} {'MiB':>4} {'MB/s':>7} {'client ns/B':>12} {'server ns/B':>12}")
    for name in names:
        for size in sizes:
            runs = results[(name, size)]
            print(
                f"{name:30} {size:4} {statistics.median(r['mbps'] for r in runs):7.0f} "
                f"{statistics.median(r['client_ns'] for r in runs):12.2f} "
                f"{statistics.median(r['server_ns'] for r in runs):12.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
