"""The OpenAI frontend's options, each on a server of its own (in this process, real sockets):
restricted APIs, the request-size limit, model control, chat templates from the command line,
a model's folder and a tokenizer folder, tool settings; the command line's checks; and the
in-process API calls that Triton's own OpenAI frontend makes (so that it could run on it).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

import mock_server as tritonserver
from mock_server.__main__ import build_parser, options_from_args
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ModelControlMode, ServerOptions

PORTS: dict[str, Any] = {"http_port": 0, "grpc_port": 0, "metrics_port": 0, "openai_port": 0}
USER: Any = [{"role": "user", "content": "one two three"}]


@contextmanager
def running(
    tmp: Path, names: tuple[str, ...] = ("vllm_model",), mode: str = "none", **options: Any
) -> Iterator[tuple[MockServer, openai.OpenAI]]:
    """A server over a copy of the bundled ``names``, and an ``openai`` client of it."""
    repo = tmp / "repo"
    for name in names:
        if not (repo / name).exists():
            shutil.copytree(BUNDLED_MODELS / name, repo / name)
    core = ServerOptions(
        model_repository=[repo],
        model_control_mode=ModelControlMode(mode),
        startup_models=["*"] if mode == "explicit" else [],
        python_backend_isolation="thread",
    )
    with MockServer(core, FrontendOptions(**PORTS, **options)) as server:
        base = f"http://{server.openai_url}/v1"
        with openai.OpenAI(base_url=base, api_key="none", max_retries=0, timeout=60) as client:
            yield server, client


def post(server: MockServer, path: str, body: bytes = b"", headers: Any = None) -> Any:
    """POST to the OpenAI port: (status, JSON body)."""
    request = urllib.request.Request(
        f"http://{server.openai_url}{path}", data=body, headers=headers or {}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(server: MockServer, path: str, headers: Any = None) -> int:
    request = urllib.request.Request(f"http://{server.openai_url}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_restricted_apis(tmp_path: Path) -> None:
    rules = {"inference": ("infer-key", "s1"), "model-repository": ("admin-key", "s2")}
    with running(tmp_path, openai_restricted_api=rules) as (server, client):
        with pytest.raises(openai.AuthenticationError) as caught:
            client.completions.create(model="vllm_model", prompt="x")
        assert caught.value.body == {
            "message": "This API is restricted, expecting header 'infer-key' with valid value",
            "type": "authentication_error",
            "code": "invalid_auth",
        }
        with pytest.raises(openai.AuthenticationError):
            client.with_options(default_headers={"infer-key": "wrong"}).models.list()
        allowed = client.with_options(default_headers={"infer-key": "s1", "admin-key": "s2"})
        assert allowed.completions.create(model="vllm_model", prompt="x", max_tokens=2).choices
        assert [m.id for m in allowed.models.list()] == ["vllm_model"]
        assert get(server, "/health/ready") == 200 and get(server, "/metrics") == 200
        assert get(server, "/v1/models/vllm_model") == 401


def test_request_size_limit(tmp_path: Path) -> None:
    with running(tmp_path, http_max_input_size=1000) as (server, client):
        with pytest.raises(openai.APIStatusError) as caught:
            client.completions.create(model="vllm_model", prompt="x" * 2000)
        assert caught.value.status_code == 413
        body: Any = caught.value.body
        assert body["code"] == "content_too_large" and body["type"] == "invalid_request_error"
        size = caught.value.response.request.headers["content-length"]
        assert body["message"] == (
            f"Request size of {size} bytes exceeds the maximum allowed input size of 1000 "
            "bytes. Use --http-max-input-size to increase the limit."
        )
        # Chunked (no Content-Length): counted as it arrives.
        status, answer = post(server, "/v1/completions", iter([b"x" * 600, b"y" * 600]))  # type: ignore[arg-type]
        assert status == 413 and answer["error"]["code"] == "content_too_large"
        assert client.completions.create(model="vllm_model", prompt="small", max_tokens=1).choices


def test_model_control(tmp_path: Path) -> None:
    with running(tmp_path, ("vllm_model", "embedding_model"), "explicit") as (server, client):
        assert post(server, "/v1/models/vllm_model/load") == (
            400,
            {"detail": "Model 'vllm_model' is already loaded"},
        )
        status, answer = post(server, "/v1/models/vllm_model/unload")
        assert (status, answer) == (200, {"status": "success", "model": "vllm_model"})
        assert [m.id for m in client.models.list()] == ["embedding_model"]
        with pytest.raises(openai.BadRequestError) as caught:
            client.completions.create(model="vllm_model", prompt="x")
        assert caught.value.body == {"detail": "Unknown model: vllm_model"}
        assert post(server, "/v1/models/vllm_model/unload")[0] == 400
        status, card = post(server, "/v1/models/vllm_model/load")
        assert status == 200 and card["id"] == "vllm_model" and card["object"] == "model"
        assert client.completions.create(model="vllm_model", prompt="x", max_tokens=1).choices
        status, answer = post(server, "/v1/models/missing/load")
        # A model that is not there fails as Triton's load does (an internal error: 500).
        assert status == 500 and answer["detail"].startswith("Failed to load model 'missing'")
    with running(tmp_path) as (server, _):
        assert post(server, "/v1/models/vllm_model/unload") == (
            400,
            {"detail": "Model load/unload requires --model-control-mode=explicit"},
        )


def test_chat_template_from_the_command_line(tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    # vllm_model counts a prompt's words: this template gives 3 + the messages' words.
    template.write_text("A B C{% for m in messages %} {{ m.content }}{% endfor %}")
    with running(tmp_path, chat_template=str(template)) as (_, client):
        result = client.chat.completions.create(model="vllm_model", messages=USER, max_tokens=1)
        assert result.usage is not None and result.usage.prompt_tokens == 6


def test_chat_template_from_the_models_folder_and_a_tokenizer_folder(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder = tmp_path / "tokenizer"
    folder.mkdir()
    vocab = {"[UNK]": 0, "BOS": 1, "one": 2, "two": 3, "three": 4}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {"bos_token": "BOS", "chat_template": "{{ bos_token }} {{ messages[-1].content }}"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    # A vllm_model that reports no counts: the tokenizer counts then.
    repo = tmp_path / "repo"
    shutil.copytree(BUNDLED_MODELS / "vllm_model", repo / "quiet_model")
    text = (repo / "quiet_model" / "config.pbtxt").read_text()
    text = text.replace('name: "vllm_model"', 'name: "quiet_model"')
    kept = [line for line in text.splitlines() if "num_" not in line]
    (repo / "quiet_model" / "config.pbtxt").write_text("\n".join(kept))
    (repo / "folder_model").mkdir()
    shutil.copytree(repo / "quiet_model" / "1", repo / "folder_model" / "1")
    (repo / "folder_model" / "config.pbtxt").write_text(
        "\n".join(kept).replace('name: "quiet_model"', 'name: "folder_model"')
    )
    (repo / "folder_model" / "chat_template.jinja").write_text("{{ messages[-1].content }} four")
    with running(tmp_path, ("quiet_model",), tokenizer=str(folder)) as (_, client):
        quiet = client.chat.completions.create(model="quiet_model", messages=USER, max_tokens=2)
        # The tokenizer's template with its bos_token: "BOS one two three", 4 tokens.
        assert quiet.usage is not None and quiet.usage.prompt_tokens == 4
        folder_answer = client.chat.completions.create(
            model="folder_model", messages=USER, max_tokens=2
        )
        assert folder_answer.usage is not None
        # The model's own template ("one two three four") wins over the tokenizer's.
        assert folder_answer.usage.prompt_tokens == 4
        assert folder_answer.usage.completion_tokens == len(
            folder_answer.choices[0].message.content.split()  # type: ignore[union-attr]
        )


def test_tools_need_a_parser(tmp_path: Path) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    with running(tmp_path) as (_, client):
        for choice, words in (
            (None, "having tools in the request requires --tool-call-parser to be set"),
            ("auto", '"auto" tool choice requires --tool-call-parser to be set'),
        ):
            extra: Any = {} if choice is None else {"tool_choice": choice}
            with pytest.raises(openai.BadRequestError) as caught:
                client.chat.completions.create(
                    model="vllm_model", messages=USER, tools=[tool], **extra
                )
            assert caught.value.body == {"detail": words}
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(
                model="vllm_model", messages=USER, tool_choice="required"
            )
        assert caught.value.body == {
            "detail": '"required" tool choice requires CreateChatCompletionRequest.tools to be '
            "provided"
        }


def test_command_line_flags() -> None:
    parser = build_parser()
    args = parser.parse_args(
        [
            "--openai-port=0",
            "--openai-restricted-api",
            "inference,health",
            "k",
            "v",
            "--tokenizer=/tok",
            "--chat-template=/t.jinja",
            "--default-max-tokens=5",
            "--tool-call-parser=llama3",
        ]
    )
    _, frontends = options_from_args(args)
    assert frontends.openai_port == 0 and frontends.default_max_tokens == 5
    assert frontends.openai_restricted_api == {"inference": ("k", "v"), "health": ("k", "v")}
    assert (frontends.tokenizer, frontends.chat_template) == ("/tok", "/t.jinja")
    for groups, words in (
        (["unknown", "k", "v"], "Unknown API 'unknown'. Available APIs: ['inference',"),
        (["inference,inference", "k", "v"], "restricted api 'inference' can not be specified"),
    ):
        bad = parser.parse_args(["--openai-restricted-api", *groups])
        with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("(", r"\(")):
            options_from_args(bad)


def test_a_tokenizer_that_is_not_a_local_folder_is_refused(tmp_path: Path) -> None:
    hub_id = "meta-llama/Meta-Llama-3.1-8B-Instruct"
    with pytest.raises(ValueError, match="not a local folder"), running(tmp_path, tokenizer=hub_id):
        pass


def test_the_in_process_api_calls_tritons_openai_frontend_makes(tmp_path: Path) -> None:
    """What Triton's ``openai_frontend`` calls on ``tritonserver``, in its order: start in
    explicit mode with startup models, list ready models, read configs, build a vLLM request
    from plain lists and numpy flags, ``async_infer`` it and read the outputs through their
    pointers, load and unload, metrics and readiness."""
    # Its annotations name the response type by tritonserver's private path.
    assert tritonserver._api._response.InferenceResponse is tritonserver.InferenceResponse
    repo = tmp_path / "repo"
    shutil.copytree(BUNDLED_MODELS / "vllm_model", repo / "vllm_model")
    shutil.copytree(BUNDLED_MODELS / "embedding_model", repo / "embedding_model")
    server = tritonserver.Server(
        model_repository=str(repo),
        model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
        startup_models=["vllm_model"],
        log_verbose=0,
        log_info=True,
        log_warn=True,
        log_error=True,
    ).start(wait_until_ready=True)
    try:
        assert server.ready()
        assert server.options.model_control_mode == tritonserver.ModelControlMode.EXPLICIT
        assert server.options.model_repository == str(repo)
        # Triton's frontend walks the keys, (name, version) pairs.
        keys = server.models(exclude_not_ready=True).keys()
        assert [name for name, _ in keys] == ["vllm_model"]
        model = server.model("vllm_model")
        config = model.config()
        assert config["backend"] == "python" and config["platform"] == ""
        assert "exclude_input_in_output" in [i["name"] for i in config["input"]]
        assert model.version == -1
        request = model.create_request(
            inputs={
                "text_input": ["hello there"],
                "stream": np.bool_([True]),
                "exclude_input_in_output": np.bool_([True]),
                "sampling_parameters": [json.dumps({"max_tokens": 3, "temperature": 0.7})],
                "return_logprobs": np.bool_([False]),
                "return_num_input_tokens": np.bool_([True]),
                "return_num_output_tokens": np.bool_([True]),
            }
        )

        async def collect() -> list[Any]:
            return [response async for response in model.async_infer(request)]

        responses = asyncio.run(asyncio.wait_for(collect(), 60))
        assert len(responses) == 3 and responses[-1].final
        texts = []
        for response in responses:
            tensor = response.outputs["text_output"]
            # Triton's frontend reads the one string past its 4-byte length, by pointer.
            texts.append(ctypes.string_at(tensor.data_ptr + 4, tensor.size - 4).decode())
            count = response.outputs["num_output_tokens"]
            assert count.data_type == tritonserver.DataType.UINT32
            assert ctypes.cast(count.data_ptr, ctypes.POINTER(ctypes.c_uint32))[0] == 1
        assert len("".join(texts).split()) == 3
        server.load("embedding_model")
        assert ("embedding_model", 1) in server.models(exclude_not_ready=True)
        server.unload("embedding_model", wait_until_unloaded=True)
        assert "nv_inference_request_success" in server.metrics()
        with pytest.raises(tritonserver.TritonError):
            server.load("missing_model")
    finally:
        server.stop()
