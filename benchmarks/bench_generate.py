"""generate_stream: this package's clients against the hand-written SSE loops users write today.

One run starts the bundled ``mock_server`` (a subprocess on free ports, so its CPU is not the
client's) and streams ``vllm_model`` with ``max_tokens`` events (512 by default) through:

* ``ours sync``: ``tritonclient.http.InferenceServerClient.generate_stream``;
* ``requests loop``: ``requests.Session().post(..., stream=True)`` + ``iter_lines`` +
  ``json.loads`` of each ``data:`` line (what users hand-roll; it handles neither multi-line
  data nor error events nor a stream cut short);
* ``sseclient-py``: the same ``requests`` response through ``sseclient.SSEClient`` (the
  maintained SSE library considered for the parser, see ``tritonclient/_codec/sse.py``);
* ``ours aio``: ``tritonclient.http.aio`` ``generate_stream``;
* ``aiohttp loop``: ``aiohttp.ClientSession.post`` + ``async for line in resp.content`` +
  ``json.loads``.

For each: time to first event (from the call to the first event in hand, median), events per
second over the whole stream (median), and client CPU per event (``time.process_time`` of this
process over the stream, median; the server runs in another process).  Every contender reads
the same text, so their outputs are compared before timing.

Usage::

    python benchmarks/bench_generate.py [--events 512] [--repeat 30] [--isolation thread]

Needs ``requests`` and ``aiohttp`` (and ``sseclient-py`` for its row; skipped without it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "mock_server" / "models"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(isolation: str) -> tuple[subprocess.Popen[bytes], str]:
    ports = [_free_port() for _ in range(3)]
    cmd = [
        sys.executable,
        "-m",
        "mock_server",
        f"--model-repository={MODELS}",
        "--model-control-mode=explicit",
        "--load-model=vllm_model",
        f"--http-port={ports[0]}",
        f"--grpc-port={ports[1]}",
        f"--metrics-port={ports[2]}",
        f"--python-backend-isolation={isolation}",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"127.0.0.1:{ports[0]}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://{url}/v2/models/vllm_model/ready", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("mock_server did not become ready in 60 s")


def payload(events: int) -> dict[str, Any]:
    return {"text_input": "benchmark", "stream": True, "max_tokens": events}


# -- the contenders: each yields the text of every event ------------------------------------


def ours_sync(url: str, events: int) -> Callable[[], Iterator[str]]:
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(url)

    def run() -> Iterator[str]:
        for event in client.generate_stream("vllm_model", payload(events)):
            yield event["text_output"]

    return run


def requests_loop(url: str, events: int) -> Callable[[], Iterator[str]]:
    import requests

    session = requests.Session()
    endpoint = f"http://{url}/v2/models/vllm_model/generate_stream"

    def run() -> Iterator[str]:
        with session.post(endpoint, json=payload(events), stream=True) as response:
            for line in response.iter_lines():
                if line.startswith(b"data: "):
                    yield json.loads(line[6:])["text_output"]

    return run


def sseclient_loop(url: str, events: int) -> Callable[[], Iterator[str]]:
    import requests
    import sseclient

    session = requests.Session()
    endpoint = f"http://{url}/v2/models/vllm_model/generate_stream"

    def run() -> Iterator[str]:
        with session.post(endpoint, json=payload(events), stream=True) as response:
            for event in sseclient.SSEClient(response).events():
                yield json.loads(event.data)["text_output"]

    return run


def ours_aio(url: str, events: int) -> tuple[Any, Callable[[], AsyncIterator[str]]]:
    import tritonclient.http.aio as aioclient

    client = aioclient.InferenceServerClient(url)

    async def run() -> AsyncIterator[str]:
        async for event in client.generate_stream("vllm_model", payload(events)):
            yield event["text_output"]

    return client.close, run


def aiohttp_loop(url: str, events: int) -> tuple[Any, Callable[[], AsyncIterator[str]]]:
    import aiohttp

    holder: dict[str, aiohttp.ClientSession] = {}
    endpoint = f"http://{url}/v2/models/vllm_model/generate_stream"

    async def run() -> AsyncIterator[str]:
        session = holder.get("s")
        if session is None:
            session = holder["s"] = aiohttp.ClientSession()
        async with session.post(endpoint, json=payload(events)) as response:
            async for line in response.content:
                if line.startswith(b"data: "):
                    yield json.loads(line[6:])["text_output"]

    async def close() -> None:
        if "s" in holder:
            await holder["s"].close()

    return close, run


# -- measuring ------------------------------------------------------------------------------


def one_sync(run: Callable[[], Iterator[str]]) -> tuple[float, float, float]:
    """One stream: (time to first event, events per second, CPU seconds per event)."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    count = 0
    first = 0.0
    for _piece in run():
        if count == 0:
            first = time.perf_counter() - t0
        count += 1
    elapsed = time.perf_counter() - t0
    return first, count / elapsed, (time.process_time() - cpu0) / count


async def one_async(run: Callable[[], AsyncIterator[str]]) -> tuple[float, float, float]:
    cpu0, t0 = time.process_time(), time.perf_counter()
    count = 0
    first = 0.0
    async for _piece in run():
        if count == 0:
            first = time.perf_counter() - t0
        count += 1
    elapsed = time.perf_counter() - t0
    return first, count / elapsed, (time.process_time() - cpu0) / count


