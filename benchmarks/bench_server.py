"""The bundled server against the real Triton server, driven by the same client in one run.

Usage
-----
``python benchmarks/bench_server.py [--quick] [--client nvidia|ours] [--seconds S]
[--big-mib N] [--rounds N] [--peer-python PATH] [--kserve-python PATH]``

Both servers serve the same Python-backend models (``simple`` and ``identity_uint8`` from
``mock_server/models``; the real one gets them through ``tests/peers.py``, which also says where
it is installed).  One client drives both: NVIDIA's ``tritonclient`` 2.73 by default (a
separate virtual environment, as in ``bench_clients.py``), so the comparison is of servers.

Cases, for HTTP and gRPC:

``c=1``      sequential sync ``simple`` infers (INT32 [1,16] x2) for ``--seconds``: requests/s.
``c=8``      eight asyncio coroutines, each awaiting one ``simple`` infer after another:
             requests/s.
``64MiB``    ``identity_uint8`` round trip of a [1, 64 Mi] UINT8 tensor (binary over HTTP):
             payload MB/s of the best of three.
server CPU   user + system time of the server process and all its descendants (Triton's
             Python-backend stub processes included) over each small-request case, read from
             ``/proc`` before and after, divided by the number of requests sent (warm-up
             included).

A third Python peer, KServe's ``ModelServer`` (the ``kserve`` package, in a virtual
environment of its own: ``--kserve-python``, by default the peers' cache's ``kserve`` venv,
which ``tools/peers.py`` makes on first use, or ahead with ``bash scripts/peers.sh install
--bench``), serves equivalent ``simple`` and ``identity_uint8`` models
(``kserve_simple.py``) over its v2 REST and gRPC endpoints; its column is informative (no
goal), with the bundled server's ratio to it.

The bundled server runs twice: with its default ``--python-backend-isolation=process`` (each
model instance in a stub process, as Triton) and with ``thread`` (models in the server's own
process); the table's ratio compares the default with Triton.  Before the servers, the
per-request cost of the stub hop is measured without any network: ``simple`` inferences
through the server core (``CoreServer.infer_iter``), in-process against isolated, for
``--seconds`` each (``--hop-only`` runs just that).

Each case runs on every server in turn before the next case, so that a drift in the machine's
speed (a shared virtual machine's cores) hits the servers alike; ``--rounds N`` repeats the
whole sequence and reports medians.  Clients and servers share the machine's cores, as they
do in the issue's figures.  Every
result is checked (a+b, a-b; identity equals input).  The table gives both servers' figures
and the ratio oriented so that >1 means the bundled server is better.  The goal of issue 4:
at least the real server's requests/s and 64 MiB MB/s over both protocols.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_clients as bc  # noqa: E402  (the worker helpers and server launchers)

MiB = 1 << 20

# ---------------------------------------------------------------------------------------------
# Worker side (runs with either client package; nothing from the repository is imported).
# ---------------------------------------------------------------------------------------------


def case_c1(protocol: str, url: str, seconds: float) -> dict[str, Any]:
    sync, _ = bc._modules(protocol)
    inputs, outputs, want_sum, want_diff = bc._simple_inputs(sync, protocol)
    client = bc._client(sync, protocol, url)
    total = 0
    try:
        for _ in range(50):
            r = client.infer("simple", inputs, outputs=outputs)
            total += 1
        bc._check_simple(r, want_sum, want_diff)
        count = 0
        w0 = time.perf_counter()
        while time.perf_counter() - w0 < seconds:
            r = client.infer("simple", inputs, outputs=outputs)
            count += 1
        wall = time.perf_counter() - w0
        bc._check_simple(r, want_sum, want_diff)
    finally:
        client.close()
    return {"rps": count / wall, "requests": total + count}


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import tritonclient

    out: dict[str, Any] = {"module": tritonclient.__file__}
    proto, url = spec["protocol"], spec["url"]
    if spec["case"] == "c1":
        out.update(case_c1(proto, url, spec["seconds"]))
    elif spec["case"] == "c8":  # eight coroutines, each awaiting one infer after another
        out.update(bc.case_aio(proto, url, spec["seconds"]))
    elif spec["case"] == "big":
        out.update(bc.case_big(proto, url, spec["nbytes"], spec["repeat"], False))
    else:
        raise ValueError(spec["case"])
    return out


# ---------------------------------------------------------------------------------------------
# Driver side.
# ---------------------------------------------------------------------------------------------


def core_cost(isolation: str, seconds: float) -> dict[str, float]:
    """Microseconds per ``simple`` inference through the server core (no frontend, no wire):
    wall time, and CPU time of this process and its descendants (the zygote's stubs
    included, read from ``/proc``)."""
    import numpy as np

    from mock_server.compose import build_core
    from mock_server.core.server import ModelControlMode, ServerOptions
    from mock_server.core.types import InferRequest, Tensor

    repo = bc.REPO / "mock_server" / "models"
    core = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["simple"],
            python_backend_isolation=isolation,
        )
    )
    core.start()
    a = np.arange(16, dtype=np.int32).reshape(1, 16)

    def one() -> None:
        request = InferRequest(
            "simple",
            inputs=[Tensor("INPUT0", "INT32", (1, 16), a), Tensor("INPUT1", "INT32", (1, 16), a)],
        )
        (response,) = list(core.infer_iter(request, timeout_s=30))
        assert response.error is None, response.error
        assert (response.outputs[0].data == a + a).all()

    try:
        for _ in range(200):
            one()
        cpu0 = tree_cpu_seconds(os.getpid())
        count, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            one()
            count += 1
        wall = time.perf_counter() - t0
        cpu = tree_cpu_seconds(os.getpid()) - cpu0
    finally:
        core.stop()
    return {"us": wall / count * 1e6, "cpu_us": cpu / count * 1e6}


def model_time_us(http_url: str, count: int) -> float:
    """Microseconds per ``simple`` request that the server's own statistics give to the
    model (compute input + infer + output, averaged over ``count`` sequential requests):
    for a Python-backend model in a stub process this is the server -> stub -> server round
    trip with the model's ``execute`` inside it, counted by each server the same way, so
    Triton's hop is measured, not assumed."""
    import numpy as np

    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(http_url)
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [httpclient.InferInput(f"INPUT{i}", [1, 16], "INT32") for i in range(2)]
    for tensor in inputs:
        tensor.set_data_from_numpy(a)

    def totals() -> tuple[int, int]:
        stats = client.get_inference_statistics("simple")["model_stats"][0]
        infer = stats["inference_stats"]
        ns = sum(int(infer[k]["ns"]) for k in ("compute_input", "compute_infer", "compute_output"))
        return ns, int(infer["success"]["count"])

    try:
        for _ in range(100):  # warm-up, not counted
            client.infer("simple", inputs)
        ns0, n0 = totals()
        for _ in range(count):
            result = client.infer("simple", inputs)
        out = result.as_numpy("OUTPUT0")
        assert out is not None and np.array_equal(out, a + a)
        ns1, n1 = totals()
    finally:
        client.close()
    return (ns1 - ns0) / max(n1 - n0, 1) / 1e3


