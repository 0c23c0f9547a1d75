"""Mixed client traffic against a running server, from several client processes at once, every
answer checked: the stress test, the soak and the robustness-under-traffic test drive the server
with it (``tests/test_load.py``; ``benchmarks/stress.py`` and ``benchmarks/soak.py`` run the
long versions).

A *workload* is one kind of request sent in a loop by one client process (this project's
client, spawned fresh): the bundled models' small and large requests, over both protocols, with
and without system shared memory, BYTES, decoupled streams, sequences, BLS, ensembles and
generate.  Each request's answer is checked against its own inputs (values differ from one
request to the next, so an answer delivered to the wrong request, twice, or stale fails), and
each worker reports how many it sent, the errors it met and each request's latency.

:func:`burning` busies the machine's cores meanwhile, as other work on a shared machine does.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests import peers

__all__ = ["WORKLOADS", "Outcome", "burning", "run_workloads", "start_server", "stress_run"]

MiB = 1 << 20
#: Every client call's network limit: nothing waits forever.
CALL_TIMEOUT_S = 120.0


@dataclass
class Outcome:
    """What one worker did."""

    workload: str
    count: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # seconds, one per request
    started: list[float] = field(default_factory=list)  # each one's time.time() at its start

    def p99(self, skip: int = 20) -> float:
        """The 99th percentile latency in seconds, leaving out the first ``skip`` requests
        (the client's own warm-up: a fresh process's first connection, stream, imports); 0
        without requests."""
        kept = self.latencies[skip:] or self.latencies
        if not kept:
            return 0.0
        return _p99(kept)

    def p99_between(self, since: float, until: float, skip: int = 20) -> float:
        """:meth:`p99` of the requests that started between ``since`` and ``until``
        (``time.time()`` readings)."""
        kept = [
            latency
            for i, (start, latency) in enumerate(zip(self.started, self.latencies, strict=True))
            if i >= skip and since <= start <= until
        ]
        return _p99(kept) if kept else 0.0


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


# -- the workloads (each runs in a client process of its own) ------------------------------------
class _Worker:
    """One client process: its clients, its regions, a random source."""

    def __init__(self, http: str, grpc: str, big: int) -> None:
        self.http_url = http
        self.grpc_url = grpc
        self.big = big
        self.rng = np.random.default_rng(os.getpid())
        self.cleanup: list[Callable[[], None]] = []

    def http(self) -> Any:
        import tritonclient.http as httpclient

        client = httpclient.InferenceServerClient(
            self.http_url, connection_timeout=CALL_TIMEOUT_S, network_timeout=CALL_TIMEOUT_S
        )
        self.cleanup.append(client.close)
        return client

    def grpc(self) -> Any:
        import tritonclient.grpc as grpcclient

        client = grpcclient.InferenceServerClient(self.grpc_url)
        self.cleanup.append(client.close)
        return client

    def close(self) -> None:
        for action in reversed(self.cleanup):
            with contextlib.suppress(Exception):
                action()


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def _protocol(client: Any) -> Any:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    return httpclient if type(client).__module__.startswith("tritonclient.http") else grpcclient


def _input(client: Any, name: str, array: np.ndarray[Any, Any], datatype: str) -> Any:
    tensor = _protocol(client).InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def _simple(client: Any, n: int, model: str = "simple") -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16) + (n % 1000)
    b = np.full((1, 16), n % 97, dtype=np.int32)
    inputs = [_input(client, "INPUT0", a, "INT32"), _input(client, "INPUT1", b, "INT32")]
    result = client.infer(model, inputs, request_id=str(n))
    # simple (and bls_simple): sum and difference; simple_ensemble: simple twice, 2a and 2b.
    expected = (2 * a, 2 * b) if model == "simple_ensemble" else (a + b, a - b)
    _expect(np.array_equal(result.as_numpy("OUTPUT0"), expected[0]), f"{model} OUTPUT0")
    _expect(np.array_equal(result.as_numpy("OUTPUT1"), expected[1]), f"{model} OUTPUT1")


def _identity(client: Any, worker: _Worker, n: int) -> None:
    data = worker.rng.integers(0, 256, (1, worker.big), dtype=np.uint8)
    data[0, 0] = n % 251  # no two consecutive requests alike
    result = client.infer("identity_uint8", [_input(client, "INPUT0", data, "UINT8")])
    _expect(np.array_equal(result.as_numpy("OUTPUT0"), data), "identity_uint8 output")


def _shm(worker: _Worker, protocol: str) -> Callable[[int], None]:
    import tritonclient.utils.shared_memory as shm

    client = worker.http() if protocol == "http" else worker.grpc()
    module = _protocol(client)
    size = worker.big
    tag = uuid.uuid4().hex[:10]
    names = (f"load_in_{tag}", f"load_out_{tag}")
    regions = [shm.create_shared_memory_region(name, f"/{name}", size) for name in names]

    def destroy() -> None:
        for name in names:
            with contextlib.suppress(Exception):
                client.unregister_system_shared_memory(name)
        for region in regions:
            shm.destroy_shared_memory_region(region)

    worker.cleanup.append(destroy)
    for name in names:
        client.register_system_shared_memory(name, f"/{name}", size)

    def step(n: int) -> None:
        data = worker.rng.integers(0, 256, (1, size), dtype=np.uint8)
        data[0, 0] = n % 251
        shm.set_shared_memory_region(regions[0], [data])
        given = module.InferInput("INPUT0", [1, size], "UINT8")
        given.set_shared_memory(names[0], size)
        wanted = module.InferRequestedOutput("OUTPUT0")
        wanted.set_shared_memory(names[1], size)
        client.infer("identity_uint8", [given], outputs=[wanted])
        got = shm.get_contents_as_numpy(regions[1], np.uint8, [1, size])
        _expect(np.array_equal(got, data), "shared-memory output")

    return step


def _bytes(worker: _Worker) -> Callable[[int], None]:
    client = worker.http()

    def step(n: int) -> None:
        # A few hundred KiB of BYTES: pickled whole through the stub channel, in many pieces.
        lengths = worker.rng.integers(0, 4096, 100)
        data = np.array(
            [bytes([n % 256]) * int(length) for length in lengths], dtype=np.object_
        ).reshape(1, -1)
        result = client.infer("identity_bytes", [_input(client, "INPUT0", data, "BYTES")])
        _expect(result.as_numpy("OUTPUT0").tolist() == data.tolist(), "identity_bytes output")

    return step


def _stream(worker: _Worker) -> Callable[[int], None]:
    import tritonclient.grpc as grpcclient

    client = worker.grpc()
    answers: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    worker.cleanup.insert(0, client.stop_stream)

    def step(n: int) -> None:
        values = np.arange(n % 5 + 1, dtype=np.int32) + n
        inputs = [
            _input(client, "IN", values, "INT32"),
            _input(client, "DELAY", np.zeros(values.size, np.uint32), "UINT32"),
            _input(client, "WAIT", np.zeros(1, np.uint32), "UINT32"),
        ]
        client.async_stream_infer(
            "repeat_int32",
            inputs,
            request_id=str(n),
            outputs=[
                grpcclient.InferRequestedOutput("OUT"),
                grpcclient.InferRequestedOutput("IDX"),
            ],
            enable_empty_final_response=True,
        )
        got: list[int] = []
        while True:
            result, error = answers.get(timeout=CALL_TIMEOUT_S)
            _expect(error is None, f"stream error: {error}")
            response = result.get_response()
            _expect(response.id == str(n), f"stream answer for {response.id}, not {n}")
            final = response.parameters["triton_final_response"].bool_param
            if result.as_numpy("OUT") is not None:
                got.append(int(result.as_numpy("OUT")[0]))
            if final:
                break
        _expect(got == values.tolist(), f"stream values {got} for {values.tolist()}")

    return step


def _sequence(worker: _Worker) -> Callable[[int], None]:
    client = worker.grpc()
    sequence_base = (os.getpid() << 20) + 1

    def step(n: int) -> None:
        values = [n % 50, 3, 4, 5]
        sequence_id = sequence_base + n
        for i, value in enumerate(values):
            result = client.infer(
                "simple_sequence",
                [_input(client, "INPUT", np.array([[value]], np.int32), "INT32")],
                sequence_id=sequence_id,
                sequence_start=i == 0,
                sequence_end=i == len(values) - 1,
            )
            expected = value + (1 if i == 0 else 0)
            _expect(int(result.as_numpy("OUTPUT")[0][0]) == expected, "sequence output")

    return step


def _generate(worker: _Worker) -> Callable[[int], None]:
    client = worker.http()

    def step(n: int) -> None:
        answer = client.generate(
            "vllm_model",
            {"text_input": f"count {n}", "exclude_input_in_output": True},
            parameters={"max_tokens": 4},
        )
        _expect(isinstance(answer.get("text_output"), str), f"generate answer {answer}")

    return step


def _each(make: Callable[[_Worker], Any], call: Callable[..., None]) -> Callable[[_Worker], Any]:
    def factory(worker: _Worker) -> Callable[[int], None]:
        client = make(worker)
        return lambda n: call(client, worker, n)

    return factory


#: Workload name -> factory(worker) -> step(n).
WORKLOADS: dict[str, Callable[[_Worker], Callable[[int], None]]] = {
    "small_http": _each(_Worker.http, lambda c, w, n: _simple(c, n)),
    "small_grpc": _each(_Worker.grpc, lambda c, w, n: _simple(c, n)),
    "ensemble_http": _each(_Worker.http, lambda c, w, n: _simple(c, n, "simple_ensemble")),
    "bls_grpc": _each(_Worker.grpc, lambda c, w, n: _simple(c, n, "bls_simple")),
    "big_http": _each(_Worker.http, _identity),
    "big_grpc": _each(_Worker.grpc, _identity),
    "shm_http": lambda worker: _shm(worker, "http"),
    "shm_grpc": lambda worker: _shm(worker, "grpc"),
    "bytes_http": _bytes,
    "stream_grpc": _stream,
    "sequence_grpc": _sequence,
    "generate_http": _generate,
}


def _work(
    name: str,
    http: str,
    grpc: str,
    big: int,
    deadline: Any,
    requests: int,
    results: Any,
    ready: Any,
    go: Any,
    rate: float = 0.0,
) -> None:
    """A client process: once ``go`` is set, run workload ``name`` until ``deadline`` (a
    shared ``time.time()`` value) or for ``requests`` requests, then put its
    :class:`Outcome` on ``results``; with a ``rate``, one request every ``1 / rate`` seconds
    (open loop: a late request starts at once, the next keeps the schedule)."""
    outcome = Outcome(name)
    worker = _Worker(http, grpc, big)
    try:
        try:
            step = WORKLOADS[name](worker)
        finally:
            with ready.get_lock():
                ready.value += 1
        go.wait(CALL_TIMEOUT_S)
        until = deadline.value
        n = 0
        next_at = time.monotonic()
        while (requests and n < requests) or (not requests and time.time() < until):
            n += 1
            if rate:
                next_at += 1.0 / rate
                time.sleep(max(0.0, next_at - 1.0 / rate - time.monotonic()))
            at = time.time()
            started = time.perf_counter()
            try:
                step(n)
            except Exception as exc:
                outcome.errors.append(f"{name} #{n}: {type(exc).__name__}: {exc}"[:800])
            outcome.started.append(at)
            outcome.latencies.append(time.perf_counter() - started)  # (failed ones too)
            outcome.count = n
            if len(outcome.errors) >= 20:
                break
    except Exception as exc:
        outcome.errors.append(f"{name} set-up: {type(exc).__name__}: {exc}"[:800])
    finally:
        worker.close()
        results.put(outcome)


def run_workloads(
    http: str,
    grpc: str,
    workloads: Sequence[str],
    seconds: float = 0.0,
    requests: int = 0,
    big: int = 8 * MiB,
    during: Callable[[], None] | None = None,
    rate: float = 0.0,
) -> list[Outcome]:
    """Run each of ``workloads`` in a client process of its own, at once, for ``seconds``
    (or ``requests`` requests each), as fast as answers come or, with ``rate``, that many
    requests per second each; return their outcomes.

    ``during``, if given, runs in this process while they do (an attack, a sampler); the
    workers start together once all are set up.
    """
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    go = context.Event()
    deadline = context.Value("d", 0.0)
    ready = context.Value("i", 0)
    processes = [
        context.Process(
            target=_work,
            args=(name, http, grpc, big, deadline, requests, results, ready, go, rate),
            daemon=True,
        )
        for name in workloads
    ]
    for process in processes:
        process.start()
    outcomes: list[Outcome] = []
    try:
        # The clock starts once every worker is set up (spawning a client takes seconds).
        limit = time.monotonic() + CALL_TIMEOUT_S
        while ready.value < len(processes) and time.monotonic() < limit:
            if not any(p.is_alive() for p in processes):
                break
            time.sleep(0.05)
        deadline.value = time.time() + seconds
        go.set()
        if during is not None:
            during()
        limit = time.monotonic() + seconds + requests * 5 + 300
        while len(outcomes) < len(processes):
            remaining = limit - time.monotonic()
            if remaining <= 0:
                break
            with contextlib.suppress(queue.Empty):
                outcomes.append(results.get(timeout=min(remaining, 5.0)))
            if not any(p.is_alive() for p in processes) and results.empty():
                break
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join(10)
    missing = len(processes) - len(outcomes)
    for _ in range(missing):
        outcomes.append(Outcome("?", errors=["a client process ended without an outcome"]))
    return outcomes


@contextlib.contextmanager
def burning(cores: int | None = None) -> Iterator[None]:
    """Keep ``cores`` processes (default: one per core) busy for the block's duration."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    count = cores if cores is not None else (os.cpu_count() or 1)
    burners = [context.Process(target=_burn, args=(stop,), daemon=True) for _ in range(count)]
    for burner in burners:
        burner.start()
    try:
        yield
    finally:
        stop.set()
        for burner in burners:
            burner.join(10)
            if burner.is_alive():
                burner.kill()


