"""The generate extension: one answer (``generate``) and a stream of them (``generate_stream``).

An extension of NVIDIA's API (NVIDIA's ``tritonclient`` has no client for Triton's generate
endpoints). The request is the generate extension's JSON object: ``text_input`` and the other
model inputs by name, plus a ``parameters`` object; the answer is a dict. The bundled
``vllm_model`` has the tensors of Triton's vLLM backend, so this script runs unchanged against a
Triton server that serves a real vLLM model named ``vllm_model`` (its words will differ).

    python examples/generate_client.py -u localhost:8000 [-i http|aio]
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from tritonclient.utils import InferenceServerException

MODEL = "vllm_model"


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def run_sync(url: str) -> None:
    with httpclient.InferenceServerClient(url) as client:
        answer = client.generate(
            MODEL, {"text_input": "What is Triton?"}, parameters={"max_tokens": 8}
        )
        print("generate:", answer)
        check(answer["text_output"].startswith("What is Triton?"), "the prompt comes first")
        pieces = []
        for response in client.generate_stream(
            MODEL, {"text_input": "What is Triton?", "stream": True}, {"max_tokens": 8}
        ):
            pieces.append(response["text_output"])
            print("event:", repr(response["text_output"]))
        check(len(pieces) == 8, "one event per token, max_tokens of them")
        check("What is Triton?" + "".join(pieces) == answer["text_output"], "same text either way")
        try:
            client.generate("no_such_model", {"text_input": "x"})
            check(False, "an unknown model is refused")
        except InferenceServerException as error:
            check(error.status() == "404", f"unknown model: {error.message()}")


async def run_aio(url: str) -> None:
    async with aioclient.InferenceServerClient(url) as client:
        answer = await client.generate(
            MODEL, {"text_input": "What is Triton?"}, parameters={"max_tokens": 8}
        )
        print("generate:", answer)
        pieces = [
            response["text_output"]
            async for response in client.generate_stream(
                MODEL, {"text_input": "What is Triton?", "stream": True}, {"max_tokens": 8}
            )
        ]
        check("What is Triton?" + "".join(pieces) == answer["text_output"], "same text either way")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", default="localhost:8000", help="HTTP URL")
    parser.add_argument("-i", "--client", choices=("http", "aio"), default="http")
    args = parser.parse_args()
    url = args.url.split("://")[-1]
    if args.client == "http":
        run_sync(url)
    else:
        asyncio.run(run_aio(url))
    print("PASS: generate")


if __name__ == "__main__":
    main()