def measure_sync(
    runs: dict[str, Callable[[], Iterator[str]]], repeat: int
) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    """Every contender once per round, round after round: a load that comes and goes on the
    machine then weighs on all of them alike."""
    texts = {name: list(run()) for name, run in runs.items()}  # warm-up, outputs to compare
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            samples[name].append(one_sync(run))
    return texts, {name: summary(*zip(*rows, strict=True)) for name, rows in samples.items()}


async def measure_async(
    runs: dict[str, Callable[[], AsyncIterator[str]]], repeat: int
) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    texts = {}
    for name, run in runs.items():
        texts[name] = [piece async for piece in run()]
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            samples[name].append(await one_async(run))
    return texts, {name: summary(*zip(*rows, strict=True)) for name, rows in samples.items()}


def summary(ttfe: Sequence[float], rate: Sequence[float], cpu: Sequence[float]) -> dict[str, float]:
    return {
        "ttfe_ms": statistics.median(ttfe) * 1e3,
        "events_per_s": statistics.median(rate),
        "cpu_us_per_event": statistics.median(cpu) * 1e6,
    }


def parser_comparison(events: int, repeat: int) -> dict[str, float] | None:
    """CPU per event of the SSE parsers alone on the same bytes (one event per read, as a
    client that keeps up with the server reads them): ours against ``sseclient-py``."""
    try:
        import sseclient
    except ImportError:
        return None
    from tritonclient._codec.sse import SseParser

    event = b'data: {"model_name":"vllm_model","model_version":"1","text_output":" word"}\n\n'
    chunks = [event] * events

    def ours() -> int:
        parser = SseParser()
        count = sum(len(parser.feed(chunk)) for chunk in chunks)
        parser.close()
        return count

    def theirs() -> int:
        return sum(1 for _ in sseclient.SSEClient(iter(chunks)).events())

    timings: dict[str, list[float]] = {"ours": [], "sseclient-py": []}
    for _ in range(repeat):
        for name, parse in (("ours", ours), ("sseclient-py", theirs)):
            start = time.process_time()
            assert parse() == events
            timings[name].append((time.process_time() - start) / events * 1e6)
    return {name: statistics.median(values) for name, values in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="a smoke run (3 streams each)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--isolation",
        choices=("process", "thread"),
        default="process",
        help="where the server runs vllm_model: 'process' (its default, a stub process; "
        "events come one by one) or 'thread' (in the server, several times faster, so a "
        "client often reads several events at once)",
    )
    args = parser.parse_args()
    if args.quick:
        args.repeat = 3
    proc, url = start_server(args.isolation)
    results: dict[str, dict[str, float]] = {}
    texts: dict[str, list[str]] = {}
    try:
        makers = {"ours sync": ours_sync, "requests loop": requests_loop}
        makers["sseclient-py"] = sseclient_loop
        runs = {}
        for name, make in makers.items():
            try:
                runs[name] = make(url, args.events)
            except ImportError as exc:
                print(f"{name}: skipped ({exc})", file=sys.stderr)
        sync_texts, sync_results = measure_sync(runs, args.repeat)
        texts.update(sync_texts)
        results.update(sync_results)

        async def run_async() -> None:
            closers, runs = [], {}
            for name, make in {"ours aio": ours_aio, "aiohttp loop": aiohttp_loop}.items():
                close, runs[name] = make(url, args.events)
                closers.append(close)
            try:
                async_texts, async_results = await measure_async(runs, args.repeat)
                texts.update(async_texts)
                results.update(async_results)
            finally:
                for close in closers:
                    await close()

        asyncio.run(run_async())
    finally:
        proc.terminate()
        proc.wait(15)
    reference = texts["ours sync"]
    assert len(reference) == args.events
    for name, text in texts.items():
        assert text == reference, f"{name} read other events than ours"
    parsers = parser_comparison(args.events, args.repeat)
    if args.json:
        print(json.dumps({"streams": results, "parsers_cpu_us_per_event": parsers}, indent=1))
        return
    print(
        f"generate_stream of {args.events} events, median of {args.repeat} streams, "
        f"server isolation {args.isolation} "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)"
    )
    print(
        f"{'client':<16}{'TTFE ms':>10}{'events/s':>12}{'CPU us/event':>15}"
        f"{'CPU ratio':>11}{'TTFE diff ms':>14}"
    )
    # Ratios against the hand-written loop of the same kind (above 1: ours uses less CPU);
    # TTFE difference ours minus the loop's (below 0: ours is first).
    peers = {"ours sync": "requests loop", "ours aio": "aiohttp loop"}
    for name, row in results.items():
        line = (
            f"{name:<16}{row['ttfe_ms']:>10.2f}{row['events_per_s']:>12.0f}"
            f"{row['cpu_us_per_event']:>15.1f}"
        )
        peer = results.get(peers.get(name, ""))
        if peer is not None:
            ratio = peer["cpu_us_per_event"] / row["cpu_us_per_event"]
            line += f"{ratio:>11.2f}{row['ttfe_ms'] - peer['ttfe_ms']:>+14.2f}"
        print(line)
    if parsers is not None:
        print(
            "SSE parser alone, same bytes, CPU us/event: "
            + ", ".join(f"{name} {value:.2f}" for name, value in parsers.items())
        )


if __name__ == "__main__":
    main()
