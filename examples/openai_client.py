"""The OpenAI API over the bundled models, with the official ``openai`` package.

``mock_server`` serves Triton's OpenAI frontend's routes (``--openai-port``) over the same
models as its KServe frontends: ``vllm_model`` completes and chats (streaming too),
``embedding_model`` embeds, and ``tool_model`` calls tools (with ``--tool-call-parser llama3``).
Without ``-u`` this script starts such a server in its own process, on free ports; with
``-u host:port`` it talks to one started as::

    python -m mock_server --openai-port 9000 --tool-call-parser llama3

    python examples/openai_client.py [-u localhost:9000]

Needs ``pip install openai``.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack

import openai

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Today's weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def get_weather(city: str) -> str:
    return f"Sunny in {city}, 25 degrees"


def run(client: openai.OpenAI) -> None:
    models = [model.id for model in client.models.list()]
    print("models:", models)
    check({"vllm_model", "embedding_model", "tool_model"} <= set(models), "the models are listed")

    completion = client.completions.create(model="vllm_model", prompt="Hello", max_tokens=5)
    print("completion:", repr(completion.choices[0].text), completion.usage)
    check(len(completion.choices[0].text.split()) == 5, "max_tokens words")

    messages: list[dict[str, str]] = [{"role": "user", "content": "Tell me a story"}]
    answer = client.chat.completions.create(model="vllm_model", messages=messages, max_tokens=6)
    text = answer.choices[0].message.content or ""
    print("chat:", repr(text))
    streamed = "".join(
        chunk.choices[0].delta.content or ""
        for chunk in client.chat.completions.create(
            model="vllm_model",
            messages=messages,
            max_tokens=6,
            stream=True,
        )
    )
    check(streamed == text, "streamed chat gives the same text")

    embedding = client.embeddings.create(model="embedding_model", input="a fox", dimensions=8)
    check(len(embedding.data[0].embedding) == 8, "an 8-dimensional embedding")

    # Tool calling: the model asks for a call, we run it and hand the result back.
    chat: list[dict[str, object]] = [{"role": "user", "content": "What is the weather in Oslo?"}]
    first = client.chat.completions.create(model="tool_model", messages=chat, tools=[WEATHER])
    calls = first.choices[0].message.tool_calls or []
    check(first.choices[0].finish_reason == "tool_calls" and len(calls) == 1, "a tool call")
    call = calls[0]
    arguments = json.loads(call.function.arguments)
    print("tool call:", call.function.name, arguments)
    chat.append(first.choices[0].message.model_dump(exclude_none=True))
    chat.append({"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)})
    final = client.chat.completions.create(model="tool_model", messages=chat, tools=[WEATHER])
    print("after the tool:", final.choices[0].message.content)
    check("Sunny in Oslo" in (final.choices[0].message.content or ""), "the tool's answer used")

    try:
        client.chat.completions.create(model="no_such_model", messages=messages)
        check(False, "an unknown model is refused")
    except openai.BadRequestError as error:
        print("error body:", error.body)
        check(error.body == {"detail": "Unknown model: no_such_model"}, "Triton's error body")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", help="host:port of the OpenAI API (default: start one)")
    args = parser.parse_args()
    with ExitStack() as stack:
        url = args.url
        if url is None:
            from mock_server.app import FrontendOptions, MockServer

            ports = {"http_port": 0, "grpc_port": 0, "metrics_port": 0, "openai_port": 0}
            options = FrontendOptions(**ports, tool_call_parser="llama3")
            url = stack.enter_context(MockServer(frontends=options)).openai_url
        client = stack.enter_context(openai.OpenAI(base_url=f"http://{url}/v1", api_key="none"))
        run(client)


if __name__ == "__main__":
    main()
