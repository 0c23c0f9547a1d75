"""The OpenAI-compatible frontend driven by the official ``openai`` package, sync and async,
against ``python -m mock_server --openai-port 0`` as a real process on 127.0.0.1.

Every answer is checked for content: the bundled models are deterministic (``vllm_model``
generates words of a canned sentence, one token per word, ``embedding_model`` unit vectors,
``tool_model`` Llama 3 style tool calls), and errors arrive as the package's typed exceptions
with Triton's OpenAI frontend's words.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import openai
import pytest

import tritonclient.http as httpclient
from mock_server.app import BUNDLED_MODELS
from tests.test_cli import serve

MODELS = ("vllm_model", "embedding_model", "tool_model", "simple")
#: The canned sentence vllm_model's words come from.
SENTENCE = (
    "the quick brown fox jumps over the lazy dog while a small server streams one word at a "
    "time so that clients can be tested without a GPU and every answer is the same each time "
    "it is asked for in the same words by anyone anywhere"
)
WORDS = set(SENTENCE.split(" "))
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city", "unit"],
        },
    },
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``python -m mock_server`` with the OpenAI frontend (and the llama3 tool parser)."""
    tmp = tmp_path_factory.mktemp("openai")
    for name in MODELS:  # the repository serve() uses
        shutil.copytree(BUNDLED_MODELS / name, tmp / "repo" / name)
    with serve(tmp, "--openai-port", "0", "--tool-call-parser", "llama3", timeout=120) as info:
        info["base"] = f"http://127.0.0.1:{info['openai']}"
        yield info


@pytest.fixture(scope="module")
def client(server: dict[str, Any]) -> Iterator[openai.OpenAI]:
    # No retries: a 500 must reach the test as it was answered, once.
    with openai.OpenAI(base_url=server["base"] + "/v1", api_key="none", max_retries=0) as c:
        yield c


def words(text: str) -> list[str]:
    return text.split()


# -- models ---------------------------------------------------------------------------------


def test_models_list_and_retrieve(client: openai.OpenAI) -> None:
    listed = {m.id: m for m in client.models.list()}
    assert set(listed) == set(MODELS)
    card = client.models.retrieve("vllm_model")
    assert card.id == "vllm_model" and card.owned_by == "Triton Inference Server"
    assert card.object == "model" and card.created == listed["vllm_model"].created > 0
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("no_such_model")
    assert caught.value.body == {"detail": "Unknown model: no_such_model"}


# -- completions ----------------------------------------------------------------------------


def test_completion_text_usage_and_determinism(client: openai.OpenAI) -> None:
    prompt = "Tell me about the fox"
    first = client.completions.create(model="vllm_model", prompt=prompt, max_tokens=7)
    again = client.completions.create(model="vllm_model", prompt=prompt, max_tokens=7)
    text = first.choices[0].text
    assert len(words(text)) == 7 and set(words(text)) <= WORDS
    assert text == again.choices[0].text
    assert first.object == "text_completion" and first.id.startswith("cmpl-")
    assert first.choices[0].finish_reason == "stop" and first.model == "vllm_model"
    assert first.usage is not None
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (5, 7)
    assert first.usage.total_tokens == 12


def test_completion_default_max_tokens_echo_stop_and_seed(client: openai.OpenAI) -> None:
    prompt = "Once upon a time"
    plain = client.completions.create(model="vllm_model", prompt=prompt).choices[0].text
    assert len(words(plain)) == 16  # --default-max-tokens, Triton's 16
    echoed = client.completions.create(model="vllm_model", prompt=prompt, echo=True)
    assert echoed.choices[0].text == prompt + plain
    stop_word = words(plain)[5]
    cut = client.completions.create(model="vllm_model", prompt=prompt, stop=[" " + stop_word])
    assert cut.choices[0].text == plain[: plain.index(" " + stop_word)]
    seeded = [
        client.completions.create(model="vllm_model", prompt=prompt, seed=seed).choices[0].text
        for seed in (1, 1, 2)
    ]
    assert seeded[0] == seeded[1] != seeded[2]


def test_completion_stream(client: openai.OpenAI) -> None:
    whole = client.completions.create(model="vllm_model", prompt="stream me", max_tokens=6)
    chunks = list(
        client.completions.create(
            model="vllm_model",
            prompt="stream me",
            max_tokens=6,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert len(texts) == 6 and "".join(texts) == whole.choices[0].text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 6 and chunks[-1].usage.prompt_tokens == 2


def test_completion_logprobs(client: openai.OpenAI) -> None:
    result = client.completions.create(model="vllm_model", prompt="p", max_tokens=3, logprobs=2)
    logprobs = result.choices[0].logprobs
    assert logprobs is not None and logprobs.tokens is not None
    assert "".join(logprobs.tokens) == result.choices[0].text
    assert logprobs.top_logprobs is not None and all(len(t) == 2 for t in logprobs.top_logprobs)


# -- chat -----------------------------------------------------------------------------------


def test_chat_completion(client: openai.OpenAI) -> None:
    messages: Any = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "Say something"}]},
    ]
    result = client.chat.completions.create(model="vllm_model", messages=messages, max_tokens=5)
    message = result.choices[0].message
    assert message.role == "assistant" and len(words(message.content or "")) == 5
    assert set(words(message.content or "")) <= WORDS and message.tool_calls is None
    assert result.object == "chat.completion" and result.choices[0].finish_reason == "stop"
    # The plain template: "system: You are terse.\nuser: Say something\nassistant:" (8 words).
    assert result.usage is not None and result.usage.prompt_tokens == 8
    newer = client.chat.completions.create(
        model="vllm_model", messages=messages, max_completion_tokens=2, max_tokens=9
    )
    assert len(words(newer.choices[0].message.content or "")) == 2


