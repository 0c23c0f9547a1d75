"""Time to first streamed token: the OpenAI frontend against ``generate_stream``, same model.

One run starts ``python -m mock_server`` with ``--openai-port`` (a subprocess on free ports, so
its CPU is not the client's) and streams the bundled ``vllm_model`` (``--tokens`` tokens) many
times through each path, timing from the call to the first token in hand:

* ``generate_stream (ours)``: ``tritonclient.http.InferenceServerClient.generate_stream``;
* ``openai completions``: the ``openai`` package's ``completions.create(stream=True)``;
* ``openai chat``: ``chat.completions.create(stream=True)`` (the chat template rendered; the
  first chunk that carries content counts, not the role-only opening chunk);
* ``raw generate_stream`` and ``raw /v1/completions``: one ``http.client`` connection each,
  reading the socket to the first ``data:`` line with text: the servers' own difference,
  without either client library.

Prints the median and 90th percentile of each, and the OpenAI paths' medians minus
``generate_stream``'s (the issue's bar: within 2 ms).

Usage::

    python benchmarks/bench_openai.py [--repeat 300] [--tokens 16] [--isolation process]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import openai

import tritonclient.http as httpclient

REPO = Path(__file__).resolve().parent.parent
PROMPT = "Tell me a story about a fox"


def start_server(isolation: str) -> tuple[subprocess.Popen[bytes], dict[str, int]]:
    port_file = Path(tempfile.mkdtemp()) / "ports.json"
    command = [sys.executable, "-m", "mock_server", "--http-port=0", "--grpc-port=0"]
    command += ["--metrics-port=0", "--openai-port=0", f"--port-file={port_file}"]
    command += [f"--python-backend-isolation={isolation}", "--log-info=false"]
    process = subprocess.Popen(command, cwd=REPO)
    deadline = time.monotonic() + 120
    while not port_file.exists() or not port_file.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        time.sleep(0.1)
    return process, json.loads(port_file.read_text())


def timed(first_token: Callable[[], str], repeat: int) -> list[float]:
    """Milliseconds to the first token of ``repeat`` calls (after a few warm-up calls)."""
    for _ in range(10):
        first_token()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        token = first_token()
        out.append((time.perf_counter() - start) * 1e3)
        assert token.strip(), "no token"
    return out


def raw_first(port: int, path: str, body: dict[str, object]) -> Callable[[], str]:
    """A function that POSTs ``body`` and reads the stream to its first text event."""
    payload = json.dumps(body).encode()

    def first() -> str:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("POST", path, payload, {"Content-Type": "application/json"})
        reply = connection.getresponse()
        try:
            while True:
                line = reply.readline()
                if line.startswith(b"data: {"):
                    event = json.loads(line[6:])
                    text = event.get("text_output") or event["choices"][0].get("text")
                    if text:
                        return str(text)
                if not line:
                    raise RuntimeError("the stream ended without a token")
        finally:
            connection.close()  # the rest of the stream is not read: the server cancels it

    return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--isolation", choices=["process", "thread"], default="process")
    args = parser.parse_args()
    process, ports = start_server(args.isolation)
    try:
        kserve = httpclient.InferenceServerClient(f"127.0.0.1:{ports['http']}")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{ports['openai']}/v1", api_key="x")
        n = args.tokens

        def generate_stream() -> str:
            stream = kserve.generate_stream(
                "vllm_model", {"text_input": PROMPT, "stream": True, "max_tokens": n}
            )
            for event in stream:
                text = str(event["text_output"])
                stream.close()
                return text
            return ""

        def completions() -> str:
            stream = client.completions.create(
                model="vllm_model", prompt=PROMPT, max_tokens=n, stream=True
            )
            for chunk in stream:
                stream.close()
                return chunk.choices[0].text
            return ""

        def chat() -> str:
            stream = client.chat.completions.create(
                model="vllm_model",
                messages=[{"role": "user", "content": PROMPT}],
                max_tokens=n,
                stream=True,
            )
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    stream.close()
                    return chunk.choices[0].delta.content
            return ""

        generate_body = {"text_input": PROMPT, "stream": True, "max_tokens": n}
        openai_body = {"model": "vllm_model", "prompt": PROMPT, "max_tokens": n, "stream": True}
        contenders = {
            "generate_stream (ours)": generate_stream,
            "openai completions": completions,
            "openai chat": chat,
            "raw generate_stream": raw_first(
                ports["http"], "/v2/models/vllm_model/generate_stream", generate_body
            ),
            "raw /v1/completions": raw_first(ports["openai"], "/v1/completions", openai_body),
        }
        medians = {}
        print(f"time to first token, ms ({args.repeat} streams each, {args.isolation} isolation)")
        for name, first in contenders.items():
            times = timed(first, args.repeat)
            medians[name] = statistics.median(times)
            p90 = statistics.quantiles(times, n=10)[-1]
            print(f"  {name:24s} median {medians[name]:6.3f}   p90 {p90:6.3f}")
        base, raw_base = medians["generate_stream (ours)"], medians["raw generate_stream"]
        for name in ("openai completions", "openai chat"):
            print(f"  {name} - generate_stream: {medians[name] - base:+.3f} ms")
        raw = medians["raw /v1/completions"] - raw_base
        print(f"  raw /v1/completions - raw generate_stream: {raw:+.3f} ms")
        kserve.close()
        client.close()
    finally:
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    main()
