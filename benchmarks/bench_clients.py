"""Side-by-side benchmark of the inference clients: this project vs NVIDIA's tritonclient.

Usage
-----
``python benchmarks/bench_clients.py [--quick] [--no-triton] [--no-memory] [--profile]
[--peer-python PATH]``

One invocation measures both clients against the same servers: the bundled ``mock_server``
(started once, in a subprocess, on free ports) and, when it is installed (see
``tests/peers.py``), NVIDIA's real Triton server.  Every measurement runs in a fresh worker
subprocess started with ``PYTHONPATH`` unset and ``cwd="/"``, so the repository is not on the
worker's ``sys.path``: ours with this interpreter, NVIDIA's (``tritonclient`` 2.73.0) with the
interpreter of its own virtual environment in the peers' cache (``scripts/peers.sh``; made on
first use).  Each worker reports which ``tritonclient`` it imported and
the script refuses to go on if a side imported the wrong package.

Cases (figures are the client's; the servers run on the same machine):

``small``   client CPU (``time.process_time()``, all threads) and wall p50 per sync ``simple``
            infer (INT32 [1,16] x2 in, both outputs requested, ``as_numpy`` on both).
``inflight``requests/s with 8 in flight: gRPC ``async_infer`` and ``grpc.aio``; HTTP
            ``async_infer`` with ``concurrency=8`` and ``http.aio``.
``64MiB``   round trip of a [1, 64 Mi] UINT8 tensor through ``identity_uint8`` (binary for HTTP):
            payload MB/s (64 MiB / wall time of one round trip, best of R) and client CPU.
``memory``  peak client memory (``ru_maxrss`` rise, so C allocations count) over one 256 MiB
            round trip, the result array included; reported as a multiple of the payload.
``json``    HTTP JSON encoding of 1M FP32 values: ``set_data_from_numpy(x, binary_data=False)``
            plus ``InferenceServerClient.generate_request_body``; no server involved.

Every result is checked (outputs equal a+b and a-b, identity outputs equal their input, the
JSON body decodes back to the input), so a broken fast path cannot win.  The table gives both
figures and the ratio oriented so that >1 means ours is better, next to the goal of issues 5
and 6.  ``--profile`` adds cProfile listings of our client for the small and 64 MiB cases.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS = ("simple", "identity_uint8")
MiB = 1 << 20

# ---------------------------------------------------------------------------------------------
# Worker side: runs in a subprocess with either package; must not import anything from REPO.
# ---------------------------------------------------------------------------------------------


def _modules(protocol: str) -> tuple[Any, Any]:
    import importlib

    sync = importlib.import_module(f"tritonclient.{protocol}")
    return sync, importlib.import_module(f"tritonclient.{protocol}.aio")


def _simple_inputs(mod: Any, protocol: str) -> tuple[list[Any], list[Any], Any, Any]:
    import numpy as np

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    inputs = [mod.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    if protocol == "http":
        outputs = [mod.InferRequestedOutput(n, binary_data=True) for n in ("OUTPUT0", "OUTPUT1")]
    else:
        outputs = [mod.InferRequestedOutput(n) for n in ("OUTPUT0", "OUTPUT1")]
    return inputs, outputs, a + b, a - b


def _check_simple(result: Any, want_sum: Any, want_diff: Any) -> None:
    import numpy as np

    s, d = result.as_numpy("OUTPUT0"), result.as_numpy("OUTPUT1")
    if not (np.array_equal(s, want_sum) and np.array_equal(d, want_diff)):
        raise AssertionError(f"simple: wrong outputs {s!r} {d!r}")


def _identity_input(mod: Any, nbytes: int) -> tuple[Any, Any]:
    import numpy as np

    # Random bytes, made without temporaries larger than the tensor (the memory case).
    x = np.random.default_rng(nbytes).integers(0, 256, (1, nbytes), dtype=np.uint8)
    inp = mod.InferInput("INPUT0", list(x.shape), "UINT8")
    inp.set_data_from_numpy(x)
    return x, inp


def _identity_outputs(mod: Any, protocol: str) -> list[Any]:
    if protocol == "http":
        return [mod.InferRequestedOutput("OUTPUT0", binary_data=True)]
    return [mod.InferRequestedOutput("OUTPUT0")]


def _client(mod: Any, protocol: str, url: str, **kw: Any) -> Any:
    if protocol == "http":
        return mod.InferenceServerClient(url, network_timeout=300.0, connection_timeout=60.0, **kw)
    return mod.InferenceServerClient(url, **kw)


class _Profiler:
    """cProfile around a block when enabled; the listing goes into the worker's result."""

    def __init__(self, enabled: bool, top: int = 25) -> None:
        self.enabled = enabled
        self.top = top
        self.text = ""

    def __enter__(self) -> _Profiler:
        if self.enabled:
            import cProfile

            self.prof = cProfile.Profile()
            self.prof.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            import io
            import pstats

            self.prof.disable()
            out = io.StringIO()
            stats = pstats.Stats(self.prof, stream=out)
            stats.sort_stats("tottime").print_stats(self.top)
            stats.sort_stats("cumulative").print_stats(self.top)
            self.text = out.getvalue()