def test_chat_stream_matches_the_whole_answer(client: openai.OpenAI) -> None:
    messages: Any = [{"role": "user", "content": "Stream a story"}]
    whole = client.chat.completions.create(model="vllm_model", messages=messages, max_tokens=8)
    chunks = list(
        client.chat.completions.create(
            model="vllm_model",
            messages=messages,
            max_tokens=8,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].object == "chat.completion.chunk"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert len({c.id for c in chunks}) == 1
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 8


def test_async_client_streams_and_completes(server: dict[str, Any]) -> None:
    async def main() -> tuple[str, str, str]:
        async with openai.AsyncOpenAI(
            base_url=server["base"] + "/v1", api_key="none", max_retries=0
        ) as aclient:
            whole = await aclient.chat.completions.create(
                model="vllm_model", messages=[{"role": "user", "content": "hi"}], max_tokens=4
            )
            stream = await aclient.chat.completions.create(
                model="vllm_model",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=4,
                stream=True,
            )
            streamed = "".join([c.choices[0].delta.content or "" async for c in stream])
            completion = await aclient.completions.create(
                model="vllm_model", prompt="hi", max_tokens=3
            )
            with pytest.raises(openai.BadRequestError) as caught:
                await aclient.completions.create(model="nope", prompt="x")
            assert caught.value.body == {"detail": "Unknown model: nope"}
            return whole.choices[0].message.content or "", streamed, completion.choices[0].text

    whole, streamed, completion = asyncio.run(asyncio.wait_for(main(), 60))
    assert whole == streamed and len(words(whole)) == 4 and len(words(completion)) == 3


# -- embeddings -----------------------------------------------------------------------------


def test_embeddings(client: openai.OpenAI) -> None:
    first = client.embeddings.create(model="embedding_model", input="the cat sat on the mat")
    vector = np.array(first.data[0].embedding)
    assert vector.shape == (32,) and abs(np.linalg.norm(vector) - 1) < 1e-6
    assert first.usage.prompt_tokens == 6 and first.usage.total_tokens == 6
    assert first.object == "list" and first.data[0].index == 0
    near = np.array(
        client.embeddings.create(model="embedding_model", input="the cat sat").data[0].embedding
    )
    far = np.array(
        client.embeddings.create(model="embedding_model", input="quantum tax law").data[0].embedding
    )
    assert vector @ near > vector @ far
    small = client.embeddings.create(model="embedding_model", input="the cat", dimensions=8)
    assert len(small.data[0].embedding) == 8
    raw = client.embeddings.with_raw_response.create(
        model="embedding_model", input="the cat", dimensions=8, encoding_format="base64"
    )
    packed = json.loads(raw.text)["data"][0]["embedding"]
    decoded = np.frombuffer(base64.b64decode(packed), dtype=np.float32)
    assert np.allclose(decoded, small.data[0].embedding, atol=1e-6)


# -- tool calling ---------------------------------------------------------------------------


def test_tool_call_auto_and_the_whole_loop(client: openai.OpenAI) -> None:
    messages: Any = [{"role": "user", "content": "What is the weather in Dallas?"}]
    result = client.chat.completions.create(model="tool_model", messages=messages, tools=[WEATHER])
    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 1
    assert calls[0].function.name == "get_weather"
    assert json.loads(calls[0].function.arguments) == {"city": "Dallas", "unit": "celsius"}
    followed = client.chat.completions.create(
        model="tool_model",
        tools=[WEATHER],
        messages=[
            *messages,
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": calls[0].id, "content": "Sunny, 30 degrees"},
        ],
    )
    assert followed.choices[0].message.content == "The tool says: Sunny, 30 degrees"
    assert followed.choices[0].finish_reason == "stop"


def test_tool_call_streamed(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="tool_model",
            messages=[{"role": "user", "content": "Weather in Paris"}],
            tools=[WEATHER],
            stream=True,
        )
    )
    calls = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []]
    assert len(calls) == 1 and calls[0].function is not None and calls[0].id
    assert calls[0].function.name == "get_weather"
    assert json.loads(calls[0].function.arguments or "") == {"city": "Paris", "unit": "celsius"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


def test_named_tool_choice_makes_the_model_follow_the_schema(client: openai.OpenAI) -> None:
    result = client.chat.completions.create(
        model="vllm_model",
        messages=[{"role": "user", "content": "weather?"}],
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    calls = result.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.name == "get_weather"
    arguments = json.loads(calls[0].function.arguments)
    assert set(arguments) == {"city", "unit"} and arguments["unit"] == "celsius"
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="vllm_model",
            messages=[{"role": "user", "content": "x"}],
            tools=[WEATHER],
            tool_choice={"type": "function", "function": {"name": "other"}},
        )
    assert caught.value.body == {"detail": "Tool 'other' has not been passed in `tools`."}


# -- errors, and the server keeps serving ---------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "detail"),
    [
        ({"model": "nope", "prompt": "x"}, openai.BadRequestError, "Unknown model: nope"),
        (
            {"model": "vllm_model", "prompt": "x", "n": 2},
            openai.BadRequestError,
            "Received n=2, but only single choice (n=1) is currently supported",
        ),
        (
            {"model": "vllm_model", "prompt": "x", "logit_bias": {"1": 1}},
            openai.BadRequestError,
            "logit bias is not supported",
        ),
        ({"model": "vllm_model", "prompt": ""}, openai.BadRequestError, "prompt must be non-empty"),
        (
            {"model": "vllm_model", "prompt": "x", "stream_options": {"include_usage": True}},
            openai.BadRequestError,
            "`stream_options` can only be used when `stream` is True",
        ),
        (
            {"model": "vllm_model", "prompt": "x", "max_tokens": 0},
            openai.InternalServerError,
            "Error generating stream: max_tokens must be at least 1, got 0.",
        ),
    ],
)
def test_completion_errors(
    client: openai.OpenAI, call: dict[str, Any], error: type[Exception], detail: str
) -> None:
    with pytest.raises(error) as caught:  # type: ignore[call-overload]
        client.completions.create(**call)
    assert caught.value.body == {"detail": detail}