def _burn(stop: Any) -> None:
    while not stop.is_set():
        total = 0
        for i in range(200_000):
            total += i


# -- a stress run -------------------------------------------------------------------------------
#: Lines of the server's log that mean trouble.
_TROUBLE = re.compile(r"stub process of .* (ended|exited|was killed)|Traceback|not healthy")


def stop_cleanly(process: subprocess.Popen[bytes]) -> list[str]:
    """SIGTERM the server; what is wrong if it lingers or leaves processes of its group."""
    process.terminate()
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        return ["the server did not stop within 60 s of SIGTERM"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return []
        time.sleep(0.1)
    return ["processes of the server's group (stubs) outlived it by 10 s"]


@dataclass
class Served:
    """A ``python -m mock_server`` started by :func:`start_server`."""

    process: subprocess.Popen[bytes]
    http: str
    grpc: str
    log_path: Path

    @property
    def http_port(self) -> int:
        return int(self.http.rsplit(":", 1)[1])

    @property
    def grpc_url(self) -> str:
        return self.grpc

    def log(self) -> str:
        return peers.read_log(self.log_path, 1 << 24)

    def trouble(self) -> list[str]:
        """The log's lines that report a stub ending or a traceback."""
        return [f"log: {line}" for line in self.log().splitlines() if _TROUBLE.search(line)]


@contextlib.contextmanager
def start_server(python: str | None = None, extra: Sequence[str] = ()) -> Iterator[Served]:
    """``python -m mock_server`` (the bundled models) on free loopback ports, on interpreter
    ``python`` (default: this one), its output in a log file; stopped (its group killed if it
    lingers) at the end of the block."""
    workdir = Path(tempfile.mkdtemp(prefix="loadgen-"))
    log_path = workdir / "server.log"
    http_port, grpc_port, metrics_port = peers.free_ports(3)
    command = [
        python or sys.executable,
        "-m",
        "mock_server",
        f"--http-port={http_port}",
        f"--grpc-port={grpc_port}",
        f"--metrics-port={metrics_port}",
        # The traffic includes shared memory: started as Triton 2.73 is started for it.
        "--allow-client-shm=true",
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = peers.spawn_server(command, env, workdir, log_path)
    served = Served(process, f"127.0.0.1:{http_port}", f"127.0.0.1:{grpc_port}", log_path)
    try:
        peers.wait_until_ready("mock_server", process, served.http, log_path, 120.0)
        yield served
    finally:
        peers.stop_process_group(process, 30.0)


def stress_run(
    seconds: float, big: int, burn: int, server_python: str | None, workloads: Sequence[str]
) -> tuple[bool, str]:
    """One stress run (see ``benchmarks/stress.py``): ``python -m mock_server`` on
    ``server_python``, ``burn`` spinning processes, ``workloads`` for ``seconds`` with
    ``big``-byte tensors; (passed, a report)."""
    problems: list[str] = []
    outcomes: list[Outcome] = []
    took = 0.0
    with start_server(server_python) as served:
        started = time.monotonic()
        with burning(burn):
            outcomes = run_workloads(served.http, served.grpc, workloads, seconds=seconds, big=big)
        took = time.monotonic() - started
        process = served.process
        if process.poll() is not None:
            problems.append(f"the server exited with status {process.returncode}")
        elif not peers.is_ready(served.http):
            problems.append("the server no longer answers /v2/health/ready")
        problems.extend(served.trouble())  # before the stop, which ends the stubs
        problems.extend(stop_cleanly(process))
    for outcome in outcomes:
        if not outcome.count:
            problems.append(f"{outcome.workload}: no request completed")
        problems.extend(outcome.errors[:3])
    left = sorted(p.name for p in Path("/dev/shm").glob(f"mockpb_{process.pid}_*"))
    if left:
        problems.append(f"/dev/shm entries left after shutdown: {left}")
    total = sum(o.count for o in outcomes)
    counts = ", ".join(
        f"{o.workload} {o.count} (p99 {o.p99() * 1e3:.0f} ms)"
        for o in sorted(outcomes, key=lambda o: o.workload)
    )
    report = f"{total} requests in {took:.0f} s: {counts}"
    if problems:
        report += "\n    " + "\n    ".join(problems[:25])
    return not problems, report
