"""A chat-style loop over ``generate_stream``: print each token as it arrives, stop early.

Each turn sends the conversation so far as ``text_input`` and prints the answer token by token
(``stream: true``: one event per token, as Triton's vLLM backend sends them). The second turn
stops reading after a few tokens: leaving the loop closes the connection, and the server cancels
the generation. An extension of NVIDIA's API, in the sync and the asyncio client.

    python examples/chat_stream_client.py -u localhost:8000 [-i http|aio]
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient

MODEL = "vllm_model"
QUESTIONS = ["Hello, who are you?", "Tell me a very long story."]


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def request(history: str, question: str, max_tokens: int) -> dict[str, object]:
    return {
        "text_input": f"{history}User: {question}\nAssistant:",
        "stream": True,
        "sampling_parameters": f'{{"max_tokens": {max_tokens}, "temperature": 0.7}}',
    }


def chat_sync(url: str) -> None:
    history = ""
    with httpclient.InferenceServerClient(url, network_timeout=30) as client:
        for turn, question in enumerate(QUESTIONS):
            print(f"User: {question}\nAssistant:", end="", flush=True)
            answer = ""
            # The second answer asks for 100000 tokens; we stop after 5 (the server stops too).
            limit = 12 if turn == 0 else 100_000
            with client.generate_stream(MODEL, request(history, question, limit)) as stream:
                for count, event in enumerate(stream, 1):
                    print(event["text_output"], end="", flush=True)
                    answer += event["text_output"]
                    if turn == 1 and count == 5:
                        break
            print()
            check(len(answer.split()) == (12 if turn == 0 else 5), f"turn {turn + 1} streamed")
            history += f"User: {question}\nAssistant:{answer}\n"
        # the model is free again at once: the abandoned generation was cancelled
        check(bool(client.generate(MODEL, {"text_input": "ping", "max_tokens": 1})), "cancelled")


async def chat_aio(url: str) -> None:
    history = ""
    async with aioclient.InferenceServerClient(url, conn_timeout=30) as client:
        for turn, question in enumerate(QUESTIONS):
            print(f"User: {question}\nAssistant:", end="", flush=True)
            answer = ""
            limit = 12 if turn == 0 else 100_000
            async with client.generate_stream(MODEL, request(history, question, limit)) as stream:
                count = 0
                async for event in stream:
                    print(event["text_output"], end="", flush=True)
                    answer += event["text_output"]
                    count += 1
                    if turn == 1 and count == 5:
                        break
            print()
            check(len(answer.split()) == (12 if turn == 0 else 5), f"turn {turn + 1} streamed")
            history += f"User: {question}\nAssistant:{answer}\n"
        reply = await client.generate(MODEL, {"text_input": "ping", "max_tokens": 1})
        check(bool(reply), "cancelled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", default="localhost:8000", help="HTTP URL")
    parser.add_argument("-i", "--client", choices=("http", "aio"), default="http")
    args = parser.parse_args()
    url = args.url.split("://")[-1]
    if args.client == "http":
        chat_sync(url)
    else:
        asyncio.run(chat_aio(url))
    print("PASS: chat stream")


if __name__ == "__main__":
    main()
