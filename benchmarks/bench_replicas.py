"""Clients over several replicas: requests/s with 8 in flight and client CPU per call, against
one and three ``mock_server`` processes, compared with the single-URL client.

Usage
-----
``python benchmarks/bench_replicas.py [--seconds S] [--rounds R]``

For each client (HTTP sync: 8 threads calling ``infer``; HTTP aio: 8 tasks; gRPC sync: 8
threads; gRPC aio: 8 tasks) and each way of naming the servers:

``single``   ``url`` a string, one replica (the client as before);
``list-1``   ``url`` a list of that one replica: the balancing machinery with nothing to
             spread (its overhead alone, same server);
``list-3``   ``url`` a list of three replicas;
``same-3``   ``url`` a list naming the first replica three times: the client's machinery for
             three replicas (three transports and connection pools, the balancer) against
             one server process, the control that separates the client's cost from that of
             running three servers on the same cores.

it runs ``simple`` (INT32 [1,16] x2, outputs checked) for S seconds with 8 calls in flight and
reports requests/s and client CPU per call (``time.process_time()`` of this process, which
holds only the client: the servers are other processes).  The configurations alternate for
R rounds; the table gives the medians, and the CPU ratios are the medians of the ratios
within each round (runs made back to back), which evens out the noise of a shared machine.
On a 2-core machine the servers and the client share the cores, so three replicas show
overhead, not scaling: the figure to read is the CPU ratio ``list / single`` (goal: <= 1.05).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.replicas import Replica  # noqa: E402 - after the path is set

IN_FLIGHT = 8


def _inputs(module: Any) -> tuple[list[Any], np.ndarray]:
    data = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [
        module.InferInput("INPUT0", [1, 16], "INT32"),
        module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    for each in inputs:
        each.set_data_from_numpy(data)
    return inputs, data


def _threads(call: Callable[[], None], seconds: float) -> tuple[int, float, float]:
    """Calls made by IN_FLIGHT threads in ``seconds``; wall and client CPU seconds."""
    stop = time.perf_counter() + seconds
    counts = [0] * IN_FLIGHT

    def worker(k: int) -> None:
        while time.perf_counter() < stop:
            call()
            counts[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(IN_FLIGHT)]
    c0, w0 = time.process_time(), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts), time.perf_counter() - w0, time.process_time() - c0


async def _tasks(call: Callable[[], Any], seconds: float) -> tuple[int, float, float]:
    stop = time.perf_counter() + seconds
    counts = [0] * IN_FLIGHT

    async def worker(k: int) -> None:
        while time.perf_counter() < stop:
            await call()
            counts[k] += 1

    c0, w0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(k) for k in range(IN_FLIGHT)))
    return sum(counts), time.perf_counter() - w0, time.process_time() - c0


def run_case(flavour: str, url: Any, seconds: float) -> tuple[float, float]:
    """requests/s and client CPU microseconds per call of one flavour and url."""
    import tritonclient.grpc as grpcclient
    import tritonclient.grpc.aio as grpcaio
    import tritonclient.http as httpclient
    import tritonclient.http.aio as httpaio

    if flavour in ("http", "grpc"):
        module = httpclient if flavour == "http" else grpcclient
        client = (
            httpclient.InferenceServerClient(url, concurrency=1)
            if flavour == "http"
            else grpcclient.InferenceServerClient(url)
        )
        inputs, data = _inputs(module)

        def call() -> None:
            result = client.infer("simple", inputs)
            assert (result.as_numpy("OUTPUT0") == data + data).all()

        for _ in range(20):  # connections made, channels ready
            call()
        count, wall, cpu = _threads(call, seconds)
        client.close()
    else:
        module = httpaio if flavour == "http.aio" else grpcaio

        async def main() -> tuple[int, float, float]:
            aclient = module.InferenceServerClient(url)
            inputs, data = _inputs(module)

            async def call() -> None:
                result = await aclient.infer("simple", inputs)
                assert (result.as_numpy("OUTPUT0") == data + data).all()

            for _ in range(20):
                await call()
            outcome = await _tasks(call, seconds)
            await aclient.close()
            return outcome

        count, wall, cpu = asyncio.run(main())
    return count / wall, cpu / count * 1e6


def layer_cost(calls: int = 200_000) -> tuple[float, float]:
    """CPU microseconds per call that the replica layer adds, without I/O: a transport that
    answers at once, called directly and through GeventReplicas / AiohttpReplicas (three
    replicas, round robin, probes off so that only the per-call path is measured)."""
    from tritonclient._transport.http import HttpCall, HttpReply
    from tritonclient._transport.replicas import AiohttpReplicas, GeventReplicas
    from tritonclient.utils import BalancingPolicy

    reply = HttpReply(200, {}, b"")
    call: HttpCall[bool] = HttpCall("GET", "/v2/health/live", {}, None, lambda r: True)
    servers = [("a", 1), ("b", 2), ("c", 3)]
    policy = BalancingPolicy(health_check_interval=None)

    class Answer:
        def send(self, call: Any, timeout: float | None = None) -> HttpReply:
            return reply

    class AsyncAnswer:
        async def send(self, call: Any) -> HttpReply:
            return reply

    def per_call(send: Callable[[], Any]) -> float:
        c0 = time.process_time()
        for _ in range(calls):
            send()
        return (time.process_time() - c0) / calls * 1e6

    direct = Answer()
    sync = GeventReplicas(servers, "", policy, lambda h, p: Answer())
    added_sync = per_call(lambda: sync.send(call)) - per_call(lambda: direct.send(call))

    async def run_async() -> float:
        plain = AsyncAnswer()
        multi = AiohttpReplicas(servers, "", policy, lambda h, p: AsyncAnswer())

        async def loop(send: Callable[[], Any]) -> float:
            c0 = time.process_time()
            for _ in range(calls):
                await send()
            return (time.process_time() - c0) / calls * 1e6

        return await loop(lambda: multi.send(call)) - await loop(lambda: plain.send(call))

    return added_sync, asyncio.run(run_async())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (median kept)")
    parser.add_argument("--clients", default="http,http.aio,grpc,grpc.aio", help="which clients")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    replicas = [Replica(root / f"r{i}") for i in range(3)]
    try:
        for replica in replicas:
            replica.start()
        rows = []
        for flavour in args.clients.split(","):
            addresses = [r.http if flavour.startswith("http") else r.grpc for r in replicas]
            configs = {
                "single": addresses[0],
                "list-1": addresses[:1],
                "list-3": addresses,
                # The control: the client's three-replica machinery (three transports, three
                # connection pools, the balancer) against the one server process.
                "same-3": addresses[:1] * 3,
            }
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in configs}
            for _ in range(args.rounds):
                for name, url in configs.items():
                    samples[name].append(run_case(flavour, url, args.seconds))
            med = {
                name: (
                    statistics.median(s[0] for s in values),
                    statistics.median(s[1] for s in values),
                )
                for name, values in samples.items()
            }
            # Ratios of the runs made back to back in one round, then their median: the load
            # of a shared machine drifts more between rounds than within one.
            for name in ("list-1", "list-3", "same-3"):
                paired = [
                    listed[1] / single[1]
                    for listed, single in zip(samples[name], samples["single"], strict=True)
                ]
                med["ratio " + name] = (statistics.median(paired), 0.0)
            rows.append((flavour, med))
        print(f"{IN_FLIGHT} in flight, {args.seconds:g} s x {args.rounds} rounds (median)")
        names = ("single", "list-1", "list-3", "same-3")
        print("requests/s | client CPU us per call | CPU ratio to single (paired medians)")
        print(
            f"{'client':<9}"
            + "".join(f"{n:>8}" for n in names)
            + " |"
            + "".join(f"{n:>8}" for n in names)
            + " |"
            + "".join(f"{n:>8}" for n in names[1:])
        )
        for flavour, med in rows:
            print(
                f"{flavour:<9}"
                + "".join(f"{med[n][0]:>8.0f}" for n in names)
                + " |"
                + "".join(f"{med[n][1]:>8.1f}" for n in names)
                + " |"
                + "".join(f"{med['ratio ' + n][0]:>8.3f}" for n in names[1:])
            )
        added_sync, added_async = layer_cost()
        singles = {flavour: med["single"][1] for flavour, med in rows}
        http_single = singles.get("http", 400.0)
        aio_single = singles.get("http.aio", 400.0)
        print(
            f"HTTP replica layer alone (no I/O): +{added_sync:.2f} us/call sync "
            f"({1 + added_sync / http_single:.3f}x of single), +{added_async:.2f} us/call aio "
            f"({1 + added_async / aio_single:.3f}x); gRPC balances in gRPC's C core"
        )
    finally:
        for replica in replicas:
            replica.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