def test_schema_errors_are_422_with_pydantics_words(client: openai.OpenAI) -> None:
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.chat.completions.create(model="vllm_model", messages=[])
    detail = caught.value.body["detail"]  # type: ignore[index]
    assert detail[0]["msg"] == "List should have at least 1 item after validation, not 0"
    assert detail[0]["loc"] == ["body", "messages"]
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.completions.create(model="vllm_model", prompt="x", temperature=2.5)
    detail = caught.value.body["detail"]  # type: ignore[index]
    assert detail[0]["msg"] == "Input should be less than or equal to 2"
    assert detail[0]["loc"] == ["body", "temperature"]
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.completions.create(model="vllm_model", prompt="x", extra_body={"bogus": 1})
    assert caught.value.body["detail"][0]["type"] == "extra_forbidden"  # type: ignore[index]


def detail_of(error: pytest.ExceptionInfo[openai.APIStatusError]) -> str:
    body = error.value.body
    assert isinstance(body, dict)
    return str(body["detail"])


def test_models_without_the_interface_are_refused(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model="simple", prompt="x")
    assert "'simple' does not generate text" in detail_of(caught)
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="vllm_model", input="x")
    assert "'vllm_model' does not serve embeddings" in detail_of(caught)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="vllm_model",
            messages=[
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
            ],
        )
    assert detail_of(caught) == "only text message is supported, but got image_url"


def test_a_model_error_before_the_stream_is_a_500(client: openai.OpenAI) -> None:
    # vllm_model refuses echo (exclude_input_in_output false) when streaming, as vLLM does.
    with pytest.raises(openai.InternalServerError) as caught:
        list(client.completions.create(model="vllm_model", prompt="x", echo=True, stream=True))
    assert detail_of(caught) == (
        "Error generating stream: When streaming, `exclude_input_in_output` = False is not allowed."
    )


def test_bad_bodies_then_the_server_still_serves(server: dict[str, Any]) -> None:
    for body in (b"{not json", b"[1, 2]", b'{"model": 3}'):
        request = urllib.request.Request(
            server["base"] + "/v1/completions", data=body, method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=30)
        assert caught.value.code == 422
        assert isinstance(json.loads(caught.value.read())["detail"], list)
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(server["base"] + "/v1/nothing", timeout=30)
    assert missing.value.code == 404 and json.loads(missing.value.read()) == {"detail": "Not Found"}
    with urllib.request.urlopen(server["base"] + "/health/ready", timeout=30) as ready:
        assert ready.status == 200


def test_statistics_and_metrics_count_openai_requests(
    client: openai.OpenAI, server: dict[str, Any]
) -> None:
    kserve = httpclient.InferenceServerClient(f"127.0.0.1:{server['http']}")

    def successes() -> int:
        stats = kserve.get_inference_statistics("embedding_model")
        return int(stats["model_stats"][0]["inference_stats"]["success"]["count"])

    before = successes()
    for _ in range(3):
        client.embeddings.create(model="embedding_model", input="count me")
    assert successes() == before + 3
    kserve.close()
    with urllib.request.urlopen(server["base"] + "/metrics", timeout=30) as reply:
        text = reply.read().decode()
    line = next(
        x
        for x in text.splitlines()
        if x.startswith('nv_inference_request_success{model="embedding_model"')
    )
    assert float(line.split()[-1]) >= before + 3
