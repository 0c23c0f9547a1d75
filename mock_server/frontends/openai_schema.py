"""The OpenAI frontend's request bodies, validated as Triton's OpenAI frontend validates them.

Triton's frontend (``python/openai`` in the server repository) declares its requests as
pydantic models generated from OpenAI's API description, with its own limits (``n`` at most
128, ``temperature`` 0 to 2, unknown fields refused ...), and FastAPI answers a body that does
not fit with status 422 and ``{"detail": [pydantic's errors]}``.  The models here carry the
same fields, defaults and limits, so a request is accepted or refused here as there, with the
same words (:func:`validation_detail`).  Defaults matter beyond validation: every field that
is set (or has a default) and is a sampling parameter reaches the model in
``sampling_parameters`` (see :mod:`.openai_engine`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "ChatRequest",
    "CompletionRequest",
    "EmbeddingRequest",
    "ValidationError",
    "validation_detail",
]

_Penalty = Annotated[float, Field(ge=-2.0, le=2.0)]
_Count = Annotated[int, Field(ge=0)]
_Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class StreamOptions(BaseModel):
    """``stream_options``: ``include_usage`` adds a last chunk with the usage."""

    include_usage: bool | None = None


class _Message(BaseModel):
    name: str | None = None


class TextPart(BaseModel):
    """A text part of a message's content."""

    type: Literal["text"]
    text: str


class ImagePart(BaseModel):
    """An image part (accepted by the schema, refused by the frontend as Triton's is)."""

    type: Literal["image_url"]
    image_url: dict[str, Any]


class SystemMessage(_Message):
    role: Literal["system"]
    content: str


class UserMessage(_Message):
    role: Literal["user"]
    content: str | list[TextPart | ImagePart]


class FunctionCall(BaseModel):
    name: str
    arguments: str


class ToolCall(BaseModel):
    """A tool call of an earlier assistant message."""

    id: str
    type: str
    function: FunctionCall


class AssistantMessage(_Message):
    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    function_call: FunctionCall | None = None


class ToolMessage(BaseModel):
    role: Literal["tool"]
    content: str
    tool_call_id: str


class FunctionMessage(BaseModel):
    role: Literal["function"]
    content: str
    name: str


#: In Triton's order: a message that fits none is reported against the first (a message with
#: no content: "Field required").
Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage


class FunctionObject(BaseModel):
    """A tool's function: its name, description and JSON-schema parameters."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(BaseModel):
    type: str
    function: FunctionObject


class FunctionName(BaseModel):
    name: str


class NamedToolChoice(BaseModel):
    type: str
    function: FunctionName


class _Generation(BaseModel):
    """What both text endpoints take (Triton's limits and defaults)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    frequency_penalty: _Penalty | None = 0
    ignore_eos: bool | None = None
    logit_bias: dict[str, int] | None = None
    max_tokens: _Count | None = None
    min_tokens: _Count | None = None
    n: Annotated[int, Field(ge=1, le=128)] | None = 1
    presence_penalty: _Penalty | None = 0
    seed: _Seed | None = None
    stop: str | list[str] | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    top_p: Annotated[float, Field(ge=0.0, le=1.0)] | None = 1
    user: str | None = None


class CompletionRequest(_Generation):
    """``POST /v1/completions``."""

    prompt: str | list[str] | list[int] | list[list[int]]
    best_of: Annotated[int, Field(ge=0, le=20)] | None = 1
    echo: bool | None = None
    logprobs: Annotated[int, Field(ge=0, le=5)] | None = None
    suffix: str | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = 1


class ChatRequest(_Generation):
    """``POST /v1/chat/completions``."""

    messages: Annotated[list[Message], Field(min_length=1)]
    logprobs: bool | None = False
    top_logprobs: Annotated[int, Field(ge=0, le=20)] | None = None
    max_completion_tokens: _Count | None = None
    response_format: dict[str, Any] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = 0.7
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    function_call: Literal["none", "auto"] | FunctionName | None = None
    functions: Annotated[list[FunctionObject], Field(min_length=1, max_length=128)] | None = None


class EmbeddingRequest(BaseModel):
    """``POST /v1/embeddings``."""

    model_config = ConfigDict(extra="forbid")

    input: Annotated[str | list[int], Field(min_length=1)]
    model: str
    dimensions: int | None = None
    encoding_format: Literal["float", "base64"] | None = "float"
    user: str | None = None


def validation_detail(error: ValidationError) -> list[dict[str, Any]]:
    """FastAPI's 422 ``detail`` for ``error``: pydantic's errors, located in the body."""
    detail = []
    for item in error.errors(include_url=False):
        entry: dict[str, Any] = {
            "type": item["type"],
            "loc": ["body", *item["loc"]],
            "msg": item["msg"],
            "input": item.get("input"),
        }
        if "ctx" in item:
            entry["ctx"] = {
                key: value if isinstance(value, int | float | str | bool) else str(value)
                for key, value in item["ctx"].items()
            }
        detail.append(entry)
    return detail