def hop_costs(rounds: int, seconds: float, count: int = 1000) -> None:
    """:func:`core_cost` in both isolation modes, alternated for ``rounds`` rounds (a drift
    of a shared machine's speed then hits both alike), printed per round and as medians; the
    stub hop is the difference of the two.  Then the model time of the bundled server (stub
    processes) and of Triton 2.51 by their statistics (:func:`model_time_us`), alternated the
    same way: issue 26's goal is a hop at most twice Triton's."""
    runs: dict[str, list[dict[str, float]]] = {"thread": [], "process": []}
    load = os.getloadavg()[0]
    for _ in range(rounds):
        for mode in runs:
            runs[mode].append(core_cost(mode, seconds))
    hops = [p["us"] - t["us"] for t, p in zip(runs["thread"], runs["process"], strict=True)]
    medians = {
        mode: {key: statistics.median(r[key] for r in results) for key in ("us", "cpu_us")}
        for mode, results in runs.items()
    }
    print(
        "\nPer-request cost through the server core (simple, no network; "
        f"median of {rounds} round(s); load average {load:.1f} -> {os.getloadavg()[0]:.1f}):"
    )
    for mode, median in medians.items():
        print(
            f"  {mode:8} {median['us']:8.1f} us/request wall, "
            f"{median['cpu_us']:8.1f} us/request CPU (server and stubs)"
        )
    hop = statistics.median(hops)
    cpu_hop = medians["process"]["cpu_us"] - medians["thread"]["cpu_us"]
    print(
        f"  stub hop: {hop:.1f} us/request wall (rounds: "
        f"{', '.join(f'{h:.0f}' for h in hops)}), {cpu_hop:.1f} us/request CPU"
    )
    with contextlib.ExitStack() as stack:
        servers = {"mock": stack.enter_context(bc.MockServer(models=("simple",)))}
        triton = bc.triton_server(stack, models=("simple",))
        if triton is None:
            print("  Triton server not installed (tests/peers.py): no hop to compare with")
            return
        servers["triton"] = triton
        times: dict[str, list[float]] = {name: [] for name in servers}
        for _ in range(rounds):
            for name, server in servers.items():
                times[name].append(model_time_us(server.http_url, count))
    mock_us, triton_us = (statistics.median(times[k]) for k in ("mock", "triton"))
    print(
        "  model time by the servers' statistics (compute input+infer+output, the stub round "
        f"trip with execute inside; median of {rounds}): mock {mock_us:.1f} us, Triton "
        f"{triton_us:.1f} us: {mock_us / triton_us:.2f}x Triton's (goal <= 2x)"
    )


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of ``root`` and every live descendant (from ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    total = 0.0
    for pid, t in times.items():
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            total += t
    return total


def kserve_python(explicit: str | None) -> str:
    """Interpreter of the environment holding KServe (the peers' cache, made if needed)."""
    if explicit:
        return explicit
    from tools.peers import KSERVE

    return str(KSERVE.ensure() / "bin" / "python")


class KServe:
    """KServe's ``ModelServer`` (``kserve_simple.py``) on free ports, for a ``with`` block."""

    def __init__(self, python: str) -> None:
        self.python = python

    def __enter__(self) -> KServe:
        import socket
        import subprocess
        import tempfile
        import urllib.request

        ports = []
        for _ in range(2):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                ports.append(sock.getsockname()[1])
        self.http_url, self.grpc_url = (f"127.0.0.1:{p}" for p in ports)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [self.python, str(HERE / "kserve_simple.py"), *map(str, ports)],
            cwd="/",
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
        self.pid = self.proc.pid
        deadline = time.monotonic() + 120
        while True:
            try:
                url = f"http://{self.http_url}/v2/models/simple/ready"
                with urllib.request.urlopen(url, timeout=1) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                self.log.seek(0)
                raise RuntimeError(f"KServe did not start:\n{self.log.read().decode()[-3000:]}")
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("nvidia", "ours"), default="nvidia")
    parser.add_argument("--seconds", type=float, default=3.0, help="per small-request case")
    parser.add_argument("--big-mib", type=int, default=64)
    parser.add_argument("--big-repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat every case this many times, the servers one after another per case; "
        "the table gives medians (for a machine whose speed drifts)",
    )
    parser.add_argument("--peer-python", help="python of a venv with NVIDIA's tritonclient")
    parser.add_argument(
        "--kserve-python",
        help="python of a venv with the kserve package (default: the peers' cache, made if needed)",
    )
    parser.add_argument(
        "--hop-only", action="store_true", help="only the stub hop's cost (no servers)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        json.dump(worker(json.loads(args.worker)), sys.stdout)
        return 0
    if args.quick:
        args.seconds, args.big_repeat = 0.5, 1
    sys.path.insert(0, str(bc.REPO))
    hop_costs(max(args.rounds, 1), args.seconds)
    if args.hop_only:
        return 0
    ours = args.client == "ours"
    python = sys.executable if ours else bc.peer_python(args.peer_python)
    t_start = time.perf_counter()
    results: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    with contextlib.ExitStack() as stack:
        mock = stack.enter_context(bc.MockServer())
        servers: list[tuple[str, Any, int]] = [("mock", mock, mock.proc.pid)]
        inside = stack.enter_context(bc.MockServer(args=("--python-backend-isolation", "thread")))
        servers.append(("mock-thread", inside, inside.proc.pid))
        triton = bc.triton_server(stack)
        if triton is None:
            print("Triton server not installed (tests/peers.py): mock_server only", file=sys.stderr)
        else:
            servers.append(("triton", triton, triton.pid))
        kserve = stack.enter_context(KServe(kserve_python(args.kserve_python)))
        servers.append(("kserve", kserve, kserve.pid))
        cases = (
            ("c1", {"case": "c1", "seconds": args.seconds}),
            ("c8", {"case": "c8", "seconds": args.seconds}),
            ("big", {"case": "big", "nbytes": args.big_mib * MiB, "repeat": args.big_repeat}),
        )
        # Case by case, every server in turn: a drift of the machine's speed (shared cores)
        # then hits the servers' figures for a case alike, and rounds give medians.
        for _ in range(max(args.rounds, 1)):
            for proto in ("grpc", "http"):
                for case, spec in cases:
                    for sname, srv, pid in servers:
                        url = srv.grpc_url if proto == "grpc" else srv.http_url
                        timeout = 300.0
                        run = spec
                        if sname == "kserve" and proto == "http" and case == "big":
                            # KServe 0.21 turns a binary REST input into a Python list, element
                            # by element (InferRequest.from_bytes): about 1 MB/s.  One round trip.
                            run = dict(spec, repeat=1)
                            timeout = 1200.0
                        cpu0 = tree_cpu_seconds(pid)
                        res = bc.run_worker(
                            python,
                            dict(run, protocol=proto, url=url),
                            ours,
                            timeout=timeout,
                            script=__file__,
                            tolerate=True,
                        )
                        if "failed" in res:  # left out (its medians come from the others)
                            continue
                        res["server_cpu_s"] = tree_cpu_seconds(pid) - cpu0
                        results.setdefault((sname, proto, case), []).append(res)
                        print(f"  done: {sname} {proto} {case}", file=sys.stderr, flush=True)

    client = "this project's client" if ours else "NVIDIA tritonclient 2.73"
    print(f"\nServer benchmark: bundled mock_server vs Triton 2.51, driven by {client}")
    print(f"({os.cpu_count()} CPUs, client and server on the same machine; ratio >1: mock better)")
    print("(mock: models in stub processes, the default; mock-thread: models in the server)")
    print("(KServe: kserve.ModelServer; vs KServe: mock's ratio to it, informative)")
    if args.rounds > 1:
        print(f"(medians of {args.rounds} rounds)")
    print(
        f"{'case':44} {'unit':>7} {'mock':>10} {'mock-thread':>12} {'Triton':>10} {'ratio':>7}"
        f"  {'KServe':>10} {'vs KServe':>9}  goal"
    )
    misses = 0
    have_triton = triton is not None
    for proto in ("grpc", "http"):
        rows: list[tuple[str, str, str, str, bool]] = []
        for case, label in (("c1", "simple, concurrency 1"), ("c8", "simple, concurrency 8")):
            rows.append((f"{proto:4} {label}", "req/s", case, "rps", True))
            rows.append((f"{proto:4} {label}: server CPU/request", "us", case, "cpu_us", False))
        rows.append(
            (f"{proto:4} {args.big_mib} MiB identity round trip", "MB/s", "big", "mbps", True)
        )
        for label, unit, case, key, higher_better in rows:
            vals = []
            for sname in ("mock", "triton", "mock-thread", "kserve"):
                runs = results.get((sname, proto, case))
                if not runs:
                    vals.append(float("nan"))
                elif key == "cpu_us":
                    vals.append(
                        statistics.median(r["server_cpu_s"] / r["requests"] * 1e6 for r in runs)
                    )
                else:
                    vals.append(statistics.median(r[key] for r in runs))
            mock_v, triton_v, thread_v, kserve_v = vals
            versus = mock_v / kserve_v if higher_better else kserve_v / mock_v
            if not have_triton:
                ratio = float("nan")
            else:
                ratio = mock_v / triton_v if higher_better else triton_v / mock_v
            goal = ""
            if higher_better and have_triton:
                ok = ratio >= 1.0
                misses += not ok
                goal = ">= 1 (Triton's)" + ("" if ok else "  MISS")
            print(
                f"{label:44} {unit:>7} {mock_v:10.1f} {thread_v:12.1f} {triton_v:10.1f} "
                f"{ratio:6.2f}x  {kserve_v:10.1f} {versus:8.2f}x  {goal}"
            )
    failed = bc.report_failures()
    print(
        f"{misses} goal(s) missed; {failed} worker(s) failed; "
        f"total {time.perf_counter() - t_start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
