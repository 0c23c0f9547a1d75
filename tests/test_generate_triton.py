"""``generate`` / ``generate_stream`` of both HTTP clients against the REAL Triton 2.51, with
decoupled Python models (the bundled ``vllm_model``, ``fail_after`` from the conformance
models): what the clients do with mock_server they do with Triton.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from tests.peers import (
    RunningTritonServer,
    copy_repository_for_triton,
    find_tritonserver,
    run_tritonserver,
)
from tritonclient.utils._errors import (
    InferenceServerInvalidArgumentError,
    InferenceServerNotFoundError,
)

INSTALL = find_tritonserver()
pytestmark = pytest.mark.triton_peer

ROOT = Path(__file__).resolve().parent.parent
MODELS = {
    "vllm_model": ROOT / "mock_server" / "models" / "vllm_model",
    "fail_after": ROOT / "tests" / "conformance" / "models" / "fail_after",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTritonServer]:
    assert INSTALL is not None
    staged = tmp_path_factory.mktemp("staged")
    for name, path in MODELS.items():
        shutil.copytree(path, staged / name)
    repo = copy_repository_for_triton(staged, tmp_path_factory.mktemp("triton") / "models")
    with run_tritonserver(INSTALL, repo, startup_timeout=120) as running:
        yield running


def test_sync_client(server: RunningTritonServer) -> None:
    with httpclient.InferenceServerClient(server.http_url, network_timeout=30) as client:
        whole = client.generate(
            "vllm_model", {"text_input": "Hello", "exclude_input_in_output": True, "max_tokens": 5}
        )
        events = list(
            client.generate_stream(
                "vllm_model", {"text_input": "Hello", "stream": True}, {"max_tokens": 5}
            )
        )
        assert len(events) == 5
        assert "".join(e["text_output"] for e in events) == whole["text_output"]
        with pytest.raises(InferenceServerNotFoundError):
            list(client.generate_stream("nope", {"text_input": "x"}))
        with pytest.raises(InferenceServerInvalidArgumentError, match="exactly 1 response"):
            client.generate("vllm_model", {"text_input": "x", "stream": True, "max_tokens": 2})
        stream = client.generate_stream("fail_after", {"IN": 2})
        assert [next(stream)["OUT"], next(stream)["OUT"]] == [0, 1]
        with pytest.raises(InferenceServerInvalidArgumentError, match="failed after 2"):
            next(stream)
        # leaving early: Triton cancels the request, and the one model instance is free again
        stream = client.generate_stream(
            "vllm_model", {"text_input": "x", "stream": True, "max_tokens": 10**7}
        )
        next(stream)
        stream.close()
        start = time.monotonic()
        client.generate("vllm_model", {"text_input": "x", "max_tokens": 1})
        assert time.monotonic() - start < 10


def test_aio_client(server: RunningTritonServer) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(server.http_url, conn_timeout=30) as client:
            whole = await client.generate(
                "vllm_model", {"text_input": "Hi", "exclude_input_in_output": True}
            )
            events = [
                e
                async for e in client.generate_stream(
                    "vllm_model", {"text_input": "Hi", "stream": True}
                )
            ]
            assert "".join(e["text_output"] for e in events) == whole["text_output"]
            stream = client.generate_stream("fail_after", {"IN": 1})
            assert (await stream.__anext__())["OUT"] == 0
            with pytest.raises(InferenceServerInvalidArgumentError, match="failed after 1"):
                await stream.__anext__()
            async with client.generate_stream(
                "vllm_model", {"text_input": "x", "stream": True, "max_tokens": 10**7}
            ) as stream:
                await stream.__anext__()
            start = time.monotonic()
            await client.generate("vllm_model", {"text_input": "x", "max_tokens": 1})
            assert time.monotonic() - start < 10

    asyncio.run(asyncio.wait_for(main(), 120))
