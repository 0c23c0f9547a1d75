"""This package's ``generate`` / ``generate_stream`` (sync and aio) against Triton 2.51 and
mock_server: every call's outcome (the responses, or the exception's type, message and status)
must be the same on both servers.

NVIDIA's client has no generate methods, so the client differential suite cannot compare it
here; this compares the two servers through our clients instead, on the "main" pair of the
HTTP suite (decoupled Python models: ``vllm_model``, ``fail_after``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from tests.conformance.conftest import PairPool
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.triton_peer

#: (id, stream, model, inputs, parameters)
CALLS: list[tuple[str, bool, str, dict[str, Any], dict[str, Any] | None]] = [
    ("generate/defaults", False, "vllm_model", {"text_input": "Hello"}, None),
    ("generate/parameters", False, "vllm_model", {"text_input": "Hi"}, {"max_tokens": 3}),
    (
        "generate/exclude",
        False,
        "vllm_model",
        {"text_input": "Hi", "exclude_input_in_output": True, "max_tokens": 4},
        None,
    ),
    ("generate/several", False, "vllm_model", {"text_input": "Hi", "stream": True}, None),
    ("generate/unknown-model", False, "nope", {"text_input": "Hi"}, None),
    ("generate/wrong-type", False, "vllm_model", {"text_input": 5}, None),
    ("generate/bad-parameter", False, "vllm_model", {"text_input": "x"}, {"max_tokens": 2.5}),
    ("generate/fail", False, "fail_after", {"IN": 0}, None),
    ("stream/tokens", True, "vllm_model", {"text_input": "Hi", "stream": True}, {"max_tokens": 5}),
    ("stream/not-streaming", True, "vllm_model", {"text_input": "Hi", "max_tokens": 3}, None),
    (
        "stream/refused",
        True,
        "vllm_model",
        {"text_input": "Hi", "stream": True, "exclude_input_in_output": False},
        None,
    ),
    ("stream/fail-after-2", True, "fail_after", {"IN": 2}, None),
    ("stream/fail-first", True, "fail_after", {"IN": 0}, None),
    ("stream/plain-model", True, "identity_int32", {"INPUT0": [[1, 2]]}, None),
    ("stream/unknown-model", True, "nope", {"text_input": "Hi"}, None),
    ("stream/missing-input", True, "vllm_model", {"stream": True}, None),
]


def outcome_error(error: InferenceServerException) -> list[Any]:
    return ["error", type(error).__name__, error.message(), error.status()]


def run_sync(url: str) -> dict[str, list[Any]]:
    records: dict[str, list[Any]] = {}
    with httpclient.InferenceServerClient(url, network_timeout=30) as client:
        for case, stream, model, inputs, parameters in CALLS:
            got: list[Any] = []
            try:
                if stream:
                    for event in client.generate_stream(model, inputs, parameters):
                        got.append(event)
                else:
                    got.append(client.generate(model, inputs, parameters))
            except InferenceServerException as error:
                got.append(outcome_error(error))
            records[case] = got
    return records


async def run_aio(url: str) -> dict[str, list[Any]]:
    records: dict[str, list[Any]] = {}
    async with aioclient.InferenceServerClient(url, conn_timeout=30) as client:
        for case, stream, model, inputs, parameters in CALLS:
            got: list[Any] = []
            try:
                if stream:
                    async for event in client.generate_stream(model, inputs, parameters):
                        got.append(event)
                else:
                    got.append(await client.generate(model, inputs, parameters))
            except InferenceServerException as error:
                got.append(outcome_error(error))
            records[case] = got
    return records


@pytest.mark.parametrize("flavour", ["sync", "aio"])
def test_generate_clients_see_the_same_on_both_servers(pairs: PairPool, flavour: str) -> None:
    def records(url: str) -> dict[str, list[Any]]:
        if flavour == "sync":
            return run_sync(url)
        return asyncio.run(asyncio.wait_for(run_aio(url), 120))

    triton = pairs.run("main", "the generate client differential", lambda p: records(p.triton.http))
    mock = records(pairs["main"].mock.http)
    assert set(triton) == {c[0] for c in CALLS}
    different = {k: (triton[k], mock[k]) for k in triton if triton[k] != mock[k]}
    assert not different, different
    # the outcomes are the ones the cases mean (not, say, both servers refusing everything)
    assert len(triton["stream/tokens"]) == 5
    assert triton["stream/fail-after-2"][-1][:2] == ["error", "InferenceServerInvalidArgumentError"]
    assert [e["OUT"] for e in triton["stream/fail-after-2"][:2]] == [0, 1]
    assert triton["stream/unknown-model"][0][1] == "InferenceServerNotFoundError"