def case_small(protocol: str, url: str, n: int, profile: bool) -> dict[str, Any]:
    sync, _ = _modules(protocol)
    inputs, outputs, want_sum, want_diff = _simple_inputs(sync, protocol)
    client = _client(sync, protocol, url)
    try:
        for _ in range(max(20, n // 10)):  # warm-up: connection, caches, lazy imports
            r = client.infer("simple", inputs, outputs=outputs)
        _check_simple(r, want_sum, want_diff)
        lat = []
        prof = _Profiler(profile)
        with prof:
            c0 = time.process_time()
            w0 = time.perf_counter()
            for i in range(n):
                t = time.perf_counter()
                r = client.infer("simple", inputs, outputs=outputs)
                r.as_numpy("OUTPUT0")
                r.as_numpy("OUTPUT1")
                lat.append(time.perf_counter() - t)
                if i % 100 == 0:
                    _check_simple(r, want_sum, want_diff)
            wall = time.perf_counter() - w0
            cpu = time.process_time() - c0
        _check_simple(r, want_sum, want_diff)
    finally:
        client.close()
    lat.sort()
    return {
        "cpu_us": cpu / n * 1e6,
        "p50_us": lat[len(lat) // 2] * 1e6,
        "p99_us": lat[int(len(lat) * 0.99)] * 1e6,
        "wall_us": wall / n * 1e6,
        "profile": prof.text,
    }


def case_async_infer(protocol: str, url: str, seconds: float) -> dict[str, Any]:
    """Requests/s with 8 requests in flight through the sync client's ``async_infer``."""
    import collections
    import threading

    sync, _ = _modules(protocol)
    inputs, outputs, want_sum, want_diff = _simple_inputs(sync, protocol)
    inflight = 8
    if protocol == "grpc":
        client = _client(sync, protocol, url)
        sem = threading.Semaphore(inflight)
        errors: list[Any] = []
        done = [0]
        last: list[Any] = [None]

        def callback(result: Any, error: Any) -> None:
            if error is not None:
                errors.append(error)
            else:
                last[0] = result
                done[0] += 1
            sem.release()

        def run(duration: float) -> tuple[int, float, float]:
            start_done = done[0]
            c0, w0 = time.process_time(), time.perf_counter()
            while time.perf_counter() - w0 < duration:
                sem.acquire()
                client.async_infer("simple", inputs, callback, outputs=outputs)
            for _ in range(inflight):  # drain
                sem.acquire()
            for _ in range(inflight):
                sem.release()
            return done[0] - start_done, time.perf_counter() - w0, time.process_time() - c0

        try:
            run(min(0.5, seconds / 4))
            count, wall, cpu = run(seconds)
        finally:
            client.close()
        if errors:
            raise AssertionError(f"async_infer errors: {errors[:3]}")
        _check_simple(last[0], want_sum, want_diff)
    else:
        client = _client(sync, protocol, url, concurrency=inflight)
        pending: collections.deque[Any] = collections.deque()

        def run(duration: float) -> tuple[int, float, float]:
            count = 0
            r = None
            c0, w0 = time.process_time(), time.perf_counter()
            while time.perf_counter() - w0 < duration:
                if len(pending) >= inflight:
                    r = pending.popleft().get_result()
                    count += 1
                pending.append(client.async_infer("simple", inputs, outputs=outputs))
            while pending:
                r = pending.popleft().get_result()
                count += 1
            _check_simple(r, want_sum, want_diff)
            return count, time.perf_counter() - w0, time.process_time() - c0

        try:
            run(min(0.5, seconds / 4))
            count, wall, cpu = run(seconds)
        finally:
            client.close()
    return {"rps": count / wall, "cpu_us": cpu / count * 1e6, "count": count}


def case_aio(protocol: str, url: str, seconds: float) -> dict[str, Any]:
    """Requests/s with 8 coroutines each awaiting one ``infer`` after another."""
    import asyncio

    sync, aio = _modules(protocol)
    inputs, outputs, want_sum, want_diff = _simple_inputs(sync, protocol)

    async def main() -> tuple[int, int, float, float]:
        client = aio.InferenceServerClient(url)
        try:

            async def worker(deadline: float) -> int:
                count = 0
                r = None
                while time.perf_counter() < deadline:
                    r = await client.infer("simple", inputs, outputs=outputs)
                    count += 1
                if r is not None:
                    _check_simple(r, want_sum, want_diff)
                return count

            async def run(duration: float) -> tuple[int, float, float]:
                c0, w0 = time.process_time(), time.perf_counter()
                counts = await asyncio.gather(*(worker(w0 + duration) for _ in range(8)))
                return sum(counts), time.perf_counter() - w0, time.process_time() - c0

            warm, _, _ = await run(min(0.5, seconds / 4))
            count, wall, cpu = await run(seconds)
            return warm + count, count, wall, cpu
        finally:
            await client.close()

    total, count, wall, cpu = asyncio.run(main())
    return {"rps": count / wall, "cpu_us": cpu / count * 1e6, "count": count, "requests": total}


def case_big(protocol: str, url: str, nbytes: int, repeat: int, profile: bool) -> dict[str, Any]:
    import numpy as np

    sync, _ = _modules(protocol)
    x, inp = _identity_input(sync, nbytes)
    outputs = _identity_outputs(sync, protocol)
    client = _client(sync, protocol, url)
    best_wall = best_cpu = float("inf")
    prof = _Profiler(False)
    try:
        for i in range(repeat + 1):  # the first round trip is a warm-up
            if i == repeat and profile:
                prof = _Profiler(True)
            with prof:
                c0, w0 = time.process_time(), time.perf_counter()
                inp.set_data_from_numpy(x)  # part of the request cost, as users do it
                r = client.infer("identity_uint8", [inp], outputs=outputs)
                y = r.as_numpy("OUTPUT0")
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            if y is None or y.shape != x.shape or not np.array_equal(y, x):
                raise AssertionError(f"identity {nbytes} bytes: output differs from input")
            del r, y
            if i:
                best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    finally:
        client.close()
    return {
        "mbps": nbytes / best_wall / 1e6,
        "wall_ms": best_wall * 1e3,
        "cpu_ms": best_cpu * 1e3,
        "profile": prof.text,
    }


def case_memory(protocol: str, url: str, nbytes: int) -> dict[str, Any]:
    import gc
    import resource

    import numpy as np

    sync, _ = _modules(protocol)
    client = _client(sync, protocol, url)
    try:
        _, small_inp = _identity_input(sync, 4096)  # warm-up: connection, lazy imports
        client.infer("identity_uint8", [small_inp], outputs=_identity_outputs(sync, protocol))
        x, inp = _identity_input(sync, nbytes)
        gc.collect()
        # Baseline: the current RSS (input tensor included); the rise of the high-water mark
        # above it is what the round trip needed.  If an earlier peak was higher, the rise
        # is hidden and reported as such.
        with open("/proc/self/statm") as f:
            before = int(f.read().split()[1]) * resource.getpagesize()
        hwm_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        t0 = time.perf_counter()
        r = client.infer("identity_uint8", [inp], outputs=_identity_outputs(sync, protocol))
        y = r.as_numpy("OUTPUT0")
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        if y is None or not np.array_equal(y, x):
            raise AssertionError("identity 256 MiB: output differs from input")
    finally:
        client.close()
    if hwm_before > after - 16 * MiB:
        raise AssertionError("an earlier RSS peak hides the round trip's; cannot measure")
    return {
        "peak_mib": (after - before) / MiB,
        "x_payload": (after - before) / nbytes,
        "wall_s": wall,
    }


def case_json(n: int, repeat: int, profile: bool = False) -> dict[str, Any]:
    import numpy as np

    import tritonclient.http as http

    x = np.random.default_rng(7).standard_normal(n).astype(np.float32).reshape(1, n)
    best = best_set = best_body = float("inf")
    body: Any = None
    json_size: Any = None
    prof = _Profiler(False)
    for i in range(repeat):
        if i == repeat - 1 and profile:
            prof = _Profiler(True)
        prof.__enter__()
        t0 = time.perf_counter()
        inp = http.InferInput("INPUT0", [1, n], "FP32")
        inp.set_data_from_numpy(x, binary_data=False)
        t1 = time.perf_counter()
        body, json_size = http.InferenceServerClient.generate_request_body([inp])
        t2 = time.perf_counter()
        prof.__exit__()
        best = min(best, t2 - t0)
        best_set, best_body = min(best_set, t1 - t0), min(best_body, t2 - t1)
    raw = bytes(body) if not isinstance(body, (bytes, str)) else body
    if isinstance(raw, str):
        raw = raw.encode()
    head = raw if json_size is None else raw[:json_size]
    doc = json.loads(head)
    data = np.asarray(doc["inputs"][0]["data"], dtype=np.float64)
    if data.size != n or not np.array_equal(data.astype(np.float32).reshape(1, n), x):
        raise AssertionError("JSON body does not decode back to the input")
    return {
        "ms": best * 1e3,
        "set_ms": best_set * 1e3,
        "body_ms": best_body * 1e3,
        "bytes": len(head),
        "profile": prof.text,
    }


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import tritonclient

    out: dict[str, Any] = {"module": tritonclient.__file__}
    case = spec["case"]
    proto, url = spec.get("protocol", ""), spec.get("url", "")
    if case == "small":
        out.update(case_small(proto, url, spec["n"], spec.get("profile", False)))
    elif case == "async_infer":
        out.update(case_async_infer(proto, url, spec["seconds"]))
    elif case == "aio":
        out.update(case_aio(proto, url, spec["seconds"]))
    elif case == "big":
        out.update(case_big(proto, url, spec["nbytes"], spec["repeat"], spec.get("profile", False)))
    elif case == "memory":
        out.update(case_memory(proto, url, spec["nbytes"]))
    elif case == "json":
        out.update(case_json(spec["n"], spec["repeat"], spec.get("profile", False)))
    else:
        raise ValueError(case)
    return out


# ---------------------------------------------------------------------------------------------
# Driver side.
# ---------------------------------------------------------------------------------------------


def peer_python(explicit: str | None) -> str:
    """Interpreter of the environment holding NVIDIA's package (created if needed)."""
    if explicit:
        return explicit
    sys.path.insert(0, str(REPO))
    from tools.peers import NVIDIA_CLIENT

    return str(NVIDIA_CLIENT.ensure() / "bin" / "python")


#: Why workers failed in this run (see run_worker's ``tolerate``), printed at the end.
FAILURES: list[str] = []


def run_worker(
    python: str,
    spec: dict[str, Any],
    ours: bool,
    timeout: float = 300,
    script: str = __file__,
    cwd: str = "/",
    tolerate: bool = False,
) -> dict[str, Any]:
    """Run ``script --worker spec`` with ``python``; check it imported the right package.

    The worker reports the files of the packages it imported (``module``, and
    ``shm_module`` where it has one): each must be this repository's for ``ours`` and
    another installation's otherwise.

    With ``tolerate``, a worker that fails (or runs past ``timeout``) is tried once more, and
    if it fails again the result is ``{"failed": why}`` (also noted in :data:`FAILURES`): on a
    loaded machine one case must not end the whole run.  A wrong package always stops it.
    """
    attempts = 2 if tolerate else 1
    for attempt in range(1, attempts + 1):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            proc = subprocess.run(
                [python, str(Path(script).resolve()), "--worker", json.dumps(spec)],
                capture_output=True,
                text=True,
                env=env,
                cwd=cwd,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            why = f"worker {spec.get('case')} ({python}) ran past {timeout:.0f} s"
        else:
            if proc.returncode == 0:
                break
            why = f"worker {spec} ({python}) failed:\n{proc.stderr[-4000:]}"
        if not tolerate:
            raise RuntimeError(why)
        print(f"  worker failed (attempt {attempt} of {attempts}): {why}", file=sys.stderr)
        if attempt == attempts:
            lines = why.strip().splitlines()
            FAILURES.append(lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}")
            return {"failed": why}
    result: dict[str, Any] = json.loads(proc.stdout)
    for key in ("module", "shm_module"):
        if not result.get(key):
            continue
        inside = Path(result[key]).resolve().is_relative_to(REPO / "tritonclient")
        if inside != ours:
            raise SystemExit(f"wrong package imported by {python}: {result[key]}")
    return result


def report_failures() -> int:
    """Print what failed in this run; how many."""
    for why in FAILURES:
        print(f"FAILED (the run went on): {why}")
    return len(FAILURES)


class MockServer:
    """``python -m mock_server`` on free ports with ``models`` loaded, for the duration of a
    ``with`` block; ``env`` is added to its environment (which has no ``PYTHONPATH`` of this
    process's)."""

    def __init__(
        self,
        models: Sequence[str] = MODELS,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.models = tuple(models)
        self.args = tuple(args)
        self.env = dict(env or {})

    def command(self, port_file: Path) -> list[str]:
        """The server's command line; it writes its ports to ``port_file`` (JSON)."""
        return [
            sys.executable,
            "-m",
            "mock_server",
            "--model-repository",
            "mock_server/models",
            *(a for m in self.models for a in ("--load-model", m)),
            "--model-control-mode",
            "explicit",
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--metrics-port",
            "0",
            "--port-file",
            str(port_file),
            "--allow-client-shm=true",  # the shared-memory cases, as Triton 2.73 needs it
            *self.args,
        ]

    def __enter__(self) -> MockServer:
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-clients-")
        port_file = Path(self.tmp.name) / "ports.json"
        self.log = open(Path(self.tmp.name) / "server.log", "w+b")
        self.proc = subprocess.Popen(
            self.command(port_file),
            cwd=REPO,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | self.env,
        )
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.stat().st_size):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                name = type(self).__name__
                raise RuntimeError(f"{name} did not start:\n{self.log.read().decode()}")
            time.sleep(0.05)
        time.sleep(0.05)
        ports = json.loads(port_file.read_text())
        self.http_url = f"127.0.0.1:{ports['http']}"
        self.grpc_url = f"127.0.0.1:{ports['grpc']}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.tmp.cleanup()


def triton_server(
    stack: Any, models: Sequence[str] = MODELS, shm_growth_bytes: int = 64 * MiB
) -> Any:
    """Start NVIDIA's Triton server with ``models`` when installed (tests/peers.py); None
    otherwise.  ``shm_growth_bytes`` is the Python backend's shared-memory growth step (its
    stub exchanges tensors with the server through that memory)."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        import peers  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    install = peers.find_tritonserver()
    if install is None:
        return None
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-clients-triton-"))
    repo = Path(tmp) / "models"
    repo.mkdir()
    for m in models:
        peers.copy_repository_for_triton(REPO / "mock_server" / "models" / m, repo / m)
    args = [
        "--model-control-mode=explicit",
        *(f"--load-model={m}" for m in models),
        "--backend-config=python,shm-default-byte-size=67108864",
        f"--backend-config=python,shm-growth-byte-size={shm_growth_bytes}",
    ]
    return stack.enter_context(peers.run_tritonserver(install, repo, args))


GOALS: dict[str, tuple[str, Callable[[float, float], float], Callable[[float], bool] | None]] = {
    "cpu": ("ours/NVIDIA <= 0.8", lambda ours, nv: ours / nv, lambda r: r <= 0.8),
    "lat": ("(info: ours/NVIDIA)", lambda ours, nv: ours / nv, None),
    "rps": ("ours/NVIDIA >= 1.2", lambda ours, nv: ours / nv, lambda r: r >= 1.2),
    "rps10": ("ours/NVIDIA >= 10", lambda ours, nv: ours / nv, lambda r: r >= 10),
    "mbps": ("ours/NVIDIA >= 3", lambda ours, nv: ours / nv, lambda r: r >= 3),
    "mbps_http": ("ours/NVIDIA >= 3, >= 1 GB/s", lambda ours, nv: ours / nv, lambda r: r >= 3),
    "mem": ("ours < 2x payload", lambda ours, nv: ours / nv, None),
    "json": ("NVIDIA/ours >= 5", lambda ours, nv: nv / ours, lambda r: r >= 5),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-n", type=int, default=2000, help="sync infers per small case")
    parser.add_argument("--seconds", type=float, default=2.0, help="per in-flight case")
    parser.add_argument("--big-mib", type=int, default=64)
    parser.add_argument("--big-repeat", type=int, default=3)
    parser.add_argument("--memory-mib", type=int, default=256)
    parser.add_argument("--json-n", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke test)")
    parser.add_argument("--no-triton", action="store_true", help="mock_server only")
    parser.add_argument("--no-memory", action="store_true", help="skip the 256 MiB case")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of the comparison, print cProfile listings of our client "
        "(small, 64 MiB and JSON cases, against mock_server)",
    )
    parser.add_argument("--peer-python", help="python of a venv with NVIDIA's tritonclient")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        json.dump(worker(json.loads(args.worker)), sys.stdout)
        return 0
    if args.quick:
        args.small_n, args.seconds, args.big_repeat, args.memory_mib = 300, 0.5, 1, 64

    import contextlib

    t_start = time.perf_counter()
    nvidia = peer_python(args.peer_python)
    clients = {"ours": (sys.executable, True), "NVIDIA": (nvidia, False)}
    rows: list[tuple[str, str, float, float, str]] = []
    modules: dict[str, str] = {}

    def both(
        label: str, unit: str, key: str, goal: str, spec: dict[str, Any], timeout: float = 300
    ) -> dict[str, dict[str, Any]]:
        res = {}
        for name, (python, ours) in clients.items():
            s = dict(spec, profile=False)
            res[name] = run_worker(python, s, ours, timeout, tolerate=True)
            modules.setdefault(name, res[name].get("module", ""))
        if any("failed" in r for r in res.values()):
            nan = float("nan")
            res = {name: defaultdict(lambda: nan) for name in res}
            rows.append((label, unit, nan, nan, "failed"))
        else:
            rows.append((label, unit, res["ours"][key], res["NVIDIA"][key], goal))
        print(f"  done: {label}", file=sys.stderr, flush=True)
        return res

    if args.profile:
        with MockServer() as srv:
            for proto, url in (("grpc", srv.grpc_url), ("http", srv.http_url)):
                for label, spec in (
                    ("small sync infer", {"case": "small", "n": args.small_n}),
                    (
                        f"{args.big_mib} MiB identity",
                        {"case": "big", "nbytes": args.big_mib * MiB, "repeat": 1},
                    ),
                ):
                    spec = dict(spec, protocol=proto, url=url, profile=True)
                    prof = run_worker(sys.executable, spec, True)
                    print(f"\n===== cProfile, ours: {proto} {label} =====\n{prof['profile']}")
        spec = {"case": "json", "n": args.json_n, "repeat": 2, "profile": True}
        prof = run_worker(sys.executable, spec, True)
        print(f"\n===== cProfile, ours: http JSON encode =====\n{prof['profile']}")
        return 0

    with contextlib.ExitStack() as stack:
        servers = [("mock", stack.enter_context(MockServer()))]
        if not args.no_triton:
            try:
                triton = triton_server(stack)
            except Exception as exc:  # report it and go on with mock_server only
                print(f"Triton server not used: {exc}", file=sys.stderr)
                triton = None
            if triton is not None:
                servers.append(("triton", triton))
        for sname, srv in servers:
            for proto, url in (("grpc", srv.grpc_url), ("http", srv.http_url)):
                tag = f"{sname:6} {proto:4}"
                spec = {"protocol": proto, "url": url}
                res = both(
                    f"{tag} small sync infer: client CPU",
                    "us",
                    "cpu_us",
                    "cpu",
                    dict(spec, case="small", n=args.small_n),
                )
                rows.append(
                    (
                        f"{tag} small sync infer: wall p50",
                        "us",
                        res["ours"]["p50_us"],
                        res["NVIDIA"]["p50_us"],
                        "lat",
                    )
                )
                both(
                    f"{tag} 8 in flight, async_infer",
                    "req/s",
                    "rps",
                    "rps10" if proto == "http" else "rps",
                    dict(spec, case="async_infer", seconds=args.seconds),
                )
                both(
                    f"{tag} 8 in flight, aio",
                    "req/s",
                    "rps",
                    "rps",
                    dict(spec, case="aio", seconds=args.seconds),
                )
                res = both(
                    f"{tag} {args.big_mib} MiB identity round trip",
                    "MB/s",
                    "mbps",
                    "mbps_http" if proto == "http" else "mbps",
                    dict(spec, case="big", nbytes=args.big_mib * MiB, repeat=args.big_repeat),
                )
                rows.append(
                    (
                        f"{tag} {args.big_mib} MiB identity: client CPU",
                        "ms",
                        res["ours"]["cpu_ms"],
                        res["NVIDIA"]["cpu_ms"],
                        "cpu",
                    )
                )
                if sname == "mock" and not args.no_memory:
                    both(
                        f"{tag} {args.memory_mib} MiB round trip: peak RSS rise",
                        "x payload",
                        "x_payload",
                        "mem",
                        dict(spec, case="memory", nbytes=args.memory_mib * MiB),
                    )
        res = both(
            "json   http encode 1M FP32 (set_data + body)",
            "ms",
            "ms",
            "json",
            {"case": "json", "n": args.json_n, "repeat": 3},
        )
        for part, key in (("set_data_from_numpy", "set_ms"), ("generate_request_body", "body_ms")):
            rows.append(
                (f"json     of which {part}", "ms", res["ours"][key], res["NVIDIA"][key], "lat")
            )

    print()
    print(
        f"Client benchmark: ours vs NVIDIA tritonclient 2.73.0 "
        f"({os.cpu_count()} CPUs, servers on the same machine)"
    )
    print(f"{'case':58} {'unit':>9} {'ours':>10} {'NVIDIA':>10} {'ratio':>7}  goal")
    misses = 0
    for label, unit, ours, nv, goal in rows:
        if goal == "failed":
            print(f"{label:58} {unit:>9} {'-':>10} {'-':>10} {'-':>7}  the worker failed")
            continue
        text, ratio_fn, ok_fn = GOALS[goal]
        ratio = ratio_fn(ours, nv) if nv else float("nan")
        if goal == "mem":
            ok = ours < 2
            mark = "" if ok else "  MISS"
        elif goal == "lat":
            mark = ""
        else:
            assert ok_fn is not None
            ok = ok_fn(ratio)
            mark = "" if ok else "  MISS"
        if goal == "mbps_http" and ours < 1000:
            mark = "  MISS"
        misses += bool(mark)
        print(f"{label:58} {unit:>9} {ours:10.1f} {nv:10.1f} {ratio:6.2f}x  {text}{mark}")
    print(f"ours:   {modules.get('ours')}\nNVIDIA: {modules.get('NVIDIA')}")
    failed = report_failures()
    print(
        f"{misses} goal(s) missed; {failed} case(s) failed; all other outputs verified; "
        f"total {time.perf_counter() - t_start:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
